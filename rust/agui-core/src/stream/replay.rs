//! The stages chained as the reference client runs them on a live stream: the 0.x
//! compatibility boundary (and the shims of an older peer's era), the schema stage, chunk
//! expansion, optional verification, the reducer. Push events one at a time
//! ([`Replayer`]), or replay a whole sequence / SSE log in one call.

use super::apply::{Change, EventApplier, State};
use super::chunks::ChunkExpander;
use super::event::{parse_event_limited, plain_state_delta_known, Delta, DeltaForm, EventType, Known, Lead, Members, Plain, PlainForms, RawDelta};
use super::legacy::{LegacyChain, ProtocolVersion, Shims};
use super::schema::{check_event, Checked};
use super::verify::EventVerifier;
use super::{StreamError, Warning, WarningKind};
use crate::sse::{SseParser, DEFAULT_MAX_BUFFER};
use serde_json::{Map, Value};

/// Which stages run. The default is the reference client's inbound pipeline without
/// verification: compatibility boundary, schema stage, chunk expansion, reducer.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Run the 0.x compatibility boundary first (`THINKING_*`, legacy nulls, binary parts).
    pub compat: bool,
    /// The shims for a peer of an older era ([`Shims::for_peer`]; its `boundary` is
    /// `compat`'s): none by default.
    pub era: Shims,
    /// Hold each event to the protocol's schema ([`super::schema`]): unrecognised
    /// material stripped with a warning, a malformed known field an error.
    pub schema: bool,
    /// Expand `*_CHUNK` events (the reducer rejects them otherwise).
    pub expand: bool,
    /// Verify the sequence (R01-R31) before applying each event.
    pub verify: bool,
    /// The protocol version this client speaks: a `RUN_STARTED` declaring a newer or an
    /// uninterpretable one warns. `None`: not compared.
    pub protocol_version: Option<ProtocolVersion>,
    /// Deepest nesting of an event's JSON (the event object included) and of the values
    /// its patches build (`limits::DEFAULT_MAX_DEPTH`).
    pub max_depth: usize,
    /// The most memory one state or activity patch may build, and what the `copy`
    /// operations of all of them may copy together (`limits::DEFAULT_MAX_PATCH_BYTES`):
    /// past it a patch fails (a warning, the state unchanged).
    pub max_patch_bytes: usize,
    /// The most warnings one replay keeps (`limits::DEFAULT_MAX_WARNINGS`): past it the
    /// later ones are counted, not kept, and one last warning says so (a log of a few KB
    /// of gzip can hold millions of events that each warn).
    pub max_warnings: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            compat: true,
            era: Shims::default(),
            schema: true,
            expand: true,
            verify: false,
            protocol_version: None,
            max_depth: crate::limits::DEFAULT_MAX_DEPTH,
            max_patch_bytes: crate::limits::DEFAULT_MAX_PATCH_BYTES,
            max_warnings: crate::limits::DEFAULT_MAX_WARNINGS,
        }
    }
}

/// A replay's warnings within its budget ([`ReplayOptions::max_warnings`]): the first
/// `max` kept, then one saying that the later ones are not; the count goes on across
/// [`Replayer::take_warnings`], so an incremental replay is bounded the same way.
#[derive(Debug)]
struct Warnings {
    list: Vec<Warning>,
    /// How many of `list` are counted already.
    counted: usize,
    seen: usize,
    max: usize,
}

impl Warnings {
    fn new(max: usize) -> Self {
        Warnings { list: Vec::new(), counted: 0, seen: 0, max }
    }

    fn push(&mut self, w: Warning) {
        self.list.push(w);
        self.settle();
    }

    /// Count the warnings added to `list` since the last call (a stage may push into it
    /// directly); past the budget, drop them and say so once.
    fn settle(&mut self) {
        let new = self.list.len() - self.counted;
        if new == 0 {
            return;
        }
        let room = self.max.saturating_sub(self.seen);
        let before = self.seen;
        self.seen = self.seen.saturating_add(new);
        if new > room {
            let first = &self.list[self.counted + room];
            let (kind, index) = (first.kind, first.index);
            self.list.truncate(self.counted + room);
            if before <= self.max {
                let max = self.max;
                let message = format!("more than {max} warnings: the later ones are not kept (max_warnings={max})");
                self.list.push(Warning::new(kind, index, message));
            }
        }
        self.counted = self.list.len();
    }

    fn take(&mut self) -> Vec<Warning> {
        self.settle();
        self.counted = 0;
        std::mem::take(&mut self.list)
    }
}

/// What the run events of a stream said: whether the last run is over, the result of
/// the last successful `RUN_FINISHED` (as the reference's `runAgent` returns it), the
/// last `RUN_ERROR`.
#[derive(Debug, Default, Clone)]
pub struct RunOutcome {
    /// A `RUN_STARTED` was seen.
    pub started: bool,
    /// The last run event was `RUN_FINISHED` or `RUN_ERROR` (a stream of a `RUN_ERROR`
    /// alone is over too).
    pub ended: bool,
    pub result: Option<Value>,
    pub error: Option<Value>,
}

impl RunOutcome {
    fn see<E: Members + ?Sized>(&mut self, e: &E) {
        match e.kind() {
            EventType::RunStarted => {
                self.started = true;
                self.ended = false;
            }
            EventType::RunFinished => {
                self.ended = true;
                let outcome = e.get("outcome").and_then(|o| o.get("type")).and_then(Value::as_str);
                if matches!(outcome, None | Some("success")) {
                    self.result = e.get("result").cloned();
                }
            }
            EventType::RunError => {
                self.ended = true;
                // (A plain event is never a RUN_ERROR.)
                self.error = e.object().cloned();
            }
            _ => {}
        }
    }
}

