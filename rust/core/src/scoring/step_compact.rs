//! The routing step over int8 storage: one int8 scan ([`crate::scoring::step_scan`])
//! gives every exemplar an estimate with a rigorous error bound
//! ([`crate::kernels::simd_int8`]); the routes that can still matter are then re-scored
//! exactly in f32.
//!
//! A route is a *contender* when its upper bound (after affinity) reaches
//! `τ = min(k-th best lower bound, best lower bound − band, floor)`. Every route
//! of the true top `exact_top`, every route within `exact_band` of the best and
//! every route that may score ≥ `exact_floor` (and every route named in
//! `exact_routes`) is a contender, so its raw score is exact. The others keep an
//! estimate with its bound (typically < 0.01 for sentence embeddings).
//!
//! With a per-route bias, intervals, contenders and the best exemplars are
//! judged on the biased scores; routes at `-inf` are never contenders.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::error::Result;
use crate::index::FlatIndex;
use crate::kernels::simd::{dot, prefetch};
use crate::kernels::topk::{Hit, TopK};
use crate::scoring::step::StepParams;
use crate::scoring::step_scan::{scan_int8, Scan, GROUP};
use crate::scoring::{affinity_scale, aggregate, Aggregation};

/// Raw route scores (exact for contenders, without the bias), their error
/// bounds (0 when exact) and the exact best exemplars (biased scores, and
/// their cosines when there is a bias).
pub(crate) struct Estimate {
    pub raw: Vec<f32>,
    pub bound: Vec<f32>,
    pub top: Vec<Hit>,
    pub top_dense: Option<Vec<f32>>,
}

/// Estimate every route of an int8 `index` for the prepared query `q`;
/// `mult[r]` is route `r`'s affinity factor (see [`affinity_scale`]), `bias[r]`
/// its additive bias.
pub(crate) fn estimate(
    index: &FlatIndex,
    q: &[f32],
    p: &StepParams,
    mult: &[f32],
    bias: Option<&[f32]>,
) -> Result<Estimate> {
    let k_ex = scan_top(index, p);
    // 1. int8 scan: estimate and bound of every exemplar, route intervals for max.
    let scan = scan_int8(index, q, mult.len(), k_ex, bias);
    estimate_scanned(index, q, p, mult, bias, scan)
}

/// The best exemplars a query's int8 scan keeps a floor for: `top_exemplars`, at most every row.
pub(crate) fn scan_top(index: &FlatIndex, p: &StepParams) -> usize {
    p.top_exemplars.min(index.storage().len())
}

