//! Chunk expansion: `TEXT_MESSAGE_CHUNK`, `TOOL_CALL_CHUNK` and `REASONING_MESSAGE_CHUNK`
//! become START / CONTENT (ARGS) / END as the reference `transformChunks` does.
//!
//! Pending streams are kept per lane (the chunk's `subagentRunId`; absent or null is the
//! parent lane), at most one per lane, in the order the lanes were opened.

use super::event::EventType;
use super::js::{self, defined, id_ref, strict_eq, IdRef, Ids};
use super::{Stage, StreamError};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Tool,
    Reasoning,
}

/// The names that go with each kind of chunk stream.
struct Names {
    chunk: &'static str,
    entity: &'static str,
    id_field: &'static str,
    start: &'static str,
    content: &'static str,
    end: &'static str,
}

impl Kind {
    fn names(self) -> &'static Names {
        const TEXT: Names = Names {
            chunk: "TEXT_MESSAGE_CHUNK",
            entity: "text message",
            id_field: "messageId",
            start: "TEXT_MESSAGE_START",
            content: "TEXT_MESSAGE_CONTENT",
            end: "TEXT_MESSAGE_END",
        };
        const TOOL: Names = Names {
            chunk: "TOOL_CALL_CHUNK",
            entity: "tool call",
            id_field: "toolCallId",
            start: "TOOL_CALL_START",
            content: "TOOL_CALL_ARGS",
            end: "TOOL_CALL_END",
        };
        const REASONING: Names = Names {
            chunk: "REASONING_MESSAGE_CHUNK",
            entity: "reasoning message",
            id_field: "messageId",
            start: "REASONING_MESSAGE_START",
            content: "REASONING_MESSAGE_CONTENT",
            end: "REASONING_MESSAGE_END",
        };
        match self {
            Kind::Text => &TEXT,
            Kind::Tool => &TOOL,
            Kind::Reasoning => &REASONING,
        }
    }
    fn chunk_type(self) -> &'static str {
        self.names().chunk
    }
    fn entity(self) -> &'static str {
        self.names().entity
    }
    fn id_field(self) -> &'static str {
        self.names().id_field
    }
    fn start(self) -> &'static str {
        self.names().start
    }
    fn content(self) -> &'static str {
        self.names().content
    }
    fn end(self) -> &'static str {
        self.names().end
    }
    /// Members the chunk's schema describes; anything else is carried over.
    fn described(self, key: &str) -> bool {
        matches!(key, "type" | "timestamp" | "rawEvent" | "metadata" | "subagentRunId" | "delta")
            || match self {
                Kind::Text => matches!(key, "messageId" | "role" | "name"),
                Kind::Tool => matches!(key, "toolCallId" | "toolCallName" | "parentMessageId"),
                Kind::Reasoning => key == "messageId",
            }
    }
    /// The opener fields a continuation may repeat only with the same value.
    fn opener_fields(self) -> &'static [&'static str] {
        match self {
            Kind::Text => &["role", "name"],
            Kind::Tool => &["toolCallName", "parentMessageId"],
            Kind::Reasoning => &[],
        }
    }
}

/// An open stream: its kind, id, the opener's repeatable fields (effective values; `None`
/// is absent) and the opener's `subagentRunId` as written (`Some(Null)` is kept).
#[derive(Debug, Clone)]
struct Pending {
    kind: Kind,
    id: Value,
    fields: [Option<Value>; 2],
    tag: Option<Value>,
}

/// Incremental chunk expander.
#[derive(Debug, Default)]
pub struct ChunkExpander {
    lanes: Lanes,
    warnings: Vec<String>,
    index: usize,
}

fn lane_eq(a: &Option<Value>, b: Option<&Value>) -> bool {
    strict_eq(a.as_ref(), b)
}

fn kind_slot(kind: Kind) -> usize {
    match kind {
        Kind::Text => 0,
        Kind::Tool => 1,
        Kind::Reasoning => 2,
    }
}

