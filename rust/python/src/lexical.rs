//! `routecore._native.LexicalIndex`: the core BM25 index behind a reader-writer lock.

use std::path::{Path, PathBuf};

use numpy::{PyArray1, PyArrayMethods};
use parking_lot::RwLock;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use routecore_core::lexical::{self, LexicalIndex, NO_DOC};

use crate::arrays::shaped;
use crate::errors::{PyRcErr, PyRcResult};

/// BM25 index over short texts, each with a label code. Queries take a shared
/// lock, `add` an exclusive one; the GIL is released during compute.
#[pyclass(module = "routecore._native", name = "LexicalIndex", frozen)]
pub struct PyLexicalIndex {
    inner: RwLock<LexicalIndex>,
}

/// A uint32 array (borrowed) or a list of ints (converted).
/// One list of document ids per query, checked against the number of queries.
fn u32_sets(sets: Option<Vec<Bound<'_, PyAny>>>, n: usize) -> PyResult<Option<Vec<Vec<u32>>>> {
    match sets {
        Some(e) if e.len() != n => Err(crate::errors::InvalidArgumentError::new_err(format!(
            "excluded has {} entries for {n} queries",
            e.len()
        ))),
        Some(e) => e.iter().map(u32s).collect::<PyResult<_>>().map(Some),
        None => Ok(None),
    }
}

fn u32s(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    match obj.cast::<PyArray1<u32>>() {
        Ok(a) => Ok(a.readonly().as_slice()?.to_vec()),
        Err(_) => obj.extract(),
    }
}

/// Name used in the messages of `from_bytes`.
const BYTES: &str = "<bytes>";

impl From<LexicalIndex> for PyLexicalIndex {
    fn from(index: LexicalIndex) -> Self {
        PyLexicalIndex {
            inner: RwLock::new(index),
        }
    }
}

#[pymethods]
impl PyLexicalIndex {
    /// "No document" in `exclude_doc` (2**32 - 1).
    #[classattr]
    const NO_DOC: u32 = NO_DOC;

    #[new]
    #[pyo3(signature = (stop_words = Vec::new(), k1 = lexical::DEFAULT_K1, b = lexical::DEFAULT_B, stemmer = "none"))]
    fn new(stop_words: Vec<String>, k1: f32, b: f32, stemmer: &str) -> PyRcResult<Self> {
        Ok(LexicalIndex::with_stemmer(&stop_words, k1, b, stemmer.parse()?)?.into())
    }

    /// Add documents with their label codes (uint32 array or list of ints).
    fn add(&self, py: Python<'_>, texts: Vec<String>, labels: &Bound<'_, PyAny>) -> PyResult<()> {
        let labels = u32s(labels)?;
        py.detach(|| self.inner.write().add(&texts, &labels))
            .map_err(|e| PyRcErr(e).into())
    }

