//! Numeric kernels over plain slices, with no knowledge of indexes or routes.
//!
//! - [`simd`]: dot/cosine kernels (AVX2+FMA and F16C at run time, portable fallbacks);
//! - [`simd_int8`]: int8 quantization with error bounds, AVX-512 VNNI block kernel;
//! - [`topk`]: exact top-k selection with a fixed tie rule;
//! - [`aligned`]: the 64-byte-aligned buffer the rows live in;
//! - [`bandwidth`]: a memory read-bandwidth probe for benchmarks.

pub mod aligned;
pub mod bandwidth;
pub mod simd;
pub mod simd_int8;
pub mod topk;
