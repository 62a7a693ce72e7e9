//! Numeric kernels over plain slices, with no knowledge of indexes or routes.
//!
//! - [`simd`]: dot/cosine kernels (AVX-512F, AVX2+FMA and F16C at run time, portable fallbacks);
//! - [`simd_avx512`]: the AVX-512F f32 and f16 kernels behind them;
//! - [`simd_int8`]: int8 quantization with error bounds, the int8 block kernel's dispatch;
//! - [`int8_x86`]: its AVX-512 VNNI and AVX2 kernels;
//! - [`topk`]: exact top-k selection with a fixed tie rule;
//! - [`aligned`]: the 64-byte-aligned buffer the rows live in;
//! - [`bandwidth`]: a memory read-bandwidth probe for benchmarks.

pub mod aligned;
pub mod bandwidth;
#[cfg(target_arch = "x86_64")]
pub mod int8_x86;
pub mod simd;
#[cfg(target_arch = "x86_64")]
pub mod simd_avx512;
pub mod simd_int8;
pub mod topk;