/// The outcome of a whole replay: final messages and state, what the reducer warned,
/// and the error that stopped it (events before it are applied).
#[derive(Debug)]
pub struct Replay<S = Value> {
    /// The messages (each reads as its JSON value: [`super::Message::to_value`]).
    pub messages: Vec<super::Message>,
    pub state: S,
    pub pending_interrupts: Vec<Value>,
    pub warnings: Vec<Warning>,
    pub error: Option<StreamError>,
    /// When `error` is a log that could not be opened or read on (not an event the
    /// stages reject): why, for a caller that reports such failures as readers do.
    pub log_error: Option<LogStop>,
    /// Number of input events consumed (including the failing one).
    pub events: usize,
}

/// Why a log replay ended before its log did, other than an event the stages reject.
#[derive(Debug)]
pub enum LogStop {
    /// The log file could not be opened.
    Open(std::io::Error),
    /// The log could not be read on (I/O, gzip, format, framing, a frame over the limit).
    Read(crate::log::LogError),
}

/// Incremental pipeline: boundary, schema, expand, verify, apply (the state: a JSON
/// value, or a binding's own [`State`]).
pub struct Replayer<S = Value> {
    /// The boundary and the era's shims (`None`: `compat` off and no shim).
    legacy: Option<LegacyChain>,
    /// Whether a shim runs (the chain then expands chunks itself).
    shims: bool,
    schema: bool,
    expander: Option<ChunkExpander>,
    verifier: Option<EventVerifier>,
    protocol_version: Option<ProtocolVersion>,
    applier: EventApplier<S>,
    /// Whether events reach the reducer (off: verification alone, nothing kept).
    reduce: bool,
    index: usize,
    warnings: Warnings,
    /// The events handed to the reducer, kept while [`record`](Self::record) is on.
    delivered: Option<Vec<Value>>,
    /// What the run events said so far.
    outcome: RunOutcome,
    /// An event whose `type` is not a non-empty string is an error, not dropped (what a
    /// client reading an agent's response requires of every frame).
    require_type: bool,
    staged: Vec<Value>,
    scratch: Vec<Value>,
    reader: Reader,
}

impl<S: State> Replayer<S> {
    pub fn new(messages: Vec<Value>, state: S, options: ReplayOptions) -> Self {
        let shims = Shims { boundary: options.compat, ..options.era };
        let any_shim = shims.v0_0_39 || shims.v0_0_45 || shims.v0_0_57;
        Replayer {
            legacy: (shims.boundary || any_shim).then(|| LegacyChain::new(shims, super::legacy::uuid_generator())),
            shims: any_shim,
            schema: options.schema,
            expander: options.expand.then(ChunkExpander::new),
            verifier: options.verify.then(EventVerifier::new),
            protocol_version: options.protocol_version,
            applier: EventApplier::new(messages, state).with_max_depth(options.max_depth).with_max_patch_bytes(options.max_patch_bytes),
            reduce: true,
            index: 0,
            warnings: Warnings::new(options.max_warnings),
            delivered: None,
            outcome: RunOutcome::default(),
            require_type: false,
            staged: Vec::new(),
            scratch: Vec::new(),
            reader: Reader::new(options),
        }
    }

    /// The stages in front of the reducer alone (compatibility boundary, chunk expansion,
    /// verification): the events are checked and dropped, so memory stays constant over a
    /// stream of any length; messages and state stay as given.
    pub fn without_reducer(mut self) -> Self {
        self.reduce = false;
        self
    }

    /// Keep the events handed to the reducer (what reaches application code: after the
    /// boundary, the schema stage, chunk expansion and verification), for
    /// [`take_delivered`](Self::take_delivered).
    pub fn record(&mut self, on: bool) {
        self.delivered = on.then(Vec::new);
    }

