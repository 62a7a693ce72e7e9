//! The lexical (BM25) index that runs next to the dense one: it gives
//! identifiers, product and tool names the weight a small embedding model blurs.
//!
//! - [`tokenize`]: the word tokenizer (accent folding, runs with their
//!   `_ - .`/camelCase parts, CJK unigrams and bigrams);
//! - [`stem`]: the optional Snowball stemmer that turns tokens into terms;
//! - [`score`]: BM25 per document and the best document per label, one query
//!   or a batch, with a document left out per query (leave-one-out calibration).
//!
//! Files: [`crate::persist::lexical`].
//!
//! # Layout
//! Terms map to dense ids (an `FxHashMap`); the postings of all terms are two
//! contiguous arrays (document id `u32`, term frequency `u16`, saturating) cut
//! by one offset per term; each document has its length and its label. The
//! BM25 weight of each posting (its term's idf and its document's length norm
//! folded in) is derived after every [`LexicalIndex::add`] and on load, never
//! stored: a query only adds weights (4 more bytes a posting; a query's
//! accumulation took about half the time of one dividing per posting). Stop words are dropped when
//! documents are added, so a query term that is one finds no postings.
//!
//! # Why no crate
//! The BM25 crates on crates.io were judged against what this index needs (our
//! tokenizer, the best document per label, a document left out per query, our
//! own checked file format):
//! - `bm25` (MIT, one maintainer, ~1.5k lines): its scorer keeps a hash map of
//!   per-document sparse embeddings and a `HashMap<token, HashSet<doc>>`, one
//!   heap allocation per document and per term (several times the memory of
//!   contiguous postings at 100k tools), token ids are hashes that can collide,
//!   `avgdl` is fixed when the embedder is fitted, and its default tokenizer
//!   (stemmers, stop lists per language, `deunicode`) transliterates Chinese to
//!   pinyin. Only its scoring loop would be used, and that is the ten lines in
//!   [`score`].
//! - `tantivy` (MIT, well kept): a whole on-disk search engine (segments, mmap,
//!   compression codecs; dozens of crates) for what is here an in-memory table
//!   of at most ~10⁶ short documents scored in full. Its tokenizer pipeline
//!   (`SimpleTokenizer` + `LowerCaser` + `AsciiFoldingFilter`) splits on every
//!   non-alphanumeric character, keeps a CJK run as one token and has no
//!   camelCase or whole-plus-parts split: the filters we need would be ours
//!   anyway, behind its token-stream traits.
//!
//! So BM25 is written here (index, scoring and file format: about 800 lines
//! with their docs), with two crates already in the lock: `rustc-hash` (the
//! term map) and `unicode-normalization-alignments` (NFKD, via `tokenizers`).

mod label_max;
pub mod score;
pub mod stem;
pub mod tokenize;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use std::path::Path;

use crate::error::{Error, Result};
use crate::persist::lexical as file;
pub use stem::Stemmer;
pub use tokenize::{fold, for_each_token, tokens};

/// Default BM25 term-frequency saturation.
pub const DEFAULT_K1: f32 = 1.2;
/// Default BM25 length normalisation.
pub const DEFAULT_B: f32 = 0.75;
/// "No document" in the `exclude_doc` argument of [`LexicalIndex::score_labels_batch`].
pub const NO_DOC: u32 = u32::MAX;

/// Documents tokenized on the rayon pool from this many per [`LexicalIndex::add`].
const PARALLEL_ADD: usize = 256;
/// Documents tokenized at once by [`LexicalIndex::add`].
const ADD_CHUNK: usize = 8192;

