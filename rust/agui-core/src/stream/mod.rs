//! Stream semantics of the reference TypeScript client (`@ag-ui/client` 1.0): what a
//! consumer does with a decoded event stream or a recorded log.
//!
//! Each stage is an incremental state machine (push one event, get its result) with a
//! whole-sequence helper on top, so a binding can drive either a live stream or a log:
//! - [`chunks::ChunkExpander`]: `*_CHUNK` shorthand -> explicit START / CONTENT / END
//!   (`transformChunks`);
//! - [`verify::EventVerifier`]: the sequence rules R01-R31 (`verifyEvents`);
//! - [`apply::EventApplier`]: events -> messages and state (`defaultApplyEvents`);
//! - [`compact::compact_events`], the reference `compactEvents`;
//! - [`legacy`]: the 0.x compatibility boundary (THINKING_*, binary content parts);
//! - [`replay`]: the stages chained (expand, optionally verify, apply) over events,
//!   JSON payloads or an SSE log.
//!
//! Events are `serde_json::Value` objects: unknown members ride along untouched. When a
//! replay reads JSON text, the hot events (text / reasoning / argument deltas, and chunks
//! that merely continue an untagged stream, in their plain form) are read into a
//! borrowed [`event::Delta`] instead and go through the verifier and the reducer as
//! (kind, id, delta), by the same checks and appends as the general path: measured on a
//! generated 100k-event log, that halves the per-event cost (`python -m benches -k replay`).
//! The other common events in their plain form (starts, ends, tool results, run events,
//! snapshots) are read into an [`event::Plain`], which the run outcome and the reducer read
//! through the same code as an object ([`event::Members`]).
//!
//! Limits: JSON text is parsed with the project's depth limit (`limits::parse_value`,
//! default `limits::DEFAULT_MAX_DEPTH`, `ReplayOptions::max_depth` and the `*_limited`
//! functions to change it); deeper input is a decode error, never a crash.

pub mod apply;
pub mod chunks;
pub mod client;
pub mod compact;
pub mod event;
pub mod legacy;
mod messages;
pub mod replay;
pub mod schema;
pub mod verify;

mod js;

pub use js::{check_int_digits, has_kept_surrogate, json_items, json_list, json_text, kept_surrogate, parse_json, parse_json_limited, wtf8_with_surrogates};

use std::fmt;

pub use apply::{Change, EventApplier, State};
pub use messages::{Fields, Member, Message};
pub use chunks::{expand_chunks, ChunkExpander};
pub use compact::{compact_events, compact_events_limited, compact_events_within};
pub use event::{parse_event, parse_event_limited, EventType};
pub use replay::{
    empty_state, replay, replay_log, replay_log_files, replay_log_files_each, replay_log_bytes, replay_sse, replay_sse_many, LogStop, Replay,
    ReplayOptions, Replayer, RunOutcome,
};
pub use schema::{check_event, check_run_input, Checked};
pub use verify::{verify_events, EventVerifier};

/// Which stage rejected an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The event itself is unreadable (not JSON, not an object).
    Decode,
    /// A known field holds a malformed value (the schema stage).
    Schema,
    /// Chunk expansion (`transformChunks` throws).
    Chunks,
    /// Sequence verification (`verifyEvents` raises an `AGUIError`).
    Verify,
    /// The reducer (`defaultApplyEvents` throws: chunk events, malformed structures).
    Apply,
    /// The legacy compatibility layer.
    Legacy,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Decode => "decode",
            Stage::Schema => "schema",
            Stage::Chunks => "chunks",
            Stage::Verify => "verify",
            Stage::Apply => "apply",
            Stage::Legacy => "legacy",
        }
    }

    /// The kind of an error of this stage.
    pub fn kind(self) -> crate::kind::Kind {
        use crate::kind::Kind;
        match self {
            Stage::Decode => Kind::InvalidJson,
            Stage::Schema => Kind::EventValidation,
            Stage::Verify => Kind::Verification,
            _ => Kind::Stream,
        }
    }
}

/// The one error type of the stream stages. `index` is the position of the offending
/// event in the input of the stage that failed (for a pipeline: in the caller's input).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamError {
    pub stage: Stage,
    /// Verification rule id (`"R12"`) when `stage == Verify`.
    pub rule: Option<&'static str>,
    pub index: usize,
    /// The event's type (`"TEXT_MESSAGE_CONTENT"`), empty when it has none.
    pub event_type: String,
    /// Ids involved (message / tool call / step / subagent ids), as written in the event.
    pub ids: Vec<String>,
    pub message: String,
    /// The offending field (`$.delta`) when `stage == Schema`.
    pub field: Option<Box<str>>,
}

