//! Binding of `agui_core::sse`: the native `SseDecoder` (framing, then the decoding
//! chain of `crate::stream` with the msgspec callables it was made with).

use agui_core::decoder::{Legacy, Mode, SseStream, DETACH_MIN};
use agui_core::limits::DEFAULT_MAX_DEPTH;
use agui_core::sse::{self as core, Batch};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::shared::Shared;
use crate::decoder::{self, decode_items, frame_error, with_buffer, Backend, GcPause, Items, Modes, Outcome, StreamState};

/// What an error calls a frame: an SSE event, or a JSON Lines line (its index counts
/// events: blank lines are skipped).
fn label(lines: bool) -> &'static str {
    if lines { "JSONL event" } else { "SSE frame" }
}

/// Decode a batch's frames into `res` (its buffer-limit error last).
#[allow(clippy::too_many_arguments)]
fn decode<'py>(py: Python<'py>, be: &Backend, legacy: &mut Legacy, max_depth: usize, batch: &Batch, res: &mut Outcome<'py>, label: &str) -> PyResult<()> {
    let first = batch.first_index;
    let pos = |k: usize| (first + k as u64, batch.offsets[k]);
    let items = Items {
        array: &batch.buf,
        spans: &batch.spans,
        pos: &pos,
        bulk: batch.balanced,
        float_hook: batch.prefer_float_hook(),
        candidates: &batch.candidates,
        too_deep: &batch.too_deep,
        deep_error: "InvalidJsonError",
    };
    decode_items(py, be, legacy, &items, label, max_depth, res)?;
    if let Some(e) = &batch.error {
        res.fail(e.frame_index, frame_error(py, "BufferLimitError", label, e.frame_index, e.offset, &e.message));
    }
    Ok(())
}

/// A large chunk: framed part by part on a Rust thread ahead of the decoding on this one
/// (`agui_core::decoder::SseParts`), the cyclic GC paused once for the whole call.
fn run_pipelined<'py>(py: Python<'py>, s: &mut SseStream, be: &Backend, data: &[u8], finish: bool) -> PyResult<Bound<'py, PyList>> {
    let _gc = GcPause::new(py, true);
    let (max_depth, label) = (s.max_depth, label(s.parser.is_lines()));
    let (mut parts, legacy) = s.parts(data, finish);
    let mut res = Outcome::new(py);
    crate::pipeline::pipelined(py, move || parts.next_part(), |batch| decode(py, be, legacy, max_depth, &batch, &mut res, label))?;
    res.finish(py)
}

impl StreamState for SseStream {
    /// Frame and decode one chunk (`None`: the end of the stream), or a whole stream.
    fn run<'py>(&mut self, py: Python<'py>, be: &Backend, chunk: Option<&[u8]>, finish: bool) -> PyResult<Bound<'py, PyList>> {
        if let Some(data) = chunk.filter(|_| SseStream::pipelines(chunk)) {
            return run_pipelined(py, self, be, data, finish);
        }
        let batch = if chunk.map_or(0, |c| c.len()) >= DETACH_MIN {
            py.detach(|| self.frame(chunk, finish))
        } else {
            self.frame(chunk, finish)
        };
        let mut res = Outcome::new(py);
        let r = decode(py, be, &mut self.legacy, self.max_depth, &batch, &mut res, label(self.parser.is_lines()));
        self.recycle(batch);
        r?;
        res.finish(py)
    }
}

thread_local! {
    /// The one-shot `decode_sse`'s batch between calls (a stream's own lives in its
    /// `SseStream`): a request body or a live chunk decoded with no buffer made anew.
    static SPARE: std::cell::Cell<Option<Box<agui_core::sse::Batch>>> = const { std::cell::Cell::new(None) };
}

/// Incremental SSE decoder (`agui_fast.sse.SseDecoder` is its Python face): framing in
/// `agui_core::sse`, then the fallback chain and error contract of `crate::stream`.
/// Threads that share one take turns (`crate::shared`).
#[pyclass(module = "agui_fast._native", name = "SseDecoder", subclass, frozen)]
pub struct SseDecoder {
    state: Shared<SseState>,
    backend: Backend,
}

struct SseState {
    stream: SseStream,
    closed: bool,
}

#[pymethods]
impl SseDecoder {
    /// Positional only (keyword parsing costs more than a small decode): see
    /// `crate::decoder::Backend` and `agui_core::decoder::SseStream::new`; `mode`: 0 typed,
    /// 1 dict, 2 bytes; `lines`: JSON Lines instead of an event stream.
    #[new]
    #[pyo3(signature = (backend, max_frame_size, max_depth, legacy, mode, lines = false, /))]
    fn new(
        backend: &Bound<'_, PyTuple>,
        #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
        #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
        legacy: bool,
        mode: usize,
        lines: bool,
    ) -> PyResult<Self> {
        let mode = Mode::from_index(mode).ok_or_else(|| pyo3::exceptions::PyValueError::new_err("mode must be 0, 1 or 2"))?;
        let stream = SseStream::new(max_frame_size, max_depth, legacy, mode);
        let stream = if lines { stream.lines() } else { stream };
        Ok(SseDecoder { state: Shared::deep(SseState { stream, closed: false }, max_depth), backend: Backend::new(backend)? })
    }

