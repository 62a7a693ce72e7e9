//! int8 kernels for compact storage: row quantization with its error, a
//! quantized query, and a block kernel scoring many rows at once
//! (AVX-512 VNNI at run time, the AVX2 kernel of [`crate::kernels::simd::dot_i8`] otherwise).
//!
//! Rows are stored as `x = μ + r` with `μ` the storage's centre (the mean row)
//! and `r ≈ r̂ = s·r8`; centring shrinks `r` when embeddings share a common
//! direction (e5: ‖μ‖ ≈ 0.9), and with it the error. The query is quantized in
//! two int8 levels (`q̂ = s₁·a + s₂·b`), so its own error is negligible.
//!
//! Every estimate `μ·q + r̂·q̂` comes with a rigorous bound, rounding included:
//! `|x·q − est| ≤ ‖r − r̂‖·‖q‖ + ‖r̂‖·‖q − q̂‖ + rounding` (Cauchy–Schwarz on both
//! terms), so an exact re-rank only needs the rows whose interval can still
//! reach the answer.

use crate::kernels::simd::{dot_i8, quantize_i8};

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

    /// Append one row's facts.
    pub fn push(&mut self, f: RowQuant) {
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

/// A query quantized once for an int8 scan (two int8 levels).
#[derive(Clone, Debug)]
pub struct QueryI8 {
    /// First-level codes (`q ≈ s₁·a`).
    pub a: Vec<i8>,
    /// Second-level codes of the remainder (`q − s₁·a ≈ s₂·b`).
    pub b: Vec<i8>,
    /// Codes + 128 as unsigned bytes (VNNI kernel), zero-padded to 64 bytes.
    a_u: Vec<u8>,
    b_u: Vec<u8>,
    /// Level scales `s₁`, `s₂`.
    pub scales: (f32, f32),
    /// `‖q‖`, rounded up.
    pub norm: f32,
    /// `‖q − q̂‖`, rounded up.
    pub err: f32,
    /// `μ·q` for the storage centre `μ` (0 without a centre).
    pub centre_dot: f32,
    /// `‖μ‖`, rounded up.
    pub centre_norm: f32,
}

impl QueryI8 {
    /// Quantize `q` for rows centred on `centre` (empty: no centre).
    pub fn new(q: &[f32], centre: &[f32]) -> Self {
        let mut a = vec![0i8; q.len()];
        let s1 = quantize_i8(q, &mut a);
        let rest: Vec<f32> = q.iter().zip(&a).map(|(&x, &c)| x - s1 * c as f32).collect();
        let mut b = vec![0i8; q.len()];
        let s2 = quantize_i8(&rest, &mut b);
        let e2: f64 = q
            .iter()
            .zip(a.iter().zip(&b))
            .map(|(&x, (&ca, &cb))| {
                let d = x as f64 - s1 as f64 * ca as f64 - s2 as f64 * cb as f64;
                d * d
            })
            .sum();
        let unsigned = |c: &[i8]| {
            let mut u: Vec<u8> = c.iter().map(|&v| (v as i16 + 128) as u8).collect();
            u.resize(c.len().div_ceil(64) * 64, 0);
            u
        };
        let norm2 = |v: &[f32]| v.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
        let centre_dot = if centre.is_empty() {
            0.0
        } else {
            crate::kernels::simd::dot(centre, q)
        };
        QueryI8 {
            a_u: unsigned(&a),
            b_u: unsigned(&b),
            a,
            b,
            scales: (s1, s2),
            norm: round_up(norm2(q)),
            err: round_up(e2.sqrt()),
            centre_dot,
            centre_norm: round_up(norm2(centre)),
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
        let gamma = (self.a.len() as f32 + 4.0) * f32::EPSILON;
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

/// True when the AVX-512 VNNI kernel runs on this CPU (and `ROUTECORE_SIMD` allows it).
#[inline]
pub fn has_vnni512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::kernels::simd::simd_cap() >= 2
            && std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Rows per call of [`dot_i8_rows`] in the scans (a stack buffer of outputs).
pub const BLOCK_ROWS: usize = 256;

/// `q̂·r8` for consecutive int8 rows (`rows` is `out.len() × dim`); `sums[i]`
/// is the code sum of row `i` (VNNI offset correction).
pub fn dot_i8_rows(rows: &[i8], dim: usize, q: &QueryI8, sums: &[i32], out: &mut [f32]) {
    let n = out.len();
    assert!(rows.len() >= n * dim && sums.len() >= n && q.a.len() == dim);
    #[cfg(target_arch = "x86_64")]
    if has_vnni512() {
        // SAFETY: features checked above; slice lengths asserted.
        unsafe { x86::rows_vnni(rows, dim, q, sums, out) };
        return;
    }
    dot_i8_rows_fallback(rows, dim, q, out);
}

/// [`dot_i8_rows`] without VNNI (AVX2 or portable), one row at a time.
pub fn dot_i8_rows_fallback(rows: &[i8], dim: usize, q: &QueryI8, out: &mut [f32]) {
    let (s1, s2) = q.scales;
    for (i, o) in out.iter_mut().enumerate() {
        let r = &rows[i * dim..(i + 1) * dim];
        *o = s1 * dot_i8(r, &q.a) as f32 + s2 * dot_i8(r, &q.b) as f32;
    }
}

/// Rows prefetched ahead by the VNNI kernel (`ROUTECORE_PREFETCH_ROWS`, default
/// 16, one 16-row pass). On 15,000 × 384 rows evicted from cache, 8 and 16 read
/// about 34 GB/s and 32 about 30 GB/s (`examples/int8_pass.rs`, BENCHMARKS.md §1).
fn prefetch_distance() -> usize {
    static D: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *D.get_or_init(|| {
        std::env::var("ROUTECORE_PREFETCH_ROWS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(16)
    })
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{prefetch_distance, QueryI8};
    use std::arch::x86_64::*;

    /// `dpbusd` multiplies the unsigned query levels (codes + 128) by the signed
    /// row, so `128 · sum(row)` is subtracted from each level's integer dot.
    ///
    /// Sixteen rows per pass: four sub-passes of four rows share each query load,
    /// and the 16 × 2 accumulators are reduced together by a transpose (about 3
    /// vector ops per row and level instead of a 9-op horizontal sum each), then
    /// corrected and scaled 16 lanes at a time.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn rows_vnni(rows: &[i8], dim: usize, q: &QueryI8, sums: &[i32], out: &mut [f32]) {
        let n = out.len();
        let (s1, s2) = q.scales;
        let (pa, pb) = (q.a_u.as_ptr(), q.b_u.as_ptr());
        let chunks = dim.div_ceil(64);
        let tail = dim % 64;
        let last_mask: __mmask64 = if tail == 0 {
            u64::MAX
        } else {
            (1u64 << tail) - 1
        };
        // Software prefetch ahead: hardware prefetchers stop at 4 KB pages, which
        // halves DRAM throughput when the rows are not cached (right after ONNX
        // Runtime ran, for instance).
        // Offsets, not pointers, so that no pointer leaves the slice.
        let ahead = prefetch_distance() * dim;
        let (vs1, vs2) = (_mm512_set1_ps(s1), _mm512_set1_ps(s2));
        let mut i = 0;
        while i + 16 <= n {
            let base = rows.as_ptr().add(i * dim);
            let stop = (i * dim + ahead + 16 * dim).min(n * dim);
            let mut off = i * dim + ahead;
            while off < stop {
                _mm_prefetch::<_MM_HINT_T0>(rows.as_ptr().add(off));
                off += 64;
            }
            // Sub-pass g takes rows g, g+4, g+8, g+12, so that the transpose
            // below leaves row j in lane j.
            let mut ta = [_mm512_setzero_si512(); 4];
            let mut tb = [_mm512_setzero_si512(); 4];
            for g in 0..4 {
                let (a, b) = four_rows(base.add(g * dim), 4 * dim, chunks, last_mask, pa, pb);
                ta[g] = reduce4(a);
                tb[g] = reduce4(b);
            }
            let off = _mm512_slli_epi32::<7>(_mm512_loadu_si512(sums.as_ptr().add(i) as *const _));
            let ia = _mm512_sub_epi32(transpose_sum(ta), off);
            let ib = _mm512_sub_epi32(transpose_sum(tb), off);
            // s1·A + s2·B with the same roundings as the scalar form.
            let v = _mm512_add_ps(
                _mm512_mul_ps(vs1, _mm512_cvtepi32_ps(ia)),
                _mm512_mul_ps(vs2, _mm512_cvtepi32_ps(ib)),
            );
            _mm512_storeu_ps(out.as_mut_ptr().add(i), v);
            i += 16;
        }
        while i < n {
            let base = rows.as_ptr().add(i * dim);
            let (mut a, mut b) = (_mm512_setzero_si512(), _mm512_setzero_si512());
            for c in 0..chunks {
                let o = c * 64;
                let m = if c + 1 == chunks { last_mask } else { u64::MAX };
                let x = _mm512_maskz_loadu_epi8(m, base.add(o));
                a = _mm512_dpbusd_epi32(a, _mm512_loadu_si512(pa.add(o) as *const _), x);
                b = _mm512_dpbusd_epi32(b, _mm512_loadu_si512(pb.add(o) as *const _), x);
            }
            let off = 128 * sums[i];
            out[i] = s1 * (_mm512_reduce_add_epi32(a) - off) as f32
                + s2 * (_mm512_reduce_add_epi32(b) - off) as f32;
            i += 1;
        }
    }

    /// Both levels' accumulators for the four rows at `base + k·stride`.
    #[inline(always)]
    unsafe fn four_rows(
        base: *const i8,
        stride: usize,
        chunks: usize,
        last_mask: __mmask64,
        pa: *const u8,
        pb: *const u8,
    ) -> ([__m512i; 4], [__m512i; 4]) {
        let z = _mm512_setzero_si512();
        let (mut a, mut b) = ([z; 4], [z; 4]);
        for c in 0..chunks {
            let o = c * 64;
            let m = if c + 1 == chunks { last_mask } else { u64::MAX };
            let qa = _mm512_loadu_si512(pa.add(o) as *const _);
            let qb = _mm512_loadu_si512(pb.add(o) as *const _);
            for k in 0..4 {
                let x = _mm512_maskz_loadu_epi8(m, base.add(k * stride + o));
                a[k] = _mm512_dpbusd_epi32(a[k], qa, x);
                b[k] = _mm512_dpbusd_epi32(b[k], qb, x);
            }
        }
        (a, b)
    }

    /// Four 16-lane vectors → one whose 128-bit block `k` holds four partial
    /// sums of vector `k`.
    #[inline(always)]
    unsafe fn reduce4(v: [__m512i; 4]) -> __m512i {
        let s0 = _mm512_add_epi32(
            _mm512_shuffle_i32x4::<0x44>(v[0], v[1]),
            _mm512_shuffle_i32x4::<0xEE>(v[0], v[1]),
        );
        let s1 = _mm512_add_epi32(
            _mm512_shuffle_i32x4::<0x44>(v[2], v[3]),
            _mm512_shuffle_i32x4::<0xEE>(v[2], v[3]),
        );
        _mm512_add_epi32(
            _mm512_shuffle_i32x4::<0x88>(s0, s1),
            _mm512_shuffle_i32x4::<0xDD>(s0, s1),
        )
    }

    /// Four [`reduce4`] outputs → lane `4k + g` = the full sum of block `k` of `t[g]`.
    #[inline(always)]
    unsafe fn transpose_sum(t: [__m512i; 4]) -> __m512i {
        let w0 = _mm512_add_epi32(
            _mm512_unpacklo_epi32(t[0], t[1]),
            _mm512_unpackhi_epi32(t[0], t[1]),
        );
        let w1 = _mm512_add_epi32(
            _mm512_unpacklo_epi32(t[2], t[3]),
            _mm512_unpackhi_epi32(t[2], t[3]),
        );
        _mm512_add_epi32(_mm512_unpacklo_epi64(w0, w1), _mm512_unpackhi_epi64(w0, w1))
    }
}
