//! int8 kernels: VNNI and fallback agree with integer arithmetic; the error bound holds.

use routecore_core::kernels::simd_int8::*;
use routecore_core::testing::uniform;

fn rows(n: usize, d: usize, seed: u32) -> Vec<f32> {
    let mut rnd = uniform(seed);
    (0..n * d).map(|_| rnd()).collect()
}

#[test]
fn block_kernel_matches_scalar_for_odd_widths_and_counts() {
    // Row counts around the 16-row pass of the VNNI kernel and its tail.
    for (d, n) in [
        (1, 9),
        (7, 16),
        (63, 17),
        (64, 33),
        (65, 9),
        (130, 47),
        (384, 64),
        (384, 37),
    ] {
        let v = rows(n, d, 7 + d as u32);
        let q = QueryI8::new(&rows(1, d, 99)[..d], &[]);
        let mut codes = vec![0i8; n * d];
        let facts: Vec<RowQuant> = v
            .chunks(d)
            .zip(codes.chunks_mut(d))
            .map(|(r, c)| quantize_row(r, c))
            .collect();
        let sums: Vec<i32> = facts.iter().map(|f| f.sum).collect();
        let mut out = vec![0f32; n];
        dot_i8_rows(&codes, d, &q, &sums, &mut out);
        let mut slow = vec![0f32; n];
        dot_i8_rows_fallback(&codes, d, &q, &mut slow);
        for (i, (&o, &w)) in out.iter().zip(&slow).enumerate() {
            let int = |c: &[i8]| -> i32 {
                codes[i * d..(i + 1) * d]
                    .iter()
                    .zip(c)
                    .map(|(&x, &y)| x as i32 * y as i32)
                    .sum()
            };
            let want = q.scales.0 * int(&q.a) as f32 + q.scales.1 * int(&q.b) as f32;
            assert_eq!(o, want, "d={d} n={n} row={i}");
            assert_eq!(w, want, "d={d} n={n} row={i} (fallback)");
        }
    }
}

#[test]
fn bound_holds_with_and_without_centre() {
    let d = 96;
    let v = rows(200, d, 3);
    let qf = rows(1, d, 11);
    let mean: Vec<f32> = (0..d)
        .map(|j| v.iter().skip(j).step_by(d).sum::<f32>() / 200.0)
        .collect();
    for centre in [vec![], mean] {
        let q = QueryI8::new(&qf, &centre);
        for r in v.chunks(d) {
            let resid: Vec<f32> = if centre.is_empty() {
                r.to_vec()
            } else {
                r.iter().zip(&centre).map(|(x, m)| x - m).collect()
            };
            let mut c = vec![0i8; d];
            let f = quantize_row(&resid, &mut c);
            let mut out = [0f32];
            dot_i8_rows(&c, d, &q, &[f.sum], &mut out);
            let exact: f64 = r.iter().zip(&qf).map(|(&a, &b)| a as f64 * b as f64).sum();
            let est = q.estimate(out[0], f.scale) as f64;
            let b = q.bound(f.err, f.norm_hat) as f64;
            assert!((exact - est).abs() <= b, "{exact} {est} {b}");
            assert!(b < 0.05, "bound {b} is not useful");
        }
    }
}
