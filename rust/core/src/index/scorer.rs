//! Scoring rows for the scans of [`crate::index::scan`]: blocks of scores (f32,
//! f16, int8 estimates) through the kernels, per-query top-k over them, the
//! cache-blocked batch scans, and the exact re-rank that finishes a compact
//! scan with a certified answer.

use crate::index::storage::{Storage, StorageKind};
use crate::kernels::simd::{dot, dot4, dot_f16, dot_rows, dot_rows_x4, dot_tile};
use crate::kernels::simd_int8::{dot_i8_rows, dot_i8_rows_x4, QueryI8, BLOCK_ROWS};
use crate::kernels::topk::{Hit, TopK};

/// Candidate pool re-ranked exactly after a compact scan.
pub fn rerank_pool(k: usize, n: usize) -> usize {
    (4 * k).max(k + 32).min(n)
}

/// Approximate or exact score of row `i` for the storage's scan representation.
pub(crate) struct Scorer<'a> {
    pub(crate) s: &'a Storage,
    q: &'a [f32],
    q8: Option<QueryI8>,
}

impl<'a> Scorer<'a> {
    pub(crate) fn new(s: &'a Storage, q: &'a [f32]) -> Self {
        let q8 = (s.kind() == StorageKind::Int8).then(|| QueryI8::new(q, s.centre()));
        Scorer { s, q, q8 }
    }

    /// Scores (int8: estimates) of rows `first..first + out.len()`.
    pub(crate) fn block(&self, first: usize, out: &mut [f32]) {
        let (d, m) = (self.s.dim(), out.len());
        match (self.s.kind(), &self.q8) {
            (StorageKind::F32, _) => {
                dot_rows(&self.s.matrix()[first * d..(first + m) * d], self.q, out)
            }
            (StorageKind::F16, _) => {
                for (j, o) in out.iter_mut().enumerate() {
                    let i = first + j;
                    *o = dot_f16(&self.s.f16s[i * d..(i + 1) * d], self.q);
                }
            }
            (StorageKind::Int8, Some(q8)) => {
                let cols = self.s.quant();
                let rows = first..first + m;
                dot_i8_rows(
                    &self.s.codes()[first * d..(first + m) * d],
                    d,
                    q8,
                    &cols.sum[rows],
                    out,
                );
                self.estimates(q8, first, out);
            }
            (StorageKind::Int8, None) => unreachable!("int8 scorers quantize the query"),
        }
    }

    /// Kernel outputs of rows `first..first + out.len()` → their estimates of `x·q`.
    fn estimates(&self, q8: &QueryI8, first: usize, out: &mut [f32]) {
        let scale = &self.s.quant().scale[first..first + out.len()];
        for (o, &sc) in out.iter_mut().zip(scale) {
            *o = q8.estimate(*o, sc);
        }
    }

    /// Scores (int8: estimates) of rows `firsts[r]..firsts[r] + m` for the
    /// four segments `r`, read side by side (f32 and int8 only).
    fn block4(&self, firsts: [usize; 4], m: usize, bufs: &mut [[f32; BLOCK_ROWS]; 4]) {
        let d = self.s.dim();
        let [b0, b1, b2, b3] = bufs;
        let outs = [&mut b0[..m], &mut b1[..m], &mut b2[..m], &mut b3[..m]];
        match &self.q8 {
            None => {
                let rows = self.s.matrix();
                dot_rows_x4(firsts.map(|f| &rows[f * d..(f + m) * d]), self.q, outs);
            }
            Some(q8) => {
                let (codes, cols) = (self.s.codes(), self.s.quant());
                let segs = firsts.map(|f| &codes[f * d..(f + m) * d]);
                dot_i8_rows_x4(segs, d, q8, firsts.map(|f| &cols.sum[f..f + m]), outs);
                for (buf, f) in bufs.iter_mut().zip(firsts) {
                    self.estimates(q8, f, &mut buf[..m]);
                }
            }
        }
    }

    /// Top-k of `rows` by score: blocks of scores on the stack, then a top-k
    /// pass that skips every 16 scores whose maximum cannot enter. Long runs
    /// of f32 or int8 rows are read as four segments side by side (four
    /// memory streams) into one top-k.
    pub(crate) fn scan(&self, rows: std::ops::Range<usize>, k: usize) -> TopK {
        let len = rows.len();
        if len < 4 * BLOCK_ROWS || self.s.kind() == StorageKind::F16 {
            return self.scan_run(rows, k);
        }
        let per = len / 4;
        let starts = [0, 1, 2, 3].map(|r| rows.start + r * per);
        // One collector for the four segments: its floor rises four times as fast.
        let mut t = self.scan_run(rows.start + 4 * per..rows.end, k);
        let mut bufs = [[0f32; BLOCK_ROWS]; 4];
        let mut b = 0;
        while b < per {
            let m = (per - b).min(BLOCK_ROWS);
            self.block4(starts.map(|x| x + b), m, &mut bufs);
            for (buf, s) in bufs.iter().zip(starts) {
                t.extend_from(&buf[..m], s + b);
            }
            b += m;
        }
        t
    }

    /// [`Self::scan`] over one run of rows, block after block.
    fn scan_run(&self, rows: std::ops::Range<usize>, k: usize) -> TopK {
        let mut t = TopK::new(k);
        let mut buf = [0f32; BLOCK_ROWS];
        let mut i = rows.start;
        while i < rows.end {
            let m = (rows.end - i).min(BLOCK_ROWS);
            self.block(i, &mut buf[..m]);
            t.extend_from(&buf[..m], i);
            i += m;
        }
        t
    }

