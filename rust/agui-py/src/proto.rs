//! Protobuf codec binding: a JSON-bytes interface over `agui_core::proto`.
//!
//! Events cross the boundary as JSON text (what the reference converter works on), except
//! on the encode side for event objects: those are read straight into the encoder's JSON
//! tree (the object walk, `walk.rs`), and decoded JSON becomes Structs with msgspec. Errors are raised as the classes of
//! `agui_fast.errors` with `frame_index`, `offset` and `events` (JSON texts decoded
//! before the error). Frames from a later protocol version are skipped with a
//! `UserWarning`, like the reference client.

use agui_core::proto::{self, Error, EventArray, Format, StreamDecoder};
use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use std::ffi::CString;

use crate::errors::make_error;
use crate::walk::{self, Opts};

/// Turn a core error into the matching `agui_fast.errors` exception.
fn to_py(py: Python<'_>, e: &Error, events: Option<Vec<Vec<u8>>>) -> PyErr {
    let kwargs = PyDict::new(py);
    let (index, offset) = e.position();
    // set_item on a fresh dict/list cannot fail short of MemoryError; the error itself
    // is what matters here, so those results are ignored.
    if let Some(i) = index {
        let _ = kwargs.set_item("frame_index", i);
    }
    if let Some(o) = offset {
        let _ = kwargs.set_item("offset", o);
    }
    if let Some(events) = events {
        let list = PyList::empty(py);
        for ev in events {
            let _ = list.append(PyBytes::new(py, &ev));
        }
        let _ = kwargs.set_item("events", list);
    }
    make_error(py, e.python_class(), e.to_string(), Some(&kwargs))
}

fn emit_warnings(py: Python<'_>, warnings: &[String]) -> PyResult<()> {
    if warnings.is_empty() {
        return Ok(());
    }
    let category = py.get_type::<PyUserWarning>();
    for w in warnings {
        let msg = CString::new(w.replace('\0', " ")).unwrap_or_default();
        PyErr::warn(py, category.as_any(), &msg, 2)?;
    }
    Ok(())
}

fn bytes_list<'py>(py: Python<'py>, items: Vec<Vec<u8>>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for it in items {
        list.append(PyBytes::new(py, &it))?;
    }
    Ok(list)
}

/// Encode one JSON event (text) as an `Event` message; `framed` adds the 4-byte prefix.
#[pyfunction]
#[pyo3(signature = (json, framed = true))]
fn proto_encode_json<'py>(py: Python<'py>, json: &[u8], framed: bool) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::with_capacity(json.len() + 8);
    proto::encode_json(json, framed, &mut out).map_err(|e| to_py(py, &e, None))?;
    Ok(PyBytes::new(py, &out))
}

/// Encode JSON events (texts) as one framed stream.
#[pyfunction]
fn proto_encode_many_json<'py>(py: Python<'py>, items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let item = item?;
        let b: &[u8] = item.extract()?;
        proto::encode_json(b, true, &mut out).map_err(|e| to_py(py, &e, None))?;
    }
    Ok(PyBytes::new(py, &out))
}

/// The bytes of an encoded event, written straight into the Python bytes object.
fn event_bytes<'py>(py: Python<'py>, ev: &proto::pb::Event, framed: bool) -> PyResult<Bound<'py, PyBytes>> {
    let n = proto::event_wire_len(ev, framed).map_err(|e| to_py(py, &e, None))?;
    PyBytes::new_with(py, n, |b| {
        proto::write_event(ev, framed, b);
        Ok(())
    })
}

/// An encoder-side core error (an event the 1.0 mapping cannot take) as `EncodeError`.
fn encode_err(py: Python<'_>, e: &Error) -> PyErr {
    make_error(py, "EncodeError", e.to_string(), None)
}

const DEPTH: u32 = agui_core::limits::DEFAULT_MAX_DEPTH as u32;

