//! What the two stream decoders (`SseDecoder`, `ProtoDecoder`) share: buffer-protocol
//! byte input, the native GC pause, the fallback chain from framed items to Python
//! objects, and the one error contract.
//!
//! The chain, for the items one call completed (SSE payloads, or protobuf events as
//! MessagePack or JSON): (1) one msgspec call over the joined array; if it refuses or
//! is not allowed (unbalanced or too deep frames), (2) each item through the fast
//! single-item decoder, and what that refuses (3) through the exact path (`exact`, a
//! Python function: extras, lenient readings, located errors).
//!
//! Legacy (0.x) items are converted to 1.0 by the core's `agui_core::decoder::Legacy`
//! (over the converter replay uses), on their JSON text, in stream order: in dict mode the items
//! that may be legacy (`Items::candidates`) before any decoding, in typed mode the items
//! the fast decoder refused (a 1.0 item is never converted there: the fast path pays
//! nothing for the conversion).
//!
//! The error contract (docs/sse.md): a call decodes **every** item it completed; when
//! some fail, it raises the first error with `events` = every event decoded by the call
//! (in stream order, also those after the bad frames) and `errors` = all of its errors.
//! Nothing is queued for a later call, so `try: evs = dec.feed(c) except DecodeError as
//! e: evs = e.events` loses nothing and nothing falls behind.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyMemoryView, PyString, PyTuple};

use agui_core::decoder::{located as located_message, too_deep, Legacy, Mode};

use crate::errors::{error_at, error_class};
pub(crate) use crate::ffi::api::GcPause;

/// Calls over at least this many items pause the cyclic GC: msgspec allocates many
/// container objects (our Structs carry a `__dict__`) and every collection it triggers
/// would rescan them all for nothing.
pub(crate) const GC_PAUSE_MIN: usize = 256;

/// Run `f` on the bytes of a buffer-protocol object (`bytes` without a copy; anything
/// else copied once by `memoryview(obj).tobytes()`, under the GIL: a bytearray may be
/// resized by the code we call back, and a failed copy is a `MemoryError`). Anything
/// else (`5`, `10**9`, `[100, 97]`, `str`) raises `TypeError`, as `memoryview()` does.
pub(crate) fn with_buffer<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    let view = obj.py().get_type::<PyMemoryView>().call1((obj,))?;
    let b = view.call_method0("tobytes")?;
    f(b.cast::<PyBytes>()?.as_bytes())
}

/// A stream's decoding state (SSE or protobuf), driven call by call with its backend.
pub(crate) trait StreamState {
    /// Decode `chunk` (`None`: nothing more), then with `finish` the end of the stream.
    fn run<'py>(&mut self, py: Python<'py>, be: &Backend, chunk: Option<&[u8]>, finish: bool) -> PyResult<Bound<'py, PyList>>;
}

/// `feed(chunk)` of a native decoder: bytes-like input only; after `close()` it raises.
pub(crate) fn feed<'py, S: StreamState>(
    py: Python<'py>,
    state: &mut S,
    be: &Backend,
    closed: bool,
    chunk: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    if closed {
        return Err(PyValueError::new_err("feed() after close()"));
    }
    with_buffer(chunk, |c| state.run(py, be, Some(c), false))
}

/// `close()` of a native decoder: the end of the stream, once; later calls return `[]`.
pub(crate) fn close<'py, S: StreamState>(py: Python<'py>, state: &mut S, be: &Backend, closed: &mut bool) -> PyResult<Bound<'py, PyList>> {
    if *closed {
        return Ok(PyList::empty(py));
    }
    *closed = true;
    state.run(py, be, None, true)
}

/// The Python side of a decoder, given once at construction (as msgspec's `Decoder`
/// holds its type): `(many, many_fh, one, one_fh, exact, keep_items)`.
///
/// * `many(array) -> list`: the bulk decoder; `None`: the items themselves are the result;
/// * `one(item)`: the fast single-item decoder; `None`: each item goes to `exact`;
/// * `*_fh`: the same parsing floats with `float` (SSE batches with huge exponents);
/// * `exact(item, legacy) -> object`: the exact path, raising `agui_fast.errors.DecodeError`
///   (`legacy`: the stream converts 0.x input);
/// * `keep_items`: `many` only validates, the items (bytes) are the result.
pub(crate) struct Backend {
    many: Option<Py<PyAny>>,
    many_fh: Option<Py<PyAny>>,
    one: Option<Py<PyAny>>,
    one_fh: Option<Py<PyAny>>,
    exact: Py<PyAny>,
    keep_items: bool,
}

fn opt(v: Bound<'_, PyAny>) -> Option<Py<PyAny>> {
    (!v.is_none()).then(|| v.unbind())
}

impl Backend {
    pub(crate) fn new(t: &Bound<'_, PyTuple>) -> PyResult<Self> {
        type Any6<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, bool);
        let (many, many_fh, one, one_fh, exact, keep_items): Any6<'_> = t.extract()?;
        Ok(Backend { many: opt(many), many_fh: opt(many_fh), one: opt(one), one_fh: opt(one_fh), exact: exact.unbind(), keep_items })
    }
}