/// The pending streams, one a lane (the chunk's `subagentRunId`; `None` is the parent
/// agent), in lane-opening order, with the lookups chunk expansion makes in constant or
/// logarithmic time: by lane, by a kind's stream id, a kind's lanes. Lanes tagged with an
/// object or an array equal no other tag (`===`): they are never found again.
#[derive(Debug, Default)]
struct Lanes {
    /// In lane-opening order; a closed lane's slot is empty (all go when none is open).
    slots: Vec<Option<(Option<Value>, Pending)>>,
    live: usize,
    by_lane: Ids<usize>,
    by_id: [Ids<usize>; 3],
    by_kind: [std::collections::BTreeSet<usize>; 3],
}

impl Lanes {
    fn is_empty(&self) -> bool {
        self.live == 0
    }
    fn get(&self, slot: usize) -> &(Option<Value>, Pending) {
        self.slots[slot].as_ref().expect("a live slot")
    }
    /// The lane `lane`'s slot.
    fn of_lane(&self, lane: Option<&Value>) -> Option<usize> {
        self.by_lane.get(&id_ref(lane)?).copied()
    }
    /// The lane of the pending `kind` stream `id`.
    fn of_id(&self, kind: Kind, id: Option<&Value>) -> Option<usize> {
        self.by_id[kind_slot(kind)].get(&id_ref(id)?).copied()
    }
    fn of_id_str(&self, kind: Kind, id: &str) -> Option<usize> {
        self.by_id[kind_slot(kind)].get(&IdRef::Str(id)).copied()
    }
    /// The lanes with a pending `kind` stream, in lane-opening order.
    fn of_kind(&self, kind: Kind) -> &std::collections::BTreeSet<usize> {
        &self.by_kind[kind_slot(kind)]
    }
    fn push(&mut self, lane: Option<Value>, pending: Pending) {
        let slot = self.slots.len();
        if let Some(k) = id_ref(lane.as_ref()) {
            *self.by_lane.entry(&k) = slot;
        }
        if let Some(k) = id_ref(Some(&pending.id)) {
            *self.by_id[kind_slot(pending.kind)].entry(&k) = slot;
        }
        self.by_kind[kind_slot(pending.kind)].insert(slot);
        self.slots.push(Some((lane, pending)));
        self.live += 1;
    }
    fn remove(&mut self, slot: usize) -> (Option<Value>, Pending) {
        let (lane, pending) = self.slots[slot].take().expect("a live slot");
        if let Some(k) = id_ref(lane.as_ref()) {
            self.by_lane.remove(&k);
        }
        if let Some(k) = id_ref(Some(&pending.id)) {
            self.by_id[kind_slot(pending.kind)].remove(&k);
        }
        self.by_kind[kind_slot(pending.kind)].remove(&slot);
        self.live -= 1;
        if self.live == 0 {
            self.slots.clear();
        }
        (lane, pending)
    }
    fn drain(&mut self) -> impl Iterator<Item = (Option<Value>, Pending)> {
        self.by_lane.clear();
        self.by_id.iter_mut().for_each(Ids::clear);
        self.by_kind.iter_mut().for_each(std::collections::BTreeSet::clear);
        self.live = 0;
        std::mem::take(&mut self.slots).into_iter().flatten()
    }
}

impl ChunkExpander {
    pub fn new() -> Self {
        Self::default()
    }

    /// Warnings the reference would print, drained.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Whether a chunk stream is pending (no END is synthesised at end of input).
    pub fn has_pending(&self) -> bool {
        !self.lanes.is_empty()
    }

