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
    for n in [1, 5, 15, 16, 17, 31, 32, 33, 47, 384, 1000, 1024] {
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
    for n in [1, 3, 8, 13, 16, 17, 31, 33, 384, 1000] {
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

/// Every width around the 8-, 16- and 64-lane steps of the AVX2 and AVX-512 kernels.
#[test]
fn row_kernels_match_portable_at_every_tail() {
    for d in (1..=70).chain([96, 127, 128, 129, 383, 384, 385, 1024]) {
        let q = vecs(d, 40);
        let rows = vecs(9 * d, 41);
        let mut out = vec![0f32; 9];
        dot_rows(&rows, &q, &mut out);
        let mut outs = [[0f32; 2]; 4];
        {
            let [a, b, c, e] = &mut outs;
            let seg = |r: usize| &rows[2 * r * d..(2 * r + 2) * d];
            dot_rows_x4([seg(0), seg(1), seg(2), seg(3)], &q, [a, b, c, e]);
        }
        let h: Vec<f16> = rows[..d].iter().map(|&x| f16::from_f32(x)).collect();
        let hf: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
        let close = |x: f32, y: f32| (x - y).abs() <= 1e-4 * (1.0 + y.abs());
        for i in 0..9 {
            let want = dot_portable(&rows[i * d..(i + 1) * d], &q);
            assert!(close(out[i], want), "dot_rows d={d} row {i}");
            if i < 8 {
                assert!(close(outs[i / 2][i % 2], want), "dot_rows_x4 d={d} row {i}");
            }
        }
        assert!(
            close(dot_f16(&h, &q), dot_portable(&hf, &q)),
            "dot_f16 d={d}"
        );
        assert!(
            close(dot(&q, &rows[..d]), dot_portable(&q, &rows[..d])),
            "dot d={d}"
        );
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
