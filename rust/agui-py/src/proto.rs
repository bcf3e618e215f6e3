//! Protobuf codec binding: a JSON-bytes interface over `agui_core::proto`.
//!
//! Events cross the boundary as JSON text (what the reference converter works on), except
//! on the encode side for event objects: those are read straight into the encoder's JSON
//! tree (the object walk, `walk.rs`), and decoded JSON becomes Structs with msgspec. Errors are raised as the classes of
//! `agui_fast.errors` with `frame_index`, `offset` and `events` (JSON texts decoded
//! before the error). Frames from a later protocol version are skipped with a
//! `UserWarning`, like the reference client.

use agui_core::decoder::{with_decoded_message, Legacy, ProtoPart, ProtoParts, ProtoStream, DETACH_MIN};
use agui_core::limits::DEFAULT_MAX_DEPTH;
use agui_core::proto::{self, Error, Format};
use pyo3::exceptions::{PyMemoryError, PyUserWarning};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use std::ffi::CString;

use crate::shared::Shared;
use crate::errors::{kind_error, make_error, position};
use crate::decoder::{self, decode_items, with_buffer, Backend, GcPause, Items, Modes, Outcome, StreamState};
use crate::ffi::walk::{self, Opts};

/// Turn a core error into the matching `agui_fast.errors` exception.
pub(crate) fn to_py(py: Python<'_>, e: &Error) -> PyErr {
    let (index, offset) = e.position();
    let kwargs = position(py, index.map(|i| i as u64), offset);
    kind_error(py, e.kind(), e.to_string(), Some(&kwargs))
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

/// Encode one JSON event (text) as an `Event` message; `framed` adds the 4-byte prefix.
#[pyfunction]
#[pyo3(signature = (json, framed = true))]
fn proto_encode_json<'py>(py: Python<'py>, json: &[u8], framed: bool) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::with_capacity(json.len() + 8);
    proto::encode_json(json, framed, &mut out).map_err(|e| to_py(py, &e))?;
    Ok(PyBytes::new(py, &out))
}

/// Encode JSON events (texts) as one framed stream.
#[pyfunction]
fn proto_encode_many_json<'py>(py: Python<'py>, items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let item = item?;
        let b: &[u8] = item.extract()?;
        proto::encode_json(b, true, &mut out).map_err(|e| to_py(py, &e))?;
    }
    Ok(PyBytes::new(py, &out))
}

/// The bytes of an encoded event, written straight into the Python bytes object.
fn event_bytes<'py>(py: Python<'py>, ev: &proto::pb::Event, framed: bool) -> PyResult<Bound<'py, PyBytes>> {
    let n = proto::event_wire_len(ev, framed).map_err(|e| to_py(py, &e))?;
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
fn proto_encode_event<'py>(
    py: Python<'py>,
    event: &Bound<'py, PyAny>,
    framed: bool,
    #[pyo3(from_py_with = crate::args::max_depth_u32)] max_depth: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let opts = Opts { max_depth, ..Opts::PROTO };
    walk::with_tree(py, event, opts, |node| match proto::json_to_event(node) {
        Ok(ev) => event_bytes(py, &ev, framed),
        Err(e) => Err(encode_err(py, &e)),
    })?
}

/// `proto_encode_event` through JSON text (`dumps`, then the JSON parser): the oracle the
/// direct route is tested against (tests only).
#[pyfunction]
#[pyo3(signature = (event, framed = true))]
fn proto_encode_event_via_json<'py>(py: Python<'py>, event: &Bound<'py, PyAny>, framed: bool) -> PyResult<Bound<'py, PyBytes>> {
    let json = crate::encode::dumps(py, event, true, DEPTH)?;
    proto_encode_json(py, json.as_bytes(), framed)
}

