//! Compaction, as the reference `compactEvents`: streamed deltas of a message or tool
//! call collapse into one CONTENT / ARGS, events arriving inside a stream are held until
//! its END, and the state events of a run window become one `STATE_SNAPSHOT`.

use super::event::EventType;
use super::js;
use super::{patch_json, PatchLimits};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Default)]
struct Pending {
    id: Option<Value>,
    start: Option<Value>,
    deltas: Option<String>,
    post_start_metadata: Option<Value>,
    other: Vec<Value>,
}

/// Streams keyed by id, in first-seen order, with O(1) lookups (a log may hold many
/// streams that never end) and the started ones in order (they hold other events).
#[derive(Debug, Default)]
struct Streams {
    slots: Vec<Option<Pending>>,
    by_id: HashMap<String, usize>,
    started: BTreeSet<usize>,
}

/// The map key of an id; objects and arrays are never equal to another id (JavaScript
/// compares them by identity), so they are not indexed.
fn id_key(id: Option<&Value>) -> Option<String> {
    match id {
        Some(Value::Object(_) | Value::Array(_)) => None,
        other => Some(js::key(other)),
    }
}

impl Streams {
    fn get(&mut self, id: Option<&Value>) -> &mut Pending {
        let key = id_key(id);
        let found = key.as_ref().and_then(|k| self.by_id.get(k).copied());
        let i = found.unwrap_or_else(|| {
            self.slots.push(Some(Pending { id: id.cloned(), ..Default::default() }));
            let i = self.slots.len() - 1;
            if let Some(k) = key {
                self.by_id.insert(k, i);
            }
            i
        });
        self.slots[i].as_mut().expect("indexed slots are live")
    }
    fn started(&mut self, id: Option<&Value>) {
        if let Some(&i) = id_key(id).as_ref().and_then(|k| self.by_id.get(k)) {
            self.started.insert(i);
        } else if id_key(id).is_none() {
            // An unindexed id: its stream is the last one pushed.
            self.started.insert(self.slots.len() - 1);
        }
    }
    fn take(&mut self, id: Option<&Value>) -> Option<Pending> {
        let i = match id_key(id) {
            Some(k) => self.by_id.remove(&k)?,
            None => self.slots.len().checked_sub(1)?,
        };
        self.started.remove(&i);
        self.slots[i].take()
    }
    fn holder(&mut self) -> Option<&mut Pending> {
        let i = *self.started.first()?;
        self.slots[i].as_mut()
    }
    fn drain(&mut self) -> impl Iterator<Item = Pending> {
        self.by_id.clear();
        self.started.clear();
        std::mem::take(&mut self.slots).into_iter().flatten()
    }
}

fn metadata(e: &Value) -> Option<&Value> {
    e.get("metadata")
}

fn with_metadata(mut e: Value, m: Option<Value>) -> Value {
    if let (Value::Object(o), Some(m)) = (&mut e, m) {
        o.insert("metadata".into(), m);
    }
    e
}

/// A START seen again: before any delta its metadata accumulates; after deltas its
/// fields replace the first START's but the earlier metadata is kept.
fn restart(p: &mut Pending, start: &Value) {
    if p.deltas.is_none() {
        p.start = Some(match p.start.take() {
            None => start.clone(),
            Some(prev) => match js::merge_metadata(metadata(&prev), metadata(start)) {
                None => start.clone(),
                m => with_metadata(start.clone(), m),
            },
        });
    } else {
        let mut fields = start.clone();
        if let Value::Object(o) = &mut fields {
            o.shift_remove("metadata");
        }
        let carried = p.start.as_ref().and_then(metadata).cloned();
        p.start = Some(with_metadata(fields, carried));
        p.post_start_metadata = js::merge_metadata(p.post_start_metadata.as_ref(), metadata(start));
    }
}

fn delta(p: &mut Pending, event: &Value) {
    js::push_joined(p.deltas.get_or_insert_with(String::new), event.get("delta"));
    p.post_start_metadata = js::merge_metadata(p.post_start_metadata.as_ref(), metadata(event));
}

fn flush(p: Pending, content_type: &str, id_field: &str, end: Option<Value>, out: &mut Vec<Value>) {
    out.extend(p.start);
    if let Some(d) = p.deltas {
        let mut c = Map::new();
        c.insert("type".into(), Value::String(content_type.into()));
        if let Some(id) = p.id {
            c.insert(id_field.into(), id);
        }
        c.insert("delta".into(), Value::String(d));
        if let Some(m) = p.post_start_metadata {
            c.insert("metadata".into(), m);
        }
        out.push(Value::Object(c));
    }
    out.extend(end);
    out.extend(p.other);
}

