//! One full native scoring step for routing: exemplar scores → per-route
//! aggregation → optional per-route bias → domain affinity → softmax →
//! top-1/top-2 collision.
//!
//! The bias ([`score_routes_biased`]) is how another signal (the lexical
//! pass) enters the step: it is added to each route's aggregated score, so
//! affinity, softmax, the collision, the int8 contenders and the best
//! exemplars all see the sum. A `-inf` entry removes the route.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::index::scan::route_parallel_cutoff;
use crate::index::storage::StorageKind;
use crate::index::FlatIndex;
use crate::kernels::topk::{top_k, Hit};
use crate::scoring::step_compact;
use crate::scoring::step_scan::scan_int8_many;
use crate::scoring::{
    affinity_multipliers, affinity_scale, aggregate, check_factors, detect_collision, softmax,
    Aggregation, Collision,
};

/// Parameters of [`score_routes`].
#[derive(Clone, Debug)]
pub struct StepParams {
    /// Exemplar-to-route aggregation.
    pub aggregation: Aggregation,
    /// Softmax temperature (> 0).
    pub temperature: f32,
    /// Active domain names (affinity applies only when non-empty).
    pub active_domains: Vec<String>,
    /// Affinity factor (finite, ≥ 0) for routes in an active domain, applied
    /// with [`affinity_scale`]: it never lowers a score of either sign when ≥ 1.
    pub boost: f32,
    /// Affinity factor (finite, ≥ 0) for the other routes: it never raises a
    /// score of either sign when ≤ 1.
    pub penalty: f32,
    /// Collision gap threshold.
    pub collision_gap: f32,
    /// How many best exemplars to report.
    pub top_exemplars: usize,
    /// Compute `probs` (softmax); tool belts do not need them.
    pub probabilities: bool,
    /// int8 storage only: the best `exact_top` routes are always scored exactly.
    pub exact_top: usize,
    /// int8 storage only: so is every route within `exact_band` of the best.
    pub exact_band: f32,
    /// int8 storage only: and every route that may score `>= exact_floor`
    /// (`+inf`: no floor).
    pub exact_floor: f32,
    /// int8 storage only: these routes (label names) are always exact too,
    /// e.g. the previous route, whose boost may lift it to the top.
    pub exact_routes: Vec<String>,
}

impl StepParams {
    /// Defaults for everything but the aggregation and temperature.
    pub fn new(aggregation: Aggregation, temperature: f32) -> Self {
        StepParams {
            aggregation,
            temperature,
            active_domains: Vec::new(),
            boost: crate::scoring::DEFAULT_BOOST,
            penalty: crate::scoring::DEFAULT_PENALTY,
            collision_gap: crate::scoring::DEFAULT_COLLISION_GAP,
            top_exemplars: 5,
            probabilities: true,
            exact_top: 10,
            exact_band: 0.0,
            exact_floor: f32::INFINITY,
            exact_routes: Vec::new(),
        }
    }
}

/// Output of [`score_routes`]; per-route vectors are indexed by label code.
#[derive(Clone, Debug)]
pub struct StepResult {
    /// Aggregated cosine per route (-inf for codes without exemplars), plus
    /// the route's bias when one is given.
    pub raw: Vec<f32>,
    /// With a bias: the aggregated cosine alone (`raw` without the bias).
    pub dense: Option<Vec<f32>>,
    /// Bound on `|raw − exact|` per route: 0 when exact (always, for f32 and
    /// f16 storage; for int8, see [`crate::scoring::step_compact`]).
    pub bound: Vec<f32>,
    /// `raw` after domain affinity ([`affinity_scale`] of each route's factor).
    pub adjusted: Vec<f32>,
    /// Softmax of `adjusted / temperature` (empty unless `probabilities`).
    pub probs: Vec<f32>,
    /// Domain code of each route (that of its exemplars).
    pub route_domains: Vec<u32>,
    /// Best exemplars overall (row positions and scores; with a bias, each
    /// exemplar's cosine plus its route's bias, and routes at `-inf` left out).
    pub top: Vec<Hit>,
    /// With a bias: the cosine of each of `top`.
    pub top_dense: Option<Vec<f32>>,
    /// Cross-domain top-1/top-2 pair closer than the gap, if any.
    pub collision: Option<Collision>,
}

