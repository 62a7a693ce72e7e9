//! Dot-product kernels: AVX-512F ([`crate::kernels::simd_avx512`]) or AVX2+FMA
//! (and F16C) chosen at run time, portable fallbacks.
//!
//! Every public function here dispatches on the CPU once per call through
//! `is_x86_feature_detected!`, which reads a cached atomic.
//!
//! `ROUTECORE_SIMD=portable` (or `avx2`) caps the kernels used, whatever the CPU
//! has, so one machine can test every path a user's CPU may take.

use std::sync::OnceLock;

use half::f16;

/// The highest kernel family allowed by `ROUTECORE_SIMD` (read once):
/// 0 = portable, 1 = AVX2 (+FMA, F16C), 2 = also AVX-512 (F for f32 and f16,
/// VNNI for int8; the default).
pub fn simd_cap() -> u8 {
    static CAP: OnceLock<u8> = OnceLock::new();
    *CAP.get_or_init(|| match std::env::var("ROUTECORE_SIMD").as_deref() {
        Ok("portable") => 0,
        Ok("avx2") => 1,
        _ => 2,
    })
}

/// True when the AVX2+FMA kernels can run on this CPU (and are allowed).
#[inline]
pub fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        simd_cap() >= 1
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// True when the AVX-512F f32 kernels can run on this CPU (and are allowed).
#[inline]
pub fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        simd_cap() >= 2 && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[inline]
fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx2_fma() && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Ask the CPU to start loading `v` into cache (a hint; no-op off x86-64).
#[inline]
pub fn prefetch<T>(v: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let (p, bytes) = (v.as_ptr() as *const i8, std::mem::size_of_val(v));
        for off in (0..bytes).step_by(64) {
            // SAFETY: prefetch never faults and `off` stays inside `v`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(off)) };
        }
    }
}

/// Portable dot product (8 independent accumulators so the compiler can vectorise).
pub fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0f32; 8];
    let chunks = a.len() / 8;
    for c in 0..chunks {
        for l in 0..8 {
            acc[l] += a[c * 8 + l] * b[c * 8 + l];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for i in chunks * 8..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// Dot product of two equal-length f32 slices.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() {
        // SAFETY: AVX-512F present.
        return unsafe { avx512::dot(a, b) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU supports AVX2 and FMA (checked above).
        return unsafe { x86::dot_avx2(a, b) };
    }
    dot_portable(a, b)
}

/// Cosine similarity; 0 when either vector has zero norm.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let na = dot(a, a).sqrt();
    let nb = dot(b, b).sqrt();
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot(a, b) / (na * nb)
}

/// Scale `v` to unit L2 norm in place. A zero vector is left as is.
pub fn l2_normalize(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > 0.0 && n.is_finite() {
        let inv = 1.0 / n;
        v.iter_mut().for_each(|x| *x *= inv);
    }
}

