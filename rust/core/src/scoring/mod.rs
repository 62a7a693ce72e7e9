//! Route-level scoring: aggregation of exemplar scores, softmax, domain affinity
//! and top-1/top-2 collision detection.
//!
//! - [`head`]: the exemplar head's forward pass, read in a table's route order;
//! - [`step`]: one full native routing step over a [`crate::FlatIndex`];
//! - [`step_compact`]: that step over int8 storage, with an exact re-score of
//!   the routes that can still matter;
//! - [`step_scan`]: the int8 pass of the compact step.

pub mod head;
pub mod step;
pub mod step_batch;
pub mod step_compact;
pub mod step_scan;

use crate::error::{Error, Result};
use crate::kernels::topk::top_k;

/// How exemplar scores become one score per route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// Best exemplar.
    Max,
    /// Mean over all exemplars of the route.
    Mean,
    /// Mean of the best `n` exemplars (all of them when the route has fewer).
    TopNMean(usize),
}

impl Aggregation {
    /// Parse `"max"`, `"mean"` or `"topn"` (with `n`).
    pub fn parse(name: &str, n: usize) -> Result<Self> {
        match name {
            "max" => Ok(Aggregation::Max),
            "mean" => Ok(Aggregation::Mean),
            "topn" | "top_n" | "topn_mean" if n >= 1 => Ok(Aggregation::TopNMean(n)),
            "topn" | "top_n" | "topn_mean" => {
                Err(Error::InvalidArgument("top-n mean needs n >= 1".into()))
            }
            other => Err(Error::InvalidArgument(format!(
                "unknown aggregation {other:?}; expected 'max', 'mean' or 'topn'"
            ))),
        }
    }
}

/// Aggregate exemplar `scores` into `n_routes` route scores, where `routes[i]` is
/// the route of exemplar `i`. A route without exemplars scores -inf.
pub fn aggregate(
    scores: &[f32],
    routes: &[u32],
    n_routes: usize,
    how: Aggregation,
) -> Result<Vec<f32>> {
    if scores.len() != routes.len() {
        return Err(Error::DimensionMismatch {
            expected: scores.len(),
            got: routes.len(),
        });
    }
    if let Some(&bad) = routes.iter().find(|&&r| r as usize >= n_routes) {
        return Err(Error::InvalidArgument(format!(
            "route code {bad} >= number of routes {n_routes}"
        )));
    }
    let mut out = vec![f32::NEG_INFINITY; n_routes];
    match how {
        Aggregation::Max => {
            for (&s, &r) in scores.iter().zip(routes) {
                let o = &mut out[r as usize];
                if s > *o {
                    *o = s;
                }
            }
        }
        Aggregation::Mean => {
            let mut sum = vec![0f64; n_routes];
            let mut cnt = vec![0usize; n_routes];
            for (&s, &r) in scores.iter().zip(routes) {
                sum[r as usize] += s as f64;
                cnt[r as usize] += 1;
            }
            for r in 0..n_routes {
                if cnt[r] > 0 {
                    out[r] = (sum[r] / cnt[r] as f64) as f32;
                }
            }
        }
        Aggregation::TopNMean(n) => {
            let mut per: Vec<Vec<f32>> = vec![Vec::new(); n_routes];
            for (&s, &r) in scores.iter().zip(routes) {
                per[r as usize].push(s);
            }
            for (r, v) in per.iter().enumerate() {
                if v.is_empty() {
                    continue;
                }
                let best = top_k(v, n.min(v.len()));
                out[r] =
                    (best.iter().map(|h| h.score as f64).sum::<f64>() / best.len() as f64) as f32;
            }
        }
    }
    Ok(out)
}

/// Softmax of `x / temperature`, computed in f64 after subtracting the maximum.
///
/// Entries at -inf get probability 0. When every entry is -inf the result is
/// uniform (no information). `temperature` must be finite and > 0.
pub fn softmax(x: &[f32], temperature: f32) -> Result<Vec<f32>> {
    if !(temperature > 0.0 && temperature.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "temperature must be > 0, got {temperature}"
        )));
    }
    if x.iter().any(|v| v.is_nan() || *v == f32::INFINITY) {
        return Err(Error::NonFinite {
            what: "softmax input",
            row: 0,
        });
    }
    if x.is_empty() {
        return Ok(Vec::new());
    }
    let m = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return Ok(vec![1.0 / x.len() as f32; x.len()]);
    }
    let t = temperature as f64;
    let e: Vec<f64> = x
        .iter()
        .map(|&v| ((v as f64 - m as f64) / t).exp())
        .collect();
    let z: f64 = e.iter().sum();
    Ok(e.iter().map(|v| (v / z) as f32).collect())
}

