//! Exact top-k scans over [`Storage`]: one query or a batch, sequential or on the
//! caller plus helper threads ([`crate::index::threads`]) above a size cutoff
//! (weighted by storage kind and kernel), and compact scans finished by an exact
//! re-rank ([`crate::index::scorer`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::index::threads::{scan_threads, shared_reduce};

pub use crate::index::scorer::rerank_pool;
use crate::index::scorer::{finish_compact, scan_batch_compact, scan_batch_f32, Scorer};
use crate::index::storage::{Storage, StorageKind};
use crate::kernels::simd::dot_rows;
use crate::kernels::topk::{Hit, TopK};

/// Default number of scanned elements (rows × dim, weighted per storage kind
/// and kernel: an f32 element on AVX-512 counts 1, see `element_weight`) from
/// which a search runs on several threads. Measured with
/// `examples/scan_sizes.rs` (see BENCHMARKS.md): below this, starting the scan's
/// helper threads ([`crate::index::threads`], about 40 µs) costs more than the
/// second core gains.
pub const DEFAULT_PARALLEL_CUTOFF: usize = 1 << 22;

static PARALLEL_CUTOFF: AtomicUsize = AtomicUsize::new(DEFAULT_PARALLEL_CUTOFF);

/// Current parallel cutoff (elements).
pub fn parallel_cutoff() -> usize {
    PARALLEL_CUTOFF.load(Ordering::Relaxed)
}

/// Set the parallel cutoff (elements); `usize::MAX` disables threading.
pub fn set_parallel_cutoff(elements: usize) {
    PARALLEL_CUTOFF.store(elements, Ordering::Relaxed);
}

/// Elements from which the routing step ([`score_all`]) goes parallel. Higher than
/// [`DEFAULT_PARALLEL_CUTOFF`] because routing scores right after ONNX Runtime
/// ran the encoder, whose intra-op threads still spin and compete with the rayon
/// pool on small machines (measured: p95 4.3 ms parallel vs 1.05 ms sequential for
/// 15,000 × 384 on 2 cores; see BENCHMARKS.md).
pub const ROUTE_PARALLEL_CUTOFF: usize = 1 << 24;

static ROUTE_CUTOFF: AtomicUsize = AtomicUsize::new(ROUTE_PARALLEL_CUTOFF);

/// Current cutoff (elements) of the routing step.
pub fn route_parallel_cutoff() -> usize {
    ROUTE_CUTOFF.load(Ordering::Relaxed)
}

/// Set the routing step's cutoff (elements); `usize::MAX` keeps it sequential.
pub fn set_route_parallel_cutoff(elements: usize) {
    ROUTE_CUTOFF.store(elements, Ordering::Relaxed);
}

/// Rows per parallel task: large enough to amortise scheduling, small enough to balance.
fn chunk_rows(n: usize, dim: usize) -> usize {
    let threads = scan_threads();
    let by_balance = n.div_ceil(threads * 4);
    let by_size = (1 << 16) / dim.max(1); // at least ~256 KB of f32 per task
    by_balance.max(by_size).max(1)
}

/// Work of one scanned element of `kind` on this CPU's kernel, in units of an
/// f32 element on AVX-512 (the unit of [`parallel_cutoff`]). Measured with
/// `examples/scan_sizes.rs` (`CUTOFFS=max,1`), d = 384, on a 2-core Zen 5 EPYC
/// (2026-11-25, helpers started per scan): two threads beat one from about
/// 10,000 f32 rows on AVX-512 and under 5,000 on the forced AVX2 path, and from
/// 20,000–50,000 int8 rows on both the VNNI and the AVX2 kernels. The portable
/// path is about 4× slower per row than AVX2.
fn element_weight(kind: StorageKind) -> f64 {
    use crate::kernels::simd::{has_avx2_fma, has_avx512f};
    match (kind, has_avx2_fma(), has_avx512f()) {
        (_, false, _) => 8.0,
        (StorageKind::Int8, true, _) => 1.0 / 4.0,
        (_, true, true) => 1.0,
        (_, true, false) => 2.0,
    }
}

/// True when a scan of `n × d` rows of `kind` should run on several threads
/// ([`crate::index::threads`]): never with one, otherwise from
/// [`parallel_cutoff`] weighted elements.
fn goes_parallel(kind: StorageKind, n: usize, d: usize) -> bool {
    scan_threads() > 1 && (n * d) as f64 * element_weight(kind) >= parallel_cutoff() as f64
}

fn scan_rows(sc: &Scorer, n: usize, k: usize) -> TopK {
    let d = sc.s.dim();
    if !goes_parallel(sc.s.kind(), n, d) {
        return sc.scan(0..n, k);
    }
    let step = chunk_rows(n, d);
    shared_reduce(
        n.div_ceil(step),
        || TopK::new(k),
        |c| sc.scan(c * step..((c + 1) * step).min(n), k),
        |mut a, b| {
            a.merge(b);
            a
        },
    )
}

