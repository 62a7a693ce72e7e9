//! int8 kernels: VNNI, AVX2 and the portable loop agree with integer arithmetic
//! in both query layouts; the error bound holds.

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
        let mut codes = vec![0i8; n * d];
        let facts: Vec<RowQuant> = v
            .chunks(d)
            .zip(codes.chunks_mut(d))
            .map(|(r, c)| quantize_row(r, c))
            .collect();
        let sums: Vec<i32> = facts.iter().map(|f| f.sum).collect();
        for layout in [QueryCodes::Levels, QueryCodes::Wide] {
            let q = QueryI8::with_codes(&rows(1, d, 99)[..d], &[], layout);
            let mut out = vec![0f32; n];
            dot_i8_rows(&codes, d, &q, &sums, &mut out);
            let mut slow = vec![0f32; n];
            dot_i8_rows_fallback(&codes, d, &q, &sums, &mut slow);
            for (i, (&o, &w)) in out.iter().zip(&slow).enumerate() {
                // Plain integer arithmetic on the codes, then the scales.
                let row = &codes[i * d..(i + 1) * d];
                let want = q.dot_codes(row, sums[i]);
                assert_eq!(o, want, "{layout:?} d={d} n={n} row={i}");
                assert_eq!(w, want, "{layout:?} d={d} n={n} row={i} (fallback)");
            }
        }
    }
}

#[test]
fn both_layouts_estimate_the_float_dot_closely() {
    let d = 384;
    let v = rows(50, d, 5);
    let qf = rows(1, d, 6);
    for layout in [QueryCodes::Levels, QueryCodes::Wide] {
        let q = QueryI8::with_codes(&qf, &[], layout);
        assert!(
            q.err <= 1e-3 * q.norm,
            "{layout:?}: query error {} of {}",
            q.err,
            q.norm
        );
        for r in v.chunks(d) {
            let mut c = vec![0i8; d];
            let f = quantize_row(r, &mut c);
            let est = q.estimate(q.dot_codes(&c, f.sum), f.scale) as f64;
            let exact: f64 = r.iter().zip(&qf).map(|(&a, &b)| a as f64 * b as f64).sum();
            assert!((exact - est).abs() <= q.bound(f.err, f.norm_hat) as f64);
        }
    }
}

#[test]
fn wide_codes_cannot_overflow_at_large_widths() {
    // Every code at its extreme: the i32 sum of dim products must not wrap.
    for d in [384usize, 4096, 20_000] {
        let q = QueryI8::with_codes(&vec![1.0f32; d], &[], QueryCodes::Wide);
        let row = vec![127i8; d];
        let got = q.dot_codes(&row, 127 * d as i32);
        let mut out = [0f32];
        dot_i8_rows(&row, d, &q, &[127 * d as i32], &mut out);
        assert_eq!(out[0], got, "d={d}");
        let want = 127.0 * d as f64;
        assert!(
            (got as f64 - want).abs() <= 1e-5 * want,
            "d={d}: {got} vs {want}"
        );
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
    for (centre, layout) in [
        (vec![], QueryCodes::Levels),
        (vec![], QueryCodes::Wide),
        (mean.clone(), QueryCodes::Levels),
        (mean, QueryCodes::Wide),
    ] {
        let q = QueryI8::with_codes(&qf, &centre, layout);
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

mod properties {
    use super::*;
    use proptest::prelude::*;
    use routecore_core::index::storage::StorageKind;
    use routecore_core::index::FlatIndex;
    use routecore_core::kernels::topk::top_k;

    fn layout() -> impl Strategy<Value = QueryCodes> {
        prop_oneof![Just(QueryCodes::Levels), Just(QueryCodes::Wide)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Any width, row count, scale and layout: the block kernel returns
        /// exactly the integer dot product times the scales.
        #[test]
        fn block_kernel_is_integer_exact(
            d in 1usize..200, n in 1usize..40, seed in 0u32..1000,
            scale in prop_oneof![Just(1e-3f32), Just(1.0f32), Just(50.0f32)], layout in layout(),
        ) {
            let v: Vec<f32> = rows(n + 1, d, seed).iter().map(|x| x * scale).collect();
            let (q, v) = v.split_at(d);
            let q = QueryI8::with_codes(q, &[], layout);
            let mut codes = vec![0i8; n * d];
            let sums: Vec<i32> = v.chunks(d).zip(codes.chunks_mut(d)).map(|(r, c)| quantize_row(r, c).sum).collect();
            let mut out = vec![0f32; n];
            dot_i8_rows(&codes, d, &q, &sums, &mut out);
            for i in 0..n {
                prop_assert_eq!(out[i], q.dot_codes(&codes[i * d..(i + 1) * d], sums[i]));
            }
        }

        /// Many queries over the same rows (read in tiles, query after query): each
        /// output is the one-query kernel's, bit for bit, for any width, row count,
        /// number of queries and layout.
        #[test]
        fn many_queries_score_as_each_alone(
            d in 1usize..400, n in 0usize..300, nq in 0usize..20, seed in 0u32..1000, layout in layout(),
        ) {
            let v = rows(n + nq, d, seed);
            let (qv, v) = v.split_at(nq * d);
            let qs: Vec<QueryI8> = qv.chunks(d).map(|q| QueryI8::with_codes(q, &[], layout)).collect();
            let mut codes = vec![0i8; n * d];
            let sums: Vec<i32> = v.chunks(d).zip(codes.chunks_mut(d)).map(|(r, c)| quantize_row(r, c).sum).collect();
            let mut many = vec![vec![f32::NAN; n]; nq];
            let mut outs: Vec<&mut [f32]> = many.iter_mut().map(Vec::as_mut_slice).collect();
            dot_i8_rows_many(&codes, d, &qs, &sums, &mut outs);
            for (q, got) in qs.iter().zip(&many) {
                let mut one = vec![0f32; n];
                dot_i8_rows(&codes, d, q, &sums, &mut one);
                prop_assert_eq!(one.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    got.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            }
        }

        /// An int8 index returns the f32 brute-force top-k (same tie rule) for
        /// one query and for a batch (from 1,024 rows a scan reads four segments).
        #[test]
        fn int8_search_is_exact(
            d in 2usize..96, n in 1usize..3000, k in 1usize..12, nq in 1usize..4, seed in 0u32..1000,
        ) {
            let k = k.min(n);
            let data = rows(n, d, seed);
            let qs = rows(nq, d, seed + 1);
            let mut ix = FlatIndex::new(d, StorageKind::Int8, false).unwrap();
            ix.add(&(0..n as u64).collect::<Vec<_>>(), &data, None, None).unwrap();
            let r = ix.search(&qs, k).unwrap();
            for (j, q) in qs.chunks(d).enumerate() {
                let exact: Vec<f32> = data.chunks(d).map(|row| routecore_core::kernels::simd::dot(row, q)).collect();
                let want: Vec<u64> = top_k(&exact, k).iter().map(|h| h.index as u64).collect();
                prop_assert_eq!(&r.ids[j * k..(j + 1) * k], &want[..]);
            }
        }
    }
}
