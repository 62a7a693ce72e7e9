//! Memory read-bandwidth probe, so benchmarks can state results as a fraction
//! of what the machine can stream.

use std::time::Instant;

use rayon::prelude::*;

/// Best-of-`reps` read bandwidth in GB/s over a buffer of `bytes`, read by
/// `threads` threads (each streams its own contiguous part with SIMD loads).
pub fn read_bandwidth(bytes: usize, threads: usize, reps: usize) -> f64 {
    let n = (bytes / 4).max(1 << 16);
    let buf: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .expect("thread pool");
    let mut best = f64::INFINITY;
    let mut sink = 0f32;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        let s: f32 = pool.install(|| {
            buf.par_chunks(n.div_ceil(threads.max(1)))
                .map(stream_sum)
                .sum()
        });
        best = best.min(t.elapsed().as_secs_f64());
        sink += s;
    }
    std::hint::black_box(sink);
    (n * 4) as f64 / best / 1e9
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
        assert!(super::read_bandwidth(1 << 22, 1, 2) > 0.1);
    }
}
