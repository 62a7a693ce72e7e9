//! BM25 scoring of queries against a [`LexicalIndex`].
//!
//! A query's distinct tokens are looked up (unknown and stop words find no
//! postings); document `d` scores
//! `Σ idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len(d) / avgdl))` over
//! them, with `idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))` (always > 0), so
//! a document that shares no token with the query scores 0. A label scores
//! the best of its documents.
//!
//! Only the postings of the query's terms are read. The per-document
//! accumulator is a buffer kept per thread and reset entry by entry, so a
//! query costs no allocation proportional to the index.

use std::cell::RefCell;

use std::hash::BuildHasher;

use rayon::prelude::*;

use super::{for_each_token, LexicalIndex, NO_DOC};
use crate::error::{Error, Result};
use crate::kernels::simd::prefetch;

/// Postings of each query term prefetched before any is accumulated (two cache lines).
const PREFETCH_POSTINGS: usize = 32;

/// Batches of at least this many queries are spread over the rayon pool.
const PARALLEL_QUERIES: usize = 32;

/// Per-thread buffers of a query.
#[derive(Default)]
pub(super) struct Scratch {
    /// Score per document: all zero between queries.
    pub(super) acc: Vec<f32>,
    /// Documents whose `acc` entry is non-zero.
    pub(super) touched: Vec<u32>,
    /// The query's term ids.
    pub(super) terms: Vec<u32>,
    /// Hashes of the query's non-stop tokens that no document holds.
    pub(super) unknown: Vec<u64>,
    /// Per query term, its next posting ([`LexicalIndex::labels_windowed`]).
    pub(super) cursor: Vec<usize>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Run `f` with this thread's scratch, whose `acc` holds at least `n` zeros.
fn with_scratch<R>(n: usize, f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => {
            if s.acc.len() < n {
                s.acc.resize(n, 0.0);
            }
            // A query cut short (a panic) may have left entries behind.
            if !s.touched.is_empty() {
                s.acc.iter_mut().for_each(|a| *a = 0.0);
                s.touched.clear();
            }
            f(&mut s)
        }
        Err(_) => f(&mut Scratch {
            acc: vec![0.0; n],
            ..Scratch::default()
        }),
    })
}

impl LexicalIndex {
    /// The sorted, distinct ids of the indexed terms of `query`, in `out`;
    /// with `unknown`, the sorted, distinct hashes of its other non-stop tokens.
    fn query_terms(&self, query: &str, out: &mut Vec<u32>, mut unknown: Option<&mut Vec<u64>>) {
        out.clear();
        if let Some(u) = unknown.as_deref_mut() {
            u.clear();
        }
        let stem = self.stemmer.terms();
        for_each_token(query, |t| {
            stem.with_term(t, |t| match self.terms.get(t) {
                Some(&id) => out.push(id),
                None => {
                    if let Some(u) = unknown.as_deref_mut() {
                        if !self.stop.contains(t) {
                            u.push(rustc_hash::FxBuildHasher.hash_one(t));
                        }
                    }
                }
            })
        });
        out.sort_unstable();
        out.dedup();
        if let Some(u) = unknown {
            u.sort_unstable();
            u.dedup();
        }
    }

    /// Add the BM25 weights of `terms` to `acc`; with `LIST`, the documents
    /// they touch first go to `touched` (a branch per posting: on 10k-tool
    /// catalogs, listing every posting and skipping repeats later was slower).
    pub(super) fn accumulate<const LIST: bool>(
        &self,
        terms: &[u32],
        acc: &mut [f32],
        touched: &mut Vec<u32>,
    ) {
        // The head of every term's postings first, so that their cache misses overlap.
        for &t in terms {
            let (s, e) = (
                self.offsets[t as usize] as usize,
                self.offsets[t as usize + 1] as usize,
            );
            let head = e.min(s + PREFETCH_POSTINGS);
            prefetch(&self.post_doc[s..head]);
            prefetch(&self.weight[s..head]);
        }
        for &t in terms {
            let (s, e) = (
                self.offsets[t as usize] as usize,
                self.offsets[t as usize + 1] as usize,
            );
            for (&d, &w) in self.post_doc[s..e].iter().zip(&self.weight[s..e]) {
                let a = &mut acc[d as usize];
                if LIST && *a == 0.0 {
                    touched.push(d);
                }
                *a += w;
            }
        }
    }

    /// BM25 of `query` against every document, in document order.
    pub fn score_docs(&self, query: &str) -> Vec<f32> {
        let mut acc = vec![0.0; self.len()];
        let mut terms = Vec::new();
        self.query_terms(query, &mut terms, None);
        self.accumulate::<false>(&terms, &mut acc, &mut Vec::new());
        acc
    }