/// [`estimate`] from the query's int8 `scan` ([`scan_int8`] with [`scan_top`] exemplars).
pub(crate) fn estimate_scanned(
    index: &FlatIndex,
    q: &[f32],
    p: &StepParams,
    mult: &[f32],
    bias: Option<&[f32]>,
    scan: Scan,
) -> Result<Estimate> {
    let s = index.storage();
    let n = s.len();
    let labels = index.label_codes();
    let n_routes = mult.len();
    let max_agg = p.aggregation == Aggregation::Max;
    let k_ex = scan_top(index, p);
    let Scan {
        est,
        bnd,
        est_max,
        lb,
        ub,
        group_hi,
        top_floor,
    } = scan;
    let (lb, ub) = if max_agg {
        (lb, ub)
    } else {
        // Mean and top-n mean are monotone, so bounds aggregate to bounds.
        let lo: Vec<f32> = est.iter().zip(&bnd).map(|(e, b)| e - b).collect();
        let hi: Vec<f32> = est.iter().zip(&bnd).map(|(e, b)| e + b).collect();
        (
            aggregate(&lo, labels, n_routes, p.aggregation)?,
            aggregate(&hi, labels, n_routes, p.aggregation)?,
        )
    };
    let mut contender = contenders(&lb, &ub, mult, p, bias);
    for name in &p.exact_routes {
        if let Some(c) = index.label_code(name) {
            contender[c as usize] = true;
        }
    }

    // 2. Exact f32 re-scoring of the contenders. Max: a route's rows in order
    //    of falling upper bound, until the next one cannot beat the exact
    //    maximum so far (usually one or two rows). Mean and top-n mean: every
    //    row of the route.
    let mut exact: HashMap<u32, f32> = HashMap::new();
    let mut exact_max = vec![f32::NEG_INFINITY; n_routes];
    let mut mixed = if max_agg { Vec::new() } else { est.clone() };
    // Candidate rows of every contender first, so that they can be prefetched
    // at once: they are scattered, and their DRAM latencies overlap.
    let mut cand: Vec<(f32, u32)> = Vec::new();
    let mut spans: Vec<(usize, usize, usize)> = Vec::new(); // (route, start, end)
    for c in (0..n_routes).filter(|&c| contender[c]) {
        let (rows, start) = (index.route_rows(c), cand.len());
        if max_agg {
            cand.extend(rows.iter().filter_map(|&r| {
                let hi = est[r as usize] + bnd[r as usize];
                (hi >= lb[c]).then_some((hi, r))
            }));
            cand[start..].sort_unstable_by(|x, y| y.0.total_cmp(&x.0));
        } else {
            cand.extend(rows.iter().map(|&r| (f32::INFINITY, r)));
        }
        spans.push((c, start, cand.len()));
    }
    for &(_, r) in cand.iter().take(PREFETCH_CANDIDATES) {
        prefetch(s.row(r as usize));
    }
    for (c, start, end) in spans {
        let mut m = f32::NEG_INFINITY;
        for j in start..end {
            let (hi, r) = cand[j];
            if max_agg && hi <= m {
                break;
            }
            if let Some(&(_, next)) = cand.get(j + PREFETCH_CANDIDATES) {
                prefetch(s.row(next as usize));
            }
            let v = dot(s.row(r as usize), q);
            exact.insert(r, v);
            m = m.max(v);
            if !max_agg {
                mixed[r as usize] = v;
            }
        }
        exact_max[c] = m;
    }
    // Best exemplars: only rows whose upper bound reaches the k-th best lower
    // bound can be among them (groups of rows below it are skipped; with a
    // bias, a group's bound is raised by the largest bias of its routes).
    let mut top = TopK::new(k_ex.max(1));
    let row_bias = |r: usize| bias.map_or(0.0, |b| b[labels[r] as usize]);
    let lift = match bias {
        Some(b) if k_ex > 0 => group_lift(index, b, group_hi.len()),
        _ => Vec::new(),
    };
    if k_ex > 0 {
        for (g, &g_hi) in group_hi.iter().enumerate() {
            if g_hi + lift.get(g).copied().unwrap_or(0.0) < top_floor {
                continue;
            }
            for r in g * GROUP..((g + 1) * GROUP).min(n) {
                if est[r] + bnd[r] + row_bias(r) >= top_floor {
                    let v = match exact.get(&(r as u32)) {
                        Some(&v) => v,
                        None => dot(s.row(r), q),
                    };
                    match bias {
                        None => top.push(v, r),
                        Some(_) => top.push(v + row_bias(r), r),
                    }
                }
            }
        }
    }
    let raw: Vec<f32> = if max_agg {
        contender
            .iter()
            .zip(exact_max.iter().zip(&est_max))
            .map(|(&c, (&x, &e))| if c { x } else { e })
            .collect()
    } else {
        aggregate(&mixed, labels, n_routes, p.aggregation)?
    };
    let bound = contender
        .iter()
        .zip(raw.iter().zip(lb.iter().zip(&ub)))
        .map(|(&c, (&x, (&lo, &hi)))| {
            let b = (hi - x).max(x - lo).max(0.0);
            if c || x == f32::NEG_INFINITY {
                0.0
            } else {
                b
            }
        })
        .collect();
    let mut top = if k_ex == 0 {
        Vec::new()
    } else {
        top.into_sorted()
    };
    let top_dense = bias.map(|_| {
        top.retain(|h| h.score != f32::NEG_INFINITY);
        top.iter()
            .map(|h| match exact.get(&(h.index as u32)) {
                Some(&v) => v,
                None => dot(s.row(h.index), q),
            })
            .collect()
    });
    Ok(Estimate {
        raw,
        bound,
        top,
        top_dense,
    })
}

