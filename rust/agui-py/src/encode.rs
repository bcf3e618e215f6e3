//! The JSON side of the object walker (`walk.rs`) as Python functions: `dumps`,
//! `encode_sse`, `encode_sse_bytes`, `encode_sse_many` (all `(obj, /, *,
//! pydantic_fallback=True, max_depth=512)`), the `METH_O` `encode_sse_event`, and
//! `clear_encode_cache`.
//!
//! The text is what the Python reference (`ag_ui` models dumped with
//! `model_dump_json(by_alias=True)`, i.e. pydantic-core's serializer) writes, byte for
//! byte: the walk decides what is written (`walk.rs`, `plan.rs`), `agui_core::json`
//! spells it. `pydantic_fallback=False` is a strict mode: values outside plain JSON data
//! and non-str dict keys are an `EncodeError` instead of pydantic's JSON-mode rules.

use agui_core::json::JsonSink;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::ffi::float::InPlaceF64;
use crate::ffi::gil::GilCell;
use crate::ffi::walk::{Dump, Opts, Walker};

const KEEP_CAPACITY: usize = 1 << 20;

/// The output buffer, reused between calls (taken for the duration of a call, so a
/// re-entrant call simply starts with a fresh one).
static BUF: GilCell<Vec<u8>> = GilCell::new(Vec::new());

type JsonWalker<'py, 'b> = Walker<'py, 'b, JsonSink<Vec<u8>, InPlaceF64>>;

fn with_json<'py, R>(
    py: Python<'py>,
    opts: Opts,
    f: impl for<'b> FnOnce(&mut JsonWalker<'py, 'b>) -> PyResult<()>,
    finish: impl FnOnce(Python<'py>, &[u8]) -> R,
) -> PyResult<R> {
    // (A re-entrant call, from Python code the walk ran, starts with a fresh buffer.)
    let mut buf = BUF.with(py, std::mem::take).unwrap_or_default();
    buf.clear();
    // The sink owns the buffer during the walk (see `JsonSink`), and gives it back.
    let mut w = Walker::new(py, JsonSink::owning(buf), opts);
    let res = f(&mut w).map_err(|e| crate::ffi::walk::user_error(py, e));
    let mut buf = std::mem::take(&mut w.sink.out);
    drop(w);
    let out = res.map(|()| finish(py, &buf));
    if buf.capacity() <= KEEP_CAPACITY {
        buf.clear();
        BUF.with(py, |b| {
            if b.capacity() < buf.capacity() {
                *b = buf;
            }
        });
    }
    out
}

fn opts(pydantic_fallback: bool, max_depth: u32) -> Opts {
    Opts { pydantic: pydantic_fallback, max_depth, ..Opts::JSON }
}

const DEPTH: u32 = agui_core::limits::DEFAULT_MAX_DEPTH as u32;

fn bytes_out<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

fn str_out<'py>(py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // CPython checks the UTF-8 as it reads it (it reads every byte to size the str anyway).
    PyString::from_bytes(py, b)
}

/// dumps(obj, /, *, pydantic_fallback=True, max_depth=512) -> bytes: the JSON text of
/// `obj`, as pydantic writes it for ag_ui models.
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn dumps<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, pydantic_fallback: bool, #[pyo3(from_py_with = crate::args::max_depth_u32)] max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
    with_json(py, opts(pydantic_fallback, max_depth), |w| w.walk(obj), bytes_out)
}

/// `dumps(obj)` with `model_dump`'s options (`dump.rs`).
pub(crate) fn dumps_with<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, dump: Dump) -> PyResult<Bound<'py, PyBytes>> {
    with_json(py, Opts::JSON, |w| w.dumping_walk(dump, obj), bytes_out)
}

fn frame(w: &mut JsonWalker<'_, '_>, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    w.sink.out.extend_from_slice(b"data: ");
    w.sink.restart();
    w.walk(obj)?;
    w.sink.out.extend_from_slice(b"\n\n");
    Ok(())
}

/// encode_sse(obj, /, *, pydantic_fallback=True, max_depth=512) -> str:
/// `"data: " + dumps(obj) + "\n\n"` (ag_ui EventEncoder.encode).
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn encode_sse<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, pydantic_fallback: bool, #[pyo3(from_py_with = crate::args::max_depth_u32)] max_depth: u32) -> PyResult<Bound<'py, PyString>> {
    with_json(py, opts(pydantic_fallback, max_depth), |w| frame(w, obj), str_out)?
}

/// `encode_sse(event)` with the default options: the body of the `METH_O`
/// `encode_sse_event` (`ffi::entry`), `EventEncoder.encode`.
pub(crate) fn encode_sse_event<'py>(py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    with_json(py, Opts::JSON, |w| frame(w, event), str_out)?
}

/// encode_sse_bytes(obj, /, *, pydantic_fallback=True, max_depth=512) -> bytes: as
/// encode_sse, UTF-8.
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn encode_sse_bytes<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, pydantic_fallback: bool, #[pyo3(from_py_with = crate::args::max_depth_u32)] max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
    with_json(py, opts(pydantic_fallback, max_depth), |w| frame(w, obj), bytes_out)
}

/// encode_sse_many(events, /, *, pydantic_fallback=True, max_depth=512) -> bytes: every
/// event framed, concatenated.
#[pyfunction]
#[pyo3(signature = (events, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn encode_sse_many<'py>(py: Python<'py>, events: &Bound<'py, PyAny>, pydantic_fallback: bool, #[pyo3(from_py_with = crate::args::max_depth_u32)] max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
    with_json(
        py,
        opts(pydantic_fallback, max_depth),
        |w| {
            for ev in events.try_iter()? {
                frame(w, &ev?)?;
            }
            Ok(())
        },
        bytes_out,
    )
}

/// Drop every cached per-class plan (for tests, or after redefining classes).
#[pyfunction]
pub fn clear_encode_cache(py: Python<'_>) {
    crate::plan::clear_cache(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::ffi::entry::add_encode_sse_event(m)?;
    m.add_function(wrap_pyfunction!(dumps, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_many, m)?)?;
    m.add_function(wrap_pyfunction!(clear_encode_cache, m)?)?;
    m.add("ENCODE_MAX_DEPTH", DEPTH)?;
    Ok(())
}
