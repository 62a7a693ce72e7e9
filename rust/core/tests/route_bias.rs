//! The per-route bias of the routing step: `None` is the plain step, a bias
//! moves every stage (int8 contenders and best exemplars included), `-inf`
//! removes a route.

use routecore_core::kernels::topk::top_k;
use routecore_core::scoring::step::{score_routes, score_routes_biased, StepParams};
use routecore_core::scoring::Aggregation;
use routecore_core::testing::{assert_same_picks, uniform};
use routecore_core::{Error, FlatIndex, StorageKind};

/// 40 routes × 12 exemplars (shuffled rows when `shuffle`), 3 domains; f32 and int8.
fn indexes(d: usize, shuffle: bool) -> (FlatIndex, FlatIndex, Vec<f32>) {
    let mut rnd = uniform(7);
    let centres: Vec<Vec<f32>> = (0..40).map(|_| (0..d).map(|_| rnd()).collect()).collect();
    let mut rows: Vec<(usize, Vec<f32>)> = Vec::new();
    for (r, c) in centres.iter().enumerate() {
        for _ in 0..12 {
            rows.push((r, c.iter().map(|v| v + 0.6 * rnd()).collect()));
        }
    }
    if shuffle {
        rows.sort_by_key(|(r, v)| ((v[0].to_bits() as usize) ^ r) % 97);
    }
    let labels: Vec<String> = rows.iter().map(|(r, _)| format!("r{r}")).collect();
    let domains: Vec<String> = rows.iter().map(|(r, _)| format!("d{}", r % 3)).collect();
    let data: Vec<f32> = rows.iter().flat_map(|(_, v)| v.iter().copied()).collect();
    let ids: Vec<u64> = (0..rows.len() as u64).collect();
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let dm: Vec<&str> = domains.iter().map(String::as_str).collect();
    let mk = |kind| {
        let mut ix = FlatIndex::new(d, kind, true).unwrap();
        ix.add(&ids, &data, Some(&l), Some(&dm)).unwrap();
        ix
    };
    let q: Vec<f32> = centres[5].iter().map(|v| v + 0.4 * rnd()).collect();
    (mk(StorageKind::F32), mk(StorageKind::Int8), q)
}

fn params(agg: Aggregation, active: bool) -> StepParams {
    StepParams {
        active_domains: if active { vec!["d1".into()] } else { vec![] },
        exact_top: 3,
        top_exemplars: 6,
        ..StepParams::new(agg, 0.05)
    }
}

const AGGS: [Aggregation; 3] = [
    Aggregation::Max,
    Aggregation::Mean,
    Aggregation::TopNMean(3),
];

#[test]
fn zero_bias_is_the_plain_step() {
    for shuffle in [false, true] {
        let (exact, compact, q) = indexes(48, shuffle);
        for ix in [&exact, &compact] {
            for agg in AGGS {
                let p = params(agg, shuffle);
                let zero = vec![0.0; ix.label_names().len()];
                let a = score_routes(ix, &q, &p).unwrap();
                let b = score_routes_biased(ix, &q, &p, Some(&zero)).unwrap();
                assert!(a.dense.is_none() && a.top_dense.is_none());
                assert_eq!(a.raw, b.raw);
                assert_eq!(b.dense.as_ref(), Some(&a.raw));
                assert_eq!(
                    (&a.adjusted, &a.probs, &a.bound),
                    (&b.adjusted, &b.probs, &b.bound)
                );
                assert_eq!(a.top, b.top);
                let scores: Vec<f32> = a.top.iter().map(|h| h.score).collect();
                assert_eq!(b.top_dense, Some(scores));
                assert_eq!(a.collision, b.collision);
            }
        }
    }
}

