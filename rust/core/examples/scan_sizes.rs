//! Single-query `FlatIndex::search` per storage kind and size, alone (no peers):
//! min and median over rounds of the per-round median, ns per row and GB/s of
//! the scanned table. Used to tune prefetch distances and the parallel cutoff.
//!
//!     ROUTECORE_SIMD=avx2 RAYON_NUM_THREADS=1 SIZES=1000,10000,100000 \
//!         cargo run --release -p routecore-core --example scan_sizes
//!     CUTOFFS=1048576,max   (also time each size at these parallel cutoffs)
//!     KINDS=int8            (storage kinds, default f32,int8)

use std::time::Instant;

use routecore_core::index::scan;
use routecore_core::index::storage::StorageKind;
use routecore_core::index::FlatIndex;
use routecore_core::kernels::simd;
use routecore_core::testing::uniform;

fn unit_rows(n: usize, d: usize, seed: u32) -> Vec<f32> {
    let mut u = uniform(seed);
    let mut v: Vec<f32> = (0..n * d).map(|_| u()).collect();
    v.chunks_exact_mut(d).for_each(simd::l2_normalize);
    v
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(str::to_owned)
        .collect()
}

fn main() {
    let d: usize = std::env::var("DIM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(384);
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let sizes: Vec<usize> = env_list("SIZES", "1000,10000,100000")
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    let cutoffs: Vec<usize> = env_list("CUTOFFS", "default")
        .iter()
        .map(|s| match s.as_str() {
            "default" => scan::parallel_cutoff(),
            "max" => usize::MAX,
            x => x.parse().unwrap(),
        })
        .collect();
    let kinds: Vec<StorageKind> = env_list("KINDS", "f32,int8")
        .iter()
        .map(|k| StorageKind::parse(k).expect("KINDS: f32, f16 or int8"))
        .collect();
    println!(
        "d={d} rayon threads {} simd cap {}; min / median of {rounds} round medians",
        rayon::current_num_threads(),
        simd::simd_cap()
    );
    let data = unit_rows(*sizes.iter().max().unwrap(), d, 12345);
    let qs = unit_rows(64, d, 999);
    for &n in &sizes {
        let per = (4_000_000 / n).clamp(5, 400);
        for kind in &kinds {
            let kind = *kind;
            let mut ix = FlatIndex::new(d, kind, true).unwrap();
            let ids: Vec<u64> = (0..n as u64).collect();
            ix.add(&ids, &data[..n * d], None, None).unwrap();
            let bytes = n * d * if kind == StorageKind::F32 { 4 } else { 1 };
            for &cut in &cutoffs {
                scan::set_parallel_cutoff(cut);
                let mut meds = Vec::new();
                let mut c = 0;
                for r in 0..=rounds {
                    let mut t = Vec::with_capacity(per);
                    for _ in 0..per {
                        let q = &qs[(c % 64) * d..(c % 64 + 1) * d];
                        c += 1;
                        let s = Instant::now();
                        std::hint::black_box(ix.search(q, 5).unwrap());
                        t.push(s.elapsed().as_nanos() as f64);
                    }
                    t.sort_by(f64::total_cmp);
                    if r > 0 {
                        meds.push(t[per / 2]);
                    }
                }
                meds.sort_by(f64::total_cmp);
                let (mn, md) = (meds[0], meds[meds.len() / 2]);
                let cut_s = if cut == usize::MAX {
                    "max".into()
                } else {
                    cut.to_string()
                };
                println!(
                    "N={n:>8} {:<5} cutoff {cut_s:>9}: min {:>9.1} us  med {:>9.1} us  {:>6.2} ns/row  {:>5.1} GB/s",
                    kind.name(),
                    mn / 1e3,
                    md / 1e3,
                    mn / n as f64,
                    bytes as f64 / mn
                );
            }
        }
    }
}
