//! One full native scoring step for routing: exemplar scores → per-route
//! aggregation → domain affinity → softmax → top-1/top-2 collision.

use crate::error::{Error, Result};
use crate::index::FlatIndex;
use crate::scoring::{
    aggregate, apply_affinity, detect_collision, softmax, Aggregation, Collision,
};
use crate::topk::{top_k, Hit};

/// Parameters of [`score_routes`].
#[derive(Clone, Debug)]
pub struct StepParams {
    /// Exemplar-to-route aggregation.
    pub aggregation: Aggregation,
    /// Softmax temperature (> 0).
    pub temperature: f32,
    /// Active domain names (affinity applies only when non-empty).
    pub active_domains: Vec<String>,
    /// Multiplier for routes in an active domain.
    pub boost: f32,
    /// Multiplier for the other routes.
    pub penalty: f32,
    /// Collision gap threshold.
    pub collision_gap: f32,
    /// How many best exemplars to report.
    pub top_exemplars: usize,
}

/// Output of [`score_routes`]; per-route vectors are indexed by label code.
#[derive(Clone, Debug)]
pub struct StepResult {
    /// Aggregated cosine per route (-inf for codes without exemplars).
    pub raw: Vec<f32>,
    /// `raw` after domain affinity.
    pub adjusted: Vec<f32>,
    /// Softmax of `adjusted / temperature`.
    pub probs: Vec<f32>,
    /// Domain code of each route (that of its exemplars).
    pub route_domains: Vec<u32>,
    /// Best exemplars overall (row positions and scores).
    pub top: Vec<Hit>,
    /// Cross-domain top-1/top-2 pair closer than the gap, if any.
    pub collision: Option<Collision>,
}

/// Score every route of `index` (labels are routes) for one query.
pub fn score_routes(index: &FlatIndex, query: &[f32], p: &StepParams) -> Result<StepResult> {
    let scores = index.score_all(query)?;
    let n_routes = index.label_names().len();
    let raw = aggregate(&scores, index.label_codes(), n_routes, p.aggregation)?;
    let mut route_domains = vec![0u32; n_routes];
    for (&l, &d) in index.label_codes().iter().zip(index.domain_codes()) {
        route_domains[l as usize] = d;
    }
    let mut adjusted = raw.clone();
    if !p.active_domains.is_empty() {
        let mut active = vec![false; index.domain_names().len()];
        for name in &p.active_domains {
            if let Some(c) = index.domain_code(name) {
                active[c as usize] = true;
            }
        }
        if !active.iter().any(|&a| a) {
            // No route lives in the active domains: every route is cross-domain.
            adjusted.iter_mut().for_each(|s| *s *= p.penalty);
        } else {
            apply_affinity(&mut adjusted, &route_domains, &active, p.boost, p.penalty)?;
        }
    }
    let probs = softmax(&adjusted, p.temperature)?;
    let collision = detect_collision(&adjusted, &route_domains, p.collision_gap)?;
    let k = p.top_exemplars.min(scores.len());
    let top = if k == 0 {
        Vec::new()
    } else {
        top_k(&scores, k)
    };
    if adjusted.iter().all(|s| *s == f32::NEG_INFINITY) {
        return Err(Error::EmptyIndex);
    }
    Ok(StepResult {
        raw,
        adjusted,
        probs,
        route_domains,
        top,
        collision,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StorageKind;

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
            aggregation: Aggregation::Max,
            temperature: 0.1,
            active_domains: vec![],
            boost: 1.15,
            penalty: 0.7,
            collision_gap: 0.08,
            top_exemplars: 2,
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
