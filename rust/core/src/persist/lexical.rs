//! Lexical index files: the same frame as vector index files (magic, format
//! version, payload length, CRC-32 over header and payload) around a payload of
//! BM25 parameters, stop words, documents, terms and postings. Derived data
//! (idf, length norms) is recomputed on load, never trusted from the file.
//!
//! A truncated, damaged or crafted file is a [`Error::CorruptIndex`]: every
//! count is checked against the bytes that remain before anything is
//! allocated, and the postings are checked for consistency.

use std::fs;
use std::path::Path;

use rustc_hash::{FxHashMap, FxHashSet};

use super::{atomic, frame, put_strs, put_u32, Reader};
use crate::error::{Error, Result};
use crate::lexical::{LexicalIndex, Stemmer};

/// File magic.
pub const MAGIC: &[u8; 8] = b"RCLEXIX\0";
/// Current format version: 2 stores the stemmer's code in the header's own
/// field ([`crate::lexical::Stemmer::code`]); version 1 files (field 0, no
/// stemmer) are still read.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format version read.
pub const OLDEST_VERSION: u32 = 1;
/// magic, version, stemmer code, payload length, CRC-32.
/// The length of a lexical index file's header (magic, version, own fields, payload length, CRC).
pub const HEADER_LEN: usize = 8 + 4 + 4 + 8 + 4;

/// Serialise `index` (header + payload).
pub fn to_bytes(index: &LexicalIndex) -> Vec<u8> {
    let n_terms = index.n_terms();
    let mut p = Vec::with_capacity(64 + index.n_postings() * 6 + index.len() * 8 + n_terms * 16);
    p.extend_from_slice(&index.k1.to_le_bytes());
    p.extend_from_slice(&index.b.to_le_bytes());
    put_strs(&mut p, index.stop_words().into_iter());
    put_u32(&mut p, index.len() as u32);
    index.doc_len.iter().for_each(|&v| put_u32(&mut p, v));
    index.doc_label.iter().for_each(|&v| put_u32(&mut p, v));
    let mut by_id: Vec<&str> = vec![""; n_terms];
    for (t, &id) in &index.terms {
        by_id[id as usize] = t;
    }
    put_strs(&mut p, by_id.into_iter());
    index
        .offsets
        .windows(2)
        .for_each(|w| put_u32(&mut p, w[1] - w[0]));
    index.post_doc.iter().for_each(|&v| put_u32(&mut p, v));
    index
        .post_tf
        .iter()
        .for_each(|&v| p.extend_from_slice(&v.to_le_bytes()));

    let mut header = Vec::with_capacity(HEADER_LEN + p.len());
    header.extend_from_slice(MAGIC);
    put_u32(&mut header, FORMAT_VERSION);
    put_u32(&mut header, index.stemmer.code());
    frame::seal(header, &p)
}

/// Write `index` to `path` atomically (see [`crate::persist::save`]).
pub fn save(index: &LexicalIndex, path: &Path) -> Result<()> {
    atomic::write_atomic(path, &to_bytes(index)).map_err(|e| Error::io(path, e))
}

/// Read a file written by [`save`].
pub fn load(path: &Path) -> Result<LexicalIndex> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    from_bytes(&bytes, path)
}

type Parsed<T> = std::result::Result<T, String>;

impl Reader<'_> {
    fn f32(&mut self) -> Parsed<f32> {
        Ok(f32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    /// A count of items of at least `min_width` bytes each, checked against the bytes left.
    fn count(&mut self, min_width: usize) -> Parsed<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_width) > self.buf.len() - self.pos {
            return Err(format!("count {n} exceeds the bytes left"));
        }
        Ok(n)
    }
    fn strs(&mut self) -> Parsed<Vec<Box<str>>> {
        let n = self.count(4)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let s = self.str()?;
            if s.is_empty() {
                return Err("empty term or stop word".into());
            }
            v.push(s.into());
        }
        Ok(v)
    }
}

/// Parse bytes produced by [`to_bytes`]; `path` is only used in messages.
pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<LexicalIndex> {
    let corrupt = |reason: String| Error::CorruptIndex {
        path: path.to_path_buf(),
        reason,
    };
    // Older versions open as themselves; frame::open rejects any other.
    let version = match bytes.get(8..12) {
        Some(v) => u32::from_le_bytes(v.try_into().unwrap()).clamp(OLDEST_VERSION, FORMAT_VERSION),
        None => FORMAT_VERSION,
    };
    let (header, payload) =
        frame::open(bytes, MAGIC, version, HEADER_LEN, "lexical index").map_err(corrupt)?;
    let code = u32::from_le_bytes(header[12..16].try_into().unwrap());
    let stemmer = match (version, Stemmer::from_code(code)) {
        (1, _) if code != 0 => None,
        (_, s) => s,
    }
    .ok_or_else(|| corrupt(format!("unknown stemmer code {code}")))?;
    let mut r = Reader {
        buf: payload,
        pos: 0,
    };
    let mut index = parse(&mut r).map_err(corrupt)?;
    // The stored stop words are already stemmed (`parse` only checked that they are folded).
    index.stemmer = stemmer;
    if r.pos != payload.len() {
        return Err(corrupt("trailing bytes after payload".into()));
    }
    Ok(index)
}

fn parse(r: &mut Reader) -> Parsed<LexicalIndex> {
    let (k1, b) = (r.f32()?, r.f32()?);
    let stop = r.strs()?;
    let mut index = LexicalIndex::new(&stop, k1, b).map_err(|e| e.to_string())?;
    let stop_set: FxHashSet<Box<str>> = stop.into_iter().collect();
    if stop_set != index.stop {
        return Err("stop words are not folded".into());
    }
    let n_docs = r.count(8)?;
    index.doc_len = r.vec(n_docs, u32::from_le_bytes)?;
    index.doc_label = r.vec(n_docs, u32::from_le_bytes)?;
    let terms = r.strs()?;
    let df = r.vec(terms.len(), u32::from_le_bytes)?;
    let total = df.iter().map(|&c| c as u64).sum::<u64>();
    if total > (r.buf.len() - r.pos) as u64 / 6 {
        return Err(format!("{total} postings exceed the bytes left"));
    }
    index.post_doc = r.vec(total as usize, u32::from_le_bytes)?;
    index.post_tf = r.vec(total as usize, u16::from_le_bytes)?;
    let mut map = FxHashMap::default();
    map.reserve(terms.len());
    for (id, t) in terms.into_iter().enumerate() {
        if map.insert(t, id as u32).is_some() {
            return Err("a term is listed twice".into());
        }
    }
    index.terms = map;
    let mut offsets = Vec::with_capacity(df.len() + 1);
    offsets.push(0u32);
    for c in &df {
        if *c == 0 {
            return Err("a term without postings".into());
        }
        let end = offsets
            .last()
            .unwrap()
            .checked_add(*c)
            .ok_or("size overflow")?;
        offsets.push(end);
    }
    for w in offsets.windows(2) {
        let docs = &index.post_doc[w[0] as usize..w[1] as usize];
        if docs.windows(2).any(|p| p[0] >= p[1])
            || docs.last().is_some_and(|&d| d as usize >= n_docs)
        {
            return Err("postings out of order or naming an unknown document".into());
        }
    }
    if index.post_tf.contains(&0) {
        return Err("a posting with term frequency 0".into());
    }
    index.offsets = offsets;
    index.refresh();
    Ok(index)
}
