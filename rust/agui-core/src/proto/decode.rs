//! `ag_ui.Event` bytes -> JSON event (wire-schema §5.2), as the reference decoder does it.
//!
//! Steps: a structural guard on the envelope (empty message, two different arms, an
//! envelope with only arms from a later protocol version), prost decoding (standard
//! merge semantics), then per-event post-processing written straight out as the
//! camelCase JSON object (JSON text or MessagePack). The result is not validated
//! (neither is the reference's).

use super::error::{Error, Result};
use super::pb;
use super::pb::event::Event as Arm;
use super::wkt;
use super::events::{clear_arm, event_table};
pub use super::events::arm_number;
use super::{arm_number_to_enum, arm_number_to_type, EVENT_TYPES};
use prost::encoding::{decode_key, decode_varint, WireType};
use prost::Message as _;

mod nested;

pub use nested::Nested;

// ---------------------------------------------------------------------------------
// Output: the event is written while walking the decoded prost message, straight into
// the caller's buffer (no intermediate tree, no per-event copy). Map/array headers are
// patched once their entry count is known, so the bytes are the minimal encoding.
// ---------------------------------------------------------------------------------

/// Output format of the decoder: JSON text, or MessagePack (what the typed layer feeds
/// to msgspec: no escaping or float printing on our side, no parsing on its side).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    MsgPack,
}

/// An open object or array: where its header is and how many entries it has so far.
struct Open {
    at: usize,
    n: usize,
}

struct W<'a> {
    out: &'a mut Vec<u8>,
    fmt: Format,
    /// Where the event's object starts in `out`, and the record of its top-level
    /// members when the caller asked for one ([`Members`]).
    top: usize,
    members: Option<&'a mut Members>,
    /// First failure while rendering a Value/Struct body. The tree decoder this replaces
    /// rendered bodies only after every structural check, so a structural error found
    /// later in the same event must still win: such failures wait until the end.
    deferred: Option<Error>,
}

impl W<'_> {
    #[inline]
    fn open(&mut self, json: u8, mp_fix: u8) -> Open {
        let at = self.out.len();
        self.out.push(if self.fmt == Format::Json { json } else { mp_fix });
        Open { at, n: 0 }
    }

    #[inline]
    fn obj(&mut self) -> Open {
        self.open(b'{', 0x80)
    }

    #[inline]
    fn arr(&mut self) -> Open {
        self.open(b'[', 0x90)
    }

    #[inline]
    fn close(&mut self, c: Open, json: u8, map: bool) {
        match self.fmt {
            Format::Json => self.out.push(json),
            Format::MsgPack if c.n < 16 => self.out[c.at] |= c.n as u8,
            Format::MsgPack => {
                // Rare (16+ entries): widen the one-byte header in place.
                let mut h = Vec::with_capacity(5);
                if map {
                    super::msgpack::map_header(&mut h, c.n);
                } else {
                    super::msgpack::array_header(&mut h, c.n);
                }
                self.out.splice(c.at..c.at + 1, h);
            }
        }
    }

    #[inline]
    fn end_obj(&mut self, c: Open) {
        self.close(c, b'}', true)
    }

    #[inline]
    fn end_arr(&mut self, c: Open) {
        self.close(c, b']', false)
    }

    /// Start the next key of `o` (schema names: nothing to escape).
    #[inline]
    fn key(&mut self, o: &mut Open, k: &'static str) {
        self.key_of(o, k, 0)
    }

    /// [`W::key`] of a member whose value will be written as a JSON string `plain_len`
    /// bytes long if it has no escape (0: any other value), for [`Members`].
    #[inline]
    fn key_of(&mut self, o: &mut Open, k: &'static str, plain_len: usize) {
        let key_at = self.out.len();
        match self.fmt {
            // The core's key writer: comma and schema name in one block copy.
            Format::Json => crate::json::write_member_key(self.out, k, o.n > 0),
            Format::MsgPack => super::msgpack::str(self.out, k),
        }
        o.n += 1;
        if o.at == self.top {
            if let Some(m) = self.members.as_deref_mut() {
                m.spans.push((k, key_at - self.top, self.out.len() - self.top, plain_len));
            }
        }
    }

    /// Start the next element of array `a`.
    #[inline]
    fn elem(&mut self, a: &mut Open) {
        if self.fmt == Format::Json && a.n > 0 {
            self.out.push(b',');
        }
        a.n += 1;
    }

    #[inline]
    fn str(&mut self, s: &str) {
        match self.fmt {
            // The core's one JSON string writer (the walker's): serde_json's escapes, faster.
            Format::Json => crate::json::write_str(self.out, s),
            Format::MsgPack => super::msgpack::str(self.out, s),
        }
    }

    #[inline]
    fn int(&mut self, i: i64) {
        match self.fmt {
            Format::Json => crate::json::write_i64(self.out, i),
            Format::MsgPack => super::msgpack::int(self.out, i),
        }
    }

    #[inline]
    fn bool(&mut self, b: bool) {
        match self.fmt {
            Format::Json => self.out.extend_from_slice(if b { b"true" } else { b"false" }),
            Format::MsgPack => self.out.push(if b { 0xc3 } else { 0xc2 }),
        }
    }

    fn defer(&mut self, r: std::result::Result<(), prost::DecodeError>) {
        if let Err(e) = r {
            self.deferred.get_or_insert(bad_payload(e));
        }
    }

    fn value_body(&mut self, body: &[u8]) {
        let r = match self.fmt {
            Format::Json => wkt::value_body(body, &mut crate::json::JsonSink::new(self.out), 0),
            Format::MsgPack => wkt::value_body(body, &mut super::msgpack::MsgpackSink::new(self.out), 0),
        };
        self.defer(r.map(|_| ()));
    }

    fn struct_body(&mut self, body: &[u8]) {
        let r = match self.fmt {
            Format::Json => wkt::struct_body(body, &mut crate::json::JsonSink::new(self.out), 0),
            Format::MsgPack => wkt::struct_body(body, &mut super::msgpack::MsgpackSink::new(self.out), 0),
        };
        self.defer(r);
    }

    #[inline]
    fn put_str(&mut self, o: &mut Open, k: &'static str, v: &str) {
        self.key_of(o, k, v.len() + 2);
        self.str(v);
    }

    #[inline]
    fn put_opt(&mut self, o: &mut Open, k: &'static str, v: &Option<String>) {
        if let Some(v) = v {
            self.put_str(o, k, v);
        }
    }

    /// A Value field: present only when it has a kind.
    #[inline]
    fn put_value(&mut self, o: &mut Open, k: &'static str, v: &Option<wkt::Value>) -> Result<()> {
        self.put_value_body(o, k, v.as_ref().map(|v| &v.0[..]))
    }

    /// [`W::put_value`] of a Value body (the decoded field's, or its wire bytes).
    #[inline]
    fn put_value_body(&mut self, o: &mut Open, k: &'static str, v: Option<&[u8]>) -> Result<()> {
        if let Some(v) = v {
            if wkt::value_has_kind(v).map_err(bad_payload)? {
                self.key(o, k);
                self.value_body(v);
            }
        }
        Ok(())
    }

    #[inline]
    fn put_struct(&mut self, o: &mut Open, k: &'static str, v: &Option<wkt::Struct>) {
        self.put_struct_body(o, k, v.as_ref().map(|m| &m.0[..]))
    }

    /// [`W::put_struct`] of a Struct body.
    #[inline]
    fn put_struct_body(&mut self, o: &mut Open, k: &'static str, v: Option<&[u8]>) {
        if let Some(m) = v {
            self.key(o, k);
            self.struct_body(m);
        }
    }

    fn put_int(&mut self, o: &mut Open, k: &'static str, v: i64) -> Result<()> {
        check_safe(v)?;
        self.key(o, k);
        self.int(v);
        Ok(())
    }

    fn str_array(&mut self, items: &[String]) {
        let mut a = self.arr();
        for s in items {
            self.elem(&mut a);
            self.str(s);
        }
        self.end_arr(a);
    }
}

