//! Raising the project's Python exception types (defined in `agui_fast/errors.py`,
//! the single source of truth) from Rust. Every bad-input error crosses into
//! Python as one of those classes, all subclasses of ValueError. The core reports kinds
//! of failure ([`Kind`]); [`class_name`] is the one place that names their classes.

use agui_core::kind::Kind;
use pyo3::exceptions::{PyBrokenPipeError, PyFileNotFoundError, PyMemoryError, PyOSError};
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

/// The exception class raised for a failure of kind `kind`: a class of `agui_fast.errors`,
/// or for failures of the system (memory, files, pipes) a builtin one. It also names the
/// kind in the `error` column of `to_arrow`'s errors table.
pub fn class_name(kind: Kind) -> &'static str {
    match kind {
        Kind::InvalidJson => "InvalidJsonError",
        Kind::EventValidation => "EventValidationError",
        Kind::Encode => "EncodeError",
        Kind::ProtobufDecode => "ProtobufDecodeError",
        Kind::FrameTooLarge => "FrameTooLargeError",
        Kind::BufferLimit => "BufferLimitError",
        Kind::Truncated => "TruncatedStreamError",
        Kind::UnknownFormat => "DecodeError",
        Kind::TooManyErrors => "LimitError",
        Kind::Stream => "StreamError",
        Kind::Verification => "VerificationError",
        Kind::Patch => "JsonPatchError",
        Kind::Pointer => "JsonPointerError",
        Kind::PatchTestFailed => "JsonPatchTestFailed",
        Kind::PatchLimit => "JsonPatchLimitError",
        Kind::OutOfMemory => "MemoryError",
        Kind::Io => "OSError",
        Kind::NotFound => "FileNotFoundError",
        Kind::BrokenPipe => "BrokenPipeError",
    }
}

/// Whether the class of `kind` takes a place in a stream (`frame_index`, `offset`,
/// `field`): a `DecodeError`'s. The others (and the builtins) say it in their message.
pub fn takes_position(py: Python<'_>, kind: Kind) -> bool {
    let class = |name| error_class(py, name);
    matches!((class(class_name(kind)), class("DecodeError")), (Ok(c), Ok(base)) if c.is_subclass(&base).unwrap_or(false))
}

/// The exception of a failure of kind `kind`: `agui_fast.errors`' class with `message`
/// and `kwargs`, or the builtin one (which takes the message alone).
pub fn kind_error(py: Python<'_>, kind: Kind, message: String, kwargs: Option<&Bound<'_, PyDict>>) -> PyErr {
    match kind {
        Kind::OutOfMemory => PyMemoryError::new_err(message),
        Kind::Io => PyOSError::new_err(message),
        Kind::NotFound => PyFileNotFoundError::new_err(message),
        Kind::BrokenPipe => PyBrokenPipeError::new_err(message),
        kind => make_error(py, class_name(kind), message, kwargs),
    }
}

/// Build a `PyErr` of class `agui_fast.errors.<name>(message, **kwargs)`.
pub fn make_error<'py>(py: Python<'py>, name: &str, message: impl IntoPyObject<'py>, kwargs: Option<&Bound<'py, PyDict>>) -> PyErr {
    match error_class(py, name).and_then(|cls| cls.call((message,), kwargs)) {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// The keywords of a place in a stream: `frame_index` and `offset` when known (set_item
/// on a fresh dict cannot fail short of MemoryError, and the error itself is what matters
/// here).
pub fn position(py: Python<'_>, frame_index: Option<u64>, offset: Option<u64>) -> Bound<'_, PyDict> {
    let kwargs = PyDict::new(py);
    if let Some(i) = frame_index {
        let _ = kwargs.set_item("frame_index", i);
    }
    if let Some(o) = offset {
        let _ = kwargs.set_item("offset", o);
    }
    kwargs
}

/// An error of class `name` at a place in a stream ([`position`]).
pub fn error_at(py: Python<'_>, name: &str, message: String, frame_index: Option<u64>, offset: Option<u64>) -> PyErr {
    make_error(py, name, message, Some(&position(py, frame_index, offset)))
}

/// A `max_depth=` argument checked by `agui_core::limits::check_max_depth`.
pub fn check_max_depth(max_depth: usize) -> PyResult<usize> {
    agui_core::limits::check_max_depth(max_depth).map_err(pyo3::exceptions::PyValueError::new_err)
}