    /// The events completed by `chunk` (bytes-like); see `crate::stream` for errors.
    fn feed<'py>(&self, py: Python<'py>, chunk: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        self.state.with(py, |s| decoder::feed(py, &mut s.stream, &self.backend, s.closed, chunk))
    }

    /// End of stream: the final event if it lacked its blank line (as the reference
    /// client does). Later calls return `[]`.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.state.with(py, |s| decoder::close(py, &mut s.stream, &self.backend, &mut s.closed))
    }

    /// The stream's last event id (send it as `Last-Event-ID` on reconnect).
    #[getter]
    fn last_event_id(&self, py: Python<'_>) -> PyResult<String> {
        self.state.with(py, |s| Ok(s.stream.parser.last_event_id().to_owned()))
    }

    /// The last `retry` value of the stream (milliseconds), if any.
    #[getter]
    fn retry(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.state.with(py, |s| Ok(s.stream.parser.retry()))
    }

    /// Frames framed so far (decoded or not).
    #[getter]
    fn frame_count(&self, py: Python<'_>) -> PyResult<u64> {
        self.state.with(py, |s| Ok(s.stream.parser.frame_count()))
    }

    /// Bytes fed so far.
    #[getter]
    fn position(&self, py: Python<'_>) -> PyResult<u64> {
        self.state.with(py, |s| Ok(s.stream.parser.position()))
    }
}

/// The one-shot `decode_sse` (`agui_fast.sse.decode_sse` is this object's bound
/// method): keyword options resolved natively, no decoder object made.
#[pyclass(module = "agui_fast._native", name = "SseCodec", frozen)]
pub struct SseCodec {
    modes: Modes,
    /// JSON Lines: `decode_sse` frames with the parser's line mode (`decode_jsonl`).
    lines: bool,
}

#[pymethods]
impl SseCodec {
    /// `backends`: `(typed, dict, bytes)`; `options`: `agui_fast._plumbing.options`;
    /// `lines`: JSON Lines instead of an event stream.
    #[new]
    #[pyo3(signature = (backends, options, lines = false, /))]
    fn new(backends: &Bound<'_, PyTuple>, options: Bound<'_, PyAny>, lines: bool) -> PyResult<Self> {
        Ok(SseCodec { modes: Modes::new(backends, options)?, lines })
    }

    /// Decode a whole recorded SSE stream (see `run_pipelined`).
    #[pyo3(signature = (data, /, *, raw = None, legacy = true, max_frame_size = core::DEFAULT_MAX_BUFFER, max_depth = DEFAULT_MAX_DEPTH, max_buffer_size = None))]
    #[allow(clippy::too_many_arguments)]
    fn decode_sse<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'py, PyAny>,
        raw: Option<&Bound<'py, PyAny>>,
        legacy: bool,
        #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
        #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
        #[pyo3(from_py_with = crate::args::max_buffer_size_opt)] max_buffer_size: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let r = self.modes.resolve(py, raw, max_frame_size, max_depth, max_buffer_size)?;
        let state = SseStream::new(r.max_frame_size, r.max_depth, legacy, r.mode);
        let mut state = if self.lines { state.lines() } else { state };
        state.spare = SPARE.take();
        let out = with_buffer(data, |d| state.run(py, r.backend, Some(d), true));
        SPARE.set(state.spare.take());
        out
    }

}

/// One SSE event for `payload`: `data: <line>\n` per line, then `\n` (tests only).
#[pyfunction]
fn sse_event<'py>(py: Python<'py>, payload: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_buffer(payload, |p| {
        let mut out = Vec::with_capacity(p.len() + 8);
        core::write_event(&mut out, p);
        Ok(PyBytes::new(py, &out))
    })
}

/// Whether JSON text (bytes-like or str) nests deeper than `max_depth`: the project's one
/// depth limit for single events, checked before msgspec (whose limit is the interpreter's).
#[pyfunction]
fn json_exceeds_depth(data: &Bound<'_, PyAny>, #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize) -> PyResult<bool> {
    if let Ok(s) = data.cast::<pyo3::types::PyString>() {
        return Ok(agui_core::limits::exceeds_depth(s.to_cow()?.as_bytes(), max_depth));
    }
    crate::decoder::with_buffer(data, |b| Ok(agui_core::limits::exceeds_depth(b, max_depth)))
}

/// `f(data)` for JSON text (bytes-like or str) whose decoding recurses as deep as it nests
/// (msgspec's): on a stack with room for that many levels (`agui_core::limits::deep`).
#[pyfunction]
fn call_nested<'py>(f: &Bound<'py, PyAny>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let depth = if let Ok(s) = data.cast::<pyo3::types::PyString>() {
        agui_core::limits::depth_of(s.to_cow()?.as_bytes())
    } else {
        crate::decoder::with_buffer(data, |b| Ok(agui_core::limits::depth_of(b)))?
    };
    agui_core::limits::deep(depth, || f.call1((data,)))
}

pub fn register(m: &Bound<'_, PyModule>, testing: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(json_exceeds_depth, m)?)?;
    m.add_function(wrap_pyfunction!(call_nested, m)?)?;
    m.add_class::<SseDecoder>()?;
    m.add_class::<SseCodec>()?;
    m.add("SSE_DEFAULT_MAX_BUFFER", core::DEFAULT_MAX_BUFFER)?;
    testing.add_function(wrap_pyfunction!(sse_event, testing)?)?;
    Ok(())
}
