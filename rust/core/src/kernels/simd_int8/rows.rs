//! The int8 block kernel's dispatch: many rows against one query ([`dot_i8_rows`]), four
//! segments side by side ([`dot_i8_rows_x4`]), many queries over tiles kept in L1
//! ([`dot_i8_rows_many`]), and the per-core prefetch distance.

use super::{QueryCodes, QueryI8};

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
/// is the code sum of row `i` (read by the [`QueryCodes::Levels`] layout only).
/// Each output equals [`QueryI8::dot_codes`] of its row. The rows are cut into
/// four segments read side by side ([`dot_i8_rows_x4`]).
pub fn dot_i8_rows(rows: &[i8], dim: usize, q: &QueryI8, sums: &[i32], out: &mut [f32]) {
    let n = out.len();
    assert!(rows.len() >= n * dim && sums.len() >= n && q.dim == dim);
    let m = n / 4;
    let (head, rest) = out.split_at_mut(4 * m);
    let mut parts = head.chunks_exact_mut(m.max(1));
    if m > 0 {
        let outs = [(); 4].map(|_| parts.next().expect("four parts"));
        let seg = |r: usize| &rows[r * m * dim..(r + 1) * m * dim];
        let sum = |r: usize| &sums[r * m..(r + 1) * m];
        dot_i8_rows_x4(
            [seg(0), seg(1), seg(2), seg(3)],
            dim,
            q,
            [sum(0), sum(1), sum(2), sum(3)],
            outs,
        );
    }
    let done = 4 * m;
    one_segment(&rows[done * dim..], dim, q, &sums[done..], rest);
}

/// Bytes of int8 rows [`dot_i8_rows_many`] scores for every query of a block before it
/// moves on: a tile stays in L1 (32 KB on Zen 4, 48 KB on recent Xeons) for all of them.
const TILE_BYTES: usize = 16 << 10;

/// [`dot_i8_rows`] of each of `qs` over the same rows, query `i`'s outputs into `outs[i]`
/// (`sums.len()` each). The rows are read in tiles that stay in L1 while every query scores
/// them, so a batch reads the table from memory once instead of once per query (15,000 × 256
/// rows, 16 queries: 56 against 128 µs a query on a Xeon EMR, one thread). Each output equals
/// [`dot_i8_rows`]'s, bit for bit.
pub fn dot_i8_rows_many(
    rows: &[i8],
    dim: usize,
    qs: &[QueryI8],
    sums: &[i32],
    outs: &mut [&mut [f32]],
) {
    let n = sums.len();
    assert!(rows.len() >= n * dim && outs.len() == qs.len() && outs.iter().all(|o| o.len() == n));
    let tile = (TILE_BYTES / dim.max(1)).max(16) / 16 * 16;
    let mut start = 0;
    while start < n {
        let m = tile.min(n - start);
        let (codes, sum) = (
            &rows[start * dim..(start + m) * dim],
            &sums[start..start + m],
        );
        for (q, o) in qs.iter().zip(outs.iter_mut()) {
            dot_i8_rows(codes, dim, q, sum, &mut o[start..start + m]);
        }
        start += m;
    }
}

/// `q̂·r8` for four equal-length segments of rows at once (`segs[r]` is
/// `outs[r].len() × dim`), read side by side: row `j` of every segment per
/// pass. Four segments far apart are four memory streams, which one core reads
/// from DRAM faster than one (see [`crate::kernels::int8_x86::rows_wide_avx2`]).
pub fn dot_i8_rows_x4(
    segs: [&[i8]; 4],
    dim: usize,
    q: &QueryI8,
    sums: [&[i32]; 4],
    outs: [&mut [f32]; 4],
) {
    let m = outs[0].len();
    assert!(q.dim == dim && outs.iter().all(|o| o.len() == m));
    assert!(segs.iter().all(|g| g.len() >= m * dim) && sums.iter().all(|x| x.len() >= m));
    #[cfg(target_arch = "x86_64")]
    if q.codes == QueryCodes::Wide && crate::kernels::simd::has_avx2_fma() {
        // SAFETY: AVX2 checked above; slice lengths asserted.
        unsafe { crate::kernels::int8_x86::rows_wide_avx2(segs, dim, &q.wide, q.scales.0, outs) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if q.codes == QueryCodes::Levels && has_vnni512() {
        let (a, b) = (&q.a_u, &q.b_u);
        // SAFETY: AVX-512 VNNI checked above; slice lengths asserted, levels padded.
        unsafe { crate::kernels::int8_x86::rows_vnni_x4(segs, dim, a, b, q.scales, sums, outs) };
        return;
    }
    for ((g, x), o) in segs.into_iter().zip(sums).zip(outs) {
        one_segment(g, dim, q, x, o);
    }
}

/// One run of rows through the best kernel for the query's layout: VNNI for
/// levels, AVX2 one row at a time for wide codes (fewer rows than the
/// four-segment kernel takes), else the portable loop.
fn one_segment(rows: &[i8], dim: usize, q: &QueryI8, sums: &[i32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernels::int8_x86 as x86;
        // SAFETY (both): features checked; the callers assert the lengths.
        match q.codes {
            QueryCodes::Levels if has_vnni512() => {
                return unsafe { x86::rows_vnni(rows, dim, &q.a_u, &q.b_u, q.scales, sums, out) };
            }
            QueryCodes::Wide if crate::kernels::simd::has_avx2_fma() => {
                return unsafe { x86::rows_wide_avx2_single(rows, dim, &q.wide, q.scales.0, out) };
            }
            _ => {}
        }
    }
    dot_i8_rows_fallback(rows, dim, q, sums, out);
}

/// [`dot_i8_rows`] in portable code, one row at a time.
pub fn dot_i8_rows_fallback(rows: &[i8], dim: usize, q: &QueryI8, sums: &[i32], out: &mut [f32]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = q.dot_codes(&rows[i * dim..(i + 1) * dim], sums[i]);
    }
}

/// Rows prefetched ahead by the VNNI kernel (`ROUTECORE_PREFETCH_ROWS`; 0: no
/// software prefetch). The default depends on the core, as measured:
/// - 16 rows, except on Zen 4. On 15,000 × 384 rows evicted from cache, a
///   Zen 5 EPYC read about 34 GB/s at 8 and 16 and 30 GB/s at 32
///   (`examples/int8_pass.rs`, BENCHMARKS.md §1), and twice as slow without.
/// - 0 on Zen 4 (AMD family 19h with AVX-512): every prefetch distance from
///   1 row up made its scans slower, 10,000 × 384 70 → 85 µs and 100,000 × 384
///   1.14 → 1.7–2.2 ms (one thread, `examples/scan_sizes.rs`, 2026-11-26).
pub(crate) fn prefetch_distance() -> usize {
    static D: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *D.get_or_init(|| {
        std::env::var("ROUTECORE_PREFETCH_ROWS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if is_zen4() { 0 } else { 16 })
    })
}

/// An AMD family 19h core with AVX-512 (Zen 4; Zen 3 has no AVX-512).
fn is_zen4() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::__cpuid;
        // SAFETY: CPUID leaves 0 and 1 exist on every x86-64 CPU (`__cpuid` is unsafe on older compilers).
        #[allow(unused_unsafe)]
        let (v, f) = unsafe { (__cpuid(0), __cpuid(1)) };
        let amd = (v.ebx, v.edx, v.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163); // "AuthenticAMD"
        let family = ((f.eax >> 8) & 0xF)
            + if (f.eax >> 8) & 0xF == 0xF {
                (f.eax >> 20) & 0xFF
            } else {
                0
            };
        amd && family == 0x19 && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