/// Where the JSON writer put the top-level members of the event it wrote: readers of a
/// few members (the Arrow columns of `agui-arrow`) take their values from here instead
/// of parsing the text again. Filled by [`decode_message_members`].
#[derive(Debug, Default, Clone)]
pub struct Members {
    /// (name, where its key starts (with the `,` before it), where its value starts, the
    /// length its text has when it is a string written without an escape, or 0), in
    /// writing order, relative to the event's first byte.
    spans: Vec<(&'static str, usize, usize, usize)>,
    /// Length of the event's text.
    len: usize,
}

impl Members {
    /// Each top-level member's name, where its value (JSON text) is in the event's text,
    /// and whether that value is a plain string: a JSON string the writer wrote without
    /// an escape, so the text between its quotes is its value and a reader need not
    /// search it for `\` (`false` says nothing: any other value, or a string with an
    /// escape). In writing order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, std::ops::Range<usize>, bool)> + '_ {
        // A value ends where the next key starts, the last one before the closing `}`.
        let ends = self.spans.iter().skip(1).map(|s| s.1).chain(std::iter::once(self.len.saturating_sub(1)));
        // Every escape is longer than the byte it stands for: a string whose text is its
        // own length plus the quotes has none.
        self.spans.iter().zip(ends).map(|(&(k, _, start, plain_len), end)| (k, start..end, end - start == plain_len))
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// [`decode_message_reusing`] as JSON text, recording where the top-level members were
/// written into `members` (valid when this returns `Ok`; relative to the event's start in
/// `out`).
pub fn decode_message_members(
    msg: &[u8],
    warnings: &mut Vec<String>,
    out: &mut Vec<u8>,
    reuse: &mut Reuse,
    members: &mut Members,
) -> Result<()> {
    let flat = Flat::read(msg);
    let nested = if flat.is_none() { Nested::read(msg) } else { None };
    decode_members_read(msg, flat.as_ref(), nested.as_ref(), warnings, out, reuse, members)
}

/// [`decode_message_members`] of a message [`Flat::read`] and [`Nested::read`] have
/// already read: `flat`, its flat event (`None`: not one), else `nested`, its nested
/// event (`None`: not one the wire path may take).
pub(super) fn decode_members_read(
    msg: &[u8],
    flat: Option<&Flat<'_>>,
    nested: Option<&Nested<'_>>,
    warnings: &mut Vec<String>,
    out: &mut Vec<u8>,
    reuse: &mut Reuse,
    members: &mut Members,
) -> Result<()> {
    members.spans.clear();
    let start = out.len();
    let r = match flat {
        Some(flat) => {
            flat.write_json(out, Some(&mut *members));
            Ok(())
        }
        None => decode_general(msg, nested, warnings, out, Format::Json, reuse, Some(&mut *members)),
    };
    members.len = out.len() - start;
    r
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

use super::MAX_SAFE_INT as MAX_SAFE;

/// int64 -> JS number: outside ±(2^53 − 1) the reference fails.
fn check_safe(v: i64) -> Result<()> {
    if v > MAX_SAFE {
        return Err(invalid("Value is larger than Number.MAX_SAFE_INTEGER"));
    }
    if v < -MAX_SAFE {
        return Err(invalid("Value is smaller than Number.MIN_SAFE_INTEGER"));
    }
    Ok(())
}

fn bad_payload(e: prost::DecodeError) -> Error {
    invalid(format!("Invalid event: {e}"))
}

fn write_usage(w: &mut W, list: &[pb::Usage]) -> Result<()> {
    let mut a = w.arr();
    for u in list {
        w.elem(&mut a);
        let ints = [u.input_tokens, u.output_tokens, u.total_tokens, u.reasoning_tokens, u.cached_input_tokens, u.cache_write_input_tokens];
        write_usage_entry(w, u.provider.as_deref(), u.model.as_deref(), ints)?;
    }
    w.end_arr(a);
    Ok(())
}

/// One `Usage` object (fields 1..=8: the two names, then the counts in field order); the
/// prost path and the wire path ([`nested`]) both write it here.
fn write_usage_entry(w: &mut W, provider: Option<&str>, model: Option<&str>, ints: [Option<i64>; 6]) -> Result<()> {
    const COUNTS: [&str; 6] =
        ["inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens", "cacheWriteInputTokens"];
    let mut o = w.obj();
    if let Some(p) = provider {
        w.put_str(&mut o, "provider", p);
    }
    if let Some(m) = model {
        w.put_str(&mut o, "model", m);
    }
    for (k, v) in COUNTS.into_iter().zip(ints) {
        if let Some(v) = v {
            w.put_int(&mut o, k, v)?;
        }
    }
    w.end_obj(o);
    Ok(())
}

fn write_source(w: &mut W, s: &pb::input_content_source::Source) {
    use pb::input_content_source::Source;
    let mut o = w.obj();
    match s {
        Source::Data(d) => {
            w.put_str(&mut o, "type", "data");
            w.put_str(&mut o, "value", &d.value);
            w.put_str(&mut o, "mimeType", &d.mime_type);
        }
        Source::Url(u) => {
            w.put_str(&mut o, "type", "url");
            w.put_str(&mut o, "value", &u.value);
            w.put_opt(&mut o, "mimeType", &u.mime_type);
        }
        Source::File(f) => {
            w.put_str(&mut o, "type", "file");
            w.put_str(&mut o, "value", &f.value);
            w.put_opt(&mut o, "provider", &f.provider);
            w.put_opt(&mut o, "mimeType", &f.mime_type);
        }
    }
    w.end_obj(o);
}

fn write_parts(w: &mut W, parts: &[pb::InputContent], warnings: &mut Vec<String>) -> Result<()> {
    use pb::input_content::Part;
    let mut a = w.arr();
    for p in parts {
        let (ty, source, metadata, id) = match &p.part {
            None => {
                warnings.push("[ag-ui][proto] Dropped a content part with no known kind".into());
                continue;
            }
            Some(Part::Text(t)) => {
                w.elem(&mut a);
                let mut o = w.obj();
                w.put_str(&mut o, "type", "text");
                w.put_opt(&mut o, "id", &t.id);
                w.put_str(&mut o, "text", &t.text);
                w.put_value(&mut o, "metadata", &t.metadata)?;
                w.end_obj(o);
                continue;
            }
            Some(Part::Image(m)) => ("image", &m.source, &m.metadata, &m.id),
            Some(Part::Audio(m)) => ("audio", &m.source, &m.metadata, &m.id),
            Some(Part::Video(m)) => ("video", &m.source, &m.metadata, &m.id),
            Some(Part::Document(m)) => ("document", &m.source, &m.metadata, &m.id),
        };
        if source.as_ref().is_some_and(|s| s.source.is_none()) {
            // A source with no known arm drops the whole part (reference).
            warnings.push("[ag-ui][proto] Dropped a content part whose source has no known kind".into());
            continue;
        }
        w.elem(&mut a);
        let mut o = w.obj();
        w.put_str(&mut o, "type", ty);
        w.put_opt(&mut o, "id", id);
        if let Some(s) = source.as_ref().and_then(|s| s.source.as_ref()) {
            w.key(&mut o, "source");
            write_source(w, s);
        }
        w.put_value(&mut o, "metadata", metadata)?;
        w.end_obj(o);
    }
    w.end_arr(a);
    Ok(())
}

fn write_tool_call(w: &mut W, t: &pb::ToolCall) {
    let function = t.function.as_ref().map(|f| (&f.name[..], &f.arguments[..]));
    let metadata = t.metadata.as_ref().map(|m| &m.0[..]);
    write_tool_call_of(w, &t.id, &t.r#type, function, metadata, t.encrypted_value.as_deref());
}

/// One tool call object (the prost path's and the wire path's, [`nested`]).
fn write_tool_call_of(
    w: &mut W,
    id: &str,
    ty: &str,
    function: Option<(&str, &str)>,
    metadata: Option<&[u8]>,
    encrypted_value: Option<&str>,
) {
    let mut o = w.obj();
    w.put_str(&mut o, "id", id);
    w.put_str(&mut o, "type", ty);
    if let Some((name, arguments)) = function {
        w.key(&mut o, "function");
        let mut fo = w.obj();
        w.put_str(&mut fo, "name", name);
        w.put_str(&mut fo, "arguments", arguments);
        w.end_obj(fo);
    }
    w.put_struct_body(&mut o, "metadata", metadata);
    if let Some(v) = encrypted_value {
        w.put_str(&mut o, "encryptedValue", v);
    }
    w.end_obj(o);
}

/// The content form a message is written with (§5.2.6).
enum Content<'m> {
    Absent,
    Str(&'m str),
    Parts(&'m [pb::InputContent]),
    Struct(&'m [u8]),
}

/// Which content form a message of `role` is written with, given the forms it carries
/// (string content, content parts, activity content), or why it is rejected (§5.2.6).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Form {
    Absent,
    Str,
    Parts,
    Struct,
}

fn content_form(role: &str, has_string: bool, has_parts: bool, has_activity: bool) -> Result<Form> {
    let activity = if has_activity { Form::Struct } else { Form::Absent };
    Ok(match role {
        "user" | "tool" => {
            if has_activity {
                return Err(invalid("Invalid event: message carries activity content for a non-activity role"));
            }
            if has_string && has_parts {
                return Err(invalid("Invalid event: message carries both string content and content parts"));
            }
            if has_string {
                Form::Str
            } else {
                Form::Parts
            }
        }
        "activity" => {
            if has_string || has_parts {
                return Err(invalid("Invalid event: activity content cannot ride with other content forms"));
            }
            activity
        }
        "developer" | "system" | "assistant" | "reasoning" => {
            if has_parts {
                return Err(invalid("Invalid event: message carries content parts for a role that has none"));
            }
            if has_activity {
                return Err(invalid("Invalid event: message carries activity content for a non-activity role"));
            }
            if has_string {
                Form::Str
            } else {
                Form::Absent
            }
        }
        _ => {
            if (has_string as u8 + has_parts as u8 + has_activity as u8) > 1 {
                return Err(invalid("Invalid event: message carries more than one content form"));
            }
            if has_string {
                Form::Str
            } else if has_parts {
                Form::Parts
            } else {
                activity
            }
        }
    })
}

/// A message's members other than its content and tool calls, as both paths read them.
struct MessageFields<'m> {
    id: &'m str,
    role: &'m str,
    name: Option<&'m str>,
    tool_call_id: Option<&'m str>,
    error: Option<&'m str>,
    metadata: Option<&'m [u8]>,
    subagent_run_id: Option<&'m str>,
    encrypted_value: Option<&'m str>,
    activity_type: Option<&'m str>,
}

/// One wire message -> JSON message, with the role rules of §5.2.6.
fn write_message(w: &mut W, m: &pb::Message, warnings: &mut Vec<String>) -> Result<()> {
    let form = content_form(&m.role, m.content.is_some(), !m.content_parts.is_empty(), m.activity_content.is_some())?;
    let content = match form {
        Form::Absent => Content::Absent,
        Form::Str => Content::Str(m.content.as_deref().unwrap_or_default()),
        Form::Parts => Content::Parts(&m.content_parts),
        Form::Struct => Content::Struct(m.activity_content.as_ref().map_or(&[][..], |s| &s.0[..])),
    };
    let f = MessageFields {
        id: &m.id,
        role: &m.role,
        name: m.name.as_deref(),
        tool_call_id: m.tool_call_id.as_deref(),
        error: m.error.as_deref(),
        metadata: m.metadata.as_ref().map(|s| &s.0[..]),
        subagent_run_id: m.subagent_run_id.as_deref(),
        encrypted_value: m.encrypted_value.as_deref(),
        activity_type: m.activity_type.as_deref(),
    };
    let tool_calls = |w: &mut W, o: &mut Open| {
        if !m.tool_calls.is_empty() {
            w.key(o, "toolCalls");
            let mut a = w.arr();
            for t in &m.tool_calls {
                w.elem(&mut a);
                write_tool_call(w, t);
            }
            w.end_arr(a);
        }
        Some(())
    };
    write_message_of(w, &f, content, tool_calls, warnings)
}

/// One message object (the prost path's and the wire path's, [`nested`]); `tool_calls`
/// writes the `toolCalls` member when there are any (`None`: the wire path declines).
fn write_message_of(
    w: &mut W,
    f: &MessageFields,
    content: Content,
    tool_calls: impl FnOnce(&mut W, &mut Open) -> Option<()>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let mut o = w.obj();
    // role (the message union's tag) first, see the event's `type`.
    w.put_str(&mut o, "role", f.role);
    w.put_str(&mut o, "id", f.id);
    match content {
        Content::Absent => {}
        Content::Str(s) => w.put_str(&mut o, "content", s),
        Content::Parts(p) => {
            w.key(&mut o, "content");
            write_parts(w, p, warnings)?;
        }
        Content::Struct(s) => {
            w.key(&mut o, "content");
            w.struct_body(s);
        }
    }
    let opt = |w: &mut W, o: &mut Open, k: &'static str, v: Option<&str>| {
        if let Some(v) = v {
            w.put_str(o, k, v);
        }
    };
    opt(w, &mut o, "name", f.name);
    tool_calls(w, &mut o).ok_or_else(|| invalid("Invalid event: a tool call the wire path declines"))?;
    opt(w, &mut o, "toolCallId", f.tool_call_id);
    opt(w, &mut o, "error", f.error);
    w.put_struct_body(&mut o, "metadata", f.metadata);
    opt(w, &mut o, "subagentRunId", f.subagent_run_id);
    opt(w, &mut o, "encryptedValue", f.encrypted_value);
    opt(w, &mut o, "activityType", f.activity_type);
    w.end_obj(o);
    Ok(())
}

fn write_messages(w: &mut W, list: &[pb::Message], warnings: &mut Vec<String>) -> Result<()> {
    let mut a = w.arr();
    for m in list {
        w.elem(&mut a);
        write_message(w, m, warnings)?;
    }
    w.end_arr(a);
    Ok(())
}

fn write_patch(w: &mut W, ops: &[pb::JsonPatchOperation]) -> Result<()> {
    let mut a = w.arr();
    for op in ops {
        w.elem(&mut a);
        write_op(w, op.op, &op.path, op.from.as_deref(), op.value.as_ref().map(|v| &v.0[..]))?;
    }
    w.end_arr(a);
    Ok(())
}

/// One JSON Patch operation object (the prost path's and the wire path's).
fn write_op(w: &mut W, op: i32, path: &str, from: Option<&str>, value: Option<&[u8]>) -> Result<()> {
    const NAMES: [&str; 6] = ["add", "remove", "replace", "move", "copy", "test"];
    let mut o = w.obj();
    // An enum number without a name is kept as its decimal string.
    match NAMES.get(op as usize) {
        Some(n) if op >= 0 => w.put_str(&mut o, "op", n),
        _ => w.put_str(&mut o, "op", &op.to_string()),
    }
    w.put_str(&mut o, "path", path);
    if let Some(f) = from {
        w.put_str(&mut o, "from", f);
    }
    w.put_value_body(&mut o, "value", value)?;
    w.end_obj(o);
    Ok(())
}

/// The checks [`write_interrupt`] makes, without writing (see RUN_FINISHED's outcome).
fn check_interrupt(i: &pb::Interrupt) -> Result<()> {
    for v in [&i.response_schema, &i.metadata].into_iter().flatten() {
        wkt::value_has_kind(&v.0).map_err(bad_payload)?;
    }
    Ok(())
}

fn write_interrupts(w: &mut W, list: &[pb::Interrupt]) -> Result<()> {
    let mut a = w.arr();
    for i in list {
        w.elem(&mut a);
        let mut o = w.obj();
        w.put_str(&mut o, "id", &i.id);
        w.put_str(&mut o, "reason", &i.reason);
        w.put_opt(&mut o, "message", &i.message);
        w.put_opt(&mut o, "toolCallId", &i.tool_call_id);
        w.put_value(&mut o, "responseSchema", &i.response_schema)?;
        w.put_opt(&mut o, "expiresAt", &i.expires_at);
        w.put_value(&mut o, "metadata", &i.metadata)?;
        w.put_opt(&mut o, "subagentRunId", &i.subagent_run_id);
        w.end_obj(o);
    }
    w.end_arr(a);
    Ok(())
}

fn write_input(w: &mut W, i: &pb::RunAgentInput, warnings: &mut Vec<String>) -> Result<()> {
    let mut o = w.obj();
    w.put_str(&mut o, "threadId", &i.thread_id);
    w.put_str(&mut o, "runId", &i.run_id);
    w.put_opt(&mut o, "protocolVersion", &i.protocol_version);
    w.put_opt(&mut o, "parentRunId", &i.parent_run_id);
    w.put_value(&mut o, "state", &i.state)?;
    w.key(&mut o, "messages");
    write_messages(w, &i.messages, warnings)?;
    w.key(&mut o, "tools");
    let mut a = w.arr();
    for t in &i.tools {
        w.elem(&mut a);
        let mut to = w.obj();
        w.put_str(&mut to, "name", &t.name);
        w.put_str(&mut to, "description", &t.description);
        w.put_value(&mut to, "parameters", &t.parameters)?;
        w.put_struct(&mut to, "metadata", &t.metadata);
        w.end_obj(to);
    }
    w.end_arr(a);
    w.key(&mut o, "context");
    let mut a = w.arr();
    for c in &i.context {
        w.elem(&mut a);
        let mut co = w.obj();
        w.put_str(&mut co, "description", &c.description);
        w.put_str(&mut co, "value", &c.value);
        w.end_obj(co);
    }
    w.end_arr(a);
    w.put_value(&mut o, "forwardedProps", &i.forwarded_props)?;
    w.key(&mut o, "resume");
    let mut a = w.arr();
    for r in &i.resume {
        w.elem(&mut a);
        let mut ro = w.obj();
        w.put_str(&mut ro, "interruptId", &r.interrupt_id);
        w.put_str(&mut ro, "status", &r.status);
        w.put_value(&mut ro, "payload", &r.payload)?;
        w.put_struct(&mut ro, "metadata", &r.metadata);
        w.end_obj(ro);
    }
    w.end_arr(a);
    w.end_obj(o);
    Ok(())
}
// ---------------------------------------------------------------------------------
// Flat events straight from the wire
// ---------------------------------------------------------------------------------
//
// Most of a stream is small flat events (TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS, …): string
// fields and a base event with at most `type` and `timestamp`. For those, decoding into
// prost types first costs more than the rest of the work (a String allocation and a copy
// per field), so they are written from the wire bytes directly. Only the plain case is
// taken: one envelope field, each field at most once with its schema wire type, no
// unknown fields, valid UTF-8, a matching type and a safe timestamp. Anything else
// returns `false` having written nothing, and takes the prost path, which gives the exact
// result or error (the two agree on every input the fast path takes: see the tests).

/// `,"name":`, a member's key after another ([`Flat::write_json`] copies it whole).
macro_rules! key {
    ($name:literal) => {
        concat!(",\"", $name, "\":")
    };
}

/// The name in a [`key!`].
#[inline(always)]
fn key_name(key: &'static str) -> &'static str {
    &key[2..key.len() - 2]
}

/// Per flat arm (envelope field number): the arm message's string fields in output
/// order, as (field number, its [`key!`], proto3 `optional`), from the event table. Field
/// 1 is the base event; the string fields are numbered 2, 3, ... in order (the table's
/// test holds them to it).
fn flat_fields(arm: u32) -> Option<&'static [(u32, &'static str, bool)]> {
    macro_rules! flat {
        (flat; $( $n:literal $k:literal $kind:ident ),*) => {
            &[$( ($n, key!($k), optional!($kind)) ),*]
        };
        ($path:ident; $($rest:tt)*) => {
            return None
        };
    }
    macro_rules! optional {
        (Str) => {
            false
        };
        (Opt) => {
            true
        };
    }
    macro_rules! arms {
        (() $( $arm:literal $en:literal $ty:literal $v:ident($m:ident) $path:ident {
            $( $n:literal $f:ident $k:literal $kind:ident ),* $(,)?
        } )*) => {
            Some(match arm {
                $( $arm => flat!($path; $( $n $k $kind ),*), )*
                _ => return None,
            })
        };
    }
    event_table!(arms)
}

/// One length-delimited field: (field number, payload), or None if it is anything else.
#[inline(always)]
fn len_field<'a>(b: &mut &'a [u8]) -> Option<(u32, &'a [u8])> {
    // A one-byte key and length (most fields of flat events) read here, the others by
    // prost's readers (the same numbers; a field number 0 is no field).
    if let [key, n, ref rest @ ..] = **b {
        if key < 0x80 && key & 7 == 2 && key >= 8 && n < 0x80 && usize::from(n) <= rest.len() {
            let (p, rest) = rest.split_at(usize::from(n));
            *b = rest;
            return Some((u32::from(key >> 3), p));
        }
    }
    let (tag, wt) = decode_key(b).ok()?;
    if wt != WireType::LengthDelimited {
        return None;
    }
    let n = decode_varint(b).ok()?;
    if n > b.len() as u64 {
        return None;
    }
    let (p, rest) = b.split_at(n as usize);
    *b = rest;
    Some((tag, p))
}

/// A flat event the fast path takes, read from its wire bytes: its arm, its string
/// fields (checked UTF-8, as bytes borrowed from the message: the writers take plain
/// short strings as bytes, and a string column checks its values once a batch) and its
/// timestamp. What
/// [`write_flat`] writes, and what a reader of its few members (agui-arrow's rows) takes
/// straight from the wire, with no JSON text to read them back from.
#[derive(Debug, Clone, Copy)]
pub struct Flat<'m> {
    arm: u32,
    fields: &'static [(u32, &'static str, bool)],
    strs: [Option<&'m [u8]>; 8],
    timestamp: Option<i64>,
}