/// Encode an event object (Struct, pydantic model or dict) in one call: the object walk
/// (`walk.rs`) builds the encoder's JSON tree, which the core maps to protobuf. The same
/// values as the SSE encoder are accepted (pydantic's JSON-mode rules); unpaired
/// surrogates become U+FFFD as in `@ag-ui/proto`; every failure is an `EncodeError`.
#[pyfunction]
#[pyo3(signature = (event, framed = true, *, max_depth = DEPTH))]
fn proto_encode_event<'py>(py: Python<'py>, event: &Bound<'py, PyAny>, framed: bool, max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
    let opts = Opts { max_depth, ..Opts::PROTO };
    walk::with_tree(py, event, opts, |node| match proto::json_to_event(node) {
        Ok(ev) => event_bytes(py, &ev, framed),
        Err(e) => Err(encode_err(py, &e)),
    })?
}

/// `proto_encode_event` through JSON text (`dumps`, then the JSON parser): the oracle the
/// direct route is tested against.
#[pyfunction]
#[pyo3(signature = (event, framed = true))]
fn proto_encode_event_via_json<'py>(py: Python<'py>, event: &Bound<'py, PyAny>, framed: bool) -> PyResult<Bound<'py, PyBytes>> {
    let json = crate::encode::dumps(py, event, true, DEPTH)?;
    proto_encode_json(py, json.as_bytes(), framed)
}

/// Encode event objects as one framed stream (see `proto_encode_event`).
#[pyfunction]
#[pyo3(signature = (events, *, max_depth = DEPTH))]
fn proto_encode_events<'py>(py: Python<'py>, events: &Bound<'py, PyAny>, max_depth: u32) -> PyResult<Bound<'py, PyBytes>> {
    let opts = Opts { max_depth, ..Opts::PROTO };
    let mut out = Vec::new();
    for ev in events.try_iter()? {
        let ev = ev?;
        walk::with_tree(py, &ev, opts, |node| proto::encode_value_framed(node, &mut out))?
            .map_err(|e| encode_err(py, &e))?;
    }
    Ok(PyBytes::new(py, &out))
}

fn format(msgpack: bool) -> Format {
    if msgpack {
        Format::MsgPack
    } else {
        Format::Json
    }
}

/// Decode one unframed `Event` message to JSON text (or MessagePack with `msgpack=True`).
#[pyfunction]
#[pyo3(signature = (msg, msgpack = false))]
fn proto_decode_message<'py>(py: Python<'py>, msg: &[u8], msgpack: bool) -> PyResult<Bound<'py, PyBytes>> {
    thread_local! {
        // One output buffer per thread instead of a malloc/free per message.
        static OUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut warnings = Vec::new();
    let mut run = |out: &mut Vec<u8>| {
        out.clear();
        let r = proto::decode_message_as(msg, &mut warnings, out, format(msgpack)).map(|_| PyBytes::new(py, out));
        if out.capacity() > 1 << 16 {
            *out = Vec::new(); // a large event does not pin its buffer
        }
        r
    };
    let r = OUT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut out) => run(&mut out),
        Err(_) => run(&mut Vec::new()), // re-entered (cannot happen today): no sharing
    });
    let b = r.map_err(|e| to_py(py, &e, None))?;
    emit_warnings(py, &warnings)?;
    Ok(b)
}

/// Decode a whole framed stream (GIL released) to a list of JSON texts. A cut or bad
/// stream raises; the exception's `events` holds the JSON texts decoded before it.
#[pyfunction]
#[pyo3(signature = (data, max_frame_size = proto::DEFAULT_MAX_FRAME_SIZE))]
fn proto_decode_frames<'py>(py: Python<'py>, data: &[u8], max_frame_size: usize) -> PyResult<Bound<'py, PyList>> {
    let (events, warnings, err) = py.detach(|| proto::decode_stream_json(data, max_frame_size));
    emit_warnings(py, &warnings)?;
    if let Some(e) = err {
        return Err(to_py(py, &e, Some(events)));
    }
    bytes_list(py, events)
}

/// Like `proto_decode_frames` but returns one JSON array text `[e1,e2,...]`, so the
/// typed layer can build every Struct with a single msgspec call.
#[pyfunction]
#[pyo3(signature = (data, max_frame_size = proto::DEFAULT_MAX_FRAME_SIZE))]
fn proto_decode_frames_array<'py>(py: Python<'py>, data: &[u8], max_frame_size: usize) -> PyResult<Bound<'py, PyBytes>> {
    let (b, _, _) = proto_decode_part(py, data, 0, 0, usize::MAX, max_frame_size, false)?;
    Ok(b)
}

