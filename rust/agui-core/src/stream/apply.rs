//! The reducer: events applied to the conversation's messages and the agent's state, as
//! the reference `defaultApplyEvents` does with no subscribers. Each event reports a
//! [`Change`] (what the reference would emit as a mutation) and the warning it prints.
//!
//! Messages are JSON objects in the reference's order, with the lookups the reducer makes
//! indexed (`super::messages`: the reference searches linearly, fine for a live chat,
//! quadratic for a long log). A message the reducer builds from events is held as its
//! members ([`Message::Built`]: no map, no key strings) while it is only appended to; any
//! other change makes it its JSON value first, so both forms give the same value.

use super::event::{EventType, Members, Plain};
use super::js::{self, strict_eq};
use super::messages::{Fields, Key, Member, Message, Messages};
use super::{patch_json, patch_ops, PatchLimits, Stage, StreamError};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;

/// What one event changed. `messages` / `state`: the reference emitted a mutation
/// carrying the messages / the state. `message`: the position of the one message it
/// touched, when there is one. `interrupts`: a `RUN_FINISHED` replaced the pending
/// interrupts (see [`EventApplier::pending_interrupts`]; not a mutation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    pub messages: bool,
    pub state: bool,
    pub message: Option<usize>,
    pub interrupts: bool,
    pub warning: Option<String>,
}

impl Change {
    fn messages(at: Option<usize>) -> Change {
        Change { messages: true, message: at, ..Change::default() }
    }
    fn warn(w: String) -> Change {
        Change { warning: Some(w), ..Change::default() }
    }
    /// No mutation (messages and state unchanged).
    pub fn is_empty(&self) -> bool {
        !self.messages && !self.state
    }
}

fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

/// The room a run of plain deltas makes in its target string when it takes it: the
/// string then grows a few times less (a token stream's message grows by hundreds).
const HELD_ROOM: usize = 64;

/// The string a cached [`Target`] appends to (`content`, or the call's
/// `function.arguments`) when it is still one; `None`: take the general route.
fn target_string<'m>(messages: &'m mut Messages, t: &mut Target) -> Option<&'m mut String> {
    if messages.built_mut(t.message).is_some() {
        let f = messages.built_mut(t.message)?;
        return if t.args { call_arguments(f, t.call) } else { f.string_mut("content") };
    }
    let [a, b, c] = &mut t.places;
    let m = obj(messages.get_mut(t.message))?;
    let s = if t.args {
        let tc = obj(member_at(m, "toolCalls", a)?.get_mut(t.call)?)?;
        member_at(obj(member_at(tc, "function", b)?)?, "arguments", c)?
    } else {
        member_at(m, "content", a)?
    };
    match s {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// The arguments string of call `call` of a built message, when it is one.
fn call_arguments(m: &mut Fields, call: usize) -> Option<&mut String> {
    let Some(Member::Objects(calls)) = m.get_mut("toolCalls") else { return None };
    match calls.get_mut(call)?.get_mut("function")? {
        Member::Object(f) => f.string_mut("arguments"),
        _ => None,
    }
}

/// The value of `key` in `m`: at `place` (its place among `m`'s entries, as found
/// before) when it is still there, else looked up (and its place kept when the map is
/// small enough to find it by walking: no hashing either way).
fn member_at<'m>(m: &'m mut Map<String, Value>, key: &str, place: &mut Option<usize>) -> Option<&'m mut Value> {
    const WALK: usize = 8;
    let at = match *place {
        Some(at) if m.iter().nth(at).is_some_and(|(k, _)| k == key) => at,
        _ if m.len() <= WALK => m.iter().position(|(k, _)| k == key)?,
        _ => {
            *place = None;
            return m.get_mut(key);
        }
    };
    *place = Some(at);
    m.iter_mut().nth(at).map(|(_, v)| v)
}

/// `applyEventMetadata`: merge the event's metadata into the target; whether it did.
fn apply_metadata<E: Members + ?Sized>(target: &mut Map<String, Value>, event: &E) -> bool {
    let Some(incoming) = event.get("metadata") else { return false };
    let merged = js::merge_metadata(target.get("metadata"), Some(incoming));
    if let Some(m) = merged {
        target.insert("metadata".into(), m);
    }
    true
}

/// Set or remove (`undefined`) a member.
fn set_or_remove(target: &mut Map<String, Value>, key: &str, v: Option<&Value>) {
    match v {
        Some(v) => {
            target.insert(key.to_string(), v.clone());
        }
        None => {
            target.shift_remove(key);
        }
    }
}

/// A copy of a message with a `null` `subagentRunId` removed.
fn without_null_tag(m: &Value) -> Value {
    let mut m = m.clone();
    if let Value::Object(o) = &mut m {
        if matches!(o.get("subagentRunId"), Some(Value::Null)) {
            o.shift_remove("subagentRunId");
        }
    }
    m
}

fn type_error(msg: impl Into<String>) -> StreamError {
    StreamError::new(Stage::Apply, msg)
}

/// The agent's state as the reducer holds it: a JSON value, or a binding's own document
/// (the Python binding keeps Python objects, so that neither the state nor the deltas
/// given as objects are converted), patched by the same engine and rules.
pub trait State: std::fmt::Debug {
    /// `STATE_SNAPSHOT`: the state becomes (a copy of) `snapshot`. An error is the
    /// reducer's (the event is not applied).
    fn set(&mut self, snapshot: &Value) -> Result<(), String>;
    /// [`set`](Self::set) with a snapshot the caller gives away (a replay's events are
    /// its own): a JSON state takes it without a copy.
    fn set_owned(&mut self, snapshot: Value) -> Result<(), String> {
        self.set(&snapshot)
    }
    /// [`set`](Self::set) with the snapshot given as JSON text nesting at most `max_depth`
    /// levels, read as an event's parse reads it; the text holds no character of the kept
    /// range (the reader leaves those to the event's parse), so no string of it holds a
    /// kept lone surrogate. False (a text that is not one JSON value included: the reader
    /// may hand over an event's text to its end unscanned): the state is unchanged and the
    /// caller reads the event as an object (which decides the error of a text this read
    /// does not take). The default
    /// parses the text and [sets](Self::set_owned) the value.
    fn set_text(&mut self, text: &str, max_depth: usize) -> bool {
        super::event::nested_text_value(text, max_depth).is_some_and(|v| self.set_owned(v).is_ok())
    }
    /// `STATE_DELTA`: apply `ops` atomically in the fast-json-patch dialect, as the
    /// reference does (on error the state is unchanged), within `limits` (spending its
    /// copy allowance).
    fn patch(&mut self, ops: Vec<crate::patch::Operation>, limits: &mut PatchLimits) -> Result<(), crate::patch::PatchError>;
}