/// A BM25 index over short documents (exemplars, tool names and descriptions),
/// each with a label (a route or tool code).
#[derive(Clone, Debug)]
pub struct LexicalIndex {
    pub(crate) k1: f32,
    pub(crate) b: f32,
    pub(crate) stemmer: Stemmer,
    /// Folded and stemmed.
    pub(crate) stop: FxHashSet<Box<str>>,
    pub(crate) terms: FxHashMap<Box<str>, u32>,
    /// Postings of term `t`: `offsets[t]..offsets[t + 1]`.
    pub(crate) offsets: Vec<u32>,
    pub(crate) post_doc: Vec<u32>,
    pub(crate) post_tf: Vec<u16>,
    pub(crate) doc_len: Vec<u32>,
    pub(crate) doc_label: Vec<u32>,
    /// Derived: the BM25 weight of each posting,
    /// `idf · tf · (k1 + 1) / (tf + k1 · (1 − b + b · len / avgdl))`.
    weight: Vec<f32>,
    /// Derived: starts of the runs of documents with equal labels, then `len()`.
    runs: Vec<u32>,
    /// Derived: the largest label, if any document.
    max_label: Option<u32>,
    /// Derived: document `d` is labelled `d`, for every `d` (one document per
    /// label, in order: tool catalogs of descriptions).
    identity: bool,
}

/// The distinct non-stop tokens of one document with their counts, and its length.
type DocTerms = (Vec<(String, u32)>, u32);

impl LexicalIndex {
    /// An empty index without stemming. `stop_words` are folded ([`fold`]) and
    /// never indexed; `k1 >= 0` and `0 <= b <= 1` (finite).
    pub fn new<S: AsRef<str>>(stop_words: &[S], k1: f32, b: f32) -> Result<Self> {
        Self::with_stemmer(stop_words, k1, b, Stemmer::None)
    }