/// Top-k rows for one query. The caller checks `1 <= k <= len` and the query width.
pub fn search_one(s: &Storage, q: &[f32], k: usize) -> Vec<Hit> {
    let n = s.len();
    let sc = Scorer::new(s, q);
    if s.kind() == StorageKind::F32 {
        return scan_rows(&sc, n, k).into_sorted();
    }
    finish_compact(&sc, scan_rows(&sc, n, rerank_pool(k, n)), k)
}

/// Per-query top-k over row ranges for a batch: `scan(rows)` gives one
/// collector per query; large batches split the rows over the scan's threads.
fn batch_over_rows(
    kind: StorageKind,
    n: usize,
    d: usize,
    nq: usize,
    k: usize,
    scan: impl Fn(std::ops::Range<usize>) -> Vec<TopK> + Sync,
) -> Vec<TopK> {
    // Batches do nq times the arithmetic per byte, so they go parallel sooner.
    if n < 8 || !goes_parallel(kind, n * nq, d) {
        return scan(0..n);
    }
    let step = chunk_rows(n, d);
    shared_reduce(
        n.div_ceil(step),
        || (0..nq).map(|_| TopK::new(k)).collect(),
        |c| scan(c * step..((c + 1) * step).min(n)),
        |mut a: Vec<TopK>, b| {
            for (x, y) in a.iter_mut().zip(b) {
                x.merge(y);
            }
            a
        },
    )
}

/// Top-k rows for each of `nq` queries stored row-major in `qs`.
pub fn search_batch(s: &Storage, qs: &[f32], nq: usize, k: usize) -> Vec<Vec<Hit>> {
    let (d, n, kind) = (s.dim(), s.len(), s.kind());
    if nq == 1 {
        return vec![search_one(s, qs, k)];
    }
    let queries: Vec<&[f32]> = qs.chunks_exact(d).take(nq).collect();
    if kind == StorageKind::F32 {
        let tops = batch_over_rows(kind, n, d, nq, k, |r| scan_batch_f32(s, &queries, r, k));
        return tops.into_iter().map(TopK::into_sorted).collect();
    }
    let scs: Vec<Scorer> = queries.iter().map(|q| Scorer::new(s, q)).collect();
    let pool = rerank_pool(k, n);
    let tops = batch_over_rows(kind, n, d, nq, pool, |r| scan_batch_compact(&scs, r, pool));
    scs.iter()
        .zip(tops)
        .map(|(sc, t)| finish_compact(sc, t, k))
        .collect()
}

/// Exact f32 scores of every row for one query (used by route scoring); parallel
/// only above [`route_parallel_cutoff`] (default [`ROUTE_PARALLEL_CUTOFF`]).
pub fn score_all(s: &Storage, q: &[f32], out: &mut [f32]) {
    let d = s.dim();
    let n = s.len();
    let m = s.matrix();
    if n * d < route_parallel_cutoff() || rayon::current_num_threads() == 1 {
        dot_rows(&m[..n * d], q, &mut out[..n]);
        return;
    }
    let step = chunk_rows(n, d);
    out[..n]
        .par_chunks_mut(step)
        .enumerate()
        .for_each(|(c, chunk)| {
            let first = c * step;
            dot_rows(&m[first * d..(first + chunk.len()) * d], q, chunk);
        });
}

/// Bytes of the table one tile of [`score_all_batch`] holds: it stays in L2 while every
/// query of the batch is scored against it.
const TILE_BYTES: usize = 128 << 10;