    /// Per label `0..n_labels`: the best BM25 of `query` over that label's
    /// documents, 0 where none shares a token with it. `n_labels` must exceed
    /// every document's label.
    pub fn score_labels(&self, query: &str, n_labels: usize) -> Result<Vec<f32>> {
        self.check_labels(n_labels)?;
        let mut out = vec![0.0; n_labels];
        with_scratch(self.len(), |s| self.labels_into(query, &[], &mut out, s));
        Ok(out)
    }

    /// [`LexicalIndex::score_labels`] for each query: a row-major
    /// `[queries.len(), n_labels]` array. `exclude_doc[i]`, when given, is a
    /// document left out of query `i`'s label maxima ([`NO_DOC`]: none), for
    /// leave-one-out calibration; the corpus statistics (idf, average length)
    /// still count it. Large batches run on the rayon pool.
    pub fn score_labels_batch<S: AsRef<str> + Sync>(
        &self,
        queries: &[S],
        n_labels: usize,
        exclude_doc: Option<&[u32]>,
    ) -> Result<Vec<f32>> {
        self.check_labels(n_labels)?;
        if let Some(ex) = exclude_doc {
            if ex.len() != queries.len() {
                return Err(Error::InvalidArgument(format!(
                    "exclude_doc has {} entries for {} queries",
                    ex.len(),
                    queries.len()
                )));
            }
            if let Some(&d) = ex
                .iter()
                .find(|&&d| d != NO_DOC && d as usize >= self.len())
            {
                return Err(Error::InvalidArgument(format!(
                    "exclude_doc names document {d}; the index holds {}",
                    self.len()
                )));
            }
        }
        let mut out = vec![0.0; queries.len() * n_labels];
        if n_labels == 0 {
            return Ok(out);
        }
        let excluded = |i: usize| match exclude_doc.map(|ex| &ex[i]) {
            Some(d) if *d != NO_DOC => std::slice::from_ref(d),
            _ => &[][..],
        };
        let one = |(i, row): (usize, &mut [f32])| {
            with_scratch(self.len(), |s| {
                self.labels_into(queries[i].as_ref(), excluded(i), row, s)
            })
        };
        if queries.len() >= PARALLEL_QUERIES && rayon::current_num_threads() > 1 {
            out.par_chunks_mut(n_labels).enumerate().for_each(one);
        } else {
            out.chunks_mut(n_labels).enumerate().for_each(one);
        }
        Ok(out)
    }

    /// How much of `query` the documents vouch for, in `[0, 1]`: the
    /// idf-weighted share of its distinct non-stop tokens that some document
    /// holds, a token none holds weighing as a term of document frequency 0
    /// (0 when the query has no such token). Documents in `exclude` do not
    /// count as holding a token (leave-one-out calibration).
    ///
    /// A query in another language than the documents shares a word or two
    /// with them by accident; scaling its label scores by this keeps those
    /// from moving labels as a real match would.
    pub fn coverage(&self, query: &str, exclude: &[u32]) -> f32 {
        let (mut terms, mut unknown) = (Vec::new(), Vec::new());
        self.query_terms(query, &mut terms, Some(&mut unknown));
        self.coverage_of(&terms, unknown.len(), &doc_set(exclude))
    }

    /// [`LexicalIndex::score_labels`] and [`LexicalIndex::coverage`] of
    /// `query` from one tokenization (the routing step's lexical pass).
    pub fn score_labels_covered(&self, query: &str, n_labels: usize) -> Result<(Vec<f32>, f32)> {
        self.check_labels(n_labels)?;
        let mut out = vec![0.0; n_labels];
        let cover = with_scratch(self.len(), |s| self.covered_into(query, &[], &mut out, s));
        Ok((out, cover))
    }

    /// What each label's cosine gains in hybrid scoring: `weight` times its
    /// best BM25 over the query's best, times the query's coverage, in
    /// `[0, weight]`; `None` when `weight` is 0 or no label scores above 0
    /// (nothing to add). One pass where Python took three (scores, max, scale).
    ///
    /// The vector starts with `lead` zeros, then label `l` at `lead + l`: a
    /// routing index whose label codes are these labels shifted by `lead` (its
    /// code 0 is the empty label) takes it as its bias without a copy.
    pub fn label_bias(
        &self,
        query: &str,
        n_labels: usize,
        weight: f64,
        lead: usize,
    ) -> Result<Option<Vec<f32>>> {
        self.check_labels(n_labels)?;
        let mut out = vec![0.0; lead + n_labels];
        let s = &mut out[lead..];
        let cover = with_scratch(self.len(), |sc| self.covered_into(query, &[], s, sc));
        let top = lane_max(s);
        if weight == 0.0 || top <= 0.0 {
            return Ok(None);
        }
        // The factor in f64, then f32: what `s *= np.float32(weight * cover / top)` gave.
        let f = (weight * cover as f64 / top as f64) as f32;
        s.iter_mut().for_each(|x| *x *= f);
        Ok(Some(out))
    }

