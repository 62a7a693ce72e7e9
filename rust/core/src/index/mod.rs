//! The flat exact vector index: contiguous rows, each with an id, a label
//! (route or tool name) and a domain.
//!
//! - [`storage`]: the row-major rows and their compact (f16/int8) copies;
//! - [`scan`]: exact top-k scans over the storage, one query or a batch;
//! - `scorer`: blocks of row scores for the scans, and the certified re-rank;
//! - [`label_rows`]: per-label rows and domains, rebuilt after each write;
//! - [`interner`]: interned label and domain strings;
//! - [`threads`]: the calling thread plus helpers, for parallel scans.

pub mod interner;
pub mod label_rows;
pub mod scan;
mod scorer;
pub mod storage;
pub mod threads;

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::kernels::aligned::AlignedVec;
use crate::kernels::simd::l2_normalize;
use crate::kernels::topk::Hit;
pub use interner::Interner;
use label_rows::LabelRows;
use storage::{Storage, StorageKind};

/// Results of a search: `nq × k` row-major arrays.
#[derive(Clone, Debug, Default)]
pub struct SearchResult {
    /// Number of queries.
    pub nq: usize,
    /// Hits per query.
    pub k: usize,
    /// Scores, best first per query.
    pub scores: Vec<f32>,
    /// Ids of the hits.
    pub ids: Vec<u64>,
    /// Label codes of the hits.
    pub labels: Vec<u32>,
    /// Domain codes of the hits.
    pub domains: Vec<u32>,
}

/// A flat, exact inner-product index (cosine when `normalize` is on).
#[derive(Clone, Debug)]
pub struct FlatIndex {
    normalize: bool,
    pub(crate) storage: Storage,
    pub(crate) ids: Vec<u64>,
    pub(crate) labels: Vec<u32>,
    pub(crate) domains: Vec<u32>,
    pub(crate) label_names: Interner,
    pub(crate) domain_names: Interner,
    rows: HashMap<u64, usize>,
    /// Domain and rows of each label, rebuilt after every write.
    by_label: LabelRows,
}

/// Check that `data` holds `n` finite rows of width `dim`.
pub fn check_rows(data: &[f32], dim: usize, what: &'static str) -> Result<usize> {
    if dim == 0 {
        return Err(Error::InvalidArgument("dimension must be >= 1".into()));
    }
    if !data.len().is_multiple_of(dim) {
        return Err(Error::DimensionMismatch {
            expected: dim,
            got: data.len() % dim,
        });
    }
    // Row by row, each with a branch-free fold the compiler vectorises (a
    // `position` over every float exits early, so it stays scalar).
    let bad = |r: &[f32]| r.iter().fold(false, |b, x| b | !x.is_finite());
    if let Some(row) = data.chunks_exact(dim).position(bad) {
        return Err(Error::NonFinite { what, row });
    }
    Ok(data.len() / dim)
}

/// Queries ready to score ([`FlatIndex::prepare_queries`]): the caller's
/// slice when it is already usable as is, else an aligned copy.
pub enum Queries<'q> {
    /// The caller's queries, 64-byte aligned and not to be normalised.
    Borrowed(&'q [f32]),
    /// A 64-byte-aligned copy, normalised when the index normalises.
    Aligned(AlignedVec<f32>),
}

impl std::ops::Deref for Queries<'_> {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match self {
            Queries::Borrowed(q) => q,
            Queries::Aligned(q) => q,
        }
    }
}

impl FlatIndex {
    /// An empty index of width `dim`.
    pub fn new(dim: usize, kind: StorageKind, normalize: bool) -> Result<Self> {
        if dim == 0 {
            return Err(Error::InvalidArgument("dimension must be >= 1".into()));
        }
        Ok(FlatIndex {
            normalize,
            storage: Storage::new(dim, kind),
            ids: Vec::new(),
            labels: Vec::new(),
            domains: Vec::new(),
            label_names: Interner::default(),
            domain_names: Interner::default(),
            rows: HashMap::new(),
            by_label: LabelRows::default(),
        })
    }

