//! `ag_ui.Event` bytes -> JSON event (wire-schema §5.2), as the reference decoder does it.
//!
//! Steps: a structural guard on the envelope (empty message, two different arms, an
//! envelope with only arms from a later protocol version), prost decoding (standard
//! merge semantics), then per-event post-processing into the camelCase JSON object.
//! The result is not validated (neither is the reference's).

use super::error::{Error, Result};
use super::pb;
use super::pb::event::Event as Arm;
use super::wkt;
use super::{arm_number_to_type, EVENT_TYPES};
use prost::encoding::{decode_key, decode_varint, WireType};
use prost::Message as _;

// ---------------------------------------------------------------------------------
// Output tree: keys are the schema's static names, opaque JSON is pre-rendered text,
// strings are moved out of the prost message. Serialised once at the end.
// ---------------------------------------------------------------------------------

enum J {
    Bool(bool),
    Int(i64),
    String(String),
    /// A decoded google.protobuf.Value / Struct body, rendered when written.
    Value(Vec<u8>),
    Struct(Vec<u8>),
    Array(Vec<J>),
    Object(Obj),
}

/// Output format of the decoder: JSON text, or MessagePack (what the typed layer feeds
/// to msgspec: no escaping or float printing on our side, no parsing on its side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    MsgPack,
}

impl From<i64> for J {
    fn from(v: i64) -> J {
        J::Int(v)
    }
}

impl J {
    fn as_array(&self) -> Option<&Vec<J>> {
        match self {
            J::Array(a) => Some(a),
            _ => None,
        }
    }

    fn write(&self, out: &mut Vec<u8>, fmt: Format) -> Result<()> {
        match fmt {
            Format::Json => self.write_json(out),
            Format::MsgPack => self.write_msgpack(out),
        }
    }

