//! Deterministic pseudo-random data for tests, examples and benchmarks; not
//! part of the routing API.

use std::path::PathBuf;

use crate::scoring::step::StepResult;
use crate::{FlatIndex, StorageKind};

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

/// A routing table of `routes` × `per` exemplars of width `d` (not normalised on input; the index
/// normalises): each route's rows are its centre plus `spread` × noise, labelled `route_{r}`.
/// Returns the index and the centres (queries near a centre are in its route's domain).
pub fn clustered_routes(
    routes: usize,
    per: usize,
    d: usize,
    spread: f32,
    kind: StorageKind,
    seed: u32,
) -> (FlatIndex, Vec<Vec<f32>>) {
    let mut rnd = uniform(seed);
    let centres: Vec<Vec<f32>> = (0..routes)
        .map(|_| (0..d).map(|_| rnd()).collect())
        .collect();
    let (mut data, mut labels) = (Vec::new(), Vec::new());
    for (r, c) in centres.iter().enumerate() {
        for _ in 0..per {
            data.extend(c.iter().map(|v| v + spread * rnd()));
            labels.push(format!("route_{r}"));
        }
    }
    let ids: Vec<u64> = (0..labels.len() as u64).collect();
    let l: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut ix = FlatIndex::new(d, kind, true).expect("a valid width");
    ix.add(&ids, &data, Some(&l), None)
        .expect("rows of that width");
    (ix, centres)
}

/// `rel` under the shared models folder (`../shared/models` beside the repository), or None
/// with a message when it is missing outside CI; under CI (`CI` set) a missing file fails.
pub fn shared_model_file(rel: &str) -> Option<PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/models")
        .join(rel);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} missing",
        path.display()
    );
    eprintln!("skipping: {} not found", path.display());
    None
}
