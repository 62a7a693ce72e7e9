//! x86-64 int8 row kernels behind [`crate::kernels::simd_int8::dot_i8_rows`]:
//! AVX-512 VNNI over a two-level query (16 rows per pass, rows prefetched
//! ahead), AVX2 over an i16 query (four rows per pass, from four segments).
//! Both return exactly the integer dot product times the query scale(s), as
//! the portable loop does.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use crate::kernels::simd_int8::prefetch_distance;

/// Prefetch the bytes `[from, to)` of `rows` (offsets, so no pointer leaves the slice).
#[inline(always)]
unsafe fn prefetch_range(rows: *const i8, from: usize, to: usize) {
    let mut off = from;
    while off < to {
        _mm_prefetch::<_MM_HINT_T0>(rows.add(off));
        off += 64;
    }
}

/// Integer dots of the four rows at `bases` with the i16 query `w` (the first
/// `body` codes, a multiple of 16): every 16 codes are widened to i16
/// (`vpmovsxbw`) and multiplied pairwise into i32 lanes (`vpmaddwd`), which
/// cannot overflow (see `wide_max`); each query load serves four rows, and the
/// four accumulators are reduced together by two horizontal adds.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn four_wide(bases: [*const i8; 4], w: *const i16, body: usize) -> __m128i {
    let z = _mm256_setzero_si256();
    let mut acc = [z; 4];
    let mut e = 0;
    while e < body {
        let qv = _mm256_loadu_si256(w.add(e) as *const __m256i);
        for (a, b) in acc.iter_mut().zip(bases) {
            let x = _mm256_cvtepi8_epi16(_mm_loadu_si128(b.add(e) as *const __m128i));
            *a = _mm256_add_epi32(*a, _mm256_madd_epi16(x, qv));
        }
        e += 16;
    }
    let h = _mm256_hadd_epi32(
        _mm256_hadd_epi32(acc[0], acc[1]),
        _mm256_hadd_epi32(acc[2], acc[3]),
    );
    _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h))
}

/// `Σ row[e]·w[e]` over the codes `body..dim` no SIMD step covered.
#[inline(always)]
unsafe fn tail_wide(row: *const i8, w: *const i16, body: usize, dim: usize) -> i32 {
    let mut t = 0i32;
    for e in body..dim {
        t += *row.add(e) as i32 * *w.add(e) as i32;
    }
    t
}

/// AVX2 kernel for an i16 query `w` (`q̂ = s·w`, zero-padded to 16) over rows
/// taken four at a time, row `j` of each of the four equal-length segments
/// `segs[r]` per pass (adjacent rows when the caller passes one block cut in
/// four). No software prefetch: with four streams the hardware prefetchers
/// keep up, and 4 or 16 rows ahead per segment made 100,000 × 1024 codes
/// slower (8.0–8.7 ms against 6.4–6.8 ms, two runs, 2026-11-23).
///
/// Four segments far apart are four memory streams, which a core reads from
/// DRAM faster than one: on an AVX2 EPYC (2026-11-23, f32 rows, interleaved
/// A/B) 100,000 × 384 rows read 17.6 GB/s as four far segments against
/// 10.4 GB/s as one stream (and 14.6 against 8.9 GB/s at × 1024); four adjacent
/// rows per pass read DRAM slower than one stream. Why not `vpmaddubsw` on
/// int8 queries: it needs an unsigned operand, so either the query loses
/// precision to one int8 level, or two levels cost two multiplies per byte; on
/// 10,000 × 384 rows the two-level form was 21 % slower than this one.
///
/// # Safety
/// The CPU must have AVX2 and FMA; every `segs[r]` holds `outs[r].len() × dim`
/// codes (all `outs` of one length) and `w` at least `dim` (the callers in
/// `simd_int8` assert it).
#[target_feature(enable = "avx2,fma")]
pub unsafe fn rows_wide_avx2(
    segs: [&[i8]; 4],
    dim: usize,
    w: &[i16],
    s: f32,
    outs: [&mut [f32]; 4],
) {
    let m = outs[0].len();
    debug_assert!(w.len() >= dim && segs.iter().all(|g| g.len() >= m * dim));
    debug_assert!(outs.iter().all(|o| o.len() == m));
    let pw = w.as_ptr();
    let body = dim / 16 * 16;
    let vs = _mm_set1_ps(s);
    let [o0, o1, o2, o3] = outs;
    let mut f = [0f32; 4];
    for j in 0..m {
        let off = j * dim;
        let bases = segs.map(|g| g.as_ptr().add(off));
        let mut v = four_wide(bases, pw, body);
        if body < dim {
            let t = bases.map(|b| tail_wide(b, pw, body, dim));
            v = _mm_add_epi32(v, _mm_loadu_si128(t.as_ptr() as *const __m128i));
        }
        _mm_storeu_ps(f.as_mut_ptr(), _mm_mul_ps(vs, _mm_cvtepi32_ps(v)));
        (o0[j], o1[j], o2[j], o3[j]) = (f[0], f[1], f[2], f[3]);
    }
}

