//! Zero-copy views of numpy input and owned numpy output.

use numpy::{
    PyArray1, PyArray2, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::errors::{DimensionMismatchError, InvalidArgumentError};

/// A read-only, C-contiguous float32 array of rank 1 or 2, borrowed from Python.
pub struct F32Rows<'py> {
    arr: PyReadonlyArrayDyn<'py, f32>,
    /// Whether the input had rank 1.
    pub single: bool,
}

impl<'py> F32Rows<'py> {
    /// Borrow `obj` without copying; reject anything but a C-contiguous float32
    /// array of rank 1 or 2 whose last axis is `dim` wide, with a message that
    /// says what was expected (a 768-wide query must not pass as two 384-wide ones).
    pub fn extract(obj: &Bound<'py, PyAny>, what: &str, dim: usize) -> PyResult<Self> {
        let arr = obj.cast::<PyArrayDyn<f32>>().map_err(|_| {
            let got = obj
                .getattr("dtype")
                .map(|d| format!("array of dtype {d}"))
                .unwrap_or_else(|_| {
                    obj.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                });
            InvalidArgumentError::new_err(format!(
                "{what}: expected a C-contiguous numpy float32 array, got {got}"
            ))
        })?;
        let ro = arr.readonly();
        if !ro.is_c_contiguous() {
            return Err(InvalidArgumentError::new_err(format!(
                "{what}: array is not C-contiguous; pass numpy.ascontiguousarray(x, dtype=numpy.float32)"
            )));
        }
        let (single, width) = match ro.shape() {
            [w] => (true, *w),
            [_, w] => (false, *w),
            s => {
                return Err(InvalidArgumentError::new_err(format!(
                    "{what}: expected 1 or 2 dimensions, got shape {s:?}"
                )))
            }
        };
        if width != dim {
            return Err(DimensionMismatchError::new_err(format!(
                "{what}: vectors are {width} wide, this index holds {dim}-dimensional vectors"
            )));
        }
        Ok(F32Rows { arr: ro, single })
    }

    /// The flat data.
    pub fn slice(&self) -> &[f32] {
        self.arr.as_slice().expect("checked contiguous")
    }
}

/// Move a Vec into a numpy array of shape `(k,)` when `single`, else `(n, k)`.
pub fn shaped<'py, T: numpy::Element>(
    py: Python<'py>,
    v: Vec<T>,
    n: usize,
    k: usize,
    single: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let a = PyArray1::from_vec(py, v);
    if single {
        Ok(a.into_any())
    } else {
        let r: Bound<'py, PyArray2<T>> = a.reshape([n, k])?;
        Ok(r.into_any())
    }
}