impl<'m> Flat<'m> {
    /// `msg` as a flat event when it is one in the plain case (see above); `None` for
    /// anything else, which the general path decodes to the exact result or error.
    /// (Inlined: returned from a call, the event was copied out, ~25 instructions.)
    #[inline(always)]
    pub fn read(msg: &'m [u8]) -> Option<Flat<'m>> {
        let mut b = msg;
        let (arm, mut body) = len_field(&mut b)?;
        if !b.is_empty() {
            return None;
        }
        let fields = flat_fields(arm)?;
        let mut slots: [Option<&[u8]>; 8] = [None; 8];
        while !body.is_empty() {
            let (f, p) = len_field(&mut body)?;
            // Field 1 is the base event; others must be this arm's string fields (numbered
            // from 2 on: `flat_fields`).
            let slot = slots.get_mut(f as usize).filter(|_| f as usize <= fields.len() + 1)?;
            if slot.replace(p).is_some() {
                return None;
            }
        }
        let mut base = slots[1]?;
        let (mut ty, mut ts): (Option<u64>, Option<u64>) = (None, None);
        while !base.is_empty() {
            // (A one-byte key and value read here: the type.)
            let (f, v) = match *base {
                [key @ (0x08 | 0x10), v, ref rest @ ..] if v < 0x80 => {
                    base = rest;
                    (u32::from(key >> 3), u64::from(v))
                }
                _ => {
                    let Ok((f, WireType::Varint)) = decode_key(&mut base) else { return None };
                    (f, decode_varint(&mut base).ok()?)
                }
            };
            let slot = match f {
                1 => &mut ty,
                2 => &mut ts,
                _ => return None,
            };
            if slot.replace(v).is_some() {
                return None;
            }
        }
        // prost reads an enum as the low 32 bits of the varint, an int64 as all 64.
        if ty.unwrap_or(0) as i32 as i64 != arm_number_to_enum(arm) as i64 {
            return None;
        }
        let timestamp = ts.map(|v| v as i64);
        if timestamp.is_some_and(|v| check_safe(v).is_err()) {
            return None;
        }
        // Each string checked once, here (checking twice was ~9% of a protobuf log's
        // `to_arrow`): ASCII, most, by words (std's `from_utf8` takes a short string byte
        // by byte, ~10 instructions a byte), else by `from_utf8`.
        for p in slots[2..].iter().flatten() {
            if !p.is_ascii() && std::str::from_utf8(p).is_err() {
                return None;
            }
        }
        let mut strs = slots;
        strs[1] = None;
        Some(Flat { arm, fields, strs, timestamp })
    }

    /// The position of its `type` in [`EVENT_TYPES`].
    #[inline]
    pub fn type_index(&self) -> usize {
        arm_number_to_enum(self.arm) as usize
    }

    #[inline]
    pub fn timestamp(&self) -> Option<i64> {
        self.timestamp
    }

    /// The JSON keys of its arm's string members, in writing order (what the `k` of
    /// [`Flat::members`] counts), the same for every event of the arm.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> {
        self.fields.iter().map(|f| key_name(f.1))
    }

