//! Entry points CPython calls without PyO3's wrappers: the `METH_O` function behind
//! `EventEncoder.encode` (`encode_sse_event`). What they run is safe code elsewhere; here
//! are only the C signatures, the GIL token they stand on, panics turned into exceptions,
//! and the method table.

use std::cell::UnsafeCell;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// A C entry point's body run with panics caught: its value as a new reference, or NULL
/// with the exception set (a panic becomes `PanicException`). Only a pointer crosses
/// `catch_unwind`: moving a whole `PyResult` out of it was ~600 instructions a call.
pub(crate) fn run<'py, T>(py: Python<'py>, what: &str, body: impl FnOnce() -> PyResult<Bound<'py, T>>) -> *mut ffi::PyObject {
    let raw = std::panic::AssertUnwindSafe(|| match body() {
        Ok(obj) => obj.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    });
    match std::panic::catch_unwind(raw) {
        Ok(ptr) => ptr,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| format!("panic in {what}"));
            pyo3::panic::PanicException::new_err(msg).restore(py);
            std::ptr::null_mut()
        }
    }
}

/// `encode_sse_event(event, /) -> str`: `encode::encode_sse_event` as a plain `METH_O` C
/// function.
///
/// `EventEncoder.encode` is the call an agent server makes once per event; for a small
/// event PyO3's generic wrapper (argument parsing for the keyword-only option, the
/// trampoline's bookkeeping) was ~10% of the whole call. This entry takes exactly one
/// positional argument and does only what is needed: attach, write, convert panics.
unsafe extern "C" fn encode_sse_event(_module: *mut ffi::PyObject, arg: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls METH_O functions with the GIL held; nothing derived from the
    // token outlives this frame.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `arg` is the call's one argument, a live object borrowed for the call.
    let obj = unsafe { Borrowed::from_ptr(py, arg) };
    run(py, "encode_sse_event", || crate::encode::encode_sse_event(py, &obj))
}

/// A method table entry that CPython reads (never writes) for the module's lifetime.
struct MethodDef(UnsafeCell<ffi::PyMethodDef>);
// SAFETY: never written after construction; only its address is handed to CPython, which
// reads it under the GIL.
unsafe impl Sync for MethodDef {}

static ENCODE_SSE_EVENT_DEF: MethodDef = MethodDef(UnsafeCell::new(ffi::PyMethodDef {
    ml_name: c"encode_sse_event".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunction: encode_sse_event },
    ml_flags: ffi::METH_O,
    ml_doc: c"encode_sse_event(event, /)\n--\n\nencode_sse(event) without options, as a METH_O function (EventEncoder.encode).".as_ptr(),
}));

/// Add `encode_sse_event` to the module.
pub(crate) fn add_encode_sse_event(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let name = PyString::new(py, "agui_fast._native");
    // SAFETY: the method table is a static (it outlives the function object, as CPython
    // requires) that CPython only reads; `m` and `name` are live objects; the call returns
    // a new reference or NULL with an exception set.
    let f = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_NewEx(ENCODE_SSE_EVENT_DEF.0.get(), m.as_ptr(), name.as_ptr()))? };
    m.add("encode_sse_event", f)
}
