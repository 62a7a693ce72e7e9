//! Memory read-bandwidth probe, so benchmarks can state results as a fraction
//! of what the machine can stream.

use std::time::Instant;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::kernels::aligned::AlignedVec;

/// Best-of-`reps` read bandwidth in GB/s over a buffer of `bytes`, read by
/// `threads` threads (each streams its own contiguous part with SIMD loads).
/// One thread pool serves every repeat, so small buffers time the reads, not
/// the pool's start. A buffer that cannot be allocated is an
/// [`Error::InvalidArgument`], not an abort.
pub fn read_bandwidth(bytes: usize, threads: usize, reps: usize) -> Result<f64> {
    let n = (bytes / 4).max(1 << 16);
    // The tables' own buffer type, so the probe reads with their alignment
    // and huge pages (a plain `Vec` of 366 MB read 21–26 GB/s from DRAM here,
    // where the int8 scan of a table that size read 28–30).
    let mut buf: AlignedVec<f32> = AlignedVec::new();
    buf.try_reserve(n).map_err(|_| {
        Error::InvalidArgument(format!(
            "cannot allocate {bytes} bytes for the bandwidth probe"
        ))
    })?;
    buf.resize_zeroed(n);
    buf.iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x = (i % 7) as f32);
    let threads = threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::InvalidArgument(format!("thread pool for the bandwidth probe: {e}")))?;
    let mut best = f64::INFINITY;
    let mut sink = 0f32;
    pool.install(|| {
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            let s: f32 = buf.par_chunks(n.div_ceil(threads)).map(stream_sum).sum();
            best = best.min(t.elapsed().as_secs_f64());
            sink += s;
        }
    });
    std::hint::black_box(sink);
    Ok((n * 4) as f64 / best / 1e9)
}

/// Sum of `c`, one read stream, with the widest loads the CPU has (the scan
/// kernels' ISA choice, `ROUTECORE_SIMD` included) and eight independent
/// accumulators. The probe must not be bound by its own arithmetic: the
/// baseline-SSE2 loop it replaced read a 4 MB buffer in L3 at 64–78 GB/s on a
/// Zen 4 core that streams it at 99 GB/s.
fn stream_sum(c: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernels::simd::{has_avx2_fma, has_avx512f};
        if has_avx512f() {
            // SAFETY: AVX-512F present.
            return unsafe { x86::sum_avx512(c) };
        }
        if has_avx2_fma() {
            // SAFETY: AVX2 present.
            return unsafe { x86::sum_avx2(c) };
        }
    }
    let mut acc = [0f32; 32];
    let mut it = c.chunks_exact(32);
    for ch in &mut it {
        for (a, x) in acc.iter_mut().zip(ch) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + it.remainder().iter().sum::<f32>()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    pub unsafe fn sum_avx512(c: &[f32]) -> f32 {
        let p = c.as_ptr();
        let mut acc = [_mm512_setzero_ps(); 8];
        let mut i = 0;
        while i + 128 <= c.len() {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = _mm512_add_ps(*a, _mm512_loadu_ps(p.add(i + 16 * j)));
            }
            i += 128;
        }
        let mut s = 0f32;
        for a in acc {
            s += _mm512_reduce_add_ps(a);
        }
        s + c[i..].iter().sum::<f32>()
    }

    #[target_feature(enable = "avx2")]
    pub unsafe fn sum_avx2(c: &[f32]) -> f32 {
        let p = c.as_ptr();
        let mut acc = [_mm256_setzero_ps(); 8];
        let mut i = 0;
        while i + 64 <= c.len() {
            for (j, a) in acc.iter_mut().enumerate() {
                *a = _mm256_add_ps(*a, _mm256_loadu_ps(p.add(i + 8 * j)));
            }
            i += 64;
        }
        let mut lanes = [0f32; 8];
        let mut s = 0f32;
        for a in acc {
            _mm256_storeu_ps(lanes.as_mut_ptr(), a);
            s += lanes.iter().sum::<f32>();
        }
        s + c[i..].iter().sum::<f32>()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bandwidth_is_positive() {
        assert!(super::read_bandwidth(1 << 22, 1, 2).unwrap() > 0.1);
    }

    #[test]
    fn the_stream_sum_adds_every_element() {
        // Every length around the 64- and 128-float steps, whatever the ISA.
        for n in [0, 1, 63, 64, 65, 127, 128, 129, 1000] {
            let v: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
            assert_eq!(super::stream_sum(&v), v.iter().sum::<f32>(), "n={n}");
        }
    }

    #[test]
    fn an_impossible_buffer_is_an_error() {
        assert!(super::read_bandwidth(usize::MAX, 1, 1).is_err());
    }
}
