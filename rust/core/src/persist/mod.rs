//! Index files: a fixed header (magic, format version, dim, count, storage,
//! payload length, CRC-32) followed by the payload. Writes go to a temporary
//! file that is renamed into place (see `atomic.rs`), so a crash never leaves a
//! half-written index. Lexical (BM25) index files use the same frame: [`lexical`].

mod atomic;
mod frame;
pub mod lexical;

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};
use crate::index::storage::{Storage, StorageKind};
use crate::index::{FlatIndex, Interner};

/// File magic.
pub const MAGIC: &[u8; 8] = b"RCINDEX\0";
/// Current format version.
pub const FORMAT_VERSION: u32 = 1;
/// The length of an index file's header (magic, version, own fields, payload length, CRC).
pub const HEADER_LEN: usize = 8 + 4 + 4 + 8 + 1 + 1 + 6 + 8 + 4;

/// Append `v` little-endian.
fn put_u32(buf: &mut Vec<u8>, v: u32) {
    buf.extend_from_slice(&v.to_le_bytes());
}

/// Append a count, then each string as its length and UTF-8 bytes.
fn put_strs<'a>(buf: &mut Vec<u8>, items: impl ExactSizeIterator<Item = &'a str>) {
    put_u32(buf, items.len() as u32);
    for s in items {
        put_u32(buf, s.len() as u32);
        buf.extend_from_slice(s.as_bytes());
    }
}

/// Serialise `index` into bytes (header + payload).
pub fn to_bytes(index: &FlatIndex) -> Vec<u8> {
    let n = index.len();
    let mut payload = Vec::with_capacity(n * (index.dim() * 4 + 16) + 64);
    index
        .ids
        .iter()
        .for_each(|v| payload.extend_from_slice(&v.to_le_bytes()));
    index
        .storage
        .matrix()
        .iter()
        .for_each(|v| payload.extend_from_slice(&v.to_le_bytes()));
    index
        .labels
        .iter()
        .for_each(|v| payload.extend_from_slice(&v.to_le_bytes()));
    index
        .domains
        .iter()
        .for_each(|v| payload.extend_from_slice(&v.to_le_bytes()));
    put_strs(
        &mut payload,
        index.label_names.names().iter().map(String::as_str),
    );
    put_strs(
        &mut payload,
        index.domain_names.names().iter().map(String::as_str),
    );

    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(index.dim() as u32).to_le_bytes());
    out.extend_from_slice(&(n as u64).to_le_bytes());
    out.push(index.kind().code());
    out.push(index.normalize() as u8);
    out.extend_from_slice(&[0u8; 6]);
    frame::seal(out, &payload)
}

/// Write `index` to `path` atomically (a new randomly named temporary file in
/// the same folder, synced, then renamed over `path`).
pub fn save(index: &FlatIndex, path: &Path) -> Result<()> {
    atomic::write_atomic(path, &to_bytes(index)).map_err(|e| Error::io(path, e))
}

/// Bounds-checked little-endian reader over the payload.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or("payload ends early")?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn vec<T, const W: usize>(
        &mut self,
        n: usize,
        f: fn([u8; W]) -> T,
    ) -> std::result::Result<Vec<T>, String> {
        let bytes = self.take(n.checked_mul(W).ok_or("size overflow")?)?;
        Ok(bytes
            .chunks_exact(W)
            .map(|c| f(c.try_into().unwrap()))
            .collect())
    }
    /// A `u32` length, then that many bytes of UTF-8.
    fn str(&mut self) -> std::result::Result<&'a str, String> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).map_err(|_| "string is not UTF-8".into())
    }
    fn names(&mut self) -> std::result::Result<Interner, String> {
        let count = self.u32()? as usize;
        let mut it = Interner::default();
        for i in 0..count {
            if it.intern(self.str()?) as usize != i {
                return Err("name table out of order".into());
            }
        }
        Ok(it)
    }
}

