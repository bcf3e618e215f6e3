//! The event representation: a JSON object (`serde_json::Value`, members in input order),
//! dispatched on its `type` once per stage through [`EventType`].

use super::{Stage, StreamError};
use crate::patch::Text;
use serde_json::Value;

macro_rules! event_types {
    ($($variant:ident = $name:literal,)*) => {
        /// The 1.0 event types plus the 0.x `THINKING_*` ones; anything else is `Unknown`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventType {
            $($variant,)*
            Unknown,
        }

        impl EventType {
            pub fn parse(name: &str) -> EventType {
                match name {
                    $($name => EventType::$variant,)*
                    _ => EventType::Unknown,
                }
            }
            /// The wire name (`""` for `Unknown`).
            pub fn name(self) -> &'static str {
                match self {
                    $(EventType::$variant => $name,)*
                    EventType::Unknown => "",
                }
            }
        }
    };
}

event_types! {
    TextMessageStart = "TEXT_MESSAGE_START",
    TextMessageContent = "TEXT_MESSAGE_CONTENT",
    TextMessageEnd = "TEXT_MESSAGE_END",
    TextMessageChunk = "TEXT_MESSAGE_CHUNK",
    ToolCallStart = "TOOL_CALL_START",
    ToolCallArgs = "TOOL_CALL_ARGS",
    ToolCallEnd = "TOOL_CALL_END",
    ToolCallChunk = "TOOL_CALL_CHUNK",
    ToolCallResult = "TOOL_CALL_RESULT",
    StateSnapshot = "STATE_SNAPSHOT",
    StateDelta = "STATE_DELTA",
    MessagesSnapshot = "MESSAGES_SNAPSHOT",
    ActivitySnapshot = "ACTIVITY_SNAPSHOT",
    ActivityDelta = "ACTIVITY_DELTA",
    Raw = "RAW",
    Custom = "CUSTOM",
    RunStarted = "RUN_STARTED",
    RunFinished = "RUN_FINISHED",
    RunError = "RUN_ERROR",
    StepStarted = "STEP_STARTED",
    StepFinished = "STEP_FINISHED",
    ReasoningStart = "REASONING_START",
    ReasoningMessageStart = "REASONING_MESSAGE_START",
    ReasoningMessageContent = "REASONING_MESSAGE_CONTENT",
    ReasoningMessageEnd = "REASONING_MESSAGE_END",
    ReasoningMessageChunk = "REASONING_MESSAGE_CHUNK",
    ReasoningEnd = "REASONING_END",
    ReasoningEncryptedValue = "REASONING_ENCRYPTED_VALUE",
    SubagentStarted = "SUBAGENT_STARTED",
    SubagentFinished = "SUBAGENT_FINISHED",
    SubagentError = "SUBAGENT_ERROR",
    ThinkingStart = "THINKING_START",
    ThinkingEnd = "THINKING_END",
    ThinkingTextMessageStart = "THINKING_TEXT_MESSAGE_START",
    ThinkingTextMessageContent = "THINKING_TEXT_MESSAGE_CONTENT",
    ThinkingTextMessageEnd = "THINKING_TEXT_MESSAGE_END",
}

impl EventType {
    /// The type of an event (`Unknown` when `type` is missing or not a string).
    pub fn of(event: &Value) -> EventType {
        match event.get("type") {
            Some(Value::String(s)) => EventType::parse(s),
            _ => EventType::Unknown,
        }
    }
}

/// Parse one event payload (the JSON text of an SSE `data:` field or a JSON line). It
/// must be a JSON object. Lone surrogate escapes are kept (see `js::append`): a
/// producer may split a character across two deltas.
///
/// Invalid UTF-8 is replaced by U+FFFD, as the reference's `TextDecoder` does. Nesting:
/// at most `limits::DEFAULT_MAX_DEPTH` levels, the event object included.
pub fn parse_event(payload: &[u8]) -> Result<Value, StreamError> {
    parse_event_limited(payload, crate::limits::DEFAULT_MAX_DEPTH)
}

/// [`parse_event`] nesting at most `max_depth` levels.
pub fn parse_event_limited(payload: &[u8], max_depth: usize) -> Result<Value, StreamError> {
    let v = match super::js::parse_json_limited(payload, max_depth) {
        Err(_) if std::str::from_utf8(payload).is_err() => {
            super::js::parse_json_limited(String::from_utf8_lossy(payload).as_bytes(), max_depth)
        }
        other => other,
    }
    .map_err(|e| StreamError::new(Stage::Decode, e))?;
    if !v.is_object() {
        return Err(StreamError::new(Stage::Decode, "an event must be a JSON object"));
    }
    Ok(v)
}

