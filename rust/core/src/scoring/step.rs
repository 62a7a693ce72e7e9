//! One full native scoring step for routing: exemplar scores → per-route
//! aggregation → optional per-route bias → domain affinity → softmax →
//! top-1/top-2 collision.
//!
//! The bias ([`score_routes_biased`]) is how another signal (the lexical
//! pass) enters the step: it is added to each route's aggregated score, so
//! affinity, softmax, the collision, the int8 contenders and the best
//! exemplars all see the sum. A `-inf` entry removes the route.

use crate::error::{Error, Result};
use crate::index::storage::StorageKind;
use crate::index::FlatIndex;
use crate::kernels::topk::{top_k, Hit};
pub use crate::scoring::step_batch::score_routes_batch;
use crate::scoring::step_compact;
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

/// The aggregated cosines, their bounds, the best exemplars and their cosines.
pub(super) type Parts = (Vec<f32>, Vec<f32>, Vec<Hit>, Option<Vec<f32>>);

/// The checks of one step, each route's domain and affinity factor.
pub(super) fn setup(
    index: &FlatIndex,
    p: &StepParams,
    bias: Option<&[f32]>,
) -> Result<(Vec<u32>, Vec<f32>)> {
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
pub(super) fn exact_parts(
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
pub(super) fn finish(
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
}