/// One row at a time through [`four_wide`]'s arithmetic (for counts under four).
///
/// # Safety
/// As [`rows_wide_avx2`], for one segment.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn rows_wide_avx2_single(rows: &[i8], dim: usize, w: &[i16], s: f32, out: &mut [f32]) {
    let pw = w.as_ptr();
    let body = dim / 16 * 16;
    for (j, o) in out.iter_mut().enumerate() {
        let b = rows.as_ptr().add(j * dim);
        let v = four_wide([b; 4], pw, body);
        *o = s * (_mm_cvtsi128_si32(v) + tail_wide(b, pw, body, dim)) as f32;
    }
}

/// `dpbusd` multiplies the unsigned query levels (codes + 128) by the signed
/// row, so `128 · sum(row)` is subtracted from each level's integer dot.
///
/// Sixteen rows per pass: four sub-passes of four rows share each query load,
/// and the 16 × 2 accumulators are reduced together by a transpose (about 3
/// vector ops per row and level instead of a 9-op horizontal sum each), then
/// corrected and scaled 16 lanes at a time.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VNNI; `rows` holds `out.len() × dim`
/// codes, `sums` at least `out.len()` entries, and both query levels are
/// zero-padded to a multiple of 64 bytes (the caller, `dot_i8_rows`, asserts).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn rows_vnni(
    rows: &[i8],
    dim: usize,
    a_u: &[u8],
    b_u: &[u8],
    (s1, s2): (f32, f32),
    sums: &[i32],
    out: &mut [f32],
) {
    let n = out.len();
    debug_assert!(a_u.len() >= dim.div_ceil(64) * 64 && b_u.len() == a_u.len());
    let (pa, pb) = (a_u.as_ptr(), b_u.as_ptr());
    let (chunks, last_mask) = chunks_of(dim);
    // Software prefetch ahead (none where `prefetch_distance` is 0): hardware
    // prefetchers stop at 4 KB pages, which halves DRAM throughput on Zen 5
    // when the rows are not cached (right after ONNX Runtime ran, for instance).
    let ahead = prefetch_distance() * dim;
    let (vs1, vs2) = (_mm512_set1_ps(s1), _mm512_set1_ps(s2));
    let mut i = 0;
    while i + 16 <= n {
        let base = rows.as_ptr().add(i * dim);
        if ahead > 0 {
            prefetch_range(
                rows.as_ptr(),
                i * dim + ahead,
                (i * dim + ahead + 16 * dim).min(n * dim),
            );
        }
        // Sub-pass g takes rows g, g+4, g+8, g+12, so that the transpose
        // below leaves row j in lane j.
        let mut ta = [_mm512_setzero_si512(); 4];
        let mut tb = [_mm512_setzero_si512(); 4];
        for g in 0..4 {
            let at = base.add(g * dim);
            let bases = [at, at.add(4 * dim), at.add(8 * dim), at.add(12 * dim)];
            let (a, b) = four_rows(bases, chunks, last_mask, pa, pb);
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

/// [`rows_vnni`] over four equal-length segments read side by side (four
/// memory streams, each prefetched a quarter of the prefetch distance ahead):
/// each pass takes rows `j..j + 4` of every segment, so after the transpose
/// lanes `4k..4k + 4` hold segment `k`. On a Zen 5 EPYC (2026-11-25, one
/// thread, `examples/scan_sizes.rs`) a 100,000 × 384 search took 0.60–0.80 ms
/// against 0.89–0.96 ms as one stream, 1,000,000 × 384 11.6–12.3 against
/// 12.7–13.7 ms; without the prefetch the four streams were twice as slow.
/// On Zen 4 the prefetch is what slows it (`simd_int8::prefetch_distance`).
///
/// # Safety
/// As [`rows_vnni`], for each segment `segs[r]` (`outs[r].len() × dim` codes,
/// `sums[r]` at least as long as `outs[r]`, all `outs` of one length).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn rows_vnni_x4(
    segs: [&[i8]; 4],
    dim: usize,
    a_u: &[u8],
    b_u: &[u8],
    (s1, s2): (f32, f32),
    sums: [&[i32]; 4],
    outs: [&mut [f32]; 4],
) {
    let m = outs[0].len();
    let (pa, pb) = (a_u.as_ptr(), b_u.as_ptr());
    let (chunks, last_mask) = chunks_of(dim);
    let (vs1, vs2) = (_mm512_set1_ps(s1), _mm512_set1_ps(s2));
    let p = [
        segs[0].as_ptr(),
        segs[1].as_ptr(),
        segs[2].as_ptr(),
        segs[3].as_ptr(),
    ];
    let [o0, o1, o2, o3] = outs;
    // The prefetch distance counts rows of all four streams together.
    let ahead = prefetch_distance().div_ceil(4) * dim;
    let mut j = 0;
    while j + 4 <= m {
        if ahead > 0 {
            for q in p {
                prefetch_range(q, j * dim + ahead, (j * dim + ahead + 4 * dim).min(m * dim));
            }
        }
        let (mut ta, mut tb) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
        for g in 0..4 {
            let off = (j + g) * dim;
            let bases = [p[0].add(off), p[1].add(off), p[2].add(off), p[3].add(off)];
            let (a, b) = four_rows(bases, chunks, last_mask, pa, pb);
            ta[g] = reduce4(a);
            tb[g] = reduce4(b);
        }
        let sum4 = |x: &[i32]| _mm_loadu_si128(x.as_ptr().add(j) as *const __m128i);
        let mut sv = _mm512_castsi128_si512(sum4(sums[0]));
        sv = _mm512_inserti32x4::<1>(sv, sum4(sums[1]));
        sv = _mm512_inserti32x4::<2>(sv, sum4(sums[2]));
        sv = _mm512_inserti32x4::<3>(sv, sum4(sums[3]));
        let off = _mm512_slli_epi32::<7>(sv);
        let ia = _mm512_sub_epi32(transpose_sum(ta), off);
        let ib = _mm512_sub_epi32(transpose_sum(tb), off);
        let v = _mm512_add_ps(
            _mm512_mul_ps(vs1, _mm512_cvtepi32_ps(ia)),
            _mm512_mul_ps(vs2, _mm512_cvtepi32_ps(ib)),
        );
        _mm_storeu_ps(o0.as_mut_ptr().add(j), _mm512_extractf32x4_ps::<0>(v));
        _mm_storeu_ps(o1.as_mut_ptr().add(j), _mm512_extractf32x4_ps::<1>(v));
        _mm_storeu_ps(o2.as_mut_ptr().add(j), _mm512_extractf32x4_ps::<2>(v));
        _mm_storeu_ps(o3.as_mut_ptr().add(j), _mm512_extractf32x4_ps::<3>(v));
        j += 4;
    }
    if j < m {
        for (r, o) in [o0, o1, o2, o3].into_iter().enumerate() {
            let rows = segs[r].get_unchecked(j * dim..m * dim);
            rows_vnni(
                rows,
                dim,
                a_u,
                b_u,
                (s1, s2),
                sums[r].get_unchecked(j..m),
                &mut o[j..m],
            );
        }
    }
}

/// 64-byte chunks of a `dim`-code row, and the load mask of the last one.
#[inline(always)]
fn chunks_of(dim: usize) -> (usize, __mmask64) {
    let tail = dim % 64;
    (
        dim.div_ceil(64),
        if tail == 0 {
            u64::MAX
        } else {
            (1u64 << tail) - 1
        },
    )
}

/// Both levels' accumulators for the four rows at `bases`.
#[inline(always)]
unsafe fn four_rows(
    bases: [*const i8; 4],
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
            let x = _mm512_maskz_loadu_epi8(m, bases[k].add(o));
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