    /// Its string members as written, in order: (`k`, the key's place in
    /// [`Flat::keys`], value); a required member absent is written as `""`, an optional
    /// one absent is not.
    #[inline(always)]
    pub fn members(&self) -> impl Iterator<Item = (usize, &'m [u8])> + '_ {
        self.fields.iter().enumerate().filter_map(|(k, &(f, _, optional))| match self.strs[f as usize] {
            Some(t) => Some((k, t)),
            None if !optional => Some((k, &b""[..])),
            None => None,
        })
    }

    /// Its JSON text, appended to `out`: what [`W`] writes for it, the keys (schema names:
    /// nothing to escape) and the type's value as constant pieces, the values by the
    /// core's one string writer. `members`: where the top-level members went (relative
    /// to the text's start), as [`W::key_of`] records them.
    #[inline(always)]
    pub fn write_json(&self, out: &mut Vec<u8>, members: Option<&mut Members>) {
        self.write_json_each(out, members, |_, _| {})
    }

    /// [`Flat::write_json`] handing each member written to `each` as well (`k`, its key's
    /// place in [`Flat::keys`], and its value), in the same pass: a reader of the values
    /// (agui-arrow's columns) walks the members once.
    #[inline(always)]
    pub fn write_json_each(&self, out: &mut Vec<u8>, mut members: Option<&mut Members>, mut each: impl FnMut(usize, &'m [u8])) {
        let top = out.len();
        let ty = EVENT_TYPES[self.type_index()];
        // (Type names and keys are schema names, nothing to escape: copied as they are,
        // by the short copy, inlined up to the longest type name and the longest key,
        // `,"parentSubagentRunId":`, 23 bytes.)
        out.extend_from_slice(b"{\"type\":\"");
        crate::copy::push_upto::<{ super::LONGEST_TYPE }, _, _>(out, ty.as_bytes());
        out.push(b'"');
        if let Some(m) = members.as_deref_mut() {
            m.spans.push(("type", 1, 8, ty.len() + 2));
        }
        for (k, v) in self.members() {
            each(k, v);
            let (key, key_at) = (self.fields[k].1, out.len());
            crate::copy::push_upto::<23, _, _>(out, key.as_bytes());
            let at = out.len();
            crate::json::write_utf8(out, v);
            if let Some(m) = members.as_deref_mut() {
                m.spans.push((key_name(key), key_at - top, at - top, v.len() + 2));
            }
        }
        if let Some(t) = self.timestamp {
            let key_at = out.len();
            out.extend_from_slice(b",\"timestamp\":");
            let at = out.len();
            crate::json::write_i64(out, t);
            if let Some(m) = members {
                m.spans.push(("timestamp", key_at - top, at - top, 0));
            }
        }
        out.push(b'}');
    }

    /// Its MessagePack map, as [`W`] writes it (a map of at most 8 members: a one-byte
    /// header).
    fn write_msgpack(&self, out: &mut Vec<u8>) {
        use super::msgpack;
        let at = out.len();
        out.push(0x80);
        msgpack::str(out, "type");
        msgpack::str(out, EVENT_TYPES[self.type_index()]);
        let mut n = 1;
        for (k, v) in self.members() {
            msgpack::str(out, key_name(self.fields[k].1));
            msgpack::str_bytes(out, v);
            n += 1;
        }
        if let Some(v) = self.timestamp {
            msgpack::str(out, "timestamp");
            msgpack::int(out, v);
            n += 1;
        }
        out[at] |= n;
    }
}

/// Write a flat event from its wire bytes; `false` (nothing written) when not plain.
#[inline(always)]
fn write_flat(msg: &[u8], out: &mut Vec<u8>, fmt: Format, members: Option<&mut Members>) -> bool {
    let Some(flat) = Flat::read(msg) else { return false };
    match fmt {
        Format::Json => flat.write_json(out, members),
        Format::MsgPack => flat.write_msgpack(out),
    }
    true
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
    if write_flat(msg, out, fmt, None) || nested::write_nested(msg, out, fmt, None) {
        return Ok(());
    }
    decode_with_prost(msg, warnings, out, fmt)
}

/// The general path alone (envelope guard, prost, post-processing), without the fast
/// path for flat events: [`decode_message_as`] must give the same result (the fuzz
/// target `proto_roundtrip` checks it).
pub fn decode_with_prost(msg: &[u8], warnings: &mut Vec<String>, out: &mut Vec<u8>, fmt: Format) -> Result<()> {
    guard(msg)?;
    let ev = pb::Event::decode(msg).map_err(|e| invalid(format!("Invalid event: {e}")))?;
    check_parts(&ev, msg)?;
    write_event(&ev, warnings, out, fmt, None)
}

/// An envelope kept from one message to the next (streams). Decoding into it again
/// reuses the string buffers of the previous event when it is of the same kind (most
/// of a stream), instead of a malloc/free pair per string field: prost merges into the
/// arm already there, and a cleared message is exactly a default one.
#[derive(Debug, Default)]
pub struct Reuse(pb::Event);

/// [`decode_message_as`] decoding into `reuse` (same results).
pub fn decode_message_reusing(
    msg: &[u8],
    warnings: &mut Vec<String>,
    out: &mut Vec<u8>,
    fmt: Format,
    reuse: &mut Reuse,
) -> Result<()> {
    decode_reusing(msg, warnings, out, fmt, reuse, None)
}

fn decode_reusing(
    msg: &[u8],
    warnings: &mut Vec<String>,
    out: &mut Vec<u8>,
    fmt: Format,
    reuse: &mut Reuse,
    mut members: Option<&mut Members>,
) -> Result<()> {
    if write_flat(msg, out, fmt, members.as_deref_mut()) {
        return Ok(());
    }
    decode_general(msg, Nested::read(msg).as_ref(), warnings, out, fmt, reuse, members)
}

/// [`decode_reusing`] of a message that is not a flat event in the plain case
/// (`nested`: its [`Nested::read`]).
fn decode_general(
    msg: &[u8],
    nested: Option<&Nested<'_>>,
    warnings: &mut Vec<String>,
    out: &mut Vec<u8>,
    fmt: Format,
    reuse: &mut Reuse,
    mut members: Option<&mut Members>,
) -> Result<()> {
    if nested.is_some_and(|n| n.write(out, fmt, members.as_deref_mut())) {
        return Ok(());
    }
    let arm = guard(msg)?;
    let ev = &mut reuse.0;
    match &mut ev.event {
        Some(a) if Some(arm_number(a)) == arm => clear_arm(a),
        _ => ev.event = None,
    }
    ev.merge(msg).map_err(|e| invalid(format!("Invalid event: {e}")))?;
    check_parts(ev, msg)?;
    write_event(ev, warnings, out, fmt, members)
}

/// [`decode_message_into`] as a `serde_json::Value` (tests and Rust callers).
pub fn decode_message(msg: &[u8], warnings: &mut Vec<String>) -> Result<serde_json::Value> {
    let mut out = Vec::new();
    decode_message_into(msg, warnings, &mut out)?;
    Ok(serde_json::from_slice(&out).expect("the decoder writes valid JSON"))
}

/// JSON text of an already decoded envelope.
pub fn event_to_json_text(ev: pb::Event, warnings: &mut Vec<String>, out: &mut Vec<u8>) -> Result<()> {
    write_event(&ev, warnings, out, Format::Json, None)
}

/// Two arms inside a content part or a source are rejected like the reference does;
/// only worth scanning when the event can carry parts.
fn check_parts(ev: &pb::Event, msg: &[u8]) -> Result<()> {
    if matches!(
        ev.event,
        Some(Arm::ToolCallResult(_)) | Some(Arm::MessagesSnapshot(_)) | Some(Arm::RunStarted(_))
    ) && has_ambiguous_part(msg)
    {
        return Err(invalid("Invalid event: a content part or source carries two different kinds"));
    }
    Ok(())
}

/// Write one decoded envelope as its JSON event (§5.2.4 – §5.2.8) in `fmt`, appended to
/// `out`; on error `out` is left as it was.
fn write_event(
    ev: &pb::Event,
    warnings: &mut Vec<String>,
    out: &mut Vec<u8>,
    fmt: Format,
    members: Option<&mut Members>,
) -> Result<()> {
    let start = out.len();
    let mut w = W { out, fmt, top: start, members, deferred: None };
    let r = event_body(ev, warnings, &mut w);
    let r = match (r, w.deferred.take()) {
        (Ok(()), Some(e)) => Err(e),
        (r, _) => r,
    };
    r.inspect_err(|_| out.truncate(start))
}

fn event_body(ev: &pb::Event, warnings: &mut Vec<String>, w: &mut W) -> Result<()> {
    let arm = ev.event.as_ref().ok_or_else(|| invalid("Invalid event: no event arm"))?;
    let arm_type = arm_number_to_type(arm_number(arm));
    let mut o = w.obj();
    // The discriminator goes first: msgspec dispatches a tagged union without scanning
    // ahead when the tag leads (key order carries no meaning in JSON).
    w.put_str(&mut o, "type", arm_type);
    let mut outcome: Option<Outcome> = None;
    // Each member as its kind is written (the event table's order).
    macro_rules! put {
        (Str, $e:ident . $f:ident, $k:literal) => {
            w.put_str(&mut o, $k, &$e.$f)
        };
        (Opt, $e:ident . $f:ident, $k:literal) => {
            w.put_opt(&mut o, $k, &$e.$f)
        };
        (Value, $e:ident . $f:ident, $k:literal) => {
            w.put_value(&mut o, $k, &$e.$f)?
        };
        (Keep, $e:ident . $f:ident, $k:literal) => {
            w.put_value(&mut o, $k, &$e.$f)?
        };
        (ActivityContent, $e:ident . $f:ident, $k:literal) => {
            w.put_struct(&mut o, $k, &$e.$f)
        };
        (Bool, $e:ident . $f:ident, $k:literal) => {
            if let Some(r) = $e.$f {
                w.key(&mut o, $k);
                w.bool(r);
            }
        };
        (Patch, $e:ident . $f:ident, $k:literal) => {{
            w.key(&mut o, $k);
            write_patch(w, &$e.$f)?;
        }};
        (Messages, $e:ident . $f:ident, $k:literal) => {{
            w.key(&mut o, $k);
            write_messages(w, &$e.$f, warnings)?;
        }};
        (Input, $e:ident . $f:ident, $k:literal) => {
            if let Some(i) = &$e.$f {
                w.key(&mut o, $k);
                write_input(w, i, warnings)?;
            }
        };
        (Usage, $e:ident . $f:ident, $k:literal) => {
            if !$e.$f.is_empty() {
                w.key(&mut o, $k);
                write_usage(w, &$e.$f)?;
            }
        };
        (ToolContent, $e:ident . $f:ident, $k:literal) => {
            write_tool_content(w, &mut o, $e, warnings)?
        };
        (RunOutcome, $e:ident . $f:ident, $k:literal) => {
            outcome = run_outcome(w, &mut o, $e)?
        };
        (SubagentOutcome, $e:ident . $f:ident, $k:literal) => {
            outcome = subagent_outcome(w, &mut o, $e)
        };
    }
    macro_rules! arms {
        (() $( $arm:literal $en:literal $ty:literal $v:ident($m:ident) $path:ident {
            $( $n:literal $f:ident $k:literal $kind:ident ),* $(,)?
        } )*) => {
            match arm {
                $( Arm::$v(e) => {
                    $( put!($kind, e.$f, $k); )*
                    &e.base_event
                } )*
            }
        };
    }
    let b = event_table!(arms);
    let b = b.as_ref().ok_or_else(|| invalid("Invalid event: the event has no base_event"))?;
    let (raw, meta) = (b.raw_event.as_ref().map(|v| &v.0[..]), b.metadata.as_ref().map(|m| &m.0[..]));
    write_base(w, o, arm_type, b.r#type, b.timestamp, raw, meta, outcome)
}

/// TOOL_CALL_RESULT's `content`: its string, else its parts (a list, empty when none).
fn write_tool_content(w: &mut W, o: &mut Open, e: &pb::ToolCallResultEvent, warnings: &mut Vec<String>) -> Result<()> {
    if e.content.is_some() && !e.content_parts.is_empty() {
        return Err(invalid("Invalid event: content carries both string content and content parts"));
    }
    match &e.content {
        Some(c) => w.put_str(o, "content", c),
        None => {
            w.key(o, "content");
            write_parts(w, &e.content_parts, warnings)?;
        }
    }
    Ok(())
}

/// RUN_FINISHED's outcome, written after the base event; without an outcome, its
/// pending tool calls and interrupts as members here (not valid 1.0 JSON, but what the
/// reference produces for such wire data).
fn run_outcome<'e>(w: &mut W, o: &mut Open, e: &'e pb::RunFinishedEvent) -> Result<Option<Outcome<'e>>> {
    e.interrupts.iter().try_for_each(check_interrupt)?;
    let has_p = !e.pending_tool_call_ids.is_empty();
    let has_i = !e.interrupts.is_empty();
    if e.outcome.is_empty() {
        if has_p {
            w.key(o, "pendingToolCallIds");
            w.str_array(&e.pending_tool_call_ids);
        }
        if has_i {
            w.key(o, "interrupts");
            write_interrupts(w, &e.interrupts)?;
        }
        return Ok(None);
    }
    let is_interrupt = e.outcome == "interrupt";
    Ok(Some(Outcome::Run {
        ty: &e.outcome,
        interrupts: (is_interrupt || has_i).then_some(&e.interrupts[..]),
        pending: has_p.then_some(&e.pending_tool_call_ids[..]),
    }))
}

/// SUBAGENT_FINISHED's outcome, written after the base event; without one, its
/// interrupt ids as a member here.
fn subagent_outcome<'e>(w: &mut W, o: &mut Open, e: &'e pb::SubagentFinishedEvent) -> Option<Outcome<'e>> {
    let has_ids = !e.interrupt_ids.is_empty();
    if e.outcome.is_empty() {
        if has_ids {
            w.key(o, "interruptIds");
            w.str_array(&e.interrupt_ids);
        }
        return None;
    }
    Some(Outcome::Subagent { ty: &e.outcome, ids: has_ids.then_some(&e.interrupt_ids[..]) })
}

