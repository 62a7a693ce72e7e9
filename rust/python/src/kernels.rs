//! Free kernel functions, exposed for the Python layer and for property tests.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use routecore_core::index::scan;
use routecore_core::kernels::{simd, topk as core_topk};
use routecore_core::scoring;

use crate::errors::{PyRcErr, PyRcResult};
use crate::gil::detach_from;

/// (scores, indices) arrays.
type TopkArrays<'py> = (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<u64>>);

/// Top-k of a score vector: (scores, indices), ties to the lower index.
#[pyfunction]
pub fn topk<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray1<f32>,
    k: usize,
) -> PyResult<TopkArrays<'py>> {
    let s = scores.as_slice()?;
    if k == 0 || k > s.len() {
        return Err(PyRcErr(routecore_core::Error::BadK { k, n: s.len() }).into());
    }
    let h = py.detach(|| core_topk::top_k(s, k));
    Ok((
        PyArray1::from_vec(py, h.iter().map(|x| x.score).collect()),
        PyArray1::from_vec(py, h.iter().map(|x| x.index as u64).collect()),
    ))
}

/// `rows @ q` (float32, `rows` C-contiguous `[n, d]`, `q` `[d]`) on the calling thread, with the
/// SIMD kernel of the index scans.
#[pyfunction]
pub fn dot_rows<'py>(
    py: Python<'py>,
    rows: PyReadonlyArray2<f32>,
    q: PyReadonlyArray1<f32>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let (n, d) = (rows.shape()[0], rows.shape()[1]);
    let (r, q) = (rows.as_slice()?, q.as_slice()?);
    if q.len() != d {
        return Err(PyRcErr(routecore_core::Error::DimensionMismatch {
            expected: d,
            got: q.len(),
        })
        .into());
    }
    let mut out = vec![0f32; n];
    if d > 0 {
        detach_from(py, n * d, || simd::dot_rows(r, q, &mut out));
    }
    Ok(PyArray1::from_vec(py, out))
}

/// Softmax with temperature (stable; -inf entries get 0).
#[pyfunction]
#[pyo3(signature = (x, temperature = 1.0))]
pub fn softmax<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<f32>,
    temperature: f32,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let s = x.as_slice()?;
    let r = py
        .detach(|| scoring::softmax(s, temperature))
        .map_err(PyRcErr)?;
    Ok(PyArray1::from_vec(py, r))
}

/// Per-route aggregation: `how` is 'max', 'mean' or 'topn' (with `n`).
#[pyfunction]
#[pyo3(signature = (scores, routes, n_routes, how = "max", n = 3))]
pub fn aggregate<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray1<f32>,
    routes: PyReadonlyArray1<u32>,
    n_routes: usize,
    how: &str,
    n: usize,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let (s, r) = (scores.as_slice()?, routes.as_slice()?);
    let how = scoring::Aggregation::parse(how, n).map_err(PyRcErr)?;
    let out = py
        .detach(|| scoring::aggregate(s, r, n_routes, how))
        .map_err(PyRcErr)?;
    Ok(PyArray1::from_vec(py, out))
}

/// Domain affinity: the factor `boost` where `active[domain]`, `penalty` elsewhere (no-op when nothing
/// is active), applied by `routecore_core::scoring::affinity_scale` (× on scores ≥ 0, ÷ on negative ones).
#[pyfunction]
#[pyo3(signature = (scores, domains, active, boost = scoring::DEFAULT_BOOST, penalty = scoring::DEFAULT_PENALTY))]
pub fn apply_affinity<'py>(
    py: Python<'py>,
    scores: PyReadonlyArray1<f32>,
    domains: PyReadonlyArray1<u32>,
    active: Vec<bool>,
    boost: f32,
    penalty: f32,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let mut s = scores.as_slice()?.to_vec();
    let d = domains.as_slice()?;
    py.detach(|| scoring::apply_affinity(&mut s, d, &active, boost, penalty))
        .map_err(PyRcErr)?;
    Ok(PyArray1::from_vec(py, s))
}

/// (first, second, gap) when the best two come from different domains within `max_gap`.
#[pyfunction]
#[pyo3(signature = (scores, domains, max_gap = scoring::DEFAULT_COLLISION_GAP))]
pub fn detect_collision(
    scores: PyReadonlyArray1<f32>,
    domains: PyReadonlyArray1<u32>,
    max_gap: f32,
) -> PyRcResult<Option<(usize, usize, f32)>> {
    let c = scoring::detect_collision(
        scores
            .as_slice()
            .map_err(|e| routecore_core::Error::InvalidArgument(e.to_string()))?,
        domains
            .as_slice()
            .map_err(|e| routecore_core::Error::InvalidArgument(e.to_string()))?,
        max_gap,
    )?;
    Ok(c.map(|c| (c.first, c.second, c.gap)))
}

/// Which kernels run: `"avx2+fma"` or `"portable"`, plus `"+avx512f"` (f32 and
/// f16 scans) and `"+avx512vnni"` (int8 scans) where the CPU has them.
#[pyfunction]
pub fn simd_level() -> String {
    let base = if simd::has_avx2_fma() {
        "avx2+fma"
    } else {
        "portable"
    };
    let f = if simd::has_avx512f() { "+avx512f" } else { "" };
    let v = if routecore_core::kernels::simd_int8::has_vnni512() {
        "+avx512vnni"
    } else {
        ""
    };
    format!("{base}{f}{v}")
}

/// Scanned elements (rows × dim) from which searches use several threads.
#[pyfunction]
pub fn parallel_cutoff() -> usize {
    scan::parallel_cutoff()
}

/// Change the parallel cutoff (elements); a huge value disables threading.
#[pyfunction]
pub fn set_parallel_cutoff(elements: usize) {
    scan::set_parallel_cutoff(elements)
}

/// Best-of-`reps` read bandwidth (GB/s) over `megabytes` with `threads` threads.
#[pyfunction]
#[pyo3(signature = (megabytes = 1024, threads = 1, reps = 5))]
pub fn read_bandwidth(
    py: Python<'_>,
    megabytes: usize,
    threads: usize,
    reps: usize,
) -> PyResult<f64> {
    let bytes = megabytes.saturating_mul(1 << 20);
    Ok(py
        .detach(|| routecore_core::kernels::bandwidth::read_bandwidth(bytes, threads, reps))
        .map_err(PyRcErr)?)
}

/// Elements from which the routing step (`score_routes`) runs on several threads.
#[pyfunction]
pub fn route_parallel_cutoff() -> usize {
    scan::route_parallel_cutoff()
}

/// Change the routing step's cutoff (elements).
#[pyfunction]
pub fn set_route_parallel_cutoff(elements: usize) {
    scan::set_route_parallel_cutoff(elements)
}
