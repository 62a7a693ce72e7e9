//! `routecore._native.RouteHead`: the exemplar head's forward pass (`scoring::head`).

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use routecore_core::scoring::head::RouteHead;

use crate::arrays::F32Rows;
use crate::errors::{InvalidArgumentError, PyRcErr};

/// A trained linear head read in a route table's order. The GIL is released during compute.
#[pyclass(module = "routecore._native", name = "RouteHead", frozen)]
pub struct PyRouteHead {
    inner: RouteHead,
}

/// [`RouteHead::read`]'s result: route probabilities in table order, the best route's
/// probability and the out-of-scope class's, both under the full softmax.
#[pyclass(module = "routecore._native", name = "HeadReading", frozen, get_all)]
pub struct PyHeadReading {
    probs: Py<PyArray1<f32>>,
    best: f64,
    out_of_scope: f64,
}

fn contiguous<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    a: &'a numpy::PyReadonlyArray<'_, T, D>,
    what: &str,
) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| {
        InvalidArgumentError::new_err(format!("{what}: expected a C-contiguous array"))
    })
}

#[pymethods]
impl PyRouteHead {
    /// `weights` (float32, `dim × classes`), `bias` (float32, `classes`), the class each of
    /// the table's routes reads (`classes` for one the head lacks) and the out-of-scope class's.
    #[new]
    fn new(
        weights: PyReadonlyArray2<'_, f32>,
        bias: PyReadonlyArray1<'_, f32>,
        route_cols: Vec<i64>,
        oos_col: i64,
    ) -> PyResult<Self> {
        let dim = weights.shape()[0];
        let w = contiguous(&weights, "head weights")?;
        let b = contiguous(&bias, "head bias")?;
        let inner = RouteHead::new(w, b, dim, &route_cols, oos_col).map_err(PyRcErr)?;
        Ok(Self { inner })
    }

    /// The head's reading of one query (float32, `dim`); `gain` (float32, one per route)
    /// moves the route probabilities over `temperature` when any is non-zero.
    #[pyo3(signature = (query, gain = None, temperature = 1.0))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyAny>,
        gain: Option<PyReadonlyArray1<'py, f32>>,
        temperature: f64,
    ) -> PyResult<PyHeadReading> {
        let q = F32Rows::extract(query, "query", self.inner.dim())?;
        if !q.single {
            return Err(InvalidArgumentError::new_err("query: expected one vector"));
        }
        let g = gain
            .as_ref()
            .map(|g| contiguous(g, "head gain"))
            .transpose()?;
        let data = q.slice();
        let r = py
            .detach(|| self.inner.read(data, g, temperature))
            .map_err(PyRcErr)?;
        Ok(PyHeadReading {
            probs: PyArray1::from_vec(py, r.probs).unbind(),
            best: r.best,
            out_of_scope: r.out_of_scope,
        })
    }

    /// The number of routes it reads.
    #[getter]
    fn routes(&self) -> usize {
        self.inner.routes()
    }
}