/// Default affinity factor for candidates whose domain is in the active context.
pub const DEFAULT_BOOST: f32 = 1.15;
/// Default affinity factor for candidates from other domains.
pub const DEFAULT_PENALTY: f32 = 0.70;
/// Default top-1/top-2 gap under which a cross-domain pair is a collision.
pub const DEFAULT_COLLISION_GAP: f32 = 0.08;

/// Apply an affinity `factor` (≥ 0) to one `score`, the same way for any sign:
/// `score × factor` when `score ≥ 0`, `score / factor` when it is negative.
///
/// A factor above 1 (a boost) therefore never lowers a score and a factor
/// under 1 (a demotion) never raises one, whatever its sign: a plain product
/// would turn a boost of 1.15 on a cosine of −0.6 into −0.69, below a
/// demoted −0.8 × 0.7 = −0.56. Here they become −0.52 and −1.14, so the
/// in-domain route stays ahead. On scores ≥ 0 this is exactly the former
/// product (positive results are unchanged).
///
/// For a fixed factor the map is non-decreasing in `score` (strictly for a
/// factor > 0), so candidates sharing a factor keep their order, and a boosted
/// candidate never falls below a demoted one it was level with or above.
/// `-inf` (a removed candidate) and NaN pass through unchanged; a negative
/// score under a factor of 0, or one whose quotient would overflow, becomes
/// `f32::MIN` (finite: the candidate stays last but is not removed).
#[inline]
pub fn affinity_scale(score: f32, factor: f32) -> f32 {
    if score >= 0.0 {
        score * factor
    } else if score > f32::NEG_INFINITY {
        (score / factor).max(f32::MIN)
    } else {
        score
    }
}

/// A factor must be finite and ≥ 0 (see [`affinity_scale`]).
pub(crate) fn check_factors(boost: f32, penalty: f32) -> Result<()> {
    for (what, f) in [("boost", boost), ("penalty", penalty)] {
        if !(f.is_finite() && f >= 0.0) {
            return Err(Error::InvalidArgument(format!(
                "the affinity {what} must be finite and >= 0, got {f}"
            )));
        }
    }
    Ok(())
}

/// Affinity factor per candidate: `boost` when its domain is active,
/// `penalty` otherwise. `active[d]` says whether domain code `d` is active; with
/// no active domain at all every factor is 1. Apply them with [`affinity_scale`].
pub fn affinity_multipliers(
    domains: &[u32],
    active: &[bool],
    boost: f32,
    penalty: f32,
) -> Vec<f32> {
    if !active.iter().any(|&a| a) {
        return vec![1.0; domains.len()];
    }
    domains
        .iter()
        .map(|&d| {
            if active.get(d as usize).copied().unwrap_or(false) {
                boost
            } else {
                penalty
            }
        })
        .collect()
}

/// Scale each score by its [`affinity_multipliers`] factor with [`affinity_scale`]
/// (a boost never lowers a score, a penalty never raises one, for any sign).
///
/// Errors: `scores` and `domains` differ in length, or a factor is negative,
/// infinite or NaN.
pub fn apply_affinity(
    scores: &mut [f32],
    domains: &[u32],
    active: &[bool],
    boost: f32,
    penalty: f32,
) -> Result<()> {
    if scores.len() != domains.len() {
        return Err(Error::DimensionMismatch {
            expected: scores.len(),
            got: domains.len(),
        });
    }
    check_factors(boost, penalty)?;
    let mult = affinity_multipliers(domains, active, boost, penalty);
    scores
        .iter_mut()
        .zip(mult)
        .for_each(|(s, m)| *s = affinity_scale(*s, m));
    Ok(())
}

/// A top-1/top-2 pair from different domains with too small a gap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collision {
    /// Index of the best candidate.
    pub first: usize,
    /// Index of the runner-up.
    pub second: usize,
    /// `score[first] - score[second]`.
    pub gap: f32,
}

/// Report a collision when the best two candidates (ties to the lower index) come
/// from different domains and their score gap is below `max_gap`.
pub fn detect_collision(
    scores: &[f32],
    domains: &[u32],
    max_gap: f32,
) -> Result<Option<Collision>> {
    if scores.len() != domains.len() {
        return Err(Error::DimensionMismatch {
            expected: scores.len(),
            got: domains.len(),
        });
    }
    if scores.len() < 2 {
        return Ok(None);
    }
    let best = top_k(scores, 2);
    let (a, b) = (best[0], best[1]);
    let gap = a.score - b.score;
    if domains[a.index] != domains[b.index] && gap < max_gap {
        Ok(Some(Collision {
            first: a.index,
            second: b.index,
            gap,
        }))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