impl StreamError {
    pub(crate) fn new(stage: Stage, message: impl Into<String>) -> Self {
        StreamError { stage, rule: None, index: 0, event_type: String::new(), ids: Vec::new(), message: message.into(), field: None }
    }
    pub(crate) fn rule(mut self, rule: &'static str) -> Self {
        self.rule = Some(rule);
        self
    }
    pub(crate) fn ids<I: IntoIterator<Item = String>>(mut self, ids: I) -> Self {
        self.ids.extend(ids);
        self
    }
    pub(crate) fn at(mut self, index: usize, event: &serde_json::Value) -> Self {
        self.index = index;
        if let Some(t) = event.get("type").and_then(|t| t.as_str()) {
            self.event_type = t.to_string();
        }
        self
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {}", self.index)?;
        if !self.event_type.is_empty() {
            write!(f, " ({})", self.event_type)?;
        }
        if let Some(rule) = self.rule {
            write!(f, ": {rule}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for StreamError {}

/// A warning the reference prints (`console.warn`), attributed to an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What kind of thing warned.
    pub kind: WarningKind,
    /// The input event it is about (the caller's position).
    pub index: usize,
    /// Ids involved (message, tool call ids), when the warning names some.
    pub ids: Vec<String>,
    /// Where in the event the material it is about was (`/delta/0`), when it names a place.
    pub path: Option<String>,
    pub message: String,
}

impl Warning {
    pub fn new(kind: WarningKind, index: usize, message: String) -> Self {
        Warning { kind, index, ids: Vec::new(), path: None, message }
    }
}

/// Which stage warned (the `kind` of a [`Warning`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// The 0.x compatibility boundary and the era shims: a translation or a drop.
    Compat,
    /// The schema stage: unrecognised material stripped, an event dropped.
    Schema,
    /// Chunk expansion.
    Chunks,
    /// The reducer (a patch that failed, an id clash).
    Apply,
    /// The producer declared a protocol version this client does not speak.
    Version,
    /// The transport: frames skipped (a protobuf variant of a later protocol).
    Transport,
    /// The run input a client sends.
    Request,
}

impl WarningKind {
    pub fn name(self) -> &'static str {
        match self {
            WarningKind::Compat => "compat",
            WarningKind::Schema => "schema",
            WarningKind::Chunks => "chunks",
            WarningKind::Apply => "apply",
            WarningKind::Version => "version",
            WarningKind::Transport => "transport",
            WarningKind::Request => "request",
        }
    }
}

/// The limits of the patches one stream applies (state and activity deltas, the state
/// of a compaction): nesting, what one patch may build, and what the `copy` operations of
/// all of them may copy together (`copies`, what is left of `max_bytes`: a log of many
/// small patches that each copy the state would otherwise grow it without end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchLimits {
    pub max_depth: usize,
    pub max_bytes: usize,
    pub copies: usize,
}

impl PatchLimits {
    pub fn new(max_depth: usize, max_bytes: usize) -> Self {
        PatchLimits { max_depth, max_bytes, copies: max_bytes }
    }

    /// The engine's options: the reference client's dialect (fast-json-patch) within these
    /// limits; `max_depth` the depth its values may take.
    pub fn options(&self, max_depth: usize) -> crate::patch::Options {
        crate::patch::Options::fast_json_patch(max_depth, self.max_bytes)
    }

    /// A patcher of these limits (its copy allowance what is left of the stream's).
    pub fn patcher<D: crate::patch::engine::Document>(&self, max_depth: usize) -> crate::patch::engine::Patcher<D> {
        crate::patch::engine::Patcher::new(self.options(max_depth)).with_copy_allowance(self.copies, self.max_bytes)
    }
}

impl Default for PatchLimits {
    fn default() -> Self {
        PatchLimits::new(crate::limits::DEFAULT_MAX_DEPTH, crate::limits::DEFAULT_MAX_PATCH_BYTES)
    }
}

/// The one door from the stream stages to the JSON Patch engine (`STATE_DELTA`,
/// `ACTIVITY_DELTA`, compaction): the patch module's fast-json-patch dialect, because the
/// reference client applies deltas with fast-json-patch (`applyPatch(doc, patch, true, false)`),
/// within the stream's [`PatchLimits`] (whose copy allowance it spends).
/// The patch is given away: its values move into the document.
pub(crate) fn patch_json(doc: &mut serde_json::Value, patch: serde_json::Value, limits: &mut PatchLimits) -> Result<(), crate::patch::PatchError> {
    patch_ops(doc, crate::patch::parse_patch_owned(patch)?, limits)
}

/// [`patch_json`] of operations already read.
pub(crate) fn patch_ops<V: crate::patch::OwnedJson>(doc: &mut V, ops: Vec<crate::patch::Operation>, limits: &mut PatchLimits) -> Result<(), crate::patch::PatchError> {
    let mut r = crate::patch::Replayer::with_copy_allowance(doc, &limits.options(limits.max_depth), limits.copies, limits.max_bytes);
    let out = r.apply_owned(ops);
    limits.copies = r.copy_allowance();
    out
}

#[cfg(test)]
mod tests {
    use super::Stage;
    use crate::kind::Kind;

    #[test]
    fn each_stage_has_its_kind() {
        assert_eq!(Stage::Decode.kind(), Kind::InvalidJson);
        assert_eq!(Stage::Verify.kind(), Kind::Verification);
        assert_eq!(Stage::Schema.kind(), Kind::EventValidation);
        for s in [Stage::Chunks, Stage::Apply, Stage::Legacy] {
            assert_eq!(s.kind(), Kind::Stream);
        }
    }
}
