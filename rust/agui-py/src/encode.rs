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

use agui_core::json::{F64Text, JsonSink};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::ffi::gil::GilCell;
use crate::ffi::walk::{Opts, Walker};

const KEEP_CAPACITY: usize = 1 << 20;

/// The output buffer, reused between calls (taken for the duration of a call, so a
/// re-entrant call simply starts with a fresh one).
static BUF: GilCell<Vec<u8>> = GilCell::new(Vec::new());

type JsonWalker<'py, 'b> = Walker<'py, 'b, JsonSink<Vec<u8>, InPlaceF64>>;

/// Finite doubles formatted by zmij straight into the output's spare capacity (what orjson
/// does), instead of into zmij's buffer and then copied (`agui_core::json::CopiedF64`):
/// the same text, a third less time per float (`docs/encoder.md`).
pub(crate) struct InPlaceF64;

// `zmij::Buffer` is its digit bytes (`[MaybeUninit<u8>; N]`, no other field): any bytes
// of the right size and alignment are a valid one.
const _: () = assert!(std::mem::size_of::<zmij::Buffer>() <= 32 && std::mem::align_of::<zmij::Buffer>() == 1);

impl F64Text for InPlaceF64 {
    #[inline(always)]
    fn finite(out: &mut Vec<u8>, x: f64) {
        out.reserve(32);
        let at = out.len();
        // SAFETY: at least 32 bytes of spare capacity, viewed as a zmij buffer (only
        // `MaybeUninit<u8>` inside, alignment 1, at most 32 bytes: asserted above). zmij
        // writes its text from the buffer's start; the length is set only to what it
        // wrote, and only when the text it returns does start there.
        unsafe {
            let spare = out.as_mut_ptr().add(at);
            let text = (*spare.cast::<zmij::Buffer>()).format_finite(x);
            if text.as_ptr() == spare.cast_const() {
                out.set_len(at + text.len());
                return;
            }
        }
        agui_core::json::CopiedF64::finite(out, x)
    }
}

fn with_json<'py, R>(
    py: Python<'py>,
    opts: Opts,
    f: impl for<'b> FnOnce(&mut JsonWalker<'py, 'b>) -> PyResult<()>,
    finish: impl FnOnce(Python<'py>, &[u8]) -> R,
) -> PyResult<R> {
    let mut buf = BUF.with(py, std::mem::take);
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

fn str_out<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyString> {
    // Only valid UTF-8 is ever written (str data from Python, pydantic's output, ASCII).
    PyString::new(py, unsafe { std::str::from_utf8_unchecked(b) })
}

/// dumps(obj, /, *, pydantic_fallback=True, max_depth=512) -> bytes: the JSON text of
/// `obj`, as pydantic writes it for ag_ui models.
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn dumps<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, pydantic_fallback: bool, max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
    with_json(py, opts(pydantic_fallback, max_depth), |w| w.walk(obj.as_ptr()), bytes_out)
}

fn frame(w: &mut JsonWalker<'_, '_>, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    w.sink.out.extend_from_slice(b"data: ");
    w.sink.restart();
    w.walk(obj.as_ptr())?;
    w.sink.out.extend_from_slice(b"\n\n");
    Ok(())
}

/// encode_sse(obj, /, *, pydantic_fallback=True, max_depth=512) -> str:
/// `"data: " + dumps(obj) + "\n\n"` (ag_ui EventEncoder.encode).
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn encode_sse<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, pydantic_fallback: bool, max_depth: u32) -> PyResult<Bound<'py, PyString>> {
    with_json(py, opts(pydantic_fallback, max_depth), |w| frame(w, obj), str_out)
}

/// encode_sse_bytes(obj, /, *, pydantic_fallback=True, max_depth=512) -> bytes: as
/// encode_sse, UTF-8.
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn encode_sse_bytes<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, pydantic_fallback: bool, max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
    with_json(py, opts(pydantic_fallback, max_depth), |w| frame(w, obj), bytes_out)
}

/// encode_sse_many(events, /, *, pydantic_fallback=True, max_depth=512) -> bytes: every
/// event framed, concatenated.
#[pyfunction]
#[pyo3(signature = (events, /, *, pydantic_fallback = true, max_depth = DEPTH))]
pub fn encode_sse_many<'py>(py: Python<'py>, events: &Bound<'py, PyAny>, pydantic_fallback: bool, max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
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

/// `encode_sse_event(event, /) -> str`: `encode_sse` as a plain `METH_O` C function.
///
/// `EventEncoder.encode` is the call an agent server makes once per event; for a small
/// event PyO3's generic wrapper (argument parsing for the keyword-only option, the
/// trampoline's bookkeeping) was ~10% of the whole call. This entry takes exactly one
/// positional argument and does only what is needed: attach, write, convert panics.
unsafe extern "C" fn encode_sse_event(_module: *mut ffi::PyObject, arg: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls METH_O functions with the GIL held and `arg` borrowed for
    // the duration of the call; nothing derived from the token outlives this frame.
    let py = unsafe { Python::assume_attached() };
    let run = std::panic::AssertUnwindSafe(|| {
        let obj = unsafe { Bound::from_borrowed_ptr(py, arg) };
        with_json(py, Opts::JSON, |w| frame(w, &obj), str_out)
    });
    let result = match std::panic::catch_unwind(run) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic in encode_sse_event".to_string());
            Err(pyo3::panic::PanicException::new_err(msg))
        }
    };
    match result {
        Ok(s) => s.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// A method table entry that CPython reads (never writes) for the module's lifetime.
struct MethodDef(std::cell::UnsafeCell<ffi::PyMethodDef>);
// SAFETY: immutable after construction; only its address is handed to CPython.
unsafe impl Sync for MethodDef {}

static ENCODE_SSE_EVENT_DEF: MethodDef = MethodDef(std::cell::UnsafeCell::new(ffi::PyMethodDef {
    ml_name: c"encode_sse_event".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunction: encode_sse_event },
    ml_flags: ffi::METH_O,
    ml_doc: c"encode_sse_event(event, /)\n--\n\nencode_sse(event) without options, as a METH_O function (EventEncoder.encode).".as_ptr(),
}));

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // The method table must outlive the function object: a static it is.
    let def = ENCODE_SSE_EVENT_DEF.0.get();
    let name = PyString::new(py, "agui_fast._native");
    let f = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_NewEx(def, m.as_ptr(), name.as_ptr()))?
    };
    m.add("encode_sse_event", f)?;
    m.add_function(wrap_pyfunction!(dumps, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_many, m)?)?;
    m.add_function(wrap_pyfunction!(clear_encode_cache, m)?)?;
    m.add("ENCODE_MAX_DEPTH", DEPTH)?;
    Ok(())
}