/// The largest bias of the routes of each group of [`GROUP`] rows, from the
/// runs of equal labels (O(runs + groups)).
fn group_lift(index: &FlatIndex, bias: &[f32], n_groups: usize) -> Vec<f32> {
    let mut lift = vec![f32::NEG_INFINITY; n_groups];
    let labels = index.label_codes();
    for w in index.label_runs().windows(2) {
        let (s, e) = (w[0] as usize, w[1] as usize);
        let b = bias[labels[s] as usize];
        for l in &mut lift[s / GROUP..=(e - 1) / GROUP] {
            *l = l.max(b);
        }
    }
    lift
}

/// Candidate rows prefetched at once before the exact re-scoring, then one
/// more per row re-scored. A max step on CLINC150 150 × 100 has 20–32
/// candidates with MiniLM and 42–88 with e5 (median to max).
const PREFETCH_CANDIDATES: usize = 64;

/// Routes whose interval (plus the bias, after affinity) reaches `τ` (see
/// the module docs); never a route whose bias is `-inf`.
fn contenders(
    lb: &[f32],
    ub: &[f32],
    mult: &[f32],
    p: &StepParams,
    bias: Option<&[f32]>,
) -> Vec<bool> {
    let n_routes = mult.len();
    // The affinity scale is non-decreasing in the score (factors are >= 0), so it maps
    // an interval's ends to the adjusted interval's; -inf (no rows) stays -inf.
    let interval = |lo: f32, hi: f32, m: f32| (affinity_scale(lo, m), affinity_scale(hi, m));
    // No active domain (multipliers all 1): the intervals are the bounds plus
    // the bias, in loops that vectorise, and the upper ends are not stored.
    let unit = mult.iter().all(|&m| m == 1.0);
    let (alo, ahi): (Cow<[f32]>, Option<Vec<f32>>) = match bias {
        None if unit => (Cow::Borrowed(lb), None),
        Some(o) if unit => (lb.iter().zip(o).map(|(l, o)| l + o).collect(), None),
        None => {
            let (a, b): (Vec<f32>, Vec<f32>) = (0..n_routes)
                .map(|r| interval(lb[r], ub[r], mult[r]))
                .unzip();
            (a.into(), Some(b))
        }
        Some(o) => {
            let (a, b): (Vec<f32>, Vec<f32>) = (0..n_routes)
                .map(|r| interval(lb[r] + o[r], ub[r] + o[r], mult[r]))
                .unzip();
            (a.into(), Some(b))
        }
    };
    // The best lower bounds, sorted: the first is the best of all (no NaN here).
    let mut kth = TopK::new(p.exact_top.clamp(1, n_routes.max(1)));
    kth.extend_from(&alo, 0);
    let top = kth.into_sorted();
    let best = top.first().map_or(f32::NEG_INFINITY, |h| h.score);
    let kth_lo = top.last().map_or(f32::NEG_INFINITY, |h| h.score);
    let tau = kth_lo.min(best - p.exact_band).min(p.exact_floor);
    let reaches = |h: f32| h >= tau || h.is_nan();
    match (ahi, bias) {
        (Some(ahi), None) => ahi.into_iter().map(reaches).collect(),
        (Some(ahi), Some(o)) => ahi
            .into_iter()
            .zip(o)
            .map(|(h, &o)| reaches(h) & (o != f32::NEG_INFINITY))
            .collect(),
        (None, None) => ub.iter().map(|&h| reaches(h)).collect(),
        (None, Some(o)) => ub
            .iter()
            .zip(o)
            .map(|(&u, &o)| reaches(u + o) & (o != f32::NEG_INFINITY))
            .collect(),
    }
}
