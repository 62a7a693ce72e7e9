//! The exemplar head's forward pass against a plain f64 reference: the route probabilities
//! are the head's softmax read through the table's columns, renormalised over the routes.

use proptest::prelude::*;
use routecore_core::scoring::head::RouteHead;

/// `softmax(W^T q + b)` in f64, `W` row-major `dim × classes`.
fn reference(w: &[f32], b: &[f32], q: &[f32]) -> Vec<f64> {
    let k = b.len();
    let z: Vec<f64> = (0..k)
        .map(|c| {
            b[c] as f64
                + q.iter()
                    .enumerate()
                    .map(|(i, &x)| x as f64 * w[i * k + c] as f64)
                    .sum::<f64>()
        })
        .collect();
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
    z.iter().map(|v| (v - m).exp() / s).collect()
}

proptest! {
    #[test]
    fn matches_the_reference(
        dim in 1usize..70,
        classes in 2usize..12,
        seed in any::<u64>(),
    ) {
        let mut x = seed | 1;
        let mut rnd = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; (x % 2001) as f32 / 1000.0 - 1.0 };
        let w: Vec<f32> = (0..dim * classes).map(|_| 3.0 * rnd()).collect();
        let b: Vec<f32> = (0..classes).map(|_| rnd()).collect();
        let q: Vec<f32> = (0..dim).map(|_| rnd()).collect();
        // Routes read every class but the last (the out-of-scope class), in reverse, plus one the head lacks.
        let mut cols: Vec<i64> = (0..classes as i64 - 1).rev().collect();
        cols.push(classes as i64);
        let h = RouteHead::new(&w, &b, dim, &cols, classes as i64 - 1).unwrap();
        let p = reference(&w, &b, &q);
        let r = h.read(&q, None, 1.0).unwrap();
        let routes: Vec<f64> = (0..classes - 1).rev().map(|c| p[c]).collect();
        let total: f64 = routes.iter().sum();
        prop_assert!((r.out_of_scope - p[classes - 1]).abs() < 1e-5);
        prop_assert!((r.best - routes.iter().cloned().fold(0.0, f64::max)).abs() < 1e-5);
        for (got, want) in r.probs.iter().zip(&routes) {
            prop_assert!((*got as f64 - want / total).abs() < 1e-4);
        }
        prop_assert_eq!(*r.probs.last().unwrap(), 0.0);
        let sum: f64 = r.probs.iter().map(|&v| v as f64).sum();
        prop_assert!((sum - 1.0).abs() < 1e-5);
    }
}