    /// The events handed to the reducer since the last call (see [`record`](Self::record)).
    pub fn take_delivered(&mut self) -> Vec<Value> {
        self.delivered.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Refuse (rather than drop) an event whose `type` is not a non-empty string.
    pub fn require_type(&mut self, on: bool) {
        self.require_type = on;
    }

    /// What the run events delivered so far said.
    pub fn outcome(&self) -> &RunOutcome {
        &self.outcome
    }

    /// Push one input event; returns what it changed (merged over the events it expanded
    /// to). The error's `index` is the input event's position.
    pub fn push(&mut self, event: Value) -> Result<Change, StreamError> {
        let index = self.index;
        self.index += 1;
        if self.require_type && !matches!(event.get("type"), Some(Value::String(t)) if !t.is_empty()) {
            let mut e = StreamError::new(super::Stage::Schema, "$.type: Invalid event: the frame carries no event type.");
            e.index = index;
            e.field = Some("$.type".into());
            return Err(e);
        }
        let mut staged = std::mem::take(&mut self.staged);
        let mut total = Change::default();
        let r = self.through_legacy(event, index, &mut staged).and_then(|()| {
            for e in staged.drain(..) {
                self.after_legacy(e, index, &mut total)?;
            }
            Ok(())
        });
        staged.clear();
        self.staged = staged;
        r.map(|()| total).map_err(|mut e| {
            e.index = index;
            e
        })
    }

    /// The boundary and the era's shims: `event` into what they make of it.
    fn through_legacy(&mut self, event: Value, index: usize, out: &mut Vec<Value>) -> Result<(), StreamError> {
        let Some(chain) = &mut self.legacy else {
            out.push(event);
            return Ok(());
        };
        let r = chain.push_into(event, out);
        let warnings = &mut self.warnings;
        chain.drain_warnings(|kind, message| warnings.push(Warning::new(kind, index, message)));
        r
    }

    /// The schema stage, chunk expansion, verification and the reducer on one event the
    /// boundary passed.
    fn after_legacy(&mut self, mut event: Value, index: usize, total: &mut Change) -> Result<(), StreamError> {
        if self.schema {
            if let Checked::Drop = check_event(&mut event, index, &mut self.warnings.list)? {
                return Ok(());
            }
        }
        let mut batch = std::mem::take(&mut self.scratch);
        let expanded = match &mut self.expander {
            Some(x) => {
                let r = x.push_into(event, &mut batch);
                for w in x.take_warnings() {
                    self.warnings.push(Warning::new(WarningKind::Chunks, index, w));
                }
                r
            }
            None => {
                batch.push(event);
                Ok(())
            }
        };
        let mut result = expanded;
        if result.is_ok() {
            for e in batch.drain(..) {
                if let Err(err) = self.deliver(e, index, total) {
                    result = Err(err);
                    break;
                }
            }
        }
        batch.clear();
        self.scratch = batch;
        result
    }

    /// Verification, the producer's protocol version, and the reducer on one event.
    fn deliver(&mut self, e: Value, index: usize, total: &mut Change) -> Result<(), StreamError> {
        if let Some(v) = &mut self.verifier {
            v.push(&e)?;
        }
        if let Some(ours) = self.protocol_version {
            if EventType::of(&e) == EventType::RunStarted {
                if let Some(message) = ours.check_declared(e.get("protocolVersion")) {
                    self.warnings.push(Warning::new(WarningKind::Version, index, message));
                }
            }
        }
        if let Some(d) = &mut self.delivered {
            d.push(e.clone());
        }
        self.outcome.see(&e);
        if !self.reduce {
            return Ok(());
        }
        let c = self.applier.apply_owned(e)?;
        if let Some(w) = c.warning {
            self.warnings.push(Warning::new(WarningKind::Apply, index, w));
        }
        total.messages |= c.messages;
        total.state |= c.state;
        total.interrupts |= c.interrupts;
        if c.message.is_some() {
            total.message = c.message;
        }
        Ok(())
    }

    /// Push one event given as JSON text.
    pub fn push_json(&mut self, payload: &[u8]) -> Result<Change, StreamError> {
        let read = self.reader.read(payload, None, true);
        self.push_read(read, payload, None)
    }

    /// Push an event read by a [`Reader`] of the same options from `payload` (which the
    /// general path parses again when the read form does not fit the current state; a
    /// plain delta's object is rebuilt from what was read). `known`: what is known of the
    /// payload's text.
    fn push_read(&mut self, read: Read<'_>, payload: &[u8], known: Option<Known<'_>>) -> Result<Change, StreamError> {
        match read {
            // The boundary never changes a plain STATE_DELTA and the expander would only
            // close a pending chunk stream; with verification on it takes the general path.
            Read::StateOps(ops) if self.takes_state_delta_directly() => {
                let index = self.index;
                self.index += 1;
                let c = self.applier.apply_state_ops(ops);
                if let Some(w) = &c.warning {
                    self.warnings.push(Warning::new(WarningKind::Apply, index, w.clone()));
                }
                return Ok(Change { warning: None, ..c });
            }
            Read::Delta(d) => {
                return match self.push_plain(d.kind, d.id.as_deref(), &d.delta) {
                    Some(r) => r,
                    None => self.push(delta_event(&d)),
                };
            }
            // (read in its plain form only when the stages would take it so)
            Read::Later if self.takes_plain_events() => {
                if let Some(r) = Plain::read_formed(payload, known, self.reader.max_depth, &mut self.reader.plains).and_then(|p| self.push_plain_event(p)) {
                    return r;
                }
            }
            Read::Later => {}
            Read::StateOps(_) => {}
        }
        match parse_event_limited(payload, self.reader.max_depth) {
            Ok(v) => self.push(v),
            Err(mut e) => {
                e.index = self.index;
                self.index += 1;
                Err(e)
            }
        }
    }

    /// Push a hot event known to be in its plain form — exactly `{type, id, delta}` with
    /// string id and delta: `TEXT_MESSAGE_CONTENT`, `REASONING_MESSAGE_CONTENT`,
    /// `TOOL_CALL_ARGS`, or the matching `*_CHUNK` (id optional) — without an event
    /// object. `None` when the current state needs the general path ([`push`](Self::push)
    /// with the object): a pending chunk stream to close, or a chunk that opens a stream.
    /// The boundary never changes such events, the expander would only close a pending
    /// stream, and the verifier and the reducer take them as (kind, id, delta) by the same
    /// checks and appends as the general path.
    pub fn push_plain(&mut self, kind: EventType, id: Option<&str>, delta: &str) -> Option<Result<Change, StreamError>> {
        // An era's shims expand chunks themselves; a recording replay keeps the objects.
        if self.shims || self.delivered.is_some() {
            return None;
        }
        let Replayer { expander, verifier, applier, reduce, .. } = self;
        let (kind, id) = plain_target(expander, kind, id)?;
        let index = self.index;
        let relabel = |mut e: StreamError| {
            e.index = index;
            e
        };
        let result = match verifier {
            Some(v) => v.push_delta(kind, id).map_err(relabel),
            None => Ok(()),
        }
        .and_then(|()| if *reduce { applier.apply_delta(kind, id, delta).map_err(relabel) } else { Ok(Change::default()) });
        self.index += 1;
        Some(result.map(|c| {
            if let Some(w) = &c.warning {
                self.warnings.push(Warning::new(WarningKind::Apply, index, w.clone()));
            }
            Change { warning: None, ..c }
        }))
    }

    /// [`push_plain`](Self::push_plain) of a delta read as written, when only the reducer
    /// takes it and it holds the delta's target string aside
    /// ([`EventApplier::append_held`]): appended there, with no [`Change`] made. `false`:
    /// nothing done (push it as usual).
    #[inline(always)]
    fn push_held(&mut self, d: &RawDelta<'_>) -> bool {
        if !self.reduce || self.shims || self.delivered.is_some() || self.verifier.is_some() {
            return false;
        }
        let Replayer { expander, applier, .. } = self;
        let Some((kind, id)) = plain_target(expander, d.kind, d.id) else {
            return false;
        };
        // (a chunk as the CONTENT / ARGS event it expands to)
        let mut d = *d;
        (d.kind, d.id) = (kind, Some(id));
        if !applier.append_held(&d, id) {
            return false;
        }
        self.index += 1;
        true
    }

    /// A payload's start (`rest`, its text `text`) in the last delta form, when only the
    /// reducer takes such a delta and it holds the delta's target string aside: the delta
    /// decoded onto that string as its end is found (one pass over its text), and where
    /// the payload ends and the string's length before. `None`: nothing appended (the
    /// payload is read as usual). The caller applies it with
    /// [`EventApplier::took_held`] or cuts it back ([`EventApplier::cut_held`]).
    #[inline(always)]
    fn end_onto_held(&mut self, rest: &[u8], text: &str, no_kept_range: bool) -> Option<(usize, usize)> {
        if !self.reduce || self.shims || self.delivered.is_some() || self.verifier.is_some() {
            return None;
        }
        let Replayer { reader, applier, expander, .. } = self;
        let (kind, id, start) = reader.deltas.in_last_form(rest)?;
        // (the id as text: `rest` starts with the form's lead, `text` is `rest`'s)
        let id = match id {
            Some(r) => Some(text.get(r)?),
            None => None,
        };
        let (kind, id) = plain_target(expander, kind, id)?;
        let held = applier.held_for(kind, id.as_bytes())?;
        let at = held.len();
        // As `RawDelta::append_to` appends it: refused where its reading is (an escape
        // serde_json would not read, the kept range), and a delta that may join the
        // string's last character (one starting with 0xF4) left to it.
        match super::event::unescape_end(text, start, held) {
            Some(quote)
                if rest.get(quote + 1) == Some(&b'}')
                    && held.as_bytes().get(at) != Some(&0xF4)
                    && (no_kept_range || !super::js::holds_kept_range(&held[at..])) =>
            {
                Some((quote + 2, at))
            }
            _ => {
                held.truncate(at);
                None
            }
        }
    }

    /// Push a common event read in its plain form ([`Plain`]) without an event object.
    /// `None` when the current state needs the general path ([`push`](Self::push) with the
    /// object): an era's shims, recording, verification, or a pending chunk stream to
    /// close. Otherwise the stages before the reducer would pass it unchanged (the reader
    /// took only what the boundary and the schema stage keep as it is), and the run outcome
    /// and the reducer read it as they read its object.
    pub fn push_plain_event(&mut self, event: Plain<'_>) -> Option<Result<Change, StreamError>> {
        if !self.takes_plain_events() {
            return None;
        }
        // A snapshot as JSON text: the state reads it (or, not reducing, it is only checked).
        if let Some((text, max_depth)) = event.snapshot_text() {
            let taken = match self.reduce {
                true => self.applier.apply_snapshot_text(text, max_depth),
                false => super::event::nested_text_value(text, max_depth).map(|_| Change::default()),
            }?;
            self.index += 1;
            self.outcome.see(&event);
            return Some(Ok(taken));
        }
        let index = self.index;
        self.index += 1;
        self.outcome.see(&event);
        if !self.reduce {
            return Some(Ok(Change::default()));
        }
        let applied = self.applier.apply_plain(event).map_err(|mut e| {
            e.index = index;
            e
        });
        Some(applied.map(|c| {
            if let Some(w) = &c.warning {
                self.warnings.push(Warning::new(WarningKind::Apply, index, w.clone()));
            }
            Change { warning: None, ..c }
        }))
    }

    /// Whether [`push_plain_event`](Self::push_plain_event) takes events now.
    pub fn takes_plain_events(&self) -> bool {
        !(self.shims || self.delivered.is_some() || self.verifier.is_some() || self.expander.as_ref().is_some_and(ChunkExpander::has_pending))
    }

    /// Whether a `STATE_DELTA` (or a plain `STATE_SNAPSHOT`) may go straight to the state,
    /// past the other stages: the boundary never changes one, the expander would only close
    /// a pending chunk stream, the verifier needs the event. The one decision for plain
    /// deltas read from JSON text and for a binding's state events in its own form
    /// ([`push_state_with`](Self::push_state_with)).
    pub fn takes_state_delta_directly(&self) -> bool {
        self.reduce && self.verifier.is_none() && !self.shims && self.delivered.is_none() && !self.expander.as_ref().is_some_and(ChunkExpander::has_pending)
    }

    /// A `STATE_DELTA` (or a plain `STATE_SNAPSHOT`) the caller applies to the state itself
    /// (see [`EventApplier::apply_state_with`]); `None` (nothing applied, the event still to
    /// push) when the stages need the event or `apply` declined it.
    pub fn push_state_with(&mut self, apply: impl FnOnce(&mut S, &mut super::PatchLimits) -> bool) -> Option<Change> {
        if !self.takes_state_delta_directly() {
            return None;
        }
        let c = self.applier.apply_state_with(apply)?;
        self.index += 1;
        Some(c)
    }

    /// The reducer, its messages as the events made them (settled).
    pub fn applier(&mut self) -> &EventApplier<S> {
        self.applier.settle();
        &self.applier
    }

    /// The tool call `id` (its message's position, the message, the call; settled): see
    /// [`EventApplier::tool_call`].
    pub fn tool_call(&mut self, id: &str) -> Option<(usize, &Value, &Value)> {
        self.applier.settle();
        self.applier.tool_call(id)
    }

    /// How many input events were pushed (the index of the next one).
    pub fn pushed(&self) -> usize {
        self.index
    }

    pub fn state_mut(&mut self) -> &mut S {
        self.applier.state_mut()
    }

    /// Warnings so far, drained.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        self.warnings.take()
    }

