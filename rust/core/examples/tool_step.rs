//! Micro-benchmark of the int8 step on a 10,000-tool catalog (one row per
//! tool, d = 384, clustered random unit rows) with and without a per-tool
//! bias, alternating calls. Prints median µs per call; one thread.
//!
//!     cargo run --release -p routecore-core --example tool_step [MODE]
//!
//! MODE: `both` (default), `none` or `bias` (one of them only, for `perf`).

use routecore_core::testing::uniform;
use std::time::Instant;

use routecore_core::scoring::step::{score_routes_biased, StepParams};
use routecore_core::scoring::Aggregation;
use routecore_core::{FlatIndex, StorageKind};

fn main() {
    let (tools, d) = (10_000usize, 384usize);
    let mut rnd = uniform(2024);
    let centres: Vec<Vec<f32>> = (0..200).map(|_| (0..d).map(|_| rnd()).collect()).collect();
    let (mut data, mut labels) = (Vec::new(), Vec::new());
    for t in 0..tools {
        data.extend(centres[t % 200].iter().map(|v| v + 0.8 * rnd()));
        labels.push(format!("tool_{t}"));
    }
    let ids: Vec<u64> = (0..tools as u64).collect();
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut ix = FlatIndex::new(d, StorageKind::Int8, true).unwrap();
    ix.add(&ids, &data, Some(&l), None).unwrap();
    routecore_core::index::scan::set_route_parallel_cutoff(usize::MAX);
    let mut p = StepParams::new(Aggregation::Max, 0.05);
    p.top_exemplars = 0;
    p.probabilities = false;
    let queries: Vec<Vec<f32>> = (0..8)
        .map(|i| centres[i * 17].iter().map(|v| v + 0.6 * rnd()).collect())
        .collect();
    let n_codes = ix.label_names().len();
    let biases: Vec<Vec<f32>> = (0..8)
        .map(|_| {
            (0..n_codes)
                .map(|_| if rnd() > 0.7 { 0.04 * rnd().abs() } else { 0.0 })
                .collect()
        })
        .collect();
    let mode = std::env::args().nth(1).unwrap_or_else(|| "both".into());
    // Real vectors, queries and biases when dumped (ROUTECORE_TOOL_STEP_DIR): vecs.f32, q.f32, bias.f32.
    let (ix, queries, biases) = match std::env::var("ROUTECORE_TOOL_STEP_DIR") {
        Ok(dir) => {
            let read = |f: &str| -> Vec<f32> {
                std::fs::read(format!("{dir}/{f}"))
                    .unwrap()
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
                    .collect()
            };
            let v = read("vecs.f32");
            let mut ix = FlatIndex::new(d, StorageKind::Int8, true).unwrap();
            ix.add(&ids, &v, Some(&l), None).unwrap();
            let q: Vec<Vec<f32>> = read("q.f32").chunks(d).map(|c| c.to_vec()).collect();
            let b: Vec<Vec<f32>> = read("bias.f32")
                .chunks(n_codes)
                .map(|c| c.to_vec())
                .collect();
            (ix, q, b)
        }
        Err(_) => (ix, queries, biases),
    };
    let (mut t_none, mut t_bias) = (Vec::new(), Vec::new());
    for it in 0..4001 {
        let q = &queries[it % queries.len()];
        if mode != "bias" {
            let t = Instant::now();
            std::hint::black_box(score_routes_biased(&ix, q, &p, None).unwrap());
            t_none.push(t.elapsed().as_secs_f64());
        }
        if mode != "none" {
            let b = &biases[it % biases.len()];
            let t = Instant::now();
            std::hint::black_box(score_routes_biased(&ix, q, &p, Some(b)).unwrap());
            t_bias.push(t.elapsed().as_secs_f64());
        }
    }
    for (name, mut v) in [("none", t_none), ("bias", t_bias)] {
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        println!("{name}: median {:.1} µs", v[v.len() / 2] * 1e6);
    }
}