#[test]
fn bias_moves_every_stage_and_minus_inf_removes() {
    for shuffle in [false, true] {
        let (exact, compact, q) = indexes(48, shuffle);
        let n = exact.label_names().len();
        let plain = score_routes(&exact, &q, &params(Aggregation::Max, false)).unwrap();
        // Remove the best two routes, lift two weak ones above the rest.
        let order = top_k(&plain.raw, n);
        let mut bias: Vec<f32> = (0..n).map(|c| 0.01 * (c % 5) as f32).collect();
        let gone = [order[0].index, order[1].index];
        let lifted = [order[20].index, order[21].index];
        gone.iter().for_each(|&c| bias[c] = f32::NEG_INFINITY);
        lifted.iter().for_each(|&c| bias[c] = 0.5);
        for agg in AGGS {
            for active in [false, true] {
                let p = params(agg, active);
                let a = score_routes_biased(&exact, &q, &p, Some(&bias)).unwrap();
                let b = score_routes_biased(&compact, &q, &p, Some(&bias)).unwrap();
                let dense = a.dense.as_ref().unwrap();
                for c in 0..n {
                    let want = dense[c] + bias[c];
                    assert_eq!(a.raw[c], want);
                }
                for r in [&a, &b] {
                    for &g in &gone {
                        assert_eq!((r.adjusted[g], r.probs[g]), (f32::NEG_INFINITY, 0.0));
                        assert!(r.collision.is_none_or(|c| c.first != g && c.second != g));
                    }
                    let labels = exact.label_codes();
                    assert!(r
                        .top
                        .iter()
                        .all(|h| !gone.contains(&(labels[h.index] as usize))));
                    // Without affinity, the lifted routes lead and hold the best exemplar.
                    if !active {
                        let best = top_k(&r.adjusted, 2);
                        let mut got = [best[0].index, best[1].index];
                        got.sort();
                        let mut want = lifted;
                        want.sort();
                        assert_eq!(got, want, "{agg:?}");
                        assert!(lifted.contains(&(labels[r.top[0].index] as usize)));
                    }
                    // top_dense is the cosine of each best exemplar.
                    let cos = exact.score_all(&q).unwrap();
                    for (h, d) in r.top.iter().zip(r.top_dense.as_ref().unwrap()) {
                        assert!((cos[h.index] - d).abs() <= 1e-6);
                        let l = labels[h.index] as usize;
                        assert!((h.score - (d + bias[l])).abs() <= 1e-6);
                    }
                }
                // int8: the best routes on the biased scores are exact.
                for h in top_k(&a.adjusted, 3) {
                    assert_eq!(b.bound[h.index], 0.0, "{agg:?} route {}", h.index);
                    assert!((a.raw[h.index] - b.raw[h.index]).abs() <= 1e-6);
                }
                for c in 0..n {
                    if a.raw[c].is_finite() {
                        assert!((a.raw[c] - b.raw[c]).abs() <= b.bound[c] + 1e-6);
                    }
                }
                assert_same_picks(&a, &b);
            }
        }
    }
}

#[test]
fn bad_biases_are_refused() {
    let (exact, compact, q) = indexes(16, false);
    let n = exact.label_names().len();
    let p = params(Aggregation::Max, false);
    for ix in [&exact, &compact] {
        for bad in [
            vec![0.0; n - 1],
            {
                let mut v = vec![0.0; n];
                v[3] = f32::NAN;
                v
            },
            {
                let mut v = vec![0.0; n];
                v[2] = f32::INFINITY;
                v
            },
            vec![f32::NEG_INFINITY; n],
        ] {
            assert!(matches!(
                score_routes_biased(ix, &q, &p, Some(&bad)),
                Err(Error::InvalidArgument(_))
            ));
        }
        // One route left: it takes every probability, and no collision.
        let mut one = vec![f32::NEG_INFINITY; n];
        one[9] = 0.0;
        let r = score_routes_biased(ix, &q, &p, Some(&one)).unwrap();
        assert_eq!(r.probs[9], 1.0);
        assert!(r.collision.is_none());
        assert!(r.top.iter().all(|h| ix.label_codes()[h.index] == 9));
        assert_eq!(r.top.len(), 6);
    }
}

#[test]
fn a_route_without_exemplars_stays_out_under_a_zero_penalty() {
    // Route "c" loses its only exemplar; with a cross-domain penalty of 0 its -inf
    // must not become -inf x 0 = NaN (which the softmax refuses), biased or not.
    let mut ix = FlatIndex::new(2, StorageKind::F32, true).unwrap();
    let data = [1.0, 0.0, 0.8, 0.6, 0.0, 1.0];
    ix.add(
        &[0, 1, 2],
        &data,
        Some(&["a", "b", "c"]),
        Some(&["d0", "d1", "d1"]),
    )
    .unwrap();
    ix.remove(&[2]).unwrap();
    let p = StepParams {
        active_domains: vec!["d0".into()],
        penalty: 0.0,
        ..StepParams::new(Aggregation::Max, 0.05)
    };
    let n = ix.label_names().len();
    let c = ix.label_names().iter().position(|l| l == "c").unwrap();
    for bias in [None, Some(vec![0.0f32; n])] {
        let r = score_routes_biased(&ix, &[1.0, 0.0], &p, bias.as_deref()).unwrap();
        assert!(r.probs.iter().all(|v| v.is_finite()), "{:?}", r.probs);
        assert_eq!(r.adjusted[c], f32::NEG_INFINITY);
        assert_eq!(r.probs[c], 0.0);
    }
}