/// Parse bytes produced by [`to_bytes`]; `path` is only used in messages.
pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<FlatIndex> {
    let corrupt = |reason: String| Error::CorruptIndex {
        path: path.to_path_buf(),
        reason,
    };
    let (header, payload) =
        frame::open(bytes, MAGIC, FORMAT_VERSION, HEADER_LEN, "index").map_err(corrupt)?;
    let u32_at = |o: usize| u32::from_le_bytes(header[o..o + 4].try_into().unwrap());
    let dim = u32_at(12) as usize;
    let count = u64::from_le_bytes(header[16..24].try_into().unwrap()) as usize;
    let kind = StorageKind::from_code(header[24])
        .ok_or_else(|| corrupt(format!("unknown storage code {}", header[24])))?;
    let normalize = header[25] != 0;
    if dim == 0 {
        return Err(corrupt("dimension 0".into()));
    }
    let mut r = Reader {
        buf: payload,
        pos: 0,
    };
    let parse = |r: &mut Reader| -> std::result::Result<_, String> {
        let ids = r.vec(count, u64::from_le_bytes)?;
        let data = r.vec(
            count.checked_mul(dim).ok_or("size overflow")?,
            f32::from_le_bytes,
        )?;
        let labels = r.vec(count, u32::from_le_bytes)?;
        let domains = r.vec(count, u32::from_le_bytes)?;
        let ln = r.names()?;
        let dn = r.names()?;
        Ok((ids, data, labels, domains, ln, dn))
    };
    let (ids, data, labels, domains, ln, dn) = parse(&mut r).map_err(corrupt)?;
    if r.pos != payload.len() {
        return Err(corrupt("trailing bytes after payload".into()));
    }
    if labels.iter().any(|&c| c as usize >= ln.names().len())
        || domains.iter().any(|&c| c as usize >= dn.names().len())
    {
        return Err(corrupt("label or domain code out of range".into()));
    }
    if data.iter().any(|x| !x.is_finite()) {
        return Err(corrupt("non-finite vector values".into()));
    }
    let mut storage = Storage::new(dim, kind);
    storage.reserve(count);
    data.chunks_exact(dim).for_each(|row| storage.push(row));
    FlatIndex::from_parts(storage, normalize, ids, labels, domains, ln, dn)
        .map_err(|e| corrupt(e.to_string()))
}

/// Read an index file written by [`save`].
pub fn load(path: &Path) -> Result<FlatIndex> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    from_bytes(&bytes, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FlatIndex {
        let mut i = FlatIndex::new(3, StorageKind::Int8, true).unwrap();
        i.add(
            &[1, 2],
            &[1.0, 2.0, 3.0, -1.0, 0.5, 0.0],
            Some(&["r1", "r2"]),
            Some(&["d", ""]),
        )
        .unwrap();
        i
    }

    #[test]
    fn round_trip() {
        let i = sample();
        let j = from_bytes(&to_bytes(&i), Path::new("mem")).unwrap();
        assert_eq!(j.ids(), i.ids());
        assert_eq!(j.storage().matrix(), i.storage().matrix());
        assert_eq!(j.label_names(), i.label_names());
        assert_eq!(j.domain_names(), i.domain_names());
        assert_eq!(j.kind(), StorageKind::Int8);
        assert_eq!(j.row_of(2), Some(1));
    }

    #[test]
    fn corruption_is_detected() {
        let b = to_bytes(&sample());
        let p = Path::new("mem");
        for cut in [0, 10, HEADER_LEN, b.len() - 1] {
            assert!(
                matches!(from_bytes(&b[..cut], p), Err(Error::CorruptIndex { .. })),
                "cut {cut}"
            );
        }
        for pos in [3, 13, 50, b.len() - 2] {
            let mut t = b.clone();
            t[pos] ^= 0x5a;
            assert!(
                matches!(from_bytes(&t, p), Err(Error::CorruptIndex { .. })),
                "flip {pos}"
            );
        }
    }
}
