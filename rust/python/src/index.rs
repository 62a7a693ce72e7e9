//! `routecore._native.FlatIndex`: the core flat index behind a reader-writer lock.

use std::path::PathBuf;

use numpy::{PyArray1, PyReadonlyArray1};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use routecore_core::scoring::step::{
    score_routes_batch, score_routes_biased, StepParams, StepResult,
};
use routecore_core::scoring::Aggregation;
use routecore_core::{persist, Error, FlatIndex, StorageKind};

use crate::arrays::{shaped, F32Rows};
use crate::errors::{PyRcErr, PyRcResult};

/// Flat exact index. Searches take a shared lock, writes an exclusive one, so a
/// reader never sees a half-written entry. The GIL is released during compute.
#[pyclass(module = "routecore._native", name = "FlatIndex", frozen)]
pub struct PyFlatIndex {
    inner: RwLock<FlatIndex>,
}

fn kind_of(s: &str) -> PyRcResult<StorageKind> {
    Ok(StorageKind::parse(s).ok_or_else(|| {
        Error::InvalidArgument(format!("storage must be 'f32', 'f16' or 'int8', got {s:?}"))
    })?)
}

fn strs(v: &Option<Vec<String>>) -> Option<Vec<&str>> {
    v.as_ref().map(|v| v.iter().map(String::as_str).collect())
}

/// `FlatIndex::add` or `FlatIndex::update`.
type BatchOp = fn(
    &mut FlatIndex,
    &[u64],
    &[f32],
    Option<&[&str]>,
    Option<&[&str]>,
) -> routecore_core::Result<()>;

/// What [`PyFlatIndex::entries`] returns.
type Entries<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyAny>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
);

/// The name of each code, as a list sharing one Python string per name.
fn name_list<'py>(
    py: Python<'py>,
    (codes, names): (Vec<u32>, Vec<String>),
) -> PyResult<Bound<'py, PyList>> {
    let names: Vec<Bound<'py, PyString>> = names.iter().map(|s| PyString::new(py, s)).collect();
    PyList::new(py, codes.iter().map(|&c| &names[c as usize]))
}

/// What one routing step returns before conversion: the result, and the ids and
/// label codes of its best exemplars (read under the same lock).
type StepOut = (StepResult, Vec<u64>, Vec<u32>);

/// A step's result with the ids and label codes of its best exemplars in `g`.
fn with_top(g: &FlatIndex, r: StepResult) -> StepOut {
    let ids: Vec<u64> = r.top.iter().map(|h| g.ids()[h.index]).collect();
    let labels: Vec<u32> = r.top.iter().map(|h| g.label_codes()[h.index]).collect();
    (r, ids, labels)
}

/// The native views of several steps' parameters and biases (None: no bias).
type StepInputs<'a> = (Vec<&'a StepParams>, Vec<Option<&'a [f32]>>);

fn step_inputs<'a, 'py>(
    params: &'a [PyRef<'py, PyStepParams>],
    biases: &'a [Option<PyReadonlyArray1<'py, f32>>],
) -> PyResult<StepInputs<'a>> {
    let biases = biases
        .iter()
        .map(|b| b.as_ref().map(|b| b.as_slice()).transpose())
        .collect::<Result<Vec<_>, _>>()?;
    Ok((params.iter().map(|p| &p.inner).collect(), biases))
}

impl PyFlatIndex {
    /// One routing step under the read lock (no GIL needed).
    fn step(
        &self,
        query: &[f32],
        p: &StepParams,
        bias: Option<&[f32]>,
    ) -> routecore_core::Result<StepOut> {
        let g = self.inner.read();
        Ok(with_top(&g, score_routes_biased(&g, query, p, bias)?))
    }

    /// Convert one add/update batch and run `op` under the write lock, GIL released.
    fn write_batch(
        &self,
        py: Python<'_>,
        ids: PyReadonlyArray1<u64>,
        vectors: &Bound<'_, PyAny>,
        labels: Option<Vec<String>>,
        domains: Option<Vec<String>>,
        op: BatchOp,
    ) -> PyResult<()> {
        let v = F32Rows::extract(vectors, "vectors", self.inner.read().dim())?;
        let (ids, data) = (ids.as_slice()?, v.slice());
        let (l, d) = (strs(&labels), strs(&domains));
        py.detach(|| {
            op(
                &mut self.inner.write(),
                ids,
                data,
                l.as_deref(),
                d.as_deref(),
            )
        })
        .map_err(|e| PyRcErr(e).into())
    }
}

