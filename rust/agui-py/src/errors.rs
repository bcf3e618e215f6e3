//! Raising the project's Python exception types (defined in `agui_fast/errors.py`,
//! the single source of truth) from Rust. Every bad-input error crosses into
//! Python as one of those classes, all subclasses of ValueError.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Look up an exception class of `agui_fast.errors` by name.
pub fn error_class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = ERRORS_MODULE.get_or_try_init(py, || {
        py.import("agui_fast.errors").map(|m| m.unbind())
    })?;
    Ok(module.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// Build a `PyErr` of class `agui_fast.errors.<name>(message, **kwargs)`.
pub fn make_error(py: Python<'_>, name: &str, message: String, kwargs: Option<&Bound<'_, PyDict>>) -> PyErr {
    match error_class(py, name).and_then(|cls| cls.call((message,), kwargs)) {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// An error of class `name` at a place in a stream: `frame_index` and `offset` given as
/// keywords when known (set_item on a fresh dict cannot fail short of MemoryError, and
/// the error itself is what matters here).
pub fn error_at(py: Python<'_>, name: &str, message: String, frame_index: Option<u64>, offset: Option<u64>) -> PyErr {
    let kwargs = PyDict::new(py);
    if let Some(i) = frame_index {
        let _ = kwargs.set_item("frame_index", i);
    }
    if let Some(o) = offset {
        let _ = kwargs.set_item("offset", o);
    }
    make_error(py, name, message, Some(&kwargs))
}

/// A `max_depth=` argument checked by `agui_core::limits::check_max_depth`.
pub fn check_max_depth(max_depth: usize) -> PyResult<usize> {
    agui_core::limits::check_max_depth(max_depth).map_err(pyo3::exceptions::PyValueError::new_err)
}
