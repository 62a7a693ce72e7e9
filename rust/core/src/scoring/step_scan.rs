//! The int8 pass of the routing step ([`crate::scoring::step_compact`]): every
//! exemplar's estimate and error bound from one kernel call per range, then
//! per-route intervals over the runs of equal labels, the candidates for the
//! best exemplars, and the largest upper bound of each group of rows. With a
//! per-route bias, the candidates for the best exemplars are judged on the
//! biased lower bounds (the route intervals and group bounds stay unbiased).

use rayon::prelude::*;

use crate::index::scan::route_parallel_cutoff;
use crate::index::FlatIndex;
use crate::kernels::simd_int8::{dot_i8_rows, dot_i8_rows_many, QueryI8, BLOCK_ROWS as BLOCK};
use crate::kernels::topk::TopK;

/// Output of the int8 scan.
pub(crate) struct Scan {
    /// Estimate and bound per row.
    pub est: Vec<f32>,
    pub bnd: Vec<f32>,
    /// Per route: max estimate, max lower bound, max upper bound.
    pub est_max: Vec<f32>,
    pub lb: Vec<f32>,
    pub ub: Vec<f32>,
    /// Largest upper bound of each group of [`GROUP`] rows.
    pub group_hi: Vec<f32>,
    /// The `k`-th best lower bound over rows, plus their route's bias (-inf
    /// when `k == 0`).
    pub top_floor: f32,
}

/// Rows per entry of [`Scan::group_hi`].
pub(crate) const GROUP: usize = 64;

// Parallel ranges start at multiples of BLOCK, so their groups must not straddle them.
const _: () = assert!(BLOCK.is_multiple_of(GROUP));

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
/// ([`crate::index::scan::route_parallel_cutoff`], counted in int8 bytes here).
pub(crate) fn scan_int8(
    index: &FlatIndex,
    q: &[f32],
    n_routes: usize,
    k: usize,
    bias: Option<&[f32]>,
) -> Scan {
    let s = index.storage();
    let (n, d) = (s.len(), s.dim());
    let q8 = QueryI8::new(q, s.centre());
    let mut est = vec![0f32; n];
    let mut bnd = vec![0f32; n];
    let mut group_hi = vec![f32::NEG_INFINITY; n.div_ceil(GROUP)];
    let threads = rayon::current_num_threads().max(1);
    let range = |start, est, bnd, group_hi| RangeScan {
        index,
        q8: &q8,
        start,
        dots_ready: false,
        est,
        bnd,
        group_hi,
        n_routes,
        k,
        bias,
    };
    let part = if n * d < route_parallel_cutoff() || threads == 1 {
        scan_range(range(0, &mut est, &mut bnd, &mut group_hi))
    } else {
        let step = n.div_ceil(threads).div_ceil(BLOCK) * BLOCK;
        est.par_chunks_mut(step)
            .zip(bnd.par_chunks_mut(step))
            .zip(group_hi.par_chunks_mut(step / GROUP))
            .enumerate()
            .map(|(c, ((est, bnd), group_hi))| scan_range(range(c * step, est, bnd, group_hi)))
            .reduce(|| Partial::new(n_routes, k), Partial::merge)
    };
    finish_scan(part, k, est, bnd, group_hi)
}

/// [`scan_int8`] of each of `qs` (prepared queries) with `tops[i]` best rows and bias
/// `biases[i]`, on this thread: the kernel reads the codes once for all of them
/// ([`dot_i8_rows_many`]), then each query's bookkeeping runs on its outputs. Each [`Scan`]
/// equals [`scan_int8`]'s.
pub(crate) fn scan_int8_many(
    index: &FlatIndex,
    qs: &[&[f32]],
    n_routes: usize,
    tops: &[usize],
    biases: &[Option<&[f32]>],
) -> Vec<Scan> {
    let s = index.storage();
    let n = s.len();
    let q8s: Vec<QueryI8> = qs.iter().map(|q| QueryI8::new(q, s.centre())).collect();
    let mut ests: Vec<Vec<f32>> = qs.iter().map(|_| vec![0f32; n]).collect();
    let mut outs: Vec<&mut [f32]> = ests.iter_mut().map(Vec::as_mut_slice).collect();
    dot_i8_rows_many(s.codes(), s.dim(), &q8s, &s.quant().sum[..n], &mut outs);
    q8s.iter()
        .zip(ests)
        .zip(tops.iter().zip(biases))
        .map(|((q8, mut est), (&k, &bias))| {
            let mut bnd = vec![0f32; n];
            let mut group_hi = vec![f32::NEG_INFINITY; n.div_ceil(GROUP)];
            let part = scan_range(RangeScan {
                index,
                q8,
                start: 0,
                dots_ready: true,
                est: &mut est,
                bnd: &mut bnd,
                group_hi: &mut group_hi,
                n_routes,
                k,
                bias,
            });
            finish_scan(part, k, est, bnd, group_hi)
        })
        .collect()
}

/// The [`Scan`] of a whole pass: `part` merged over its ranges, and the per-row outputs.
fn finish_scan(part: Partial, k: usize, est: Vec<f32>, bnd: Vec<f32>, group_hi: Vec<f32>) -> Scan {
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

/// One range of rows to scan, `start..start + est.len()` (`start` a multiple
/// of [`BLOCK`]), and its per-row outputs (`group_hi` per [`GROUP`] rows).
struct RangeScan<'a> {
    index: &'a FlatIndex,
    q8: &'a QueryI8,
    start: usize,
    /// `est` holds the kernel's outputs already ([`scan_int8_many`]).
    dots_ready: bool,
    est: &'a mut [f32],
    bnd: &'a mut [f32],
    group_hi: &'a mut [f32],
    n_routes: usize,
    k: usize,
    bias: Option<&'a [f32]>,
}

/// Scan one range. The per-row bookkeeping is compiled twice, for AVX2 and for
/// the baseline: in the baseline (SSE2) build it took 17 % of a hot step, a
/// third of the kernel's time (`perf`, 150 × 100 × 384).
fn scan_range(r: RangeScan) -> Partial {
    #[cfg(target_arch = "x86_64")]
    if crate::kernels::simd::has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        return unsafe { scan_range_avx2(r) };
    }
    scan_range_body(r)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn scan_range_avx2(r: RangeScan) -> Partial {
    scan_range_body(r)
}

/// The kernel over the whole range, then vectorisable loops over the runs of
/// equal labels (a route's exemplars are usually contiguous; tool catalogs
/// have one row per tool). Plain `a * b + c` (Rust never fuses it), so both
/// builds give the same bits.
#[inline(always)]
fn scan_range_body(r: RangeScan) -> Partial {
    let RangeScan {
        index,
        q8,
        start,
        dots_ready,
        est,
        bnd,
        group_hi,
        n_routes,
        k,
        bias,
    } = r;
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
    if !dots_ready {
        dot_i8_rows(
            &s.codes()[start * d..(start + n) * d],
            d,
            q8,
            &cols.sum[rows.clone()],
            est,
        );
    }
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
                let lo = est[row] - bnd[row] + bias.map_or(0.0, |b| b[labels[row] as usize]);
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
            let br = bias.map_or(0.0, |b| b[r]);
            if k > 0 && ml + br > top.threshold() {
                for row in j..e {
                    top.push(est[row] - bnd[row] + br, start + row);
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