#[pymethods]
impl PyFlatIndex {
    #[new]
    #[pyo3(signature = (dim, storage = "f32", normalize = true))]
    fn new(dim: usize, storage: &str, normalize: bool) -> PyRcResult<Self> {
        Ok(PyFlatIndex {
            inner: RwLock::new(FlatIndex::new(dim, kind_of(storage)?, normalize)?),
        })
    }

    #[pyo3(signature = (ids, vectors, labels = None, domains = None))]
    fn add(
        &self,
        py: Python<'_>,
        ids: PyReadonlyArray1<u64>,
        vectors: &Bound<'_, PyAny>,
        labels: Option<Vec<String>>,
        domains: Option<Vec<String>>,
    ) -> PyResult<()> {
        self.write_batch(py, ids, vectors, labels, domains, FlatIndex::add)
    }

    #[pyo3(signature = (ids, vectors, labels = None, domains = None))]
    fn update(
        &self,
        py: Python<'_>,
        ids: PyReadonlyArray1<u64>,
        vectors: &Bound<'_, PyAny>,
        labels: Option<Vec<String>>,
        domains: Option<Vec<String>>,
    ) -> PyResult<()> {
        self.write_batch(py, ids, vectors, labels, domains, FlatIndex::update)
    }

    fn remove(&self, py: Python<'_>, ids: PyReadonlyArray1<u64>) -> PyResult<()> {
        let ids = ids.as_slice()?;
        py.detach(|| self.inner.write().remove(ids))
            .map_err(|e| PyRcErr(e).into())
    }

    /// Returns (scores, ids, label codes): shape (k,) for one query, (n, k) for a batch.
    fn search<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        k: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let q = F32Rows::extract(queries, "queries", self.inner.read().dim())?;
        let data = q.slice();
        let r = py
            .detach(|| self.inner.read().search(data, k))
            .map_err(PyRcErr)?;
        Ok((
            shaped(py, r.scores, r.nq, k, q.single)?,
            shaped(py, r.ids, r.nq, k, q.single)?,
            shaped(py, r.labels, r.nq, k, q.single)?,
        ))
    }

    /// Exact score of every row for one query, in row order.
    fn score_all<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let q = F32Rows::extract(query, "query", self.inner.read().dim())?;
        let data = q.slice();
        let v = py
            .detach(|| self.inner.read().score_all(data))
            .map_err(PyRcErr)?;
        Ok(PyArray1::from_vec(py, v))
    }

    /// One native routing step; see `routecore_core::scoring::step`. With a `bias`
    /// (float32, one per label code), the result also holds `dense` and `top_dense`.
    #[pyo3(signature = (query, params = None, bias = None))]
    fn score_routes<'py>(
        &self,
        py: Python<'py>,
        query: &Bound<'py, PyAny>,
        params: Option<PyRef<'py, PyStepParams>>,
        bias: Option<PyReadonlyArray1<'py, f32>>,
    ) -> PyResult<PyStepResult> {
        let q = F32Rows::extract(query, "query", self.inner.read().dim())?;
        let data = q.slice();
        let bias = bias.as_ref().map(|b| b.as_slice()).transpose()?;
        let default;
        let p = match &params {
            Some(p) => &p.inner,
            None => {
                default = PyStepParams::default().inner;
                &default
            }
        };
        let out = py.detach(|| self.step(data, p, bias)).map_err(PyRcErr)?;
        Ok(step_result(py, out))
    }

    /// [`score_routes`] of each row of `queries` (``n x dim``), row `i` with `params[i]` and
    /// `biases[i]` (None, or one per label code), in one call with the GIL released once and
    /// the exemplar table read once per tile for all of them
    /// (`routecore_core::scoring::step::score_routes_batch`).
    fn score_routes_batch<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        params: Vec<PyRef<'py, PyStepParams>>,
        biases: Vec<Option<PyReadonlyArray1<'py, f32>>>,
    ) -> PyResult<Vec<PyStepResult>> {
        let dim = self.inner.read().dim();
        let q = F32Rows::extract(queries, "queries", dim)?;
        let data = q.slice();
        let (params, biases) = step_inputs(&params, &biases)?;
        let outs = py
            .detach(|| {
                let g = self.inner.read();
                let rs = score_routes_batch(&g, data, &params, &biases)?;
                Ok::<_, Error>(rs.into_iter().map(|r| with_top(&g, r)).collect::<Vec<_>>())
            })
            .map_err(PyRcErr)?;
        Ok(outs.into_iter().map(|o| step_result(py, o)).collect())
    }

    fn label_names(&self) -> Vec<String> {
        self.inner.read().label_names().to_vec()
    }
    fn domain_names(&self) -> Vec<String> {
        self.inner.read().domain_names().to_vec()
    }
    /// `(ids, vectors, labels, domains)` of every row, in row order (copies), read
    /// under one lock: a concurrent write cannot pair one state's rows with
    /// another state's labels.
    fn entries<'py>(&self, py: Python<'py>) -> PyResult<Entries<'py>> {
        let (ids, rows, n, dim, labels, domains) = py.detach(|| {
            let g = self.inner.read();
            (
                g.ids().to_vec(),
                g.storage().matrix().to_vec(),
                g.len(),
                g.dim(),
                (g.label_codes().to_vec(), g.label_names().to_vec()),
                (g.domain_codes().to_vec(), g.domain_names().to_vec()),
            )
        });
        Ok((
            PyArray1::from_vec(py, ids),
            shaped(py, rows, n, dim, false)?,
            name_list(py, labels)?,
            name_list(py, domains)?,
        ))
    }
    #[getter]
    fn dim(&self) -> usize {
        self.inner.read().dim()
    }
    #[getter]
    fn storage(&self) -> &'static str {
        self.inner.read().kind().name()
    }
    #[getter]
    fn normalize(&self) -> bool {
        self.inner.read().normalize()
    }
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.read().storage().nbytes()
    }
    fn __len__(&self) -> usize {
        self.inner.read().len()
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| persist::save(&self.inner.read(), &path))
            .map_err(|e| PyRcErr(e).into())
    }

    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let idx = py.detach(|| persist::load(&path)).map_err(PyRcErr)?;
        Ok(PyFlatIndex {
            inner: RwLock::new(idx),
        })
    }
}