/// Encode event objects as one framed stream (see `proto_encode_event`).
#[pyfunction]
#[pyo3(signature = (events, *, max_depth = DEPTH))]
fn proto_encode_events<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = crate::args::max_depth_u32)] max_depth: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let opts = Opts { max_depth, ..Opts::PROTO };
    let mut out = Vec::new();
    for ev in events.try_iter()? {
        let ev = ev?;
        walk::with_tree(py, &ev, opts, |node| proto::encode_value_framed(node, &mut out))?
            .map_err(|e| encode_err(py, &e))?;
    }
    Ok(PyBytes::new(py, &out))
}

/// Decode one unframed `Event` message to JSON text (or MessagePack with `msgpack=True`).
#[pyfunction]
#[pyo3(signature = (msg, msgpack = false))]
fn proto_decode_message<'py>(py: Python<'py>, msg: &[u8], msgpack: bool) -> PyResult<Bound<'py, PyBytes>> {
    let fmt = if msgpack { Format::MsgPack } else { Format::Json };
    let mut warnings = Vec::new();
    let b = with_decoded_message(msg, fmt, &mut warnings, |out| PyBytes::new(py, out)).map_err(|e| to_py(py, &e))?;
    emit_warnings(py, &warnings)?;
    Ok(b)
}

const LABEL: &str = "protobuf frame";

/// One protobuf stream's decoding state (`agui_core::decoder::ProtoStream`) and the
/// converter its items would go through (off: the 1.0 wire format has no legacy shapes).
/// The backend is passed per call (a decoder owns one, the one-shot `decode_protobuf`
/// borrows its mode's).
pub(crate) struct ProtoState {
    stream: ProtoStream,
    legacy: Legacy,
}

impl ProtoState {
    fn new(msgpack: bool, max_frame_size: usize, max_depth: usize) -> Self {
        ProtoState { stream: ProtoStream::new(msgpack, max_frame_size, max_depth), legacy: Legacy::Off }
    }

    /// Warn once per decoder per kind of warning; a warning raised as an error (`-W
    /// error`) carries the call's events and errors, so none is lost to it.
    fn warn<'py>(&mut self, py: Python<'py>, part: &ProtoPart, res: Outcome<'py>) -> PyResult<Outcome<'py>> {
        for t in ProtoStream::part_warnings(part) {
            if self.stream.first_warning(&t) {
                if let Err(e) = emit_warnings(py, &[t]) {
                    return Err(res.attach(py, e));
                }
            }
        }
        Ok(res)
    }

    /// Turn a decoded part into events and errors (in `res`).
    fn decode<'py>(&mut self, py: Python<'py>, be: &Backend, part: &ProtoPart, res: &mut Outcome<'py>) -> PyResult<()> {
        self.stream.count(part);
        let positions = &part.got.positions;
        let pos = |k: usize| (positions[k].0 as u64, positions[k].1);
        let items = Items {
            array: &part.array,
            spans: &part.spans,
            pos: &pos,
            bulk: true,
            float_hook: false,
            candidates: &[],
            too_deep: &part.too_deep,
            deep_error: "ProtobufDecodeError",
        };
        decode_items(py, be, &mut self.legacy, &items, LABEL, self.stream.max_depth, res)?;
        if let Some(e @ Error::OutOfMemory { .. }) = &part.fatal {
            // Not a decode error: raised as MemoryError, with what the call decoded.
            let taken = std::mem::replace(res, Outcome::new(py));
            return Err(taken.attach(py, to_py(py, e)));
        }
        for e in part.got.errors.iter().chain(part.fatal.as_ref()) {
            let (index, _) = e.position();
            res.fail(index.unwrap_or(0) as u64, to_py(py, e).into_value(py).into_bound(py).into_any());
        }
        Ok(())
    }

    /// A large chunk (a `decode_protobuf` input, an `iter_protobuf` read): decoded in
    /// parts cut at frame boundaries on a Rust thread (`agui_core::decoder::ProtoParts`),
    /// by this stream's own decoder (frames may span chunks), ahead of the Struct building
    /// on this one; the cyclic GC paused once for the whole call. `first`: where the first
    /// whole frame of `data` starts; `buf`: the output reserved for the chunk.
    fn run_pipelined<'py>(&mut self, py: Python<'py>, be: &Backend, data: &[u8], finish: bool, first: usize, buf: Vec<u8>) -> PyResult<Bound<'py, PyList>> {
        let _gc = GcPause::new(py, true);
        // The producer thread borrows the stream's decoder; it is put back afterwards.
        let mut dec = std::mem::take(&mut self.stream.decoder);
        let (mut parts, recycle) = ProtoParts::new(&mut dec, &self.stream, data, first, finish, buf);
        let mut res = Outcome::new(py);
        let mut failed = None;
        let r = crate::pipeline::pipelined(py, move || parts.next_part(), |part| {
            self.decode(py, be, &part, &mut res)?;
            let taken = std::mem::replace(&mut res, Outcome::new(py));
            match self.warn(py, &part, taken) {
                Ok(r) => res = r,
                Err(e) => failed = Some(e),
            }
            let _ = recycle.send(part.array); // the thread may have finished: fine
            failed.take().map_or(Ok(()), Err)
        });
        self.stream.decoder = dec;
        r?;
        res.finish(py)
    }
}

