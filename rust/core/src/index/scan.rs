//! Exact top-k scans over [`Storage`]: one query or a batch, sequential or on the
//! rayon pool above a size cutoff, and compact scans followed by an f32 re-rank.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::index::storage::{Storage, StorageKind};
use crate::kernels::simd::{dot, dot4, dot_f16, dot_tile};
use crate::kernels::simd_int8::{dot_i8_rows, QueryI8, BLOCK_ROWS};
use crate::kernels::topk::{Hit, TopK};

/// Default number of scanned f32 elements (rows × dim) from which a search runs
/// on several threads. Measured in `benches/` (see BENCHMARKS.md): below this the
/// rayon hand-off costs more than the second core gains.
pub const DEFAULT_PARALLEL_CUTOFF: usize = 1 << 20;

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
    let threads = rayon::current_num_threads().max(1);
    let by_balance = n.div_ceil(threads * 4);
    let by_size = (1 << 16) / dim.max(1); // at least ~256 KB of f32 per task
    by_balance.max(by_size).max(1)
}

/// Candidate pool re-ranked exactly after a compact scan.
pub fn rerank_pool(k: usize, n: usize) -> usize {
    (4 * k).max(k + 32).min(n)
}

/// Approximate or exact score of row `i` for the storage's scan representation.
struct Scorer<'a> {
    s: &'a Storage,
    q: &'a [f32],
    q8: Option<QueryI8>,
}

impl<'a> Scorer<'a> {
    fn new(s: &'a Storage, q: &'a [f32]) -> Self {
        let q8 = (s.kind() == StorageKind::Int8).then(|| QueryI8::new(q, s.centre()));
        Scorer { s, q, q8 }
    }

    #[inline]
    fn score(&self, i: usize) -> f32 {
        let d = self.s.dim();
        match self.s.kind() {
            StorageKind::F32 => dot(self.s.row(i), self.q),
            StorageKind::F16 => dot_f16(&self.s.f16s[i * d..(i + 1) * d], self.q),
            StorageKind::Int8 => unreachable!("int8 rows are scored in blocks"),
        }
    }

    fn scan(&self, rows: std::ops::Range<usize>, k: usize) -> TopK {
        let mut t = TopK::new(k);
        if let Some(q8) = &self.q8 {
            // Blocks of rows through the int8 kernel, then the estimate per row.
            let d = self.s.dim();
            let mut buf = [0f32; BLOCK_ROWS];
            let mut i = rows.start;
            while i < rows.end {
                let m = (rows.end - i).min(BLOCK_ROWS);
                let out = &mut buf[..m];
                dot_i8_rows(
                    &self.s.i8s[i * d..(i + m) * d],
                    d,
                    q8,
                    &self.s.quant.sum[i..i + m],
                    out,
                );
                for (j, &v) in out.iter().enumerate() {
                    t.push(q8.estimate(v, self.s.quant.scale[i + j]), i + j);
                }
                i += m;
            }
            return t;
        }
        let mut i = rows.start;
        if self.s.kind() == StorageKind::F32 {
            // Four rows per pass: each query chunk is loaded once for four rows.
            while i + 4 <= rows.end {
                let r = dot4(
                    self.q,
                    [
                        self.s.row(i),
                        self.s.row(i + 1),
                        self.s.row(i + 2),
                        self.s.row(i + 3),
                    ],
                );
                for (j, &x) in r.iter().enumerate() {
                    t.push(x, i + j);
                }
                i += 4;
            }
        }
        for i in i..rows.end {
            t.push(self.score(i), i);
        }
        t
    }
}

fn scan_rows(sc: &Scorer, n: usize, k: usize) -> TopK {
    let d = sc.s.dim();
    if n * d < parallel_cutoff() {
        return sc.scan(0..n, k);
    }
    let step = chunk_rows(n, d);
    (0..n.div_ceil(step))
        .into_par_iter()
        .map(|c| sc.scan(c * step..((c + 1) * step).min(n), k))
        .reduce(
            || TopK::new(k),
            |mut a, b| {
                a.merge(b);
                a
            },
        )
}

/// Exact f32 re-rank of a candidate pool.
fn rerank(s: &Storage, q: &[f32], pool: Vec<Hit>, k: usize) -> Vec<Hit> {
    let mut idx: Vec<usize> = pool.into_iter().map(|h| h.index).collect();
    idx.sort_unstable();
    let mut t = TopK::new(k);
    for i in idx {
        t.push(dot(s.row(i), q), i);
    }
    t.into_sorted()
}