/// The parameters of one routing step (`routecore_core::scoring::step::StepParams`):
/// built once per policy on the Python side and passed whole to every step.
#[pyclass(module = "routecore._native", name = "StepParams", frozen)]
#[derive(Clone)]
pub struct PyStepParams {
    inner: StepParams,
}

impl Default for PyStepParams {
    fn default() -> Self {
        PyStepParams {
            inner: StepParams::new(Aggregation::Max, 0.05),
        }
    }
}

#[pymethods]
impl PyStepParams {
    #[new]
    #[pyo3(signature = (*, aggregation = "max", top_n = 3, temperature = 0.05, active_domains = Vec::new(), boost = 1.15,
                        penalty = 0.7, collision_gap = 0.08, top_exemplars = 5, exact_top = 10, exact_band = 0.0,
                        exact_floor = f32::INFINITY, probabilities = true, exact_routes = Vec::new()))]
    #[allow(clippy::too_many_arguments)] // keyword-only, once per policy: the struct the steps take
    fn new(
        aggregation: &str,
        top_n: usize,
        temperature: f32,
        active_domains: Vec<String>,
        boost: f32,
        penalty: f32,
        collision_gap: f32,
        top_exemplars: usize,
        exact_top: usize,
        exact_band: f32,
        exact_floor: f32,
        probabilities: bool,
        exact_routes: Vec<String>,
    ) -> PyResult<Self> {
        Ok(PyStepParams {
            inner: StepParams {
                aggregation: Aggregation::parse(aggregation, top_n).map_err(PyRcErr)?,
                temperature,
                active_domains,
                boost,
                penalty,
                collision_gap,
                top_exemplars,
                exact_top,
                exact_band,
                exact_floor,
                probabilities,
                exact_routes,
            },
        })
    }

    fn __repr__(&self) -> String {
        format!("StepParams({:?})", self.inner)
    }
}