impl StreamState for ProtoState {
    fn run<'py>(&mut self, py: Python<'py>, be: &Backend, chunk: Option<&[u8]>, finish: bool) -> PyResult<Bound<'py, PyList>> {
        let buf = self.stream.buffer(chunk.map_or(0, |c| c.len())).map_err(|n| PyMemoryError::new_err(format!("cannot allocate {n} bytes")))?;
        if let Some((data, first)) = chunk.and_then(|d| self.stream.pipeline_start(d).map(|f| (d, f))) {
            return self.run_pipelined(py, be, data, finish, first, buf);
        }
        let stream = &mut self.stream;
        let part = if chunk.map_or(0, |c| c.len()) >= DETACH_MIN {
            py.detach(|| stream.decode(chunk, finish, buf))
        } else {
            stream.decode(chunk, finish, buf)
        };
        let mut res = Outcome::new(py);
        let r = self.decode(py, be, &part, &mut res).and_then(|()| self.warn(py, &part, res));
        self.stream.recycle(part.array);
        r?.finish(py)
    }
}

thread_local! {
    /// The one-shot `decode_protobuf`'s output array between calls (a stream's own lives in
    /// its `ProtoStream`): a live chunk decoded with no buffer made anew.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Incremental decoder of a framed protobuf stream (`agui_fast.proto.ProtoDecoder` is
/// its Python face; see `ProtoState`). Threads that share one take turns
/// (`crate::shared`).
#[pyclass(module = "agui_fast._native", name = "ProtoDecoder", subclass, frozen)]
pub struct ProtoDecoder {
    state: Shared<(ProtoState, bool)>,
    backend: Backend,
}

#[pymethods]
impl ProtoDecoder {
    /// Positional only (keyword parsing costs more than a small decode): `backend`, see
    /// `crate::decoder::Backend`; `msgpack`: events reach it as MessagePack (typed and
    /// dict modes) rather than JSON text (bytes mode).
    #[new]
    #[pyo3(signature = (backend, msgpack, max_frame_size, max_depth, /))]
    fn new(
        backend: &Bound<'_, PyTuple>,
        msgpack: bool,
        #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
        #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
    ) -> PyResult<Self> {
        Ok(ProtoDecoder {
            state: Shared::deep((ProtoState::new(msgpack, max_frame_size, max_depth), false), max_depth),
            backend: Backend::new(backend)?,
        })
    }

    /// The events completed by `chunk` (bytes-like); see `crate::stream` for errors.
    fn feed<'py>(&self, py: Python<'py>, chunk: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.state.with(py, |(state, closed)| decoder::feed(py, state, &self.backend, *closed, chunk))
    }

    /// End of stream: raises `TruncatedStreamError` when bytes of an unfinished frame
    /// remain (a stream cut in half is an error, not a success). Later calls return `[]`.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.state.with(py, |(state, closed)| decoder::close(py, state, &self.backend, closed))
    }

    /// Bytes buffered for an unfinished frame.
    #[getter]
    fn pending(&self, py: Python<'_>) -> PyResult<usize> {
        self.state.with(py, |(s, _)| Ok(s.stream.decoder.pending()))
    }

    /// Index of the next frame.
    #[getter]
    fn frame_index(&self, py: Python<'_>) -> PyResult<usize> {
        self.state.with(py, |(s, _)| Ok(s.stream.decoder.frame_index()))
    }

    /// Frames skipped so far because their event type is from a later protocol version.
    #[getter]
    fn skipped_frames(&self, py: Python<'_>) -> PyResult<usize> {
        self.state.with(py, |(s, _)| Ok(s.stream.skipped))
    }
}

