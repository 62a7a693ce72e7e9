//! int8 kernels for compact storage: row quantization with its error, a
//! quantized query, and (in [`rows`]) the block kernel's dispatch, scoring many rows at
//! once (AVX-512 VNNI or AVX2 at run time, a portable loop otherwise; the x86 kernels are
//! in [`crate::kernels::int8_x86`]).
//!
//! Rows are stored as `x = μ + r` with `μ` the storage's centre (the mean row)
//! and `r ≈ r̂ = s·r8`; centring shrinks `r` when embeddings share a common
//! direction (e5: ‖μ‖ ≈ 0.9), and with it the error. The query is quantized finer
//! than the rows, in the layout of the kernel that reads it: two int8 levels
//! (`q̂ = s₁·a + s₂·b`) for VNNI, one i16 level (`q̂ = s·w`) for AVX2 and the
//! portable loop; either way its own error is negligible.
//!
//! Every estimate `μ·q + r̂·q̂` comes with a rigorous bound, rounding included:
//! `|x·q − est| ≤ ‖r − r̂‖·‖q‖ + ‖r̂‖·‖q − q̂‖ + rounding` (Cauchy–Schwarz on both
//! terms), so an exact re-rank only needs the rows whose interval can still
//! reach the answer.

use crate::kernels::simd::quantize_i8;

/// Per-row facts kept next to an int8 row.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowQuant {
    /// Dequantization scale (`x ≈ scale · x8`).
    pub scale: f32,
    /// Sum of the int8 codes (offset correction of the unsigned VNNI product).
    pub sum: i32,
    /// `‖x − scale·x8‖`, rounded up.
    pub err: f32,
    /// `‖scale·x8‖`, rounded up.
    pub norm_hat: f32,
}

/// Quantize `v` into `out` (symmetric, per-row scale) and measure the error.
pub fn quantize_row(v: &[f32], out: &mut [i8]) -> RowQuant {
    let scale = quantize_i8(v, out);
    let (mut e2, mut n2, mut sum) = (0f64, 0f64, 0i32);
    for (&x, &c) in v.iter().zip(out.iter()) {
        let xh = scale as f64 * c as f64;
        e2 += (x as f64 - xh) * (x as f64 - xh);
        n2 += xh * xh;
        sum += c as i32;
    }
    RowQuant {
        scale,
        sum,
        err: round_up(e2.sqrt()),
        norm_hat: round_up(n2.sqrt()),
    }
}

/// f64 → f32 never below the input (plus a relative margin for f32 arithmetic).
fn round_up(x: f64) -> f32 {
    ((x * (1.0 + 1e-6)) as f32).next_up()
}

/// Per-row facts of an int8 matrix, one column per fact (vectorisable loops).
#[derive(Clone, Debug, Default)]
pub struct QuantCols {
    /// Dequantization scale per row.
    pub scale: Vec<f32>,
    /// Code sum per row.
    pub sum: Vec<i32>,
    /// `‖x − x̂‖` per row.
    pub err: Vec<f32>,
    /// `‖x̂‖` per row.
    pub norm_hat: Vec<f32>,
    /// At least the largest `err` and `norm_hat` over the rows (raised by
    /// `push` and `set`, kept by `swap_remove`, exact after `refresh_max`).
    hi: (f32, f32),
}