/// The backends of the three `raw` modes and the Python function that checks options
/// (`agui_fast._plumbing.options`): the one-shot functions (`decode_sse`,
/// `decode_protobuf`) resolve their keyword options here, natively for the canonical
/// spellings, through `options` for the old ones (it warns) and bad values (it raises).
pub(crate) struct Modes {
    backends: [Backend; 3],
    options: Py<PyAny>,
}

/// What the one-shot functions were asked for.
pub(crate) struct Resolved<'a> {
    pub backend: &'a Backend,
    pub mode: Mode,
    pub max_frame_size: usize,
    pub max_depth: usize,
}

impl Modes {
    /// `backends`: `(typed, dict, bytes)`, each as described at [`Backend`].
    pub(crate) fn new(backends: &Bound<'_, PyTuple>, options: Bound<'_, PyAny>) -> PyResult<Self> {
        let (t, d, b): (Bound<'_, PyTuple>, Bound<'_, PyTuple>, Bound<'_, PyTuple>) = backends.extract()?;
        Ok(Modes { backends: [Backend::new(&t)?, Backend::new(&d)?, Backend::new(&b)?], options: options.unbind() })
    }

    pub(crate) fn resolve<'a>(
        &'a self,
        py: Python<'_>,
        raw: Option<&Bound<'_, PyAny>>,
        max_frame_size: usize,
        max_depth: usize,
        max_buffer_size: Option<usize>,
    ) -> PyResult<Resolved<'a>> {
        let mode = match raw.map(|r| r.cast::<PyString>()) {
            None => Mode::from_raw(None),
            Some(Ok(s)) => Mode::from_raw(Some(s.to_str()?)),
            Some(Err(_)) => None,
        };
        match mode {
            Some(mode) if max_buffer_size.is_none() => {
                Ok(Resolved { backend: &self.backends[mode.index()], mode, max_frame_size, max_depth })
            }
            _ => {
                let (raw, max_frame_size, max_depth): (Option<String>, usize, usize) =
                    self.options.bind(py).call1((raw, max_frame_size, max_depth, max_buffer_size))?.extract()?;
                // `options` returns a canonical spelling.
                let mode = Mode::from_raw(raw.as_deref()).unwrap_or(Mode::Bytes);
                Ok(Resolved { backend: &self.backends[mode.index()], mode, max_frame_size, max_depth })
            }
        }
    }
}

/// The items one call completed, as the framing layer hands them over.
pub(crate) struct Items<'a> {
    /// All items as one array (JSON text or MessagePack), for the bulk call.
    pub array: &'a [u8],
    pub spans: &'a [(usize, usize)],
    /// `(frame_index, offset)` of item `k`.
    pub pos: &'a dyn Fn(usize) -> (u64, u64),
    /// The array may go to the bulk decoder (it has exactly one element per item; and
    /// no item is too deep).
    pub bulk: bool,
    pub float_hook: bool,
    /// Items that may carry legacy shapes (converted before decoding; dict mode).
    pub candidates: &'a [usize],
    /// Sorted items refused before decoding (nested deeper than `max_depth`), and the
    /// error class they get.
    pub too_deep: &'a [usize],
    pub deep_error: &'static str,
}

/// Errors of one call, raised together with its events (see the module documentation).
pub(crate) struct Outcome<'py> {
    pub out: Bound<'py, PyList>,
    pub errors: Vec<(u64, Bound<'py, PyAny>)>,
}

impl<'py> Outcome<'py> {
    pub(crate) fn new(py: Python<'py>) -> Self {
        Outcome { out: PyList::empty(py), errors: Vec::new() }
    }

    /// Record an error at frame `frame_index` (`err` already names it).
    pub(crate) fn fail(&mut self, frame_index: u64, err: Bound<'py, PyAny>) {
        self.errors.push((frame_index, err));
    }

    /// The events, or the first error carrying them and every error of the call.
    pub(crate) fn finish(mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        if self.errors.is_empty() {
            return Ok(self.out);
        }
        self.errors.sort_by_key(|(i, _)| *i); // stable: a frame's own order is kept
        let all = PyList::new(py, self.errors.iter().map(|(_, e)| e))?;
        let first = &self.errors[0].1;
        first.setattr("events", &self.out)?;
        first.setattr("errors", all)?;
        Err(PyErr::from_value(first.clone()))
    }

    /// Attach this call's events and errors to an exception raised on the way out (a
    /// warning turned into an error by `-W error`): nothing decoded is lost to it.
    pub(crate) fn attach(self, py: Python<'py>, err: PyErr) -> PyErr {
        let value = err.value(py);
        let _ = value.setattr("events", &self.out);
        let _ = value.setattr("errors", PyList::new(py, self.errors.iter().map(|(_, e)| e)).ok());
        err
    }
}

