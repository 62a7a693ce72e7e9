//! Contiguous row-major vector storage, with optional compact copies (f16 or
//! int8 with one scale per row) that searches scan before an exact f32 re-rank.

use half::f16;

use crate::kernels::aligned::AlignedVec;
use crate::kernels::simd_int8::{quantize_row, QuantCols};

/// Which representation the scan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageKind {
    /// Exact f32 only.
    F32,
    /// f16 scan copy + exact f32 re-rank.
    F16,
    /// int8 (per-row scale) scan copy + exact f32 re-rank.
    Int8,
}

impl StorageKind {
    /// Parse `"f32"`, `"f16"` or `"int8"`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "f32" | "float32" => Some(StorageKind::F32),
            "f16" | "float16" => Some(StorageKind::F16),
            "int8" | "i8" => Some(StorageKind::Int8),
            _ => None,
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            StorageKind::F32 => "f32",
            StorageKind::F16 => "f16",
            StorageKind::Int8 => "int8",
        }
    }

    /// Stable code used in the file format.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// Inverse of [`StorageKind::code`].
    pub fn from_code(c: u8) -> Option<Self> {
        [StorageKind::F32, StorageKind::F16, StorageKind::Int8]
            .get(c as usize)
            .copied()
    }
}

/// Row-major vectors of a fixed width; row `i` of every array describes entry `i`.
/// Each array starts on a cache line ([`AlignedVec`]), and so does every row
/// whose byte width is a multiple of 64 (d = 384 or 1024, say).
#[derive(Clone, Debug)]
pub struct Storage {
    dim: usize,
    kind: StorageKind,
    pub(crate) f32s: AlignedVec<f32>,
    pub(crate) f16s: AlignedVec<f16>,
    pub(crate) i8s: AlignedVec<i8>,
    /// Per-row scale, code sum and error bound of the int8 copy.
    pub(crate) quant: QuantCols,
    /// Centre `μ` of the int8 copy (rows are quantized as `x − μ`); empty until
    /// the first row.
    centre: Vec<f32>,
    /// Row count when the centre was last computed; it is recomputed (and every
    /// row re-quantized) when the count doubles, which is O(1) amortised per row.
    centred_at: usize,
}

impl Storage {
    /// Empty storage of width `dim`.
    pub fn new(dim: usize, kind: StorageKind) -> Self {
        Storage {
            dim,
            kind,
            f32s: AlignedVec::new(),
            f16s: AlignedVec::new(),
            i8s: AlignedVec::new(),
            quant: QuantCols::default(),
            centre: Vec::new(),
            centred_at: 0,
        }
    }

    /// Row width.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Representation scanned by searches.
    pub fn kind(&self) -> StorageKind {
        self.kind
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.f32s.len().checked_div(self.dim).unwrap_or(0)
    }

    /// True when no rows are stored.
    pub fn is_empty(&self) -> bool {
        self.f32s.is_empty()
    }

    /// The exact f32 matrix (len × dim, row-major).
    pub fn matrix(&self) -> &[f32] {
        &self.f32s
    }