    fn write_json(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            J::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            J::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
            J::String(s) => serde_json::to_writer(&mut *out, s.as_str()).expect("writing to a Vec cannot fail"),
            J::Value(body) => {
                wkt::value_body_json(body, out, 0).map_err(bad_payload)?;
            }
            J::Struct(body) => wkt::struct_body_json(body, out, 0).map_err(bad_payload)?,
            J::Array(a) => {
                out.push(b'[');
                for (i, e) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    e.write_json(out)?;
                }
                out.push(b']');
            }
            J::Object(o) => {
                out.push(b'{');
                for (i, (k, v)) in o.0.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.push(b'"');
                    out.extend_from_slice(k.as_bytes()); // schema names: nothing to escape
                    out.extend_from_slice(b"\":");
                    v.write_json(out)?;
                }
                out.push(b'}');
            }
        }
        Ok(())
    }

    fn write_msgpack(&self, out: &mut Vec<u8>) -> Result<()> {
        use super::msgpack as mp;
        match self {
            J::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
            J::Int(i) => mp::int(out, *i),
            J::String(s) => mp::str(out, s),
            J::Value(body) => {
                wkt::value_body_msgpack(body, out, 0).map_err(bad_payload)?;
            }
            J::Struct(body) => wkt::struct_body_msgpack(body, out, 0).map_err(bad_payload)?,
            J::Array(a) => {
                mp::array_header(out, a.len());
                for e in a {
                    e.write_msgpack(out)?;
                }
            }
            J::Object(o) => {
                mp::map_header(out, o.0.len());
                for (k, v) in &o.0 {
                    mp::str(out, k);
                    v.write_msgpack(out)?;
                }
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Obj(Vec<(&'static str, J)>);

impl Obj {
    fn new() -> Obj {
        Obj(Vec::with_capacity(8))
    }
    #[inline]
    fn insert(&mut self, k: &'static str, v: J) {
        self.0.push((k, v));
    }
}

fn invalid(why: impl Into<String>) -> Error {
    Error::Decode(why.into())
}

// ---------------------------------------------------------------------------------
// Envelope guard (§5.2.1, §5.2.3)
// ---------------------------------------------------------------------------------

/// Shallow well-formedness check of a LEN payload (tags, lengths, balanced groups).
fn well_formed(mut b: &[u8]) -> bool {
    let mut groups: Vec<u32> = Vec::new();
    while !b.is_empty() {
        let Ok((tag, wt)) = decode_key(&mut b) else { return false };
        let ok = match wt {
            WireType::Varint => decode_varint(&mut b).is_ok(),
            WireType::SixtyFourBit => skip_n(&mut b, 8),
            WireType::ThirtyTwoBit => skip_n(&mut b, 4),
            WireType::LengthDelimited => match decode_varint(&mut b) {
                Ok(n) => skip_n(&mut b, n),
                Err(_) => false,
            },
            WireType::StartGroup => {
                groups.push(tag);
                true
            }
            WireType::EndGroup => groups.pop() == Some(tag),
        };
        if !ok {
            return false;
        }
    }
    groups.is_empty()
}

fn skip_n(b: &mut &[u8], n: u64) -> bool {
    if n > b.len() as u64 {
        return false;
    }
    *b = &b[n as usize..];
    true
}

/// Scan the envelope's top-level fields. Returns the known arm number seen, if any.
fn guard(msg: &[u8]) -> Result<Option<u32>> {
    if msg.is_empty() {
        return Err(invalid("Invalid event: empty message"));
    }
    let mut b = msg;
    let mut arm: Option<u32> = None;
    let mut unknown_len_ok = true;
    let mut saw_unknown_len = false;
    let mut groups: Vec<u32> = Vec::new();
    while !b.is_empty() {
        let (tag, wt) = decode_key(&mut b).map_err(|e| invalid(format!("Invalid event: {e}")))?;
        if (1..=31).contains(&tag) && groups.is_empty() {
            if let Some(a) = arm {
                if a != tag {
                    return Err(invalid("Invalid event: the envelope carries two different event arms"));
                }
            }
            arm = Some(tag);
        }
        let ok = match wt {
            WireType::Varint => decode_varint(&mut b).is_ok(),
            WireType::SixtyFourBit => skip_n(&mut b, 8),
            WireType::ThirtyTwoBit => skip_n(&mut b, 4),
            WireType::LengthDelimited => match decode_varint(&mut b) {
                Ok(n) if n <= b.len() as u64 => {
                    let payload = &b[..n as usize];
                    if !(1..=31).contains(&tag) && groups.is_empty() {
                        saw_unknown_len = true;
                        unknown_len_ok &= well_formed(payload);
                    }
                    b = &b[n as usize..];
                    true
                }
                _ => false,
            },
            WireType::StartGroup => {
                groups.push(tag);
                true
            }
            WireType::EndGroup => groups.pop() == Some(tag),
        };
        if !ok {
            return Err(invalid("Invalid event: malformed protobuf"));
        }
    }
    if !groups.is_empty() {
        return Err(invalid("Invalid event: unbalanced group"));
    }
    if arm.is_none() {
        // Only unknown fields: an event kind from a later protocol if at least one is an
        // embedded message and all of those are well formed; anything else is garbage.
        return if saw_unknown_len && unknown_len_ok {
            Err(Error::UnknownEventType)
        } else {
            Err(invalid("Invalid event: no event arm"))
        };
    }
    Ok(arm)
}

// ---------------------------------------------------------------------------------
// Nested guard: an InputContent / InputContentSource with two different arms
// (protobuf would keep the last one; the reference rejects the message).
// ---------------------------------------------------------------------------------

fn two_arms(mut b: &[u8], arms: std::ops::RangeInclusive<u32>) -> bool {
    let mut seen: Option<u32> = None;
    while !b.is_empty() {
        let Ok((tag, wt)) = decode_key(&mut b) else { return false };
        if arms.contains(&tag) {
            if matches!(seen, Some(s) if s != tag) {
                return true;
            }
            seen = Some(tag);
        }
        let ok = match wt {
            WireType::Varint => decode_varint(&mut b).is_ok(),
            WireType::SixtyFourBit => skip_n(&mut b, 8),
            WireType::ThirtyTwoBit => skip_n(&mut b, 4),
            WireType::LengthDelimited => match decode_varint(&mut b) {
                Ok(n) => skip_n(&mut b, n),
                Err(_) => false,
            },
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    false
}

// ---------------------------------------------------------------------------------
// Decoding helpers
// ---------------------------------------------------------------------------------

const MAX_SAFE: i64 = 9_007_199_254_740_991;

/// int64 -> JS number: outside ±(2^53 − 1) the reference fails.
fn safe_int(v: i64) -> Result<J> {
    if v > MAX_SAFE {
        return Err(invalid("Value is larger than Number.MAX_SAFE_INTEGER"));
    }
    if v < -MAX_SAFE {
        return Err(invalid("Value is smaller than Number.MIN_SAFE_INTEGER"));
    }
    Ok(J::from(v))
}

#[inline]
fn put_str(o: &mut Obj, k: &'static str, v: String) {
    o.insert(k, J::String(v));
}

#[inline]
fn put_opt(o: &mut Obj, k: &'static str, v: Option<String>) {
    if let Some(v) = v {
        o.insert(k, J::String(v));
    }
}

fn bad_payload(e: prost::DecodeError) -> Error {
    invalid(format!("Invalid event: {e}"))
}

/// A Value field: present only when it has a kind.
#[inline]
fn put_value(o: &mut Obj, k: &'static str, v: Option<wkt::Value>) -> Result<()> {
    if let Some(v) = v {
        if wkt::value_has_kind(&v.0).map_err(bad_payload)? {
            o.insert(k, J::Value(v.0));
        }
    }
    Ok(())
}

#[inline]
fn put_struct(o: &mut Obj, k: &'static str, v: Option<wkt::Struct>) -> Result<()> {
    if let Some(m) = v {
        o.insert(k, struct_json(m)?);
    }
    Ok(())
}

fn struct_json(m: wkt::Struct) -> Result<J> {
    Ok(J::Struct(m.0))
}

fn usage_json(list: Vec<pb::Usage>) -> Result<J> {
    let mut out = Vec::with_capacity(list.len());
    for u in list {
        let mut o = Obj::new();
        put_opt(&mut o, "provider", u.provider);
        put_opt(&mut o, "model", u.model);
        for (k, v) in [
            ("inputTokens", u.input_tokens),
            ("outputTokens", u.output_tokens),
            ("totalTokens", u.total_tokens),
            ("reasoningTokens", u.reasoning_tokens),
            ("cachedInputTokens", u.cached_input_tokens),
            ("cacheWriteInputTokens", u.cache_write_input_tokens),
        ] {
            if let Some(v) = v {
                o.insert(k, safe_int(v)?);
            }
        }
        out.push(J::Object(o));
    }
    Ok(J::Array(out))
}

fn source_json(s: pb::InputContentSource) -> Option<J> {
    use pb::input_content_source::Source;
    let mut o = Obj::new();
    match s.source? {
        Source::Data(d) => {
            put_str(&mut o, "type", "data".into());
            put_str(&mut o, "value", d.value);
            put_str(&mut o, "mimeType", d.mime_type);
        }
        Source::Url(u) => {
            put_str(&mut o, "type", "url".into());
            put_str(&mut o, "value", u.value);
            put_opt(&mut o, "mimeType", u.mime_type);
        }
        Source::File(f) => {
            put_str(&mut o, "type", "file".into());
            put_str(&mut o, "value", f.value);
            put_opt(&mut o, "provider", f.provider);
            put_opt(&mut o, "mimeType", f.mime_type);
        }
    }
    Some(J::Object(o))
}

fn parts_json(parts: Vec<pb::InputContent>, warnings: &mut Vec<String>) -> Result<Vec<J>> {
    use pb::input_content::Part;
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        let (ty, source, metadata, id) = match p.part {
            None => {
                warnings.push("[ag-ui][proto] Dropped a content part with no known kind".into());
                continue;
            }
            Some(Part::Text(t)) => {
                let mut o = Obj::new();
                put_str(&mut o, "type", "text".into());
                put_opt(&mut o, "id", t.id);
                put_str(&mut o, "text", t.text);
                put_value(&mut o, "metadata", t.metadata)?;
                out.push(J::Object(o));
                continue;
            }
            Some(Part::Image(m)) => ("image", m.source, m.metadata, m.id),
            Some(Part::Audio(m)) => ("audio", m.source, m.metadata, m.id),
            Some(Part::Video(m)) => ("video", m.source, m.metadata, m.id),
            Some(Part::Document(m)) => ("document", m.source, m.metadata, m.id),
        };
        let mut o = Obj::new();
        put_str(&mut o, "type", ty.into());
        put_opt(&mut o, "id", id);
        if let Some(s) = source {
            match source_json(s) {
                Some(j) => {
                    o.insert("source", j);
                }
                None => {
                    // A source with no known arm drops the whole part (reference).
                    warnings.push("[ag-ui][proto] Dropped a content part whose source has no known kind".into());
                    continue;
                }
            }
        }
        put_value(&mut o, "metadata", metadata)?;
        out.push(J::Object(o));
    }
    Ok(out)
}

fn tool_call_json(t: pb::ToolCall) -> Result<J> {
    let mut o = Obj::new();
    put_str(&mut o, "id", t.id);
    put_str(&mut o, "type", t.r#type);
    if let Some(f) = t.function {
        let mut fo = Obj::new();
        put_str(&mut fo, "name", f.name);
        put_str(&mut fo, "arguments", f.arguments);
        o.insert("function", J::Object(fo));
    }
    put_struct(&mut o, "metadata", t.metadata)?;
    put_opt(&mut o, "encryptedValue", t.encrypted_value);
    Ok(J::Object(o))
}

/// One wire message -> JSON message, with the role rules of §5.2.6.
fn message_json(m: pb::Message, warnings: &mut Vec<String>) -> Result<J> {
    let has_string = m.content.is_some();
    let has_parts = !m.content_parts.is_empty();
    let has_activity = m.activity_content.is_some();
    let mut o = Obj::new();
    let content: Option<J> = match m.role.as_str() {
        "user" | "tool" => {
            if has_activity {
                return Err(invalid("Invalid event: message carries activity content for a non-activity role"));
            }
            if has_string && has_parts {
                return Err(invalid("Invalid event: message carries both string content and content parts"));
            }
            match m.content {
                Some(s) => Some(J::String(s)),
                None => Some(J::Array(parts_json(m.content_parts, warnings)?)),
            }
        }
        "activity" => {
            if has_string || has_parts {
                return Err(invalid("Invalid event: activity content cannot ride with other content forms"));
            }
            m.activity_content.map(struct_json).transpose()?
        }
        "developer" | "system" | "assistant" | "reasoning" => {
            if has_parts {
                return Err(invalid("Invalid event: message carries content parts for a role that has none"));
            }
            if has_activity {
                return Err(invalid("Invalid event: message carries activity content for a non-activity role"));
            }
            m.content.map(J::String)
        }
        _ => {
            if (has_string as u8 + has_parts as u8 + has_activity as u8) > 1 {
                return Err(invalid("Invalid event: message carries more than one content form"));
            }
            if has_string {
                m.content.map(J::String)
            } else if has_parts {
                Some(J::Array(parts_json(m.content_parts, warnings)?))
            } else {
                m.activity_content.map(struct_json).transpose()?
            }
        }
    };
    // role (the message union's tag) first, see the event's `type`.
    put_str(&mut o, "role", m.role);
    put_str(&mut o, "id", m.id);
    if let Some(c) = content {
        o.insert("content", c);
    }
    put_opt(&mut o, "name", m.name);
    if !m.tool_calls.is_empty() {
        o.insert("toolCalls", J::Array(m.tool_calls.into_iter().map(tool_call_json).collect::<Result<_>>()?));
    }
    put_opt(&mut o, "toolCallId", m.tool_call_id);
    put_opt(&mut o, "error", m.error);
    put_struct(&mut o, "metadata", m.metadata)?;
    put_opt(&mut o, "subagentRunId", m.subagent_run_id);
    put_opt(&mut o, "encryptedValue", m.encrypted_value);
    put_opt(&mut o, "activityType", m.activity_type);
    Ok(J::Object(o))
}

fn messages_json(list: Vec<pb::Message>, warnings: &mut Vec<String>) -> Result<J> {
    let mut out = Vec::with_capacity(list.len());
    for m in list {
        out.push(message_json(m, warnings)?);
    }
    Ok(J::Array(out))
}

fn patch_json(ops: Vec<pb::JsonPatchOperation>) -> Result<J> {
    const NAMES: [&str; 6] = ["add", "remove", "replace", "move", "copy", "test"];
    Ok(J::Array(
        ops.into_iter()
            .map(|op| {
                let mut o = Obj::new();
                // An enum number without a name is kept as its decimal string.
                let name = match NAMES.get(op.op as usize) {
                    Some(n) if op.op >= 0 => (*n).to_string(),
                    _ => op.op.to_string(),
                };
                put_str(&mut o, "op", name);
                put_str(&mut o, "path", op.path);
                put_opt(&mut o, "from", op.from);
                put_value(&mut o, "value", op.value)?;
                Ok(J::Object(o))
            })
            .collect::<Result<_>>()?,
    ))
}

fn interrupt_json(i: pb::Interrupt) -> Result<J> {
    let mut o = Obj::new();
    put_str(&mut o, "id", i.id);
    put_str(&mut o, "reason", i.reason);
    put_opt(&mut o, "message", i.message);
    put_opt(&mut o, "toolCallId", i.tool_call_id);
    put_value(&mut o, "responseSchema", i.response_schema)?;
    put_opt(&mut o, "expiresAt", i.expires_at);
    put_value(&mut o, "metadata", i.metadata)?;
    put_opt(&mut o, "subagentRunId", i.subagent_run_id);
    Ok(J::Object(o))
}

fn input_json(i: pb::RunAgentInput, warnings: &mut Vec<String>) -> Result<J> {
    let mut o = Obj::new();
    put_str(&mut o, "threadId", i.thread_id);
    put_str(&mut o, "runId", i.run_id);
    put_opt(&mut o, "protocolVersion", i.protocol_version);
    put_opt(&mut o, "parentRunId", i.parent_run_id);
    put_value(&mut o, "state", i.state)?;
    o.insert("messages", messages_json(i.messages, warnings)?);
    o.insert(
        "tools".into(),
        J::Array(
            i.tools
                .into_iter()
                .map(|t| {
                    let mut to = Obj::new();
                    put_str(&mut to, "name", t.name);
                    put_str(&mut to, "description", t.description);
                    put_value(&mut to, "parameters", t.parameters)?;
                    put_struct(&mut to, "metadata", t.metadata)?;
                    Ok(J::Object(to))
                })
                .collect::<Result<_>>()?,
        ),
    );
    o.insert(
        "context".into(),
        J::Array(
            i.context
                .into_iter()
                .map(|c| {
                    let mut co = Obj::new();
                    put_str(&mut co, "description", c.description);
                    put_str(&mut co, "value", c.value);
                    J::Object(co)
                })
                .collect(),
        ),
    );
    put_value(&mut o, "forwardedProps", i.forwarded_props)?;
    o.insert(
        "resume".into(),
        J::Array(
            i.resume
                .into_iter()
                .map(|r| {
                    let mut ro = Obj::new();
                    put_str(&mut ro, "interruptId", r.interrupt_id);
                    put_str(&mut ro, "status", r.status);
                    put_value(&mut ro, "payload", r.payload)?;
                    put_struct(&mut ro, "metadata", r.metadata)?;
                    Ok(J::Object(ro))
                })
                .collect::<Result<_>>()?,
        ),
    );
    Ok(J::Object(o))
}

// ---------------------------------------------------------------------------------
// The event
// ---------------------------------------------------------------------------------

/// Decode one unframed `Event` message into its JSON event text, appended to `out`.
/// Warnings (dropped content parts) are appended to `warnings`.
/// [`Error::UnknownEventType`] marks an envelope from a later protocol version (streams
/// skip it). On error `out` is left as it was.
pub fn decode_message_into(msg: &[u8], warnings: &mut Vec<String>, out: &mut Vec<u8>) -> Result<()> {
    decode_message_as(msg, warnings, out, Format::Json)
}

/// [`decode_message_into`] in the given output format.
pub fn decode_message_as(msg: &[u8], warnings: &mut Vec<String>, out: &mut Vec<u8>, fmt: Format) -> Result<()> {
    guard(msg)?;
    let ev = pb::Event::decode(msg).map_err(|e| invalid(format!("Invalid event: {e}")))?;
    let tree = event_to_json_checked(ev, msg, warnings)?;
    let start = out.len();
    tree.write(out, fmt).inspect_err(|_| out.truncate(start))
}

/// [`decode_message_into`] as a `serde_json::Value` (tests and Rust callers).
pub fn decode_message(msg: &[u8], warnings: &mut Vec<String>) -> Result<serde_json::Value> {
    let mut out = Vec::new();
    decode_message_into(msg, warnings, &mut out)?;
    Ok(serde_json::from_slice(&out).expect("the decoder writes valid JSON"))
}

/// JSON text of an already decoded envelope.
pub fn event_to_json_text(ev: pb::Event, warnings: &mut Vec<String>, out: &mut Vec<u8>) -> Result<()> {
    event_to_json(ev, warnings)?.write(out, Format::Json)
}

fn event_to_json_checked(ev: pb::Event, msg: &[u8], warnings: &mut Vec<String>) -> Result<J> {
    // Two arms inside a content part or a source are rejected like the reference does;
    // only worth scanning when the event can carry parts.
    if matches!(
        ev.event,
        Some(Arm::ToolCallResult(_)) | Some(Arm::MessagesSnapshot(_)) | Some(Arm::RunStarted(_))
    ) && has_ambiguous_part(msg)
    {
        return Err(invalid("Invalid event: a content part or source carries two different kinds"));
    }
    event_to_json(ev, warnings)
}

/// Conservative scan for InputContent / InputContentSource with two arms, following
/// the schema paths that can hold them.
fn has_ambiguous_part(msg: &[u8]) -> bool {
    // Walk: Event -> arm -> {content_parts(7) | messages(2) | input(5)->messages(5)}
    //       -> Message.content_parts(8) -> InputContent -> media part -> source(1).
    fn fields(mut b: &[u8], mut f: impl FnMut(u32, &[u8]) -> bool) -> bool {
        while !b.is_empty() {
            let Ok((tag, wt)) = decode_key(&mut b) else { return false };
            match wt {
                WireType::LengthDelimited => {
                    let Ok(n) = decode_varint(&mut b) else { return false };
                    if n > b.len() as u64 {
                        return false;
                    }
                    let (p, rest) = b.split_at(n as usize);
                    b = rest;
                    if f(tag, p) {
                        return true;
                    }
                }
                WireType::Varint => {
                    if decode_varint(&mut b).is_err() {
                        return false;
                    }
                }
                WireType::SixtyFourBit => {
                    if !skip_n(&mut b, 8) {
                        return false;
                    }
                }
                WireType::ThirtyTwoBit => {
                    if !skip_n(&mut b, 4) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        false
    }
    fn part_bad(p: &[u8]) -> bool {
        two_arms(p, 1..=5)
            || fields(p, |t, media| (2..=5).contains(&t) && fields(media, |st, src| st == 1 && two_arms(src, 1..=3)))
    }
    fn message_bad(m: &[u8]) -> bool {
        fields(m, |t, p| t == 8 && part_bad(p))
    }
    fields(msg, |arm, body| match arm {
        22 => fields(body, |t, p| t == 7 && part_bad(p)),
        9 => fields(body, |t, m| t == 2 && message_bad(m)),
        12 => fields(body, |t, input| t == 5 && fields(input, |it, m| it == 5 && message_bad(m))),
        _ => false,
    })
}

/// Post-process a decoded envelope into its JSON event (§5.2.4 – §5.2.8).
fn event_to_json(ev: pb::Event, warnings: &mut Vec<String>) -> Result<J> {
    let arm = ev.event.ok_or_else(|| invalid("Invalid event: no event arm"))?;
    let arm_type = arm_number_to_type(arm_number(&arm));
    let mut o = Obj::new();
    macro_rules! s {
        ($k:literal, $v:expr) => {
            put_str(&mut o, $k, $v)
        };
    }
    macro_rules! opt {
        ($k:literal, $v:expr) => {
            put_opt(&mut o, $k, $v)
        };
    }
    let mut outcome: Option<J> = None;
    let b = match arm {
        Arm::TextMessageStart(e) => {
            s!("messageId", e.message_id);
            opt!("role", e.role);
            opt!("name", e.name);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::TextMessageContent(e) => {
            s!("messageId", e.message_id);
            s!("delta", e.delta);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::TextMessageEnd(e) => {
            s!("messageId", e.message_id);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::TextMessageChunk(e) => {
            opt!("messageId", e.message_id);
            opt!("role", e.role);
            opt!("delta", e.delta);
            opt!("name", e.name);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::ToolCallStart(e) => {
            s!("toolCallId", e.tool_call_id);
            s!("toolCallName", e.tool_call_name);
            opt!("parentMessageId", e.parent_message_id);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::ToolCallArgs(e) => {
            s!("toolCallId", e.tool_call_id);
            s!("delta", e.delta);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::ToolCallEnd(e) => {
            s!("toolCallId", e.tool_call_id);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::ToolCallChunk(e) => {
            opt!("toolCallId", e.tool_call_id);
            opt!("toolCallName", e.tool_call_name);
            opt!("parentMessageId", e.parent_message_id);
            opt!("delta", e.delta);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::ToolCallResult(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            s!("toolCallId", e.tool_call_id);
            if e.content.is_some() && !e.content_parts.is_empty() {
                return Err(invalid("Invalid event: content carries both string content and content parts"));
            }
            let content = match e.content {
                Some(c) => J::String(c),
                None => J::Array(parts_json(e.content_parts, warnings)?),
            };
            o.insert("content", content);
            opt!("role", e.role);
            e.base_event
        }
        Arm::StateSnapshot(e) => {
            put_value(&mut o, "snapshot", e.snapshot)?;
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::StateDelta(e) => {
            o.insert("delta", patch_json(e.delta)?);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::MessagesSnapshot(e) => {
            o.insert("messages", messages_json(e.messages, warnings)?);
            e.base_event
        }
        Arm::ActivitySnapshot(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            s!("activityType", e.activity_type);
            put_struct(&mut o, "content", e.content)?;
            if let Some(r) = e.replace {
                o.insert("replace", J::Bool(r));
            }
            e.base_event
        }
        Arm::ActivityDelta(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            s!("activityType", e.activity_type);
            o.insert("patch", patch_json(e.patch)?);
            e.base_event
        }
        Arm::Raw(e) => {
            put_value(&mut o, "event", e.event)?;
            opt!("source", e.source);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::Custom(e) => {
            s!("name", e.name);
            put_value(&mut o, "value", e.value)?;
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::RunStarted(e) => {
            s!("threadId", e.thread_id);
            s!("runId", e.run_id);
            opt!("parentRunId", e.parent_run_id);
            if let Some(i) = e.input {
                o.insert("input", input_json(i, warnings)?);
            }
            opt!("protocolVersion", e.protocol_version);
            e.base_event
        }
        Arm::RunFinished(e) => {
            s!("threadId", e.thread_id);
            s!("runId", e.run_id);
            put_value(&mut o, "result", e.result)?;
            if !e.usage.is_empty() {
                o.insert("usage", usage_json(e.usage)?);
            }
            let pending = J::Array(e.pending_tool_call_ids.into_iter().map(J::String).collect());
            let interrupts = J::Array(e.interrupts.into_iter().map(interrupt_json).collect::<Result<_>>()?);
            let has_p = pending.as_array().is_some_and(|a| !a.is_empty());
            let has_i = interrupts.as_array().is_some_and(|a| !a.is_empty());
            if e.outcome.is_empty() {
                // Not valid 1.0 JSON, but what the reference produces for such wire data.
                if has_p {
                    o.insert("pendingToolCallIds", pending);
                }
                if has_i {
                    o.insert("interrupts", interrupts);
                }
            } else {
                let mut oc = Obj::new();
                let is_interrupt = e.outcome == "interrupt";
                put_str(&mut oc, "type", e.outcome);
                if is_interrupt || has_i {
                    oc.insert("interrupts", interrupts);
                }
                if has_p {
                    oc.insert("pendingToolCallIds", pending);
                }
                outcome = Some(J::Object(oc));
            }
            e.base_event
        }
        Arm::RunError(e) => {
            opt!("code", e.code);
            s!("message", e.message);
            if !e.usage.is_empty() {
                o.insert("usage", usage_json(e.usage)?);
            }
            e.base_event
        }
        Arm::StepStarted(e) => {
            s!("stepName", e.step_name);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::StepFinished(e) => {
            s!("stepName", e.step_name);
            opt!("subagentRunId", e.subagent_run_id);
            e.base_event
        }
        Arm::ReasoningStart(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            e.base_event
        }
        Arm::ReasoningMessageStart(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            s!("role", e.role);
            e.base_event
        }
        Arm::ReasoningMessageContent(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            s!("delta", e.delta);
            e.base_event
        }
        Arm::ReasoningMessageEnd(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            e.base_event
        }
        Arm::ReasoningMessageChunk(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            opt!("messageId", e.message_id);
            opt!("delta", e.delta);
            e.base_event
        }
        Arm::ReasoningEnd(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("messageId", e.message_id);
            e.base_event
        }
        Arm::ReasoningEncryptedValue(e) => {
            opt!("subagentRunId", e.subagent_run_id);
            s!("subtype", e.subtype);
            s!("entityId", e.entity_id);
            s!("encryptedValue", e.encrypted_value);
            e.base_event
        }
        Arm::SubagentStarted(e) => {
            s!("subagentRunId", e.subagent_run_id);
            s!("name", e.name);
            opt!("description", e.description);
            opt!("parentSubagentRunId", e.parent_subagent_run_id);
            opt!("parentToolCallId", e.parent_tool_call_id);
            opt!("parentMessageId", e.parent_message_id);
            e.base_event
        }
        Arm::SubagentFinished(e) => {
            s!("subagentRunId", e.subagent_run_id);
            put_value(&mut o, "result", e.result)?;
            let ids = J::Array(e.interrupt_ids.into_iter().map(J::String).collect());
            let has_ids = ids.as_array().is_some_and(|a| !a.is_empty());
            if e.outcome.is_empty() {
                if has_ids {
                    o.insert("interruptIds", ids);
                }
            } else {
                let mut oc = Obj::new();
                put_str(&mut oc, "type", e.outcome);
                if has_ids {
                    oc.insert("interruptIds", ids);
                }
                outcome = Some(J::Object(oc));
            }
            e.base_event
        }
        Arm::SubagentError(e) => {
            s!("subagentRunId", e.subagent_run_id);
            s!("message", e.message);
            opt!("code", e.code);
            e.base_event
        }
    };
    let b = b.ok_or_else(|| invalid("Invalid event: the event has no base_event"))?;
    if b.r#type < 0 || EVENT_TYPES.get(b.r#type as usize) != Some(&arm_type) {
        let declared = EVENT_TYPES
            .get(b.r#type as usize)
            .filter(|_| b.r#type >= 0)
            .copied()
            .unwrap_or("undefined");
        return Err(invalid(format!(
            "Invalid event: envelope carries {arm_type} but the base event declares {declared}"
        )));
    }
    // The discriminator goes first: msgspec dispatches a tagged union without scanning
    // ahead when the tag leads (key order carries no meaning in JSON).
    o.0.insert(0, ("type", J::String(arm_type.to_string())));
    if let Some(ts) = b.timestamp {
        o.insert("timestamp", safe_int(ts)?);
    }
    put_value(&mut o, "rawEvent", b.raw_event)?;
    put_struct(&mut o, "metadata", b.metadata)?;
    if let Some(oc) = outcome {
        o.insert("outcome", oc);
    }
    Ok(J::Object(o))
}

/// The envelope field number of an arm.
pub fn arm_number(a: &Arm) -> u32 {
    match a {
        Arm::TextMessageStart(_) => 1,
        Arm::TextMessageContent(_) => 2,
        Arm::TextMessageEnd(_) => 3,
        Arm::ToolCallStart(_) => 4,
        Arm::ToolCallArgs(_) => 5,
        Arm::ToolCallEnd(_) => 6,
        Arm::StateSnapshot(_) => 7,
        Arm::StateDelta(_) => 8,
        Arm::MessagesSnapshot(_) => 9,
        Arm::Raw(_) => 10,
        Arm::Custom(_) => 11,
        Arm::RunStarted(_) => 12,
        Arm::RunFinished(_) => 13,
        Arm::RunError(_) => 14,
        Arm::StepStarted(_) => 15,
        Arm::StepFinished(_) => 16,
        Arm::TextMessageChunk(_) => 17,
        Arm::ToolCallChunk(_) => 18,
        Arm::SubagentStarted(_) => 19,
        Arm::SubagentFinished(_) => 20,
        Arm::SubagentError(_) => 21,
        Arm::ToolCallResult(_) => 22,
        Arm::ActivitySnapshot(_) => 23,
        Arm::ActivityDelta(_) => 24,
        Arm::ReasoningStart(_) => 25,
        Arm::ReasoningMessageStart(_) => 26,
        Arm::ReasoningMessageContent(_) => 27,
        Arm::ReasoningMessageEnd(_) => 28,
        Arm::ReasoningMessageChunk(_) => 29,
        Arm::ReasoningEnd(_) => 30,
        Arm::ReasoningEncryptedValue(_) => 31,
    }
}