    /// An empty index whose terms are tokens stemmed by `stemmer` ([`stem`]);
    /// the stop words are folded and stemmed the same way.
    pub fn with_stemmer<S: AsRef<str>>(
        stop_words: &[S],
        k1: f32,
        b: f32,
        stemmer: Stemmer,
    ) -> Result<Self> {
        if !(k1.is_finite() && k1 >= 0.0 && (0.0..=1.0).contains(&b)) {
            return Err(Error::InvalidArgument(format!(
                "BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}"
            )));
        }
        let terms = stemmer.terms();
        let stop = stop_words
            .iter()
            .map(|w| terms.term(&fold(w.as_ref())).into_owned().into_boxed_str())
            .filter(|w| !w.is_empty())
            .collect();
        Ok(LexicalIndex {
            k1,
            b,
            stemmer,
            stop,
            terms: FxHashMap::default(),
            offsets: vec![0],
            post_doc: Vec::new(),
            post_tf: Vec::new(),
            doc_len: Vec::new(),
            doc_label: Vec::new(),
            weight: Vec::new(),
            runs: vec![0],
            max_label: None,
            identity: true,
        })
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }
    /// Whether no document was added.
    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }
    /// Number of distinct indexed terms.
    pub fn n_terms(&self) -> usize {
        self.terms.len()
    }
    /// Number of (term, document) postings.
    pub fn n_postings(&self) -> usize {
        self.post_doc.len()
    }
    /// BM25 `k1`.
    pub fn k1(&self) -> f32 {
        self.k1
    }
    /// BM25 `b`.
    pub fn b(&self) -> f32 {
        self.b
    }
    /// The stemmer that makes terms of tokens.
    pub fn stemmer(&self) -> Stemmer {
        self.stemmer
    }
    /// The index terms of `text`: its tokens ([`tokens`]) stemmed, stop words included.
    pub fn terms_of(&self, text: &str) -> Vec<String> {
        let terms = self.stemmer.terms();
        let mut out = Vec::new();
        for_each_token(text, |t| out.push(terms.term(t).into_owned()));
        out
    }
    /// The (folded, stemmed) stop words, sorted.
    pub fn stop_words(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.stop.iter().map(|w| &**w).collect();
        v.sort_unstable();
        v
    }
    /// The label of each document, in document order.
    pub fn doc_labels(&self) -> &[u32] {
        &self.doc_label
    }

    /// Add documents: `texts[i]` gets document id `len() + i` and label
    /// `labels[i]`. Term statistics (idf, average length) are updated for all.
    pub fn add<S: AsRef<str> + Sync>(&mut self, texts: &[S], labels: &[u32]) -> Result<()> {
        if texts.len() != labels.len() {
            return Err(Error::InvalidArgument(format!(
                "{} texts but {} labels",
                texts.len(),
                labels.len()
            )));
        }
        let first = self.len();
        if first + texts.len() >= NO_DOC as usize {
            return Err(Error::InvalidArgument(format!(
                "a lexical index holds fewer than {NO_DOC} documents"
            )));
        }
        // Chunks bound the tokenized text held at once (one String a distinct
        // token of each document: 134 MB of RSS at 100k tools in one piece).
        let terms_before = self.terms.len();
        // (term, document, tf) in document order, so postings stay sorted by document.
        let mut new = Vec::new();
        for (c, chunk) in texts.chunks(ADD_CHUNK).enumerate() {
            let docs: Vec<DocTerms> = if chunk.len() >= PARALLEL_ADD {
                chunk
                    .par_iter()
                    .map(|t| self.doc_terms(t.as_ref()))
                    .collect()
            } else {
                chunk.iter().map(|t| self.doc_terms(t.as_ref())).collect()
            };
            let n_new: usize = docs.iter().map(|d| d.0.len()).sum();
            if self.n_postings() + new.len() + n_new > u32::MAX as usize {
                // Leave the index as it was.
                self.terms.retain(|_, id| (*id as usize) < terms_before);
                self.doc_len.truncate(first);
                return Err(Error::InvalidArgument(format!(
                    "a lexical index holds at most {} postings",
                    u32::MAX
                )));
            }
            new.reserve(n_new);
            for (i, (terms, len)) in docs.into_iter().enumerate() {
                let doc = (first + c * ADD_CHUNK + i) as u32;
                for (term, tf) in terms {
                    let next = self.terms.len() as u32;
                    let id = *self.terms.entry(term.into_boxed_str()).or_insert(next);
                    new.push((id, doc, tf.min(u16::MAX as u32) as u16));
                }
                self.doc_len.push(len);
            }
        }
        self.doc_label.extend_from_slice(labels);
        self.merge_postings(&new);
        self.refresh();
        Ok(())
    }

    /// Distinct non-stop tokens of `text` with their counts, and its length.
    fn doc_terms(&self, text: &str) -> DocTerms {
        let mut counts: FxHashMap<String, u32> = FxHashMap::default();
        let mut len = 0u32;
        let terms = self.stemmer.terms();
        for_each_token(text, |t| {
            let t = &*terms.term(t);
            if self.stop.contains(t) {
                return;
            }
            len = len.saturating_add(1);
            match counts.get_mut(t) {
                Some(c) => *c += 1,
                None => {
                    counts.insert(t.to_owned(), 1);
                }
            }
        });
        (counts.into_iter().collect(), len)
    }

    /// Rebuild the postings arrays with `new` (term, doc, tf) appended per term
    /// (the caller checked that the total fits in `u32`).
    fn merge_postings(&mut self, new: &[(u32, u32, u16)]) {
        let n_terms = self.terms.len();
        let mut count: Vec<u32> = self.offsets.windows(2).map(|w| w[1] - w[0]).collect();
        count.resize(n_terms, 0);
        new.iter().for_each(|&(t, _, _)| count[t as usize] += 1);
        let mut offsets = Vec::with_capacity(n_terms + 1);
        offsets.push(0u32);
        let mut acc = 0u32;
        for c in &count {
            acc += c;
            offsets.push(acc);
        }
        let (mut docs, mut tfs) = (vec![0u32; acc as usize], vec![0u16; acc as usize]);
        let mut cursor: Vec<u32> = offsets[..n_terms].to_vec();
        for (c, w) in cursor.iter_mut().zip(self.offsets.windows(2)) {
            let (s, e) = (w[0] as usize, w[1] as usize);
            let at = *c as usize;
            docs[at..at + e - s].copy_from_slice(&self.post_doc[s..e]);
            tfs[at..at + e - s].copy_from_slice(&self.post_tf[s..e]);
            *c += (e - s) as u32;
        }
        for &(t, d, tf) in new {
            let c = &mut cursor[t as usize];
            docs[*c as usize] = d;
            tfs[*c as usize] = tf;
            *c += 1;
        }
        (self.offsets, self.post_doc, self.post_tf) = (offsets, docs, tfs);
    }

    /// Recompute the derived posting weights and largest label.
    pub(crate) fn refresh(&mut self) {
        let n = self.len() as f64;
        let total: f64 = self.doc_len.iter().map(|&l| l as f64).sum();
        let avg = if total > 0.0 { total / n } else { 1.0 };
        let (k1, b) = (self.k1 as f64, self.b as f64);
        let norm: Vec<f64> = self
            .doc_len
            .iter()
            .map(|&l| k1 * (1.0 - b + b * l as f64 / avg))
            .collect();
        let mut weight = Vec::with_capacity(self.post_doc.len());
        for w in self.offsets.windows(2) {
            let (s, e) = (w[0] as usize, w[1] as usize);
            let df = (e - s) as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (&d, &tf) in self.post_doc[s..e].iter().zip(&self.post_tf[s..e]) {
                let tf = tf as f64;
                weight.push((idf * tf * (k1 + 1.0) / (tf + norm[d as usize])) as f32);
            }
        }
        self.weight = weight;
        self.runs = (0..self.len())
            .filter(|&d| d == 0 || self.doc_label[d] != self.doc_label[d - 1])
            .map(|d| d as u32)
            .chain([self.len() as u32])
            .collect();
        self.max_label = self.doc_label.iter().copied().max();
        self.identity = self
            .doc_label
            .iter()
            .enumerate()
            .all(|(d, &l)| l as usize == d);
    }

    /// Heap bytes held by the index: the arrays by capacity, the hash tables by
    /// bucket (key, value and control byte) and each term's own allocation as
    /// glibc malloc sizes it. Not counted: the per-thread query scratch (4 bytes
    /// a document on each thread that queried), and the per-thread stem caches
    /// that every stemmed index shares (at most 8,192 words a stemmer and thread).
    pub fn memory_bytes(&self) -> usize {
        fn vec_bytes<T>(v: &Vec<T>) -> usize {
            v.capacity() * std::mem::size_of::<T>()
        }
        fn table<T>(cap: usize) -> usize {
            let buckets = match cap {
                0 => return 0,
                1..=3 => 4,
                4..=7 => 8,
                c => (c * 8 / 7).next_power_of_two(),
            };
            buckets * (std::mem::size_of::<T>() + 1) + 16
        }
        fn key(s: &str) -> usize {
            (s.len() + 8).next_multiple_of(16).max(32)
        }
        table::<(Box<str>, u32)>(self.terms.capacity())
            + self.terms.keys().map(|k| key(k)).sum::<usize>()
            + table::<Box<str>>(self.stop.capacity())
            + self.stop.iter().map(|k| key(k)).sum::<usize>()
            + vec_bytes(&self.offsets)
            + vec_bytes(&self.post_doc)
            + vec_bytes(&self.post_tf)
            + vec_bytes(&self.doc_len)
            + vec_bytes(&self.doc_label)
            + vec_bytes(&self.weight)
            + vec_bytes(&self.runs)
    }

    /// `n_labels` must exceed every document's label.
    fn check_labels(&self, n_labels: usize) -> Result<()> {
        match self.max_label {
            Some(m) if m as usize >= n_labels => Err(Error::InvalidArgument(format!(
                "n_labels is {n_labels} but a document has label {m}"
            ))),
            _ => Ok(()),
        }
    }

    /// The index as bytes ([`crate::persist::lexical`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        file::to_bytes(self)
    }
    /// Parse [`LexicalIndex::to_bytes`] output; `path` names the source in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self> {
        file::from_bytes(bytes, path)
    }
    /// Write the index to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        file::save(self, path)
    }
    /// Read an index written by [`LexicalIndex::save`].
    pub fn load(path: &Path) -> Result<Self> {
        file::load(path)
    }
}