    /// Best BM25 per label code `0..n_labels` (float32, 0 where nothing matches).
    fn score_labels<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        n_labels: usize,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let v = py
            .detach(|| self.inner.read().score_labels(query, n_labels))
            .map_err(PyRcErr)?;
        Ok(PyArray1::from_vec(py, v))
    }

    /// `(score_labels(query, n_labels), coverage(query))` from one tokenization.
    fn score_labels_covered<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        n_labels: usize,
    ) -> PyResult<(Bound<'py, PyArray1<f32>>, f32)> {
        let (v, cover) = py
            .detach(|| self.inner.read().score_labels_covered(query, n_labels))
            .map_err(PyRcErr)?;
        Ok((PyArray1::from_vec(py, v), cover))
    }

    /// The hybrid-scoring bias of each label after `lead` zeros (`LexicalIndex::label_bias`), or None.
    #[pyo3(signature = (query, n_labels, weight, lead = 0))]
    fn label_bias<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        n_labels: usize,
        weight: f64,
        lead: usize,
    ) -> PyResult<Option<Bound<'py, PyArray1<f32>>>> {
        let v = py
            .detach(|| self.inner.read().label_bias(query, n_labels, weight, lead))
            .map_err(PyRcErr)?;
        Ok(v.map(|v| PyArray1::from_vec(py, v)))
    }

    /// `score_labels` of each query: float32 `(len(queries), n_labels)`.
    #[pyo3(signature = (queries, n_labels, exclude_doc = None))]
    fn score_labels_batch<'py>(
        &self,
        py: Python<'py>,
        queries: Vec<String>,
        n_labels: usize,
        exclude_doc: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ex = exclude_doc.map(u32s).transpose()?;
        let v = py
            .detach(|| {
                self.inner
                    .read()
                    .score_labels_batch(&queries, n_labels, ex.as_deref())
            })
            .map_err(PyRcErr)?;
        shaped(py, v, queries.len(), n_labels, false)
    }

    /// Share (idf-weighted) of the query's non-stop tokens that some document
    /// holds, in [0, 1]; documents in `exclude` do not count.
    #[pyo3(signature = (query, exclude = None))]
    fn coverage(
        &self,
        py: Python<'_>,
        query: &str,
        exclude: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f32> {
        let ex = exclude.map(u32s).transpose()?.unwrap_or_default();
        Ok(py.detach(|| self.inner.read().coverage(query, &ex)))
    }

    /// `coverage` of each query (float32), with `excluded[i]` left out of query `i`.
    #[pyo3(signature = (queries, excluded = None))]
    fn coverage_batch<'py>(
        &self,
        py: Python<'py>,
        queries: Vec<String>,
        excluded: Option<Vec<Bound<'py, PyAny>>>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let ex =
            u32_sets(excluded, queries.len())?.unwrap_or_else(|| vec![Vec::new(); queries.len()]);
        let v = py.detach(|| {
            let index = self.inner.read();
            queries
                .iter()
                .zip(&ex)
                .map(|(q, e)| index.coverage(q, e))
                .collect::<Vec<f32>>()
        });
        Ok(PyArray1::from_vec(py, v))
    }

    /// `score_labels_covered` of each query: float32 `(len(queries), n_labels)`
    /// scores and `(len(queries),)` coverages, with the documents `excluded[i]`
    /// left out of query `i` (leave-one-out calibration).
    #[pyo3(signature = (queries, n_labels, excluded = None))]
    fn score_labels_covered_batch<'py>(
        &self,
        py: Python<'py>,
        queries: Vec<String>,
        n_labels: usize,
        excluded: Option<Vec<Bound<'py, PyAny>>>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<f32>>)> {
        let ex = u32_sets(excluded, queries.len())?;
        let (v, cover) = py
            .detach(|| {
                self.inner
                    .read()
                    .score_labels_covered_batch(&queries, n_labels, ex.as_deref())
            })
            .map_err(PyRcErr)?;
        Ok((
            shaped(py, v, queries.len(), n_labels, false)?,
            PyArray1::from_vec(py, cover),
        ))
    }

    /// BM25 of `query` against every document (float32, document order).
    fn score_docs<'py>(&self, py: Python<'py>, query: &str) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_vec(py, py.detach(|| self.inner.read().score_docs(query)))
    }

    /// The tokens of `text`, as the index sees them.
    #[staticmethod]
    fn tokens(py: Python<'_>, text: &str) -> Vec<String> {
        py.detach(|| lexical::tokens(text))
    }

    /// The index terms of `text`: its tokens stemmed by this index's stemmer.
    fn terms(&self, py: Python<'_>, text: &str) -> Vec<String> {
        py.detach(|| self.inner.read().terms_of(text))
    }

    /// The label code of each document (uint32, document order).
    fn labels<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        PyArray1::from_vec(py, self.inner.read().doc_labels().to_vec())
    }

    fn stop_words(&self) -> Vec<String> {
        let g = self.inner.read();
        g.stop_words().into_iter().map(str::to_owned).collect()
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let b = py.detach(|| self.inner.read().to_bytes());
        PyBytes::new(py, &b)
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyRcResult<Self> {
        Ok(py
            .detach(|| LexicalIndex::from_bytes(data, Path::new(BYTES)))?
            .into())
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.inner.read().save(&path))
            .map_err(|e| PyRcErr(e).into())
    }

    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyRcResult<Self> {
        Ok(py.detach(|| LexicalIndex::load(&path))?.into())
    }

    fn __len__(&self) -> usize {
        self.inner.read().len()
    }
    #[getter]
    fn n_terms(&self) -> usize {
        self.inner.read().n_terms()
    }
    #[getter]
    fn memory_bytes(&self) -> usize {
        self.inner.read().memory_bytes()
    }
    #[getter]
    fn k1(&self) -> f32 {
        self.inner.read().k1()
    }
    #[getter]
    fn b(&self) -> f32 {
        self.inner.read().b()
    }
    #[getter]
    fn stemmer(&self) -> &'static str {
        self.inner.read().stemmer().name()
    }
}

/// The tokens of `text` (the same as `LexicalIndex.tokens`).
#[pyfunction]
pub fn lexical_tokens(py: Python<'_>, text: &str) -> Vec<String> {
    py.detach(|| lexical::tokens(text))
}
