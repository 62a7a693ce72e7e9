//! Micro-benchmark of the whole int8 routing step (`score_routes`) on a
//! 150 routes × 100 exemplars table, d = 384 (clustered random unit rows):
//! hot, and after a 96 MB write that evicts the table as an ONNX Runtime run
//! does. Prints the best and median µs per call; one thread.
//!
//!     cargo run --release -p routecore-core --example route_step [EXACT_TOP TOP_EXEMPLARS]
//!
//! (defaults 10 and 5, as in `StepParams::new`).

use routecore_core::testing::{clustered_routes, uniform};
use std::time::Instant;

use routecore_core::scoring::step::{score_routes, StepParams};
use routecore_core::scoring::Aggregation;
use routecore_core::StorageKind;

fn main() {
    let (routes, d) = (150usize, 384usize);
    let (ix, centres) = clustered_routes(routes, 100, d, 0.8, StorageKind::Int8, 2024);
    let mut rnd = uniform(2025);
    routecore_core::index::scan::set_route_parallel_cutoff(usize::MAX);
    let mut p = StepParams::new(Aggregation::Max, 0.05);
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    if args.len() == 2 {
        (p.exact_top, p.top_exemplars) = (args[0], args[1]);
    }
    let queries: Vec<Vec<f32>> = (0..8)
        .map(|i| centres[i * 17].iter().map(|v| v + 0.6 * rnd()).collect())
        .collect();
    let mut junk = vec![0u8; 96 << 20];
    println!("| caches | best µs | median µs |");
    println!("|---|---|---|");
    for cold in [false, true] {
        let mut times = Vec::new();
        for it in 0..201 {
            if cold {
                for (i, b) in junk.iter_mut().enumerate().step_by(64) {
                    *b = b.wrapping_add(i as u8 ^ it as u8);
                }
            }
            let q = &queries[it % queries.len()];
            let t = Instant::now();
            std::hint::black_box(score_routes(&ix, q, &p).unwrap());
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let caches = if cold { "evicted" } else { "hot" };
        println!(
            "| {caches} | {:.1} | {:.1} |",
            times[0] * 1e6,
            times[times.len() / 2] * 1e6
        );
    }
    std::hint::black_box(junk[12345]);
}