    pub fn finish(mut self, error: Option<StreamError>) -> Replay<S> {
        let events = self.index;
        let (messages, state, pending_interrupts) = self.applier.into_parts();
        Replay { messages, state, pending_interrupts, warnings: self.warnings.take(), error, log_error: None, events }
    }

    /// [`finish`](Self::finish) of a log replay that stopped at `stop` (`read` events in).
    fn finish_log(self, stop: Option<Stop>, read: usize) -> Replay<S> {
        let (error, log_error) = match stop {
            None => (None, None),
            Some(Stop::Stream(e)) => (Some(e), None),
            Some(Stop::Log(e)) => (Some(Stop::Log(e.clone()).at(read)), Some(LogStop::Read(e))),
        };
        Replay { log_error, ..self.finish(error) }
    }
}

/// An event's JSON text read into what the reducer takes: the reading half of
/// [`Replayer::push_json`]. What it reads does not depend on the replay's state; the replayer falls back to the
/// general path (parsing the text again) when the state needs it.
struct Reader {
    verify: bool,
    /// The schema stage runs: a plain `STATE_DELTA` holding the engine's internal `_get`
    /// (which the schema does not describe) takes the general path.
    schema: bool,
    max_depth: usize,
    /// The pointers of plain `STATE_DELTA` patches, kept from event to event.
    pointers: crate::patch::cache::PointerCache,
    /// The form of the last plain delta event.
    deltas: DeltaForm,
    /// The layouts of the last plain events of each kind (read on the reducer's side).
    plains: PlainForms,
}

