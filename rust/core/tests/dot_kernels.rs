//! Dot-product kernels (f32, f16, i8) against the portable reference.

use half::f16;
use routecore_core::kernels::simd::*;

fn vecs(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s as f32 / u32::MAX as f32) * 2.0 - 1.0
        })
        .collect()
}

#[test]
fn simd_dot_matches_portable() {
    for n in [0, 1, 7, 8, 31, 32, 33, 100, 384, 1023, 1024] {
        let a = vecs(n, 1);
        let b = vecs(n, 2);
        let (x, y) = (dot(&a, &b), dot_portable(&a, &b));
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "n={n}: {x} vs {y}");
    }
}

#[test]
fn dot4_matches_dot() {
    for n in [5, 16, 384, 1000] {
        let r = vecs(n, 3);
        let qs: Vec<Vec<f32>> = (0..4).map(|i| vecs(n, 10 + i)).collect();
        let got = dot4(&r, [&qs[0], &qs[1], &qs[2], &qs[3]]);
        for j in 0..4 {
            assert!((got[j] - dot_portable(&r, &qs[j])).abs() < 1e-4);
        }
    }
}

#[test]
fn tile_matches_dot() {
    for n in [3, 8, 13, 384] {
        let rows: Vec<Vec<f32>> = (0..4).map(|i| vecs(n, 20 + i)).collect();
        let qs: Vec<Vec<f32>> = (0..3).map(|i| vecs(n, 30 + i)).collect();
        let t = dot_tile(
            [&rows[0], &rows[1], &rows[2], &rows[3]],
            [&qs[0], &qs[1], &qs[2]],
        );
        for r in 0..4 {
            for j in 0..3 {
                assert!((t[r][j] - dot_portable(&rows[r], &qs[j])).abs() < 1e-4);
            }
        }
    }
}

#[test]
fn f16_and_i8_dots() {
    let n = 1000;
    let a = vecs(n, 4);
    let q = vecs(n, 5);
    let h: Vec<f16> = a.iter().map(|&x| f16::from_f32(x)).collect();
    let exact = dot_portable(&a, &q);
    assert!((dot_f16(&h, &q) - exact).abs() < 1e-2);
    let (mut qa, mut qq) = (vec![0i8; n], vec![0i8; n]);
    let (sa, sq) = (quantize_i8(&a, &mut qa), quantize_i8(&q, &mut qq));
    let portable: i32 = qa.iter().zip(&qq).map(|(&x, &y)| x as i32 * y as i32).sum();
    assert_eq!(dot_i8(&qa, &qq), portable);
    assert!((dot_i8(&qa, &qq) as f32 * sa * sq - exact).abs() < 0.1);
}

#[test]
fn normalize_and_cosine() {
    let mut v = vec![3.0, 4.0];
    l2_normalize(&mut v);
    assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
    let mut z = vec![0.0; 4];
    l2_normalize(&mut z);
    assert_eq!(z, vec![0.0; 4]);
    assert_eq!(cosine(&[1.0, 0.0], &[0.0, 0.0]), 0.0);
    assert!((cosine(&[1.0, 1.0], &[2.0, 2.0]) - 1.0).abs() < 1e-6);
}
