//! Binding of `agui_core::stream` (the reference client's stream semantics). Events enter
//! as JSON text: `bytes`/`str` as they are, any other object through the native JSON
//! writer (`encode::dumps`: one conversion path), except our Structs whose JSON would be a
//! plain delta or plain event, read from their fields (`push_fields`), and plain
//! `STATE_DELTA`s applied as Python objects (`direct_delta`). Messages, state and interrupts leave as
//! plain Python values built from the engine's values (no JSON text between), which
//! `agui_fast/stream.py` types with msgspec (a whole-log replay's messages as the Structs
//! themselves when `typed.rs` can build them); events leave as JSON text. Batch work runs
//! with the GIL released.

use agui_core::limits::{DEFAULT_MAX_DEPTH, MAX_DEPTH_CAP};
use agui_core::stream::client::{self as run, RunError, Wire};
use agui_core::stream::legacy::{ProtocolVersion, Shims};
use agui_core::stream::{self as core, parse_event_limited, ReplayOptions, Stage, StreamError, Warning, WarningKind};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::errors::{check_max_depth, class_name, error_class, make_error};
use crate::patch::{Doc, GivenOp};
use crate::plan::{Getter, Kind, PlanKind};
use crate::shared::Shared;
use agui_core::patch::tree::Tree;
use agui_core::patch::OpKind;
use agui_core::sink::Scalar;
use pyo3::sync::PyOnceLock;

/// Below this many events releasing the GIL costs more than it saves.
const DETACH_MIN: usize = 64;

/// Writer of the objects the native writer refuses (`stream.py` sets it once at import):
/// a Python `str` holding a lone surrogate, which a decoder keeps when a producer splits a
/// character across two deltas, must still replay as the reference joins it.
static SURROGATE_WRITER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// set_surrogate_writer(fn): `fn(obj) -> bytes` (JSON text with `\udXXX` escapes) for the
/// events the native writer refuses with `EncodeError`. Set once; later calls are ignored.
#[pyfunction]
fn set_surrogate_writer(py: Python<'_>, writer: Py<PyAny>) {
    let _ = SURROGATE_WRITER.set(py, writer);
}

/// `StateDeltaEvent` and the six operation classes (`stream.py` sets them once at import):
/// a `STATE_DELTA` given as one of our Structs is applied to the state without JSON.
static STATE_DELTA_TYPES: PyOnceLock<(Py<PyAny>, Vec<Py<PyAny>>)> = PyOnceLock::new();

/// set_state_delta_types(event_class, operation_classes). Set once; later calls are ignored.
#[pyfunction]
fn set_state_delta_types(py: Python<'_>, event_class: Py<PyAny>, operation_classes: Vec<Py<PyAny>>) {
    let _ = STATE_DELTA_TYPES.set(py, (event_class, operation_classes));
}

/// The JSON text of one event: borrowed from `bytes`/`str`, or written by the native
/// writer (the surrogate writer when that refuses the object). The depth limit is the
/// parse's (`max_depth=`): the writer's is only a guard against cycles, so an object
/// nested too deep is the same `InvalidJsonError` as text nested too deep.
fn with_json<R>(py: Python<'_>, event: &Bound<'_, PyAny>, max_depth: usize, f: impl FnOnce(&[u8]) -> R) -> PyResult<Result<R, Unwritable>> {
    if let Ok(b) = event.cast::<PyBytes>() {
        return Ok(Ok(f(b.as_bytes())));
    }
    if let Ok(s) = event.cast::<PyString>() {
        return Ok(Ok(f(s.to_str()?.as_bytes())));
    }
    with_written_json(py, event, max_depth, f)
}

/// Why an object cannot be written as JSON text: its event's (or value's) decode error.
struct Unwritable(String);

/// The JSON text of a value written by the native writer (the surrogate writer when it
/// refuses the object): a `str` is a JSON string. Nesting past the writer's guard, an
/// `int` too long for decimal text, what pydantic refuses (a `ValueError` not of ours)
/// and a value the surrogate writer cannot write are [`Unwritable`].
fn with_written_json<R>(py: Python<'_>, event: &Bound<'_, PyAny>, max_depth: usize, f: impl FnOnce(&[u8]) -> R) -> PyResult<Result<R, Unwritable>> {
    let e = match crate::encode::dumps(py, event, true, MAX_DEPTH_CAP as u32 + 1) {
        Ok(b) => return Ok(Ok(f(b.as_bytes()))),
        Err(e) => e,
    };
    let text = e.value(py).to_string();
    let deep = || Unwritable(format!("nested deeper than {max_depth} levels"));
    if e.is_instance(py, error_class(py, "EncodeError")?.as_any()) {
        if text.starts_with("maximum nesting depth exceeded") {
            return Ok(Err(deep()));
        }
        if let Some(w) = SURROGATE_WRITER.get(py) {
            return match w.bind(py).call1((event,)) {
                Ok(b) => Ok(Ok(f(b.cast_into::<PyBytes>()?.as_bytes()))),
                // (a plain Python writer: it recurses)
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyRecursionError>(py) => Ok(Err(deep())),
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyValueError>(py) => Ok(Err(Unwritable(format!("cannot be written as JSON: {}", e.value(py))))),
                Err(e) => Err(e),
            };
        }
        return Err(e);
    }
    let ours = e.is_instance(py, error_class(py, "AguiError")?.as_any());
    if !ours && e.is_instance_of::<pyo3::exceptions::PyValueError>(py) {
        return Ok(Err(Unwritable(format!("cannot be written as JSON: {text}"))));
    }
    Err(e)
}

/// One event as a JSON value (a decode error is reported at `index`).
fn event_value(py: Python<'_>, event: &Bound<'_, PyAny>, index: usize, max_depth: usize) -> PyResult<Value> {
    match with_json(py, event, max_depth, |b| parse_event_limited(b, max_depth))? {
        Ok(parsed) => parsed.map_err(|e| error_at(py, e, index)),
        Err(Unwritable(message)) => Err(error_at(py, decode_error(message), index)),
    }
}

/// A decode error (its index set by the caller).
fn decode_error(message: String) -> StreamError {
    StreamError { stage: Stage::Decode, rule: None, index: 0, event_type: String::new(), ids: Vec::new(), message, field: None }
}

fn json_bytes<'py>(py: Python<'py>, v: &Value) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &core::json_text(v))
}

/// A result value (messages, a message, the state, interrupts) as plain Python values,
/// built from the engine's value (its kept lone surrogates restored), as JSON text
/// decoded would give them.
fn result_value<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    crate::patch::stream_value(py, v, MAX_DEPTH_CAP)
}

/// A reducer's message as plain Python values (as [`result_value`] makes its JSON value).
fn message_value<'py>(py: Python<'py>, m: &core::Message) -> PyResult<Bound<'py, PyAny>> {
    crate::patch::stream_walked(py, MAX_DEPTH_CAP, |b| m.walk(b))
}