/// One event as a [`Reader`] read it.
enum Read<'a> {
    /// A plain `STATE_DELTA` (read only without verification).
    StateOps(Vec<crate::patch::Operation>),
    /// A plain hot delta event (see [`Replayer::push_plain`]).
    Delta(Delta<'a>),
    /// Any other event, not read: the replayer reads it in its plain form when its stages
    /// take it so ([`Replayer::push_plain_event`]), or parses it.
    Later,
}

impl Reader {
    fn new(options: ReplayOptions) -> Self {
        Reader { verify: options.verify, schema: options.schema, max_depth: options.max_depth, pointers: Default::default(), deltas: DeltaForm::default(), plains: PlainForms::default() }
    }

    /// An event's JSON text read (`known`: what is known of it; `formed`: whether it may
    /// be in a form of the deltas before it, which `DeltaForm::end` has not denied).
    fn read<'a>(&mut self, payload: &'a [u8], known: Option<Known<'a>>, formed: bool) -> Read<'a> {
        // A limit below one level refuses every event, the flat plain ones too.
        if self.max_depth == 0 {
            return Read::Later;
        }
        // A token stream's next delta, in the form of the last one.
        if formed {
            if let Some(d) = self.deltas.repeat(payload, known) {
                return Read::Delta(d);
            }
        }
        self.read_other(payload, known)
    }

    /// [`read`](Self::read) of a payload whose end `self.deltas.end` found (`escaped` as
    /// it said) while the log was framed: its delta read without a second scan.
    #[inline]
    fn read_ended<'a>(&mut self, payload: &'a [u8], known: Option<Known<'a>>, escaped: bool) -> Read<'a> {
        match self.deltas.repeat_ended(payload, known, escaped) {
            Some(d) => Read::Delta(d),
            None => self.read(payload, known, true),
        }
    }

    fn read_other<'a>(&mut self, payload: &'a [u8], known: Option<Known<'a>>) -> Read<'a> {
        // The writers put `type` first: the lead picks the one plain form worth trying.
        let lead = Lead::of(payload);
        if matches!(lead, Lead::StateDelta | Lead::Unknown) && !self.verify {
            if let Some(ops) = plain_state_delta_known(payload, known, self.max_depth, &mut self.pointers) {
                if !(self.schema && ops.iter().any(|o| o.kind == crate::patch::OpKind::Get)) {
                    return Read::StateOps(ops);
                }
            }
        }
        if let Some(d) = matches!(lead, Lead::Delta | Lead::Unknown).then(|| self.deltas.parse(payload, known)).flatten() {
            return Read::Delta(d);
        }
        Read::Later
    }
}