/// Written after the base event's fields (RUN_FINISHED / SUBAGENT_FINISHED).
enum Outcome<'e> {
    Run { ty: &'e str, interrupts: Option<&'e [pb::Interrupt]>, pending: Option<&'e [String]> },
    Subagent { ty: &'e str, ids: Option<&'e [String]> },
}

/// The end of an event object: the base event's checks and fields, then the outcome
/// (the prost path's and the wire path's, [`nested`]).
#[allow(clippy::too_many_arguments)]
fn write_base(
    w: &mut W,
    mut o: Open,
    arm_type: &str,
    ty: i32,
    timestamp: Option<i64>,
    raw_event: Option<&[u8]>,
    metadata: Option<&[u8]>,
    outcome: Option<Outcome>,
) -> Result<()> {
    if ty < 0 || EVENT_TYPES.get(ty as usize) != Some(&arm_type) {
        let declared = EVENT_TYPES.get(ty as usize).filter(|_| ty >= 0).copied().unwrap_or("undefined");
        return Err(invalid(format!(
            "Invalid event: envelope carries {arm_type} but the base event declares {declared}"
        )));
    }
    if let Some(ts) = timestamp {
        w.put_int(&mut o, "timestamp", ts)?;
    }
    w.put_value_body(&mut o, "rawEvent", raw_event)?;
    w.put_struct_body(&mut o, "metadata", metadata);
    match outcome {
        None => {}
        Some(Outcome::Run { ty, interrupts, pending }) => {
            w.key(&mut o, "outcome");
            let mut oc = w.obj();
            w.put_str(&mut oc, "type", ty);
            if let Some(i) = interrupts {
                w.key(&mut oc, "interrupts");
                write_interrupts(w, i)?;
            }
            if let Some(p) = pending {
                w.key(&mut oc, "pendingToolCallIds");
                w.str_array(p);
            }
            w.end_obj(oc);
        }
        Some(Outcome::Subagent { ty, ids }) => {
            w.key(&mut o, "outcome");
            let mut oc = w.obj();
            w.put_str(&mut oc, "type", ty);
            if let Some(ids) = ids {
                w.key(&mut oc, "interruptIds");
                w.str_array(ids);
            }
            w.end_obj(oc);
        }
    }
    w.end_obj(o);
    Ok(())
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

#[cfg(test)]
mod tests {
    //! The fast paths against the general one: [`write_flat`] must give the prost path's
    //! bytes whenever it takes a message, and decoding into a [`Reuse`] must give what a
    //! fresh decode gives, across the vectors, mutations of them and random flat events.
    use super::*;

    use crate::test_rng::Rng;

    pub(super) fn vector_messages() -> Vec<Vec<u8>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/codec");
        let mut out = Vec::new();
        for name in ["events.jsonl", "invalid_events.jsonl"] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            for line in text.lines().filter(|l| !l.is_empty()) {
                let case: serde_json::Value = crate::proto::parse_json(line.as_bytes()).unwrap();
                if let Some(h) = case.get("proto_frame_hex").and_then(|h| h.as_str()) {
                    let b: Vec<u8> = (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect();
                    out.push(b[4..].to_vec());
                }
            }
        }
        out
    }

    pub(super) fn mutate(m: &[u8], rng: &mut Rng, pool: &[Vec<u8>]) -> Vec<u8> {
        let mut b = m.to_vec();
        match rng.below(4) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 if !b.is_empty() => b.truncate(rng.below(b.len())),
            2 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next_u64() as u8;
            }
            _ => {
                let o = &pool[rng.below(pool.len())];
                b.extend_from_slice(&o[..rng.below(o.len() + 1)]);
            }
        }
        b
    }

    fn varint(out: &mut Vec<u8>, v: u64) {
        prost::encoding::encode_varint(v, out);
    }

    fn len_field(out: &mut Vec<u8>, f: u32, p: &[u8]) {
        varint(out, (f as u64) << 3 | 2);
        varint(out, p.len() as u64);
        out.extend_from_slice(p);
    }

    /// A flat event, mostly plain, sometimes with one of the shapes the fast path leaves
    /// to prost (duplicates, unknown fields, bad UTF-8, wrong type, unsafe timestamps).
    fn random_flat(rng: &mut Rng) -> Vec<u8> {
        const ARMS: [u32; 21] = [1, 2, 3, 4, 5, 6, 14, 15, 16, 17, 18, 19, 20, 21, 25, 26, 27, 28, 29, 30, 31];
        let arm = ARMS[rng.below(ARMS.len())];
        let strs: [&[u8]; 7] = [b"", b"m1", b"Hello, world", "h\u{e9}llo \u{1f600}".as_bytes(), b"\xff\xfe", b"a\"b\\c\n", &[b'x'; 40]];
        let mut body = Vec::new();
        let mut base = Vec::new();
        let enum_value = EVENT_TYPES.iter().position(|t| *t == arm_number_to_type(arm)).unwrap() as u64;
        let ty = match rng.below(10) {
            0 => rng.below(40) as u64,
            1 => enum_value | (1 << 32),
            _ => enum_value,
        };
        if ty != 0 || rng.below(2) == 0 {
            varint(&mut base, 1 << 3);
            varint(&mut base, ty);
        }
        if rng.below(3) == 0 {
            varint(&mut base, 2 << 3);
            let ts = match rng.below(4) {
                0 => MAX_SAFE as u64,
                1 => (MAX_SAFE + 1) as u64,
                2 => (-MAX_SAFE) as u64,
                _ => rng.next_u64() % 2_000_000_000_000,
            };
            varint(&mut base, ts);
        }
        if rng.below(15) == 0 {
            len_field(&mut base, 4, b"");
        }
        let mut fields: Vec<u32> = vec![1];
        let known: Vec<u32> = flat_fields(arm).map_or(vec![2, 3, 4, 5], |fs| fs.iter().map(|x| x.0).collect());
        for f in known {
            if rng.below(3) > 0 {
                fields.push(f);
            }
        }
        if rng.below(15) == 0 {
            fields.push(2 + rng.below(7) as u32);
        }
        if rng.below(10) == 0 {
            fields.push(fields[rng.below(fields.len())]);
        }
        for i in (1..fields.len()).rev() {
            if rng.below(4) == 0 {
                fields.swap(i, rng.below(i + 1));
            }
        }
        for f in fields {
            if f == 1 {
                if rng.below(20) > 0 {
                    len_field(&mut body, 1, &base);
                }
            } else {
                let s = strs[rng.below(strs.len())];
                let s = if s.starts_with(b"\xff") && rng.below(4) > 0 { b"ok" } else { s };
                len_field(&mut body, f, s);
            }
        }
        let mut msg = Vec::new();
        len_field(&mut msg, arm, &body);
        if rng.below(20) == 0 {
            varint(&mut msg, 40 << 3);
            varint(&mut msg, 1);
        }
        msg
    }

    fn general(msg: &[u8], fmt: Format) -> (Result<Vec<u8>>, Vec<String>) {
        let mut out = b"prefix".to_vec();
        let mut w = Vec::new();
        let r = decode_with_prost(msg, &mut w, &mut out, fmt).map(|_| out[6..].to_vec());
        (r, w)
    }

    /// The codec vectors, 8 mutations of each, and `flats` random flat events.
    fn vectors_mutated(seed: u64, flats: usize) -> Vec<Vec<u8>> {
        let vectors = vector_messages();
        let mut rng = Rng(seed);
        let mut msgs = vectors.clone();
        for m in &vectors {
            for _ in 0..8 {
                msgs.push(mutate(m, &mut rng, &vectors));
            }
        }
        for _ in 0..flats {
            msgs.push(random_flat(&mut rng));
        }
        msgs
    }

    /// `Flat::read` takes a field of a flat arm by its number alone: 2 to the count + 1.
    #[test]
    fn flat_fields_are_numbered_from_2() {
        for arm in 1..=40 {
            if let Some(fields) = flat_fields(arm) {
                assert!(fields.iter().enumerate().all(|(i, f)| f.0 as usize == i + 2), "arm {arm}");
                assert!(fields.len() + 1 < 8, "arm {arm}: a slot per field");
            }
        }
    }

    #[test]
    fn flat_fast_path_matches_prost_path() {
        let msgs = vectors_mutated(0x9e37_79b9_7f4a_7c15, 20_000);
        let mut taken = 0;
        for msg in &msgs {
            for fmt in [Format::Json, Format::MsgPack] {
                let mut out = b"prefix".to_vec();
                if write_flat(msg, &mut out, fmt, None) {
                    taken += 1;
                    let (want, warnings) = general(msg, fmt);
                    assert_eq!(want.as_deref().ok(), Some(&out[6..]), "message {msg:02x?}");
                    assert!(warnings.is_empty());
                } else {
                    assert_eq!(out, b"prefix", "nothing written when not taken");
                }
            }
        }
        // Both the plain and the leftover shapes are exercised.
        assert!(taken > 10_000 && taken < 2 * msgs.len() - 5_000, "{taken} of {}", 2 * msgs.len());
    }

    #[test]
    fn reused_envelope_decodes_like_a_fresh_one() {
        let vectors = vector_messages();
        let mut rng = Rng(7);
        let mut msgs = Vec::new();
        for _ in 0..3 {
            for m in &vectors {
                msgs.push(m.clone());
                msgs.push(mutate(m, &mut rng, &vectors));
            }
        }
        for fmt in [Format::Json, Format::MsgPack] {
            let mut reuse = Reuse::default();
            for msg in &msgs {
                let mut out = Vec::new();
                let mut w = Vec::new();
                let got = decode_message_reusing(msg, &mut w, &mut out, fmt, &mut reuse).map(|_| out);
                let mut out = Vec::new();
                let mut w2 = Vec::new();
                let want = decode_message_as(msg, &mut w2, &mut out, fmt).map(|_| out);
                assert_eq!(got, want);
                assert_eq!(w, w2);
            }
        }
    }

    /// The recorded members are the top-level members of the text written, in order,
    /// with their values' exact text, on the flat and the prost paths alike.
    #[test]
    fn members_are_the_top_level_members_written() {
        let msgs = vectors_mutated(11, 2_000);
        let (mut reuse, mut members, mut checked) = (Reuse::default(), Members::default(), 0);
        let (mut plains, mut escaped) = (0, 0);
        for msg in &msgs {
            let mut out = b"prefix".to_vec();
            let got = decode_message_members(msg, &mut Vec::new(), &mut out, &mut reuse, &mut members);
            let mut want = Vec::new();
            let r = decode_message_into(msg, &mut Vec::new(), &mut want);
            assert_eq!(got.is_ok(), r.is_ok());
            if got.is_err() {
                continue;
            }
            let text = &out[6..];
            assert_eq!(text, &want[..]);
            let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(text).unwrap();
            let mut seen: Vec<(&str, serde_json::Value)> =
                members.iter().map(|(k, v, _)| (k, serde_json::from_slice(&text[v]).unwrap())).collect();
            // A plain member is a string whose text between the quotes is its value; a
            // string member of the flat or `put_str` kind without escapes is plain.
            for (k, v, plain) in members.iter() {
                let value = serde_json::from_slice::<serde_json::Value>(&text[v.clone()]).unwrap();
                if plain {
                    let inner = std::str::from_utf8(&text[v.start + 1..v.end - 1]).unwrap();
                    assert_eq!(Some(inner), value.as_str(), "{k}");
                    plains += 1;
                } else if let Some(s) = value.as_str() {
                    escaped += text[v.clone()].contains(&b'\\') as usize;
                    // Only an escape, or a string written as a Value, is not plain.
                    assert!(text[v].contains(&b'\\') || !matches!(k, "type" | "messageId" | "delta" | "toolCallId"), "{k}: {s:?}");
                }
            }
            // The type leads (the writer's rule), then the members in any order, each once.
            assert_eq!(seen.first().map(|m| m.0), Some("type"));
            seen.sort_by(|a, b| a.0.cmp(b.0));
            let mut all: Vec<(&str, serde_json::Value)> = obj.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            all.sort_by(|a, b| a.0.cmp(b.0));
            assert_eq!(seen, all, "{}", String::from_utf8_lossy(text));
            checked += 1;
        }
        assert!(checked > 1_000, "{checked}");
        assert!(plains > 1_000 && escaped > 10, "{plains} plain, {escaped} escaped");
    }
}