impl State for Value {
    fn set(&mut self, snapshot: &Value) -> Result<(), String> {
        *self = snapshot.clone();
        Ok(())
    }
    fn set_owned(&mut self, snapshot: Value) -> Result<(), String> {
        *self = snapshot;
        Ok(())
    }
    fn patch(&mut self, ops: Vec<crate::patch::Operation>, limits: &mut PatchLimits) -> Result<(), crate::patch::PatchError> {
        patch_ops(self, ops, limits)
    }
}

/// The core's own JSON document ([`crate::patch::tree::Tree`]), built straight from a
/// snapshot's text: what the `Value` state holds, in a cheaper form (the same patches,
/// errors and member order; numbers in the forms `sink::json_value` gives).
impl State for crate::patch::tree::Tree {
    fn set(&mut self, snapshot: &Value) -> Result<(), String> {
        *self = snapshot.into();
        Ok(())
    }
    fn set_owned(&mut self, snapshot: Value) -> Result<(), String> {
        *self = snapshot.into();
        Ok(())
    }
    /// Built by `sink::json_text` from the text; any error (or an over-long integer)
    /// declines, for the event's parse to decide.
    fn set_text(&mut self, text: &str, max_depth: usize) -> bool {
        match crate::patch::tree::Tree::from_text(text, max_depth) {
            Some(t) => {
                *self = t;
                true
            }
            None => false,
        }
    }
    fn patch(&mut self, ops: Vec<crate::patch::Operation>, limits: &mut PatchLimits) -> Result<(), crate::patch::PatchError> {
        patch_ops(self, ops, limits)
    }
}

/// Incremental reducer over messages and state.
#[derive(Debug)]
pub struct EventApplier<S = Value> {
    messages: Messages,
    state: S,
    pending_interrupts: Vec<Value>,
    index: usize,
    /// The limits of state and activity patches (depth, memory, the copy allowance).
    limits: PatchLimits,
    /// Where the last plain delta went ([`apply_delta`](Self::apply_delta)): a token
    /// stream sends hundreds in a row to one message, which then skip the id lookup and
    /// the role check, and append to the string held aside here rather than looked up in
    /// the message each time. Any other event puts the string back and clears it (only
    /// plain deltas leave the messages' order, roles and tool calls as they were).
    last: Option<Target>,
}

/// The target of a run of plain deltas: the id as the event wrote it, the kind's
/// lookup (text and reasoning content by message id, arguments by tool call id), the
/// message (its key and position) and, for arguments, the call's place in its `toolCalls`.
#[derive(Debug)]
struct Target {
    id: String,
    args: bool,
    message: Key,
    position: usize,
    call: usize,
    /// The target string, taken out of its message while the run of deltas lasts (its
    /// place holds an empty string until [`EventApplier::settle`] puts it back).
    held: Option<String>,
    /// Where the target string is among the entries of the maps that lead to it
    /// (`content`; or `toolCalls`, `function`, `arguments`), found by the first lookup:
    /// the next ones (taking the string, putting it back) go there without hashing.
    places: [Option<usize>; 3],
}

impl Default for EventApplier {
    fn default() -> Self {
        EventApplier::new(Vec::new(), Value::Object(Map::new()))
    }
}

impl<S: State> EventApplier<S> {
    /// Start from these messages and state (the agent's, before the first event).
    pub fn new(messages: Vec<Value>, state: S) -> Self {
        EventApplier {
            messages: Messages::new(messages),
            state,
            pending_interrupts: Vec::new(),
            index: 0,
            limits: PatchLimits::default(),
            last: None,
        }
    }