fn flush_state(window: Vec<Value>, out: &mut Vec<Value>, warnings: &mut Vec<String>, limits: &mut PatchLimits) {
    let Some(last) = window.iter().rposition(|e| EventType::of(e) == EventType::StateSnapshot) else {
        out.extend(window);
        return;
    };
    // `None` is an `undefined` snapshot: written without a `snapshot` member.
    let mut state: Option<Value> = None;
    for e in &window[last..] {
        if EventType::of(e) == EventType::StateSnapshot {
            state = e.get("snapshot").cloned();
        } else {
            let res = match &mut state {
                Some(s) => patch_json(s, e.get("delta").cloned().unwrap_or(Value::Null), limits).map_err(|e| e.to_string()),
                None => Err("the state is undefined".to_string()),
            };
            if let Err(err) = res {
                warnings.push(format!("[ag-ui][compact] Failed to apply state patch while compacting: {err}"));
            }
        }
    }
    let mut merged: Option<Value> = None;
    for e in &window {
        merged = js::merge_metadata(merged.as_ref(), metadata(e));
    }
    let mut snap = Map::new();
    snap.insert("type".into(), Value::String("STATE_SNAPSHOT".into()));
    if let Some(state) = state {
        snap.insert("snapshot".into(), state);
    }
    if let Some(m) = merged {
        snap.insert("metadata".into(), m);
    }
    out.push(Value::Object(snap));
}

/// Compact a whole sequence; returns the events and the warnings the reference prints.
pub fn compact_events(events: impl IntoIterator<Item = Value>) -> (Vec<Value>, Vec<String>) {
    compact_events_limited(events, crate::limits::DEFAULT_MAX_DEPTH)
}

/// [`compact_events`] with the depth limit of the merged state patches.
pub fn compact_events_limited(events: impl IntoIterator<Item = Value>, max_depth: usize) -> (Vec<Value>, Vec<String>) {
    compact_events_within(events, PatchLimits::new(max_depth, crate::limits::DEFAULT_MAX_PATCH_BYTES))
}

/// [`compact_events`] within these limits of the merged state patches (the copy allowance
/// is the whole compaction's).
pub fn compact_events_within(events: impl IntoIterator<Item = Value>, mut limits: PatchLimits) -> (Vec<Value>, Vec<String>) {
    use EventType as E;
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let mut texts = Streams::default();
    let mut tools = Streams::default();
    let mut window: Vec<Value> = Vec::new();
    for event in events {
        match EventType::of(&event) {
            E::TextMessageStart => {
                restart(texts.get(event.get("messageId")), &event);
                texts.started(event.get("messageId"));
            }
            E::TextMessageContent => delta(texts.get(event.get("messageId")), &event),
            E::TextMessageEnd => {
                texts.get(event.get("messageId"));
                let p = texts.take(event.get("messageId")).expect("just inserted");
                flush(p, "TEXT_MESSAGE_CONTENT", "messageId", Some(event), &mut out);
            }
            E::ToolCallStart => {
                restart(tools.get(event.get("toolCallId")), &event);
                tools.started(event.get("toolCallId"));
            }
            E::ToolCallArgs => delta(tools.get(event.get("toolCallId")), &event),
            E::ToolCallEnd => {
                tools.get(event.get("toolCallId"));
                let p = tools.take(event.get("toolCallId")).expect("just inserted");
                flush(p, "TOOL_CALL_ARGS", "toolCallId", Some(event), &mut out);
            }
            E::RunStarted | E::RunFinished | E::RunError => {
                flush_state(std::mem::take(&mut window), &mut out, &mut warnings, &mut limits);
                out.push(event);
            }
            E::StateSnapshot | E::StateDelta => window.push(event),
            _ => {
                if let Some(p) = texts.holder() {
                    p.other.push(event);
                } else if let Some(p) = tools.holder() {
                    p.other.push(event);
                } else {
                    out.push(event);
                }
            }
        }
    }
    for p in texts.drain() {
        flush(p, "TEXT_MESSAGE_CONTENT", "messageId", None, &mut out);
    }
    for p in tools.drain() {
        flush(p, "TOOL_CALL_ARGS", "toolCallId", None, &mut out);
    }
    flush_state(window, &mut out, &mut warnings, &mut limits);
    (out, warnings)
}