    /// Row width.
    pub fn dim(&self) -> usize {
        self.storage.dim()
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// Whether vectors and queries are L2-normalised (cosine scores).
    pub fn normalize(&self) -> bool {
        self.normalize
    }
    /// Storage representation.
    pub fn kind(&self) -> StorageKind {
        self.storage.kind()
    }
    /// The underlying storage.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }
    /// Ids in row order.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }
    /// Label code of each row.
    pub fn label_codes(&self) -> &[u32] {
        &self.labels
    }
    /// Domain code of each row.
    pub fn domain_codes(&self) -> &[u32] {
        &self.domains
    }
    /// Label names by code (code 0 is "").
    pub fn label_names(&self) -> &[String] {
        self.label_names.names()
    }
    /// Domain names by code (code 0 is "").
    pub fn domain_names(&self) -> &[String] {
        self.domain_names.names()
    }
    /// Row of `id`, if present.
    pub fn row_of(&self, id: u64) -> Option<usize> {
        self.rows.get(&id).copied()
    }
    /// Code of a domain name, if any entry ever used it.
    pub fn domain_code(&self, name: &str) -> Option<u32> {
        self.domain_names.get(name)
    }

    /// Code of a label name, if any row has it.
    pub fn label_code(&self, name: &str) -> Option<u32> {
        self.label_names.get(name)
    }

    /// A normalised copy of one row (the input itself is never copied whole).
    fn prepared_row(&self, row: &[f32], buf: &mut Vec<f32>) {
        buf.clear();
        buf.extend_from_slice(row);
        if self.normalize {
            l2_normalize(buf);
        }
    }

    fn check_meta(n: usize, meta: Option<&[&str]>, what: &str) -> Result<()> {
        match meta {
            Some(m) if m.len() != n => Err(Error::InvalidArgument(format!(
                "{} {what} given for {n} vectors",
                m.len()
            ))),
            _ => Ok(()),
        }
    }

    /// Validate one add/update batch; returns its row count.
    fn check_batch(
        &self,
        ids: &[u64],
        vectors: &[f32],
        labels: Option<&[&str]>,
        domains: Option<&[&str]>,
    ) -> Result<usize> {
        let n = check_rows(vectors, self.dim(), "vectors")?;
        if ids.len() != n {
            return Err(Error::InvalidArgument(format!(
                "{} ids given for {n} vectors",
                ids.len()
            )));
        }
        Self::check_meta(n, labels, "labels")?;
        Self::check_meta(n, domains, "domains")?;
        Ok(n)
    }

    /// Add entries. Everything is validated before anything is written, so a
    /// failed call leaves the index unchanged.
    pub fn add(
        &mut self,
        ids: &[u64],
        vectors: &[f32],
        labels: Option<&[&str]>,
        domains: Option<&[&str]>,
    ) -> Result<()> {
        let n = self.check_batch(ids, vectors, labels, domains)?;
        let mut seen = std::collections::HashSet::with_capacity(n);
        for &id in ids {
            if self.rows.contains_key(&id) || !seen.insert(id) {
                return Err(Error::DuplicateId(id));
            }
        }
        self.storage.reserve(n);
        let mut buf = Vec::with_capacity(self.dim());
        for (j, &id) in ids.iter().enumerate() {
            self.rows.insert(id, self.ids.len());
            self.ids.push(id);
            self.prepared_row(&vectors[j * self.dim()..(j + 1) * self.dim()], &mut buf);
            self.storage.push(&buf);
            self.labels
                .push(labels.map_or(0, |l| self.label_names.intern(l[j])));
            self.domains
                .push(domains.map_or(0, |d| self.domain_names.intern(d[j])));
        }
        self.refresh_routes();
        Ok(())
    }

    /// Rebuild the per-label facts (O(rows), after each write).
    fn refresh_routes(&mut self) {
        self.by_label = LabelRows::build(self.label_names().len(), &self.labels, &self.domains);
    }

    /// True when no label has more than one row (a tool catalog, say).
    pub fn one_row_per_label(&self) -> bool {
        self.by_label.one_row_per_label()
    }

    /// Starts of the runs of equal label codes in row order, then the row
    /// count (a route added in one call is one run).
    pub fn label_runs(&self) -> &[u32] {
        self.by_label.runs()
    }

    /// Rows of label code `code`, ascending (empty for an unknown code).
    pub fn route_rows(&self, code: usize) -> &[u32] {
        self.by_label.rows(code)
    }

    /// Domain code of each label code (that of its last row; 0 without rows).
    pub fn route_domains(&self) -> &[u32] {
        self.by_label.domains()
    }

    /// Replace the vectors (and, when given, labels/domains) of existing ids.
    pub fn update(
        &mut self,
        ids: &[u64],
        vectors: &[f32],
        labels: Option<&[&str]>,
        domains: Option<&[&str]>,
    ) -> Result<()> {
        self.check_batch(ids, vectors, labels, domains)?;
        let rows: Vec<usize> = ids
            .iter()
            .map(|&id| self.row_of(id).ok_or(Error::UnknownId(id)))
            .collect::<Result<_>>()?;
        let mut buf = Vec::with_capacity(self.dim());
        for (j, &r) in rows.iter().enumerate() {
            self.prepared_row(&vectors[j * self.dim()..(j + 1) * self.dim()], &mut buf);
            self.storage.set(r, &buf);
            if let Some(l) = labels {
                self.labels[r] = self.label_names.intern(l[j]);
            }
            if let Some(d) = domains {
                self.domains[r] = self.domain_names.intern(d[j]);
            }
        }
        self.refresh_routes();
        Ok(())
    }

    /// Remove entries; every id must exist (checked before anything changes).
    pub fn remove(&mut self, ids: &[u64]) -> Result<()> {
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        for &id in ids {
            if !self.rows.contains_key(&id) {
                return Err(Error::UnknownId(id));
            }
            if !seen.insert(id) {
                return Err(Error::DuplicateId(id));
            }
        }
        for &id in ids {
            let r = self.rows.remove(&id).expect("checked above");
            let last = self.ids.len() - 1;
            self.storage.swap_remove(r);
            self.ids.swap_remove(r);
            self.labels.swap_remove(r);
            self.domains.swap_remove(r);
            if r != last {
                self.rows.insert(self.ids[r], r);
            }
        }
        self.refresh_routes();
        Ok(())
    }

    /// Validate `queries` and return them ready to score: normalised when the
    /// index normalises, and on a 64-byte boundary (copied once unless they
    /// already are and need no normalising). The scans re-read the query from
    /// L1 for every row, and a query that is not 64-byte aligned splits every
    /// 64-byte load across two lines: the AVX-512 f32 scan of 1,000 × 1024
    /// rows took 52 µs with a 16-byte-aligned query and 44 µs with an aligned
    /// one (Zen 4, 2026-11-26).
    pub fn prepare_queries<'q>(&self, queries: &'q [f32]) -> Result<(usize, Queries<'q>)> {
        let nq = check_rows(queries, self.dim(), "queries")?;
        if nq == 0 {
            return Err(Error::InvalidArgument("no query given".into()));
        }
        if !self.normalize && (queries.as_ptr() as usize).is_multiple_of(64) {
            return Ok((nq, Queries::Borrowed(queries)));
        }
        let mut q = AlignedVec::new();
        q.extend_from_slice(queries);
        if self.normalize {
            q.chunks_exact_mut(self.dim()).for_each(l2_normalize);
        }
        Ok((nq, Queries::Aligned(q)))
    }

