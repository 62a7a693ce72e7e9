//! Throughput of the batched routing step over int8 storage (`score_routes_batch`) against one
//! `score_routes_biased` call a query, 150 routes × 100 exemplars (clustered random unit rows),
//! on the rayon pool (`RAYON_NUM_THREADS`). Prints queries per second of each, best of 5.
//!
//!     cargo run --release -p routecore-core --example route_batch_step [DIM QUERIES]

use std::time::Instant;

use rayon::prelude::*;
use routecore_core::scoring::step::{score_routes_batch, score_routes_biased, StepParams};
use routecore_core::scoring::Aggregation;
use routecore_core::testing::{clustered_routes, uniform};
use routecore_core::StorageKind;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (d, nq) = (*args.first().unwrap_or(&256), *args.get(1).unwrap_or(&1000));
    let routes = 150usize;
    let (ix, centres) = clustered_routes(routes, 100, d, 0.8, StorageKind::Int8, 2024);
    let mut rnd = uniform(2025);
    let p = StepParams::new(Aggregation::Max, 0.05);
    let qs: Vec<f32> = (0..nq)
        .flat_map(|i| {
            centres[(i * 17) % routes]
                .iter()
                .map(|v| v + 0.6 * rnd())
                .collect::<Vec<_>>()
        })
        .collect();
    let ps = vec![&p; nq];
    let bs = vec![None; nq];
    let best = |f: &dyn Fn()| {
        (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let one = best(&|| {
        let r: Vec<_> = qs
            .par_chunks_exact(d)
            .map(|q| score_routes_biased(&ix, q, &p, None).unwrap())
            .collect();
        std::hint::black_box(r);
    });
    let batch = best(&|| {
        std::hint::black_box(score_routes_batch(&ix, &qs, &ps, &bs).unwrap());
    });
    println!(
        "d {d}, {nq} queries, {} threads: one call a query {:.0} q/s, batch {:.0} q/s",
        rayon::current_num_threads(),
        nq as f64 / one,
        nq as f64 / batch
    );
}