/// Replay decoded events from these messages and state.
pub fn replay(events: impl IntoIterator<Item = Value>, messages: Vec<Value>, state: Value, options: ReplayOptions) -> Replay {
    let mut r = Replayer::new(messages, state, options);
    for e in events {
        if let Err(err) = r.push(e) {
            return r.finish(Some(err));
        }
    }
    r.finish(None)
}

/// The event object of a plain delta, as parsing its text gives it (members in the
/// writers' order: no stage reads the order).
fn delta_event(d: &Delta<'_>) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String(d.kind.name().into()));
    if let Some(id) = &d.id {
        let key = if matches!(d.kind, EventType::ToolCallArgs | EventType::ToolCallChunk) { "toolCallId" } else { "messageId" };
        m.insert(key.into(), Value::String(id.to_string()));
    }
    m.insert("delta".into(), Value::String(d.delta.to_string()));
    Value::Object(m)
}

/// The explicit event a chunk kind expands to.
/// The kind and id a plain delta event (`kind`, `id`: [`Delta`]) is applied as when the
/// stages before the reducer pass it unchanged: a CONTENT / ARGS event with no chunk
/// stream pending (which it would close), or a chunk that merely continues a pending
/// stream ([`ChunkExpander::continued`]: as that stream's CONTENT / ARGS). `None`: the
/// general path decides. The one decision for every plain delta path.
#[inline(always)]
fn plain_target<'a>(expander: &'a Option<ChunkExpander>, kind: EventType, id: Option<&'a str>) -> Option<(EventType, &'a str)> {
    match (kind, expander) {
        (EventType::TextMessageChunk | EventType::ToolCallChunk | EventType::ReasoningMessageChunk, Some(x)) => {
            Some((content_of(kind), x.continued(kind, id)?))
        }
        (EventType::TextMessageContent | EventType::ReasoningMessageContent | EventType::ToolCallArgs, x) if !x.as_ref().is_some_and(ChunkExpander::has_pending) => {
            Some((kind, id?))
        }
        _ => None,
    }
}

fn content_of(chunk: EventType) -> EventType {
    match chunk {
        EventType::TextMessageChunk => EventType::TextMessageContent,
        EventType::ToolCallChunk => EventType::ToolCallArgs,
        _ => EventType::ReasoningMessageContent,
    }
}

impl<S: State> std::fmt::Debug for Replayer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replayer").field("index", &self.index).field("applier", &self.applier).finish_non_exhaustive()
    }
}

/// Replay an SSE log (bytes in, messages and state out): every frame's data is one event.
pub fn replay_sse(log: &[u8], messages: Vec<Value>, state: Value, options: ReplayOptions) -> Replay {
    let mut r = Replayer::new(messages, state, options);
    let mut error: Option<StreamError> = None;
    let mut parser = SseParser::new(DEFAULT_MAX_BUFFER.max(log.len()));
    let mut sink = |f: crate::sse::Frame<'_>| {
        if error.is_none() {
            if let Err(e) = r.push_json(f.data) {
                error = Some(e);
            }
        }
    };
    // The buffer limit is the whole log, so framing cannot fail.
    let _ = parser.feed(log, &mut sink).and_then(|_| parser.finish(&mut sink));
    r.finish(error)
}

/// Replay several SSE logs, each from no messages and an empty state, on scoped threads
/// (at most `threads` at once; 0 means the machine's parallelism). Results are in input
/// order.
pub fn replay_sse_many(logs: &[&[u8]], options: ReplayOptions, threads: usize) -> Vec<Replay> {
    parallel_map(logs, threads, |log| replay_sse(log, Vec::new(), empty_state(), options))
}

/// Replay a recorded log of any format (SSE, length-prefixed protobuf or JSON Lines, gzip or not;
/// `format: None` detects it) read through the one log reader ([`crate::log`]) in
/// constant memory, on this thread. A log that cannot be read (unknown format, a bad or
/// truncated frame, an I/O error) ends the replay with a `Decode` error at the event
/// where it stopped.
pub fn replay_log<R: std::io::Read + Send, S: State>(
    reader: R,
    format: Option<crate::log::Format>,
    messages: Vec<Value>,
    state: S,
    options: ReplayOptions,
) -> Replay<S> {
    let mut r = Replayer::new(messages, state, options);
    let mut read = 0usize;
    let outcome = crate::log::LogReader::open(reader, format)
        .map_err(Stop::Log)
        .and_then(|log| log.for_each_ahead(&crate::log::Limits::default(), &mut Chunks { r: &mut r, read: &mut read }));
    r.finish_log(outcome.err(), read)
}

/// A replay's reader ahead for the bytes framed ([`replay_log`], [`replay_log_bytes`]): a
/// whole log held in memory or each chunk read, its frames read where they lie
/// ([`ReadsAhead`]).
struct Chunks<'a, S: State> {
    r: &'a mut Replayer<S>,
    read: &'a mut usize,
}