    /// The depth limit of state and activity patches (the one the events were parsed with).
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.limits.max_depth = max_depth;
        self
    }

    /// The most one state or activity patch may build, and what the copies of all of them
    /// may copy together (`limits::DEFAULT_MAX_PATCH_BYTES`).
    pub fn with_max_patch_bytes(mut self, max_bytes: usize) -> Self {
        self.limits = PatchLimits { max_bytes, copies: max_bytes, ..self.limits };
        self
    }
    /// Put the text of a run of plain deltas back into its message (see
    /// [`apply_delta`](Self::apply_delta)): the messages then read as the events made them.
    pub fn settle(&mut self) {
        if let Some(mut t) = self.last.take() {
            if let Some(text) = t.held.take() {
                if let Some(s) = target_string(&mut self.messages, &mut t) {
                    *s = text;
                }
            }
        }
    }
    /// The messages, in order (after [`settle`](Self::settle) when plain deltas were applied).
    pub fn messages(&self) -> impl ExactSizeIterator<Item = &Message> + '_ {
        debug_assert!(self.settled());
        self.messages.iter()
    }
    /// The message at `position` (as [`Change::message`] gives it; after
    /// [`settle`](Self::settle) when plain deltas were applied).
    pub fn message(&self, position: usize) -> Option<&Message> {
        debug_assert!(self.settled());
        self.messages.at(position)
    }
    /// The tool call with id `id` as the reducer finds it (the first message carrying it,
    /// in list order): the message's position, the message and the call, in logarithmic
    /// time whatever the message holds (after [`settle`](Self::settle) when plain deltas
    /// were applied). A reader of one call need not read its message's other calls.
    pub fn tool_call(&mut self, id: &str) -> Option<(usize, &Value, &Value)> {
        debug_assert!(self.settled());
        let (k, call) = self.messages.find_tool_str(id)?;
        let position = self.messages.position(k);
        let m = &*self.messages.get_mut(k);
        Some((position, m, m.get("toolCalls")?.get(call)?))
    }
    fn settled(&self) -> bool {
        self.last.as_ref().is_none_or(|t| t.held.is_none())
    }
    pub fn message_count(&self) -> usize {
        self.messages.len()
    }
    pub fn state(&self) -> &S {
        &self.state
    }
    /// The state, for a binding's own reads (the reducer alone changes what it holds).
    pub fn state_mut(&mut self) -> &mut S {
        &mut self.state
    }
    /// The interrupts of the last `RUN_FINISHED` with an interrupt outcome (cleared by any
    /// other `RUN_FINISHED`).
    pub fn pending_interrupts(&self) -> &[Value] {
        &self.pending_interrupts
    }
    /// `(messages, state, pending interrupts)`.
    pub fn into_parts(mut self) -> (Vec<Message>, S, Vec<Value>) {
        self.settle();
        (self.messages.take(), self.state, self.pending_interrupts)
    }

    /// A change to message `k` (reported at its position).
    fn changed(&self, k: Key) -> Change {
        Change::messages(Some(self.messages.position(k)))
    }

    /// Apply one event. An error is what the reference throws (chunk events, structures
    /// it cannot walk); messages and state are then as before the event.
    pub fn apply(&mut self, event: &Value) -> Result<Change, StreamError> {
        self.settle();
        let index = self.index;
        self.index += 1;
        self.apply_inner(event).map_err(|e| e.at(index, event))
    }

    /// [`apply`](Self::apply) of an event the caller gives away: a `STATE_DELTA`'s
    /// values move into the state instead of being copied (the hot path of a state
    /// stream).
    pub fn apply_owned(&mut self, mut event: Value) -> Result<Change, StreamError> {
        match EventType::of(&event) {
            EventType::StateDelta => {
                self.index += 1;
                Ok(self.state_delta(event.get_mut("delta").map(Value::take).unwrap_or(Value::Null)))
            }
            // A snapshot (a large state, a single event) moves in rather than being copied.
            EventType::StateSnapshot if event.get("snapshot").is_some() => {
                let index = self.index;
                self.index += 1;
                let snapshot = event.get_mut("snapshot").map(Value::take).unwrap_or(Value::Null);
                self.snapshot(Cow::Owned(snapshot)).map_err(|e| e.at(index, &event))
            }
            _ => self.apply(&event),
        }
    }

    /// A `STATE_DELTA` in its plain form, its operations read without an event object
    /// (`Replayer::push_json`): applied as [`apply`](Self::apply) applies the event.
    pub fn apply_state_ops(&mut self, ops: Vec<crate::patch::Operation>) -> Change {
        self.index += 1;
        self.state_patch(Ok(ops))
    }

    /// A `STATE_DELTA` (or `STATE_SNAPSHOT`) the caller applies to the state itself (a
    /// binding with state events in its own form): `apply` returns true when it applied
    /// the event, false when it left
    /// the state unchanged and the event to [`apply`](Self::apply) (which then warns as
    /// the reference does). `None`: not applied.
    pub fn apply_state_with(&mut self, apply: impl FnOnce(&mut S, &mut PatchLimits) -> bool) -> Option<Change> {
        if !apply(&mut self.state, &mut self.limits) {
            return None;
        }
        self.index += 1;
        Some(Change { state: true, ..Change::default() })
    }

    fn state_delta(&mut self, delta: Value) -> Change {
        self.state_patch(crate::patch::parse_patch_owned(delta))
    }

    /// `STATE_SNAPSHOT`: the state becomes `snapshot` (moved in when the caller gives it away).
    fn snapshot(&mut self, snapshot: Cow<'_, Value>) -> Result<Change, StreamError> {
        match snapshot {
            Cow::Borrowed(s) => self.state.set(s),
            Cow::Owned(s) => self.state.set_owned(s),
        }
        .map_err(type_error)?;
        Ok(Change { state: true, ..Change::default() })
    }

    /// A failing patch leaves the state as it was and warns, as the reference does.
    fn state_patch(&mut self, ops: Result<Vec<crate::patch::Operation>, crate::patch::PatchError>) -> Change {
        match ops.and_then(|ops| self.state.patch(ops, &mut self.limits)) {
            Ok(()) => Change { state: true, ..Change::default() },
            Err(e) => Change::warn(format!("Failed to apply state patch: {e}")),
        }
    }

    /// A plain `STATE_SNAPSHOT` whose snapshot is JSON text ([`Plain::snapshot_text`]):
    /// the state built from the text. `None`: the state declined the text (nothing
    /// changed; the event is to be read as an object).
    pub fn apply_snapshot_text(&mut self, text: &str, max_depth: usize) -> Option<Change> {
        if !self.state.set_text(text, max_depth) {
            return None;
        }
        self.settle();
        self.index += 1;
        Some(Change { state: true, ..Change::default() })
    }

    /// A plain event ([`Plain`]): applied as [`apply`](Self::apply) applies its event object.
    /// A snapshot moves into the state.
    pub fn apply_plain(&mut self, mut event: Plain<'_>) -> Result<Change, StreamError> {
        self.settle();
        let index = self.index;
        self.index += 1;
        let ty = event.kind();
        let applied = match (ty, event.take("snapshot")) {
            (EventType::StateSnapshot, Some(snapshot)) => Some(self.snapshot(Cow::Owned(snapshot))),
            _ => self.apply_common(ty, &event),
        };
        applied.unwrap_or_else(|| Err(type_error(format!("{} has no plain form", ty.name())))).map_err(|mut e| {
            e.index = index;
            e.event_type = ty.name().to_string();
            e
        })
    }

    /// The events read from an event object or as a [`Plain`] one (`None`: another type).
    fn apply_common<E: Members + ?Sized>(&mut self, ty: EventType, event: &E) -> Option<Result<Change, StreamError>> {
        use EventType as T;
        Some(Ok(match ty {
            T::TextMessageStart | T::ReasoningMessageStart => self.message_start(ty, event),
            T::TextMessageEnd | T::ReasoningMessageEnd => {
                let Some(i) = self.text_target(event) else {
                    return Some(Ok(self.missing_or_activity(ty, event)));
                };
                // (only metadata changes the message: a built one keeps its form without)
                if event.get("metadata").is_none() {
                    return Some(Ok(Change::default()));
                }
                let m = obj(self.messages.get_mut(i)).expect("indexed messages are objects");
                if apply_metadata(m, event) {
                    self.changed(i)
                } else {
                    Change::default()
                }
            }
            T::ToolCallStart => return Some(self.tool_call_start(event)),
            T::ToolCallEnd => {
                let id = event.get("toolCallId");
                let found = self.messages.find_tool(id, false);
                return Some(self.append_args(ty, found, || js::show(id), None, Some(event)));
            }
            T::ToolCallResult => self.tool_call_result(event),
            T::RunStarted => return Some(self.run_started(event)),
            T::RunFinished => return Some(self.run_finished(event)),
            T::ReasoningStart | T::ReasoningEnd | T::StepStarted | T::StepFinished => Change::default(),
            _ => return None,
        }))
    }

    fn run_started<E: Members + ?Sized>(&mut self, event: &E) -> Result<Change, StreamError> {
        let Some(input_messages) = event.get("input").and_then(|i| i.get("messages")) else {
            return Ok(Change::default());
        };
        if !js::truthy(Some(input_messages)) {
            return Ok(Change::default());
        }
        let Value::Array(list) = input_messages else {
            return Err(type_error("RUN_STARTED input.messages is not iterable"));
        };
        if list.iter().any(|m| m.is_null()) {
            return Err(type_error("RUN_STARTED input.messages holds a null message"));
        }
        for raw in list {
            if self.messages.find(raw.get("id")).is_none() {
                self.messages.push(without_null_tag(raw).into());
            }
        }
        Ok(Change::messages(None))
    }

    fn run_finished<E: Members + ?Sized>(&mut self, event: &E) -> Result<Change, StreamError> {
        let outcome = event.get("outcome");
        let interrupt = outcome.and_then(|o| o.get("type")).and_then(Value::as_str) == Some("interrupt");
        self.pending_interrupts = if interrupt {
            let Some(Value::Array(list)) = outcome.and_then(|o| o.get("interrupts")) else {
                return Err(type_error("RUN_FINISHED interrupt outcome without an interrupts array"));
            };
            list.iter().map(without_null_tag).collect()
        } else {
            Vec::new()
        };
        Ok(Change { interrupts: true, ..Change::default() })
    }

    fn apply_inner(&mut self, event: &Value) -> Result<Change, StreamError> {
        use EventType as E;
        let ty = EventType::of(event);
        if let Some(r) = self.apply_common(ty, event) {
            return r;
        }
        Ok(match ty {
            E::TextMessageContent | E::ReasoningMessageContent => {
                let id = event.get("messageId");
                let found = self.messages.find(id);
                self.append_content(ty, found, || js::show(id), Delta::Js(event.get("delta")), Some(event))
            }
            E::ToolCallArgs => {
                let id = event.get("toolCallId");
                let found = self.messages.find_tool(id, false);
                self.append_args(ty, found, || js::show(id), Some(Delta::Js(event.get("delta"))), Some(event))?
            }
            E::StateSnapshot => match event.get("snapshot") {
                Some(s) => self.snapshot(Cow::Borrowed(s))?,
                // `state = undefined` is not a mutation the agent takes.
                None => Change::default(),
            },
            E::StateDelta => self.state_delta(event.get("delta").cloned().unwrap_or(Value::Null)),
            E::MessagesSnapshot => self.messages_snapshot(event)?,
            E::ActivitySnapshot => self.activity_snapshot(event),
            E::ActivityDelta => self.activity_delta(event),
            E::TextMessageChunk | E::ToolCallChunk | E::ReasoningMessageChunk => {
                return Err(type_error(format!("{} must be transformed before being applied", ty.name())));
            }
            E::ReasoningEncryptedValue => self.encrypted_value(event),
            _ => Change::default(),
        })
    }

    /// `TEXT_MESSAGE_CONTENT` / `REASONING_MESSAGE_CONTENT` / `TOOL_CALL_ARGS` carrying
    /// only a string id and a string delta (nothing else): the hot events of a stream,
    /// applied without building an event object. `kind` is one of those three types. A run
    /// of deltas to one target appends to its string held aside: [`settle`](Self::settle)
    /// before reading the messages (any other event settles too).
    /// [`apply_delta`](Self::apply_delta) of a delta read as written, when it continues a
    /// run of deltas whose target string is held aside (the same kind and id as the last
    /// delta, from the third on): appended to it as `apply_delta` appends it, its escapes
    /// decoded straight into it. No [`Change`] is made (it would say: this message changed,
    /// no warning). `false`: nothing done (another delta, or one `apply_delta` must take).
    #[inline]
    pub fn append_held(&mut self, d: &super::event::RawDelta<'_>, id: &str) -> bool {
        let Some(held) = self.held_for(d.kind, id.as_bytes()) else {
            return false;
        };
        if !d.append_to(held) {
            return false;
        }
        self.index += 1;
        true
    }

    /// The target string held aside for a run of deltas, when a delta of `kind` for `id`
    /// continues that run (see [`append_held`](Self::append_held)). What the caller
    /// appends to it counts as the delta applied once it calls
    /// [`took_held`](Self::took_held); until then it may cut it back to the length it had.
    #[inline]
    pub fn held_for(&mut self, kind: EventType, id: &[u8]) -> Option<&mut String> {
        let args = kind == EventType::ToolCallArgs;
        self.last.as_mut().filter(|t| t.args == args && crate::copy::same_short(t.id.as_bytes(), id)).and_then(|t| t.held.as_mut())
    }

    /// A delta appended to the [`held_for`](Self::held_for) string, applied.
    #[inline]
    pub fn took_held(&mut self) {
        self.index += 1;
    }

    /// The held string cut back to `len` bytes (a delta appended to it not applied).
    pub fn cut_held(&mut self, len: usize) {
        if let Some(held) = self.last.as_mut().and_then(|t| t.held.as_mut()) {
            held.truncate(len);
        }
    }

    pub fn apply_delta(&mut self, kind: EventType, id: &str, delta: &str) -> Result<Change, StreamError> {
        let index = self.index;
        self.index += 1;
        let args = kind == EventType::ToolCallArgs;
        if let Some(t) = self.last.as_mut().filter(|t| t.args == args && t.id == id) {
            if let Some(held) = &mut t.held {
                js::append(held, delta);
                return Ok(Change::messages(Some(t.position)));
            }
            let position = t.position;
            if let Some(s) = target_string(&mut self.messages, t) {
                // The second delta in a row: hold the string aside for the rest of the run
                // (with room for a few more deltas: it grows by many).
                let mut held = std::mem::take(s);
                held.reserve(HELD_ROOM);
                js::append(&mut held, delta);
                t.held = Some(held);
                return Ok(Change::messages(Some(position)));
            }
        }
        self.settle();
        let show = || id.to_string();
        let r = match kind {
            EventType::TextMessageContent | EventType::ReasoningMessageContent => {
                let found = self.messages.find_str(id);
                let c = self.append_content(kind, found, show, Delta::Str(delta), None::<&Value>);
                if let (Some(message), Some(position), None) = (found, c.message, &c.warning) {
                    self.last = Some(Target { id: id.to_string(), args, message, position, call: 0, held: None, places: [None; 3] });
                }
                Ok(c)
            }
            EventType::ToolCallArgs => {
                let found = self.messages.find_tool_str(id);
                let c = self.append_args(kind, found, show, Some(Delta::Str(delta)), None::<&Value>);
                if let (Ok(Change { message: Some(position), .. }), Some((message, call))) = (&c, found) {
                    self.last = Some(Target { id: id.to_string(), args, message, position: *position, call, held: None, places: [None; 3] });
                }
                c
            }
            other => Err(type_error(format!("apply_delta does not take {}", other.name()))),
        };
        r.map_err(|mut e| {
            e.index = index;
            e.event_type = kind.name().to_string();
            e
        })
    }

    fn append_content<E: Members + ?Sized>(
        &mut self,
        ty: EventType,
        found: Option<Key>,
        show_id: impl FnOnce() -> String,
        delta: Delta<'_>,
        event: Option<&E>,
    ) -> Change {
        let Some(i) = found else {
            return Change::warn(format!("{}: No message found with ID '{}'", ty.name(), show_id()));
        };
        if self.messages.get(i).role() == Some("activity") {
            return Change::warn(activity_clash(ty, &show_id()));
        }
        if event.is_none_or(|e| e.get("metadata").is_none()) {
            if let Some(f) = self.messages.built_mut(i) {
                match f.string_mut("content") {
                    Some(s) => delta.push_to(s),
                    None => {
                        let mut s = String::new();
                        delta.push_to(&mut s);
                        f.insert("content", Member::Value(Value::String(s)));
                    }
                }
                return self.changed(i);
            }
        }
        let m = obj(self.messages.get_mut(i)).expect("indexed messages are objects");
        match m.get_mut("content") {
            Some(Value::String(s)) => delta.push_to(s),
            _ => {
                let mut s = String::new();
                delta.push_to(&mut s);
                m.insert("content".into(), Value::String(s));
            }
        }
        if let Some(event) = event {
            apply_metadata(m, event);
        }
        self.changed(i)
    }

    /// `TOOL_CALL_ARGS` (with a delta) and `TOOL_CALL_END` (without), to the call at
    /// `found` (its message and place in `toolCalls`).
    fn append_args<E: Members + ?Sized>(
        &mut self,
        ty: EventType,
        found: Option<(Key, usize)>,
        show_id: impl FnOnce() -> String,
        delta: Option<Delta<'_>>,
        event: Option<&E>,
    ) -> Result<Change, StreamError> {
        let Some((i, call)) = found else {
            return Ok(Change::warn(format!("{}: No message found containing tool call with ID '{}'", ty.name(), show_id())));
        };
        if event.is_none_or(|e| e.get("metadata").is_none()) {
            if let Some(f) = self.messages.built_mut(i) {
                match &delta {
                    None => return Ok(Change::default()),
                    Some(d) => {
                        if let Some(s) = call_arguments(f, call) {
                            d.push_to(s);
                            return Ok(self.changed(i));
                        }
                    }
                }
            }
        }
        let tc = self.messages.get_mut(i).get_mut("toolCalls").and_then(|c| c.get_mut(call)).and_then(Value::as_object_mut).expect("indexed tool call");
        let changed = match delta {
            Some(delta) => {
                let Some(Value::Object(f)) = tc.get_mut("function") else {
                    return Err(type_error(format!("tool call '{}' has no function object", show_id())));
                };
                match f.get_mut("arguments") {
                    Some(Value::String(s)) => delta.push_to(s),
                    other => {
                        let mut s = String::new();
                        js::push_display(&mut s, other.as_deref());
                        delta.push_to(&mut s);
                        f.insert("arguments".into(), Value::String(s));
                    }
                }
                if let Some(event) = event {
                    apply_metadata(tc, event);
                }
                true
            }
            None => event.is_some_and(|e| apply_metadata(tc, e)),
        };
        Ok(if changed { self.changed(i) } else { Change::default() })
    }

    /// The message a CONTENT/END event appends to: `None` when missing or an activity.
    fn text_target<E: Members + ?Sized>(&mut self, event: &E) -> Option<Key> {
        let i = self.messages.find(event.get("messageId"))?;
        if self.messages.get(i).role() == Some("activity") {
            return None;
        }
        Some(i)
    }

    fn missing_or_activity<E: Members + ?Sized>(&mut self, ty: EventType, event: &E) -> Change {
        let id = event.get("messageId");
        match self.messages.find(id) {
            None => Change::warn(format!("{}: No message found with ID '{}'", ty.name(), js::show(id))),
            Some(_) => Change::warn(activity_clash(ty, &js::show(id))),
        }
    }

    fn message_start<E: Members + ?Sized>(&mut self, ty: EventType, event: &E) -> Change {
        let id = event.get("messageId");
        let existing = self.messages.find(id);
        if let Some(i) = existing {
            if self.messages.get(i).role() == Some("activity") {
                return Change::warn(activity_clash(ty, &js::show(id)));
            }
        }
        let i = match existing {
            Some(i) => i,
            None => {
                let mut m = Fields::with_capacity(5);
                if let Some(id) = id {
                    m.push("id", Member::Value(id.clone()));
                }
                if ty == EventType::TextMessageStart {
                    m.push("role", Member::Value(event.get("role").cloned().unwrap_or_else(|| Value::String("assistant".into()))));
                } else {
                    m.push("role", Member::Value(Value::String("reasoning".into())));
                }
                m.push("content", Member::Value(Value::String(String::new())));
                if ty == EventType::TextMessageStart {
                    if let Some(name) = event.get("name") {
                        m.push("name", Member::Value(name.clone()));
                    }
                }
                if let Some(tag) = js::defined(event.get("subagentRunId")) {
                    m.push("subagentRunId", Member::Value(tag.clone()));
                }
                self.messages.push(Message::Built(m))
            }
        };
        // (only metadata changes the message: a built one keeps its form without)
        let metadata_changed = event.get("metadata").is_some() && obj(self.messages.get_mut(i)).is_some_and(|target| apply_metadata(target, event));
        if existing.is_none() || metadata_changed {
            self.changed(i)
        } else {
            Change::default()
        }
    }

    fn tool_call_start<E: Members + ?Sized>(&mut self, event: &E) -> Result<Change, StreamError> {
        let id = event.get("toolCallId");
        let name = event.get("toolCallName");
        if let Some((i, call)) = self.messages.find_tool(id, false) {
            let tc = self.messages.get_mut(i).get_mut("toolCalls").and_then(|c| c.get_mut(call)).and_then(Value::as_object_mut).expect("indexed tool call");
            let Some(Value::Object(f)) = tc.get_mut("function") else {
                return Err(type_error(format!("tool call '{}' has no function object", js::show(id))));
            };
            let renamed = !strict_eq(f.get("name"), name);
            let mut warning = None;
            if renamed {
                warning = Some(format!(
                    "TOOL_CALL_START: tool call '{}' already exists with name '{}' — updating it to '{}'",
                    js::show(id),
                    js::show(f.get("name")),
                    js::show(name)
                ));
                set_or_remove(f, "name", name);
            }
            let changed = apply_metadata(tc, event) || renamed;
            let message = changed.then(|| self.messages.position(i));
            return Ok(Change { messages: changed, message, warning, ..Change::default() });
        }
        // resolveOrCreateAssistantMessage
        let parent = event.get("parentMessageId");
        let mut warning = None;
        let target = if js::truthy(parent) {
            match self.messages.find(parent) {
                Some(i) if self.messages.get(i).role() == Some("assistant") => Some(i),
                Some(i) => {
                    warning = Some(format!(
                        "TOOL_CALL_START: parentMessageId '{}' matches a '{}' message, not assistant — falling back to toolCallId",
                        js::show(parent),
                        js::show(self.messages.get(i).get("role"))
                    ));
                    None
                }
                None => None,
            }
        } else {
            None
        };
        let (at, created) = match target {
            Some(i) => (i, false),
            None => {
                let new_id = if js::truthy(parent) && warning.is_none() { parent } else { id };
                let preexisting = self.messages.find(new_id).is_some();
                let mut m = Fields::with_capacity(4);
                if let Some(v) = new_id {
                    m.push("id", Member::Value(v.clone()));
                }
                m.push("role", Member::Value(Value::String("assistant".into())));
                m.push("toolCalls", Member::Objects(Vec::new()));
                (self.messages.push(Message::Built(m)), !preexisting)
            }
        };
        // A built message without metadata to merge: the call added to its members.
        if event.get("metadata").is_none() {
            if let Some(msg) = self.messages.built_mut(at) {
                if created && !msg.contains("subagentRunId") {
                    if let Some(tag) = js::defined(event.get("subagentRunId")) {
                        msg.insert("subagentRunId", Member::Value(tag.clone()));
                    }
                }
                if matches!(msg.get("toolCalls"), None | Some(Member::Value(Value::Null))) {
                    msg.insert("toolCalls", Member::Objects(Vec::new()));
                }
                if let Some(Member::Objects(calls)) = msg.get_mut("toolCalls") {
                    let mut tc = Fields::with_capacity(3);
                    if let Some(id) = id {
                        tc.push("id", Member::Value(id.clone()));
                    }
                    tc.push("type", Member::Static("function"));
                    let mut f = Fields::with_capacity(2);
                    if let Some(n) = name {
                        f.push("name", Member::Value(n.clone()));
                    }
                    f.push("arguments", Member::Value(Value::String(String::new())));
                    tc.push("function", Member::Object(f));
                    calls.push(tc);
                    let call = calls.len() - 1;
                    self.messages.tool_call_added(at, id, call);
                    return Ok(Change { warning, ..self.changed(at) });
                }
            }
        }
        let Some(msg) = obj(self.messages.get_mut(at)) else {
            return Err(type_error("the tool call's message is not an object"));
        };
        if created && !msg.contains_key("subagentRunId") {
            if let Some(tag) = js::defined(event.get("subagentRunId")) {
                msg.insert("subagentRunId".into(), tag.clone());
            }
        }
        if js::is_nullish(msg.get("toolCalls")) {
            msg.insert("toolCalls".into(), Value::Array(Vec::new()));
        }
        let Some(Value::Array(calls)) = msg.get_mut("toolCalls") else {
            return Err(type_error("the message's toolCalls is not an array"));
        };
        let mut tc = Map::with_capacity(3);
        if let Some(id) = id {
            tc.insert("id".into(), id.clone());
        }
        tc.insert("type".into(), Value::String("function".into()));
        let mut f = Map::with_capacity(2);
        if let Some(n) = name {
            f.insert("name".into(), n.clone());
        }
        f.insert("arguments".into(), Value::String(String::new()));
        tc.insert("function".into(), Value::Object(f));
        apply_metadata(&mut tc, event);
        calls.push(Value::Object(tc));
        let call = calls.len() - 1;
        self.messages.tool_call_added(at, id, call);
        Ok(Change { warning, ..self.changed(at) })
    }

    fn tool_call_result<E: Members + ?Sized>(&mut self, event: &E) -> Change {
        let tcid = event.get("toolCallId");
        let mut m = Fields::with_capacity(5);
        if let Some(v) = event.get("messageId") {
            m.push("id", Member::Value(v.clone()));
        }
        if let Some(v) = tcid {
            m.push("toolCallId", Member::Value(v.clone()));
        }
        let r = event.get("role");
        m.push("role", Member::Value(if js::truthy(r) { r.unwrap().clone() } else { Value::String("tool".into()) }));
        if let Some(v) = event.get("content") {
            m.push("content", Member::Value(v.clone()));
        }
        if let Some(tag) = js::defined(event.get("subagentRunId")) {
            m.push("subagentRunId", Member::Value(tag.clone()));
        }
        let mut m = Message::Built(m);
        if event.get("metadata").is_some() {
            apply_metadata(obj(m.value_mut()).expect("built messages are objects"), event);
        }
        // After the first assistant message carrying the call and the tool messages that
        // follow it.
        let at = match self.messages.find_tool(tcid, true) {
            None => self.messages.push(m),
            Some((owner, _)) => {
                let at = self.messages.after_tool_run(owner);
                self.messages.insert(at, m)
            }
        };
        self.changed(at)
    }

    fn messages_snapshot(&mut self, event: &Value) -> Result<Change, StreamError> {
        let Some(Value::Array(raw)) = event.get("messages") else {
            return Err(type_error("MESSAGES_SNAPSHOT messages is not an array"));
        };
        if raw.iter().any(|m| m.is_null()) {
            return Err(type_error("MESSAGES_SNAPSHOT holds a null message"));
        }
        let new: Vec<Value> = raw.iter().map(without_null_tag).collect();
        // Map(id -> message): the last message with an id wins.
        let mut snap: HashMap<String, usize> = HashMap::with_capacity(new.len());
        for (i, m) in new.iter().enumerate() {
            snap.insert(js::key(m.get("id")), i);
        }
        let owned = authoritative_activity_types(event);
        let has_activity = new.iter().any(|m| role(m) == Some("activity"));
        let has_reasoning = new.iter().any(|m| role(m) == Some("reasoning"));
        let preserved = |m: &Value| -> bool {
            (role(m) == Some("activity")
                && match &owned {
                    Authority::Types(types) => !m.get("activityType").and_then(Value::as_str).is_some_and(|t| types.contains(t)),
                    Authority::All => false,
                    Authority::Inferred => !has_activity,
                })
                || (role(m) == Some("reasoning") && !has_reasoning)
        };
        let old = self.messages.take();
        let mut list: Vec<Value> = Vec::with_capacity(old.len() + new.len());
        let mut kept: std::collections::HashSet<String> = std::collections::HashSet::new();
        for m in old.into_iter().map(Message::into_value) {
            let k = js::key(m.get("id"));
            if let Some(&i) = snap.get(&k) {
                list.push(new[i].clone());
                kept.insert(k);
            } else if preserved(&m) {
                kept.insert(k);
                list.push(m);
            }
        }
        for m in new {
            if !kept.contains(&js::key(m.get("id"))) {
                list.push(m);
            }
        }
        self.messages = Messages::new(list);
        Ok(Change::messages(None))
    }

    fn activity_snapshot(&mut self, event: &Value) -> Change {
        let id = event.get("messageId");
        let existing = self.messages.find(id);
        let replace = match event.get("replace") {
            None | Some(Value::Null) => true,
            r => js::truthy(r),
        };
        let tag = js::defined(event.get("subagentRunId"));
        let fresh = || {
            let mut m = Map::new();
            if let Some(id) = id {
                m.insert("id".into(), id.clone());
            }
            m.insert("role".into(), Value::String("activity".into()));
            set_or_remove(&mut m, "activityType", event.get("activityType"));
            set_or_remove(&mut m, "content", event.get("content"));
            if let Some(t) = tag {
                m.insert("subagentRunId".into(), t.clone());
            }
            m
        };
        let at = match existing {
            None => {
                let mut m = fresh();
                apply_metadata(&mut m, event);
                self.messages.push(Value::Object(m).into())
            }
            Some(i) if self.messages.get(i).role() == Some("activity") => {
                let m = obj(self.messages.get_mut(i)).expect("activity messages are objects");
                if replace {
                    set_or_remove(m, "activityType", event.get("activityType"));
                    set_or_remove(m, "content", event.get("content"));
                    set_or_remove(m, "subagentRunId", tag);
                }
                apply_metadata(m, event);
                i
            }
            Some(i) => {
                if replace {
                    let mut m = fresh();
                    apply_metadata(&mut m, event);
                    self.messages.replace(i, Value::Object(m));
                }
                i
            }
        };
        self.changed(at)
    }

    fn activity_delta(&mut self, event: &Value) -> Change {
        let id = event.get("messageId");
        let Some(i) = self.messages.find(id) else { return Change::default() };
        if self.messages.get(i).role() != Some("activity") {
            return Change::warn(format!("ACTIVITY_DELTA: Message '{}' is not an activity message", js::show(id)));
        }
        let m = obj(self.messages.get_mut(i)).expect("activity messages are objects");
        let metadata_changed = apply_metadata(m, event);
        let patch = match event.get("patch") {
            None | Some(Value::Null) => Value::Array(Vec::new()),
            Some(p) => p.clone(),
        };
        // The content is patched where it is, not copied (a failed patch leaves it as it
        // was); a missing or null content is patched as `{}`, kept if the patch applies.
        let had = m.get("content").map(Value::is_null); // None: missing, Some(true): null
        if had != Some(false) {
            m.insert("content".into(), Value::Object(Map::new()));
        }
        let content = m.get_mut("content").expect("content set above");
        let r = patch_json(content, patch, &mut self.limits);
        if r.is_err() {
            match had {
                None => drop(m.shift_remove("content")),
                Some(true) => drop(m.insert("content".into(), Value::Null)),
                Some(false) => {}
            }
        }
        match r {
            Ok(()) => {
                set_or_remove(m, "activityType", event.get("activityType"));
                self.changed(i)
            }
            Err(e) => Change {
                messages: metadata_changed,
                message: metadata_changed.then(|| self.messages.position(i)),
                warning: Some(format!("Failed to apply activity patch for '{}': {e}", js::show(id))),
                ..Change::default()
            },
        }
    }

    fn encrypted_value(&mut self, event: &Value) -> Change {
        let id = event.get("entityId");
        let value = event.get("encryptedValue");
        let at = if event.get("subtype").and_then(Value::as_str) == Some("tool-call") {
            // The first assistant message carrying the call.
            let found = self.messages.find_tool(id, true);
            if let Some((i, call)) = found {
                if let Some(tc) = self.messages.get_mut(i).get_mut("toolCalls").and_then(|c| c.get_mut(call)).and_then(Value::as_object_mut) {
                    set_or_remove(tc, "encryptedValue", value);
                }
            }
            found.map(|(i, _)| i)
        } else {
            match self.messages.find(id) {
                Some(i) if self.messages.get(i).role() != Some("activity") => {
                    if let Some(m) = obj(self.messages.get_mut(i)) {
                        set_or_remove(m, "encryptedValue", value);
                    }
                    Some(i)
                }
                _ => None,
            }
        };
        match at {
            Some(i) => self.changed(i),
            None => Change::default(),
        }
    }
}