    /// Rows of `rows` whose estimate plus `slack` reaches `floor`.
    fn reaching(&self, rows: std::ops::Range<usize>, floor: f32, slack: f32) -> Vec<usize> {
        let mut hits = Vec::new();
        let mut buf = [0f32; BLOCK_ROWS];
        let mut i = rows.start;
        while i < rows.end {
            let m = (rows.end - i).min(BLOCK_ROWS);
            self.block(i, &mut buf[..m]);
            hits.extend((0..m).filter(|&j| buf[j] + slack >= floor).map(|j| i + j));
            i += m;
        }
        hits
    }
}

/// Exact f32 scores of `rows` (any order), top-k.
fn rerank(s: &Storage, q: &[f32], mut rows: Vec<usize>, k: usize) -> Vec<Hit> {
    rows.sort_unstable();
    for &i in &rows {
        crate::kernels::simd::prefetch(s.row(i));
    }
    let mut t = TopK::new(k);
    for i in rows {
        t.push(dot(s.row(i), q), i);
    }
    t.into_sorted()
}

/// Exact top-k from a compact scan's pool of best estimates.
///
/// The pool is re-ranked in f32. For int8 rows the answer is then certified: a
/// row outside the pool has an estimate at most the pool's last, so its exact
/// score is at most that plus the largest error bound. When that could still
/// reach the k-th exact score, every row that can is re-ranked as well (a
/// second pass; random unit vectors never needed it on 64 queries at
/// 10,000 × 384). f16 rows keep the plain pool re-rank.
pub(crate) fn finish_compact(sc: &Scorer, pool: TopK, k: usize) -> Vec<Hit> {
    let s = sc.s;
    let pool = pool.into_sorted();
    let pool_floor = pool.last().map_or(f32::NEG_INFINITY, |h| h.score);
    let complete = pool.len() == s.len();
    let hits = rerank(s, sc.q, pool.into_iter().map(|h| h.index).collect(), k);
    let Some(q8) = &sc.q8 else { return hits };
    let (err, norm_hat) = s.quant().max_err_norm();
    let slack = q8.bound(err, norm_hat);
    let kth = hits[hits.len() - 1].score;
    if complete || pool_floor + slack < kth {
        return hits;
    }
    rerank(s, sc.q, sc.reaching(0..s.len(), kth, slack), k)
}

/// Compact scan of `rows` for a batch: each block of rows is scored for every
/// query while it sits in L1/L2 (256 int8 rows of 384 are 96 KB).
pub(crate) fn scan_batch_compact(
    scs: &[Scorer],
    rows: std::ops::Range<usize>,
    k: usize,
) -> Vec<TopK> {
    let mut tops: Vec<TopK> = scs.iter().map(|_| TopK::new(k)).collect();
    let mut buf = [0f32; BLOCK_ROWS];
    let mut i = rows.start;
    while i < rows.end {
        let m = (rows.end - i).min(BLOCK_ROWS);
        for (sc, t) in scs.iter().zip(tops.iter_mut()) {
            sc.block(i, &mut buf[..m]);
            t.extend_from(&buf[..m], i);
        }
        i += m;
    }
    tops
}

/// Rows per cache block in the batched f32 scan (~128 KB per block at d = 1024).
fn block_rows(dim: usize) -> usize {
    ((1 << 15) / dim.max(1)).clamp(8, 1024)
}

/// Batched f32 scan of `rows` for all queries: each cache block of rows is reused
/// by every group of queries, scored in 4-row × 3-query register tiles.
pub(crate) fn scan_batch_f32(
    s: &Storage,
    qs: &[&[f32]],
    rows: std::ops::Range<usize>,
    k: usize,
) -> Vec<TopK> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::topk::top_k;

    #[test]
    fn int8_answer_is_certified_when_the_pool_cannot_decide() {
        // 400 rows whose exact scores differ by ~1e-4 while their other
        // coordinates are large: the int8 error (~1e-3) hides the order, so the
        // pool of 37 cannot prove the top 5 and the second pass must find them.
        let d = 48;
        let mut rnd = crate::testing::uniform(77);
        let mut s = Storage::new(d, StorageKind::Int8);
        for _ in 0..400 {
            let mut v: Vec<f32> = (0..d).map(|_| rnd()).collect();
            v[0] = 0.5 + 1e-4 * rnd();
            s.push(&v);
        }
        let mut q = vec![0f32; d];
        q[0] = 1.0;
        let sc = Scorer::new(&s, &q);
        let pool = sc.scan(0..400, rerank_pool(5, 400)).into_sorted();
        let kth = rerank(&s, &q, pool.iter().map(|h| h.index).collect(), 5)[4].score;
        let (err, nh) = s.quant().max_err_norm();
        let slack = sc.q8.as_ref().unwrap().bound(err, nh);
        assert!(
            pool.last().unwrap().score + slack >= kth,
            "the pool alone decides: no second pass tested"
        );
        let got: Vec<usize> = crate::index::scan::search_one(&s, &q, 5)
            .iter()
            .map(|h| h.index)
            .collect();
        assert_eq!(got, {
            let exact: Vec<f32> = (0..400).map(|i| dot(s.row(i), &q)).collect();
            top_k(&exact, 5).iter().map(|h| h.index).collect::<Vec<_>>()
        });
    }
}