/// A reducer's messages as a list of plain Python values (as [`result_value`] makes
/// their JSON array).
fn messages_value<'py>(py: Python<'py>, ms: &[core::Message]) -> PyResult<Bound<'py, PyAny>> {
    use agui_core::sink::Sink;
    crate::patch::stream_walked(py, MAX_DEPTH_CAP, |b| {
        b.begin_array();
        for m in ms {
            m.walk(b);
        }
        b.end_array();
    })
}

fn json_list<'py>(py: Python<'py>, items: &[Value]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &core::json_list(items))
}

/// A `StreamError` as the project's exception: decode -> `InvalidJsonError` (with the
/// frame index), a malformed field -> `EventValidationError` (frame index and field),
/// verify -> `VerificationError`, other stages -> `StreamError`.
fn stream_error(py: Python<'_>, e: &StreamError) -> PyErr {
    stream_error_at(py, e, None)
}

/// [`stream_error`] of an event whose frame starts at `offset` in a stream.
fn stream_error_at(py: Python<'_>, e: &StreamError, offset: Option<u64>) -> PyErr {
    let kwargs = PyDict::new(py);
    let build = || -> PyResult<()> {
        if matches!(e.stage, Stage::Decode | Stage::Schema) {
            kwargs.set_item("offset", offset)?;
            kwargs.set_item("field", e.field.as_deref())?;
            return kwargs.set_item("frame_index", e.index);
        }
        kwargs.set_item("stage", e.stage.name())?;
        kwargs.set_item("rule", e.rule)?;
        kwargs.set_item("index", e.index)?;
        kwargs.set_item("event_type", (!e.event_type.is_empty()).then_some(e.event_type.as_str()))?;
        kwargs.set_item("ids", PyTuple::new(py, e.ids.iter().map(|id| crate::patch::stream_text(py, id)))?)
    };
    match build() {
        // (a stage's kind is always one of the project's classes; the message may quote
        // an id with a lone surrogate, restored as the ids are)
        Ok(()) => make_error(py, class_name(e.stage.kind()), crate::patch::stream_text(py, &e.to_string()), Some(&kwargs)),
        Err(err) => err,
    }
}

/// [`stream_error`] of an error at event `index`.
fn error_at(py: Python<'_>, e: StreamError, index: usize) -> PyErr {
    stream_error(py, &StreamError { index, ..e })
}

/// Warnings as `(index, message, kind, ids, path)` tuples (`stream.py` makes them
/// `StreamWarning`s); the index is None for a warning about the run input.
fn warnings_list<'py>(py: Python<'py>, ws: &[Warning]) -> PyResult<Bound<'py, PyList>> {
    let items = ws
        .iter()
        .map(|w| {
            let index = (w.kind != WarningKind::Request).then_some(w.index);
            let text = |s: &str| crate::patch::stream_text(py, s);
            let ids = PyTuple::new(py, w.ids.iter().map(|id| text(id))).ok();
            (index, text(&w.message), w.kind.name(), ids, w.path.as_deref().map(text))
        })
        .collect::<Vec<_>>();
    PyList::new(py, items)
}

/// The peer's era and this client's protocol version from their Python spellings:
/// `max_protocol_version` a version the era's shims compare (`"0.0.39"`),
/// `protocol_version` `"major.minor"`; a bad one is a `ValueError`.
fn era_options(max_protocol_version: Option<&str>, protocol_version: Option<&str>) -> PyResult<(Shims, Option<ProtocolVersion>)> {
    let era = match max_protocol_version {
        None => Shims::default(),
        Some(v) if core::legacy::valid_version(v) => Shims { boundary: false, ..Shims::for_peer(v) },
        Some(v) => return Err(PyValueError::new_err(format!("max_protocol_version {v:?} is not a version (such as \"0.0.57\")"))),
    };
    let ours = match protocol_version {
        None => None,
        Some(v) => Some(
            ProtocolVersion::parse(v).ok_or_else(|| PyValueError::new_err(format!("protocol_version {v:?} is not a \"major.minor\" version")))?,
        ),
    };
    Ok((era, ours))
}

fn items<'py>(events: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if events.is_instance_of::<PyString>() || events.is_instance_of::<PyBytes>() || events.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err("events must be an iterable of events, not a single event"));
    }
    events.try_iter()?.collect()
}

/// The JSON values of a sequence of events (the first unreadable one raises).
fn values(py: Python<'_>, events: &Bound<'_, PyAny>, max_depth: usize) -> PyResult<Vec<Value>> {
    items(events)?.iter().enumerate().map(|(i, e)| event_value(py, e, i, max_depth)).collect()
}

// ---------------------------------------------------------------------------------------
// Chunk expansion
// ---------------------------------------------------------------------------------------

/// Incremental `transformChunks`: `push(event) -> bytes` (a JSON array of the events it
/// expands to).
#[pyclass(module = "agui_fast._native", name = "ChunkExpander")]
pub struct ChunkExpander {
    inner: core::ChunkExpander,
    index: usize,
    warnings: Vec<Warning>,
    max_depth: usize,
}

impl ChunkExpander {
    /// Expand the next event into `out`, keeping its warnings.
    fn expand(&mut self, py: Python<'_>, event: &Bound<'_, PyAny>, out: &mut Vec<Value>) -> PyResult<()> {
        let index = self.index;
        self.index += 1;
        let v = event_value(py, event, index, self.max_depth)?;
        let r = self.inner.push_into(v, out);
        self.warnings.extend(self.inner.take_warnings().into_iter().map(|message| Warning::new(WarningKind::Chunks, index, message)));
        r.map_err(|e| error_at(py, e, index))
    }
}

#[pymethods]
impl ChunkExpander {
    #[new]
    #[pyo3(signature = (*, max_depth = DEFAULT_MAX_DEPTH))]
    fn new(#[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize) -> PyResult<Self> {
        let max_depth = check_max_depth(max_depth)?;
        Ok(ChunkExpander { inner: core::ChunkExpander::new(), index: 0, warnings: Vec::new(), max_depth })
    }

    fn push<'py>(&mut self, py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        agui_core::limits::deep(self.max_depth, || {
            let mut out = Vec::with_capacity(2);
            self.expand(py, event, &mut out)?;
            Ok(json_list(py, &out))
        })
    }

    /// Warnings so far as `(index, message)`, drained.
    fn take_warnings<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        warnings_list(py, &std::mem::take(&mut self.warnings))
    }
}

/// expand_chunks(events) -> (bytes, warnings, error | None): the expanded events before
/// the error, as a JSON array.
#[pyfunction]
#[pyo3(signature = (events, /, *, max_depth = DEFAULT_MAX_DEPTH))]
fn expand_chunks<'py>(py: Python<'py>, events: &Bound<'py, PyAny>, #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize) -> PyResult<Bound<'py, PyTuple>> {
    let mut x = ChunkExpander::new(max_depth)?;
    agui_core::limits::deep(max_depth, || {
        let (mut out, mut error) = (Vec::new(), None);
        for e in items(events)?.iter() {
            if let Err(err) = x.expand(py, e, &mut out) {
                error = Some(err.into_value(py));
                break;
            }
        }
        (json_list(py, &out), warnings_list(py, &x.warnings)?, error).into_pyobject(py)
    })
}