/// Decode one part of a framed stream to one array (GIL released): the frames from byte
/// `offset` (a frame boundary; frame number `frame_index`) up to the first frame boundary
/// at or after `offset + budget`. Returns `(array, next_offset, next_frame_index)`; the
/// part that reaches the end of `data` also checks for a cut final frame. The array is
/// JSON text, or MessagePack with `msgpack=True`. On error the exception's `events` holds
/// the events of this part before the error (JSON texts, or MessagePack items).
#[pyfunction]
#[pyo3(signature = (data, offset, frame_index, budget, max_frame_size = proto::DEFAULT_MAX_FRAME_SIZE, msgpack = false))]
fn proto_decode_part<'py>(
    py: Python<'py>,
    data: &[u8],
    offset: usize,
    frame_index: usize,
    budget: usize,
    max_frame_size: usize,
    msgpack: bool,
) -> PyResult<(Bound<'py, PyBytes>, usize, usize)> {
    type Failed = (Error, Vec<Vec<u8>>);
    type Decoded = Result<(Vec<u8>, usize, usize), Failed>;
    let offset = offset.min(data.len());
    let fmt = format(msgpack);
    let (result, warnings): (Decoded, Vec<String>) = py.detach(|| {
        let end = proto::FrameSplitter::cut_point(data, offset, budget);
        let mut dec = StreamDecoder::at(max_frame_size, offset as u64, frame_index);
        let mut warnings = Vec::new();
        let part = &data[offset..end];
        let mut arr = EventArray::new(fmt, part.len() * 2 + 8);
        let mut r = dec.feed_array(part, &mut warnings, &mut arr);
        if r.is_ok() && end == data.len() {
            r = dec.finish();
        }
        let result = match r {
            Ok(()) => Ok((arr.finish(), end, dec.frame_index())),
            Err(e) => Err((e, arr.items())),
        };
        (result, warnings)
    });
    emit_warnings(py, &warnings)?;
    match result {
        Ok((b, next, idx)) => Ok((PyBytes::new(py, &b), next, idx)),
        Err((e, evs)) => Err(to_py(py, &e, Some(evs))),
    }
}

/// What the decoding thread of `proto_decode_parts` hands to the calling thread.
enum PartMsg {
    Part(Vec<u8>, Vec<String>),
    Failed(Error, Vec<Vec<u8>>, Vec<String>),
}

/// Decode a whole framed stream as MessagePack arrays, one per part (cut at frame
/// boundaries), and call `consume(array)` with each, in order. The first part has about
/// `part_size` input bytes and each next one 1.5× the previous, up to `max_part_size`:
/// a small first part starts the pipeline early, and few parts mean few pauses and
/// restarts of the caller's work (each restart can run a garbage collection).
/// The decoding runs on a Rust thread that never needs the GIL, so the caller's work on
/// part i (msgspec) overlaps the decoding of part i+1. (A Python worker thread cannot do
/// this: it needs the GIL to start the next part, and msgspec holds the GIL throughout.)
/// Warnings are emitted before the array they belong to. A bad stream raises after the
/// earlier parts were consumed; the exception's `events` holds the MessagePack items of
/// the failing part decoded before the error. An exception from `consume` stops all.
#[pyfunction]
#[pyo3(signature = (data, consume, part_size, max_part_size = usize::MAX, max_frame_size = proto::DEFAULT_MAX_FRAME_SIZE))]
fn proto_decode_parts(
    py: Python<'_>,
    data: &[u8],
    consume: &Bound<'_, PyAny>,
    part_size: usize,
    max_part_size: usize,
    max_frame_size: usize,
) -> PyResult<()> {
    // Arrays already copied into Python bytes come back for reuse.
    let (recycle, recycled) = std::sync::mpsc::channel::<Vec<u8>>();
    let mut dec = StreamDecoder::new(max_frame_size);
    let mut offset = 0;
    let mut budget = part_size.max(1);
    let produce = move || {
        let end = proto::FrameSplitter::cut_point(data, offset, budget);
        budget = budget.saturating_add(budget / 2).min(max_part_size.max(1));
        let part = &data[offset..end];
        let mut warnings = Vec::new();
        let buf = recycled.try_recv().unwrap_or_default();
        let mut arr = EventArray::with_buffer(Format::MsgPack, buf, part.len() * 2 + 8);
        let mut r = dec.feed_array(part, &mut warnings, &mut arr);
        if r.is_ok() && end == data.len() {
            r = dec.finish();
        }
        offset = end;
        match r {
            Ok(()) => (PartMsg::Part(arr.finish(), warnings), end == data.len()),
            Err(e) => (PartMsg::Failed(e, arr.items(), warnings), true),
        }
    };
    crate::pipeline::pipelined(py, produce, |msg| match msg {
        PartMsg::Part(array, warnings) => {
            emit_warnings(py, &warnings)?;
            let bytes = PyBytes::new(py, &array);
            let _ = recycle.send(array); // the thread may have finished: fine
            consume.call1((bytes,)).map(drop)
        }
        PartMsg::Failed(e, items, warnings) => {
            emit_warnings(py, &warnings)?;
            Err(to_py(py, &e, Some(items)))
        }
    })
}

