//! `routecore._native`: type conversion and error mapping over `routecore-core`.

mod arrays;
mod encoder;
mod entities;
mod errors;
mod gil;
mod head;
mod index;
mod kernels;
mod lexical;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<index::PyFlatIndex>()?;
    m.add_class::<index::PyStepParams>()?;
    m.add_class::<index::PyStepResult>()?;
    m.add_function(wrap_pyfunction!(index::score_many, m)?)?;
    m.add_class::<head::PyRouteHead>()?;
    m.add_class::<head::PyHeadReading>()?;
    m.add_class::<encoder::PyEncoder>()?;
    m.add_class::<encoder::PyEncodeStats>()?;
    m.add_class::<encoder::PyCacheCounters>()?;
    m.add_class::<encoder::PyStaticEncoder>()?;
    m.add_class::<lexical::PyLexicalIndex>()?;
    m.add_class::<entities::PyEntitySet>()?;
    m.add_function(wrap_pyfunction!(lexical::lexical_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::topk, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::softmax, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::dot_rows, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::aggregate, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::apply_affinity, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::detect_collision, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::parallel_cutoff, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::set_parallel_cutoff, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::read_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::route_parallel_cutoff, m)?)?;
    m.add_function(wrap_pyfunction!(kernels::set_route_parallel_cutoff, m)?)?;
    Ok(())
}
