//! Python exceptions and the single mapping from core errors to them.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use routecore_core::Error;

create_exception!(
    routecore._native,
    RoutecoreError,
    PyException,
    "Base class of every routecore error."
);
create_exception!(
    routecore._native,
    DimensionMismatchError,
    RoutecoreError,
    "A vector has the wrong width."
);
create_exception!(
    routecore._native,
    EmptyIndexError,
    RoutecoreError,
    "The index holds no entries."
);
create_exception!(
    routecore._native,
    BadKError,
    RoutecoreError,
    "k is 0 or larger than the index."
);
create_exception!(
    routecore._native,
    UnknownIdError,
    RoutecoreError,
    "An id is not in the index."
);
create_exception!(
    routecore._native,
    DuplicateIdError,
    RoutecoreError,
    "An id is given twice or already present."
);
create_exception!(
    routecore._native,
    NonFiniteError,
    RoutecoreError,
    "NaN or inf in the input."
);
create_exception!(
    routecore._native,
    InvalidArgumentError,
    RoutecoreError,
    "An argument outside its domain."
);
create_exception!(
    routecore._native,
    CorruptIndexError,
    RoutecoreError,
    "An index file is truncated or damaged."
);
create_exception!(
    routecore._native,
    ModelError,
    RoutecoreError,
    "A model folder, graph or tokenizer cannot be used."
);
create_exception!(
    routecore._native,
    RuntimeUnavailableError,
    RoutecoreError,
    "The ONNX Runtime library cannot be loaded."
);
create_exception!(
    routecore._native,
    StorageIOError,
    RoutecoreError,
    "A file could not be read or written."
);

/// Core error → Python exception (the only place that knows the mapping).
pub struct PyRcErr(pub Error);

impl From<Error> for PyRcErr {
    fn from(e: Error) -> Self {
        PyRcErr(e)
    }
}

impl From<PyRcErr> for PyErr {
    fn from(e: PyRcErr) -> PyErr {
        let msg = e.0.to_string();
        match e.0 {
            Error::DimensionMismatch { .. } => DimensionMismatchError::new_err(msg),
            Error::EmptyIndex => EmptyIndexError::new_err(msg),
            Error::BadK { .. } => BadKError::new_err(msg),
            Error::UnknownId(_) => UnknownIdError::new_err(msg),
            Error::DuplicateId(_) => DuplicateIdError::new_err(msg),
            Error::NonFinite { .. } => NonFiniteError::new_err(msg),
            Error::InvalidArgument(_) => InvalidArgumentError::new_err(msg),
            Error::CorruptIndex { .. } => CorruptIndexError::new_err(msg),
            Error::Model(_) | Error::MaxLengthTooLong { .. } => ModelError::new_err(msg),
            Error::Runtime(_) => RuntimeUnavailableError::new_err(msg),
            Error::Io { .. } => StorageIOError::new_err(msg),
        }
    }
}

/// Result type of binding functions.
pub type PyRcResult<T> = Result<T, PyRcErr>;

/// Register every exception class on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RoutecoreError", py.get_type::<RoutecoreError>())?;
    m.add(
        "DimensionMismatchError",
        py.get_type::<DimensionMismatchError>(),
    )?;
    m.add("EmptyIndexError", py.get_type::<EmptyIndexError>())?;
    m.add("BadKError", py.get_type::<BadKError>())?;
    m.add("UnknownIdError", py.get_type::<UnknownIdError>())?;
    m.add("DuplicateIdError", py.get_type::<DuplicateIdError>())?;
    m.add("NonFiniteError", py.get_type::<NonFiniteError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("CorruptIndexError", py.get_type::<CorruptIndexError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add(
        "RuntimeUnavailableError",
        py.get_type::<RuntimeUnavailableError>(),
    )?;
    m.add("StorageIOError", py.get_type::<StorageIOError>())?;
    Ok(())
}