/// Reads and decodes a framed protobuf log file on a Rust thread, one MessagePack array
/// (`bytes`, the events completed by each chunk read) per `__next__`, in order, so that
/// `iter_protobuf` builds the Structs of chunk i (msgspec) while the thread reads and
/// decodes the next. At most two arrays wait in between: memory stays bounded by a few
/// chunks plus the largest frame. Warnings are emitted with the array they belong to; a
/// bad or cut stream raises (the exception's `events` holds the MessagePack items that
/// chunk completed before the error); a read error raises `OSError`. Dropping the
/// iterator stops the thread.
#[pyclass(module = "agui_fast._native")]
struct ProtoFileFrames {
    reader: crate::pipeline::FileThread<PartMsg>,
}

#[pymethods]
impl ProtoFileFrames {
    #[new]
    #[pyo3(signature = (path, chunk_size, max_frame_size = proto::DEFAULT_MAX_FRAME_SIZE))]
    fn new(path: std::path::PathBuf, chunk_size: usize, max_frame_size: usize) -> PyResult<Self> {
        let mut dec = StreamDecoder::new(max_frame_size);
        let reader = crate::pipeline::FileThread::spawn(&path, chunk_size, move |chunk| {
            let mut warnings = Vec::new();
            let mut arr = EventArray::new(Format::MsgPack, chunk.map_or(0, |c| c.len()) * 2 + 8);
            let r = match chunk {
                Some(c) => dec.feed_array(c, &mut warnings, &mut arr),
                None => dec.finish(),
            };
            match r {
                Ok(()) => (PartMsg::Part(arr.finish(), warnings), false),
                Err(e) => (PartMsg::Failed(e, arr.items(), warnings), true),
            }
        })?;
        Ok(ProtoFileFrames { reader })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        match self.reader.next(py)? {
            None => Ok(None),
            Some(PartMsg::Part(array, warnings)) => {
                emit_warnings(py, &warnings)?;
                Ok(Some(PyBytes::new(py, &array)))
            }
            Some(PartMsg::Failed(e, items, warnings)) => {
                emit_warnings(py, &warnings)?;
                Err(to_py(py, &e, Some(items)))
            }
        }
    }
}

/// Incremental decoder of a framed stream: `feed(chunk)` returns the JSON texts of the
/// events completed by that chunk; `close()` raises `TruncatedStreamError` if bytes of
/// an unfinished frame remain. After an error the parser stays failed.
#[pyclass(module = "agui_fast._native")]
struct ProtoFrameParser {
    inner: StreamDecoder,
}

#[pymethods]
impl ProtoFrameParser {
    #[new]
    #[pyo3(signature = (max_frame_size = proto::DEFAULT_MAX_FRAME_SIZE))]
    fn new(max_frame_size: usize) -> Self {
        ProtoFrameParser { inner: StreamDecoder::new(max_frame_size) }
    }

