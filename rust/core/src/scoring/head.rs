//! The exemplar head's forward pass: a linear softmax over a route table's routes and an
//! out-of-scope class, read in the table's route order.
//!
//! The head is trained in Python (`routecore.calibrate.linear_head`); serving it is a
//! product of `classes × dim` and a softmax per query, which in NumPy cost about 100 µs of
//! small-array calls (and, on some BLAS builds, a thread wake-up) for 150 routes at d = 384.

use crate::error::{Error, Result};
use crate::kernels::simd::dot_rows;

/// Floor on a probability before its logarithm, when gains move the head's probabilities.
const PROB_FLOOR: f64 = 1e-30;

/// A trained linear head, `p = softmax(W^T q + b)`, with the column each route of a table
/// reads and the out-of-scope class's column.
#[derive(Clone, Debug)]
pub struct RouteHead {
    dim: usize,
    /// `classes × dim`, one row per class (`W` transposed).
    rows: Vec<f32>,
    bias: Vec<f32>,
    /// Per route of the table: its class, or `None` when the head has no such class (its
    /// probability is then 0).
    route_cols: Vec<Option<usize>>,
    oos_col: Option<usize>,
}

/// What the head says of one query, in the table's route order.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadReading {
    /// Route probabilities, renormalised over the routes (the out-of-scope class left out),
    /// then moved by the gains when given; uniform when the routes hold no mass.
    pub probs: Vec<f32>,
    /// The best route's probability under the full softmax (out-of-scope class included).
    pub best: f64,
    /// The out-of-scope class's probability (0 when the head has none).
    pub out_of_scope: f64,
}

/// Softmax in f64; uniform when every entry is `-inf` (as [`super::softmax`]).
fn softmax_f64(z: &[f64]) -> Vec<f64> {
    let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return vec![1.0 / z.len().max(1) as f64; z.len()];
    }
    let e: Vec<f64> = z.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}

fn column(c: i64, classes: usize, what: &str) -> Result<Option<usize>> {
    match usize::try_from(c) {
        Ok(i) if i < classes => Ok(Some(i)),
        Ok(i) if i == classes => Ok(None),
        _ => Err(Error::InvalidArgument(format!(
            "{what} column {c} is outside the head's {classes} classes (use {classes} for none)"
        ))),
    }
}