/// Dot products of one f32 row with four queries at once (the row is read once).
#[inline]
pub fn dot4(row: &[f32], q: [&[f32]; 4]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() && q.iter().all(|v| v.len() >= row.len()) {
        // SAFETY: AVX-512F present; lengths checked.
        return unsafe { avx512::dot4(row, q) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2+FMA present.
        return unsafe { x86::dot4_avx2(row, q) };
    }
    [
        dot_portable(row, q[0]),
        dot_portable(row, q[1]),
        dot_portable(row, q[2]),
        dot_portable(row, q[3]),
    ]
}

/// `out[i] = rows[i]·q` for consecutive rows (`rows` is `out.len() × q.len()`),
/// one dispatch per block. One row at a time, so memory is read as a single
/// stream: from DRAM that is 15 GB/s against 12–13 GB/s for four rows per pass
/// (four interleaved streams) on an AVX2 EPYC, 100,000 and 1,000,000 × 384,
/// and the same within noise from cache; software prefetch 4 or 12 rows ahead
/// made both slower (2026-11-23, a throwaway example in one process).
pub fn dot_rows(rows: &[f32], q: &[f32], out: &mut [f32]) {
    let d = q.len();
    assert!(rows.len() >= out.len() * d);
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() {
        // SAFETY: AVX-512F present; lengths asserted.
        return unsafe { avx512::dot_rows(rows, q, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2+FMA present; lengths asserted.
        return unsafe { x86::dot_rows_avx2(rows, q, out) };
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o = dot_portable(&rows[i * d..(i + 1) * d], q);
    }
}

/// [`dot_rows`] for four equal-length segments of rows at once (`segs[r]` is
/// `outs[r].len() × q.len()`), row `j` of every segment per pass: each query
/// load serves four rows, and four segments far apart are four memory streams,
/// which one core reads from DRAM faster than one (100,000 × 384 rows on an
/// AVX2 EPYC, interleaved A/B, 2026-11-23: 17.6 against 10.4 GB/s).
pub fn dot_rows_x4(segs: [&[f32]; 4], q: &[f32], outs: [&mut [f32]; 4]) {
    let (d, m) = (q.len(), outs[0].len());
    assert!(outs.iter().all(|o| o.len() == m) && segs.iter().all(|g| g.len() >= m * d));
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() {
        // SAFETY: AVX-512F present; lengths asserted.
        return unsafe { avx512::dot_rows_x4(segs, q, outs) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2+FMA present; lengths asserted.
        return unsafe { x86::dot_rows_x4_avx2(segs, q, outs) };
    }
    for (g, o) in segs.into_iter().zip(outs) {
        dot_rows(g, q, o);
    }
}

/// A 4-row × 3-query tile of dot products (12 accumulators in registers, so
/// each loaded vector feeds three or four FMAs).
#[inline]
pub fn dot_tile(rows: [&[f32]; 4], qs: [&[f32]; 3]) -> [[f32; 3]; 4] {
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() {
        let n = rows[0].len();
        assert!(rows.iter().all(|r| r.len() == n) && qs.iter().all(|q| q.len() == n));
        // SAFETY: AVX-512F present; lengths asserted.
        return unsafe { avx512::dot_tile(rows, qs) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2+FMA present.
        return unsafe { x86::dot_tile_avx2(rows, qs) };
    }
    let mut out = [[0f32; 3]; 4];
    for (r, row) in rows.iter().enumerate() {
        for (j, q) in qs.iter().enumerate() {
            out[r][j] = dot_portable(row, q);
        }
    }
    out
}

/// Dot product of an f16 row with an f32 query.
#[inline]
pub fn dot_f16(row: &[f16], q: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx512f() {
        // SAFETY: AVX-512F present (its `vcvtph2ps` needs no F16C flag).
        return unsafe { avx512::dot_f16(row, q) };
    }
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: AVX2, FMA and F16C present.
        return unsafe { x86::dot_f16_avx2(row, q) };
    }
    row.iter().zip(q).map(|(a, b)| a.to_f32() * b).sum()
}

/// Integer dot product of two i8 vectors whose values lie in [-127, 127].
#[inline]
pub fn dot_i8(row: &[i8], q: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2 present.
        return unsafe { x86::dot_i8_avx2(row, q) };
    }
    row.iter().zip(q).map(|(&a, &b)| a as i32 * b as i32).sum()
}

/// Quantize to symmetric int8 in [-127, 127]; returns the scale (x ≈ q * scale).
pub fn quantize_i8(v: &[f32], out: &mut [i8]) -> f32 {
    let amax = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if amax == 0.0 {
        out.iter_mut().for_each(|o| *o = 0);
        return 0.0;
    }
    let scale = amax / 127.0;
    let inv = 1.0 / scale;
    for (o, x) in out.iter_mut().zip(v) {
        // Round half away from zero without a libm call (`as` truncates toward zero).
        let y = x * inv;
        *o = (y + 0.5f32.copysign(y)).clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// Row `j` (width `d`) of each of four segments, for the four-segment kernels.
/// Plain indexing, not `array::map`: inside the AVX2 kernel the closure was not
/// inlined (9 % of a 10,000 × 384 scan in `perf`).
///
/// # Safety
/// Every segment holds at least `(j + 1) × d` floats.
#[inline(always)]
pub(crate) unsafe fn row_of_each(segs: [&[f32]; 4], j: usize, d: usize) -> [&[f32]; 4] {
    let (a, b) = (j * d, (j + 1) * d);
    [
        segs[0].get_unchecked(a..b),
        segs[1].get_unchecked(a..b),
        segs[2].get_unchecked(a..b),
        segs[3].get_unchecked(a..b),
    ]
}

#[cfg(target_arch = "x86_64")]
use crate::kernels::simd_avx512 as avx512;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use half::f16;
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps(v, 1);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        // Eight accumulators: with four, the FMA latency (4 cycles on Zen 4)
        // capped the rate at 32 bytes a cycle, below what L3 delivers
        // (1,000 × 1024 rows on Zen 4: 49.5 µs with four, 45.3 with eight).
        let mut acc = [_mm256_setzero_ps(); 8];
        let mut i = 0;
        while i + 64 <= n {
            for (j, acc_j) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_ps(pa.add(i + 8 * j));
                let y = _mm256_loadu_ps(pb.add(i + 8 * j));
                *acc_j = _mm256_fmadd_ps(x, y, *acc_j);
            }
            i += 64;
        }
        let mut j = 0;
        while i + 8 <= n {
            acc[j] = _mm256_fmadd_ps(
                _mm256_loadu_ps(pa.add(i)),
                _mm256_loadu_ps(pb.add(i)),
                acc[j],
            );
            i += 8;
            j += 1;
        }
        let s0 = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let s1 = _mm256_add_ps(_mm256_add_ps(acc[4], acc[5]), _mm256_add_ps(acc[6], acc[7]));
        let mut r = hsum(_mm256_add_ps(s0, s1));
        while i < n {
            r += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        r
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot4_avx2(row: &[f32], q: [&[f32]; 4]) -> [f32; 4] {
        let n = row.len();
        let pr = row.as_ptr();
        let pq = [q[0].as_ptr(), q[1].as_ptr(), q[2].as_ptr(), q[3].as_ptr()];
        let mut a0 = [_mm256_setzero_ps(); 4];
        let mut a1 = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 16 <= n {
            let r0 = _mm256_loadu_ps(pr.add(i));
            let r1 = _mm256_loadu_ps(pr.add(i + 8));
            for j in 0..4 {
                a0[j] = _mm256_fmadd_ps(r0, _mm256_loadu_ps(pq[j].add(i)), a0[j]);
                a1[j] = _mm256_fmadd_ps(r1, _mm256_loadu_ps(pq[j].add(i + 8)), a1[j]);
            }
            i += 16;
        }
        let mut out = [0f32; 4];
        for j in 0..4 {
            out[j] = hsum(_mm256_add_ps(a0[j], a1[j]));
            for t in i..n {
                out[j] += *pr.add(t) * *pq[j].add(t);
            }
        }
        out
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_rows_avx2(rows: &[f32], q: &[f32], out: &mut [f32]) {
        let d = q.len();
        for (i, o) in out.iter_mut().enumerate() {
            *o = dot_avx2(rows.get_unchecked(i * d..(i + 1) * d), q);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_rows_x4_avx2(segs: [&[f32]; 4], q: &[f32], outs: [&mut [f32]; 4]) {
        let d = q.len();
        let [o0, o1, o2, o3] = outs;
        for j in 0..o0.len() {
            [o0[j], o1[j], o2[j], o3[j]] = dot4_avx2(q, super::row_of_each(segs, j, d));
        }
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_tile_avx2(rows: [&[f32]; 4], qs: [&[f32]; 3]) -> [[f32; 3]; 4] {
        let n = rows[0].len();
        let pr = [
            rows[0].as_ptr(),
            rows[1].as_ptr(),
            rows[2].as_ptr(),
            rows[3].as_ptr(),
        ];
        let pq = [qs[0].as_ptr(), qs[1].as_ptr(), qs[2].as_ptr()];
        let mut acc = [[_mm256_setzero_ps(); 3]; 4];
        let mut i = 0;
        while i + 8 <= n {
            let q0 = _mm256_loadu_ps(pq[0].add(i));
            let q1 = _mm256_loadu_ps(pq[1].add(i));
            let q2 = _mm256_loadu_ps(pq[2].add(i));
            for r in 0..4 {
                let x = _mm256_loadu_ps(pr[r].add(i));
                acc[r][0] = _mm256_fmadd_ps(x, q0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(x, q1, acc[r][1]);
                acc[r][2] = _mm256_fmadd_ps(x, q2, acc[r][2]);
            }
            i += 8;
        }
        let mut out = [[0f32; 3]; 4];
        for r in 0..4 {
            for j in 0..3 {
                out[r][j] = hsum(acc[r][j]);
                for t in i..n {
                    out[r][j] += *pr[r].add(t) * *pq[j].add(t);
                }
            }
        }
        out
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot_f16_avx2(row: &[f16], q: &[f32]) -> f32 {
        let n = row.len().min(q.len());
        let pr = row.as_ptr() as *const u16;
        let pq = q.as_ptr();
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (j, acc_j) in acc.iter_mut().enumerate() {
                let h = _mm_loadu_si128(pr.add(i + 8 * j) as *const __m128i);
                let x = _mm256_cvtph_ps(h);
                *acc_j = _mm256_fmadd_ps(x, _mm256_loadu_ps(pq.add(i + 8 * j)), *acc_j);
            }
            i += 32;
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut r = hsum(s);
        while i < n {
            r += row[i].to_f32() * q[i];
            i += 1;
        }
        r
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let ones = _mm256_set1_epi16(1);
        let mut acc0 = _mm256_setzero_si256();
        let mut acc1 = _mm256_setzero_si256();
        let mut i = 0;
        // |a| * sign(b, a): unsigned x signed pairs summed to i16 (no overflow for |x| <= 127).
        while i + 64 <= n {
            let x0 = _mm256_loadu_si256(pa.add(i) as *const __m256i);
            let y0 = _mm256_loadu_si256(pb.add(i) as *const __m256i);
            let x1 = _mm256_loadu_si256(pa.add(i + 32) as *const __m256i);
            let y1 = _mm256_loadu_si256(pb.add(i + 32) as *const __m256i);
            let p0 = _mm256_maddubs_epi16(_mm256_sign_epi8(x0, x0), _mm256_sign_epi8(y0, x0));
            let p1 = _mm256_maddubs_epi16(_mm256_sign_epi8(x1, x1), _mm256_sign_epi8(y1, x1));
            acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(p0, ones));
            acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(p1, ones));
            i += 64;
        }
        while i + 32 <= n {
            let x0 = _mm256_loadu_si256(pa.add(i) as *const __m256i);
            let y0 = _mm256_loadu_si256(pb.add(i) as *const __m256i);
            let p0 = _mm256_maddubs_epi16(_mm256_sign_epi8(x0, x0), _mm256_sign_epi8(y0, x0));
            acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(p0, ones));
            i += 32;
        }
        let acc = _mm256_add_epi32(acc0, acc1);
        let lo = _mm256_castsi256_si128(acc);
        let hi = _mm256_extracti128_si256(acc, 1);
        let s = _mm_add_epi32(lo, hi);
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
        let mut r = _mm_cvtsi128_si32(s);
        while i < n {
            r += *pa.add(i) as i32 * *pb.add(i) as i32;
            i += 1;
        }
        r
    }
}
