//! `routecore._native.EntitySet`: the core's dictionary and pattern entities.

use pyo3::prelude::*;
use routecore_core::entities::{Entity, EntitySet};

use crate::errors::PyRcResult;

/// Dictionary terms (one Aho-Corasick automaton) and regex patterns, compiled once;
/// `find` releases the GIL.
#[pyclass(module = "routecore._native", name = "EntitySet", frozen)]
pub struct PyEntitySet {
    inner: EntitySet,
}

type Found = (String, String, usize, usize);

fn tuples(found: Vec<Entity>) -> Vec<Found> {
    found
        .into_iter()
        .map(|e| (e.kind, e.value, e.start, e.end))
        .collect()
}

#[pymethods]
impl PyEntitySet {
    #[new]
    #[pyo3(signature = (dictionaries, patterns, fold_accents = true))]
    fn new(
        dictionaries: Vec<(String, Vec<String>)>,
        patterns: Vec<(String, String)>,
        fold_accents: bool,
    ) -> PyRcResult<Self> {
        Ok(Self {
            inner: EntitySet::new(&dictionaries, &patterns, fold_accents)?,
        })
    }

    /// (kind, value, start, end) of each entity in `text` (character offsets).
    fn find(&self, py: Python<'_>, text: &str) -> Vec<Found> {
        py.detach(|| tuples(self.inner.find(text)))
    }

    /// :meth:`find` of each text.
    fn find_many(&self, py: Python<'_>, texts: Vec<String>) -> Vec<Vec<Found>> {
        py.detach(|| texts.iter().map(|t| tuples(self.inner.find(t))).collect())
    }

    /// (dictionary terms, patterns).
    fn __len__(&self) -> usize {
        let (t, p) = self.inner.len();
        t + p
    }
}
