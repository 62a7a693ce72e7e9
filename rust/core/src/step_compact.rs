//! The routing step over int8 storage: one int8 scan gives every exemplar an
//! estimate with a rigorous error bound ([`crate::simd_int8`]); the routes that
//! can still matter are then re-scored exactly in f32.
//!
//! A route is a *contender* when its upper bound (after affinity) reaches
//! `τ = min(k-th best lower bound, best lower bound − band, floor)`. Every route
//! of the true top `exact_top`, every route within `exact_band` of the best and
//! every route that may score ≥ `exact_floor` (and every route named in
//! `exact_routes`) is a contender, so its raw score is exact. The others keep an
//! estimate with its bound (typically < 0.01 for sentence embeddings).

use std::collections::HashMap;

use rayon::prelude::*;

use crate::error::Result;
use crate::index::FlatIndex;
use crate::scan::route_parallel_cutoff;
use crate::scoring::{aggregate, Aggregation};
use crate::simd::{dot, prefetch};
use crate::simd_int8::{dot_i8_rows, QueryI8, BLOCK_ROWS as BLOCK};
use crate::step::StepParams;
use crate::topk::{Hit, TopK};

/// Raw route scores (exact for contenders), their error bounds (0 when exact)
/// and the exact best exemplars.
pub(crate) struct Estimate {
    pub raw: Vec<f32>,
    pub bound: Vec<f32>,
    pub top: Vec<Hit>,
}