/// Deepest nesting of arrays and maps in one MessagePack value (a scalar is 0, `[]` is
/// 1): the decoders check it against their `max_depth` before a recursive parser (msgspec)
/// sees the value. Iterative; bytes that end early stop the walk.
pub fn msgpack_depth(b: &[u8]) -> usize {
    // Big-endian length of `n` bytes at `i`; u64::MAX when the bytes end first.
    let len = |i: usize, n: usize| -> u64 {
        b.get(i..i + n).map_or(u64::MAX, |s| s.iter().fold(0u64, |a, &x| (a << 8) | x as u64))
    };
    let mut left: Vec<u64> = vec![1]; // values still to read at each open level
    let mut deepest = 0usize;
    let mut i = 0usize;
    while let Some(top) = left.last_mut() {
        if *top == 0 {
            left.pop();
            continue;
        }
        *top -= 1;
        let Some(&t) = b.get(i) else { break };
        i += 1;
        // (bytes to skip after the type byte, items of a container)
        let (skip, items): (u64, Option<u64>) = match t {
            0x80..=0x8f => (0, Some(2 * (t & 0x0f) as u64)),
            0x90..=0x9f => (0, Some((t & 0x0f) as u64)),
            0xa0..=0xbf => ((t & 0x1f) as u64, None),
            0xc4 | 0xd9 => (len(i, 1).saturating_add(1), None),
            0xc5 | 0xda => (len(i, 2).saturating_add(2), None),
            0xc6 | 0xdb => (len(i, 4).saturating_add(4), None),
            0xc7 => (len(i, 1).saturating_add(2), None),
            0xc8 => (len(i, 2).saturating_add(3), None),
            0xc9 => (len(i, 4).saturating_add(5), None),
            0xcc | 0xd0 => (1, None),
            0xcd | 0xd1 => (2, None),
            0xca | 0xce | 0xd2 => (4, None),
            0xcb | 0xcf | 0xd3 => (8, None),
            0xd4 => (2, None),
            0xd5 => (3, None),
            0xd6 => (5, None),
            0xd7 => (9, None),
            0xd8 => (17, None),
            0xdc => (2, Some(len(i, 2))),
            0xdd => (4, Some(len(i, 4))),
            0xde => (2, Some(len(i, 2).saturating_mul(2))),
            0xdf => (4, Some(len(i, 4).saturating_mul(2))),
            _ => (0, None), // fixints, nil, booleans
        };
        i = i.saturating_add(usize::try_from(skip).unwrap_or(usize::MAX));
        if let Some(n) = items {
            left.push(n);
            deepest = deepest.max(left.len() - 1);
        }
    }
    deepest
}

