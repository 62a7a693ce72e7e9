//! Memory read-bandwidth probe, so benchmarks can state results as a fraction
//! of what the machine can stream.

use std::time::Instant;

use rayon::prelude::*;

use crate::error::{Error, Result};

/// Best-of-`reps` read bandwidth in GB/s over a buffer of `bytes`, read by
/// `threads` threads (each streams its own contiguous part with SIMD loads).
/// One thread pool serves every repeat, so small buffers time the reads, not
/// the pool's start. A buffer that cannot be allocated is an
/// [`Error::InvalidArgument`], not an abort.
pub fn read_bandwidth(bytes: usize, threads: usize, reps: usize) -> Result<f64> {
    let n = (bytes / 4).max(1 << 16);
    let mut buf: Vec<f32> = Vec::new();
    buf.try_reserve_exact(n).map_err(|_| {
        Error::InvalidArgument(format!(
            "cannot allocate {bytes} bytes for the bandwidth probe"
        ))
    })?;
    buf.extend((0..n).map(|i| (i % 7) as f32));
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

/// Sum with 16 independent lanes (vectorised by the compiler; one read stream).
fn stream_sum(c: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let mut it = c.chunks_exact(16);
    for ch in &mut it {
        for (a, x) in acc.iter_mut().zip(ch) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + it.remainder().iter().sum::<f32>()
}

#[cfg(test)]
mod tests {
    #[test]
    fn bandwidth_is_positive() {
        assert!(super::read_bandwidth(1 << 22, 1, 2).unwrap() > 0.1);
    }

    #[test]
    fn an_impossible_buffer_is_an_error() {
        assert!(super::read_bandwidth(usize::MAX, 1, 1).is_err());
    }
}