/// Score every route of `index` (labels are routes) for one query.
///
/// f32 and f16 storage score every exemplar exactly; int8 storage scans the
/// int8 copy and re-scores the contenders exactly ([`crate::scoring::step_compact`]).
pub fn score_routes(index: &FlatIndex, query: &[f32], p: &StepParams) -> Result<StepResult> {
    score_routes_biased(index, query, p, None)
}

/// [`score_routes`] with `bias[c]` (one per label code, finite or `-inf`)
/// added to route `c`'s aggregated score before affinity, softmax, the
/// collision, the int8 contenders and the choice of best exemplars. A `-inf`
/// entry removes the route: probability 0, never in the collision nor among
/// the best exemplars. `None` is exactly [`score_routes`].
pub fn score_routes_biased(
    index: &FlatIndex,
    query: &[f32],
    p: &StepParams,
    bias: Option<&[f32]>,
) -> Result<StepResult> {
    let (route_domains, mult) = setup(index, p, bias)?;
    let parts = if index.kind() == StorageKind::Int8 {
        let (_, q) = index.prepare_queries(query)?;
        if q.len() != index.dim() {
            return Err(Error::InvalidArgument(
                "score_routes takes one query".into(),
            ));
        }
        let e = step_compact::estimate(index, &q, p, &mult, bias)?;
        (e.raw, e.bound, e.top, e.top_dense)
    } else {
        exact_parts(index, &index.score_all(query)?, p, bias)?
    };
    finish(parts, route_domains, &mult, p, bias)
}

/// [`score_routes_biased`] of each query stored row-major in `queries`, query `i` with
/// `params[i]` and `biases[i]`: the same results as one call each. With f32 or f16
/// storage the exemplar table is read once per tile for the whole batch
/// ([`FlatIndex::score_all_batch`]) instead of once per query; int8 storage scans its codes
/// once per block of [`INT8_BLOCK`] queries, the blocks split across threads above the routing
/// cutoff ([`route_parallel_cutoff`], over the whole batch).
pub fn score_routes_batch(
    index: &FlatIndex,
    queries: &[f32],
    params: &[&StepParams],
    biases: &[Option<&[f32]>],
) -> Result<Vec<StepResult>> {
    let (d, n) = (index.dim(), params.len());
    if biases.len() != n || queries.len() != n * d {
        return Err(Error::InvalidArgument(format!(
            "score_routes_batch: {} floats for {n} queries of width {d}, {} biases",
            queries.len(),
            biases.len()
        )));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    if index.kind() == StorageKind::Int8 {
        // Blocks of queries share each pass over the codes; the blocks split across the rayon
        // pool when the batch's scans add up to the routing cutoff (one fork for the batch).
        let block = |(qs, (ps, bs)): Block| int8_block(index, qs, ps, bs);
        let threads = rayon::current_num_threads();
        let parallel = threads > 1 && n * index.len() * d >= route_parallel_cutoff();
        if parallel && n.div_ceil(INT8_BLOCK) < threads {
            // Too few blocks to fill the pool: each query's scan splits its rows across it.
            return queries
                .chunks_exact(d)
                .zip(params.iter().zip(biases))
                .map(|(q, (p, b))| score_routes_biased(index, q, p, *b))
                .collect();
        }
        let blocks = queries
            .chunks(INT8_BLOCK * d)
            .zip(params.chunks(INT8_BLOCK).zip(biases.chunks(INT8_BLOCK)));
        let parts: Vec<Result<Vec<StepResult>>> = if parallel {
            blocks
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(block)
                .collect()
        } else {
            blocks.map(block).collect()
        };
        let mut out = Vec::with_capacity(n);
        for part in parts {
            out.extend(part?);
        }
        return Ok(out);
    }
    // Blocks of queries bound the scores held at once (BATCH_BLOCK × rows) for any batch size.
    let mut out = Vec::with_capacity(n);
    for ((qs, ps), bs) in queries
        .chunks(BATCH_BLOCK * d)
        .zip(params.chunks(BATCH_BLOCK))
        .zip(biases.chunks(BATCH_BLOCK))
    {
        let scores = index.score_all_batch(qs)?;
        for ((sc, p), b) in scores.chunks_exact(index.len()).zip(ps).zip(bs) {
            let (route_domains, mult) = setup(index, p, *b)?;
            out.push(finish(
                exact_parts(index, sc, p, *b)?,
                route_domains,
                &mult,
                p,
                *b,
            )?);
        }
    }
    Ok(out)
}

/// One block of [`score_routes_batch`]: its queries (row-major), their parameters and biases.
type Block<'a> = (&'a [f32], (&'a [&'a StepParams], &'a [Option<&'a [f32]>]));

