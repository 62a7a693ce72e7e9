//! Label maxima of a query's BM25 scores ([`LexicalIndex::labels_of_terms`]): a label scores
//! the best of its documents, read sparsely from the documents a query touched or, when its
//! postings cover a share of the index, densely one window of documents at a time.

use super::score::Scratch;
use super::LexicalIndex;

/// Documents per window of the dense path (a 16 KB accumulator, in L1).
const WINDOW: usize = 4096;

/// A query whose postings number at least `len() / DENSE_LONG_RUNS` is
/// scored densely ([`LexicalIndex::labels_into`]) when labels come in long
/// runs (routes: CLINC150 150 × 100, 8.0 → 5.9 µs at 8, 5.2 µs at 16, 8.1 →
/// 7.3 µs at 16 and 8.9 µs at 64 in another run), at `len() / DENSE_SHORT_RUNS`
/// when most runs are short (10k MetaTool-like tools, one document each:
/// 16.2 → 14.5 µs at 2 and 4, 17.1 µs at 16); measured interleaved in one process.
const DENSE_LONG_RUNS: usize = 16;
/// See [`DENSE_LONG_RUNS`].
const DENSE_SHORT_RUNS: usize = 4;

impl LexicalIndex {
    /// Label maxima of the terms in `s.terms` into `out` (zeros), leaving the
    /// sorted documents `exclude` out.
    ///
    /// Sparse: the documents touched are listed as they are first scored.
    /// Dense, when the query's postings reach a share of the documents
    /// ([`DENSE_LONG_RUNS`]): every document is scored without the list (whose branch
    /// mispredicts when most documents are hit), then the label maxima are
    /// read off the accumulator by runs of equal labels.
    pub(super) fn labels_of_terms(&self, exclude: &[u32], out: &mut [f32], s: &mut Scratch) {
        let Scratch {
            acc,
            touched,
            terms,
            cursor,
            ..
        } = s;
        if self.identity && exclude.is_empty() {
            // One document per label, in order: each label's best is its document's score.
            self.accumulate::<false>(terms, out, touched);
            return;
        }
        let postings: usize = terms
            .iter()
            .map(|&t| (self.offsets[t as usize + 1] - self.offsets[t as usize]) as usize)
            .sum();
        let short_runs = (self.runs.len() - 1) * 4 > self.len();
        let share = if short_runs {
            DENSE_SHORT_RUNS
        } else {
            DENSE_LONG_RUNS
        };
        if postings * share >= self.len() {
            self.labels_windowed(
                terms,
                exclude,
                out,
                &mut acc[..WINDOW.min(self.len())],
                cursor,
            );
            return;
        }
        self.accumulate::<true>(terms, acc, touched);
        for &d in touched.iter() {
            let v = std::mem::take(&mut acc[d as usize]);
            let o = &mut out[self.doc_label[d as usize] as usize];
            if v > *o && exclude.binary_search(&d).is_err() {
                *o = v;
            }
        }
        touched.clear();
    }

    /// The dense path of [`Self::labels_of_terms`], one window of documents at a
    /// time: each term's postings in the window are added into `acc` (one
    /// window long, so it stays in L1 however large the index, where a
    /// whole-index accumulator came from DRAM after ONNX Runtime ran: 40 µs
    /// for CLINC150's 15,000 exemplars), then the window's label maxima, then
    /// the window is zeroed. `cursor`: per term, its next posting.
    fn labels_windowed(
        &self,
        terms: &[u32],
        exclude: &[u32],
        out: &mut [f32],
        acc: &mut [f32],
        cursor: &mut Vec<usize>,
    ) {
        cursor.clear();
        cursor.extend(terms.iter().map(|&t| self.offsets[t as usize] as usize));
        let mut first = 0;
        while first < self.len() {
            let end = (first + acc.len()).min(self.len());
            let win = &mut acc[..end - first];
            for (c, &t) in cursor.iter_mut().zip(terms) {
                let stop = self.offsets[t as usize + 1] as usize;
                let docs = &self.post_doc[*c..stop];
                let n = docs.partition_point(|&d| (d as usize) < end);
                for (&d, &w) in docs[..n].iter().zip(&self.weight[*c..*c + n]) {
                    win[d as usize - first] += w;
                }
                *c += n;
            }
            let lo = exclude.partition_point(|&d| (d as usize) < first);
            for &d in exclude[lo..].iter().take_while(|&&d| (d as usize) < end) {
                win[d as usize - first] = 0.0;
            }
            self.max_by_run(win, first, out);
            win.fill(0.0);
            first = end;
        }
    }

    /// `out[label] = max(out[label], acc[d - first])` over the documents
    /// `first..first + acc.len()`: long runs of one label by a vectorised
    /// maximum, short ones document by document.
    fn max_by_run(&self, acc: &[f32], first: usize, out: &mut [f32]) {
        let end = first + acc.len();
        if (self.runs.len() - 1) * 4 > self.len() {
            for (&a, &l) in acc.iter().zip(&self.doc_label[first..end]) {
                let o = &mut out[l as usize];
                *o = if a > *o { a } else { *o };
            }
            return;
        }
        let r0 = self.runs.partition_point(|&r| r as usize <= first) - 1;
        for w in self.runs[r0..].windows(2) {
            let (s, e) = ((w[0] as usize).max(first), (w[1] as usize).min(end));
            if s >= e {
                break;
            }
            let mut m = [0f32; 8];
            let mut chunks = acc[s - first..e - first].chunks_exact(8);
            for c in &mut chunks {
                for k in 0..8 {
                    m[k] = if c[k] > m[k] { c[k] } else { m[k] };
                }
            }
            let m = chunks
                .remainder()
                .iter()
                .chain(&m)
                .fold(0f32, |x, &y| x.max(y));
            let o = &mut out[self.doc_label[s] as usize];
            if m > *o {
                *o = m;
            }
        }
    }
}