/// The `type` of an event as written (`""` when missing or not a string).
pub fn type_str(event: &Value) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The hot events of a stream in their plain form: `TEXT_MESSAGE_CONTENT`,
/// `REASONING_MESSAGE_CONTENT` (`messageId`) or `TOOL_CALL_ARGS` (`toolCallId`) with a
/// string id and a string `delta` and no other member; or the matching `*_CHUNK` with a
/// string `delta`, an optional string id and no other member.
pub struct Delta<'a> {
    pub kind: EventType,
    /// Always present on the explicit kinds.
    pub id: Option<std::borrow::Cow<'a, str>>,
    pub delta: std::borrow::Cow<'a, str>,
}

impl<'de> serde::Deserialize<'de> for Delta<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Delta<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a delta event")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Delta<'de>, A::Error> {
                use serde::de::Error;
                let mut slots: [Option<Text<'de>>; 3] = [None, None, None];
                let mut tool_id = false;
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    let slot = match &*key.0 {
                        "type" => 0,
                        "messageId" => 1,
                        "toolCallId" => {
                            tool_id = true;
                            1
                        }
                        "delta" => 2,
                        _ => return Err(A::Error::custom("another member")),
                    };
                    if slots[slot].is_some() {
                        return Err(A::Error::custom("duplicate member"));
                    }
                    slots[slot] = Some(map.next_value()?);
                }
                let [Some(ty), id, Some(delta)] = slots else { return Err(A::Error::custom("missing member")) };
                let kind = EventType::parse(&ty.0);
                if !plain_members(kind, id.is_some(), tool_id) {
                    return Err(A::Error::custom("not a delta event"));
                }
                Ok(Delta { kind, id: id.map(|t| t.0), delta: delta.0 })
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> Delta<'a> {
    /// Read a payload as a plain delta event, or `None` (then it takes the general path).
    pub fn parse(payload: &'a [u8]) -> Option<Delta<'a>> {
        Self::scan(payload).or_else(|| serde_json::from_slice(payload).ok())
    }

    /// The compact form every writer of a token stream emits, `{"type":"…","messageId"
    /// (or "toolCallId"):"…","delta":"…"}` (the id optional for chunks), with strings
    /// free of escapes and control characters, read without the JSON parser: a third of
    /// a replay's time went to serde reading such events member by member. Anything else
    /// (whitespace, escapes, another member or order) is `None` and left to the parser,
    /// which reads the same events to the same values.
    fn scan(payload: &'a [u8]) -> Option<Delta<'a>> {
        let rest = payload.strip_prefix(b"{\"type\":\"")?;
        let (ty, rest) = plain_str(rest)?;
        let kind = EventType::parse(ty);
        let (id, tool_id, rest) = if let Some(r) = rest.strip_prefix(b",\"messageId\":\"") {
            let (id, r) = plain_str(r)?;
            (Some(id), false, r)
        } else if let Some(r) = rest.strip_prefix(b",\"toolCallId\":\"") {
            let (id, r) = plain_str(r)?;
            (Some(id), true, r)
        } else {
            (None, false, rest)
        };
        let (delta, rest) = plain_str(rest.strip_prefix(b",\"delta\":\"")?)?;
        if rest != b"}" {
            return None;
        }
        plain_members(kind, id.is_some(), tool_id).then(|| Delta { kind, id: id.map(std::borrow::Cow::Borrowed), delta: std::borrow::Cow::Borrowed(delta) })
    }
}

/// Whether a delta event of `kind` may have these members: an id (`explicit`), named
/// `toolCallId` (`tool_id`) or `messageId`.
fn plain_members(kind: EventType, explicit: bool, tool_id: bool) -> bool {
    match kind {
        EventType::TextMessageContent | EventType::ReasoningMessageContent => explicit && !tool_id,
        EventType::ToolCallArgs => explicit && tool_id,
        EventType::TextMessageChunk | EventType::ReasoningMessageChunk => !tool_id,
        EventType::ToolCallChunk => tool_id || !explicit,
        _ => false,
    }
}

/// A JSON string's content up to its closing quote, when it needs no unescaping (no
/// backslash, no control character: those are the parser's) and is UTF-8; and the bytes
/// after the quote.
fn plain_str(s: &[u8]) -> Option<(&str, &[u8])> {
    let end = s.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    if s[end] != b'"' {
        return None;
    }
    Some((std::str::from_utf8(&s[..end]).ok()?, &s[end + 1..]))
}

/// The operations of a `STATE_DELTA` event in its plain form: exactly `{type, delta}` with
/// a plain patch (`patch::PlainOps`), nesting at most `max_depth` levels. `None`: read
/// the event the general way (an event object).
pub fn plain_state_delta(payload: &[u8], max_depth: usize, pointers: &mut crate::patch::cache::PointerCache) -> Option<Vec<crate::patch::Operation>> {
    struct V<'c>(&'c mut crate::patch::cache::PointerCache);
    impl<'de> serde::de::Visitor<'de> for V<'_> {
        type Value = Vec<crate::patch::Operation>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a STATE_DELTA event")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            use serde::de::Error;
            let (mut is_delta, mut ops) = (false, None);
            while let Some(key) = map.next_key::<Text<'de>>()? {
                match &*key.0 {
                    "type" if !is_delta => is_delta = &*map.next_value::<Text<'de>>()?.0 == "STATE_DELTA",
                    "delta" if ops.is_none() => ops = Some(map.next_value_seed(crate::patch::PlainOps(&mut *self.0))?),
                    _ => return Err(A::Error::custom("not a plain STATE_DELTA")),
                }
                if !is_delta && ops.is_none() {
                    return Err(A::Error::custom("not a STATE_DELTA"));
                }
            }
            ops.filter(|_| is_delta).ok_or_else(|| A::Error::custom("not a plain STATE_DELTA"))
        }
    }
    if crate::limits::exceeds_depth(payload, max_depth) {
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(payload);
    de.disable_recursion_limit();
    let ops = serde::Deserializer::deserialize_map(&mut de, V(pointers)).ok()?;
    de.end().ok()?;
    Some(ops)
}

