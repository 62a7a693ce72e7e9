//! `routecore._native.Encoder`: the core ONNX text encoder; `StaticEncoder`: a static table.

use std::path::PathBuf;

use pyo3::prelude::*;
use routecore_core::encoder::{Encoded, Encoder, EncoderOptions, StaticEncoder, TextKind};

use crate::arrays::shaped;
use crate::errors::PyRcErr;

/// The counters of one `encode` call: time tokenizing and in the model (ns), cache hits.
#[pyclass(module = "routecore._native", name = "EncodeStats", frozen, get_all)]
pub struct PyEncodeStats {
    tokenize_ns: u64,
    infer_ns: u64,
    cache_hits: usize,
}

/// The query cache's counters (`Encoder.cache_stats`).
#[pyclass(module = "routecore._native", name = "CacheCounters", frozen, get_all)]
pub struct PyCacheCounters {
    hits: u64,
    misses: u64,
    size: usize,
    capacity: usize,
}

/// What `encode` returns: (embeddings [n, dim] float32, truncated positions, counters).
type EncodedPy<'py> = (Bound<'py, PyAny>, Vec<usize>, PyEncodeStats);

/// `e` as Python values.
fn encoded(py: Python<'_>, e: Encoded) -> PyResult<EncodedPy<'_>> {
    let stats = PyEncodeStats {
        tokenize_ns: e.tokenize_ns,
        infer_ns: e.infer_ns,
        cache_hits: e.cache_hits,
    };
    Ok((shaped(py, e.data, e.n, e.dim, false)?, e.truncated, stats))
}

/// A loaded model; safe to share between Python threads (GIL released while encoding).
#[pyclass(module = "routecore._native", name = "Encoder", frozen)]
pub struct PyEncoder {
    inner: Encoder,
}

impl PyEncoder {
    /// `encode` or `encode_background`. A batch the cache answers whole is a lookup of
    /// microseconds: made holding the GIL, since letting it go hands it to another thread that
    /// this one must then wait for (with many threads calling, each such handover is a context
    /// switch, and more when cores are busy).
    fn run<'py>(
        &self,
        py: Python<'py>,
        texts: &[String],
        kind: &str,
        background: bool,
    ) -> PyResult<EncodedPy<'py>> {
        let kind = TextKind::parse(kind).map_err(PyRcErr)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let e = match self.inner.encode_cached(&refs, kind) {
            Some(e) => e,
            None if background => py
                .detach(|| self.inner.encode_background(&refs, kind))
                .map_err(PyRcErr)?,
            None => py
                .detach(|| self.inner.encode(&refs, kind))
                .map_err(PyRcErr)?,
        };
        encoded(py, e)
    }
}

#[pymethods]
impl PyEncoder {
    /// Open a model folder; `runtime_path` is the `libonnxruntime.so.*` to load.
    #[staticmethod]
    #[pyo3(signature = (path, runtime_path, variant = None, threads = None, cache_size = 1024, spinning = true))]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        runtime_path: PathBuf,
        variant: Option<String>,
        threads: Option<usize>,
        cache_size: usize,
        spinning: bool,
    ) -> PyResult<Self> {
        let opts = EncoderOptions {
            runtime_path,
            variant,
            intra_threads: threads,
            cache_size,
            spinning,
        };
        let inner = py.detach(|| Encoder::load(&path, &opts)).map_err(PyRcErr)?;
        Ok(PyEncoder { inner })
    }

    /// Returns (embeddings [n, dim] float32, truncated positions, stats dict).
    #[pyo3(signature = (texts, kind = "query"))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        kind: &str,
    ) -> PyResult<EncodedPy<'py>> {
        self.run(py, &texts, kind, false)
    }

    /// `encode` for background work (a lesson): a run on one thread, not on the shared pool.
    #[pyo3(signature = (texts, kind = "query"))]
    fn encode_background<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        kind: &str,
    ) -> PyResult<EncodedPy<'py>> {
        self.run(py, &texts, kind, true)
    }

    /// Token ids per text (prefix and special tokens included, truncated).
    #[pyo3(signature = (texts, kind = "query"))]
    fn tokenize(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        kind: &str,
    ) -> PyResult<(Vec<Vec<u32>>, Vec<bool>)> {
        let kind = TextKind::parse(kind).map_err(PyRcErr)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(py
            .detach(|| self.inner.tokenize(&refs, kind))
            .map_err(PyRcErr)?)
    }

    fn cache_stats(&self) -> PyCacheCounters {
        let s = self.inner.cache_stats();
        PyCacheCounters {
            hits: s.hits,
            misses: s.misses,
            size: s.size,
            capacity: s.capacity,
        }
    }

    fn clear_cache(&self) {
        self.inner.clear_cache()
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    #[getter]
    fn threads(&self) -> usize {
        self.inner.threads()
    }
    #[getter]
    fn truncations(&self) -> u64 {
        self.inner.truncations()
    }
    #[getter]
    fn onnx_path(&self) -> PathBuf {
        self.inner.onnx_path().to_path_buf()
    }
    /// The ONNX file's SHA-256 (hex), hashed while the model loaded.
    #[getter]
    fn onnx_sha256(&self) -> &str {
        self.inner.onnx_sha256()
    }
    #[getter]
    fn max_length(&self) -> usize {
        self.inner.config().max_length
    }
    #[getter]
    fn pooling(&self) -> String {
        format!("{:?}", self.inner.config().pooling).to_lowercase()
    }
    #[getter]
    fn query_prefix(&self) -> String {
        self.inner.config().query_prefix.clone()
    }
}

/// A static embedding table (`routecore models distill`): mean of piece rows, no transformer.
#[pyclass(module = "routecore._native", name = "StaticEncoder", frozen)]
pub struct PyStaticEncoder {
    inner: StaticEncoder,
}

#[pymethods]
impl PyStaticEncoder {
    /// Open a static model folder.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let inner = py.detach(|| StaticEncoder::load(&path)).map_err(PyRcErr)?;
        Ok(PyStaticEncoder { inner })
    }

    /// Returns (embeddings [n, dim] float32, truncated positions, counters), as `Encoder`;
    /// `kind` is checked and otherwise ignored (a static table has no prefixes).
    #[pyo3(signature = (texts, kind = "query"))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        kind: &str,
    ) -> PyResult<EncodedPy<'py>> {
        TextKind::parse(kind).map_err(PyRcErr)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let e = if refs.len() <= 4 {
            self.inner.encode(&refs) // microseconds: releasing the GIL would cost more
        } else {
            py.detach(|| self.inner.encode(&refs))
        }
        .map_err(PyRcErr)?;
        encoded(py, e)
    }

    /// Piece ids per text (no special tokens, truncated).
    #[pyo3(signature = (texts, kind = "query"))]
    fn tokenize(&self, texts: Vec<String>, kind: &str) -> PyResult<(Vec<Vec<u32>>, Vec<bool>)> {
        TextKind::parse(kind).map_err(PyRcErr)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(self.inner.tokenize(&refs).map_err(PyRcErr)?)
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    #[getter]
    fn rows(&self) -> usize {
        self.inner.config().rows
    }
    #[getter]
    fn truncations(&self) -> u64 {
        self.inner.truncations()
    }
    #[getter]
    fn max_length(&self) -> usize {
        self.inner.config().max_length
    }
    #[getter]
    fn source_model(&self) -> Option<String> {
        self.inner.config().source_model.clone()
    }
}
