//! Pooling of graph outputs (CLS, masked mean, or already pooled) and normalisation.

use super::config::{ModelConfig, Pooling};
use crate::error::{Error, Result};
use crate::kernels::simd::l2_normalize;

/// Pool the graph output `data` (shape `shape`) into `b` vectors and normalise
/// them when the config says so; `mask` is the `b × s` attention mask.
#[allow(clippy::too_many_arguments)]
pub(super) fn pool(
    config: &ModelConfig,
    output: &str,
    shape: &[i64],
    data: &[f32],
    mask: &[i64],
    b: usize,
    s: usize,
) -> Result<Vec<f32>> {
    let d = config.dim;
    let bad = |why: String| Error::Model(format!("output {:?} shape {shape:?}: {why}", output));
    let mut out = vec![0f32; b * d];
    match (config.pooling, shape.len()) {
        (Pooling::None, 2) => {
            if shape != [b as i64, d as i64] {
                return Err(bad(format!("expected [{b}, {d}]")));
            }
            out.copy_from_slice(data);
        }
        (Pooling::Mean | Pooling::Cls, 3) => {
            if shape != [b as i64, s as i64, d as i64] {
                return Err(bad(format!("expected [{b}, {s}, {d}]")));
            }
            for r in 0..b {
                let o = &mut out[r * d..(r + 1) * d];
                let m = &mask[r * s..(r + 1) * s];
                if config.pooling == Pooling::Cls {
                    let first = m.iter().position(|&x| x == 1).unwrap_or(0);
                    o.copy_from_slice(&data[(r * s + first) * d..(r * s + first + 1) * d]);
                    continue;
                }
                let mut acc = vec![0f64; d];
                let mut cnt = 0f64;
                for (p, _) in m.iter().enumerate().filter(|(_, &x)| x == 1) {
                    let h = &data[(r * s + p) * d..(r * s + p + 1) * d];
                    acc.iter_mut().zip(h).for_each(|(a, &x)| *a += x as f64);
                    cnt += 1.0;
                }
                o.iter_mut()
                    .zip(&acc)
                    .for_each(|(x, a)| *x = (a / cnt.max(1.0)) as f32);
            }
        }
        (p, r) => return Err(bad(format!("rank {r} does not fit pooling {p:?}"))),
    }
    if out.iter().any(|x| !x.is_finite()) {
        return Err(Error::Model("model produced NaN or inf".into()));
    }
    if config.normalize {
        out.chunks_exact_mut(d).for_each(l2_normalize);
    }
    Ok(out)
}
