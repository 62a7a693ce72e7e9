//! Deterministic pseudo-random data for tests, examples and benchmarks; not
//! part of the routing API.

use crate::scoring::step::StepResult;

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

/// Panics unless two routing steps (e.g. int8 against f32) picked the same best
/// exemplars, in order, and the same collision pair.
pub fn assert_same_picks(a: &StepResult, b: &StepResult) {
    let rows = |r: &StepResult| r.top.iter().map(|h| h.index).collect::<Vec<_>>();
    assert_eq!(rows(a), rows(b), "best exemplars differ");
    assert_eq!(
        a.collision.map(|c| (c.first, c.second)),
        b.collision.map(|c| (c.first, c.second)),
        "collision pairs differ"
    );
}