// ---------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------

/// Incremental `verifyEvents`: `push(event)` raises `VerificationError` on a violation.
#[pyclass(module = "agui_fast._native", name = "EventVerifier")]
pub struct EventVerifier {
    inner: core::EventVerifier,
    index: usize,
    max_depth: usize,
}

#[pymethods]
impl EventVerifier {
    #[new]
    #[pyo3(signature = (*, max_depth = DEFAULT_MAX_DEPTH))]
    fn new(#[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize) -> PyResult<Self> {
        Ok(EventVerifier { inner: core::EventVerifier::new(), index: 0, max_depth: check_max_depth(max_depth)? })
    }

    fn push(&mut self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<()> {
        let index = self.index;
        self.index += 1;
        agui_core::limits::deep(self.max_depth, || {
            let v = event_value(py, event, index, self.max_depth)?;
            self.inner.push(&v).map_err(|e| error_at(py, e, index))
        })
    }
}

/// verify_events(events): raises `VerificationError` at the first violation.
#[pyfunction]
#[pyo3(signature = (events, /, *, max_depth = DEFAULT_MAX_DEPTH))]
fn verify_events(py: Python<'_>, events: &Bound<'_, PyAny>, #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize) -> PyResult<()> {
    let max_depth = check_max_depth(max_depth)?;
    agui_core::limits::deep(max_depth, || {
        let vs = values(py, events, max_depth)?;
        let r = if vs.len() >= DETACH_MIN { py.detach(|| core::verify_events(&vs)) } else { core::verify_events(&vs) };
        r.map_err(|e| stream_error(py, &e))
    })
}

// ---------------------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------------------

/// compact_events(events) -> (bytes, warnings): the compacted events as a JSON array.
#[pyfunction]
#[pyo3(signature = (events, /, *, max_depth = DEFAULT_MAX_DEPTH, max_patch_bytes = None))]
fn compact_events<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
    max_patch_bytes: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let max_depth = check_max_depth(max_depth)?;
    let limits = core::PatchLimits::new(max_depth, crate::patch::max_patch_bytes(max_patch_bytes)?);
    agui_core::limits::deep(max_depth, || {
        let vs = values(py, events, max_depth)?;
        let (out, warnings) = py.detach(|| core::compact_events_within(vs, limits));
        (json_list(py, &out), PyList::new(py, warnings)?).into_pyobject(py)
    })
}

// ---------------------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------------------

/// The initial messages (a list, or its JSON text) and state (any JSON value: a `str` is
/// a string, `bytes` JSON text) of a replay as JSON values.
fn initial(py: Python<'_>, messages: Option<&Bound<'_, PyAny>>, state: Option<&Bound<'_, PyAny>>, max_depth: usize) -> PyResult<(Vec<Value>, Value)> {
    let parse = |b: &[u8]| agui_core::stream::parse_json_limited(b, max_depth).and_then(|v| agui_core::stream::check_int_digits(&v).map(|()| v));
    let messages = match messages {
        None => Vec::new(),
        Some(m) => {
            let v = with_json(py, m, max_depth, parse)?
                .map_err(|Unwritable(e)| e)
                .and_then(|r| r)
                .map_err(|e| make_error(py, "InvalidJsonError", format!("messages: {e}"), None))?;
            match v {
                Value::Array(a) => a,
                _ => return Err(PyTypeError::new_err("messages must be a list of messages")),
            }
        }
    };
    let state = match state {
        None => core::empty_state(),
        Some(s) => if s.is_instance_of::<PyString>() { with_written_json(py, s, max_depth, parse) } else { with_json(py, s, max_depth, parse) }?
            .map_err(|Unwritable(e)| e)
            .and_then(|r| r)
            .map_err(|e| make_error(py, "InvalidJsonError", format!("state: {e}"), None))?,
    };
    Ok((messages, state))
}

/// Where a replay of Python objects starts: the messages as JSON values, the state as a
/// document of Python values (taken as it is when it follows the document's rules, else
/// read as JSON: bytes given as such, values only the pydantic writer takes, lone
/// surrogates); its patches within `max_patch_bytes`.
fn start(
    py: Python<'_>,
    messages: Option<&Bound<'_, PyAny>>,
    state: Option<&Bound<'_, PyAny>>,
    max_depth: usize,
    max_patch_bytes: usize,
) -> PyResult<(Vec<Value>, Doc)> {
    let direct = state.filter(|s| !s.is_instance_of::<PyBytes>()).and_then(|s| crate::patch::doc_value(s, max_depth));
    let (messages, root) = match (state, direct) {
        (None, _) => (initial(py, messages, None, max_depth)?.0, PyDict::new(py).into_any()),
        (Some(_), Some(root)) => (initial(py, messages, None, max_depth)?.0, root),
        (Some(s), None) => {
            let (messages, state) = initial(py, messages, Some(s), max_depth)?;
            (messages, crate::patch::stream_value(py, &state, max_depth)?)
        }
    };
    Ok((messages, Doc::stream(root, &core::PatchLimits::new(max_depth, max_patch_bytes))))
}

/// The reducer with chunk expansion (and optionally verification) in front, as the
/// reference client runs them: `push(event)` applies one event.
#[pyclass(module = "agui_fast._native", name = "Replayer")]
pub struct Replayer {
    // Threads sharing one replayer take turns (`shared::Shared`). The state is a document
    // of Python values (`patch::StateDocument`): neither it nor the deltas given as
    // objects are converted to JSON.
    inner: Shared<core::Replayer<Doc>>,
}

impl Replayer {
    fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut core::Replayer<Doc>) -> PyResult<R>) -> PyResult<R> {
        self.inner.with(py, f)
    }

    /// Apply one event: a `STATE_DELTA` object in its plain form straight to the state
    /// (when the core's pipeline lets it past the other stages and the document takes it),
    /// anything else (and a delta the document declines) as JSON text.
    fn push_one(inner: &mut core::Replayer<Doc>, max_depth: usize, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<Result<core::Change, StreamError>> {
        if let Some(ops) = direct_delta(py, event)? {
            // The operations' values sit three levels deep in the event (event, `delta`,
            // operation), so this bound keeps the event within the limit its JSON has.
            if let Some(values_depth) = max_depth.checked_sub(3) {
                if let Some(c) = inner.push_state_with(|doc, limits| doc.try_apply_objects(&ops, values_depth, limits, |op| plain_op(py, op))) {
                    return Ok(Ok(c));
                }
            }
        }
        if let Some(r) = push_fields(event, inner, max_depth) {
            return Ok(r);
        }
        let index = inner.pushed();
        Ok(with_json(py, event, max_depth, |b| inner.push_json(b))?.unwrap_or_else(|Unwritable(message)| Err(StreamError { index, ..decode_error(message) })))
    }
}