    /// For a chunk carrying only a string `delta` and an optional id (no tag, metadata or
    /// other member), of kind `chunk` (a `*_CHUNK` type): the id of the stream it merely
    /// continues, when that stream is pending in the parent lane and was opened untagged.
    /// The chunk then expands to exactly the plain CONTENT / ARGS event for that id, and
    /// the expander's state does not change (a replayer that applies that event itself
    /// need not push the chunk here; it numbers errors itself). `None`: take the general
    /// path.
    pub fn continued(&self, chunk: EventType, id: Option<&str>) -> Option<&str> {
        let kind = match chunk {
            EventType::TextMessageChunk => Kind::Text,
            EventType::ToolCallChunk => Kind::Tool,
            EventType::ReasoningMessageChunk => Kind::Reasoning,
            _ => return None,
        };
        // resolveLane for an untagged chunk: an id held by a lane stays there; no id
        // goes to the parent lane when it has this kind pending.
        let slot = match id {
            Some(id) => self.lanes.of_id_str(kind, id)?,
            None => self.lanes.of_lane(None).filter(|&s| self.lanes.get(s).1.kind == kind)?,
        };
        let (lane, pending) = self.lanes.get(slot);
        if lane.is_some() || pending.tag.is_some() {
            return None;
        }
        pending.id.as_str()
    }

    /// Expand one event into `out`. On error nothing of this event is emitted.
    pub fn push_into(&mut self, event: Value, out: &mut Vec<Value>) -> Result<(), StreamError> {
        let index = self.index;
        self.index += 1;
        let ty = EventType::of(&event);
        use EventType as E;
        match ty {
            E::TextMessageStart
            | E::TextMessageContent
            | E::TextMessageEnd
            | E::ToolCallStart
            | E::ToolCallArgs
            | E::ToolCallEnd
            | E::ToolCallResult
            | E::StateSnapshot
            | E::StateDelta
            | E::Custom
            | E::StepStarted
            | E::StepFinished
            | E::ReasoningStart
            | E::ReasoningMessageStart
            | E::ReasoningMessageContent
            | E::ReasoningMessageEnd
            | E::ReasoningEnd => {
                let lane = defined(event.get("subagentRunId")).cloned();
                self.close_lane(lane.as_ref(), out);
                out.push(event);
            }
            E::RunStarted | E::RunFinished | E::RunError | E::MessagesSnapshot => {
                self.close_all(out);
                out.push(event);
            }
            E::SubagentFinished | E::SubagentError => {
                if let Some(lane) = defined(event.get("subagentRunId")).cloned() {
                    self.close_lane(Some(&lane), out);
                }
                out.push(event);
            }
            E::TextMessageChunk | E::ToolCallChunk | E::ReasoningMessageChunk => {
                let kind = match ty {
                    E::TextMessageChunk => Kind::Text,
                    E::ToolCallChunk => Kind::Tool,
                    _ => Kind::Reasoning,
                };
                return self.chunk(kind, event, out).map_err(|mut e| {
                    e.index = index;
                    e.event_type = kind.chunk_type().to_string();
                    e
                });
            }
            // RAW, activity events, REASONING_ENCRYPTED_VALUE, SUBAGENT_STARTED, legacy and
            // unknown types close nothing.
            _ => out.push(event),
        }
        Ok(())
    }

    /// Expand one event.
    pub fn push(&mut self, event: Value) -> Result<Vec<Value>, StreamError> {
        let mut out = Vec::with_capacity(2);
        self.push_into(event, &mut out)?;
        Ok(out)
    }

    fn close_lane(&mut self, lane: Option<&Value>, out: &mut Vec<Value>) {
        if self.lanes.is_empty() {
            return;
        }
        if let Some(slot) = self.lanes.of_lane(lane) {
            let (_, pending) = self.lanes.remove(slot);
            out.push(end_event(&pending));
        }
    }

    fn close_all(&mut self, out: &mut Vec<Value>) {
        for (_, pending) in self.lanes.drain() {
            out.push(end_event(&pending));
        }
    }

    fn lane_error(msg: String, ids: Vec<String>) -> StreamError {
        StreamError::new(Stage::Chunks, msg).ids(ids)
    }

