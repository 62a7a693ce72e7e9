//! When a scan lets other Python threads run while it computes.
//!
//! Handing the GIL over and taking it back costs a context switch whenever other threads want
//! it, more than a scan of a few microseconds. So, as NumPy's loops do, `dot_rows` releases the
//! GIL only from a size of work. The other calls release it whatever their size: keeping it
//! through every small call of a query made 16 reader threads starve a thread retraining the
//! router (tests/updates/test_live_updates.py: 4 route changes in 60 s instead of 6 in 10 s).

use pyo3::Python;

/// Work (elements scanned) from which a scan releases the GIL: about ten microseconds of a
/// float32 dot product row by row.
pub const DETACH_MIN: usize = 1 << 16;

/// `f()`, with the GIL released when `work` reaches [`DETACH_MIN`].
pub fn detach_from<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, work: usize, f: F) -> T {
    if work >= DETACH_MIN {
        py.detach(f)
    } else {
        f()
    }
}
