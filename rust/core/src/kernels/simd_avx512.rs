//! AVX-512F f32 (and F16C-widened f16) dot kernels: the same shapes as the
//! AVX2 ones in [`crate::kernels::simd`], 16 lanes wide, tails through masked
//! loads instead of scalar loops. Chosen at run time by the dispatchers in
//! `simd` when the CPU has AVX-512F and `ROUTECORE_SIMD` allows it.

#![cfg(target_arch = "x86_64")]

use std::arch::x86_64::*;

use half::f16;

use crate::kernels::simd::row_of_each;

/// Mask of the first `r` lanes (`r < 16`).
#[inline(always)]
fn lanes(r: usize) -> __mmask16 {
    ((1u32 << r) - 1) as __mmask16
}

/// `a·b` with four 16-lane accumulators (64 floats per step).
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    while i + 64 <= n {
        for (j, acc_j) in acc.iter_mut().enumerate() {
            let x = _mm512_loadu_ps(pa.add(i + 16 * j));
            *acc_j = _mm512_fmadd_ps(x, _mm512_loadu_ps(pb.add(i + 16 * j)), *acc_j);
        }
        i += 64;
    }
    while i + 16 <= n {
        acc[0] = _mm512_fmadd_ps(
            _mm512_loadu_ps(pa.add(i)),
            _mm512_loadu_ps(pb.add(i)),
            acc[0],
        );
        i += 16;
    }
    if i < n {
        let m = lanes(n - i);
        let x = _mm512_maskz_loadu_ps(m, pa.add(i));
        acc[1] = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, pb.add(i)), acc[1]);
    }
    let s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    _mm512_reduce_add_ps(s)
}

/// One row against four vectors; each row load feeds four FMAs.
///
/// # Safety
/// The CPU must have AVX-512F; every `q[j]` is at least `row.len()` long.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot4(row: &[f32], q: [&[f32]; 4]) -> [f32; 4] {
    let n = row.len();
    let pr = row.as_ptr();
    let pq = [q[0].as_ptr(), q[1].as_ptr(), q[2].as_ptr(), q[3].as_ptr()];
    let z = _mm512_setzero_ps();
    let (mut a0, mut a1) = ([z; 4], [z; 4]);
    let mut i = 0;
    while i + 32 <= n {
        let r0 = _mm512_loadu_ps(pr.add(i));
        let r1 = _mm512_loadu_ps(pr.add(i + 16));
        for j in 0..4 {
            a0[j] = _mm512_fmadd_ps(r0, _mm512_loadu_ps(pq[j].add(i)), a0[j]);
            a1[j] = _mm512_fmadd_ps(r1, _mm512_loadu_ps(pq[j].add(i + 16)), a1[j]);
        }
        i += 32;
    }
    while i < n {
        let m = if n - i >= 16 { 0xFFFF } else { lanes(n - i) };
        let r = _mm512_maskz_loadu_ps(m, pr.add(i));
        for j in 0..4 {
            a0[j] = _mm512_fmadd_ps(r, _mm512_maskz_loadu_ps(m, pq[j].add(i)), a0[j]);
        }
        i += 16;
    }
    // Plain loops, not `array::map`: a closure would be compiled without AVX-512.
    let mut out = [0f32; 4];
    for j in 0..4 {
        out[j] = _mm512_reduce_add_ps(_mm512_add_ps(a0[j], a1[j]));
    }
    out
}

/// `out[i] = rows[i]·q`, one row at a time (a single memory stream).
///
/// # Safety
/// The CPU must have AVX-512F; `rows` holds `out.len() × q.len()` floats.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot_rows(rows: &[f32], q: &[f32], out: &mut [f32]) {
    let d = q.len();
    for (i, o) in out.iter_mut().enumerate() {
        *o = dot(rows.get_unchecked(i * d..(i + 1) * d), q);
    }
}

/// Row `j` of four segments per pass, each query load shared by four rows.
///
/// # Safety
/// The CPU must have AVX-512F; `segs[r]` holds `outs[r].len() × q.len()` floats.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot_rows_x4(segs: [&[f32]; 4], q: &[f32], outs: [&mut [f32]; 4]) {
    let d = q.len();
    let [o0, o1, o2, o3] = outs;
    for j in 0..o0.len() {
        [o0[j], o1[j], o2[j], o3[j]] = dot4(q, row_of_each(segs, j, d));
    }
}

/// A 4-row × 3-query tile (12 accumulators of 16 lanes).
///
/// # Safety
/// The CPU must have AVX-512F; all seven slices have the length of `rows[0]`.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot_tile(rows: [&[f32]; 4], qs: [&[f32]; 3]) -> [[f32; 3]; 4] {
    let n = rows[0].len();
    let pr = [
        rows[0].as_ptr(),
        rows[1].as_ptr(),
        rows[2].as_ptr(),
        rows[3].as_ptr(),
    ];
    let pq = [qs[0].as_ptr(), qs[1].as_ptr(), qs[2].as_ptr()];
    let mut acc = [[_mm512_setzero_ps(); 3]; 4];
    let mut i = 0;
    while i < n {
        let m = if n - i >= 16 { 0xFFFF } else { lanes(n - i) };
        let q = [
            _mm512_maskz_loadu_ps(m, pq[0].add(i)),
            _mm512_maskz_loadu_ps(m, pq[1].add(i)),
            _mm512_maskz_loadu_ps(m, pq[2].add(i)),
        ];
        for r in 0..4 {
            let x = _mm512_maskz_loadu_ps(m, pr[r].add(i));
            for j in 0..3 {
                acc[r][j] = _mm512_fmadd_ps(x, q[j], acc[r][j]);
            }
        }
        i += 16;
    }
    let mut out = [[0f32; 3]; 4];
    for r in 0..4 {
        for j in 0..3 {
            out[r][j] = _mm512_reduce_add_ps(acc[r][j]);
        }
    }
    out
}

/// `row·q` for an f16 row, widened 16 lanes at a time.
///
/// # Safety
/// The CPU must have AVX-512F; `q` is at least `row.len()` long.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot_f16(row: &[f16], q: &[f32]) -> f32 {
    let n = row.len().min(q.len());
    let (pr, pq) = (row.as_ptr() as *const u16, q.as_ptr());
    let mut acc = [_mm512_setzero_ps(); 2];
    let mut i = 0;
    while i + 32 <= n {
        for (j, acc_j) in acc.iter_mut().enumerate() {
            let h = _mm256_loadu_si256(pr.add(i + 16 * j) as *const __m256i);
            *acc_j = _mm512_fmadd_ps(
                _mm512_cvtph_ps(h),
                _mm512_loadu_ps(pq.add(i + 16 * j)),
                *acc_j,
            );
        }
        i += 32;
    }
    while i + 16 <= n {
        let h = _mm256_loadu_si256(pr.add(i) as *const __m256i);
        acc[0] = _mm512_fmadd_ps(_mm512_cvtph_ps(h), _mm512_loadu_ps(pq.add(i)), acc[0]);
        i += 16;
    }
    let mut s = _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1]));
    for t in i..n {
        s += row.get_unchecked(t).to_f32() * *pq.add(t);
    }
    s
}