/// One routing step's arrays, moved into numpy without copies. Per-route arrays are in
/// label-code order; `dense` and `top_dense` are set when the step had a bias.
#[pyclass(module = "routecore._native", name = "StepResult", frozen)]
pub struct PyStepResult {
    #[pyo3(get)]
    raw: Py<PyArray1<f32>>,
    #[pyo3(get)]
    bound: Py<PyArray1<f32>>,
    #[pyo3(get)]
    adjusted: Py<PyArray1<f32>>,
    #[pyo3(get)]
    probs: Py<PyArray1<f32>>,
    #[pyo3(get)]
    route_domains: Py<PyArray1<u32>>,
    #[pyo3(get)]
    top_scores: Py<PyArray1<f32>>,
    #[pyo3(get)]
    top_ids: Py<PyArray1<u64>>,
    #[pyo3(get)]
    top_labels: Py<PyArray1<u32>>,
    /// `(first, second, gap)` label codes of a collision between the top two routes.
    #[pyo3(get)]
    collision: Option<(usize, usize, f32)>,
    #[pyo3(get)]
    dense: Option<Py<PyArray1<f32>>>,
    #[pyo3(get)]
    top_dense: Option<Py<PyArray1<f32>>>,
}

#[pymethods]
impl PyStepResult {
    fn __repr__(&self) -> String {
        "StepResult(raw, bound, adjusted, probs, route_domains, top_scores, top_ids, top_labels, \
         collision, dense, top_dense)"
            .to_string()
    }
}

fn step_result(py: Python<'_>, (r, top_ids, top_labels): StepOut) -> PyStepResult {
    let top_scores: Vec<f32> = r.top.iter().map(|h| h.score).collect();
    PyStepResult {
        raw: PyArray1::from_vec(py, r.raw).unbind(),
        bound: PyArray1::from_vec(py, r.bound).unbind(),
        adjusted: PyArray1::from_vec(py, r.adjusted).unbind(),
        probs: PyArray1::from_vec(py, r.probs).unbind(),
        route_domains: PyArray1::from_vec(py, r.route_domains).unbind(),
        top_scores: PyArray1::from_vec(py, top_scores).unbind(),
        top_ids: PyArray1::from_vec(py, top_ids).unbind(),
        top_labels: PyArray1::from_vec(py, top_labels).unbind(),
        collision: r.collision.map(|c| (c.first, c.second, c.gap)),
        dense: r.dense.map(|v| PyArray1::from_vec(py, v).unbind()),
        top_dense: r.top_dense.map(|v| PyArray1::from_vec(py, v).unbind()),
    }
}

/// One routing step per index, all on one query vector, in one call with the GIL
/// released once (context layers: one encode, several heads). ``params[i]`` and
/// ``biases[i]`` go with ``indexes[i]``; every index must have the query's width.
#[pyfunction]
pub fn score_many<'py>(
    py: Python<'py>,
    indexes: Vec<Py<PyFlatIndex>>,
    query: &Bound<'py, PyAny>,
    params: Vec<PyRef<'py, PyStepParams>>,
    biases: Vec<Option<PyReadonlyArray1<'py, f32>>>,
) -> PyResult<Vec<PyStepResult>> {
    if params.len() != indexes.len() || biases.len() != indexes.len() {
        return Err(PyRcErr(Error::InvalidArgument(format!(
            "score_many: {} indexes, {} params and {} biases (one each)",
            indexes.len(),
            params.len(),
            biases.len()
        )))
        .into());
    }
    let Some(first) = indexes.first() else {
        return Ok(Vec::new());
    };
    let dim = first.get().inner.read().dim();
    if let Some(other) = indexes.iter().find(|ix| ix.get().inner.read().dim() != dim) {
        return Err(PyRcErr(Error::DimensionMismatch {
            expected: dim,
            got: other.get().inner.read().dim(),
        })
        .into());
    }
    let q = F32Rows::extract(query, "query", dim)?;
    let data = q.slice();
    let (params, biases) = step_inputs(&params, &biases)?;
    let outs = py
        .detach(|| {
            indexes
                .iter()
                .zip(&params)
                .zip(&biases)
                .map(|((ix, p), b)| ix.get().step(data, p, *b))
                .collect::<routecore_core::Result<Vec<_>>>()
        })
        .map_err(PyRcErr)?;
    Ok(outs.into_iter().map(|o| step_result(py, o)).collect())
}