/// A new error of `err`'s class naming the frame: `"<label> <i> at byte <o>: <message>"`.
pub(crate) fn located<'py>(err: &Bound<'py, PyAny>, label: &str, frame_index: u64, offset: u64) -> PyResult<Bound<'py, PyAny>> {
    let py = err.py();
    let message = match err.getattr("message") {
        Ok(m) if !m.is_none() => m.str()?,
        _ => err.str()?,
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item("frame_index", frame_index)?;
    kwargs.set_item("offset", offset)?;
    kwargs.set_item("field", err.getattr("field").ok())?;
    err.get_type().call((located_message(label, frame_index, offset, &message.to_string_lossy()),), Some(&kwargs))
}

/// An error of class `name` at a frame.
pub(crate) fn frame_error<'py>(py: Python<'py>, name: &str, label: &str, frame_index: u64, offset: u64, message: &str) -> Bound<'py, PyAny> {
    let err = error_at(py, name, located_message(label, frame_index, offset, message), Some(frame_index), Some(offset));
    err.into_value(py).into_bound(py).into_any()
}

/// Decode `items` into `res.out` through the fallback chain; bad items become errors. The
/// decoders recurse as deep as the items nest, on a stack that takes `max_depth` levels.
pub(crate) fn decode_items<'py>(
    py: Python<'py>,
    be: &Backend,
    legacy: &mut Legacy,
    items: &Items<'_>,
    label: &str,
    max_depth: usize,
    res: &mut Outcome<'py>,
) -> PyResult<()> {
    agui_core::limits::deep(max_depth, || decode_items_within(py, be, legacy, items, label, max_depth, res))
}

fn decode_items_within<'py>(
    py: Python<'py>,
    be: &Backend,
    legacy: &mut Legacy,
    items: &Items<'_>,
    label: &str,
    max_depth: usize,
    res: &mut Outcome<'py>,
) -> PyResult<()> {
    let n = items.spans.len();
    if n == 0 {
        return Ok(());
    }
    let converted = legacy.convert_candidates(items.array, items.spans, items.candidates, max_depth);
    let items = &match &converted {
        Some((array, spans)) => Items { array, spans, ..*items },
        None => Items { ..*items },
    };
    let item = |k: usize| {
        let (s, e) = items.spans[k];
        PyBytes::new(py, &items.array[s..e])
    };
    let _gc = GcPause::new(py, n >= GC_PAUSE_MIN);
    let (many, one) = if items.float_hook { (&be.many_fh, &be.one_fh) } else { (&be.many, &be.one) };
    if items.bulk && items.too_deep.is_empty() {
        let Some(many) = many else {
            // No decoding asked for (protobuf bytes mode): the items are the result.
            for k in 0..n {
                res.out.append(item(k))?;
            }
            return Ok(());
        };
        // One item (a live stream's chunk): the single-item decoder, cheaper than a list.
        let got = match one {
            Some(one) if n == 1 && !be.keep_items => one.bind(py).call1((item(0),)).and_then(|v| PyList::new(py, [v])),
            _ => many.bind(py).call1((PyBytes::new(py, items.array),)).and_then(|l| Ok(l.cast_into::<PyList>()?)),
        };
        match got {
            Ok(list) if list.len() == n => {
                if be.keep_items {
                    for k in 0..n {
                        res.out.append(item(k))?;
                    }
                } else if res.out.is_empty() {
                    res.out = list;
                } else {
                    res.out.call_method1("extend", (list,))?;
                }
                return Ok(());
            }
            Err(e) if !e.is_instance_of::<PyException>(py) => return Err(e), // KeyboardInterrupt and the like
            _ => {} // a bad, legacy or unusual item somewhere: one by one
        }
    }
    let exact = be.exact.bind(py);
    let mut deep = items.too_deep.iter().peekable();
    let decode_error = error_class(py, "DecodeError")?;
    for k in 0..n {
        let (frame_index, offset) = (items.pos)(k);
        if deep.next_if(|&&d| d == k).is_some() {
            res.fail(frame_index, frame_error(py, items.deep_error, label, frame_index, offset, &too_deep(max_depth)));
            continue;
        }
        let mut b = item(k);
        if many.is_none() {
            res.out.append(b)?;
            continue;
        }
        if let Some(one) = one {
            match one.bind(py).call1((&b,)) {
                Ok(v) => {
                    res.out.append(if be.keep_items { b.into_any() } else { v })?;
                    continue;
                }
                Err(e) if !e.is_instance_of::<PyException>(py) => return Err(e),
                Err(_) => {}
            }
        }
        if legacy.converts_refused() {
            let (s, e) = items.spans[k];
            if let Some(text) = legacy.convert(&items.array[s..e], max_depth) {
                b = PyBytes::new(py, &text);
            }
        }
        match exact.call1((&b, legacy.is_on())) {
            Ok(v) => res.out.append(v)?,
            Err(e) if e.is_instance(py, &decode_error) => {
                res.fail(frame_index, located(e.value(py).as_any(), label, frame_index, offset)?);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