    fn resolve_lane(&self, kind: Kind, id: Option<&Value>, tag: Option<&Value>) -> Result<Option<Value>, StreamError> {
        if let Some(id) = id {
            if let Some((owner, _)) = self.lanes.of_id(kind, Some(id)).map(|s| self.lanes.get(s)) {
                if tag.is_some() && !lane_eq(owner, tag) {
                    return Err(Self::lane_error(
                        format!(
                            "Cannot continue {} '{}': chunk subagentRunId '{}' does not match the open stream's subagent '{}'.",
                            kind.entity(),
                            js::show(Some(id)),
                            js::show(tag),
                            owner.as_ref().map_or("(the parent agent)".to_string(), |o| js::show(Some(o)))
                        ),
                        vec![js::show(Some(id))],
                    ));
                }
                return Ok(owner.clone());
            }
            return Ok(tag.cloned());
        }
        if tag.is_some() {
            return Ok(tag.cloned());
        }
        if self.lanes.of_lane(None).is_some_and(|s| self.lanes.get(s).1.kind == kind) {
            return Ok(None);
        }
        let candidates = self.lanes.of_kind(kind);
        match (candidates.first(), candidates.len().saturating_sub(1)) {
            (None, _) => Ok(None),
            (Some(&s), 0) => Ok(self.lanes.get(s).0.clone()),
            (Some(_), more) => Err(Self::lane_error(
                format!(
                    "Ambiguous {}: it carries neither a {} nor a subagentRunId, but {} lanes have an open {}. Attribute the chunk to the subagent it belongs to.",
                    kind.chunk_type(),
                    kind.id_field(),
                    more + 1,
                    kind.entity()
                ),
                vec![],
            )),
        }
    }