/// Exact f32 scores of every row for each of `nq` queries (`qs` row-major; `out`: `nq × n`,
/// row-major): the values of [`score_all`] (the same per-row kernel), with each tile of the
/// table read from memory once for all the queries instead of once per query. The queries
/// are split across threads above [`route_parallel_cutoff`] elements in all.
pub fn score_all_batch(s: &Storage, qs: &[f32], nq: usize, out: &mut [f32]) {
    let (d, n) = (s.dim(), s.len());
    let m = s.matrix();
    let tile = (TILE_BYTES / (d * 4).max(1)).max(1);
    let run = |first: usize, out: &mut [f32]| {
        let k = out.len() / n.max(1);
        for r0 in (0..n).step_by(tile) {
            let r1 = (r0 + tile).min(n);
            for j in 0..k {
                let q = &qs[(first + j) * d..(first + j + 1) * d];
                dot_rows(&m[r0 * d..r1 * d], q, &mut out[j * n + r0..j * n + r1]);
            }
        }
    };
    let threads = rayon::current_num_threads();
    if n == 0 || nq < 2 || threads == 1 || nq * n * d < route_parallel_cutoff() {
        run(0, &mut out[..nq * n]);
        return;
    }
    let per = nq.div_ceil(threads);
    out[..nq * n]
        .par_chunks_mut(per * n)
        .enumerate()
        .for_each(|(c, chunk)| run(c * per, chunk));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::topk::top_k;

    #[test]
    fn batched_scores_are_each_querys_scores() {
        // More rows than one tile, and both the sequential and the parallel split.
        let s = storage(1500, 96, StorageKind::F32);
        let qs: Vec<f32> = (0..9 * 96).map(|i| ((i * 29) % 13) as f32 - 6.0).collect();
        for cutoff in [usize::MAX, 1] {
            set_route_parallel_cutoff(cutoff);
            let mut got = vec![0f32; 9 * 1500];
            score_all_batch(&s, &qs, 9, &mut got);
            for (j, q) in qs.chunks(96).enumerate() {
                let mut one = vec![0f32; 1500];
                score_all(&s, q, &mut one);
                assert_eq!(&got[j * 1500..(j + 1) * 1500], &one[..], "query {j}");
            }
        }
        set_route_parallel_cutoff(ROUTE_PARALLEL_CUTOFF);
    }

    fn storage(n: usize, d: usize, kind: StorageKind) -> Storage {
        let mut s = Storage::new(d, kind);
        let mut rnd = crate::testing::uniform(12345);
        for _ in 0..n {
            let v: Vec<f32> = (0..d).map(|_| rnd()).collect();
            s.push(&v);
        }
        s
    }

    fn reference(s: &Storage, q: &[f32], k: usize) -> Vec<usize> {
        let sc: Vec<f32> = (0..s.len())
            .map(|i| crate::kernels::simd::dot_portable(s.row(i), q))
            .collect();
        top_k(&sc, k).iter().map(|h| h.index).collect()
    }

    #[test]
    fn sequential_parallel_and_batch_agree() {
        let s = storage(3000, 64, StorageKind::F32);
        let qs: Vec<f32> = (0..7 * 64).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
        let expect: Vec<Vec<usize>> = qs.chunks(64).map(|q| reference(&s, q, 10)).collect();
        for cutoff in [usize::MAX, 1] {
            set_parallel_cutoff(cutoff);
            for (j, q) in qs.chunks(64).enumerate() {
                let got: Vec<usize> = search_one(&s, q, 10).iter().map(|h| h.index).collect();
                assert_eq!(got, expect[j]);
            }
            let batch = search_batch(&s, &qs, 7, 10);
            for (j, hits) in batch.iter().enumerate() {
                assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), expect[j]);
            }
        }
        set_parallel_cutoff(DEFAULT_PARALLEL_CUTOFF);
    }

    #[test]
    fn compact_storage_reranks_exactly() {
        for kind in [StorageKind::F16, StorageKind::Int8] {
            let s = storage(2000, 96, kind);
            let q: Vec<f32> = s.row(17).to_vec();
            let got = search_one(&s, &q, 5);
            assert_eq!(
                got.iter().map(|h| h.index).collect::<Vec<_>>(),
                reference(&s, &q, 5)
            );
            assert!(
                (got[0].score - crate::kernels::simd::dot(s.row(got[0].index), &q)).abs() < 1e-6
            );
        }
    }

    #[test]
    fn compact_batches_match_brute_force() {
        let qs: Vec<f32> = (0..9 * 64).map(|i| ((i * 53) % 17) as f32 - 8.0).collect();
        for kind in [StorageKind::F16, StorageKind::Int8] {
            let s = storage(3000, 64, kind);
            let expect: Vec<Vec<usize>> = qs.chunks(64).map(|q| reference(&s, q, 7)).collect();
            for cutoff in [usize::MAX, 1] {
                set_parallel_cutoff(cutoff);
                let batch = search_batch(&s, &qs, 9, 7);
                for (j, hits) in batch.iter().enumerate() {
                    let got: Vec<usize> = hits.iter().map(|h| h.index).collect();
                    assert_eq!(got, expect[j], "{kind:?} cutoff {cutoff} query {j}");
                }
            }
        }
        set_parallel_cutoff(DEFAULT_PARALLEL_CUTOFF);
    }

    #[test]
    fn score_all_matches_dot() {
        let s = storage(501, 40, StorageKind::F32);
        let q = s.row(3).to_vec();
        let mut out = vec![0.0; 501];
        score_all(&s, &q, &mut out);
        for (i, o) in out.iter().enumerate() {
            assert!((o - crate::kernels::simd::dot_portable(s.row(i), &q)).abs() < 1e-5);
        }
    }
}