    /// Check `k` against the index size.
    pub fn check_k(&self, k: usize) -> Result<()> {
        if self.is_empty() {
            return Err(Error::EmptyIndex);
        }
        if k == 0 || k > self.len() {
            return Err(Error::BadK { k, n: self.len() });
        }
        Ok(())
    }

    /// Top-k entries for each query (`queries` is `nq × dim`, row-major).
    pub fn search(&self, queries: &[f32], k: usize) -> Result<SearchResult> {
        self.check_k(k)?;
        let (nq, q) = self.prepare_queries(queries)?;
        let hits = scan::search_batch(&self.storage, &q, nq, k);
        Ok(self.collect(hits, k))
    }

    fn collect(&self, hits: Vec<Vec<Hit>>, k: usize) -> SearchResult {
        let nq = hits.len();
        let mut r = SearchResult {
            nq,
            k,
            scores: Vec::with_capacity(nq * k),
            ids: Vec::with_capacity(nq * k),
            labels: Vec::with_capacity(nq * k),
            domains: Vec::with_capacity(nq * k),
        };
        for h in hits.iter().flatten() {
            r.scores.push(h.score);
            r.ids.push(self.ids[h.index]);
            r.labels.push(self.labels[h.index]);
            r.domains.push(self.domains[h.index]);
        }
        r
    }

    /// Exact score of every row for one query, in row order.
    pub fn score_all(&self, query: &[f32]) -> Result<Vec<f32>> {
        if self.is_empty() {
            return Err(Error::EmptyIndex);
        }
        let (nq, q) = self.prepare_queries(query)?;
        if nq != 1 {
            return Err(Error::InvalidArgument(format!(
                "score_all takes one query, got {nq}"
            )));
        }
        let mut out = vec![0f32; self.len()];
        scan::score_all(&self.storage, &q, &mut out);
        Ok(out)
    }

    /// [`Self::score_all`] of each query stored row-major in `queries`: `nq × len` scores,
    /// row-major, with the table read once per tile for all of them
    /// ([`scan::score_all_batch`]).
    pub fn score_all_batch(&self, queries: &[f32]) -> Result<Vec<f32>> {
        if self.is_empty() {
            return Err(Error::EmptyIndex);
        }
        let (nq, q) = self.prepare_queries(queries)?;
        let mut out = vec![0f32; nq * self.len()];
        scan::score_all_batch(&self.storage, &q, nq, &mut out);
        Ok(out)
    }

    /// Rebuild from parts read from disk (used by `persist`).
    pub(crate) fn from_parts(
        storage: Storage,
        normalize: bool,
        ids: Vec<u64>,
        labels: Vec<u32>,
        domains: Vec<u32>,
        label_names: Interner,
        domain_names: Interner,
    ) -> Result<Self> {
        let rows: HashMap<u64, usize> = ids.iter().enumerate().map(|(r, &id)| (id, r)).collect();
        if rows.len() != ids.len() {
            return Err(Error::InvalidArgument(
                "duplicate ids in stored index".into(),
            ));
        }
        let mut ix = FlatIndex {
            normalize,
            storage,
            ids,
            labels,
            domains,
            label_names,
            domain_names,
            rows,
            by_label: LabelRows::default(),
        };
        ix.refresh_routes();
        Ok(ix)
    }
}