impl RouteHead {
    /// A head from its weights `dim × classes` (row-major, as NumPy's `W`), its bias
    /// (`classes`), each route's class (`route_cols`) and the out-of-scope class's column
    /// (`oos_col`); a column equal to `classes` means the head lacks that class.
    ///
    /// Errors: shapes that disagree, a column past `classes`, a weight that is not finite.
    pub fn new(
        weights: &[f32],
        bias: &[f32],
        dim: usize,
        route_cols: &[i64],
        oos_col: i64,
    ) -> Result<Self> {
        let classes = bias.len();
        if dim == 0 || classes == 0 || weights.len() != dim * classes {
            return Err(Error::InvalidArgument(format!(
                "head weights: expected {dim} x {classes} values, got {}",
                weights.len()
            )));
        }
        if let Some(at) = weights.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "head weight",
                row: at / classes,
            });
        }
        if let Some(at) = bias.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "head bias",
                row: at,
            });
        }
        let mut rows = vec![0.0f32; classes * dim];
        for (i, w) in weights.chunks_exact(classes).enumerate() {
            for (c, &v) in w.iter().enumerate() {
                rows[c * dim + i] = v;
            }
        }
        let route_cols = route_cols
            .iter()
            .map(|&c| column(c, classes, "route"))
            .collect::<Result<Vec<_>>>()?;
        let oos_col = column(oos_col, classes, "out-of-scope")?;
        Ok(Self {
            dim,
            rows,
            bias: bias.to_vec(),
            route_cols,
            oos_col,
        })
    }

    /// The query width the head reads.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of routes it reads (the table's).
    pub fn routes(&self) -> usize {
        self.route_cols.len()
    }

    /// The full softmax over the head's classes, in f64.
    pub fn probabilities(&self, q: &[f32]) -> Result<Vec<f64>> {
        if q.len() != self.dim {
            return Err(Error::DimensionMismatch {
                expected: self.dim,
                got: q.len(),
            });
        }
        if q.iter().any(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                what: "query",
                row: 0,
            });
        }
        let mut z = vec![0.0f32; self.bias.len()];
        dot_rows(&self.rows, q, &mut z);
        let z: Vec<f64> = z
            .iter()
            .zip(&self.bias)
            .map(|(a, b)| (a + b) as f64)
            .collect();
        Ok(softmax_f64(&z))
    }

    /// The head's reading of `q` for the table: see [`HeadReading`]. `gain` (one per route,
    /// the score a route gained before the decision: entity and context boosts) moves the
    /// route probabilities as `softmax(ln p + gain / temperature)` when any is non-zero.
    ///
    /// A gain of `-inf` leaves its route out (probability 0; all of them: uniform).
    ///
    /// Errors: `q` of another width or not finite, `gain` of another length, NaN or `+inf`,
    /// a temperature that is not finite and > 0.
    pub fn read(&self, q: &[f32], gain: Option<&[f32]>, temperature: f64) -> Result<HeadReading> {
        let p = self.probabilities(q)?;
        let at = |c: Option<usize>| c.map_or(0.0, |i| p[i]);
        let mut probs: Vec<f64> = self.route_cols.iter().map(|&c| at(c)).collect();
        let best = probs.iter().cloned().fold(0.0f64, f64::max);
        let out_of_scope = at(self.oos_col);
        let total: f64 = probs.iter().sum();
        let n = probs.len().max(1) as f64;
        for v in probs.iter_mut() {
            *v = if total > 0.0 { *v / total } else { 1.0 / n };
        }
        if let Some(g) = gain {
            if g.len() != probs.len() {
                return Err(Error::InvalidArgument(format!(
                    "head gain: {} values for {} routes",
                    g.len(),
                    probs.len()
                )));
            }
            if g.iter().any(|v| v.is_nan() || *v == f32::INFINITY) {
                return Err(Error::NonFinite {
                    what: "head gain",
                    row: 0,
                });
            }
            if g.iter().any(|&v| v != 0.0) {
                if !(temperature > 0.0 && temperature.is_finite()) {
                    return Err(Error::InvalidArgument(format!(
                        "temperature must be > 0, got {temperature}"
                    )));
                }
                let logits: Vec<f64> = probs
                    .iter()
                    .zip(g)
                    .map(|(&v, &d)| v.max(PROB_FLOOR).ln() + d as f64 / temperature)
                    .collect();
                probs = softmax_f64(&logits);
            }
        }
        Ok(HeadReading {
            probs: probs.into_iter().map(|v| v as f32).collect(),
            best,
            out_of_scope,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> RouteHead {
        // dim 2, classes 3 (a, b, oos); routes in table order: b, a, missing.
        let w = [1.0, 0.0, 0.5, 0.0, 1.0, 0.5];
        RouteHead::new(&w, &[0.0, 0.0, 0.1], 2, &[1, 0, 3], 2).unwrap()
    }

    #[test]
    fn reads_in_table_order() {
        let h = head();
        let p = h.probabilities(&[1.0, 0.0]).unwrap();
        let r = h.read(&[1.0, 0.0], None, 1.0).unwrap();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((r.best - p[0]).abs() < 1e-12);
        assert!((r.out_of_scope - p[2]).abs() < 1e-12);
        let s = p[0] + p[1];
        assert!((r.probs[0] as f64 - p[1] / s).abs() < 1e-6);
        assert!((r.probs[1] as f64 - p[0] / s).abs() < 1e-6);
        assert_eq!(r.probs[2], 0.0);
    }

    #[test]
    fn gain_moves_log_probabilities() {
        let h = head();
        let base = h.read(&[1.0, 0.0], None, 1.0).unwrap();
        let zero = h.read(&[1.0, 0.0], Some(&[0.0, 0.0, 0.0]), 1.0).unwrap();
        assert_eq!(base, zero);
        let moved = h.read(&[1.0, 0.0], Some(&[0.2, 0.0, 0.0]), 0.1).unwrap();
        let want = (base.probs[0] as f64).ln() - (base.probs[1] as f64).ln() + 2.0;
        let got = (moved.probs[0] as f64).ln() - (moved.probs[1] as f64).ln();
        assert!((want - got).abs() < 1e-4);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(RouteHead::new(&[1.0; 5], &[0.0; 3], 2, &[0], 2).is_err());
        assert!(RouteHead::new(&[1.0; 6], &[0.0; 3], 2, &[4], 2).is_err());
        assert!(RouteHead::new(&[f32::NAN; 6], &[0.0; 3], 2, &[0], 2).is_err());
        let h = head();
        assert!(h.read(&[1.0], None, 1.0).is_err());
        assert!(h.read(&[f32::NAN, 0.0], None, 1.0).is_err());
        assert!(h.read(&[1.0, 0.0], Some(&[1.0]), 1.0).is_err());
        assert!(h.read(&[1.0, 0.0], Some(&[1.0, 0.0, 0.0]), 0.0).is_err());
        assert!(h
            .read(&[1.0, 0.0], Some(&[f32::INFINITY, 0.0, 0.0]), 1.0)
            .is_err());
    }

    #[test]
    fn minus_infinity_leaves_a_route_out() {
        let h = head();
        let inf = f32::NEG_INFINITY;
        let r = h.read(&[1.0, 0.0], Some(&[inf, 0.0, 0.0]), 0.05).unwrap();
        assert_eq!(r.probs[0], 0.0);
        assert!((r.probs[1] - 1.0).abs() < 1e-6);
        let all = h.read(&[1.0, 0.0], Some(&[inf, inf, inf]), 0.05).unwrap();
        assert!(all.probs.iter().all(|&v| (v - 1.0 / 3.0).abs() < 1e-6));
    }
}
