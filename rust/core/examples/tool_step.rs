//! Micro-benchmark of the int8 step on a 10,000-tool catalog (one row per
//! tool, d = 384, clustered random unit rows) with and without a per-tool
//! bias, alternating calls. Prints median µs per call; one thread.
//!
//!     cargo run --release -p routecore-core --example tool_step [MODE]
//!
//! MODE: `both` (default), `none` or `bias` (one of them only, for `perf`).
//! `ROUTECORE_TOOL_STEP_DIR=DIR`: a real catalog dumped from a router (see [`dumped`]).

use routecore_core::testing::uniform;
use std::time::Instant;

use routecore_core::scoring::step::{score_routes_biased, StepParams};
use routecore_core::scoring::Aggregation;
use routecore_core::{FlatIndex, StorageKind};

/// The catalog's vectors (one row per tool), queries and per-tool biases.
type Case = (Vec<f32>, Vec<Vec<f32>>, Vec<Vec<f32>>);

/// Clustered random unit rows, queries near 8 of the centres, 30 % of tools biased.
fn synthetic(tools: usize, d: usize) -> Case {
    let mut rnd = uniform(2024);
    let centres: Vec<Vec<f32>> = (0..200).map(|_| (0..d).map(|_| rnd()).collect()).collect();
    let data = (0..tools)
        .flat_map(|t| {
            centres[t % 200]
                .iter()
                .map(|v| v + 0.8 * rnd())
                .collect::<Vec<_>>()
        })
        .collect();
    let queries = (0..8)
        .map(|i| centres[i * 17].iter().map(|v| v + 0.6 * rnd()).collect())
        .collect();
    let biases = (0..8)
        .map(|_| {
            (0..tools + 1)
                .map(|_| if rnd() > 0.7 { 0.04 * rnd().abs() } else { 0.0 })
                .collect()
        })
        .collect();
    (data, queries, biases)
}

/// Vectors, queries and biases (label-code order) dumped from a router as raw
/// little-endian f32: `vecs.f32`, `q.f32`, `bias.f32` in `dir`.
fn dumped(dir: &str, tools: usize, d: usize) -> Case {
    let read = |f: &str| -> Vec<f32> {
        std::fs::read(format!("{dir}/{f}"))
            .unwrap()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect()
    };
    let rows = |v: Vec<f32>, w: usize| v.chunks(w).map(|c| c.to_vec()).collect();
    (
        read("vecs.f32"),
        rows(read("q.f32"), d),
        rows(read("bias.f32"), tools + 1),
    )
}

fn main() {
    let (tools, d) = (10_000usize, 384usize);
    let (data, queries, biases) = match std::env::var("ROUTECORE_TOOL_STEP_DIR") {
        Ok(dir) => dumped(&dir, tools, d),
        Err(_) => synthetic(tools, d),
    };
    let ids: Vec<u64> = (0..tools as u64).collect();
    let labels: Vec<String> = (0..tools).map(|t| format!("tool_{t}")).collect();
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut ix = FlatIndex::new(d, StorageKind::Int8, true).unwrap();
    ix.add(&ids, &data, Some(&l), None).unwrap();
    assert_eq!(
        ix.label_names().len(),
        tools + 1,
        "code 0 is the empty label"
    );
    routecore_core::index::scan::set_route_parallel_cutoff(usize::MAX);
    let mut p = StepParams::new(Aggregation::Max, 0.05);
    p.top_exemplars = 0;
    p.probabilities = false;
    let mode = std::env::args().nth(1).unwrap_or_else(|| "both".into());
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
