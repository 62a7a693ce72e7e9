//! routecore-core: the pure-Rust engine behind routecore, one folder a concern.
//!
//! - [`kernels`]: dot/cosine kernels (AVX2+FMA at run time, portable fallback),
//!   int8 quantization with error bounds and the AVX-512 VNNI block kernel,
//!   exact top-k, the cache-line-aligned buffer and a bandwidth probe;
//! - [`index`]: the flat exact index, its per-label rows, interned labels,
//!   compact storage and the top-k scans over it;
//! - [`scoring`]: route aggregation, softmax, domain affinity, collisions, and
//!   the native routing step (f32/f16, or int8 with an exact re-score);
//! - [`lexical`]: the BM25 index over exemplar and tool texts, with its word
//!   tokenizer (accent folding, tool-name parts, CJK bigrams);
//! - [`persist`]: vector and lexical index files, written atomically;
//! - [`encoder`]: the ONNX Runtime text encoder with its tokenizer and cache.

#![warn(missing_docs)]

pub mod encoder;
pub mod entities;
pub mod error;
pub mod index;
pub mod kernels;
pub mod lexical;
pub mod persist;
pub mod scoring;
pub mod testing;

pub use error::{Error, Result};
pub use index::storage::StorageKind;
pub use index::{FlatIndex, SearchResult};
pub use lexical::LexicalIndex;