/// What the start of an event's JSON says it is, for the replayer's plain paths: the
/// writers of this project, of msgspec and of the reference put `type` first. Text that
/// does not start so is `Unknown` (every path is tried).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lead {
    StateDelta,
    Delta,
    Other,
    Unknown,
}

impl Lead {
    pub fn of(payload: &[u8]) -> Lead {
        let Some(rest) = payload.strip_prefix(b"{\"type\":\"") else { return Lead::Unknown };
        let Some(end) = rest.iter().take(32).position(|&b| b == b'"') else { return Lead::Unknown };
        // The bytes as they are (no UTF-8 check, no 36-way match): once per event.
        match &rest[..end] {
            b"STATE_DELTA" => Lead::StateDelta,
            b"TEXT_MESSAGE_CONTENT" | b"REASONING_MESSAGE_CONTENT" | b"TOOL_CALL_ARGS" | b"TEXT_MESSAGE_CHUNK" | b"TOOL_CALL_CHUNK"
            | b"REASONING_MESSAGE_CHUNK" => Lead::Delta,
            _ => Lead::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde(p: &[u8]) -> Option<(EventType, Option<String>, String)> {
        let d: Delta<'_> = serde_json::from_slice(p).ok()?;
        Some((d.kind, d.id.map(|s| s.into_owned()), d.delta.into_owned()))
    }

    /// The scan reads what the parser reads, or leaves the payload to it.
    #[test]
    fn the_scan_agrees_with_the_parser() {
        let kinds = ["TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK", "RUN_STARTED"];
        let ids = [None, Some(("messageId", "m1")), Some(("toolCallId", "c-é"))];
        let deltas = ["ab", "", "é😀 x", "a\\\"b", "a\\u0041", "tab\there", "bad\u{1}", "\\ud83d"];
        let (mut scanned, mut total) = (0, 0);
        for kind in kinds {
            for id in ids {
                for delta in deltas {
                    let id_part = id.map_or(String::new(), |(k, v)| format!(",\"{k}\":\"{v}\""));
                    let compact = format!("{{\"type\":\"{kind}\"{id_part},\"delta\":\"{delta}\"}}");
                    let variants = [
                        compact.clone(),
                        compact.replace(':', ": "),
                        format!("{compact} "),
                        compact.replace("}", ",\"x\":1}"),
                        compact.replace("\"delta\"", "\"delta\":\"0\",\"delta\""),
                    ];
                    for p in variants {
                        total += 1;
                        let scan = Delta::scan(p.as_bytes()).map(|d| (d.kind, d.id.map(|s| s.into_owned()), d.delta.into_owned()));
                        if scan.is_some() {
                            scanned += 1;
                            assert_eq!(scan, serde(p.as_bytes()), "{p}");
                        }
                        let parsed = Delta::parse(p.as_bytes()).map(|d| (d.kind, d.id.map(|s| s.into_owned()), d.delta.into_owned()));
                        assert_eq!(parsed, serde(p.as_bytes()), "{p}");
                    }
                }
            }
        }
        assert!(scanned == 27 && scanned < total, "{scanned} of {total}");
        // Invalid UTF-8 in a delta: neither reads it (the general path replaces it).
        assert!(Delta::scan(b"{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a\xffb\"}").is_none());
    }
}