/// Top-k rows for one query. The caller checks `1 <= k <= len` and the query width.
pub fn search_one(s: &Storage, q: &[f32], k: usize) -> Vec<Hit> {
    let n = s.len();
    let sc = Scorer::new(s, q);
    match s.kind() {
        StorageKind::F32 => scan_rows(&sc, n, k).into_sorted(),
        _ => {
            let pool = scan_rows(&sc, n, rerank_pool(k, n)).into_sorted();
            rerank(s, q, pool, k)
        }
    }
}

/// Rows per cache block in the batched f32 scan (~128 KB per block at d = 1024).
fn block_rows(dim: usize) -> usize {
    ((1 << 15) / dim.max(1)).clamp(8, 1024)
}

/// Batched f32 scan of `rows` for all queries: each cache block of rows is reused
/// by every group of queries, scored in 4-row × 3-query register tiles.
fn scan_batch_f32(s: &Storage, qs: &[&[f32]], rows: std::ops::Range<usize>, k: usize) -> Vec<TopK> {
    let mut tops: Vec<TopK> = (0..qs.len()).map(|_| TopK::new(k)).collect();
    let b = block_rows(s.dim());
    let mut start = rows.start;
    while start < rows.end {
        let end = (start + b).min(rows.end);
        let mut g = 0;
        while g + 3 <= qs.len() {
            let tri = [qs[g], qs[g + 1], qs[g + 2]];
            let mut i = start;
            while i + 4 <= end {
                let t = dot_tile([s.row(i), s.row(i + 1), s.row(i + 2), s.row(i + 3)], tri);
                for (r, vals) in t.iter().enumerate() {
                    for (j, &v) in vals.iter().enumerate() {
                        tops[g + j].push(v, i + r);
                    }
                }
                i += 4;
            }
            for i in i..end {
                for j in 0..3 {
                    tops[g + j].push(dot(s.row(i), tri[j]), i);
                }
            }
            g += 3;
        }
        for (j, q) in qs.iter().enumerate().skip(g) {
            let mut i = start;
            while i + 4 <= end {
                let r = dot4(q, [s.row(i), s.row(i + 1), s.row(i + 2), s.row(i + 3)]);
                for (t, &v) in r.iter().enumerate() {
                    tops[j].push(v, i + t);
                }
                i += 4;
            }
            for i in i..end {
                tops[j].push(dot(s.row(i), q), i);
            }
        }
        start = end;
    }
    tops
}

/// Top-k rows for each of `nq` queries stored row-major in `qs`.
pub fn search_batch(s: &Storage, qs: &[f32], nq: usize, k: usize) -> Vec<Vec<Hit>> {
    let d = s.dim();
    let n = s.len();
    if nq == 1 {
        return vec![search_one(s, qs, k)];
    }
    let queries: Vec<&[f32]> = qs.chunks_exact(d).take(nq).collect();
    if s.kind() != StorageKind::F32 {
        // Compact scans are per query; spread the queries over the pool.
        return queries.par_iter().map(|q| search_one(s, q, k)).collect();
    }
    // Batches do nq times the arithmetic per byte, so they go parallel sooner.
    if n * d * nq < parallel_cutoff() || n < 8 {
        return scan_batch_f32(s, &queries, 0..n, k)
            .into_iter()
            .map(TopK::into_sorted)
            .collect();
    }
    let step = chunk_rows(n, d);
    let merged = (0..n.div_ceil(step))
        .into_par_iter()
        .map(|c| scan_batch_f32(s, &queries, c * step..((c + 1) * step).min(n), k))
        .reduce(
            || (0..nq).map(|_| TopK::new(k)).collect(),
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    x.merge(y);
                }
                a
            },
        );
    merged.into_iter().map(TopK::into_sorted).collect()
}

/// Exact f32 scores of every row for one query (used by route scoring); parallel
/// only above [`route_parallel_cutoff`] (default [`ROUTE_PARALLEL_CUTOFF`]).
pub fn score_all(s: &Storage, q: &[f32], out: &mut [f32]) {
    let d = s.dim();
    let n = s.len();
    let m = s.matrix();
    if n * d < route_parallel_cutoff() {
        let mut i = 0;
        while i + 4 <= n {
            let r = dot4(q, [s.row(i), s.row(i + 1), s.row(i + 2), s.row(i + 3)]);
            out[i..i + 4].copy_from_slice(&r);
            i += 4;
        }
        for (j, o) in out.iter_mut().enumerate().take(n).skip(i) {
            *o = dot(&m[j * d..(j + 1) * d], q);
        }
        return;
    }
    let step = chunk_rows(n, d);
    out[..n]
        .par_chunks_mut(step)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (j, o) in chunk.iter_mut().enumerate() {
                let i = c * step + j;
                *o = dot(&m[i * d..(i + 1) * d], q);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::topk::top_k;

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
            assert!((got[0].score - dot(s.row(got[0].index), &q)).abs() < 1e-6);
        }
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