/// An event given as one of our Structs whose JSON would be a plain delta or another plain
/// event (`event::Delta`, `event::Plain`: strings and integers the stages pass as they
/// are), pushed from its fields as the engine reads them from that JSON (a snapshot or
/// usage from its own JSON text). None (nothing pushed: the caller writes the JSON):
/// another object, another member, a value that is not an exact `str` (one with a lone
/// surrogate included), `int` within 64 bits, or `dict`/`list` where a nested value goes,
/// or a state of the engine that needs the event object.
fn push_fields(event: &Bound<'_, PyAny>, inner: &mut core::Replayer<Doc>, max_depth: usize) -> Option<Result<core::Change, StreamError>> {
    if max_depth == 0 {
        return None;
    }
    let py = event.py();
    let Ok(Some(Kind::Plan(plan))) = crate::plan::current_kind_of(py, event) else { return None };
    let PlanKind::Struct { has_dict, managed } = plan.kind else { return None };
    if let Some(shape) = plan.plain.get_or_init(|| PlainShape::of(&plan)) {
        if has_dict && !crate::ffi::layout::get(py).no_class_extras(event, managed) {
            return None;
        }
        // Strings and integers read in place; a nested value (or anything else) below.
        match crate::ffi::walk::with_plain_fields(event, &shape.slots, |fields| push_plain_fields(shape, fields, inner, max_depth)) {
            Some(Fast::Done(r)) => return r,
            Some(Fast::General) | None => {}
        }
    }
    push_fields_read(event, inner, max_depth)
}

/// How instances of one of our event classes read as a plain event: the event type (the
/// class's tag), where its fields lie, and for each its member in the plain forms (its
/// name, None for a member they do not have; a delta's slot). None: a class whose fields
/// are not all read from slots, or whose tag is no known type.
pub(crate) struct PlainShape {
    kind: core::EventType,
    delta: bool,
    slots: crate::ffi::walk::PlainSlots,
    /// in the order of `slots`
    members: Vec<PlainMember>,
}

/// A field's member in the plain forms: its name (None: a member they do not have) and its
/// slot in a delta event (`event::delta_slot`).
struct PlainMember {
    name: Option<&'static str>,
    slot: Option<(usize, bool)>,
}

impl PlainShape {
    fn of(plan: &crate::plan::Plan) -> Option<PlainShape> {
        use core::EventType as E;
        let tag = plan.fields.iter().find_map(|f| match &f.getter {
            Getter::ConstScalar(Scalar::Str(t)) => Some(E::parse(&t.text)),
            _ => None,
        });
        let kind = tag.filter(|k| *k != E::Unknown)?;
        let (slots, indexes) = crate::ffi::walk::PlainSlots::of(plan)?;
        let members = indexes
            .into_iter()
            .map(|i| {
                let key = &plan.fields[i].key.text;
                PlainMember { name: core::event::plain_member_name(key), slot: core::event::delta_slot(key) }
            })
            .collect();
        Some(PlainShape { kind, delta: core::event::has_delta_form(kind), slots, members })
    }
}


/// What [`push_plain_fields`] made of an event.
enum Fast {
    /// Pushed (`Some`), or not in a plain form (`None`: the JSON path).
    Done(Option<Result<core::Change, StreamError>>),
    /// A value read here does not tell (a nested value, `null`, ...): read the fields as
    /// objects ([`push_fields_read`]).
    General,
}

