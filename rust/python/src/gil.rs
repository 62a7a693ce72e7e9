//! When a call lets other Python threads run while it computes.
//!
//! Handing the GIL over and taking it back costs a context switch whenever other threads want
//! it, which is more than a few microseconds of work. So, as NumPy's loops do, a call releases
//! the GIL only from a size of work; smaller work runs on the calling thread with the GIL held.

use parking_lot::RwLock;
use pyo3::Python;

/// Work (elements scanned, or bytes of text) from which a call releases the GIL: about ten
/// microseconds of the cheapest kernels (a float32 dot product row by row).
pub const DETACH_MIN: usize = 1 << 16;

/// `f()`, with the GIL released when `work` reaches [`DETACH_MIN`].
pub fn detach_from<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, work: usize, f: F) -> T {
    if work >= DETACH_MIN {
        py.detach(f)
    } else {
        f()
    }
}

/// `f` on a read guard of `lock`. Small `work` runs with the GIL held when the lock is free at
/// once; otherwise (large work, or a writer holding the lock) the GIL is released first, so a
/// long write never stalls the other Python threads.
pub fn read_with<L: Send + Sync, T: Send>(
    py: Python<'_>,
    lock: &RwLock<L>,
    work: usize,
    f: impl Send + FnOnce(&L) -> T,
) -> T {
    if work < DETACH_MIN {
        if let Some(guard) = lock.try_read() {
            return f(&guard);
        }
    }
    py.detach(|| f(&lock.read()))
}
