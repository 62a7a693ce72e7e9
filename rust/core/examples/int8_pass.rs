//! Micro-benchmark of the int8 block kernel (`dot_i8_rows`) alone, d = 384,
//! rows 64-byte aligned as in the index (before 2026-11-22 12:40 UTC they were not):
//! rows hot in L2, hot in L3, and evicted (a 96 MB write between passes, as an
//! ONNX Runtime run does). Prints the best and median ns per row.
//!
//!     cargo run --release -p routecore-core --example int8_pass
//!     ROUTECORE_PREFETCH_ROWS=32 cargo run --release -p routecore-core --example int8_pass

use routecore_core::testing::uniform;
use std::time::Instant;

use routecore_core::kernels::aligned::AlignedVec;
use routecore_core::kernels::simd_int8::{dot_i8_rows, quantize_row, QueryI8, BLOCK_ROWS};

fn main() {
    let d = 384;
    let mut next = uniform(12345);
    let mut junk = vec![0u8; 96 << 20];
    println!("| rows | caches | best ns/row | median ns/row | median GB/s |");
    println!("|---|---|---|---|---|");
    for (n, cold) in [(2_000usize, false), (15_000, false), (15_000, true)] {
        let v: Vec<f32> = (0..n * d).map(|_| next()).collect();
        // Rows on cache lines, as in the index's storage.
        let mut codes: AlignedVec<i8> = AlignedVec::new();
        codes.resize_zeroed(n * d);
        let sums: Vec<i32> = v
            .chunks(d)
            .zip(codes.chunks_mut(d))
            .map(|(r, c)| quantize_row(r, c).sum)
            .collect();
        let q = QueryI8::new(&v[..d], &[]);
        let mut out = vec![0f32; BLOCK_ROWS];
        let mut times = Vec::new();
        for it in 0..101 {
            if cold {
                for (i, b) in junk.iter_mut().enumerate().step_by(64) {
                    *b = b.wrapping_add(i as u8 ^ it as u8);
                }
            }
            let t = Instant::now();
            for b in (0..n).step_by(BLOCK_ROWS) {
                let m = (n - b).min(BLOCK_ROWS);
                dot_i8_rows(
                    &codes[b * d..(b + m) * d],
                    d,
                    &q,
                    &sums[b..b + m],
                    &mut out[..m],
                );
            }
            times.push(t.elapsed().as_secs_f64());
            std::hint::black_box(&out);
        }
        times.sort_by(f64::total_cmp);
        let (best, med) = (times[0], times[times.len() / 2]);
        let caches = match (n, cold) {
            (_, true) => "evicted",
            (2_000, _) => "hot (L2)",
            _ => "hot (L3)",
        };
        println!(
            "| {n} | {caches} | {:.2} | {:.2} | {:.1} |",
            best * 1e9 / n as f64,
            med * 1e9 / n as f64,
            (n * d) as f64 / med / 1e9
        );
    }
    std::hint::black_box(junk[12345]);
}
