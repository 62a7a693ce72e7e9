//! The int8 routing step against the f32 one: contenders exact, the rest bounded.

use routecore_core::scoring::step::{score_routes, StepParams};
use routecore_core::scoring::Aggregation;
use routecore_core::testing::{assert_same_picks, uniform};
use routecore_core::FlatIndex;
use routecore_core::StorageKind;

/// 60 routes × 25 exemplars around route centres, in 3 domains.
fn indexes(d: usize) -> (FlatIndex, FlatIndex, Vec<f32>) {
    let mut rnd = uniform(99);
    let centres: Vec<Vec<f32>> = (0..60).map(|_| (0..d).map(|_| rnd()).collect()).collect();
    let (mut data, mut labels, mut domains) = (Vec::new(), Vec::new(), Vec::new());
    for (r, c) in centres.iter().enumerate() {
        for _ in 0..25 {
            data.extend(c.iter().map(|v| v + 0.6 * rnd()));
            labels.push(format!("r{r}"));
            domains.push(format!("d{}", r % 3));
        }
    }
    let ids: Vec<u64> = (0..labels.len() as u64).collect();
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let dm: Vec<&str> = domains.iter().map(String::as_str).collect();
    let mk = |kind| {
        let mut ix = FlatIndex::new(d, kind, true).unwrap();
        ix.add(&ids, &data, Some(&l), Some(&dm)).unwrap();
        ix
    };
    let q: Vec<f32> = centres[7].iter().map(|v| v + 0.3 * rnd()).collect();
    (mk(StorageKind::F32), mk(StorageKind::Int8), q)
}

#[test]
fn contenders_exact_others_within_bound() {
    let (exact, compact, q) = indexes(72);
    for agg in [
        Aggregation::Max,
        Aggregation::Mean,
        Aggregation::TopNMean(3),
    ] {
        for active in [vec![], vec!["d1".to_string()]] {
            let p = StepParams {
                active_domains: active,
                exact_top: 4,
                exact_band: 0.05,
                ..StepParams::new(agg, 0.05)
            };
            let a = score_routes(&exact, &q, &p).unwrap();
            let b = score_routes(&compact, &q, &p).unwrap();
            let mut n_exact = 0;
            for r in 0..a.raw.len() {
                if a.raw[r].is_infinite() {
                    assert!(b.raw[r].is_infinite());
                    continue;
                }
                let err = (a.raw[r] - b.raw[r]).abs();
                if b.bound[r] == 0.0 {
                    n_exact += 1;
                    assert!(
                        err <= 1e-6,
                        "{agg:?} route {r}: {} vs {}",
                        a.raw[r],
                        b.raw[r]
                    );
                } else {
                    assert!(
                        err <= b.bound[r],
                        "{agg:?} route {r}: err {err} > {}",
                        b.bound[r]
                    );
                }
            }
            // The true top 4 (on adjusted scores) are exact.
            let best = routecore_core::kernels::topk::top_k(&a.adjusted, 4);
            assert!(best.iter().all(|h| b.bound[h.index] == 0.0));
            assert!(
                n_exact < a.raw.len(),
                "{agg:?}: the int8 step re-scored every route"
            );
            assert_same_picks(&a, &b);
        }
    }
}

#[test]
fn parallel_scan_matches_sequential() {
    let (_, compact, q) = indexes(72);
    let p = StepParams::new(Aggregation::Max, 0.05);
    let seq = score_routes(&compact, &q, &p).unwrap();
    routecore_core::index::scan::set_route_parallel_cutoff(1);
    let par = score_routes(&compact, &q, &p);
    routecore_core::index::scan::set_route_parallel_cutoff(
        routecore_core::index::scan::ROUTE_PARALLEL_CUTOFF,
    );
    let par = par.unwrap();
    assert_eq!(seq.raw, par.raw);
    assert_eq!(seq.bound, par.bound);
    assert_eq!(seq.top, par.top);
}

#[test]
fn floor_makes_routes_exact() {
    let (exact, compact, q) = indexes(40);
    let p = StepParams {
        exact_top: 1,
        exact_band: 0.0,
        exact_floor: f32::NEG_INFINITY,
        ..StepParams::new(Aggregation::Max, 0.05)
    };
    let a = score_routes(&exact, &q, &p).unwrap();
    let b = score_routes(&compact, &q, &p).unwrap();
    assert!(b.bound.iter().all(|&x| x == 0.0));
    for (x, y) in a.raw.iter().zip(&b.raw) {
        assert!((x - y).abs() <= 1e-6 || (x.is_infinite() && y.is_infinite()));
    }
}

/// A batch over int8 storage (blocks of queries share each pass over the codes) returns what
/// each query returns alone, bit for bit: any batch size, bias (with removed routes), number of
/// best exemplars and aggregation.
#[test]
fn int8_batches_score_as_each_query_alone() {
    use routecore_core::scoring::step::{score_routes_batch, score_routes_biased};
    let (_, compact, _) = indexes(72);
    let mut rnd = uniform(5);
    let routes = compact.label_names().len();
    for nq in [1usize, 5, 16, 17, 40] {
        let qs: Vec<f32> = (0..nq * 72).map(|_| rnd()).collect();
        let params: Vec<StepParams> = (0..nq)
            .map(|i| {
                let agg = [Aggregation::Max, Aggregation::Mean][i % 2];
                let mut p = StepParams::new(agg, 0.05);
                p.top_exemplars = [0, 1, 5, 30][i % 4];
                p
            })
            .collect();
        let biases: Vec<Option<Vec<f32>>> = (0..nq)
            .map(|i| {
                (i % 3 > 0).then(|| {
                    (0..routes)
                        .map(|r| {
                            if r % 7 == i % 7 {
                                f32::NEG_INFINITY
                            } else {
                                0.02 * rnd()
                            }
                        })
                        .collect()
                })
            })
            .collect();
        let ps: Vec<&StepParams> = params.iter().collect();
        let bs: Vec<Option<&[f32]>> = biases.iter().map(|b| b.as_deref()).collect();
        let batch = score_routes_batch(&compact, &qs, &ps, &bs).unwrap();
        for (i, got) in batch.iter().enumerate() {
            let one =
                score_routes_biased(&compact, &qs[i * 72..(i + 1) * 72], ps[i], bs[i]).unwrap();
            assert_eq!(format!("{one:?}"), format!("{got:?}"), "query {i} of {nq}");
        }
    }
}