    fn chunk(&mut self, kind: Kind, event: Value, out: &mut Vec<Value>) -> Result<(), StreamError> {
        let Value::Object(chunk) = event else { unreachable!("EventType::of found a type member") };
        let id = chunk.get(kind.id_field());
        let raw_tag = chunk.get("subagentRunId");
        let lane = self.resolve_lane(kind, id, defined(raw_tag))?;
        let lane_pos = self.lanes.of_lane(lane.as_ref());
        let continues = lane_pos.is_some_and(|p| {
            let open = &self.lanes.get(p).1;
            open.kind == kind && id.is_none_or(|id| strict_eq(Some(&open.id), Some(id)))
        });
        let mut result: Vec<Value> = Vec::with_capacity(3);
        let (stream_id, opener_tag) = if continues {
            let open = &self.lanes.get(lane_pos.expect("continues a lane")).1;
            for (field, established) in kind.opener_fields().iter().zip(&open.fields) {
                let incoming = chunk.get(*field);
                if incoming.is_some() && !strict_eq(incoming, established.as_ref()) {
                    return Err(StreamError::new(
                        Stage::Chunks,
                        format!(
                            "Cannot continue {} '{}': chunk {field} '{}' does not match the open stream's {field} {}.",
                            kind.entity(),
                            js::show(Some(&open.id)),
                            js::show(incoming),
                            established.as_ref().map_or("(absent)".to_string(), |e| format!("'{}'", js::show(Some(e))))
                        ),
                    )
                    .ids([js::show(Some(&open.id))]));
                }
            }
            (open.id.clone(), open.tag.clone())
        } else {
            let mut closed = Vec::new();
            self.close_lane(lane.as_ref(), &mut closed);
            let Some(id) = id else {
                return Err(StreamError::new(Stage::Chunks, format!("First {} must have a {}", kind.chunk_type(), kind.id_field())));
            };
            if kind == Kind::Tool && chunk.get("toolCallName").is_none() {
                return Err(StreamError::new(Stage::Chunks, "First TOOL_CALL_CHUNK must have a toolCallName")
                    .ids([js::show(Some(id))]));
            }
            result.append(&mut closed);
            let mut start = Map::new();
            start.insert("type".into(), Value::String(kind.start().into()));
            start.insert(kind.id_field().into(), id.clone());
            let fields = match kind {
                Kind::Text => {
                    let role = chunk.get("role").cloned().unwrap_or_else(|| Value::String("assistant".into()));
                    start.insert("role".into(), role.clone());
                    if let Some(name) = chunk.get("name") {
                        start.insert("name".into(), name.clone());
                    }
                    [Some(role), chunk.get("name").cloned()]
                }
                Kind::Tool => {
                    start.insert("toolCallName".into(), chunk["toolCallName"].clone());
                    if let Some(p) = chunk.get("parentMessageId") {
                        start.insert("parentMessageId".into(), p.clone());
                    }
                    [chunk.get("toolCallName").cloned(), chunk.get("parentMessageId").cloned()]
                }
                Kind::Reasoning => {
                    start.insert("role".into(), Value::String("reasoning".into()));
                    [None, None]
                }
            };
            if let Some(tag) = raw_tag {
                start.insert("subagentRunId".into(), tag.clone());
            }
            if let Some(m) = chunk.get("metadata") {
                start.insert("metadata".into(), m.clone());
            }
            result.push(Value::Object(start));
            let pending = Pending { kind, id: id.clone(), fields, tag: raw_tag.cloned() };
            self.lanes.push(lane, pending);
            (id.clone(), raw_tag.cloned())
        };

        let remainder: Vec<(&String, &Value)> = chunk.iter().filter(|(k, _)| !kind.described(k)).collect();
        let delta = chunk.get("delta");
        let raw_event = chunk.get("rawEvent");
        let metadata = chunk.get("metadata");
        let wants_content = delta.is_some()
            || raw_event.is_some()
            || (result.is_empty() && (metadata.is_some() || matches!(raw_tag, Some(Value::Null)) || !remainder.is_empty()));
        if wants_content {
            let mut content = Map::new();
            for (k, v) in &remainder {
                content.insert((*k).clone(), (*v).clone());
            }
            content.insert("type".into(), Value::String(kind.content().into()));
            content.insert(kind.id_field().into(), stream_id);
            content.insert("delta".into(), delta.cloned().unwrap_or_else(|| Value::String(String::new())));
            if let Some(owner) = raw_tag.or(opener_tag.as_ref()) {
                content.insert("subagentRunId".into(), owner.clone());
            }
            if let Some(m) = metadata {
                content.insert("metadata".into(), m.clone());
            }
            if let Some(r) = raw_event {
                content.insert("rawEvent".into(), r.clone());
            }
            result.push(Value::Object(content));
        } else if !remainder.is_empty() {
            if let Some(Value::Object(last)) = result.last_mut() {
                let shadowed: Vec<String> =
                    remainder.iter().filter(|(k, _)| last.contains_key(k.as_str())).map(|(k, _)| format!("'{k}'")).collect();
                if !shadowed.is_empty() {
                    self.warnings.push(format!(
                        "[ag-ui][transform] A {} carried {}, which the synthesized {} already describes. The synthesized value is kept and the chunk's is dropped.",
                        kind.chunk_type(),
                        shadowed.join(", "),
                        kind.start()
                    ));
                }
                let mut merged = Map::with_capacity(remainder.len() + last.len());
                for (k, v) in &remainder {
                    merged.insert((*k).clone(), (*v).clone());
                }
                for (k, v) in std::mem::take(last) {
                    merged.insert(k, v);
                }
                *last = merged;
            }
        }
        out.append(&mut result);
        Ok(())
    }
}

fn end_event(p: &Pending) -> Value {
    let mut end = Map::new();
    end.insert("type".into(), Value::String(p.kind.end().into()));
    end.insert(p.kind.id_field().into(), p.id.clone());
    if let Some(tag) = &p.tag {
        end.insert("subagentRunId".into(), tag.clone());
    }
    Value::Object(end)
}

/// Expand a whole sequence. Returns the events emitted (up to the failing event) and the
/// error, if any. Pending streams are not closed at the end (as the reference).
pub fn expand_chunks(events: impl IntoIterator<Item = Value>) -> (Vec<Value>, Option<StreamError>) {
    let mut exp = ChunkExpander::new();
    let mut out = Vec::new();
    for event in events {
        if let Err(e) = exp.push_into(event, &mut out) {
            return (out, Some(e));
        }
    }
    (out, None)
}
