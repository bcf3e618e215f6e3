//! The stages chained as the reference client runs them on a live stream: chunk
//! expansion, optional verification, the reducer. Push events one at a time
//! ([`Replayer`]), or replay a whole sequence / SSE log in one call.

use super::apply::{Change, EventApplier, State};
use super::chunks::ChunkExpander;
use super::event::{parse_event_limited, plain_state_delta, Delta, EventType, Lead};
use super::legacy::CompatibilityBoundary;
use super::verify::EventVerifier;
use super::{StreamError, Warning};
use crate::sse::{SseParser, DEFAULT_MAX_BUFFER};
use serde_json::{Map, Value};

/// Which stages run. The default is the reference client's inbound pipeline without
/// verification: compatibility boundary, chunk expansion, reducer.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// Run the 0.x compatibility boundary first (`THINKING_*`, legacy nulls, binary parts).
    pub compat: bool,
    /// Expand `*_CHUNK` events (the reducer rejects them otherwise).
    pub expand: bool,
    /// Verify the sequence (R01-R31) before applying each event.
    pub verify: bool,
    /// Deepest nesting of an event's JSON (the event object included) and of the values
    /// its patches build (`limits::DEFAULT_MAX_DEPTH`).
    pub max_depth: usize,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions { compat: true, expand: true, verify: false, max_depth: crate::limits::DEFAULT_MAX_DEPTH }
    }
}

/// The outcome of a whole replay: final messages and state, what the reducer warned,
/// and the error that stopped it (events before it are applied).
#[derive(Debug)]
pub struct Replay<S = Value> {
    pub messages: Vec<Value>,
    pub state: S,
    pub pending_interrupts: Vec<Value>,
    pub warnings: Vec<Warning>,
    pub error: Option<StreamError>,
    /// Number of input events consumed (including the failing one).
    pub events: usize,
}

/// Incremental pipeline: expand, verify, apply (the state: a JSON value, or a binding's
/// own [`State`]).
pub struct Replayer<S = Value> {
    boundary: Option<CompatibilityBoundary>,
    expander: Option<ChunkExpander>,
    verifier: Option<EventVerifier>,
    applier: EventApplier<S>,
    index: usize,
    warnings: Vec<Warning>,
    scratch: Vec<Value>,
    max_depth: usize,
    /// The pointers of plain `STATE_DELTA` patches, kept from event to event.
    pointers: crate::patch::cache::PointerCache,
}

impl<S: State> Replayer<S> {
    pub fn new(messages: Vec<Value>, state: S, options: ReplayOptions) -> Self {
        Replayer {
            boundary: options.compat.then(CompatibilityBoundary::default),
            expander: options.expand.then(ChunkExpander::new),
            verifier: options.verify.then(EventVerifier::new),
            applier: EventApplier::new(messages, state).with_max_depth(options.max_depth),
            index: 0,
            warnings: Vec::new(),
            scratch: Vec::new(),
            max_depth: options.max_depth,
            pointers: Default::default(),
        }
    }

    /// Push one input event; returns what it changed (merged over the events it expanded
    /// to). The error's `index` is the input event's position.
    pub fn push(&mut self, event: Value) -> Result<Change, StreamError> {
        let index = self.index;
        self.index += 1;
        let relabel = |mut e: StreamError| {
            e.index = index;
            e
        };
        let event = match &mut self.boundary {
            Some(b) => {
                let e = b.convert(event);
                for w in b.take_warnings() {
                    self.warnings.push(Warning { index, message: w });
                }
                e
            }
            None => event,
        };
        let mut batch = std::mem::take(&mut self.scratch);
        match &mut self.expander {
            Some(x) => {
                let r = x.push_into(event, &mut batch);
                for w in x.take_warnings() {
                    self.warnings.push(Warning { index, message: w });
                }
                r.map_err(relabel)?
            }
            None => batch.push(event),
        }
        let mut total = Change::default();
        let mut result = Ok(());
        for e in batch.drain(..) {
            if let Some(v) = &mut self.verifier {
                if let Err(err) = v.push(&e) {
                    result = Err(relabel(err));
                    break;
                }
            }
            match self.applier.apply_owned(e) {
                Ok(c) => {
                    if let Some(w) = c.warning {
                        self.warnings.push(Warning { index, message: w });
                    }
                    total.messages |= c.messages;
                    total.state |= c.state;
                    total.interrupts |= c.interrupts;
                    if c.message.is_some() {
                        total.message = c.message;
                    }
                }
                Err(err) => {
                    result = Err(relabel(err));
                    break;
                }
            }
        }
        batch.clear();
        self.scratch = batch;
        result.map(|()| total)
    }