    fn feed<'py>(&mut self, py: Python<'py>, chunk: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        let r = self.inner.feed_json(chunk, &mut warnings, &mut out);
        emit_warnings(py, &warnings)?;
        match r {
            Ok(()) => bytes_list(py, out),
            Err(e) => Err(to_py(py, &e, Some(out))),
        }
    }

    /// Like `feed` but returns the events as one array (JSON text, `b"[]"` when none; or
    /// MessagePack with `msgpack=True`), so the typed layer builds them with one msgspec
    /// call. On error the exception's `events` holds the events this chunk completed
    /// before it (JSON texts, or MessagePack items).
    #[pyo3(signature = (chunk, msgpack = false))]
    fn feed_array<'py>(&mut self, py: Python<'py>, chunk: &[u8], msgpack: bool) -> PyResult<Bound<'py, PyBytes>> {
        let fmt = format(msgpack);
        let mut warnings = Vec::new();
        let mut arr = EventArray::new(fmt, chunk.len() * 2 + 8);
        let r = self.inner.feed_array(chunk, &mut warnings, &mut arr);
        emit_warnings(py, &warnings)?;
        match r {
            Ok(()) => Ok(PyBytes::new(py, &arr.finish())),
            Err(e) => Err(to_py(py, &e, Some(arr.items()))),
        }
    }

    /// Like `feed_array(chunk, msgpack=True)`, but a small array (under `max_bytes`) is
    /// decoded right here with `decode(array)` and the list returned: a live stream's
    /// feed is one native call. Returns `[]` when the chunk completed no event, and the
    /// array itself when it is larger or `decode` raised (the caller's general path).
    fn feed_decode<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &[u8],
        decode: &Bound<'py, PyAny>,
        max_bytes: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut warnings = Vec::new();
        let mut arr = EventArray::new(Format::MsgPack, chunk.len() * 2 + 8);
        let r = self.inner.feed_array(chunk, &mut warnings, &mut arr);
        emit_warnings(py, &warnings)?;
        if let Err(e) = r {
            return Err(to_py(py, &e, Some(arr.items())));
        }
        if arr.is_empty() {
            return Ok(PyList::empty(py).into_any());
        }
        let array = PyBytes::new(py, &arr.finish());
        if array.as_bytes().len() < max_bytes {
            if let Ok(items) = decode.call1((&array,)) {
                if items.is_exact_instance_of::<PyList>() {
                    return Ok(items);
                }
            }
        }
        Ok(array.into_any())
    }

    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.inner.finish().map_err(|e| to_py(py, &e, Some(Vec::new())))?;
        Ok(PyList::empty(py))
    }

    /// Bytes buffered for an unfinished frame.
    #[getter]
    fn pending(&self) -> usize {
        self.inner.pending()
    }

    /// Index of the next frame.
    #[getter]
    fn frame_index(&self) -> usize {
        self.inner.frame_index()
    }
}

/// The compiled schema as JSON: `{"ag_ui.Msg": [[field, number, label, type], ...],
/// "enum ag_ui.E": [[name, number], ...]}` (used by the layer-agreement test).
#[pyfunction]
fn proto_schema() -> &'static str {
    proto::SCHEMA_JSON
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(proto_encode_json, m)?)?;
    m.add_function(wrap_pyfunction!(proto_encode_many_json, m)?)?;
    m.add_function(wrap_pyfunction!(proto_encode_event, m)?)?;
    m.add_function(wrap_pyfunction!(proto_encode_event_via_json, m)?)?;
    m.add_function(wrap_pyfunction!(proto_encode_events, m)?)?;
    m.add_function(wrap_pyfunction!(proto_decode_message, m)?)?;
    m.add_function(wrap_pyfunction!(proto_decode_frames, m)?)?;
    m.add_function(wrap_pyfunction!(proto_decode_frames_array, m)?)?;
    m.add_function(wrap_pyfunction!(proto_decode_part, m)?)?;
    m.add_function(wrap_pyfunction!(proto_decode_parts, m)?)?;
    m.add_function(wrap_pyfunction!(proto_schema, m)?)?;
    m.add_class::<ProtoFrameParser>()?;
    m.add_class::<ProtoFileFrames>()?;
    m.add("PROTO_DEFAULT_MAX_FRAME_SIZE", proto::DEFAULT_MAX_FRAME_SIZE)?;
    Ok(())
}
