//! Deterministic pseudo-random data for tests, examples and benchmarks; not
//! part of the routing API.

/// Values in [−0.5, 0.5] from a xorshift32 generator seeded with `seed`
/// (non-zero): the same sequence on every machine.
pub fn uniform(seed: u32) -> impl FnMut() -> f32 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x as f32 / u32::MAX as f32 - 0.5
    }
}