/// Push an event from its fields read in place (see [`push_fields`]).
#[inline(always)]
fn push_plain_fields(shape: &PlainShape, fields: crate::ffi::walk::PlainFields<'_>, inner: &mut core::Replayer<Doc>, max_depth: usize) -> Fast {
    use crate::ffi::walk::PlainField as F;
    use core::event::{DeltaMembers, Given, Plain};
    if shape.delta {
        // Strings only, straight into the delta's slots.
        let (mut m, mut within_bmp) = (DeltaMembers::default(), true);
        let mut members = shape.members.iter();
        for field in fields {
            let slot = members.next().and_then(|m| m.slot);
            let (s, bmp) = match field {
                Some(F::Omitted) => continue,
                Some(F::Str(s, bmp)) => (s, bmp),
                Some(F::Int(_)) => return Fast::Done(None),
                Some(F::Other) | None => return Fast::General,
            };
            let Some(slot) = slot else { return Fast::Done(None) };
            if !m.put(slot, s) {
                return Fast::Done(None);
            }
            within_bmp &= bmp;
        }
        // (a string within the BMP holds no character of the kept range)
        return Fast::Done(m.finish(shape.kind, within_bmp).and_then(|d| inner.push_plain(d.kind, d.id.as_deref(), &d.delta)));
    }
    const MAX: usize = 8;
    let mut given: [(&str, Given<'_>); MAX] = std::array::from_fn(|_| ("", Given::Int(0)));
    let mut n = 0;
    let mut members = shape.members.iter();
    for field in fields {
        let name = members.next().and_then(|m| m.name);
        let value = match field {
            Some(F::Omitted) => continue,
            Some(F::Str(s, _)) => Given::Str(std::borrow::Cow::Borrowed(s)),
            Some(F::Int(i)) => Given::Int(i),
            Some(F::Other) | None => return Fast::General,
        };
        let (Some(name), Some(slot)) = (name, given.get_mut(n)) else { return Fast::Done(None) };
        *slot = (name, value);
        n += 1;
    }
    Fast::Done(Plain::build(shape.kind, &mut given[..n], max_depth).and_then(|p| inner.push_plain_event(p)))
}

/// [`push_fields`] of an event whose fields are read as objects: a nested value (a
/// snapshot, the usage) as its own JSON text.
fn push_fields_read(event: &Bound<'_, PyAny>, inner: &mut core::Replayer<Doc>, max_depth: usize) -> Option<Result<core::Change, StreamError>> {
    use core::event::{Delta, Given, Plain};
    use core::EventType as E;
    const MAX: usize = 8;
    let mut held: [(&str, Option<Bound<'_, PyAny>>); MAX] = std::array::from_fn(|_| ("", None));
    let mut n = 0;
    let kind = plain_struct(event, |tag| Some(E::parse(tag)).filter(|k| *k != E::Unknown), |key, v| {
        let (Some(name), Some(slot)) = (core::event::plain_member_name(key), held.get_mut(n)) else { return false };
        *slot = (name, Some(v));
        n += 1;
        true
    })?;
    // A snapshot of plain Python data goes into the state (a document of Python values) as
    // a copy, without JSON, when the stages would pass its event to the state unchanged
    // (as a `STATE_DELTA` given as objects); the event's other members are checked as
    // the plain event's, its snapshot standing as `null` there.
    let mut direct = None;
    if kind == E::StateSnapshot && inner.takes_state_delta_directly() {
        if let Some((_, Some(v))) = held[..n].iter().find(|(name, _)| *name == "snapshot") {
            direct = crate::patch::plain_value(v, max_depth - 1);
        }
    }
    // A nested value (a snapshot, the usage) as the JSON writer writes it within the
    // event: its text alone.
    let mut texts: [Option<Bound<'_, PyBytes>>; MAX] = std::array::from_fn(|_| None);
    for ((name, v), text) in held[..n].iter().zip(texts.iter_mut()) {
        let v = v.as_ref()?;
        if direct.is_some() && *name == "snapshot" {
            continue;
        }
        if matches!(*name, "snapshot" | "usage") && (v.cast_exact::<PyDict>().is_ok() || v.cast_exact::<PyList>().is_ok()) {
            *text = Some(crate::encode::dumps(event.py(), v, true, MAX_DEPTH_CAP as u32 + 1).ok()?);
        }
    }
    let mut given: [(&str, Given<'_>); MAX] = std::array::from_fn(|_| ("", Given::Int(0)));
    for (((name, v), text), slot) in held[..n].iter().zip(&texts).zip(given.iter_mut()) {
        let v = v.as_ref()?;
        let value = if direct.is_some() && *name == "snapshot" {
            Given::Json("null")
        } else if let Ok(s) = v.cast_exact::<PyString>() {
            Given::Str(std::borrow::Cow::Borrowed(s.to_str().ok()?))
        } else if let Ok(i) = v.cast_exact::<pyo3::types::PyInt>() {
            Given::Int(i.extract().ok()?)
        } else if let Some(text) = text {
            Given::Json(std::str::from_utf8(text.as_bytes()).ok()?)
        } else {
            return None;
        };
        *slot = (name, value);
    }
    let given = &mut given[..n];
    if core::event::has_delta_form(kind) {
        let mut strings: [(&str, &str); MAX] = [("", ""); MAX];
        for ((name, v), slot) in given.iter().zip(strings.iter_mut()) {
            let Given::Str(s) = v else { return None };
            *slot = (name, s.as_ref());
        }
        let d = Delta::build(kind, &strings[..given.len()])?;
        return inner.push_plain(d.kind, d.id.as_deref(), &d.delta);
    }
    let plain = Plain::build(kind, given, max_depth)?;
    match direct {
        Some(root) => inner.push_state_with(|doc, _| {
            doc.set_root(root);
            true
        }).map(Ok),
        None => inner.push_plain_event(plain),
    }
}

/// The operations of a `STATE_DELTA` given as a plain dict `{"type": "STATE_DELTA",
/// "delta": [...]}` or as our `StateDeltaEvent` whose JSON would hold nothing else (every
/// other member left out, no extras): such an event is applied without JSON text. None:
/// anything else.
fn direct_delta<'py>(py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyList>>> {
    let delta = if let Ok(d) = event.cast_exact::<PyDict>() {
        let is_delta = d.len() == 2
            && d.get_item(intern!(py, "type"))?.is_some_and(|t| t.cast_exact::<PyString>().is_ok_and(|t| t.to_str().is_ok_and(|t| t == "STATE_DELTA")));
        if !is_delta {
            return Ok(None);
        }
        d.get_item(intern!(py, "delta"))?
    } else {
        let Some((class, _)) = STATE_DELTA_TYPES.get(py) else { return Ok(None) };
        if !std::ptr::eq(event.get_type_ptr().cast(), class.as_ptr()) {
            return Ok(None);
        }
        let mut delta = None;
        let tag = plain_struct(event, |tag| (tag == "STATE_DELTA").then_some(()), |key, v| match key {
            "delta" => delta.replace(v).is_none(),
            _ => false,
        });
        if tag.is_none() {
            return Ok(None);
        }
        delta
    };
    Ok(delta.and_then(|d| d.cast_into_exact::<PyList>().ok()))
}

/// Read one of our Structs as its JSON would carry it, through its class's plan (the JSON
/// writer's, `plan::current_kind`: fields read in place from their slots): `tag(text)`
/// judges its tag, `member(wire_key, value)` each member the JSON would hold besides the
/// tag (false refuses it). None (the caller takes the JSON path) when a member or the tag
/// is refused, the instance has extras, a field cannot be read, or the plan cannot be
/// trusted to describe the class as it is now.
fn plain_struct<'py, T>(
    obj: &Bound<'py, PyAny>,
    tag: impl Fn(&str) -> Option<T>,
    mut member: impl FnMut(&str, Bound<'py, PyAny>) -> bool,
) -> Option<T> {
    let py = obj.py();
    let Ok(Some(Kind::Plan(plan))) = crate::plan::current_kind_of(py, obj) else { return None };
    let PlanKind::Struct { has_dict, .. } = plan.kind else { return None };
    let mut found = None;
    for f in &plan.fields {
        let v = match &f.getter {
            Getter::ConstScalar(Scalar::Str(t)) if found.is_none() => {
                found = Some(tag(&t.text)?);
                continue;
            }
            Getter::ConstScalar(_) | Getter::Const(_) => return None,
            // (From its slot: the plan is the current one of `obj`'s class.)
            _ => crate::ffi::walk::field(obj, &plan, f).ok()?,
        };
        // Left out of the JSON, as the writer leaves it out.
        if v.as_ptr() as usize == plan.unset || (f.omit_if_none && v.is_none()) {
            continue;
        }
        if !member(&f.key.text, v) {
            return None;
        }
    }
    if has_dict && !crate::ffi::layout::get(py).no_extras(obj) {
        return None;
    }
    found
}

/// An operation whose JSON holds only the members the patch reads: a dict with exactly
/// `op`, `path` and `value` / `from` as its op needs (read by the patch engine), or one of
/// our operation Structs read by [`plain_struct`] (its op from its class's tag). None:
/// anything else, and the engine's internal `_get` (which the schema stage strips), so
/// that such a delta takes the JSON path.
fn plain_op<'py>(py: Python<'py>, op: &Bound<'py, PyAny>) -> Option<GivenOp<'py>> {
    let protocol_op = |k: &str| OpKind::parse(k).filter(|k| *k != OpKind::Get);
    if let Ok(d) = op.cast_exact::<PyDict>() {
        let kind = d.get_item(intern!(py, "op")).ok().flatten().and_then(|o| o.cast_into_exact::<PyString>().ok()).and_then(|o| o.to_str().ok().and_then(protocol_op));
        return kind.is_some_and(|k| d.len() == 2 + usize::from(k.needs_value()) + usize::from(k.needs_from())).then_some(GivenOp::Read);
    }
    let (_, classes) = STATE_DELTA_TYPES.get(py)?;
    let ty = op.get_type_ptr() as usize;
    if !classes.iter().any(|c| c.as_ptr() as usize == ty) {
        return None;
    }
    let (mut path, mut from, mut value) = (None, None, None);
    let kind = plain_struct(op, protocol_op, |key, v| {
        let slot = match key {
            "path" => &mut path,
            "from" => &mut from,
            "value" => &mut value,
            _ => return false,
        };
        slot.replace(v).is_none()
    })?;
    Some(GivenOp::Members { kind, path, from, value })
}

fn change_tuple<'py>(py: Python<'py>, c: &core::Change) -> PyResult<Bound<'py, PyTuple>> {
    (c.messages, c.state, c.message, c.interrupts).into_pyobject(py)
}

#[pymethods]
impl Replayer {
    #[new]
    #[pyo3(signature = (messages=None, state=None, *, verify=false, expand=true, compat=true, schema=true, max_protocol_version=None, protocol_version=None, record=false, max_depth=DEFAULT_MAX_DEPTH, max_patch_bytes=None, reduce=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        messages: Option<&Bound<'_, PyAny>>,
        state: Option<&Bound<'_, PyAny>>,
        verify: bool,
        expand: bool,
        compat: bool,
        schema: bool,
        max_protocol_version: Option<&str>,
        protocol_version: Option<&str>,
        record: bool,
        #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
        max_patch_bytes: Option<&Bound<'_, PyAny>>,
        reduce: bool,
    ) -> PyResult<Self> {
        let max_depth = check_max_depth(max_depth)?;
        let max_patch_bytes = crate::patch::max_patch_bytes(max_patch_bytes)?;
        let (era, protocol_version) = era_options(max_protocol_version, protocol_version)?;
        let (messages, state) = agui_core::limits::deep(max_depth, || start(py, messages, state, max_depth, max_patch_bytes))?;
        let options = ReplayOptions { verify, expand, compat, schema, era, protocol_version, max_depth, max_patch_bytes, ..ReplayOptions::default() };
        let inner = core::Replayer::new(messages, state, options);
        // reduce=False: the stages before the reducer alone (`validate` of a long log).
        let mut inner = if reduce { inner } else { inner.without_reducer() };
        inner.record(record);
        Ok(Replayer { inner: Shared::deep(inner, max_depth) })
    }

    /// The events handed to the reducer since the last call (`record=True`), as a JSON
    /// array.
    fn take_delivered<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.with(py, |r| Ok(json_list(py, &r.take_delivered())))
    }

    /// Apply one event: `(messages_changed, state_changed, message_index, interrupts_changed)`.
    fn push<'py>(&self, py: Python<'py>, event: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        let r = self.with(py, |r| Self::push_one(r, self.inner.max_depth(), py, event))?;
        r.map_err(|e| stream_error(py, &e)).and_then(|c| change_tuple(py, &c))
    }

    /// Apply every event of `events`; raises at the first error (events before it stay
    /// applied).
    fn push_many(&self, py: Python<'_>, events: &Bound<'_, PyAny>) -> PyResult<()> {
        // A list or a tuple runs no Python code to give its next event: one turn for all.
        if events.is_exact_instance_of::<PyList>() || events.is_exact_instance_of::<PyTuple>() {
            return self.with(py, |r| {
                for e in events.try_iter()? {
                    Self::push_one(r, self.inner.max_depth(), py, &e?)?.map_err(|e| stream_error(py, &e))?;
                }
                Ok(())
            });
        }
        // Else one turn per event: another thread's calls may come between two events (the
        // iterator may be a generator that releases the GIL).
        for e in events.try_iter()? {
            let e = e?;
            self.with(py, |r| Self::push_one(r, self.inner.max_depth(), py, &e))?.map_err(|e| stream_error(py, &e))?;
        }
        Ok(())
    }

    /// The messages, a list of plain Python values.
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = self.with(py, |r| r.applier().messages().map(|m| message_value(py, m)).collect::<PyResult<Vec<_>>>())?;
        PyList::new(py, list)
    }

    /// The message at `index` as plain Python values (None past the end).
    fn message<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with(py, |r| r.applier().message(index).map(|m| message_value(py, m)).transpose())
    }

    fn message_count(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |r| Ok(r.applier().message_count()))
    }

    /// The tool call `id`: `(message position, the message's id or None,
    /// the call, as plain Python values)`, or None when no message carries it.
    #[pyo3(signature = (id, /))]
    fn tool_call<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.with(py, |r| {
            let Some((position, message, call)) = r.tool_call(id) else { return Ok(None) };
            let message_id = message.get("id").map(|v| result_value(py, v)).transpose()?;
            (position, message_id, result_value(py, call)?).into_pyobject(py).map(Some)
        })
    }

    /// The state: a copy, or (`shared=True`) the document itself, which it never writes
    /// into again (later patches copy what they change).
    #[pyo3(signature = (*, shared = false))]
    fn state<'py>(&self, py: Python<'py>, shared: bool) -> PyResult<Bound<'py, PyAny>> {
        self.with(py, |r| r.state_mut().value(py, shared))
    }

    /// The pending interrupts, a list of plain Python values.
    fn pending_interrupts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = self.with(py, |r| r.applier().pending_interrupts().iter().map(|v| result_value(py, v)).collect::<PyResult<Vec<_>>>())?;
        PyList::new(py, list)
    }

    /// Warnings so far as `(index, message)`, drained.
    fn take_warnings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let warnings = self.with(py, |r| Ok(r.take_warnings()))?;
        warnings_list(py, &warnings)
    }
}