/// Queries of one int8 block of [`score_routes_batch`]: the kernel reads each tile of codes once
/// for all of them (15,000 × 256 codes: 128 µs a query alone, 56 in blocks of 16; Xeon EMR).
const INT8_BLOCK: usize = 16;

/// [`score_routes_biased`] of a block of queries over int8 storage, one scan of the codes for all.
fn int8_block(
    index: &FlatIndex,
    queries: &[f32],
    params: &[&StepParams],
    biases: &[Option<&[f32]>],
) -> Result<Vec<StepResult>> {
    let setups = params
        .iter()
        .zip(biases)
        .map(|(p, b)| setup(index, p, *b))
        .collect::<Result<Vec<_>>>()?;
    let (_, prepared) = index.prepare_queries(queries)?;
    let qs: Vec<&[f32]> = prepared.chunks_exact(index.dim()).collect();
    let tops: Vec<usize> = params
        .iter()
        .map(|p| step_compact::scan_top(index, p))
        .collect();
    let n_routes = setups.first().map_or(0, |(_, mult)| mult.len());
    let scans = scan_int8_many(index, &qs, n_routes, &tops, biases);
    let mut out = Vec::with_capacity(qs.len());
    for ((((q, p), b), (route_domains, mult)), scan) in
        qs.iter().zip(params).zip(biases).zip(setups).zip(scans)
    {
        let e = step_compact::estimate_scanned(index, q, p, &mult, *b, scan)?;
        out.push(finish(
            (e.raw, e.bound, e.top, e.top_dense),
            route_domains,
            &mult,
            p,
            *b,
        )?);
    }
    Ok(out)
}

/// Queries scored together by [`score_routes_batch`]: each tile of the table is read once for
/// this many, and at most this many rows of scores are held (64 × 15,000 rows: 3.8 MB).
const BATCH_BLOCK: usize = 64;

/// The aggregated cosines, their bounds, the best exemplars and their cosines.
type Parts = (Vec<f32>, Vec<f32>, Vec<Hit>, Option<Vec<f32>>);

/// The checks of one step, each route's domain and affinity factor.
fn setup(index: &FlatIndex, p: &StepParams, bias: Option<&[f32]>) -> Result<(Vec<u32>, Vec<f32>)> {
    if index.is_empty() {
        return Err(Error::EmptyIndex);
    }
    if let Some(b) = bias {
        check_bias(b, index.label_names().len())?;
    }
    check_factors(p.boost, p.penalty)?;
    let route_domains = index.route_domains().to_vec();
    let mult = route_multipliers(index, &route_domains, p);
    Ok((route_domains, mult))
}