#[cfg(test)]
mod stream_tests {
    use super::msgpack_depth;

    #[test]
    fn depth_of_msgpack_values() {
        assert_eq!(msgpack_depth(&[0x01]), 0);
        assert_eq!(msgpack_depth(&[0x90]), 1);
        assert_eq!(msgpack_depth(&[0x91, 0x91, 0x90]), 3);
        // {"a": [1, "xy"], "b": {}}
        assert_eq!(msgpack_depth(&[0x82, 0xa1, b'a', 0x92, 0x01, 0xa2, b'x', b'y', 0xa1, b'b', 0x80]), 2);
        // array16 of 2 fixarrays, a str8 and a float64 on the way
        assert_eq!(msgpack_depth(&[0xdc, 0, 2, 0x91, 0xd9, 1, b'z', 0x91, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0]), 2);
        // 600 nested arrays
        assert_eq!(msgpack_depth(&vec![0x91; 600]), 600);
        // cut short: no panic
        assert_eq!(msgpack_depth(&[0xdd, 0, 0]), 1);
        assert_eq!(msgpack_depth(&[0xc6, 0xff]), 0);
    }

    #[test]
    fn feed_collect_goes_on_past_a_bad_message() {
        use crate::proto::{encode_json, Collected, EventArray, Format, StreamDecoder};
        let mut good = Vec::new();
        encode_json(br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}"#, true, &mut good).unwrap();
        let bad = [0u8, 0, 0, 3, 0xff, 0xff, 0xff];
        let stream = [&good[..], &bad[..], &good[..]].concat();
        for split in [1, 5, stream.len()] {
            let mut dec = StreamDecoder::new(1 << 20);
            let mut arr = EventArray::new(Format::MsgPack, 0);
            let mut got = Collected::default();
            let mut warnings = Vec::new();
            for chunk in stream.chunks(split) {
                dec.feed_collect(chunk, &mut warnings, &mut arr, &mut got).unwrap();
            }
            dec.finish().unwrap();
            let (_, spans) = arr.finish_with_spans();
            assert_eq!(spans.len(), 2);
            assert_eq!(got.positions, vec![(0, 0), (2, (good.len() + bad.len()) as u64)]);
            assert_eq!(got.errors.len(), 1);
            assert_eq!(got.errors[0].position(), (Some(1), Some(good.len() as u64)));
        }
    }
}