/// Replays of at least this many events free their final values on a thread of their
/// own (`pipeline::drop_aside`): about the pipeline's 1 MB of log.
const DROP_ASIDE_MIN: usize = 10_000;

/// A finished whole-log replay, its values handed to Python as Python values (built
/// straight from the engine's values: no JSON text between them).
struct Written {
    messages: Vec<core::Message>,
    /// The state as the replay kept it: the core's tree (built from snapshot texts, no
    /// `serde_json::Value` between them), walked into Python values once at the end.
    state: Tree,
    interrupts: Vec<Value>,
    /// Events replayed: a large replay's values are freed on a thread of their own.
    events: usize,
    warnings: Vec<Warning>,
    error: Option<StreamError>,
    /// The log could not be opened or read on: raised as the log readers raise it.
    log_error: Option<core::LogStop>,
    /// The log's name in such an error (a path).
    source: Option<String>,
}

impl Written {
    fn of(r: core::Replay<Tree>) -> Written {
        Written {
            messages: r.messages,
            state: r.state,
            interrupts: r.pending_interrupts,
            events: r.events,
            warnings: r.warnings,
            error: r.error,
            log_error: r.log_error,
            source: None,
        }
    }

    /// `(messages, state, pending_interrupts, warnings, error)`: the messages and the
    /// interrupts as lists of plain Python values, the state as one, `(index, message)`
    /// pairs, and the exception that stopped it (or None). The engine's values are then
    /// freed with the GIL released: `aside`, a large replay's on a thread of their own (a
    /// single log's call; `replay_log_files` keeps to the caller's `threads`).
    /// `typed`: the messages as the `Message` Structs when they can all be built so
    /// (`typed::typed_messages`), else as plain values.
    fn tuple<'py>(&mut self, py: Python<'py>, aside: bool, typed: bool) -> PyResult<Bound<'py, PyTuple>> {
        let error = match (&self.log_error, &self.error) {
            (Some(core::LogStop::Open(e)), _) => {
                let message = format!("cannot open {}: {e}", self.source.as_deref().unwrap_or("the log"));
                Some(match e.kind() {
                    std::io::ErrorKind::NotFound => pyo3::exceptions::PyFileNotFoundError::new_err(message),
                    _ => pyo3::exceptions::PyOSError::new_err(message),
                })
            }
            (Some(core::LogStop::Read(e)), _) => {
                Some(crate::arrow::issue_to_py(py, &agui_arrow::Issue::from_log_error(self.source.clone(), e.clone())))
            }
            (None, e) => e.as_ref().map(|e| stream_error(py, e)),
        }
        .map(|e| e.into_value(py));
        let messages = std::mem::take(&mut self.messages);
        let interrupts = Value::Array(std::mem::take(&mut self.interrupts));
        let state = std::mem::take(&mut self.state);
        let messages_py = match typed.then(|| crate::typed::typed_messages(py, &messages)).flatten() {
            Some(list) => list.into_any(),
            None => messages_value(py, &messages)?,
        };
        let tuple = (
            messages_py,
            crate::patch::stream_tree(py, &state, MAX_DEPTH_CAP)?,
            result_value(py, &interrupts)?,
            warnings_list(py, &self.warnings)?,
            error,
        )
            .into_pyobject(py);
        let values = (messages, state, interrupts);
        if aside && self.events >= DROP_ASIDE_MIN {
            agui_core::pipeline::drop_aside(values);
        } else {
            py.detach(move || drop(values));
        }
        tuple
    }
}