impl<S: State> crate::log::ChunkAhead<Stop> for Chunks<'_, S> {
    type Rows<'c>
        = ReadsAhead<'c, S>
    where
        Self: 'c;
    #[inline(always)]
    fn rows<'c>(&'c mut self, chunk: &'c [u8]) -> ReadsAhead<'c, S> {
        ReadsAhead::new(self.r, self.read, chunk)
    }
}

/// [`replay_log`] of a log held in memory: a plain log is framed and read where it lies,
/// not copied through a reader's chunks; a gzip one chunk by chunk as [`replay_log`]
/// reads it (`log::for_each_in_bytes_ahead`). The same outcome.
pub fn replay_log_bytes<S: State>(
    data: &[u8],
    format: Option<crate::log::Format>,
    messages: Vec<Value>,
    state: S,
    options: ReplayOptions,
) -> Replay<S> {
    let mut r = Replayer::new(messages, state, options);
    let mut read = 0usize;
    let outcome = crate::log::for_each_in_bytes_ahead(data, format, &crate::log::Limits::default(), &mut Chunks { r: &mut r, read: &mut read });
    r.finish_log(outcome.err(), read)
}

/// A replay of an SSE log ahead of its framer's line search: a frame in the form of the
/// last plain delta (most frames of a token stream) is measured by the delta's reader,
/// which then reads it without a second scan; every other frame is read as usual.
struct ReadsAhead<'d, S: State> {
    r: &'d mut Replayer<S>,
    /// The events read, counted across chunks.
    read: &'d mut usize,
    /// Whether the delta `end` last measured holds escapes.
    escaped: bool,
    /// The address of the last payload `end` found in no form of a delta (its reader then
    /// does not look again).
    declined: usize,
    /// The log, its text when it is all UTF-8, and whether it holds no character of the
    /// kept range.
    data: &'d [u8],
    text: Option<&'d str>,
    no_kept_range: bool,
    /// A delta `end` decoded onto the reducer's held string (its length before): applied
    /// when the framer takes that frame next (`taken`), cut back otherwise.
    appended: Option<usize>,
}

impl<'d, S: State> ReadsAhead<'d, S> {
    /// The reader of the frames in `data` (a whole log, or a chunk of one).
    fn new(r: &'d mut Replayer<S>, read: &'d mut usize, data: &'d [u8]) -> Self {
        // The bytes checked once (SIMD, a fraction of an instruction a byte) to be UTF-8
        // and for characters of the kept range: their events' readers then take their
        // text as it is, without checks of their own.
        let text = utf8_whole_chars(data);
        // (a log of many `\u` escapes is checked event by event: one in 256 bytes at most)
        let no_kept_range = text.is_some() && !super::js::may_hold_kept_range_within(data, data.len() / 256);
        ReadsAhead { r, read, escaped: false, declined: 0, data, text, no_kept_range, appended: None }
    }

    /// What is known of `payload` when it is a slice of the log and the log is all UTF-8.
    #[inline(always)]
    fn known(&self, payload: &[u8]) -> Option<Known<'d>> {
        let start = (payload.as_ptr() as usize).checked_sub(self.data.as_ptr() as usize)?;
        let text = self.text?.get(start..start.checked_add(payload.len())?)?;
        Some(Known { text, no_kept_range: self.no_kept_range })
    }

    /// A delta `end` appended and the framer did not take: cut back.
    #[inline(always)]
    fn undo(&mut self) {
        if let Some(len) = self.appended.take() {
            self.r.applier.cut_held(len);
        }
    }
}

/// A delta appended ahead that no frame took is cut back when the reader is done (at the
/// end of its chunk: the frame comes whole to the next chunk's reader).
impl<S: State> Drop for ReadsAhead<'_, S> {
    fn drop(&mut self) {
        self.undo();
    }
}