/// The [`Parts`] of exact exemplar `scores` (f32 and f16 storage).
fn exact_parts(
    index: &FlatIndex,
    scores: &[f32],
    p: &StepParams,
    bias: Option<&[f32]>,
) -> Result<Parts> {
    let n_routes = index.label_names().len();
    let raw = aggregate(scores, index.label_codes(), n_routes, p.aggregation)?;
    let k = p.top_exemplars.min(scores.len());
    let (top, top_dense) = match bias {
        _ if k == 0 => (Vec::new(), bias.map(|_| Vec::new())),
        None => (top_k(scores, k), None),
        Some(b) => {
            let biased: Vec<f32> = scores
                .iter()
                .zip(index.label_codes())
                .map(|(s, &c)| s + b[c as usize])
                .collect();
            let mut top = top_k(&biased, k);
            top.retain(|h| h.score != f32::NEG_INFINITY);
            let dense = top.iter().map(|h| scores[h.index]).collect();
            (top, Some(dense))
        }
    };
    Ok((raw, vec![0.0; n_routes], top, top_dense))
}

/// The bias, affinity, softmax and collision over the aggregated scores.
fn finish(
    (dense, bound, top, top_dense): Parts,
    route_domains: Vec<u32>,
    mult: &[f32],
    p: &StepParams,
    bias: Option<&[f32]>,
) -> Result<StepResult> {
    let (raw, dense) = match bias {
        None => (dense, None),
        Some(b) => (
            dense.iter().zip(b).map(|(s, b)| s + b).collect(),
            Some(dense),
        ),
    };
    // Any sign of score: a boost never lowers it, a penalty never raises it; a route at
    // -inf (no exemplars, or removed by its bias) stays there ([`affinity_scale`]).
    let adjusted: Vec<f32> = raw
        .iter()
        .zip(mult)
        .map(|(&r, &m)| affinity_scale(r, m))
        .collect();
    if adjusted.iter().all(|s| *s == f32::NEG_INFINITY) {
        return Err(match bias {
            Some(_) => Error::InvalidArgument("the bias removes every route".into()),
            None => Error::EmptyIndex,
        });
    }
    let probs = if p.probabilities {
        softmax(&adjusted, p.temperature)?
    } else {
        Vec::new()
    };
    let collision = detect_collision(&adjusted, &route_domains, p.collision_gap)?;
    Ok(StepResult {
        raw,
        dense,
        bound,
        adjusted,
        probs,
        route_domains,
        top,
        top_dense,
        collision,
    })
}

/// A bias has one entry per label code, each finite or `-inf`.
fn check_bias(bias: &[f32], n_routes: usize) -> Result<()> {
    if bias.len() != n_routes {
        return Err(Error::InvalidArgument(format!(
            "bias has {} entries; the index has {n_routes} label codes",
            bias.len()
        )));
    }
    // NaN or +inf, in one branch-free pass.
    let bad = |b: f32| b.is_nan() | (b == f32::INFINITY);
    if !bias.iter().fold(false, |any, &b| any | bad(b)) {
        return Ok(());
    }
    let i = bias.iter().position(|&b| bad(b)).unwrap();
    Err(Error::InvalidArgument(format!(
        "bias[{i}] is {}: entries must be finite or -inf",
        bias[i]
    )))
}