/// replay_log(data, messages=None, state=None, *, format="auto", verify=False,
/// max_depth=512, typed=True): replay a log (SSE, protobuf or JSON Lines, gzip or not)
/// given as bytes, with the GIL released. `typed`: the messages as Structs when they can
/// be built so (else, and with `typed=False`, as plain values).
#[pyfunction]
#[pyo3(signature = (data, messages=None, state=None, *, format="auto", verify=false, schema=true, max_protocol_version=None, protocol_version=None, max_depth=DEFAULT_MAX_DEPTH, max_patch_bytes=None, typed=true))]
#[allow(clippy::too_many_arguments)]
fn replay_log<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    messages: Option<&Bound<'py, PyAny>>,
    state: Option<&Bound<'py, PyAny>>,
    format: &str,
    verify: bool,
    schema: bool,
    max_protocol_version: Option<&str>,
    protocol_version: Option<&str>,
    #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
    max_patch_bytes: Option<&Bound<'py, PyAny>>,
    typed: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let format = crate::arrow::format_arg(format)?;
    let max_depth = check_max_depth(max_depth)?;
    let max_patch_bytes = crate::patch::max_patch_bytes(max_patch_bytes)?;
    let (era, protocol_version) = era_options(max_protocol_version, protocol_version)?;
    agui_core::limits::deep(max_depth, || {
        let (messages, state) = initial(py, messages, state, max_depth)?;
        let log = data.as_bytes();
        let options = ReplayOptions { verify, schema, era, protocol_version, max_depth, max_patch_bytes, ..ReplayOptions::default() };
        let mut w = py.detach(|| Written::of(core::replay_log_bytes(log, format, messages, Tree::from(state), options)));
        w.source = Some("<bytes>".to_string()); // (as the log readers name bytes)
        w.tuple(py, true, typed)
    })
}

/// replay_log_files(paths, *, format="auto", verify=False, threads=0, max_depth=512):
/// read and replay log files on Rust threads (0: the machine's parallelism; a log a
/// thread) in constant memory each, GIL released; one tuple per path.
#[pyfunction]
#[pyo3(signature = (paths, *, format="auto", verify=false, schema=true, max_protocol_version=None, protocol_version=None, threads=0, max_depth=DEFAULT_MAX_DEPTH, max_patch_bytes=None, typed=true))]
#[allow(clippy::too_many_arguments)]
fn replay_log_files<'py>(
    py: Python<'py>,
    paths: Vec<std::path::PathBuf>,
    format: &str,
    verify: bool,
    schema: bool,
    max_protocol_version: Option<&str>,
    protocol_version: Option<&str>,
    #[pyo3(from_py_with = crate::args::threads_or_zero)] threads: usize,
    #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
    max_patch_bytes: Option<&Bound<'py, PyAny>>,
    typed: bool,
) -> PyResult<Bound<'py, PyList>> {
    let format = crate::arrow::format_arg(format)?;
    let max_patch_bytes = crate::patch::max_patch_bytes(max_patch_bytes)?;
    let (era, protocol_version) = era_options(max_protocol_version, protocol_version)?;
    let options = ReplayOptions {
        verify,
        schema,
        era,
        protocol_version,
        max_depth: check_max_depth(max_depth)?,
        max_patch_bytes,
        ..ReplayOptions::default()
    };
    let max_depth = options.max_depth;
    // Each log written out to Python as soon as it is done, while the others are still
    // replayed (the GIL taken for that only).
    let mut out: Vec<Option<PyResult<Py<PyTuple>>>> = paths.iter().map(|_| None).collect();
    agui_core::limits::deep(max_depth, || {
        py.detach(|| {
            core::replay_log_files_each(&paths, format, options, threads, Written::of, |i, mut w: Written| {
                w.source = Some(paths[i].display().to_string());
                out[i] = Some(Python::attach(|py| w.tuple(py, false, typed).map(Bound::unbind)));
            })
        })
    });
    PyList::new(py, out.into_iter().map(|t| t.expect("every log replayed")).collect::<PyResult<Vec<_>>>()?)
}

// ---------------------------------------------------------------------------------------
// An HTTP client's run
// ---------------------------------------------------------------------------------------

/// prepare_run_input(input, *, max_protocol_version=None, protocol_version=None,
/// max_depth=512) -> (body, messages, warnings): the run input (an object or its JSON
/// text) made ready to send to a peer of that era (`agui_core::stream::client::
/// prepare_run_input`): the JSON text to post, the messages the run starts from on this
/// side (a JSON array) and the warnings about the input. A malformed input raises
/// `EventValidationError` naming the field.
#[pyfunction]
#[pyo3(signature = (input, /, *, max_protocol_version=None, protocol_version=None, max_depth=DEFAULT_MAX_DEPTH))]
fn prepare_run_input<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    max_protocol_version: Option<&str>,
    protocol_version: Option<&str>,
    #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let max_depth = check_max_depth(max_depth)?;
    let (_, ours) = era_options(max_protocol_version, protocol_version)?;
    agui_core::limits::deep(max_depth, || prepare_within(py, input, max_protocol_version, ours, max_depth))
}

fn prepare_within<'py>(
    py: Python<'py>,
    input: &Bound<'py, PyAny>,
    max_protocol_version: Option<&str>,
    ours: Option<ProtocolVersion>,
    max_depth: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let value = with_json(py, input, max_depth, |b| agui_core::stream::parse_json_limited(b, max_depth))?
        .map_err(|Unwritable(e)| e)
        .and_then(|r| r)
        .map_err(|e| make_error(py, "InvalidJsonError", format!("run input: {e}"), None))?;
    let prepared = run::prepare_run_input(value, max_protocol_version, ours).map_err(|e| match e.stage {
        Stage::Schema => {
            let kwargs = PyDict::new(py);
            let _ = kwargs.set_item("field", e.field.as_deref());
            make_error(py, "EventValidationError", e.message.clone(), Some(&kwargs))
        }
        _ => PyValueError::new_err(e.message.clone()),
    })?;
    (json_bytes(py, &prepared.body), json_list(py, &prepared.messages), warnings_list(py, &prepared.warnings)?).into_pyobject(py)
}

