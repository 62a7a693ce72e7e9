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
mod tests {
    use super::*;

    #[test]
    fn aggregation_variants() {
        let s = [0.9, 0.1, 0.5, 0.7, 0.3];
        let r = [0, 0, 1, 1, 1];
        assert_eq!(
            aggregate(&s, &r, 3, Aggregation::Max).unwrap()[..2],
            [0.9, 0.7]
        );
        let m = aggregate(&s, &r, 2, Aggregation::Mean).unwrap();
        assert!((m[0] - 0.5).abs() < 1e-6 && (m[1] - 0.5).abs() < 1e-6);
        let t = aggregate(&s, &r, 3, Aggregation::TopNMean(2)).unwrap();
        assert!((t[1] - 0.6).abs() < 1e-6);
        assert_eq!(t[2], f32::NEG_INFINITY);
        assert!(aggregate(&s, &[0, 0, 5, 0, 0], 2, Aggregation::Max).is_err());
    }

    #[test]
    fn softmax_is_stable() {
        let p = softmax(&[1000.0, 1000.0, f32::NEG_INFINITY], 1.0).unwrap();
        assert_eq!(p, vec![0.5, 0.5, 0.0]);
        let u = softmax(&[f32::NEG_INFINITY; 4], 0.1).unwrap();
        assert_eq!(u, vec![0.25; 4]);
        let q = softmax(&[0.1, 0.2], 0.01).unwrap();
        assert!((q.iter().sum::<f32>() - 1.0).abs() < 1e-6 && q[1] > q[0]);
        assert!(softmax(&[1.0], 0.0).is_err());
        assert!(softmax(&[f32::NAN], 1.0).is_err());
    }

    #[test]
    fn affinity_boosts_and_penalises() {
        let mut s = vec![0.5, 0.5];
        apply_affinity(
            &mut s,
            &[0, 1],
            &[true, false],
            DEFAULT_BOOST,
            DEFAULT_PENALTY,
        )
        .unwrap();
        assert!((s[0] - 0.575).abs() < 1e-6 && (s[1] - 0.35).abs() < 1e-6);
        let mut t = vec![0.5];
        apply_affinity(&mut t, &[0], &[], 2.0, 0.0).unwrap();
        assert_eq!(t, vec![0.5]);
        for bad in [-0.1, f32::NAN, f32::INFINITY] {
            assert!(apply_affinity(&mut t, &[0], &[true], bad, 0.7).is_err());
            assert!(apply_affinity(&mut t, &[0], &[true], 1.15, bad).is_err());
        }
    }

    #[test]
    fn a_boost_keeps_a_negative_in_domain_route_ahead() {
        // Issue 35: as products, -0.6 x 1.15 = -0.69 fell below -0.8 x 0.7 = -0.56.
        let mut s = vec![-0.6, -0.8];
        apply_affinity(&mut s, &[0, 1], &[true, false], 1.15, 0.7).unwrap();
        assert!(s[0] > s[1], "{s:?}");
        assert!((s[0] - -0.6 / 1.15).abs() < 1e-6 && (s[1] - -0.8 / 0.7).abs() < 1e-6);
        // -inf stays removed; a zero penalty leaves a negative score finite and last.
        assert_eq!(affinity_scale(f32::NEG_INFINITY, 0.0), f32::NEG_INFINITY);
        assert_eq!(affinity_scale(-0.5, 0.0), f32::MIN);
        assert_eq!(affinity_scale(0.5, 0.0), 0.0);
    }

    /// How many of `s` are above `s[i]` (strictly, or level with it too), `i` left out.
    fn above(s: &[f32], i: usize, or_level: bool) -> usize {
        (0..s.len())
            .filter(|&j| j != i && (s[j] > s[i] || (or_level && s[j] == s[i])))
            .count()
    }

    /// Scores of any sign (beyond [-1, 1]: a lexical bias adds to cosines), a few at -inf.
    fn any_scores() -> impl proptest::strategy::Strategy<Value = Vec<f32>> {
        use proptest::prelude::*;
        proptest::collection::vec(
            prop_oneof![8 => -3.0f32..3.0, 1 => Just(0.0f32), 1 => Just(f32::NEG_INFINITY)],
            1..24,
        )
    }

    proptest::proptest! {
        #[test]
        fn a_boost_never_lowers_a_rank_and_a_demotion_never_raises_one(
            s in any_scores(),
            dom in proptest::collection::vec(0u32..3, 24),
            active in proptest::collection::vec(proptest::bool::ANY, 3),
            boost in 1.0f32..4.0,
            penalty in 0.0f32..1.0,
        ) {
            let domains = &dom[..s.len()];
            let mut adj = s.clone();
            apply_affinity(&mut adj, domains, &active, boost, penalty).unwrap();
            let mult = affinity_multipliers(domains, &active, boost, penalty);
            for (i, &m) in mult.iter().enumerate() {
                if m >= 1.0 {
                    // Boosted (or untouched): no more routes strictly above it than before.
                    proptest::prop_assert!(above(&adj, i, false) <= above(&s, i, false),
                        "route {} rose from {:?} to {:?}", i, s, adj);
                }
                if m <= 1.0 {
                    // Demoted (or untouched): every route at or above it before still is.
                    proptest::prop_assert!(above(&adj, i, true) >= above(&s, i, true),
                        "route {} fell from {:?} to {:?}", i, s, adj);
                }
            }
        }

        #[test]
        fn the_scale_is_monotone_and_the_former_product_on_positive_scores(
            a in -3.0f32..3.0, b in -3.0f32..3.0, m in 0.0f32..4.0,
        ) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            proptest::prop_assert!(affinity_scale(lo, m) <= affinity_scale(hi, m));
            if m >= 1.0 {
                proptest::prop_assert!(affinity_scale(a, m) >= a);
            } else {
                proptest::prop_assert!(affinity_scale(a, m) <= a);
            }
            if a >= 0.0 {
                proptest::prop_assert_eq!(affinity_scale(a, m).to_bits(), (a * m).to_bits());
            }
        }
    }

    #[test]
    fn collision_rules() {
        let c = detect_collision(&[0.80, 0.75, 0.2], &[0, 1, 1], 0.08)
            .unwrap()
            .unwrap();
        assert_eq!((c.first, c.second), (0, 1));
        assert!(detect_collision(&[0.80, 0.75], &[0, 0], 0.08)
            .unwrap()
            .is_none());
        assert!(detect_collision(&[0.80, 0.70], &[0, 1], 0.08)
            .unwrap()
            .is_none());
        assert!(detect_collision(&[0.8], &[0], 0.08).unwrap().is_none());
    }
}