/// `data` as text when it is UTF-8, less a character cut at its end (a chunk of a log
/// may end inside one; that frame is read again whole from the next chunk).
fn utf8_whole_chars(data: &[u8]) -> Option<&str> {
    match simdutf8::compat::from_utf8(data) {
        Ok(text) => Some(text),
        Err(e) if e.error_len().is_none() => std::str::from_utf8(&data[..e.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

impl<S: State> crate::log::ReadAhead<Stop> for ReadsAhead<'_, S> {
    #[inline(always)]
    fn end(&mut self, rest: &[u8]) -> Option<usize> {
        self.undo();
        // (a limit below one level refuses every event: `Reader::read`)
        if self.r.reader.max_depth == 0 {
            return None;
        }
        // A token stream's next delta to the string the reducer holds, decoded there as
        // its end is found (a slice of the log, which is all UTF-8).
        let start = (rest.as_ptr() as usize).checked_sub(self.data.as_ptr() as usize);
        if let Some(text) = self.text.zip(start).and_then(|(text, start)| text.get(start..)) {
            if let Some((n, len)) = self.r.end_onto_held(rest, text, self.no_kept_range) {
                self.appended = Some(len);
                return Some(n);
            }
        }
        match self.r.reader.deltas.end(rest) {
            Some((n, escaped)) => {
                self.escaped = escaped;
                Some(n)
            }
            None => {
                self.declined = rest.as_ptr() as usize;
                None
            }
        }
    }
    #[inline(always)]
    fn taken(&mut self, ev: crate::log::Event<'_>) -> Result<(), Stop> {
        *self.read += 1;
        if self.appended.take().is_some() {
            self.r.applier.took_held();
            self.r.index += 1;
            return Ok(());
        }
        let known = self.known(ev.json);
        // (a token stream's deltas, one after another, to the string the reducer holds)
        let read = match self.r.reader.deltas.repeat_ended_raw(ev.json, known, self.escaped) {
            Some(d) if self.r.push_held(&d) => return Ok(()),
            Some(d) => match d.decode() {
                Some(d) => Read::Delta(d),
                None => self.r.reader.read(ev.json, known, true),
            },
            None => self.r.reader.read_ended(ev.json, known, self.escaped),
        };
        self.r.push_read(read, ev.json, known).map(|_| ()).map_err(Stop::Stream)
    }
    #[inline(always)]
    fn event(&mut self, ev: crate::log::Event<'_>) -> Result<(), Stop> {
        self.undo();
        *self.read += 1;
        let known = self.known(ev.json);
        // (a payload `end` found in no form is not looked at again)
        let formed = ev.json.as_ptr() as usize != std::mem::take(&mut self.declined);
        let read = self.r.reader.read(ev.json, known, formed);
        self.r.push_read(read, ev.json, known).map(|_| ()).map_err(Stop::Stream)
    }
}

/// Why a log replay stopped.
enum Stop {
    Log(crate::log::LogError),
    Stream(StreamError),
}

impl From<crate::log::LogError> for Stop {
    fn from(e: crate::log::LogError) -> Self {
        Stop::Log(e)
    }
}

impl Stop {
    /// The replay's error, `read` events into the log.
    fn at(self, read: usize) -> StreamError {
        match self {
            Stop::Stream(e) => e,
            Stop::Log(e) => StreamError { index: read, ..StreamError::new(super::Stage::Decode, e.to_string()) },
        }
    }
}

/// [`replay_log`] of several log files (`format: None` detects each), each from no messages
/// and an empty state, on scoped threads as [`replay_sse_many`]: a log a thread. Results
/// are in input order. `finish` turns each log's replay into the result on the thread that
/// replayed it.
pub fn replay_log_files<S: State + From<Value>, U: Send>(
    paths: &[std::path::PathBuf],
    format: Option<crate::log::Format>,
    options: ReplayOptions,
    threads: usize,
    finish: impl Fn(Replay<S>) -> U + Sync,
) -> Vec<U> {
    parallel_map(paths, threads, |path| finish(replay_log_file(path, format, options)))
}

/// [`replay_log_files`], each result handed to `each` (with its index in `paths`) on the
/// calling thread as soon as its log is done, in the order they finish, while the other
/// logs are still replayed: the caller's work on a result (writing it out) overlaps the
/// replays instead of following all of them.
pub fn replay_log_files_each<S: State + From<Value>, U: Send>(
    paths: &[std::path::PathBuf],
    format: Option<crate::log::Format>,
    options: ReplayOptions,
    threads: usize,
    finish: impl Fn(Replay<S>) -> U + Sync,
    each: impl FnMut(usize, U),
) {
    parallel_each(paths, threads, |path| finish(replay_log_file(path, format, options)), each)
}

/// One log file of [`replay_log_files`].
fn replay_log_file<S: State + From<Value>>(path: &std::path::Path, format: Option<crate::log::Format>, options: ReplayOptions) -> Replay<S> {
    match std::fs::File::open(path) {
        Ok(f) => replay_log(std::io::BufReader::new(f), format, Vec::new(), S::from(empty_state()), options),
        Err(e) => {
            let error = StreamError::new(super::Stage::Decode, format!("{}: {e}", path.display()));
            Replay { log_error: Some(LogStop::Open(e)), ..Replayer::new(Vec::new(), S::from(empty_state()), options).finish(Some(error)) }
        }
    }
}

/// A thread count, 0 meaning the machine's parallelism.
fn resolve_threads(threads: usize) -> usize {
    match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// `f` over `items` on scoped threads (at most `threads`; 0: the machine's parallelism),
/// results in input order.
fn parallel_map<T: Sync, U: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let mut slots: Vec<Option<U>> = items.iter().map(|_| None).collect();
    parallel_each(items, threads, f, |i, out| slots[i] = Some(out));
    slots.into_iter().map(|s| s.expect("every item done")).collect()
}

/// `f` over `items` on scoped threads (at most `threads`; 0: the machine's parallelism),
/// each result handed to `each` with its index on the calling thread as it comes (in the
/// order the items finish). Every item is done before this returns.
fn parallel_each<T: Sync, U: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> U + Sync, mut each: impl FnMut(usize, U)) {
    let threads = resolve_threads(threads);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (done, results) = std::sync::mpsc::channel::<(usize, U)>();
    let work = |done: std::sync::mpsc::Sender<(usize, U)>| loop {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let Some(item) = items.get(i) else { break };
        // (the receiver lives until every sender is gone: sending cannot fail)
        let _ = done.send((i, f(item)));
    };
    let work = &work;
    std::thread::scope(|scope| {
        for _ in 0..threads.min(items.len()) {
            let sender = done.clone();
            // No thread to be had (a process at its thread limit): this thread does the rest.
            if std::thread::Builder::new().stack_size(crate::pipeline::STACK).spawn_scoped(scope, move || work(sender)).is_err() {
                work(done.clone());
                break;
            }
        }
        // (the workers hold the only senders now: the loop ends when the last one is done)
        drop(done);
        for (i, out) in results {
            each(i, out);
        }
    });
}

/// An empty object: the default state.
pub fn empty_state() -> Value {
    Value::Object(Map::new())
}