/// Per-route affinity factors ([`affinity_multipliers`]); when none of the
/// active domain names is known to the index, every route is cross-domain and
/// gets `penalty`.
fn route_multipliers(index: &FlatIndex, route_domains: &[u32], p: &StepParams) -> Vec<f32> {
    let mut active = vec![false; index.domain_names().len()];
    for name in &p.active_domains {
        if let Some(c) = index.domain_code(name) {
            active[c as usize] = true;
        }
    }
    if !p.active_domains.is_empty() && !active.iter().any(|&a| a) {
        return vec![p.penalty; route_domains.len()];
    }
    affinity_multipliers(route_domains, &active, p.boost, p.penalty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::scan::{set_route_parallel_cutoff, ROUTE_PARALLEL_CUTOFF};
    use crate::index::storage::StorageKind;

    #[test]
    fn full_step() {
        let mut idx = FlatIndex::new(2, StorageKind::F32, true).unwrap();
        idx.add(
            &[1, 2, 3, 4],
            &[1.0, 0.0, 0.9, 0.1, 0.0, 1.0, 0.7, 0.7],
            Some(&["A", "A", "B", "C"]),
            Some(&["x", "x", "y", "y"]),
        )
        .unwrap();
        let p = StepParams {
            top_exemplars: 2,
            ..StepParams::new(Aggregation::Max, 0.1)
        };
        let r = score_routes(&idx, &[1.0, 0.0], &p).unwrap();
        let a = idx.label_names().iter().position(|n| n == "A").unwrap();
        assert!((r.raw[a] - 1.0).abs() < 1e-6);
        assert_eq!(r.raw[0], f32::NEG_INFINITY);
        assert!((r.probs.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert_eq!(r.top[0].index, 0);
        assert!(r.collision.is_none());
        let q = score_routes(
            &idx,
            &[0.7, 0.7],
            &StepParams {
                active_domains: vec!["y".into()],
                ..p
            },
        )
        .unwrap();
        let c = idx.label_names().iter().position(|n| n == "C").unwrap();
        assert!((q.adjusted[c] - 1.15).abs() < 1e-5);
    }

    #[test]
    fn a_batch_is_each_query_alone() {
        let (d, n) = (24, 600);
        let mut rnd = crate::testing::uniform(7);
        let rows: Vec<f32> = (0..n * d).map(|_| rnd()).collect();
        let labels: Vec<String> = (0..n).map(|i| format!("r{}", i % 37)).collect();
        let domains: Vec<String> = (0..n).map(|i| format!("d{}", i % 3)).collect();
        let (l, dm): (Vec<&str>, Vec<&str>) = (
            labels.iter().map(String::as_str).collect(),
            domains.iter().map(String::as_str).collect(),
        );
        let ids: Vec<u64> = (0..n as u64).collect();
        // Five queries, and more than two blocks of BATCH_BLOCK.
        let nq = 2 * BATCH_BLOCK + 3;
        let queries: Vec<f32> = (0..nq * d).map(|_| rnd()).collect();
        // int8 batches split their queries across threads above the routing cutoff: both ways.
        for (kind, nq, cutoff) in [
            (StorageKind::F32, 5, ROUTE_PARALLEL_CUTOFF),
            (StorageKind::F16, 5, ROUTE_PARALLEL_CUTOFF),
            (StorageKind::Int8, 5, ROUTE_PARALLEL_CUTOFF),
            (StorageKind::Int8, nq, 1),
            (StorageKind::F32, nq, ROUTE_PARALLEL_CUTOFF),
        ] {
            set_route_parallel_cutoff(cutoff);
            let queries = &queries[..nq * d];
            let mut idx = FlatIndex::new(d, kind, true).unwrap();
            idx.add(&ids, &rows, Some(&l), Some(&dm)).unwrap();
            let codes = idx.label_names().len();
            let bias: Vec<f32> = (0..codes).map(|c| (c % 5) as f32 * 0.01).collect();
            let plain = StepParams::new(Aggregation::Max, 0.05);
            let domain = StepParams {
                active_domains: vec!["d1".into()],
                top_exemplars: 3,
                ..StepParams::new(Aggregation::Mean, 0.1)
            };
            let params: Vec<&StepParams> = (0..nq)
                .map(|i| if i % 2 == 0 { &plain } else { &domain })
                .collect();
            let biases: Vec<Option<&[f32]>> =
                (0..nq).map(|i| (i % 3 == 1).then_some(&bias[..])).collect();
            let got = score_routes_batch(&idx, queries, &params, &biases).unwrap();
            for (i, q) in queries.chunks(d).enumerate() {
                let one = score_routes_biased(&idx, q, params[i], biases[i]).unwrap();
                assert_eq!(
                    format!("{:?}", got[i]),
                    format!("{one:?}"),
                    "{kind:?} query {i}"
                );
            }
        }
        set_route_parallel_cutoff(ROUTE_PARALLEL_CUTOFF);
        let idx = FlatIndex::new(d, StorageKind::F32, true).unwrap();
        assert!(score_routes_batch(
            &idx,
            &queries[..d],
            &[&StepParams::new(Aggregation::Max, 0.1)],
            &[None]
        )
        .is_err());
    }
}