    /// Exact f32 row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f32] {
        &self.f32s[i * self.dim..(i + 1) * self.dim]
    }

    /// int8 codes (len × dim, row-major); empty unless the kind is `Int8`.
    pub fn codes(&self) -> &[i8] {
        &self.i8s
    }

    /// Per-row quantization facts of the int8 copy; empty unless the kind is `Int8`.
    pub fn quant(&self) -> &QuantCols {
        &self.quant
    }

    /// Centre of the int8 copy (empty unless the kind is `Int8` and rows exist).
    pub fn centre(&self) -> &[f32] {
        &self.centre
    }

    /// Quantize `v − centre` into the int8 row `i` (which must exist).
    fn quantize_into(&mut self, i: usize, v: &[f32]) -> crate::kernels::simd_int8::RowQuant {
        let d = self.dim;
        let resid: Vec<f32> = if self.centre.is_empty() {
            v.to_vec()
        } else {
            v.iter().zip(&self.centre).map(|(x, m)| x - m).collect()
        };
        quantize_row(&resid, &mut self.i8s[i * d..(i + 1) * d])
    }

    /// Recompute the centre as the mean row and re-quantize every row.
    fn recentre(&mut self) {
        let (n, d) = (self.len(), self.dim);
        let mut mean = vec![0f64; d];
        for row in self.f32s.chunks_exact(d) {
            mean.iter_mut().zip(row).for_each(|(m, &x)| *m += x as f64);
        }
        self.centre = mean.iter().map(|m| (m / n as f64) as f32).collect();
        for i in 0..n {
            let v = self.f32s[i * d..(i + 1) * d].to_vec();
            let f = self.quantize_into(i, &v);
            self.quant.set(i, f);
        }
        self.quant.refresh_max();
        self.centred_at = n;
    }

    /// Bytes held in memory by every representation.
    pub fn nbytes(&self) -> usize {
        self.f32s.len() * 4
            + self.f16s.len() * 2
            + self.i8s.len()
            + self.quant.nbytes()
            + self.centre.len() * 4
    }

    /// Reserve room for `extra` more rows.
    pub fn reserve(&mut self, extra: usize) {
        self.f32s.reserve(extra * self.dim);
        match self.kind {
            StorageKind::F32 => {}
            StorageKind::F16 => self.f16s.reserve(extra * self.dim),
            StorageKind::Int8 => {
                self.i8s.reserve(extra * self.dim);
                self.quant.reserve(extra);
            }
        }
    }

    /// Append one row (already validated: width and finiteness).
    pub fn push(&mut self, v: &[f32]) {
        debug_assert_eq!(v.len(), self.dim);
        self.f32s.extend_from_slice(v);
        match self.kind {
            StorageKind::F32 => {}
            StorageKind::F16 => self.f16s.extend(v.iter().map(|&x| f16::from_f32(x))),
            StorageKind::Int8 => {
                let i = self.quant.len();
                self.i8s.resize_zeroed((i + 1) * self.dim);
                let f = self.quantize_into(i, v);
                self.quant.push(f);
                if self.len() >= 2 * self.centred_at {
                    self.recentre();
                }
            }
        }
    }

    /// Overwrite row `i`.
    pub fn set(&mut self, i: usize, v: &[f32]) {
        let d = self.dim;
        self.f32s[i * d..(i + 1) * d].copy_from_slice(v);
        match self.kind {
            StorageKind::F32 => {}
            StorageKind::F16 => {
                for (o, &x) in self.f16s[i * d..(i + 1) * d].iter_mut().zip(v) {
                    *o = f16::from_f32(x);
                }
            }
            StorageKind::Int8 => {
                let f = self.quantize_into(i, v);
                self.quant.set(i, f);
            }
        }
    }

    /// Remove row `i` by moving the last row into its place (storage stays contiguous).
    pub fn swap_remove(&mut self, i: usize) {
        let n = self.len();
        let d = self.dim;
        let last = n - 1;
        if i != last {
            self.f32s.copy_within(last * d..n * d, i * d);
            if self.kind == StorageKind::F16 {
                self.f16s.copy_within(last * d..n * d, i * d);
            }
            if self.kind == StorageKind::Int8 {
                self.i8s.copy_within(last * d..n * d, i * d);
            }
        }
        self.f32s.truncate(last * d);
        match self.kind {
            StorageKind::F32 => {}
            StorageKind::F16 => self.f16s.truncate(last * d),
            StorageKind::Int8 => {
                self.i8s.truncate(last * d);
                self.quant.swap_remove(i);
                if last == 0 {
                    self.centre.clear();
                    self.centred_at = 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_set_swap_remove_keep_rows_aligned() {
        for kind in [StorageKind::F32, StorageKind::F16, StorageKind::Int8] {
            let mut s = Storage::new(2, kind);
            s.push(&[1.0, 0.0]);
            s.push(&[0.0, 1.0]);
            s.push(&[0.5, 0.5]);
            s.set(1, &[0.25, -0.25]);
            s.swap_remove(0);
            assert_eq!(s.len(), 2);
            assert_eq!(s.row(0), &[0.5, 0.5]);
            assert_eq!(s.row(1), &[0.25, -0.25]);
            match kind {
                StorageKind::F16 => assert_eq!(s.f16s.len(), 4),
                StorageKind::Int8 => assert_eq!((s.i8s.len(), s.quant.len()), (4, 2)),
                StorageKind::F32 => {}
            }
            s.swap_remove(1);
            s.swap_remove(0);
            assert!(s.is_empty());
        }
    }

    #[test]
    fn kind_codes_round_trip() {
        for k in [StorageKind::F32, StorageKind::F16, StorageKind::Int8] {
            assert_eq!(StorageKind::from_code(k.code()), Some(k));
            assert_eq!(StorageKind::parse(k.name()), Some(k));
        }
        assert_eq!(StorageKind::from_code(9), None);
    }
}
