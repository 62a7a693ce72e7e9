//! The threads a parallel scan runs on: the calling thread plus `threads − 1`
//! helper threads that exist only for the scan (issue 15).
//!
//! A scan used to hand its work to rayon's global pool while the caller slept.
//! Right after such a scan, `route()`'s ONNX Runtime encode ran slower: its p95
//! rose by 4 ms on a 2-core machine, while the same scan followed by a 0.2 ms
//! sleep cost nothing (BENCHMARKS.md, "Thread pools"). Neither a pool of
//! `cores − 1` rayon workers with the caller taking a share, nor helpers that
//! wait on a condition variable the moment their share is done (no spinning, no
//! yielding) removed that tail: a helper thread that has just run, even asleep,
//! did. Helpers that exit when the scan ends did remove it. So the helpers are
//! scoped threads; the caller takes a share of the tasks (one atomic counter
//! hands them out), and when it returns no scan thread is left. Starting them
//! costs about 40 µs a scan on that machine, which the parallel cutoff
//! ([`crate::index::scan::parallel_cutoff`]) accounts for.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Threads a parallel scan uses, the caller included: `RAYON_NUM_THREADS` when
/// set to a positive number (the variable the rest of the core's parallelism
/// reads), else the cores the process may run on.
pub fn scan_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// `task(0) … task(tasks − 1)` folded with `merge` from `identity()`, on the
/// calling thread and up to `scan_threads() − 1` scoped helpers; each takes the
/// next task from a shared counter, so a helper that cannot be started only
/// leaves more tasks to the others. `merge` must be associative and commutative
/// over the task results (the order they meet in is not fixed).
pub(crate) fn shared_reduce<T, I, F, M>(tasks: usize, identity: I, task: F, merge: M) -> T
where
    T: Send,
    I: Fn() -> T + Sync,
    F: Fn(usize) -> T + Sync,
    M: Fn(T, T) -> T + Sync,
{
    let next = AtomicUsize::new(0);
    let run = || {
        let mut acc = identity();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= tasks {
                return acc;
            }
            acc = merge(acc, task(i));
        }
    };
    let helpers = scan_threads()
        .saturating_sub(1)
        .min(tasks.saturating_sub(1));
    if helpers == 0 {
        return run();
    }
    std::thread::scope(|s| {
        let started: Vec<_> = (0..helpers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("routecore-scan".into())
                    .spawn_scoped(s, run)
                    .ok()
            })
            .collect();
        let mine = run();
        started
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .fold(mine, &merge)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_once() {
        for tasks in [0, 1, 2, 3, 17, 1000] {
            let seen: Vec<usize> = shared_reduce(
                tasks,
                Vec::new,
                |i| vec![i],
                |mut a, b| {
                    a.extend(b);
                    a
                },
            );
            let mut seen = seen;
            seen.sort_unstable();
            assert_eq!(seen, (0..tasks).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_panicking_task_panics_the_caller_and_the_helpers_live_on() {
        let r = std::panic::catch_unwind(|| {
            shared_reduce(
                64,
                || 0u64,
                |i| if i == 40 { panic!("task 40") } else { i as u64 },
                |a, b| a + b,
            )
        });
        assert!(r.is_err());
        assert_eq!(
            shared_reduce(64, || 0u64, |i| i as u64, |a, b| a + b),
            (0..64u64).sum::<u64>()
        );
    }

    #[test]
    fn concurrent_callers_each_get_their_own_result() {
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..50)
                        .map(|_| shared_reduce(100, || 0u64, |i| i as u64 * t, |a, b| a + b))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for (t, h) in handles.into_iter().enumerate() {
            assert!(h
                .join()
                .unwrap()
                .iter()
                .all(|&s| s == (0..100u64).sum::<u64>() * t as u64));
        }
    }

    #[test]
    fn sums_match_from_a_rayon_worker_too() {
        let want: u64 = (0..500u64).sum();
        let got = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap()
            .install(|| shared_reduce(500, || 0u64, |i| i as u64, |a, b| a + b));
        assert_eq!(got, want);
    }
}