    /// [`LexicalIndex::score_labels_covered`] of each query, with the
    /// documents `excluded[i]` (any order) left out of query `i`'s label
    /// maxima and coverage (leave-one-out calibration with near-duplicates;
    /// idf and average length still count them). Returns the row-major
    /// `[queries.len(), n_labels]` scores and one coverage per query. Large
    /// batches run on the rayon pool.
    pub fn score_labels_covered_batch<S: AsRef<str> + Sync>(
        &self,
        queries: &[S],
        n_labels: usize,
        excluded: Option<&[Vec<u32>]>,
    ) -> Result<(Vec<f32>, Vec<f32>)> {
        self.check_labels(n_labels)?;
        let sets: Vec<Vec<u32>> = match excluded {
            Some(ex) if ex.len() != queries.len() => {
                return Err(Error::InvalidArgument(format!(
                    "excluded has {} entries for {} queries",
                    ex.len(),
                    queries.len()
                )))
            }
            Some(ex) => ex
                .iter()
                .map(|e| {
                    if let Some(&d) = e.iter().find(|&&d| d as usize >= self.len()) {
                        return Err(Error::InvalidArgument(format!(
                            "excluded names document {d}; the index holds {}",
                            self.len()
                        )));
                    }
                    Ok(doc_set(e))
                })
                .collect::<Result<_>>()?,
            None => vec![Vec::new(); queries.len()],
        };
        let mut out = vec![0.0; queries.len() * n_labels];
        let mut cover = vec![0.0; queries.len()];
        let one = |(i, (row, c)): (usize, (&mut [f32], &mut f32))| {
            *c = with_scratch(self.len(), |s| {
                self.covered_into(queries[i].as_ref(), &sets[i], row, s)
            })
        };
        if n_labels == 0 {
            // Only an empty index has no labels, and it covers nothing.
            return Ok((out, cover));
        }
        if queries.len() >= PARALLEL_QUERIES && rayon::current_num_threads() > 1 {
            out.par_chunks_mut(n_labels)
                .zip(cover.par_iter_mut())
                .enumerate()
                .for_each(one);
        } else {
            out.chunks_mut(n_labels)
                .zip(cover.iter_mut())
                .enumerate()
                .for_each(one);
        }
        Ok((out, cover))
    }

    /// Label maxima (into `out`, zeros) and coverage of `query`, leaving the
    /// sorted documents `exclude` out, from one tokenization.
    fn covered_into(&self, query: &str, exclude: &[u32], out: &mut [f32], s: &mut Scratch) -> f32 {
        self.query_terms(query, &mut s.terms, Some(&mut s.unknown));
        self.labels_of_terms(exclude, out, s);
        self.coverage_of(&s.terms, s.unknown.len(), exclude)
    }

    /// The coverage of a query whose indexed terms are `known` and which has
    /// `n_unknown` other distinct non-stop tokens; `exclude` sorted and distinct.
    fn coverage_of(&self, known: &[u32], n_unknown: usize, exclude: &[u32]) -> f32 {
        let n = self.len() as f64;
        let idf = |df: f64| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let (mut held, mut missed) = (0f64, n_unknown as f64 * idf(0.0));
        for &t in known {
            let (s, e) = (
                self.offsets[t as usize] as usize,
                self.offsets[t as usize + 1] as usize,
            );
            let docs = &self.post_doc[s..e]; // sorted by document
            let gone = exclude
                .iter()
                .filter(|d| docs.binary_search(d).is_ok())
                .count();
            let df = (e - s - gone) as f64;
            if df > 0.0 {
                held += idf(df);
            } else {
                missed += idf(0.0);
            }
        }
        if held + missed > 0.0 {
            (held / (held + missed)) as f32
        } else {
            0.0
        }
    }

    /// Label maxima of `query` into `out` (zeros), leaving the sorted documents `exclude` out.
    fn labels_into(&self, query: &str, exclude: &[u32], out: &mut [f32], s: &mut Scratch) {
        self.query_terms(query, &mut s.terms, None);
        self.labels_of_terms(exclude, out, s);
    }
}

/// The largest of `v` and 0, in eight lanes so that it vectorises (`f32::max`'s
/// NaN rule kept the fold scalar: 2 µs over 10,000 tool labels; scores are NaN-free).
fn lane_max(v: &[f32]) -> f32 {
    let mut m = [0f32; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for l in 0..8 {
            m[l] = if c[l] > m[l] { c[l] } else { m[l] };
        }
    }
    chunks
        .remainder()
        .iter()
        .chain(&m)
        .fold(0f32, |a, &x| if x > a { x } else { a })
}

/// Document ids sorted and distinct (a repeated id must not count twice).
fn doc_set(ids: &[u32]) -> Vec<u32> {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}