impl QuantCols {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.scale.len()
    }

    /// True without rows.
    pub fn is_empty(&self) -> bool {
        self.scale.is_empty()
    }

    /// Bytes held.
    pub fn nbytes(&self) -> usize {
        self.len() * 16
    }

    /// Reserve room for `extra` rows.
    pub fn reserve(&mut self, extra: usize) {
        self.scale.reserve(extra);
        self.sum.reserve(extra);
        self.err.reserve(extra);
        self.norm_hat.reserve(extra);
    }

    /// Upper bounds of the rows' `(err, norm_hat)`: with them
    /// [`QueryI8::bound`] bounds the error of every row at once.
    pub fn max_err_norm(&self) -> (f32, f32) {
        self.hi
    }

    /// Make [`Self::max_err_norm`] exact again (after rows were removed or re-quantized).
    pub fn refresh_max(&mut self) {
        let hi = |v: &[f32]| v.iter().fold(0f32, |m, &x| m.max(x));
        self.hi = (hi(&self.err), hi(&self.norm_hat));
    }

    fn raise_max(&mut self, f: &RowQuant) {
        self.hi = (self.hi.0.max(f.err), self.hi.1.max(f.norm_hat));
    }

    /// Append one row's facts.
    pub fn push(&mut self, f: RowQuant) {
        self.raise_max(&f);
        self.scale.push(f.scale);
        self.sum.push(f.sum);
        self.err.push(f.err);
        self.norm_hat.push(f.norm_hat);
    }

    /// Facts of row `i`.
    pub fn get(&self, i: usize) -> RowQuant {
        RowQuant {
            scale: self.scale[i],
            sum: self.sum[i],
            err: self.err[i],
            norm_hat: self.norm_hat[i],
        }
    }

    /// Overwrite row `i`.
    pub fn set(&mut self, i: usize, f: RowQuant) {
        self.raise_max(&f);
        self.scale[i] = f.scale;
        self.sum[i] = f.sum;
        self.err[i] = f.err;
        self.norm_hat[i] = f.norm_hat;
    }

    /// Move the last row into row `i` and drop the last row.
    pub fn swap_remove(&mut self, i: usize) {
        self.scale.swap_remove(i);
        self.sum.swap_remove(i);
        self.err.swap_remove(i);
        self.norm_hat.swap_remove(i);
    }
}

/// How a [`QueryI8`]'s codes are laid out, after the kernel that reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryCodes {
    /// Two int8 levels stored as unsigned bytes (code + 128), read by AVX-512
    /// VNNI `vpdpbusd`; the row code sums undo the offset.
    Levels,
    /// One i16 level, read by AVX2 `vpmaddwd` and by the portable loop.
    Wide,
}

impl QueryCodes {
    /// The layout of the fastest kernel this CPU runs (and `ROUTECORE_SIMD` allows).
    pub fn best() -> Self {
        if has_vnni512() {
            QueryCodes::Levels
        } else {
            QueryCodes::Wide
        }
    }
}

/// A query quantized once for an int8 scan.
#[derive(Clone, Debug)]
pub struct QueryI8 {
    codes: QueryCodes,
    dim: usize,
    /// [`QueryCodes::Levels`]: both levels + 128, zero-padded to 64 bytes.
    a_u: Vec<u8>,
    b_u: Vec<u8>,
    /// [`QueryCodes::Wide`]: i16 codes, zero-padded to 16.
    wide: Vec<i16>,
    /// Level scales `s₁`, `s₂` (`Wide`: `s`, 0).
    scales: (f32, f32),
    /// `‖q‖`, rounded up.
    pub norm: f32,
    /// `‖q − q̂‖`, rounded up.
    pub err: f32,
    /// `μ·q` for the storage centre `μ` (0 without a centre).
    pub centre_dot: f32,
    /// `‖μ‖`, rounded up.
    pub centre_norm: f32,
}

/// Largest i16 code of a [`QueryCodes::Wide`] query of width `dim`: every
/// partial sum of `dim` products with int8 codes (|x| ≤ 127) fits an i32.
fn wide_max(dim: usize) -> f32 {
    let fit = i32::MAX as usize / (127 * dim.max(1));
    fit.min(i16::MAX as usize) as f32
}

impl QueryI8 {
    /// Quantize `q` for rows centred on `centre` (empty: no centre), in the
    /// layout of the fastest kernel on this CPU.
    pub fn new(q: &[f32], centre: &[f32]) -> Self {
        Self::with_codes(q, centre, QueryCodes::best())
    }