/// Estimate every route of an int8 `index` for the prepared query `q`;
/// `mult[r]` is route `r`'s affinity multiplier.
pub(crate) fn estimate(
    index: &FlatIndex,
    q: &[f32],
    p: &StepParams,
    mult: &[f32],
) -> Result<Estimate> {
    let s = index.storage();
    let n = s.len();
    let labels = index.label_codes();
    let n_routes = mult.len();
    let max_agg = p.aggregation == Aggregation::Max;
    let k_ex = p.top_exemplars.min(n);

    // 1. int8 scan: estimate and bound of every exemplar, route intervals for max.
    let Scan {
        est,
        bnd,
        est_max,
        lb,
        ub,
        group_hi,
        top_floor,
    } = scan_int8(index, q, n_routes, k_ex);
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
    let mut contender = contenders(&lb, &ub, mult, p);
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
    // Candidate rows of every contender first, so the first row of each can be
    // prefetched at once: they are scattered, and their DRAM latencies overlap.
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
        if let Some(&(_, r)) = cand.get(start) {
            prefetch(s.row(r as usize));
        }
        spans.push((c, start, cand.len()));
    }
    for (c, start, end) in spans {
        let mut m = f32::NEG_INFINITY;
        for j in start..end {
            let (hi, r) = cand[j];
            if max_agg && hi <= m {
                break;
            }
            if let Some(&(_, next)) = cand[..end].get(j + 1) {
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
    // bound can be among them (groups of rows below it are skipped).
    let mut top = TopK::new(k_ex.max(1));
    if k_ex > 0 {
        for (g, &g_hi) in group_hi.iter().enumerate() {
            if g_hi < top_floor {
                continue;
            }
            for r in g * GROUP..((g + 1) * GROUP).min(n) {
                if est[r] + bnd[r] >= top_floor {
                    let v = match exact.get(&(r as u32)) {
                        Some(&v) => v,
                        None => dot(s.row(r), q),
                    };
                    top.push(v, r);
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
    let top = if k_ex == 0 {
        Vec::new()
    } else {
        top.into_sorted()
    };
    Ok(Estimate { raw, bound, top })
}

/// Routes whose interval (after affinity) reaches `τ` (see the module docs).
fn contenders(lb: &[f32], ub: &[f32], mult: &[f32], p: &StepParams) -> Vec<bool> {
    let n_routes = mult.len();
    let (alo, ahi): (Vec<f32>, Vec<f32>) = (0..n_routes)
        .map(|r| {
            let (a, b) = (lb[r] * mult[r], ub[r] * mult[r]);
            let (a, b) = if mult[r] >= 0.0 { (a, b) } else { (b, a) };
            // -inf × 0 (no rows, zero multiplier) is NaN: never a lower bound.
            (if a.is_nan() { f32::NEG_INFINITY } else { a }, b)
        })
        .unzip();
    let best = alo.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut kth = TopK::new(p.exact_top.clamp(1, n_routes.max(1)));
    kth.extend_from(&alo, 0);
    let kth_lo = kth
        .into_sorted()
        .last()
        .map_or(f32::NEG_INFINITY, |h| h.score);
    let tau = kth_lo.min(best - p.exact_band).min(p.exact_floor);
    ahi.iter().map(|&h| h >= tau || h.is_nan()).collect()
}

/// Output of the int8 scan.
struct Scan {
    /// Estimate and bound per row.
    est: Vec<f32>,
    bnd: Vec<f32>,
    /// Per route: max estimate, max lower bound, max upper bound.
    est_max: Vec<f32>,
    lb: Vec<f32>,
    ub: Vec<f32>,
    /// Largest upper bound of each group of [`GROUP`] rows.
    group_hi: Vec<f32>,
    /// The `k`-th best lower bound over rows (-inf when `k == 0`).
    top_floor: f32,
}

/// Rows per entry of [`Scan::group_hi`].
const GROUP: usize = 64;

/// Runs of equal labels at least this long take the vectorised path.
const LONG_RUN: usize = 16;

/// Route maxima and best lower bounds of one range of rows.
struct Partial {
    est_max: Vec<f32>,
    lb: Vec<f32>,
    ub: Vec<f32>,
    top: TopK,
}

impl Partial {
    fn new(n_routes: usize, k: usize) -> Self {
        Partial {
            est_max: vec![f32::NEG_INFINITY; n_routes],
            lb: vec![f32::NEG_INFINITY; n_routes],
            ub: vec![f32::NEG_INFINITY; n_routes],
            top: TopK::new(k.max(1)),
        }
    }

    fn merge(mut self, o: Partial) -> Self {
        for (a, b) in [
            (&mut self.est_max, o.est_max),
            (&mut self.lb, o.lb),
            (&mut self.ub, o.ub),
        ] {
            a.iter_mut().zip(b).for_each(|(x, y)| *x = x.max(y));
        }
        self.top.merge(o.top);
        self
    }
}

/// One pass over the int8 codes, on the rayon pool above the routing cutoff
/// ([`crate::scan::route_parallel_cutoff`], counted in int8 bytes here).
fn scan_int8(index: &FlatIndex, q: &[f32], n_routes: usize, k: usize) -> Scan {
    let s = index.storage();
    let (n, d) = (s.len(), s.dim());
    let q8 = QueryI8::new(q, s.centre());
    let mut est = vec![0f32; n];
    let mut bnd = vec![0f32; n];
    let mut group_hi = vec![f32::NEG_INFINITY; n.div_ceil(GROUP)];
    let threads = rayon::current_num_threads().max(1);
    let part = if n * d < route_parallel_cutoff() || threads == 1 {
        let out = Out {
            est: &mut est,
            bnd: &mut bnd,
            group_hi: &mut group_hi,
        };
        scan_range(index, &q8, 0, out, n_routes, k)
    } else {
        let step = n.div_ceil(threads).div_ceil(BLOCK) * BLOCK;
        est.par_chunks_mut(step)
            .zip(bnd.par_chunks_mut(step))
            .zip(group_hi.par_chunks_mut(step / GROUP))
            .enumerate()
            .map(|(c, ((est, bnd), group_hi))| {
                let out = Out { est, bnd, group_hi };
                scan_range(index, &q8, c * step, out, n_routes, k)
            })
            .reduce(|| Partial::new(n_routes, k), Partial::merge)
    };
    let top_floor = if k > 0 {
        part.top.threshold()
    } else {
        f32::NEG_INFINITY
    };
    Scan {
        est,
        bnd,
        est_max: part.est_max,
        lb: part.lb,
        ub: part.ub,
        group_hi,
        top_floor,
    }
}

/// The per-row outputs of one range of rows (`group_hi` per [`GROUP`] rows).
struct Out<'a> {
    est: &'a mut [f32],
    bnd: &'a mut [f32],
    group_hi: &'a mut [f32],
}

/// Scan rows `start..start + out.est.len()` (`start` a multiple of [`BLOCK`]).
/// The per-row bookkeeping is compiled twice, for AVX2 and for the baseline:
/// the baseline (SSE2) build of these loops took as long as the kernel itself.
fn scan_range(
    index: &FlatIndex,
    q8: &QueryI8,
    start: usize,
    out: Out,
    n_routes: usize,
    k: usize,
) -> Partial {
    #[cfg(target_arch = "x86_64")]
    if crate::simd::has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        return unsafe { scan_range_avx2(index, q8, start, out, n_routes, k) };
    }
    scan_range_body(index, q8, start, out, n_routes, k)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn scan_range_avx2(
    index: &FlatIndex,
    q8: &QueryI8,
    start: usize,
    out: Out,
    n_routes: usize,
    k: usize,
) -> Partial {
    scan_range_body(index, q8, start, out, n_routes, k)
}

/// Blocks through the kernel, then vectorisable loops over runs of equal
/// labels (a route's exemplars are usually contiguous; tool catalogs have one
/// row per tool). Plain `a * b + c` (Rust never fuses it), so both builds give
/// the same bits.
#[inline(always)]
fn scan_range_body(
    index: &FlatIndex,
    q8: &QueryI8,
    start: usize,
    out: Out,
    n_routes: usize,
    k: usize,
) -> Partial {
    let Out { est, bnd, group_hi } = out;
    let s = index.storage();
    let d = s.dim();
    let labels = &index.label_codes()[start..start + est.len()];
    let cols = s.quant();
    let (a, c, k0) = q8.bound_coeffs();
    let mut p = Partial::new(n_routes, k);
    let (est_max, lb, ub, top) = (&mut p.est_max, &mut p.lb, &mut p.ub, &mut p.top);
    let n = est.len();
    let singletons = index.one_row_per_label();
    // One kernel call over the whole range, so its prefetch never stops.
    let rows = start..start + n;
    dot_i8_rows(
        &s.codes()[start * d..(start + n) * d],
        d,
        q8,
        &cols.sum[rows.clone()],
        est,
    );
    let mu_q = q8.centre_dot;
    for (e, &sc) in est.iter_mut().zip(&cols.scale[rows.clone()]) {
        *e = mu_q + sc * *e;
    }
    for ((b, &er), &nh) in bnd
        .iter_mut()
        .zip(&cols.err[rows.clone()])
        .zip(&cols.norm_hat[rows])
    {
        *b = er * a + nh * c + k0;
    }
    // Route intervals and candidate best exemplars, over the rows now in L1/L2.
    if singletons {
        // One row per route (tool catalogs): plain stores, no runs.
        for (row, &l) in labels.iter().enumerate() {
            let (r, x, b) = (l as usize, est[row], bnd[row]);
            (est_max[r], lb[r], ub[r]) = (x, x - b, x + b);
        }
        if k > 0 {
            for row in 0..n {
                let lo = est[row] - bnd[row];
                if lo > top.threshold() {
                    top.push(lo, start + row);
                }
            }
        }
    } else {
        let runs = index.label_runs();
        let first = runs
            .partition_point(|&r| r as usize <= start)
            .saturating_sub(1);
        for w in runs[first..].windows(2) {
            let (j, e) = (
                (w[0] as usize).max(start) - start,
                (w[1] as usize).min(start + n) - start,
            );
            if j >= e {
                break;
            }
            let r = labels[j] as usize;
            let (me, ml, mu) = if e - j >= LONG_RUN {
                max3(&est[j..e], &bnd[j..e])
            } else {
                max3_short(&est[j..e], &bnd[j..e])
            };
            est_max[r] = est_max[r].max(me);
            lb[r] = lb[r].max(ml);
            ub[r] = ub[r].max(mu);
            if k > 0 && ml > top.threshold() {
                for row in j..e {
                    top.push(est[row] - bnd[row], start + row);
                }
            }
        }
    }
    if k > 0 {
        for (h, (e, b)) in group_hi
            .iter_mut()
            .zip(est.chunks(GROUP).zip(bnd.chunks(GROUP)))
        {
            *h = max3(e, b).2;
        }
    }
    p
}

/// [`max3`] for short runs: one scalar loop.
#[inline(always)]
fn max3_short(est: &[f32], bnd: &[f32]) -> (f32, f32, f32) {
    let (mut me, mut ml, mut mu) = (f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY);
    for (&x, &b) in est.iter().zip(bnd) {
        me = if x > me { x } else { me };
        ml = if x - b > ml { x - b } else { ml };
        mu = if x + b > mu { x + b } else { mu };
    }
    (me, ml, mu)
}

/// `(max e, max e − b, max e + b)` over a run, in 8 lanes so it vectorises.
#[inline(always)]
fn max3(est: &[f32], bnd: &[f32]) -> (f32, f32, f32) {
    let mut me = [f32::NEG_INFINITY; 8];
    let mut ml = [f32::NEG_INFINITY; 8];
    let mut mu = [f32::NEG_INFINITY; 8];
    let mut ce = est.chunks_exact(8);
    let mut cb = bnd.chunks_exact(8);
    for (e, b) in (&mut ce).zip(&mut cb) {
        for l in 0..8 {
            let (x, lo, hi) = (e[l], e[l] - b[l], e[l] + b[l]);
            me[l] = if x > me[l] { x } else { me[l] };
            ml[l] = if lo > ml[l] { lo } else { ml[l] };
            mu[l] = if hi > mu[l] { hi } else { mu[l] };
        }
    }
    for (&x, &b) in ce.remainder().iter().zip(cb.remainder()) {
        me[0] = me[0].max(x);
        ml[0] = ml[0].max(x - b);
        mu[0] = mu[0].max(x + b);
    }
    let h = |v: [f32; 8]| v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    (h(me), h(ml), h(mu))
}