/// The one-shot `decode_protobuf` (`agui_fast.proto.decode_protobuf` is this object's
/// bound method): keyword options resolved natively, no decoder object made.
#[pyclass(module = "agui_fast._native", name = "ProtoCodec", frozen)]
pub struct ProtoCodec {
    modes: Modes,
}

#[pymethods]
impl ProtoCodec {
    /// `backends`: `(typed, dict, bytes)`; `options`: `agui_fast._plumbing.options`.
    #[new]
    fn new(backends: &Bound<'_, PyTuple>, options: Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(ProtoCodec { modes: Modes::new(backends, options)? })
    }

    /// Decode a whole framed stream (see `ProtoState::run_pipelined`). `legacy` is accepted
    /// for the SSE decoders' signature: the 1.0 wire format has no legacy shapes.
    #[pyo3(signature = (data, /, *, raw = None, legacy = true, max_frame_size = proto::DEFAULT_MAX_FRAME_SIZE, max_depth = DEFAULT_MAX_DEPTH, max_buffer_size = None))]
    #[allow(clippy::too_many_arguments)]
    fn decode_protobuf<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        raw: Option<&Bound<'py, PyAny>>,
        legacy: bool,
        #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
        #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
        #[pyo3(from_py_with = crate::args::max_buffer_size_opt)] max_buffer_size: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let _ = legacy;
        let r = self.modes.resolve(py, raw, max_frame_size, max_depth, max_buffer_size)?;
        let mut state = ProtoState::new(r.mode != agui_core::decoder::Mode::Bytes, r.max_frame_size, r.max_depth);
        state.stream.spare = SPARE.take();
        let out = with_buffer(data, |d| state.run(py, r.backend, Some(d), true));
        SPARE.set(std::mem::take(&mut state.stream.spare));
        out
    }
}

/// The compiled schema as JSON: `{"ag_ui.Msg": [[field, number, label, type], ...],
/// "enum ag_ui.E": [[name, number], ...]}` (used by the layer-agreement test).
#[pyfunction]
fn proto_schema() -> &'static str {
    proto::SCHEMA_JSON
}

pub fn register(m: &Bound<'_, PyModule>, testing: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(proto_encode_json, m)?)?;
    m.add_function(wrap_pyfunction!(proto_encode_many_json, m)?)?;
    m.add_function(wrap_pyfunction!(proto_encode_event, m)?)?;
    testing.add_function(wrap_pyfunction!(proto_encode_event_via_json, testing)?)?;
    m.add_function(wrap_pyfunction!(proto_encode_events, m)?)?;
    m.add_function(wrap_pyfunction!(proto_decode_message, m)?)?;
    testing.add_function(wrap_pyfunction!(proto_schema, testing)?)?;
    m.add_class::<ProtoDecoder>()?;
    m.add_class::<ProtoCodec>()?;
    m.add("PROTO_DEFAULT_MAX_FRAME_SIZE", proto::DEFAULT_MAX_FRAME_SIZE)?;
    Ok(())
}