/// A delta as the reference appends it: a string, or any value written as a template
/// literal writes it.
enum Delta<'a> {
    Str(&'a str),
    Js(Option<&'a Value>),
}

impl Delta<'_> {
    fn push_to(&self, s: &mut String) {
        match self {
            Delta::Str(d) => js::append(s, d),
            Delta::Js(v) => js::push_display(s, *v),
        }
    }
}

fn activity_clash(ty: EventType, id: &str) -> String {
    let other = match ty {
        EventType::ReasoningMessageStart | EventType::ReasoningMessageContent | EventType::ReasoningMessageEnd => "reasoning",
        _ => "text",
    };
    format!(
        "{}: Message '{id}' is an activity message — message ids must be unique across activity and {other} messages",
        ty.name()
    )
}

/// `authoritativeActivityTypes` of a `MESSAGES_SNAPSHOT`'s metadata.
enum Authority {
    /// No declaration: local activities survive unless the snapshot has any.
    Inferred,
    /// `null`: the snapshot owns every activity type.
    All,
    /// These types (an invalid declaration owns none).
    Types(std::collections::HashSet<String>),
}

fn authoritative_activity_types(event: &Value) -> Authority {
    let Some(Value::Object(meta)) = event.get("metadata") else { return Authority::Inferred };
    let Some(value) = meta.get("@ag-ui/client") else { return Authority::Inferred };
    let Value::Object(value) = value else { return Authority::Types(Default::default()) };
    let Some(types) = value.get("authoritativeActivityTypes") else { return Authority::Inferred };
    match types {
        Value::Null => Authority::All,
        Value::Array(items) if items.iter().all(Value::is_string) => {
            Authority::Types(items.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
        }
        _ => Authority::Types(Default::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;
    use serde_json::json;

    fn event(rng: &mut Rng) -> Value {
        let mid = rng.pick(&["m1", "m2", "m3"]);
        let cid = rng.pick(&["c1", "c2", "c3"]);
        let word = rng.pick(&["a", "bé", "{\"q\": 1}", ""]);
        let mut e = match rng.below(13) {
            0 | 1 => json!({"type": "TEXT_MESSAGE_START", "messageId": mid}),
            2 => json!({"type": "REASONING_MESSAGE_START", "messageId": mid}),
            3 | 4 => json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": word}),
            5 => json!({"type": rng.pick(&["TEXT_MESSAGE_END", "REASONING_MESSAGE_END"]), "messageId": mid}),
            6 => json!({"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": rng.pick(&["s", "t"])}),
            7 | 8 => json!({"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": word}),
            9 => json!({"type": "TOOL_CALL_END", "toolCallId": cid}),
            10 => json!({"type": "TOOL_CALL_RESULT", "messageId": rng.pick(&["r1", "m2"]), "toolCallId": cid, "content": word}),
            11 => match rng.below(3) {
                0 => json!({"type": "ACTIVITY_SNAPSHOT", "messageId": mid, "activityType": "x", "content": {"n": 1}}),
                1 => json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": rng.pick(&["tool-call", "message"]), "entityId": rng.pick(&[mid, cid]), "encryptedValue": word}),
                _ => json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": mid}),
            },
            _ => match rng.below(3) {
                0 => json!({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m1", "role": "user", "content": "x"}]}),
                1 => json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "input": {"messages": [{"id": mid, "role": "assistant", "toolCalls": null}]}}),
                _ => json!({"type": "STEP_STARTED", "stepName": "s"}),
            },
        };
        let o = e.as_object_mut().unwrap();
        if rng.below(5) == 0 {
            o.insert("metadata".into(), json!({"k": rng.below(3)}));
        }
        if rng.below(6) == 0 {
            o.insert("subagentRunId".into(), if rng.below(2) == 0 { json!("sub") } else { Value::Null });
        }
        match o["type"].as_str() {
            Some("TOOL_CALL_START") if rng.below(3) != 0 => drop(o.insert("parentMessageId".into(), json!(mid))),
            Some("TEXT_MESSAGE_START") if rng.below(3) == 0 => drop(o.insert("role".into(), json!(rng.pick(&["user", "assistant"])))),
            Some("TEXT_MESSAGE_START") if rng.below(3) == 0 => drop(o.insert("name".into(), json!("n"))),
            Some("TOOL_CALL_RESULT") if rng.below(3) == 0 => drop(o.insert("role".into(), json!("tool"))),
            _ => {}
        }
        e
    }

    /// The messages the reducer builds and keeps in their built form (members appended to
    /// in place, a run's string held aside) read, after any events, as the same JSON text
    /// as the messages made JSON values after every event (the reducer's general path).
    #[test]
    fn built_messages_read_as_their_json_values() {
        let mut rng = Rng(0x5eed_1234_abcd_0001);
        let text = |ap: &EventApplier| serde_json::to_string(&ap.messages().collect::<Vec<_>>()).unwrap();
        let (mut built_at_end, mut held) = (0, 0);
        for _ in 0..400 {
            let (mut a, mut b) = (EventApplier::default(), EventApplier::default());
            let mut last: Option<Value> = None;
            for _ in 0..40 {
                // (runs of deltas to one target: the reducer holds its string aside)
                let e = match last.take() {
                    Some(mut e) if rng.below(3) != 0 => {
                        e["delta"] = json!(rng.pick(&["x", "é", "\\n"]));
                        e
                    }
                    _ => event(&mut rng),
                };
                let plain = e.as_object().unwrap().len() == 3 && e["delta"].is_string() && (e["messageId"].is_string() || e["toolCallId"].is_string());
                let (ra, rb) = if plain && rng.below(2) == 0 {
                    let kind = EventType::of(&e);
                    let id = e.get("messageId").or(e.get("toolCallId")).and_then(Value::as_str).unwrap();
                    let d = e["delta"].as_str().unwrap();
                    (a.apply_delta(kind, id, d), b.apply_delta(kind, id, d))
                } else {
                    (a.apply(&e), b.apply(&e))
                };
                assert_eq!(format!("{ra:?}"), format!("{rb:?}"), "{e}");
                if plain {
                    last = Some(e.clone());
                }
                held += usize::from(!a.settled());
                b.settle();
                b.messages.promote_all();
                if rng.below(4) == 0 {
                    a.settle();
                    assert_eq!(text(&a), text(&b), "after {e}");
                }
            }
            a.settle();
            assert_eq!(text(&a), text(&b));
            assert_eq!(format!("{:?}", a.messages().collect::<Vec<_>>()), format!("{:?}", b.messages().collect::<Vec<_>>()));
            built_at_end += a.messages().filter(|m| matches!(m, Message::Built(_))).count();
        }
        assert!(built_at_end > 200 && held > 100, "{built_at_end} {held}");
    }
}