    /// Quantize `q` in a given layout (any layout runs on any CPU: the
    /// kernels fall back to the portable loop).
    pub fn with_codes(q: &[f32], centre: &[f32], codes: QueryCodes) -> Self {
        let dim = q.len();
        let (mut a_u, mut b_u, mut wide) = (Vec::new(), Vec::new(), Vec::new());
        let (scales, e2) = match codes {
            QueryCodes::Levels => {
                let mut a = vec![0i8; dim];
                let s1 = quantize_i8(q, &mut a);
                let rest: Vec<f32> = q.iter().zip(&a).map(|(&x, &c)| x - s1 * c as f32).collect();
                let mut b = vec![0i8; dim];
                let s2 = quantize_i8(&rest, &mut b);
                let mut e2 = 0f64;
                for ((&x, &ca), &cb) in q.iter().zip(&a).zip(&b) {
                    let d = x as f64 - s1 as f64 * ca as f64 - s2 as f64 * cb as f64;
                    e2 += d * d;
                }
                let pad = dim.div_ceil(64) * 64;
                a_u = a.iter().map(|&v| (v as i16 + 128) as u8).collect();
                b_u = b.iter().map(|&v| (v as i16 + 128) as u8).collect();
                a_u.resize(pad, 0);
                b_u.resize(pad, 0);
                ((s1, s2), e2)
            }
            QueryCodes::Wide => {
                let amax = q.iter().fold(0f32, |m, x| m.max(x.abs()));
                let top = wide_max(dim);
                let s = if amax > 0.0 { amax / top } else { 0.0 };
                let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
                wide = vec![0i16; dim.div_ceil(16) * 16];
                let mut e2 = 0f64;
                for (w, &x) in wide.iter_mut().zip(q) {
                    let y = x * inv;
                    *w = (y + 0.5f32.copysign(y)).clamp(-top, top) as i16;
                    let d = x as f64 - s as f64 * *w as f64;
                    e2 += d * d;
                }
                ((s, 0.0), e2)
            }
        };
        let norm2 = |v: &[f32]| v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
        let centre_dot = if centre.is_empty() {
            0.0
        } else {
            crate::kernels::simd::dot(centre, q)
        };
        QueryI8 {
            codes,
            dim,
            a_u,
            b_u,
            wide,
            scales,
            norm: round_up(norm2(q)),
            err: round_up(e2.sqrt()),
            centre_dot,
            centre_norm: round_up(norm2(centre)),
        }
    }

    /// The layout of the codes.
    pub fn codes(&self) -> QueryCodes {
        self.codes
    }

    /// Width of the query.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `q̂·r8` for one row of int8 codes, in plain integer arithmetic: the
    /// value every kernel returns for this row, bit for bit.
    pub fn dot_codes(&self, row: &[i8], row_sum: i32) -> f32 {
        let (s1, s2) = self.scales;
        match self.codes {
            QueryCodes::Levels => {
                let int = |u: &[u8]| -> i32 {
                    row.iter()
                        .zip(u)
                        .map(|(&x, &c)| x as i32 * c as i32)
                        .sum::<i32>()
                        - 128 * row_sum
                };
                s1 * int(&self.a_u) as f32 + s2 * int(&self.b_u) as f32
            }
            QueryCodes::Wide => {
                let int: i32 = row
                    .iter()
                    .zip(&self.wide)
                    .map(|(&x, &c)| x as i32 * c as i32)
                    .sum();
                s1 * int as f32
            }
        }
    }

    /// Estimated `x·q` from a kernel output (`q̂·r8`) and the row's scale.
    #[inline]
    pub fn estimate(&self, dot: f32, row_scale: f32) -> f32 {
        self.centre_dot + row_scale * dot
    }

    /// Coefficients `(a, c, k)` of the per-row bound `err·a + norm_hat·c + k`.
    ///
    /// Rounding is covered with `γ = (dim + 4)·ε`, the classic bound for a sum
    /// in any order: of `μ·q`, of `r̂·q̂`, and of the exact f32 dot the estimate is
    /// compared with. Everything is inflated by 1e-5 for the bound's own rounding.
    #[inline]
    pub fn bound_coeffs(&self) -> (f32, f32, f32) {
        const SLACK: f32 = 1.0 + 1e-5;
        let gamma = (self.dim as f32 + 4.0) * f32::EPSILON;
        (
            self.norm * (1.0 + gamma) * SLACK,
            (self.err + gamma * (2.0 * self.norm + self.err)) * SLACK,
            2.0 * gamma * self.centre_norm * self.norm * SLACK,
        )
    }

    /// Bound on `|x·q − estimate|` for a row with error `err` and norm `norm_hat`.
    #[inline]
    pub fn bound(&self, err: f32, norm_hat: f32) -> f32 {
        let (a, c, k) = self.bound_coeffs();
        err * a + norm_hat * c + k
    }
}

mod rows;
pub(crate) use rows::prefetch_distance;
pub use rows::{
    dot_i8_rows, dot_i8_rows_fallback, dot_i8_rows_many, dot_i8_rows_x4, has_vnni512, BLOCK_ROWS,
};