/// One HTTP response of a run read chunk by chunk (`agui_core::stream::client::RunReader`):
/// with `pipeline=True`, each frame's event through the client pipeline into messages
/// and state (as `Replayer`); with `pipeline=False`, the frames' JSON kept for the
/// caller (`take_frames`). `feed(chunk)` / `finish()` return `(delivered, error)`: the
/// events handed to the reducer (a JSON array, `record=True`; else None) and the
/// exception that ended the stream (None while it goes on); after an error the stream
/// is over.
#[pyclass(module = "agui_fast._native", name = "RunReader")]
pub struct RunReader {
    // A Mutex only to make the class Sync (as `Replayer`); `None` only while it is freed.
    inner: std::sync::Mutex<Option<run::RunReader<Doc>>>,
    record: bool,
    max_depth: usize,
}

impl Drop for RunReader {
    /// The state is freed on a stack with room for its nesting.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        agui_core::limits::deep(self.max_depth, || drop(inner));
    }
}

impl RunReader {
    fn get(&mut self) -> &mut run::RunReader<Doc> {
        let inner = self.inner.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.as_mut().expect("the reader is only taken when the object is freed")
    }

    fn replayer(&mut self) -> PyResult<&mut core::Replayer<Doc>> {
        self.get().replayer().ok_or_else(|| PyTypeError::new_err("a RunReader without a pipeline keeps no messages or state"))
    }

    fn outcome<'py>(&mut self, py: Python<'py>, r: Result<(), RunError>) -> PyResult<Bound<'py, PyTuple>> {
        let record = self.record;
        let delivered = match self.get().replayer() {
            Some(rp) if record => Some(json_list(py, &rp.take_delivered())),
            _ => None,
        };
        let error = r.err().map(|e| run_error(py, &e).into_value(py));
        (delivered, error).into_pyobject(py)
    }
}

/// A [`RunError`] as the project's exception.
fn run_error(py: Python<'_>, e: &RunError) -> PyErr {
    match e {
        RunError::Stream { error, offset } => stream_error_at(py, error, Some(*offset)),
        RunError::Sse(e) => crate::errors::error_at(py, "BufferLimitError", e.message.clone(), Some(e.frame_index), Some(e.offset)),
        RunError::Proto(e) => crate::proto::to_py(py, e),
        RunError::Incomplete(m) => make_error(py, "IncompleteRunError", m.clone(), None),
    }
}

#[pymethods]
impl RunReader {
    #[new]
    #[pyo3(signature = (wire, messages=None, state=None, *, pipeline=true, verify=true, schema=true, max_protocol_version=None, protocol_version=None, record=false, max_frame_size=agui_core::sse::DEFAULT_MAX_BUFFER, max_depth=DEFAULT_MAX_DEPTH, max_patch_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        wire: &str,
        messages: Option<&Bound<'_, PyAny>>,
        state: Option<&Bound<'_, PyAny>>,
        pipeline: bool,
        verify: bool,
        schema: bool,
        max_protocol_version: Option<&str>,
        protocol_version: Option<&str>,
        record: bool,
        #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
        #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
        max_patch_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let max_depth = check_max_depth(max_depth)?;
        let max_patch_bytes = crate::patch::max_patch_bytes(max_patch_bytes)?;
        let wire = match wire {
            "sse" => Wire::Sse,
            "protobuf" => Wire::Protobuf,
            other => return Err(PyValueError::new_err(format!("wire must be 'sse' or 'protobuf', not {other:?}"))),
        };
        let replayer = if pipeline {
            let (era, protocol_version) = era_options(max_protocol_version, protocol_version)?;
            let (messages, state) = agui_core::limits::deep(max_depth, || start(py, messages, state, max_depth, max_patch_bytes))?;
            let options = ReplayOptions { verify, schema, era, protocol_version, max_depth, max_patch_bytes, ..ReplayOptions::default() };
            let mut r = core::Replayer::new(messages, state, options);
            r.record(record);
            Some(r)
        } else {
            None
        };
        let inner = run::RunReader::new(wire, max_frame_size, max_depth, replayer);
        Ok(RunReader { inner: std::sync::Mutex::new(Some(inner)), record, max_depth })
    }

    fn feed<'py>(&mut self, py: Python<'py>, chunk: &[u8]) -> PyResult<Bound<'py, PyTuple>> {
        agui_core::limits::deep(self.max_depth, || {
            let r = self.get().feed(chunk);
            self.outcome(py, r)
        })
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        agui_core::limits::deep(self.max_depth, || {
            let r = self.get().finish();
            self.outcome(py, r)
        })
    }

    /// The frames read since the last call (`pipeline=False`): each event's JSON text.
    fn take_frames<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let frames = self.get().take_frames();
        PyList::new(py, frames.iter().map(|f| PyBytes::new(py, f)))
    }

    /// Warnings so far as tuples (see `Replayer.take_warnings`), drained.
    fn take_warnings<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ws = self.get().take_warnings();
        warnings_list(py, &ws)
    }

    fn messages<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &core::json_items(self.replayer()?.applier().messages())))
    }

    #[pyo3(signature = (*, shared = false))]
    fn state<'py>(&mut self, py: Python<'py>, shared: bool) -> PyResult<Bound<'py, PyAny>> {
        let max_depth = self.max_depth;
        agui_core::limits::deep(max_depth, || self.replayer()?.state_mut().value(py, shared))
    }

    fn pending_interrupts<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(json_list(py, self.replayer()?.applier().pending_interrupts()))
    }

    /// `(result, run_error)`: the last successful `RUN_FINISHED`'s result and the last
    /// `RUN_ERROR` event, as JSON text (None when there was none).
    fn run_outcome<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let o = self.replayer()?.outcome().clone();
        let text = |v: &Option<Value>| v.as_ref().map(|v| json_bytes(py, v));
        (text(&o.result), text(&o.error)).into_pyobject(py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RunReader>()?;
    m.add_function(wrap_pyfunction!(prepare_run_input, m)?)?;
    m.add_class::<ChunkExpander>()?;
    m.add_class::<EventVerifier>()?;
    m.add_class::<Replayer>()?;
    m.add_function(wrap_pyfunction!(expand_chunks, m)?)?;
    m.add_function(wrap_pyfunction!(verify_events, m)?)?;
    m.add_function(wrap_pyfunction!(compact_events, m)?)?;
    m.add_function(wrap_pyfunction!(replay_log, m)?)?;
    m.add_function(wrap_pyfunction!(replay_log_files, m)?)?;
    m.add_function(wrap_pyfunction!(set_surrogate_writer, m)?)?;
    m.add_function(wrap_pyfunction!(set_state_delta_types, m)?)?;
    Ok(())
}