    /// Push one event given as JSON text.
    pub fn push_json(&mut self, payload: &[u8]) -> Result<Change, StreamError> {
        // A plain STATE_DELTA (most of a state stream) goes to the reducer without an event
        // object: the boundary never changes it, and the expander would only close a
        // pending chunk stream; with verification on it takes the general path.
        let lead = Lead::of(payload);
        if matches!(lead, Lead::StateDelta | Lead::Unknown) && self.takes_state_delta_directly() {
            if let Some(ops) = plain_state_delta(payload, self.max_depth, &mut self.pointers) {
                let index = self.index;
                self.index += 1;
                let c = self.applier.apply_state_ops(ops);
                if let Some(w) = &c.warning {
                    self.warnings.push(Warning { index, message: w.clone() });
                }
                return Ok(Change { warning: None, ..c });
            }
        }
        if let Some(d) = matches!(lead, Lead::Delta | Lead::Unknown).then(|| Delta::parse(payload)).flatten() {
            if let Some(r) = self.push_plain(d.kind, d.id.as_deref(), &d.delta) {
                return r;
            }
        }
        match parse_event_limited(payload, self.max_depth) {
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
        let Replayer { expander, verifier, applier, .. } = self;
        let (kind, id) = match (kind, expander) {
            (EventType::TextMessageChunk | EventType::ToolCallChunk | EventType::ReasoningMessageChunk, Some(x)) => {
                (content_of(kind), x.continues_plain(kind, id)?)
            }
            (EventType::TextMessageContent | EventType::ReasoningMessageContent | EventType::ToolCallArgs, x)
                if !x.as_ref().is_some_and(ChunkExpander::has_pending) =>
            {
                (kind, id?)
            }
            _ => return None,
        };
        let index = self.index;
        let relabel = |mut e: StreamError| {
            e.index = index;
            e
        };
        let result = match verifier {
            Some(v) => v.push_delta(kind, id).map_err(relabel),
            None => Ok(()),
        }
        .and_then(|()| applier.apply_delta(kind, id, delta).map_err(relabel));
        self.index += 1;
        Some(result.map(|c| {
            if let Some(w) = &c.warning {
                self.warnings.push(Warning { index, message: w.clone() });
            }
            Change { warning: None, ..c }
        }))
    }

    /// Whether a `STATE_DELTA` may go straight to the state, past the other stages: the
    /// boundary never changes one, the expander would only close a pending chunk stream,
    /// the verifier needs the event. The one decision for plain deltas read from JSON text
    /// and for a binding's deltas in its own form ([`push_state_with`](Self::push_state_with)).
    pub fn takes_state_delta_directly(&self) -> bool {
        self.verifier.is_none() && !self.expander.as_ref().is_some_and(ChunkExpander::has_pending)
    }

    /// A `STATE_DELTA` the caller applies to the state itself (see
    /// [`EventApplier::apply_state_with`]); `None` (nothing applied, the event still to
    /// push) when the stages need the event or `apply` declined it.
    pub fn push_state_with(&mut self, apply: impl FnOnce(&mut S) -> bool) -> Option<Change> {
        if !self.takes_state_delta_directly() {
            return None;
        }
        let c = self.applier.apply_state_with(apply)?;
        self.index += 1;
        Some(c)
    }

    pub fn applier(&self) -> &EventApplier<S> {
        &self.applier
    }

    pub fn state_mut(&mut self) -> &mut S {
        self.applier.state_mut()
    }

    /// Warnings so far, drained.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    pub fn finish(self, error: Option<StreamError>) -> Replay<S> {
        let events = self.index;
        let (messages, state, pending_interrupts) = self.applier.into_parts();
        Replay { messages, state, pending_interrupts, warnings: self.warnings, error, events }
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

/// The explicit event a chunk kind expands to.
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

/// Replay a recorded log of either format (SSE or length-prefixed protobuf, gzip or not;
/// `format: None` detects it) read through the one log reader ([`crate::log`]) in
/// constant memory. A log that cannot be read (unknown format, a bad or truncated frame,
/// an I/O error) ends the replay with a `Decode` error at the event where it stopped.
pub fn replay_log<R: std::io::Read + Send>(
    reader: R,
    format: Option<crate::log::Format>,
    messages: Vec<Value>,
    state: Value,
    options: ReplayOptions,
) -> Replay {
    enum Stop {
        Log(crate::log::LogError),
        Stream(StreamError),
    }
    impl From<crate::log::LogError> for Stop {
        fn from(e: crate::log::LogError) -> Self {
            Stop::Log(e)
        }
    }
    let mut r = Replayer::new(messages, state, options);
    let mut read = 0usize;
    let outcome = crate::log::LogReader::open(reader, format).map_err(Stop::Log).and_then(|log| {
        log.for_each(&crate::log::Limits::default(), |ev| {
            read += 1;
            r.push_json(ev.json).map(|_| ()).map_err(Stop::Stream)
        })
    });
    let error = match outcome {
        Ok(_) => None,
        Err(Stop::Stream(e)) => Some(e),
        Err(Stop::Log(e)) => Some(StreamError { index: read, ..StreamError::new(super::Stage::Decode, e.to_string()) }),
    };
    r.finish(error)
}

/// [`replay_log`] of several log files (`format: None` detects each), each from no messages
/// and an empty state, on scoped threads as [`replay_sse_many`]. Results are in input order.
pub fn replay_log_files(
    paths: &[std::path::PathBuf],
    format: Option<crate::log::Format>,
    options: ReplayOptions,
    threads: usize,
) -> Vec<Replay> {
    parallel_map(paths, threads, |path| match std::fs::File::open(path) {
        Ok(f) => replay_log(std::io::BufReader::new(f), format, Vec::new(), empty_state(), options),
        Err(e) => Replayer::new(Vec::new(), empty_state(), options)
            .finish(Some(StreamError::new(super::Stage::Decode, format!("{}: {e}", path.display())))),
    })
}

const WORKER_STACK: usize = 8 << 20;

/// `f` over `items` on scoped threads (at most `threads`; 0: the machine's parallelism),
/// results in input order.
fn parallel_map<T: Sync, U: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<std::sync::Mutex<Option<U>>> = items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(items.len()) {
            let work = || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let out = f(item);
                *slots[i].lock().expect("no thread panics while holding a slot") = Some(out);
            };
            // The stack of a main thread: parsing and dropping values nested up to
            // `limits::MAX_DEPTH_CAP` levels recurses that deep.
            std::thread::Builder::new().stack_size(WORKER_STACK).spawn_scoped(scope, work).expect("a worker thread");
        }
    });
    slots.iter_mut().map(|s| s.get_mut().expect("slot").take().expect("every item done")).collect()
}

/// An empty object: the default state.
pub fn empty_state() -> Value {
    Value::Object(Map::new())
}
