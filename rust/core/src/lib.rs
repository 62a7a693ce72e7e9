//! routecore-core: the pure-Rust engine behind routecore.
//!
//! - [`simd`]: dot/cosine kernels (AVX2+FMA at run time, portable fallback);
//! - [`simd_int8`]: int8 quantization with error bounds, AVX-512 VNNI block kernel;
//! - [`topk`], [`scan`]: exact top-k over contiguous storage, single or batched;
//! - [`index`], [`label_rows`], [`storage`], [`persist`]: the flat index, its
//!   per-label rows, compact storage, files;
//! - [`scoring`], [`step`]: route aggregation, softmax, domain affinity, collisions;
//! - [`encoder`]: the ONNX Runtime text encoder with its tokenizer and cache.

#![warn(missing_docs)]

pub mod aligned;
pub mod bandwidth;
pub mod encoder;
pub mod error;
pub mod index;
pub mod interner;
pub mod label_rows;
pub mod persist;
pub mod scan;
pub mod scoring;
pub mod simd;
pub mod simd_int8;
pub mod step;
pub mod step_compact;
pub mod step_scan;
pub mod storage;
pub mod testing;
pub mod topk;

pub use error::{Error, Result};
pub use index::{FlatIndex, SearchResult};
pub use storage::StorageKind;
