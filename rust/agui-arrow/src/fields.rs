//! The columns of one event, read from its JSON text in one pass.
//!
//! Fastest path: the flat form most events of a log are written in (plain strings and
//! integers, compact or spaced as Python's `json.dumps` writes them), read by the core's
//! scanner (`agui_core::stream::event::scan_flat_as_written`, shared with `replay_log`)
//! without a JSON parser. Otherwise a serde pass
//! fills the few members the table has (borrowed strings, everything else skipped).
//! Both fill the same `Raw`, to the same row. Only when the serde pass fails is the
//! event parsed again as a `serde_json::Value` to say which member is wrong (`field`,
//! a JSON path).

use agui_core::kind::Kind;
use agui_core::limits::TRUNCATED;
use std::borrow::Cow;

use agui_core::proto::{Flat, Members, Nested, EVENT_TYPES};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Why one event could not become a row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowError {
    pub kind: Kind,
    pub message: String,
    pub field: Option<String>,
}

impl RowError {
    fn invalid(field: &str, message: String) -> Self {
        RowError { kind: Kind::EventValidation, message, field: Some(field.to_string()) }
    }
}

/// A string member, borrowed from the event's text when it has no escapes. (serde's own
/// `Option<Cow<str>>` always copies: `#[serde(borrow)]` only reaches a bare `Cow`.)
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

/// `delta`: a string (text and argument deltas) or anything else (a JSON Patch), which
/// is skipped.
enum Delta<'a> {
    Str(Cow<'a, str>),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{IgnoredAny, MapAccess, SeqAccess};
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
            type Value = Delta<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Delta::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Delta::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Delta::Str(Cow::Owned(v)))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Delta::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Delta::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Delta::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Delta::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Delta::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Delta::Other)
            }
            // Objects, and numbers under serde_json's arbitrary_precision.
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Delta::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The members the table reads.
#[derive(Debug, Clone, Copy)]
enum Key {
    Type,
    Timestamp,
    ThreadId,
    RunId,
    ParentRunId,
    MessageId,
    ToolCallId,
    Role,
    Name,
    ToolCallName,
    StepName,
    Delta,
    Usage,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                Ok(Key::of(v))
            }
        }
        d.deserialize_identifier(V)
    }
}

impl Key {
    fn of(name: &str) -> Key {
        match name {
            "type" => Key::Type,
            "timestamp" => Key::Timestamp,
            "threadId" => Key::ThreadId,
            "runId" => Key::RunId,
            "parentRunId" => Key::ParentRunId,
            "messageId" => Key::MessageId,
            "toolCallId" => Key::ToolCallId,
            "role" => Key::Role,
            "name" => Key::Name,
            "toolCallName" => Key::ToolCallName,
            "stepName" => Key::StepName,
            "delta" => Key::Delta,
            "usage" => Key::Usage,
            _ => Key::Other,
        }
    }
}

/// String members in [`Fields`]' `strings`, by `Key` order from `ThreadId` to `StepName`.
const STRING_KEYS: usize = 9;

/// The members read from one event that need a look before they become columns
/// (`timestamp` and `usage`: their JSON text). The string members are written straight
/// into the row (`strings`: the row's own), not moved there afterwards.
struct Raw<'a, 'r> {
    ty: Option<Cow<'a, str>>,
    /// The position of `ty` in `EVENT_TYPES` when already known ([`Shape`]).
    ty_key: Option<usize>,
    timestamp: Option<&'a str>,
    strings: &'r mut [Option<Cow<'a, str>>; STRING_KEYS],
    /// A string `delta`, written into the row as well.
    delta: &'r mut Option<Cow<'a, str>>,
    /// `delta` is there but not a string (a JSON Patch).
    delta_other: bool,
    usage: Option<&'a str>,
}

impl<'a, 'r> Raw<'a, 'r> {
    fn new(strings: &'r mut [Option<Cow<'a, str>>; STRING_KEYS], delta: &'r mut Option<Cow<'a, str>>) -> Self {
        Raw { ty: None, ty_key: None, timestamp: None, strings, delta, delta_other: false, usage: None }
    }

    /// Forget what a fast reading took (before the serde pass reads the event again).
    fn reset(&mut self) {
        self.ty = None;
        self.ty_key = None;
        self.timestamp = None;
        *self.strings = Default::default();
        *self.delta = None;
        self.delta_other = false;
        self.usage = None;
    }
}

impl<'de: 'a, 'a> serde::de::DeserializeSeed<'de> for &mut Raw<'a, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> serde::de::Visitor<'de> for &mut Raw<'a, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::{Error, IgnoredAny};
        // A member given twice is an error, as in a derived struct.
        let mut seen = 0u32;
        while let Some(key) = map.next_key::<Key>()? {
            if !matches!(key, Key::Other) {
                let bit = 1u32 << key as u32;
                if seen & bit != 0 {
                    return Err(A::Error::custom("duplicate member"));
                }
                seen |= bit;
            }
            match key {
                Key::Type => self.ty = map.next_value::<Option<Str<'a>>>()?.map(|s| s.0),
                Key::Timestamp => self.timestamp = map.next_value::<Option<&RawValue>>()?.map(RawValue::get),
                Key::Delta => match map.next_value::<Option<Delta<'a>>>()? {
                    Some(Delta::Str(d)) => *self.delta = Some(d),
                    Some(Delta::Other) => self.delta_other = true,
                    None => {}
                },
                Key::Usage => self.usage = map.next_value::<Option<&RawValue>>()?.map(RawValue::get),
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
                k => {
                    self.strings[k as usize - Key::ThreadId as usize] = map.next_value::<Option<Str<'a>>>()?.map(|s| s.0)
                }
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct UsageEntry {
    #[serde(rename = "inputTokens")]
    input_tokens: Option<i64>,
    #[serde(rename = "outputTokens")]
    output_tokens: Option<i64>,
    #[serde(rename = "totalTokens")]
    total_tokens: Option<i64>,
    #[serde(rename = "reasoningTokens")]
    reasoning_tokens: Option<i64>,
    #[serde(rename = "cachedInputTokens")]
    cached_input_tokens: Option<i64>,
    #[serde(rename = "cacheWriteInputTokens")]
    cache_write_input_tokens: Option<i64>,
}

/// Token counts of an event's `usage` list, summed over its entries (one per
/// provider/model); a count absent from every entry stays `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    pub reasoning_tokens: Option<i64>,
    pub cached_input_tokens: Option<i64>,
    pub cache_write_input_tokens: Option<i64>,
}

impl Usage {
    /// `e`'s counts added to the sums.
    fn add(&mut self, e: &UsageEntry) {
        self.add_counts([
            e.input_tokens,
            e.output_tokens,
            e.total_tokens,
            e.reasoning_tokens,
            e.cached_input_tokens,
            e.cache_write_input_tokens,
        ]);
    }

    /// An entry's counts (in column order) added to the sums (saturating: a sum past i64
    /// stays at its end).
    pub(crate) fn add_counts(&mut self, counts: [Option<i64>; 6]) {
        let sums = [
            &mut self.input_tokens,
            &mut self.output_tokens,
            &mut self.total_tokens,
            &mut self.reasoning_tokens,
            &mut self.cached_input_tokens,
            &mut self.cache_write_input_tokens,
        ];
        for (acc, v) in sums.into_iter().zip(counts) {
            if let Some(v) = v {
                *acc = Some(acc.unwrap_or(0).saturating_add(v));
            }
        }
    }

    /// The six counts in column order.
    pub fn counts(&self) -> [Option<i64>; 6] {
        [
            self.input_tokens,
            self.output_tokens,
            self.total_tokens,
            self.reasoning_tokens,
            self.cached_input_tokens,
            self.cache_write_input_tokens,
        ]
    }
}

/// The table's view of one event.
#[derive(Debug, Default, PartialEq)]
pub struct Fields<'a> {
    /// One of `agui_core::proto::EVENT_TYPES`.
    pub ty: &'static str,
    /// Position of `ty` in `agui_core::proto::EVENT_TYPES` (the `type` dictionary key).
    pub ty_index: i32,
    /// Milliseconds since the epoch.
    pub timestamp: Option<i64>,
    /// `threadId`, `runId`, `parentRunId`, `messageId`, `toolCallId`, `role`, `name`,
    /// `toolCallName`, `stepName`, as read (written there by the reading itself).
    strings: [Option<Cow<'a, str>>; STRING_KEYS],
    /// A string `delta` (text and tool-call argument deltas); `None` for the JSON
    /// Patch `delta` of STATE_DELTA / ACTIVITY_DELTA.
    pub delta: Option<Cow<'a, str>>,
    /// Present when the event has a `usage` list.
    pub usage: Option<Usage>,
}

impl Fields<'_> {
    /// The row with its strings copied (no longer borrowed from the event's text).
    fn into_owned(self) -> Fields<'static> {
        let owned = |s: Option<Cow<'_, str>>| s.map(|s| Cow::Owned(s.into_owned()));
        Fields {
            ty: self.ty,
            ty_index: self.ty_index,
            timestamp: self.timestamp,
            strings: self.strings.map(owned),
            delta: owned(self.delta),
            usage: self.usage,
        }
    }

    fn string(&self, key: Key) -> Option<&str> {
        self.strings[key as usize - Key::ThreadId as usize].as_deref()
    }
    pub fn thread_id(&self) -> Option<&str> {
        self.string(Key::ThreadId)
    }
    pub fn run_id(&self) -> Option<&str> {
        self.string(Key::RunId)
    }
    pub fn parent_run_id(&self) -> Option<&str> {
        self.string(Key::ParentRunId)
    }
    pub fn message_id(&self) -> Option<&str> {
        self.string(Key::MessageId)
    }
    pub fn tool_call_id(&self) -> Option<&str> {
        self.string(Key::ToolCallId)
    }
    pub fn role(&self) -> Option<&str> {
        self.string(Key::Role)
    }
    /// `name`, else `toolCallName`, else `stepName`.
    pub fn name(&self) -> Option<&str> {
        NAME_KEYS.into_iter().find_map(|k| self.string(k))
    }
    pub fn delta(&self) -> Option<&str> {
        self.delta.as_deref()
    }
    /// The table's string columns in schema order: `thread_id`, `run_id`,
    /// `parent_run_id`, `message_id`, `tool_call_id`, `role`, `name`, `delta`.
    #[inline]
    pub fn string_columns(&self) -> [Option<&str>; 8] {
        [
            self.thread_id(),
            self.run_id(),
            self.parent_run_id(),
            self.message_id(),
            self.tool_call_id(),
            self.role(),
            self.name(),
            self.delta(),
        ]
    }
}

/// Read the columns of one event (`json`: its text, valid UTF-8, nested at most
/// `max_depth` deep: `agui_core::limits`) into `out`, a `Fields::default()`.
/// `members`: where the protobuf mapping wrote the top-level members of `json`; they are
/// then taken from there instead of parsing the text again.
///
/// The flat form most events have (compact or spaced) is read by the core's scanner, the
/// others by a serde pass, both filling the same `Raw`, to the same row or error. The row is written
/// in place, not returned: rows are a few hundred bytes, and moving them through return
/// values was 8-16% of `to_arrow` (memcpy).
///
/// `shape`: what the events read before this one (of the same source, in order) leave
/// for it: see [`Shape`].
#[inline(always)]
pub fn read<'a>(
    json: &'a str,
    members: Option<&Members>,
    max_depth: usize,
    out: &mut Fields<'a>,
    shape: &mut Shape,
) -> Result<(), RowError> {
    // An event of a form learned: a flat object (depth 1, within any limit of at least
    // 1), or one with nested values within `max_depth`, read straight into the row, to
    // what the scan would read.
    shape.max_depth = max_depth;
    if members.is_none() && max_depth >= 1 && shape.read_template(json, out).is_some() {
        return Ok(());
    }
    check_depth(json, max_depth)?;
    let mut raw = Raw::new(&mut out.strings, &mut out.delta);
    let fast = match members {
        Some(m) => read_members(json, m, &mut raw),
        None => scan(json, &mut raw, shape),
    };
    if fast.is_none() {
        raw.reset();
        if let Err(e) = parse_serde(json, &mut raw) {
            // (only escapes are rewritten, each into one of the same length: the text
            // stays UTF-8, an error's position the same)
            return match agui_core::text::replace_lone_surrogates(json.as_bytes()).map(String::from_utf8) {
                Some(Ok(lossy)) => read_lossy(&lossy, max_depth, out),
                _ => Err(e),
            };
        }
    }
    let Raw { ty, ty_key, timestamp, delta_other, usage, .. } = raw;
    finish(ty, ty_key, timestamp, delta_other, usage, out)
}

/// An event holding an escaped lone surrogate (`"\ud83d"`: an emoji split by a
/// JavaScript producer, which `JSON.parse` and the decoders read): its columns as read
/// from `lossy`, its text with each one as U+FFFD (a UTF-8 column cannot hold it; the
/// `json` column keeps the event's own text).
#[cold]
#[inline(never)]
fn read_lossy(lossy: &str, max_depth: usize, out: &mut Fields<'_>) -> Result<(), RowError> {
    let mut row = Fields::default();
    read(lossy, None, max_depth, &mut row, &mut Shape::default())?;
    *out = row.into_owned();
    Ok(())
}

/// [`read`] into a new row.
pub fn parse<'a>(json: &'a str, members: Option<&Members>, max_depth: usize) -> Result<Fields<'a>, RowError> {
    let mut out = Fields::default();
    read(json, members, max_depth, &mut out, &mut Shape::default())?;
    Ok(out)
}

/// The serde pass, for every event the fast readings do not take.
#[inline(never)]
fn parse_serde<'a>(json: &'a str, raw: &mut Raw<'a, '_>) -> Result<(), RowError> {
    let mut de = serde_json::Deserializer::from_str(json);
    serde::de::DeserializeSeed::deserialize(&mut *raw, &mut de).and_then(|()| de.end()).map_err(|_| explain(json))
}

/// `json` nested deeper than `max_depth` (`limits::exceeds_depth`: most events are not read).
fn check_depth(json: &str, max_depth: usize) -> Result<(), RowError> {
    if agui_core::limits::exceeds_depth(json.as_bytes(), max_depth) {
        return Err(RowError {
            kind: Kind::InvalidJson,
            message: format!("JSON is nested too deeply (more than {max_depth} levels)"),
            field: None,
        });
    }
    Ok(())
}

/// A JSON string's value (`lit`: its text, quotes included): borrowed when it has no
/// escapes; `None` when it is not a string.
fn literal(lit: &str) -> Option<Cow<'_, str>> {
    let inner = lit.strip_prefix('"')?.strip_suffix('"')?;
    if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(lit).ok().map(Cow::Owned)
}

/// The members where the protobuf mapping wrote them. `None`: a member the fast reading
/// does not take as it is (a non-string where a string is read, a member twice): the
/// serde pass explains it.
fn read_members<'a>(json: &'a str, members: &Members, raw: &mut Raw<'a, '_>) -> Option<()> {
    let mut seen = 0;
    for (name, range, plain) in members.iter() {
        let text = json.get(range)?;
        // A plain string (written without an escape: the writer knows) is borrowed as it
        // is, with no search for `\` (a `memchr` per member was ~6% of the protobuf path).
        raw.take(&mut seen, name, text, || match plain {
            true => text.strip_prefix('"')?.strip_suffix('"').map(Cow::Borrowed),
            false => literal(text),
        })?;
    }
    Some(())
}

/// The members of an event in the flat form most events of a log have, compact or with
/// whitespace between its tokens as `json.dumps` writes it (the core's one scanner and its
/// one choice between the two, shared with `replay_log`), read without the JSON parser;
/// `None` for any other form, or a member the fast reading does not take as it is: the serde pass
/// reads it, to the same row or error. Validation is serde_json's: the form holds no
/// control character, no invalid escape and no number but an integer, so it is valid JSON,
/// and its nested values are checked by serde_json's own skip, as the serde pass skips them.
#[inline(always)]
fn scan<'a>(json: &'a str, raw: &mut Raw<'a, '_>, shape: &mut Shape) -> Option<()> {
    use agui_core::stream::event::{scan_flat_as_written, scan_members};
    #[cfg(test)]
    if tests::NO_SCAN.get() {
        return None;
    }
    let b = json.as_bytes();
    let known = shape.prefix.len();
    let noted = &mut shape.noted;
    noted.clear();
    if known > 0 && b.starts_with(&shape.prefix) {
        // The same leading `{"type":"NAME",` as an event already scanned: read as the
        // scan would have read it (a plain string taken as `type`), then the rest.
        // (`9` and `known - 2` are next to ASCII quotes: char boundaries.)
        raw.ty = Some(Cow::Borrowed(&json[TYPE_FIRST.len()..known - 2]));
        raw.ty_key = shape.ty_key;
        let mut seen = 1u32 << Key::Type as u32;
        scan_members(json, known, |m| {
            noted.push(Noted::of(json, &m));
            raw.take(&mut seen, m.name, m.text, || m.string())
        })?;
        shape.learn_template(json, raw.ty_key);
        return Some(());
    }
    let mut seen = 0;
    scan_flat_as_written(json, |m| {
        noted.push(Noted::of(json, &m));
        raw.take(&mut seen, m.name, m.text, || m.string())
    })?;
    shape.learn(json, raw.ty.as_deref());
    let ty_key = raw.ty.as_deref().and_then(type_key);
    shape.learn_template(json, ty_key);
    Some(())
}

/// One member as the scan read it, for [`Template::learn`]: its key, where its value's
/// text lies in the event, and what kind of value that is.
#[derive(Debug, Clone, Copy)]
struct Noted {
    key: Key,
    start: usize,
    end: usize,
    value: Value,
}

/// The kind of a member's value, as far as templates care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    /// A string without escapes.
    Plain,
    /// A string with escapes (valid ones: the scan took it).
    Escaped,
    /// An integer.
    Int,
    /// An array or an object.
    Nested,
}

impl Value {
    /// A string: its text starts one byte after the member's value (its opening quote)
    /// and ends one byte before the value's end.
    fn quoted(self) -> bool {
        matches!(self, Value::Plain | Value::Escaped)
    }
}

impl Noted {
    #[inline(always)]
    fn of(json: &str, m: &agui_core::stream::event::Member<'_>) -> Noted {
        let start = m.text.as_ptr() as usize - json.as_ptr() as usize;
        let value = match (m.raw.is_some(), m.escaped, m.text.as_bytes()[0]) {
            (true, false, _) => Value::Plain,
            (true, true, _) => Value::Escaped,
            (false, _, b'[' | b'{') => Value::Nested,
            (false, _, _) => Value::Int,
        };
        Noted { key: Key::of(m.name), start, end: start + m.text.len(), value }
    }
}

/// Where a value of a [`Template`] goes. (The string slots first: the match tells them
/// from the others with one compare.)
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// `Fields::strings[i]`.
    String(usize),
    Delta,
    /// A string member the table does not read.
    Skip,
    /// An integer `timestamp`.
    Timestamp,
    /// An array or object the table does not read: a member it does not read, or the
    /// JSON Patch `delta` of a type that has one (an array).
    Nested,
    Patch,
    /// A `usage` list in the form writers emit ([`compact_usage_at`]).
    Usage,
}

/// Where the values of the event a template last matched lie, and what they read.
#[derive(Debug)]
struct Values {
    /// Per value (a slot): where its text lies in the event, or (bit `k` of `escaped`
    /// set) in `unescaped`. In place, written by the value's position (no `Vec` to
    /// clear and push, with its capacity check, a value). (A form has at most 64
    /// values, `Template::readable`: the hot writes and reads index by `k % 64`, with no
    /// bounds check.)
    spans: [(usize, usize); 64],
    /// The values (by slot) with escapes that a column reads.
    escaped: u64,
    /// Those values decoded, back to back, as the scan decodes them
    /// (`agui_core::stream::event::unescape_into`, `Member::string`'s).
    unescaped: String,
    /// The `timestamp` slot's milliseconds ([`timestamp`], as `finish` reads them).
    timestamp: Option<i64>,
    /// The `usage` slot's sums, when the template has one ([`Template::usage`]).
    usage: Usage,
    /// The first value of the last match that had a short plain string first.
    guess: Guess,
}

/// A plain string value (no quote, backslash or control byte: one `plain_end` ended)
/// of up to 15 bytes and its closing quote, as a 16-byte word and the mask of those
/// bytes. An event's first value is mostly the last one's (the message or call id of a
/// run of deltas, and of the start and end around it): where the event holds these
/// bytes, `plain_end` would end the value right there, so one compare replaces its
/// search. (Any form's: the bytes say it, not the form. The default is the empty
/// string: a quote.)
#[derive(Debug, Clone, Copy)]
struct Guess {
    word: u128,
    mask: u128,
    len: usize,
}

impl Default for Guess {
    fn default() -> Self {
        Guess { word: u128::from(b'"'), mask: 0xff, len: 0 }
    }
}

impl Guess {
    /// The end of the value at `at` when `b` holds the guess there.
    #[inline(always)]
    fn end(&self, b: &[u8], at: usize) -> Option<usize> {
        let w = u128::from_le_bytes(b.get(at..at + 16)?.try_into().expect("16 bytes"));
        ((w ^ self.word) & self.mask == 0).then_some(at + self.len)
    }

    /// The value `b[at..end]`, a plain string `plain_end` ended (`b[end]` its quote).
    #[inline(always)]
    fn of(b: &[u8], at: usize, end: usize) -> Option<Guess> {
        let len = end - at;
        let w = u128::from_le_bytes(b.get(at..at + 16).filter(|_| len < 16)?.try_into().expect("16 bytes"));
        let mask = u128::MAX >> (8 * (15 - len));
        Some(Guess { word: w & mask, mask, len })
    }
}

impl Default for Values {
    fn default() -> Self {
        Values {
            spans: [(0, 0); 64],
            escaped: 0,
            unescaped: String::new(),
            timestamp: None,
            usage: Usage::default(),
            guess: Guess::default(),
        }
    }
}

impl Values {
    /// The text of the `k`-th value (`json`: the event matched).
    #[inline(always)]
    fn text<'s>(&'s self, json: &'s str, k: usize) -> &'s str {
        let (s, start, end) = self.source(json, k);
        &s[start..end]
    }

    /// The string the `k`-th value lies in (`json` or the values decoded) and its span
    /// there.
    #[inline(always)]
    fn source<'s>(&'s self, json: &'s str, k: usize) -> (&'s str, usize, usize) {
        let (start, end) = self.spans[k];
        (if self.escaped >> k & 1 != 0 { &self.unescaped } else { json }, start, end)
    }
}

/// The whole form of an event scanned whose members are all strings (no control
/// character; escapes the scan takes) of the table's string columns, `delta` or members
/// it does not read, and an integer `timestamp`: its bytes outside the values (the
/// type's value included, as a literal) and the column each value goes to. Most events
/// of a log come in runs of one form (text and argument deltas), so most are read as a
/// few compares of literal runs and a search for each value's end, with no member
/// dispatch.
///
/// Exactly what the scan reads: an event that matches has the learned event's bytes
/// everywhere but inside its values; each string value ends where the scan's own search
/// ends it (the core's `string_end`: the first quote not escaped, with valid escapes
/// only and no control byte before it), and is decoded by the scan's own decoder
/// (`unescape_into`) when a column reads it; the `timestamp` is an integer as the scan
/// reads one (the core's `int_end`) followed by the learned literal (`,` or `}`: no
/// fraction, no exponent), and its milliseconds are read by `finish`'s [`timestamp`],
/// the event taken only when that reads it. So the scan would find the same members,
/// names and order, the same values and the same type: the same row. (The whitespace of
/// a spaced form, `json.dumps`', lies in the literal runs: an event spaced alike.)
/// Anything else (a control byte, an invalid escape or lone surrogate, another member,
/// whitespace elsewhere, a value of another kind, a timestamp out of range) falls back
/// to the scan, untouched.
#[derive(Debug, Default)]
struct Template {
    /// The literal runs back to back.
    lits: Vec<u8>,
    /// Per value in order: the literal run before it, its member.
    slots: Vec<(Run, Slot)>,
    /// The literal run after the last value.
    last: Run,
    /// Per value: its column in [`Fields::string_columns`]' order, or [`NO_COLUMN`]
    /// (a member not read, or a name after one `Fields::name` prefers).
    columns: Vec<u8>,
    ty_key: usize,
    /// `lits[HEAD..HEAD + 16]` (the first value comes after them: no form is learned
    /// otherwise); `None`: nothing learned.
    head: Option<[u8; 16]>,
    /// No line break in `lits` and no nested value: a match is one SSE `data` line
    /// ([`Shape::form_end`]).
    one_line: bool,
    /// No line break in `lits`, with nested values: a match is one line when they hold
    /// none (they may, as whitespace), found ahead when they do not and it is within the
    /// depth limit ([`Shape::nested_form_end`]).
    nested_line: bool,
    /// A nested value among the values: an event matched is checked against the depth
    /// limit (`check_depth`, as `read` checks it before the scan).
    nested: bool,
    /// A `usage` slot: a row of this form has `Values::usage`. (A list `compact_usage_at`
    /// reads holds no line break and is at most 2 levels deep, learned within the limit:
    /// not `nested`.)
    usage: bool,
}

impl Template {
    /// Whether an event scanned whole (its members `noted`, its type's key `ty_key`)
    /// has a form a template reads.
    fn readable(json: &str, noted: &[Noted], ty_key: Option<usize>, max_depth: usize) -> bool {
        let Some(ty_key) = ty_key else { return false };
        // A `delta` that is not a string is a row only for these (`finish`).
        let patch = matches!(EVENT_TYPES[ty_key], "STATE_DELTA" | "ACTIVITY_DELTA");
        // (At most 64 values: `Values::escaped`'s bits.)
        noted.len() <= 64
            && noted.iter().all(|n| match (n.key, n.value) {
                (Key::Type, v) => v == Value::Plain,
                (Key::Timestamp, v) => v == Value::Int,
                // A list, read as `compact_usage` reads it (at most 2 levels: the event
                // at most 3, no depth check a match when the limit allows them).
                (Key::Usage, Value::Nested) => max_depth >= 3 && json.as_bytes()[n.start] == b'[',
                (Key::Usage, _) => false,
                // (An object as `delta` is left to the serde pass: the scan declines it.)
                (Key::Delta, Value::Nested) => patch && json.as_bytes()[n.start] == b'[',
                (Key::Other, Value::Nested) => true,
                (_, v) => v.quoted(),
            })
    }

    /// The form of `json`, a [`Template::readable`] event.
    fn learn(&mut self, json: &str, noted: &[Noted], ty_key: usize) {
        let b = json.as_bytes();
        self.lits.clear();
        self.slots.clear();
        let (mut cursor, mut from) = (0, 0);
        for n in noted {
            let nested = n.value == Value::Nested;
            let slot = match n.key {
                // The type's value stays in the literal: a matching event has this type.
                Key::Type => continue,
                Key::Timestamp => Slot::Timestamp,
                Key::Delta if nested => Slot::Patch,
                Key::Delta => Slot::Delta,
                Key::Usage => Slot::Usage,
                Key::Other if nested => Slot::Nested,
                Key::Other => Slot::Skip,
                k => Slot::String(k as usize - Key::ThreadId as usize),
            };
            // A string: up to and with its opening quote, on from its closing quote; an
            // integer or a nested value: up to it, on after it.
            let quote = usize::from(n.value.quoted());
            self.lits.extend_from_slice(&b[cursor..n.start + quote]);
            self.slots.push((Run::new(&self.lits, from), slot));
            (cursor, from) = (n.end - quote, self.lits.len());
        }
        self.lits.extend_from_slice(&b[cursor..]);
        self.last = Run::new(&self.lits, from);
        self.nested = self.slots.iter().any(|s| matches!(s.1, Slot::Nested | Slot::Patch));
        self.usage = self.slots.iter().any(|s| matches!(s.1, Slot::Usage));
        // (A nested value may hold line breaks, as whitespace: not read ahead.)
        let line = memchr::memchr2(b'\n', b'\r', &self.lits).is_none();
        self.ty_key = ty_key;
        // The `name` column: `name`, else `toolCallName`, else `stepName` (`Fields::name`).
        let name = NAME_KEYS.into_iter().find(|k| noted.iter().any(|n| n.key as usize == *k as usize));
        self.columns.clear();
        self.columns.extend(noted.iter().filter(|n| !matches!(n.key, Key::Type)).map(|n| match n.key {
            Key::ThreadId => 0,
            Key::RunId => 1,
            Key::ParentRunId => 2,
            Key::MessageId => 3,
            Key::ToolCallId => 4,
            Key::Role => 5,
            k @ (Key::Name | Key::ToolCallName | Key::StepName) if Some(k as usize) == name.map(|n| n as usize) => 6,
            Key::Delta if n.value != Value::Nested => 7,
            _ => NO_COLUMN,
        }));
        let first = self.slots.first().map_or(self.lits.len(), |s| s.0.len);
        self.head = self.lits.get(HEAD..HEAD + 16).filter(|_| first >= HEAD + 16).map(|h| h.try_into().expect("16 bytes"));
        // (Read ahead only with a head: `form_end`'s matches need no check of it.)
        let line = line && self.head.is_some();
        (self.one_line, self.nested_line) = (line && !self.nested, line && self.nested);
    }

    /// Whether `json` has the learned form, nested no deeper than `max_depth`; then
    /// `values` holds its values.
    #[inline(always)]
    fn matches(&self, json: &str, values: &mut Values, max_depth: usize) -> bool {
        // (No head: nothing learned.)
        self.head.is_some()
            && self.match_at(json, values, true).is_some()
            && !(self.nested && check_depth(json, max_depth).is_err())
    }

    /// Where the learned form ends when `json` starts with it (`whole`: and ends there);
    /// then `values` holds its values.
    #[inline(always)]
    fn match_at(&self, json: &str, values: &mut Values, whole: bool) -> Option<usize> {
        use agui_core::stream::event::plain_end;
        #[cfg(test)]
        if tests::NO_TEMPLATES.get() {
            return None;
        }
        let b = json.as_bytes();
        // (A form learned: its callers know, `matches` by its head, `form_end` by
        // `one_line` or `nested_line`. The head lies in the first run, compared in place:
        // the forms of other types are told apart without a call.)
        debug_assert!(self.head.is_some(), "a form learned");
        values.escaped = 0;
        values.timestamp = None;
        let mut at = 0;
        for (k, &(ref run, slot)) in self.slots.iter().enumerate() {
            if !run.is_at(&self.lits, b, at) {
                return None;
            }
            at += run.len;
            // A first string value as the last one ([`Guess`]): ended with no search.
            let plain = matches!(slot, Slot::String(_) | Slot::Delta | Slot::Skip);
            if k == 0 && plain {
                if let Some(end) = values.guess.end(b, at) {
                    values.spans[0] = (at, end);
                    at = end;
                    continue;
                }
            }
            // Most values are strings with no escape: the scan's search for the quote,
            // inlined; any other value out of line.
            // (Every end is next to an ASCII byte: a char boundary.)
            let end = match (plain, plain_end(b, at)) {
                (true, Some(end)) => {
                    values.spans[k % 64] = (at, end);
                    if k == 0 {
                        values.guess = Guess::of(b, at, end).unwrap_or_default();
                    }
                    end
                }
                _ => Self::other_value(json, at, k, slot, values)?,
            };
            at = end;
        }
        let last = &self.last;
        let fits = if whole { b.len().checked_sub(at) == Some(last.len) } else { true };
        (fits && last.is_at(&self.lits, b, at)).then_some(at + last.len)
    }

    /// The end of value `k` (of `slot`) starting at `at` in `json`, one not a string
    /// without escapes, read into `values`; `None` where the scan would not read it so.
    #[inline(never)]
    fn other_value(json: &str, at: usize, k: usize, slot: Slot, values: &mut Values) -> Option<usize> {
        use agui_core::stream::event::{int_end, nested_end, string_end, unescape_end};
        let b = json.as_bytes();
        let end = match slot {
            Slot::Timestamp => {
                let end = match b.get(at)? {
                    b'-' | b'0'..=b'9' => int_end(b, at)?,
                    _ => return None,
                };
                values.timestamp = Some(timestamp(&json[at..end])?);
                end
            }
            // Ended and summed as `usage` reads the member the scan ends (a compact list
            // is valid JSON: serde_json's skip ends it at the same byte).
            Slot::Usage => {
                let (sum, end) = compact_usage_at(json, at)?;
                values.usage = sum;
                end
            }
            // Skipped as the scan skips it (serde_json's skip); a patch is an array.
            Slot::Nested | Slot::Patch => match b.get(at)? {
                b'[' => nested_end(json, at)?,
                b'{' if matches!(slot, Slot::Nested) => nested_end(json, at)?,
                _ => return None,
            },
            // A string with escapes (the plain search stopped at one, or at a byte that
            // ends it for both): ended by the scan's search (`string_end`), decoded as it
            // goes when a column reads it (`unescape_end`: the same end, refusals and text
            // as `string_end` then `unescape_into`).
            Slot::Skip => string_end(b, at)?.0,
            Slot::String(_) | Slot::Delta => {
                if values.escaped == 0 {
                    values.unescaped.clear();
                }
                let from = values.unescaped.len();
                let end = unescape_end(json, at, &mut values.unescaped)?;
                values.escaped |= 1 << k;
                values.spans[k] = (from, values.unescaped.len());
                return Some(end);
            }
        };
        values.spans[k] = (at, end);
        Some(end)
    }
}

/// A literal run of a [`Template`], compiled when the form is learned: where it lies in
/// `lits` and, up to 48 bytes long (the runs between values, `","delta":"`, `"}`, and
/// most first ones, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"`), its bytes as
/// 16-byte words with masks, compared in place with a window of the event (no bounds
/// check a word, no branch a word) instead of a `memcmp` call (~40 instructions with
/// the call's setup).
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    /// `lits[from..from + len]`.
    from: usize,
    len: usize,
    /// The run's bytes, zeros after its end, and the masks that keep only them.
    words: [u128; Run::WORDS],
    masks: [u128; Run::WORDS],
}

impl Run {
    const WORDS: usize = 3;

    /// The run `lits[from..]`.
    fn new(lits: &[u8], from: usize) -> Run {
        let run = &lits[from..];
        let len = run.len();
        let mut r = Run { from, len, ..Run::default() };
        if len <= 16 * Run::WORDS {
            let (mut bytes, mut mask) = ([0u8; 16 * Run::WORDS], [0u8; 16 * Run::WORDS]);
            bytes[..len].copy_from_slice(run);
            mask[..len].fill(0xff);
            let word = |b: &[u8], k: usize| u128::from_le_bytes(b[16 * k..16 * k + 16].try_into().expect("16 bytes"));
            for k in 0..Run::WORDS {
                (r.words[k], r.masks[k]) = (word(&bytes, k), word(&mask, k));
            }
        }
        r
    }

    /// Whether `b` holds the run (of `lits`) at `at`.
    #[inline(always)]
    fn is_at(&self, lits: &[u8], b: &[u8], at: usize) -> bool {
        let word = |w: &[u8], k: usize| {
            (u128::from_le_bytes(w[16 * k..16 * k + 16].try_into().expect("16 bytes")) ^ self.words[k]) & self.masks[k]
        };
        // (Near the text's end, with no whole window: compared as a slice.)
        if self.len <= 16 {
            if let Some(w) = b.get(at..at + 16) {
                return word(w, 0) == 0;
            }
        } else if self.len <= 16 * Run::WORDS {
            if let Some(w) = b.get(at..at + 16 * Run::WORDS) {
                return word(w, 0) | word(w, 1) | word(w, 2) == 0;
            }
        }
        b.get(at..at + self.len) == lits.get(self.from..self.from + self.len)
    }
}

/// A value of a [`Template`] that goes to no column.
const NO_COLUMN: u8 = u8::MAX;

/// The row of an event a template matched ([`Shape::read_form`]): its `type` dictionary
/// key, its `timestamp`, and per value its column in [`Fields::string_columns`]' order
/// (one past them, [`NO_COLUMN`], for a value no column reads: a writer's one bounds
/// check is also its filter) and its text ([`FormRow::bytes`]).
pub struct FormRow<'s> {
    pub ty: i32,
    pub timestamp: Option<i64>,
    pub columns: &'s [u8],
    values: &'s Values,
    /// The sums of its `usage` list when the form has one.
    pub usage: Option<&'s Usage>,
}

const _: () = assert!(NO_COLUMN as usize >= 8, "past the 8 of `Fields::string_columns`");

impl<'s> FormRow<'s> {
    /// The bytes of the `k`-th value's text (`json`: the event matched), a `&str` with
    /// char boundaries at both ends (each next to an ASCII quote or at an end of the
    /// values decoded), not checked here: a string column checks its values once
    /// (`views::Utf8Strings`).
    /// (`plain`: [`FormRow::plain`], read once a row: most rows have no escaped value,
    /// and the test a value of which string it lies in was ~5 instructions.)
    #[inline(always)]
    pub fn bytes(&self, json: &'s str, k: usize, plain: bool) -> &'s [u8] {
        // (Every value in `json`, `Values::source`'s plain case, with no test: a branch.)
        let (s, start, end) = if plain { (json, self.values.spans[k % 64].0, self.values.spans[k % 64].1) } else { self.values.source(json, k) };
        &s.as_bytes()[start..end]
    }

    /// Per value a column reads, or does not (past them, as in `columns`): the column
    /// and [`FormRow::bytes`], when [`FormRow::plain`]. (The values walked with their spans:
    /// no position masked and no column count reloaded a value.)
    #[inline(always)]
    pub fn plain_values(&self, json: &'s str) -> impl Iterator<Item = (u8, &'s [u8])> + 's {
        let (b, values) = (json.as_bytes(), self.values);
        self.columns.iter().zip(&values.spans).map(move |(&c, &(start, end))| (c, &b[start..end]))
    }

    /// No value has escapes: every value lies in the event's text.
    #[inline(always)]
    pub fn plain(&self) -> bool {
        self.values.escaped == 0
    }
}

/// The string columns of protobuf flat events ([`Flat`]) and nested ones ([`Nested`],
/// their top-level string members: types of their own), by type, learned at its first
/// event: per member (its key's place in [`Flat::keys`], [`Nested::keys`]) its column in
/// [`Fields::string_columns`]' order, or [`NO_COLUMN`], as [`read`] takes the members of
/// the event's JSON text (`Key::of`; the `name` column's preference needs no choice: a
/// type with two members of that column is `None`, its events read from their text, as
/// is one with a member read otherwise (`type`, `timestamp`, `usage`) or twice; members
/// no column reads, any number).
#[derive(Default)]
pub struct FlatColumns([Option<Option<[u8; 8]>>; EVENT_TYPES.len()]);

impl FlatColumns {
    #[inline(always)]
    pub fn of(&mut self, flat: &Flat<'_>) -> Option<&[u8; 8]> {
        self.0.get_mut(flat.type_index())?.get_or_insert_with(|| Self::learn(flat.keys())).as_ref()
    }

    #[inline(always)]
    pub fn of_nested(&mut self, nested: &Nested<'_>) -> Option<&[u8; 8]> {
        self.0.get_mut(nested.type_index())?.get_or_insert_with(|| Self::learn(nested.keys())).as_ref()
    }

    #[cold]
    fn learn<'k>(keys: impl Iterator<Item = &'k str>) -> Option<[u8; 8]> {
        let (mut columns, mut seen, mut names) = ([NO_COLUMN; 8], 0u32, 0);
        for (k, key) in keys.enumerate() {
            let key = Key::of(key);
            // (`Other`, the key of every member no column reads, may come more than once:
            // TOOL_CALL_START's `parentMessageId` and `subagentRunId`.)
            let bit = 1u32 << key as u32;
            if seen & bit != 0 && !matches!(key, Key::Other) {
                return None;
            }
            seen |= bit;
            *columns.get_mut(k)? = match key {
                Key::Type | Key::Timestamp | Key::Usage => return None,
                Key::Name | Key::ToolCallName | Key::StepName => {
                    names += 1;
                    6
                }
                Key::Delta => 7,
                Key::Other => NO_COLUMN,
                k => (k as usize - Key::ThreadId as usize) as u8,
            };
        }
        (names <= 1).then_some(columns)
    }
}

/// The members the `name` column reads, the first present taken: [`Fields::name`] and
/// a template's column of a name ([`Template::learn`]) follow this one order.
const NAME_KEYS: [Key; 3] = [Key::Name, Key::ToolCallName, Key::StepName];

/// Where [`Template::head`] lies: after `{"type":"`.
const HEAD: usize = TYPE_FIRST.len();

/// Sets of places for forms: a log's events are of a few forms, most in runs of one,
/// the others between them (starts and ends around a run of deltas). A form takes one
/// of the two places ([`WAYS`]) of its head's set, the one used less recently (the form
/// in it before is forgotten): no walk over the forms kept, and two forms whose heads
/// share a set (a run's start and end may) are both kept.
const SETS: usize = 32;

/// Places a set.
const WAYS: usize = 2;

/// The set of a form by its head (`Template::head`): its places are `WAYS * set..`.
#[inline(always)]
fn bucket(head: &[u8]) -> usize {
    let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    let h = (word(0) ^ word(8).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 59) as usize % SETS
}

/// The places of the set of the head `text` starts with (after `{"type":"`), but `not`.
#[inline(always)]
fn places(text: &[u8], not: usize) -> impl Iterator<Item = usize> {
    let set = text.get(HEAD..HEAD + 16).map(bucket);
    set.into_iter().flat_map(|s| WAYS * s..WAYS * s + WAYS).filter(move |&at| at != not)
}

/// How a compact event that leads with its type begins.
const TYPE_FIRST: &str = "{\"type\":\"";

/// The leading `{"type":"NAME",` of the last event the scan read whole (a plain type
/// string first, a member after it). Most events of a log follow one of their own type
/// (runs of text or argument deltas), so most start with the same bytes: one compare
/// of them replaces the scan of the type member (its name, its value, the member
/// dispatch). Only what the scan accepted is kept, byte for byte, so an event starting
/// with it would be scanned to the same `type` and go on from the same place.
#[derive(Debug, Default)]
pub struct Shape {
    prefix: Vec<u8>,
    /// The position of its type in `EVENT_TYPES` (`None`: not a 1.0 type).
    ty_key: Option<usize>,
    /// The whole forms of the last events that have one (tried before the prefix), each
    /// in a place of its head's set ([`bucket`]; empty or `SETS * WAYS` of them).
    templates: Vec<Template>,
    /// The place of the last one matched or learned, tried first.
    current: usize,
    /// Per set (a bit), its place made current last (of two).
    recent: u32,
    /// The members of the event being scanned, for `template` to learn from.
    noted: Vec<Noted>,
    /// The depth limit of the events read (`read`'s `max_depth`; the same for every
    /// event of a source), for templates with nested values.
    max_depth: usize,
    /// The values of the event the current template matched.
    values: Values,
    /// The text (address, length) that the templates last failed to match: a caller that
    /// tried them (`read_form`) and then reads the event whole does not try them again.
    missed: (usize, usize),
    /// The text (address, length) that [`Shape::form_end`] last found the form `current`
    /// at (`values` its values): the framer hands that text to `found_form` next. Kept
    /// in debug builds only, for `found_form`'s check.
    found: (usize, usize),
}

impl Shape {
    /// `json` read into `out` by the template whose form it has; that one is then
    /// tried first (most events are of the last one's form). (Out of line: in the parts'
    /// rows `read_form` has tried the templates before, and the protobuf rows never try
    /// them.)
    #[inline(never)]
    fn read_template<'a>(&mut self, json: &'a str, out: &mut Fields<'a>) -> Option<()> {
        if !self.match_form(json) {
            return None;
        }
        let (t, v) = (&self.templates[self.current], &self.values);
        let text = |k: usize| match v.escaped >> k & 1 {
            0 => Cow::Borrowed(&json[v.spans[k].0..v.spans[k].1]),
            _ => Cow::Owned(v.text(json, k).to_owned()),
        };
        for (k, &(_, slot)) in t.slots.iter().enumerate() {
            match slot {
                Slot::String(i) => out.strings[i] = Some(text(k)),
                Slot::Delta => out.delta = Some(text(k)),
                Slot::Usage => out.usage = Some(v.usage),
                Slot::Timestamp | Slot::Skip | Slot::Nested | Slot::Patch => {}
            }
        }
        out.timestamp = v.timestamp;
        out.ty = EVENT_TYPES[t.ty_key];
        out.ty_index = t.ty_key as i32;
        Some(())
    }

    /// When `json` has the form of a template kept: its row ([`FormRow`]), to be written
    /// straight into a row's columns. It is the row [`read`] would give `json` (with no
    /// protobuf members and a depth limit of at least 1): the same template.
    #[inline(always)]
    pub fn read_form(&mut self, json: &str) -> Option<FormRow<'_>> {
        if !self.match_form(json) {
            return None;
        }
        Some(self.form_row())
    }

    /// [`Shape::read_form`] of the event [`Shape::form_end`] has just found (the frame the
    /// framer read ahead and took, `json`, the text it found), with no check that it is:
    /// the frame's reader ([`agui_core::log::ReadAhead::taken`]) knows it is.
    #[inline(always)]
    pub fn found_form(&mut self, json: &str) -> FormRow<'_> {
        debug_assert!(self.found == (json.as_ptr() as usize, json.len()), "the text form_end found");
        #[cfg(test)]
        {
            tests::FRAME_SKIPS.set(tests::FRAME_SKIPS.get() + 1);
            tests::TEMPLATE_HITS.set(tests::TEMPLATE_HITS.get() + 1);
        }
        self.form_row()
    }

    /// The row of the event the template `current` matched (its values in `values`).
    #[inline(always)]
    fn form_row(&self) -> FormRow<'_> {
        let (t, v) = (&self.templates[self.current], &self.values);
        FormRow { ty: t.ty_key as i32, timestamp: v.timestamp, columns: &t.columns, values: v, usage: t.usage.then_some(&v.usage) }
    }

    /// Whether `json` has the form of a template kept: that one is then `current` (most
    /// events are of the last one's form), its values in `values`.
    #[inline(always)]
    fn match_form(&mut self, json: &str) -> bool {
        let Some(first) = self.templates.get(self.current) else { return false };
        let this = (json.as_ptr() as usize, json.len());
        // (A text `form_end` found and the framer then declined, its frame not ended by
        // `\n\n` (CRLF, another field, over the limit), comes here and is matched again:
        // rare, and so the frames read ahead leave `found` as it is.)
        if !first.matches(json, &mut self.values, self.max_depth) {
            if self.missed == this {
                return false;
            }
            let found = places(json.as_bytes(), self.current).find(|&at| self.templates[at].matches(json, &mut self.values, self.max_depth));
            match found {
                Some(at) => self.make_current(at),
                None => {
                    self.missed = this;
                    return false;
                }
            }
        }
        #[cfg(test)]
        tests::TEMPLATE_HITS.set(tests::TEMPLATE_HITS.get() + 1);
        true
    }

    /// Where an event of a form kept ends when `text` (the rest of an SSE part after a
    /// frame's `data: `) starts with one whose literal runs hold no line break: that
    /// event is one line, as its values hold no control byte (strings as the scan
    /// reads them, escapes written as escapes; integers; nested values are searched for
    /// one, [`Shape::nested_form_end`]). The framer
    /// ([`agui_core::sse::SseParser::feed_ahead`]) then hands that event (the same
    /// address and length) to [`Shape::read_form`], which takes this match.
    #[inline(always)]
    pub fn form_end(&mut self, text: &str) -> Option<usize> {
        #[cfg(test)]
        if tests::NO_FRAME_SKIP.get() {
            return None;
        }
        let t = self.templates.get(self.current)?;
        let end = match t.one_line.then(|| t.match_at(text, &mut self.values, false)).flatten() {
            Some(end) => end,
            _ => self.other_form_end(text)?,
        };
        // (Only for the debug check: the store a frame was ~2 instructions.)
        #[cfg(debug_assertions)]
        {
            self.found = (text.as_ptr() as usize, end);
        }
        Some(end)
    }

    /// [`Shape::form_end`] when the current form is not the event's (out of line: most
    /// events are of the last one's form): the current form with nested values, or a
    /// form in the places of the event's head; that one is then current.
    #[inline(never)]
    fn other_form_end(&mut self, text: &str) -> Option<usize> {
        let current = self.current;
        if self.templates[current].nested_line {
            if let Some(end) = self.nested_form_end(current, text) {
                return Some(end);
            }
        }
        for at in places(text.as_bytes(), current) {
            let t = &self.templates[at];
            let end = match (t.one_line, t.nested_line) {
                (true, _) => t.match_at(text, &mut self.values, false),
                (_, true) => self.nested_form_end(at, text),
                _ => None,
            };
            if let Some(end) = end {
                self.make_current(at);
                return Some(end);
            }
        }
        None
    }

    /// `at` is the place tried first from now on, and the one of its set kept longer.
    #[inline(always)]
    fn make_current(&mut self, at: usize) {
        self.current = at;
        let bit = 1u32 << (at / WAYS);
        self.recent = match at % WAYS {
            0 => self.recent & !bit,
            _ => self.recent | bit,
        };
    }

    /// Where the form `at`, one with nested values, ends in `text` when it is one line
    /// (no line break in its nested values) nested no deeper than the limit (`check_depth`,
    /// as [`Template::matches`] checks it).
    #[inline(always)]
    fn nested_form_end(&mut self, at: usize, text: &str) -> Option<usize> {
        let end = self.templates[at].match_at(text, &mut self.values, false)?;
        let json = text.get(..end)?;
        (memchr::memchr2(b'\n', b'\r', json.as_bytes()).is_none() && check_depth(json, self.max_depth).is_ok()).then_some(end)
    }

    /// After a whole scan of `json` (its members in `noted`): its form kept first, when a
    /// template reads it (none kept does, or it would have been read by that one).
    #[cold]
    fn learn_template(&mut self, json: &str, ty_key: Option<usize>) {
        let Some(ty_key) = ty_key.filter(|_| Template::readable(json, &self.noted, ty_key, self.max_depth)) else { return };
        // The head: the first value after it (a string's after its quote), or no template.
        let first = self.noted.iter().find(|n| !matches!(n.key, Key::Type)).map_or(json.len(), |n| {
            n.start + usize::from(n.value.quoted())
        });
        let Some(set) = json.as_bytes().get(HEAD..HEAD + 16).filter(|_| first >= HEAD + 16).map(bucket) else { return };
        if self.templates.is_empty() {
            self.templates.resize_with(SETS * WAYS, Template::default);
        }
        // An empty place, else the one used less recently.
        let at = match (0..WAYS).map(|w| WAYS * set + w).find(|&at| self.templates[at].head.is_none()) {
            Some(at) => at,
            None => WAYS * set + usize::from(self.recent >> set & 1 == 0),
        };
        self.templates[at].learn(json, &self.noted, ty_key);
        self.make_current(at);
    }

    /// After a whole scan of `json` that read `ty` as its type.
    #[inline]
    fn learn(&mut self, json: &str, ty: Option<&str>) {
        let Some(ty) = ty else { return };
        let end = TYPE_FIRST.len() + ty.len();
        // `ty` is the first member's value as written (no escape) when it lies right
        // after `{"type":"` in the text; a `,` follows its quote when more members do.
        let first = json.starts_with(TYPE_FIRST) && std::ptr::eq(ty.as_ptr(), json[TYPE_FIRST.len()..].as_ptr());
        if first && json.as_bytes().get(end..end + 2) == Some(b"\",") {
            self.prefix.clear();
            self.prefix.extend_from_slice(&json.as_bytes()[..end + 2]);
            self.ty_key = type_key(ty);
        }
    }
}

impl<'a> Raw<'a, '_> {
    /// Take one top-level member: its name, its JSON text and its string value (`None`
    /// when it is not a string; asked only for the members read). `None`: a member twice
    /// (`seen`: the bits of those taken), or not of the kind read there (a non-string
    /// where a string is read).
    #[inline(always)]
    fn take(&mut self, seen: &mut u32, name: &str, text: &'a str, value: impl FnOnce() -> Option<Cow<'a, str>>) -> Option<()> {
        let key = Key::of(name);
        if matches!(key, Key::Other) {
            return Some(());
        }
        let bit = 1u32 << key as u32;
        if *seen & bit != 0 {
            return None;
        }
        *seen |= bit;
        match key {
            Key::Type => self.ty = Some(value()?),
            Key::Timestamp => self.timestamp = Some(text),
            Key::Usage => self.usage = Some(text),
            Key::Delta if text.starts_with('"') => *self.delta = Some(value()?),
            // The serde pass decodes the member names of an object given as `delta`
            // (the scan only skips them): left to it, for the same errors.
            Key::Delta if text.starts_with('{') => return None,
            Key::Delta => self.delta_other = true,
            Key::Other => {}
            k => self.strings[k as usize - Key::ThreadId as usize] = Some(value()?),
        }
        Some(())
    }
}

/// The columns from the members read that need a look (the string members are
/// already in the row).
#[inline(always)]
fn finish<'a>(
    ty: Option<Cow<'a, str>>,
    ty_key: Option<usize>,
    timestamp: Option<&'a str>,
    delta_other: bool,
    usage: Option<&'a str>,
    out: &mut Fields<'a>,
) -> Result<(), RowError> {
    let (ty, ty_index) = match &ty {
        Some(t) => match ty_key.or_else(|| type_key(t)) {
            Some(i) => (EVENT_TYPES[i], i as i32),
            None => return Err(RowError::invalid("$.type", format!("unknown event type {t:?}"))),
        },
        None => return Err(RowError::invalid("$.type", "the event has no `type`".into())),
    };
    out.timestamp = match timestamp {
        Some(t) => Some(self::timestamp(t).ok_or_else(|| {
            RowError::invalid("$.timestamp", format!("`timestamp` is not an integer (milliseconds): {t}"))
        })?),
        None => None,
    };
    // A JSON Patch `delta` is not a column; anywhere else `delta` is text.
    if delta_other && !matches!(ty, "STATE_DELTA" | "ACTIVITY_DELTA") {
        return Err(RowError::invalid("$.delta", "`delta` is not a string".into()));
    }
    // `out` comes in without usage (most events): written only when there is one, not
    // as a `None` again (the 100-byte option was ~15 instructions an event, callgrind).
    if let Some(u) = usage {
        out.usage = Some(self::usage(u)?);
    }
    out.ty = ty;
    out.ty_index = ty_index;
    Ok(())
}

/// The position of an event type name in `EVENT_TYPES` (the `type` dictionary key):
/// the core's one name `match` (`EventType::parse`), then a table from its variants,
/// instead of comparing the name with each of the 31 in turn.
#[inline]
fn type_key(name: &str) -> Option<usize> {
    use agui_core::stream::event::EventType;
    static KEYS: std::sync::OnceLock<[u8; 64]> = std::sync::OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        let mut keys = [u8::MAX; 64];
        for (i, name) in EVENT_TYPES.iter().enumerate() {
            keys[EventType::parse(name) as usize] = i as u8;
        }
        keys
    });
    match keys[EventType::parse(name) as usize] {
        u8::MAX => None,
        i => Some(usize::from(i)),
    }
}

/// Milliseconds from an integer, an integral float (`1.7e12`) or a numeric string, as
/// the typed decoders accept them.
fn timestamp(text: &str) -> Option<i64> {
    let text = match text.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"')?,
        None => text,
    };
    if let Ok(n) = text.parse::<i64>() {
        return Some(n);
    }
    let f: f64 = text.parse().ok()?;
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64)
}

/// The entries summed as they are read, not collected first (the `Vec` was ~15% of a
/// `usage`'s reading, callgrind): the same reading as `from_str::<Vec<UsageEntry>>`
/// (its `deserialize_seq`, then the end), to the same errors, worded alike (a `Vec`
/// expects "a sequence").
fn usage(raw: &str) -> Result<Usage, RowError> {
    if let Some(sum) = compact_usage(raw) {
        return Ok(sum);
    }
    struct Sum;
    impl<'de> serde::de::Visitor<'de> for Sum {
        type Value = Usage;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a sequence")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Usage, A::Error> {
            let mut sum = Usage::default();
            while let Some(e) = seq.next_element::<UsageEntry>()? {
                sum.add(&e);
            }
            Ok(sum)
        }
    }
    use serde::Deserializer as _;
    let mut de = serde_json::Deserializer::from_str(raw);
    de.deserialize_seq(Sum).and_then(|sum| de.end().map(|()| sum)).map_err(|e| {
        RowError::invalid("$.usage", format!("`usage` is not a list of token counts: {e}"))
    })
}

/// A `usage` list in the form writers emit (`[{"provider":"p","inputTokens":101,
/// "outputTokens":40}]`, or spaced as `json.dumps` writes it, on one line: plain member names, counts as
/// non-negative integers within i64, other members plain strings or integers), summed
/// without serde_json: what its reading sums (a count twice, `null`, a negative count,
/// `-0`, which it reads as a float, or anything else: `None`, for it to read and explain).
/// Its reading was ~1,400 instructions a `RUN_FINISHED` (callgrind).
fn compact_usage(raw: &str) -> Option<Usage> {
    compact_usage_at(raw, 0).and_then(|(sum, end)| (end == raw.len()).then_some(sum))
}

/// [`compact_usage`] of the list at `start` in `json`: its sums and where it ends.
/// The compact reading first, as it is (the whitespace tests made it ~400 instructions
/// dearer a list, its searches no longer inlined, callgrind); the spaced one, out of line,
/// only where that declines.
fn compact_usage_at(json: &str, start: usize) -> Option<(Usage, usize)> {
    usage_at::<false>(json, start).or_else(|| spaced_usage_at(json, start))
}

#[inline(never)]
fn spaced_usage_at(json: &str, start: usize) -> Option<(Usage, usize)> {
    usage_at::<true>(json, start)
}

/// [`compact_usage_at`], with spaces and tabs between the tokens (`WS`) or without.
#[inline(always)]
fn usage_at<const WS: bool>(json: &str, start: usize) -> Option<(Usage, usize)> {
    use agui_core::stream::event::{int_end, plain_end};
    const COUNTS: [&[u8]; 6] = [
        b"inputTokens", b"outputTokens", b"totalTokens", b"reasoningTokens", b"cachedInputTokens",
        b"cacheWriteInputTokens",
    ];
    // Spaces and tabs from `i` on skipped (between any two tokens, as serde_json skips
    // them). Not line breaks: a list read here is on one line, as a template that reads
    // it as a value of its form needs it to be (`Template::usage`); one with a line
    // break is read by serde_json.
    #[inline(always)]
    fn skip<const WS: bool>(b: &[u8], mut i: usize) -> usize {
        if WS {
            while let Some(b' ' | b'\t') = b.get(i) {
                i += 1;
            }
        }
        i
    }
    let ws = skip::<WS>;
    let b = json.as_bytes();
    let mut sums = [None::<i64>; 6];
    if b.get(start) != Some(&b'[') {
        return None;
    }
    let mut i = ws(b, start + 1);
    if b.get(i) != Some(&b']') {
        loop {
            // An entry: `{`, members, `}`.
            if b.get(i) != Some(&b'{') {
                return None;
            }
            i = ws(b, i + 1);
            let mut seen = 0u8;
            if b.get(i) != Some(&b'}') {
                loop {
                    if b.get(i) != Some(&b'"') {
                        return None;
                    }
                    let name_end = plain_end(b, i + 1)?;
                    let name = &b[i + 1..name_end];
                    let colon = ws(b, name_end + 1);
                    if b.get(colon) != Some(&b':') {
                        return None;
                    }
                    let v = ws(b, colon + 1);
                    let end = match (COUNTS.iter().position(|c| *c == name), b.get(v)?) {
                        (Some(k), b'0'..=b'9') => {
                            if seen >> k & 1 != 0 {
                                return None;
                            }
                            seen |= 1 << k;
                            let end = int_end(b, v)?;
                            // (Digits only: `parse`'s value and overflow, with no call.)
                            let n = b[v..end].iter().try_fold(0i64, |n, &d| n.checked_mul(10)?.checked_add(i64::from(d - b'0')))?;
                            sums[k] = Some(sums[k].unwrap_or(0).saturating_add(n));
                            end
                        }
                        (None, b'"') => plain_end(b, v + 1)? + 1,
                        (None, b'-' | b'0'..=b'9') => int_end(b, v)?,
                        _ => return None,
                    };
                    let end = ws(b, end);
                    match b.get(end)? {
                        b',' => i = ws(b, end + 1),
                        b'}' => {
                            i = end;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            // `i`: the entry's `}`.
            let after = ws(b, i + 1);
            match b.get(after)? {
                b',' => i = ws(b, after + 1),
                b']' => {
                    i = after;
                    break;
                }
                _ => return None,
            }
        }
    }
    // `i`: the list's `]`.
    let [input_tokens, output_tokens, total_tokens, reasoning_tokens, cached_input_tokens, cache_write_input_tokens] = sums;
    Some((Usage { input_tokens, output_tokens, total_tokens, reasoning_tokens, cached_input_tokens, cache_write_input_tokens }, i + 1))
}

/// The error of a text that is not JSON. One that ends early is worded as the typed
/// decoders (msgspec) word it, so that every command says the same of a truncated log.
fn invalid_json(e: serde_json::Error) -> RowError {
    let message = match e.classify() {
        serde_json::error::Category::Eof => TRUNCATED.to_string(),
        _ => format!("invalid JSON: {e}"),
    };
    RowError { kind: Kind::InvalidJson, message, field: None }
}


fn short(text: &str) -> String {
    let mut end = text.len().min(40);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() { format!("{}...", &text[..end]) } else { text.to_string() }
}

/// The slow path after the fast one failed: which member is wrong. Nothing recurses
/// deeper than serde_json's default limit (128 levels), so an event nested as deep as
/// any API allows (`MAX_DEPTH_CAP`) is explained on any thread's stack: its syntax is
/// checked by serde_json's skip (a stack of its own), every string of an event up to
/// 128 levels deep is decoded (one that does not, a lone surrogate, is invalid JSON),
/// then the top-level members are looked at, each kept as text.
fn explain(json: &str) -> RowError {
    use std::collections::BTreeMap;
    if let Err(e) = serde_json::from_str::<IgnoredAny>(json) {
        return invalid_json(e);
    }
    if !agui_core::limits::exceeds_depth(json.as_bytes(), 128) {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(json) {
            return invalid_json(e);
        }
    }
    if !json.trim_start().starts_with('{') {
        return RowError::invalid("$", format!("an event is a JSON object, not {}", short(json)));
    }
    // (A member name that does not decode, a lone surrogate, is invalid JSON.)
    let obj: BTreeMap<String, &RawValue> = match serde_json::from_str(json) {
        Ok(obj) => obj,
        Err(e) => return invalid_json(e),
    };
    const STRINGS: [&str; 11] = [
        "type", "threadId", "runId", "parentRunId", "messageId", "toolCallId", "role", "name", "toolCallName",
        "stepName", "delta",
    ];
    for key in STRINGS {
        let Some(v) = obj.get(key).map(|v| v.get()) else { continue };
        if v.starts_with('"') {
            // A string that does not decode (a lone surrogate) is invalid JSON.
            if let Err(e) = serde_json::from_str::<String>(v) {
                return invalid_json(e);
            }
        } else if v != "null" && key != "delta" {
            return RowError::invalid(&format!("$.{key}"), format!("`{key}` is not a string: {}", short(v)));
        }
    }
    if obj.contains_key("usage") {
        return RowError::invalid("$.usage", "`usage` is not a list of token counts".into());
    }
    RowError::invalid("$", "the event does not match the AG-UI 1.0 schema".into())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    thread_local! {
        /// The differential tests' switch: no event of this thread read by a template.
        pub(crate) static NO_TEMPLATES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// Events of this thread read by a template (so that those tests can fail).
        pub(crate) static TEMPLATE_HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// The differential tests' other switch: no SSE frame read ahead of the framer's
        /// line search (`Shape::form_end`).
        pub(crate) static NO_FRAME_SKIP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// Frames read ahead of the line search (so that those tests can fail).
        pub(crate) static FRAME_SKIPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
        /// No event of this thread read by the scan (nor so by a template it learns): every
        /// one by the serde pass, the reading the fast ones are held to.
        pub(crate) static NO_SCAN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    fn parse_d(json: &str) -> Result<Fields<'_>, RowError> {
        parse(json, None, agui_core::limits::DEFAULT_MAX_DEPTH)
    }

    /// The serde pass alone; where it fails, on the text with each escaped lone
    /// surrogate as U+FFFD.
    fn parse_serde_d(json: &str) -> Result<Fields<'static>, RowError> {
        let pass = |text: &str| {
            let mut out = Fields::default();
            let mut raw = Raw::new(&mut out.strings, &mut out.delta);
            parse_serde(text, &mut raw)?;
            let Raw { ty, ty_key, timestamp, delta_other, usage, .. } = raw;
            finish(ty, ty_key, timestamp, delta_other, usage, &mut out)?;
            Ok(out.into_owned())
        };
        let mut raw_fields = Fields::default();
        match parse_serde(json, &mut Raw::new(&mut raw_fields.strings, &mut raw_fields.delta)) {
            Ok(()) => pass(json),
            Err(_) => pass(&lossy(json)),
        }
    }

    /// `json` with each escaped lone surrogate as `\ufffd`.
    fn lossy(json: &str) -> String {
        agui_core::text::replace_lone_surrogates(json.as_bytes()).map_or_else(|| json.to_string(), |b| String::from_utf8(b).unwrap())
    }

    /// Two forms whose heads share a set (a run's start and end, written as `json.dumps`
    /// writes them) are both kept: after each is learned once, every event of either is
    /// read by its template, to the row the scan reads.
    #[test]
    fn forms_of_one_set_are_both_kept() {
        use agui_core::limits::DEFAULT_MAX_DEPTH as D;
        let start = r#"{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}"#;
        let end = r#"{"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}"#;
        let delta = r#"{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"}"#;
        let set = |json: &str| bucket(&json.as_bytes()[HEAD..HEAD + 16]);
        assert_eq!(set(start), set(end), "the heads share a set");
        assert_ne!(set(start), set(delta));
        // (Each event its own text: a text the templates missed is not tried again.)
        let log: Vec<String> = (0..20).flat_map(|_| [start, delta, delta, end].map(str::to_string)).collect();
        let mut shape = Shape::default();
        let (mut events, before) = (0, TEMPLATE_HITS.get());
        for json in &log {
            let mut out = Fields::default();
            read(json, None, D, &mut out, &mut shape).unwrap();
            let mut want = Fields::default();
            NO_TEMPLATES.set(true);
            read(json, None, D, &mut want, &mut Shape::default()).unwrap();
            NO_TEMPLATES.set(false);
            assert_eq!(out, want, "{json}");
            events += 1;
        }
        // The first of each of the three forms is scanned (and learned).
        assert_eq!(TEMPLATE_HITS.get() - before, events - 3);
    }

    /// A literal run compared in place is the slice compare: runs of every length up to
    /// past the in-place limit, at every place of a text (the window whole, cut by the
    /// text's end, or missing), each byte of the text changed in turn.
    #[test]
    fn runs_compare_as_slices() {
        let lits: Vec<u8> = (0..60u8).map(|i| b'!' + i).collect();
        for from in [0, 3] {
            for len in 0..=52 {
                let run = Run::new(&lits[..from + len], from);
                let want = &lits[from..from + len];
                for at in 0..4 {
                    for tail in [0, 1, 7, 8, 15, 16, 30, 47, 48] {
                        let mut text = vec![b'#'; at];
                        text.extend_from_slice(want);
                        text.extend(std::iter::repeat_n(b'~', tail));
                        for change in std::iter::once(None).chain((0..text.len()).map(Some)) {
                            let mut b = text.clone();
                            if let Some(i) = change {
                                b[i] ^= 0x20;
                            }
                            for cut in [b.len(), at + len, (at + len).saturating_sub(1)] {
                                let b = &b[..cut.min(b.len())];
                                let slice = b.get(at..at + len) == Some(want);
                                assert_eq!(run.is_at(&lits, b, at), slice, "{from} {len} {at} {tail} {change:?} {cut}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// Every 1.0 type name is its position in `EVENT_TYPES`; the 0.x `THINKING_*` names
    /// and any other text are unknown, as in the linear search this replaced.
    #[test]
    fn type_keys() {
        for (i, name) in EVENT_TYPES.iter().enumerate() {
            assert_eq!(type_key(name), Some(i), "{name}");
        }
        for name in ["THINKING_START", "THINKING_TEXT_MESSAGE_CONTENT", "", "text_message_start", "RUN_STARTED ", "NOPE"] {
            assert_eq!(type_key(name), None, "{name}");
        }
        assert!((agui_core::stream::event::EventType::Unknown as usize) < 64);
    }

    #[test]
    fn depth_limit() {
        let deep = |d: usize| format!(r#"{{"type":"CUSTOM","name":"n","value":{}{}}}"#, "[".repeat(d - 1), "]".repeat(d - 1));
        assert!(parse(&deep(512), None, 512).is_ok());
        let e = parse(&deep(513), None, 512).unwrap_err();
        assert_eq!(e.kind, Kind::InvalidJson);
        assert!(parse(&deep(513), None, 600).is_ok());
    }

    #[test]
    fn reads_the_columns() {
        let f = parse_d(r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m\"1","delta":"a\nb","timestamp":"1700000000000","extra":[1,{"x":2}]}"#).unwrap();
        assert_eq!(f.ty, "TEXT_MESSAGE_CONTENT");
        assert_eq!(f.message_id(), Some("m\"1"));
        assert_eq!(f.delta(), Some("a\nb"));
        assert_eq!(f.timestamp, Some(1_700_000_000_000));
        let f = parse_d(r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"search","timestamp":1.7e12}"#).unwrap();
        assert_eq!(f.name(), Some("search"));
        assert_eq!(f.timestamp, Some(1_700_000_000_000));
        let f = parse_d(r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/a","value":1}]}"#).unwrap();
        assert!(f.delta.is_none());
        let f = parse_d(r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"provider":"p","inputTokens":3,"outputTokens":4},{"inputTokens":5}]}"#).unwrap();
        let u = f.usage.unwrap();
        assert_eq!((u.input_tokens, u.output_tokens, u.total_tokens), (Some(8), Some(4), None));
    }

    /// The fast path accepts the JSON serde_json accepts, wherever the value sits: a
    /// skipped member or `timestamp` (serde_json's skip), a string read, a key or a string
    /// `delta` (decoded), an escaped lone surrogate read as U+FFFD (as `JSON.parse` then
    /// a UTF-8 encoder read it). Any other parser put in its place must pass this as it is.
    #[test]
    fn validates_as_serde_json_does() {
        let strings = [
            r#""\ud800""#, r#""\udc00""#, r#""\ud800\u0041""#, r#""\ud83d\ude00""#, r#""\ud83d""#,
            "\"a\u{1}b\"", "\"a\tb\"", "\"a\u{7f}b\"", r#""\x""#, r#""\u12""#, r#""\u12G4""#, r#""\/\b\f\n\r\t""#,
            r#""abc"#, r#""a\""#, "\"\u{1F600}é\"", r#""\u0000""#, "\"\\\u{0}\"", r#""\uDBFF\uDFFF""#, r#""\uDFFF\uDBFF""#,
        ];
        let others = [
            "01", "1.", ".5", "-", "1e", "1e400", "-0", "1E+2", "123456789012345678901234567890", "+1", "NaN",
            "Infinity", "-1.5e-3", "0x10", "tru", "nul", "true", "null", "[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}",
            "{1:2}", "[]", "{}", "[[[]]]", "[1,[2,{\"a\":[3]}]]", "\u{c}1", "1\u{a0}", "[1]]", "{\"a\":1}}", "",
            "[\"\\ud800\"]", "{\"\\udc00\":1}", "{\"k\":\"\u{1}\"}", "[1e400]", "{\"a\":-}", "[\"\\x\"]",
            "[\"a\u{1}\"]", "{\"a\":\"\\u12\"}",
        ];
        // (event text, the value, its position decodes a string there, the value must be
        // a string or null to be read)
        let mut cases = Vec::new();
        for v in strings.iter().chain(&others) {
            cases.push((format!(r#"{{"type":"CUSTOM","name":"n","value":{v}}}"#), *v, false, false));
            cases.push((format!(r#"{{"type":"STATE_DELTA","delta":{v}}}"#), *v, true, false));
            cases.push((format!(r#"{{"type":"RUN_STARTED","timestamp":{v}}}"#), *v, false, false));
            cases.push((format!(r#"{{"type":"TEXT_MESSAGE_START","messageId":{v}}}"#), *v, true, true));
            cases.push((format!(r#"{{"type":"CUSTOM","name":"n",{v}:1}}"#), *v, true, false));
        }
        for tail in ["", " ", "\n", "\r\n\t", " x", "}", "{}", ",", "\u{0}", "\u{c}"] {
            cases.push((format!(r#"{{"type":"RUN_STARTED","runId":"r"}}{tail}"#), "", false, false));
            cases.push((format!(r#"  {{"type":"RUN_STARTED","runId":"r"}}{tail}"#), "", false, false));
        }
        for (case, v, decodes, string) in &cases {
            let decoded = serde_json::from_str::<serde_json::Value>(&lossy(case)).is_ok();
            let skipped = serde_json::from_str::<IgnoredAny>(&lossy(case)).is_ok();
            // `delta` decodes the member names of an object given as `delta`, too.
            let decodes = *decodes && (v.starts_with('"') || (case.contains("delta") && v.starts_with('{')));
            let valid = if decodes { decoded } else { skipped };
            let readable = valid && (!string || v.starts_with('"') || *v == "null");
            let got = parse_d(case);
            let kind = got.as_ref().err().map(|e| e.kind);
            if !valid {
                assert_eq!(kind, Some(Kind::InvalidJson), "{case:?}");
            } else if readable {
                // Only the members' meaning can be wrong: a timestamp that is not an integer.
                assert!(kind.is_none() || case.contains("timestamp"), "{case:?}: {:?}", got.err());
            } else {
                // Explained: any string that does not decode makes it invalid JSON.
                let want = if decoded { Kind::EventValidation } else { Kind::InvalidJson };
                assert_eq!(kind, Some(want), "{case:?}");
            }
        }
    }

    /// The columns read where the protobuf mapping wrote them are those of its text, for
    /// every event of the codec vectors, also with escapes in the strings read.
    #[test]
    fn members_read_as_the_text() {
        use agui_core::proto::{decode_message_members, parse_json, Members, Reuse};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/codec/events.jsonl");
        let mut jsons = Vec::new();
        for line in std::fs::read_to_string(dir).unwrap().lines().filter(|l| !l.is_empty()) {
            let case = parse_json(line.as_bytes()).unwrap();
            if let Some(h) = case.get("proto_frame_hex").and_then(|h| h.as_str()) {
                let b: Vec<u8> = (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect();
                jsons.push(b[4..].to_vec());
            }
        }
        // Escapes in every string column (re-encoded from JSON with them).
        let escaped = [
            r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m\"1\n","role":"assistant","delta":"a\u0001\\b","name":"\ud83d\ude00"}"#,
            r#"{"type":"RUN_STARTED","threadId":"t\t","runId":"r\"","parentRunId":"p\\"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"c\r","toolCallName":"n\"x"}"#,
            r#"{"type":"STEP_STARTED","stepName":"s\u007f\""}"#,
            // Unicode written as it is, and empty strings: plain.
            r#"{"type":"RUN_STARTED","threadId":"","runId":"é中","parentRunId":""}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"","role":"assistant","name":"ü\u2028"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"😀","delta":"\\"}"#,
        ];
        for e in escaped {
            let mut m = Vec::new();
            agui_core::proto::encode_json(e.as_bytes(), false, &mut m).unwrap();
            jsons.push(m);
        }
        let (mut reuse, mut members, mut read) = (Reuse::default(), Members::default(), 0);
        for msg in &jsons {
            let mut out = Vec::new();
            if decode_message_members(msg, &mut Vec::new(), &mut out, &mut reuse, &mut members).is_err() {
                continue;
            }
            let text = std::str::from_utf8(&out).unwrap();
            assert_eq!(parse(text, Some(&members), 512), parse_d(text), "{text}");
            read += parse_d(text).is_ok() as usize;
        }
        assert!(read > 300, "{read}");
        assert!(jsons.len() - read < 10);
    }

    #[test]
    fn explains_the_deepest_event_on_a_small_stack() {
        let cap = agui_core::limits::MAX_DEPTH_CAP;
        let broken = format!(r#"{{"type":"CUSTOM","name":5,"value":{}{}}}"#, "[".repeat(cap - 1), "]".repeat(cap - 1));
        let wrong = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let e = parse(&broken, None, cap).unwrap_err();
                let bad = parse(&broken.replacen("]]", "}]", 1), None, cap).unwrap_err();
                (e.field, bad.kind)
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(wrong, (Some("$.name".to_string()), Kind::InvalidJson));
    }

    /// `usage` (the compact reading, else serde_json's) reads what collecting the entries
    /// into a `Vec` reads, to the same sums and the same errors, word for word:
    /// random lists of entries with every count,
    /// other members, nulls, big, negative, fractional, string and nested values,
    /// members twice, whitespace (`json.dumps`' and any other), and texts that are no list, cut
    /// or followed by more.
    #[test]
    fn usage_sums_as_the_collected_entries() {
        let collected = |raw: &str| -> Result<Usage, RowError> {
            let entries: Vec<UsageEntry> = serde_json::from_str(raw).map_err(|e| {
                RowError::invalid("$.usage", format!("`usage` is not a list of token counts: {e}"))
            })?;
            let mut sum = Usage::default();
            for e in &entries {
                sum.add(e);
            }
            Ok(sum)
        };
        let names = [
            "inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens", "cacheWriteInputTokens",
            "provider", "model", "input\\u0054okens", "",
        ];
        let values = [
            "1", "40", "0", "-3", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "1.5", "1e3", "null",
            "\"p\"", "\"3\"", "[1]", "{\"a\":1}", "true", "01", "-0", "101", "7", "\"a\\\"b\"", "1 ",
        ];
        let mut rng = agui_core::test_rng::Rng(0x0005_a6e5);
        let (mut ok, mut compact) = (0, 0);
        for _ in 0..20_000 {
            let mut raw = String::from("[");
            for k in 0..rng.below(4) {
                if k > 0 {
                    raw.push_str(rng.pick(&[",", ",", ", ", ""]));
                }
                match rng.below(12) {
                    0 => raw.push_str(rng.pick(&["null", "1", "[]", "\"x\"", "{}"])),
                    _ => {
                        // Compact, or spaced (`json.dumps`), or whitespace anywhere.
                        let [open, sep, colon, close] = match rng.below(4) {
                            0 | 1 => ["{", ",", ":", "}"],
                            2 => ["{", ", ", ": ", "}"],
                            _ => [rng.pick(&["{ ", "{\t"]), rng.pick(&[" , ", ",\n"]), rng.pick(&[" :", ":\t", ":\r\n"]), " }"],
                        };
                        raw.push_str(open);
                        for m in 0..rng.below(5) {
                            if m > 0 {
                                raw.push_str(sep);
                            }
                            raw.push_str(&format!("\"{}\"{colon}{}", rng.pick(&names), rng.pick(&values)));
                        }
                        raw.push_str(close);
                    }
                }
            }
            raw.push(']');
            let raw = match rng.below(10) {
                0 => raw[..rng.below(raw.len() + 1)].to_string(),
                1 => format!("{raw}{}", rng.pick(&[" ", "]", ",1", "x", "\n"])),
                2 => rng.pick(&["{}", "null", "1", "\"a\"", "", "{\"inputTokens\":1}"]).to_string(),
                _ => raw,
            };
            let got = usage(&raw);
            assert_eq!(got, collected(&raw), "{raw}");
            ok += got.is_ok() as usize;
            compact += compact_usage(&raw).is_some() as usize;
        }
        // Both readings are exercised: the compact one takes a good part of the lists read.
        assert!(ok > 2_000 && ok < 18_000 && compact > ok / 4, "{ok} {compact}");
    }

    #[test]
    fn names_the_wrong_member() {
        let e = parse_d("{nope").unwrap_err();
        assert_eq!(e.kind, Kind::InvalidJson);
        for cut in [r#"{"type":"RUN_STARTED","runId":"r""#, r#"{"type":"RUN_STARTED","runId":"#, "{", "", "  "] {
            assert_eq!(parse_d(cut).unwrap_err().message, TRUNCATED, "{cut:?}");
        }
        let e = parse_d(r#"{"type":"NOPE"}"#).unwrap_err();
        assert_eq!((e.kind, e.field.as_deref()), (Kind::EventValidation, Some("$.type")));
        let e = parse_d(r#"{"type":"TEXT_MESSAGE_START","messageId":5}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("$.messageId"));
        let e = parse_d(r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":5}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("$.delta"));
        let e = parse_d(r#"{"type":"RUN_STARTED","timestamp":true}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("$.timestamp"));
        let e = parse_d(r#"{"type":"RUN_FINISHED","usage":{"inputTokens":1}}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("$.usage"));
        let e = parse_d(r#"{"type":"RUN_STARTED","runId":"a","runId":"b"}"#).unwrap_err();
        assert_eq!(e.kind, Kind::EventValidation);
        let f = parse_d(r#"{"\u0074ype":"RUN_STARTED","run\u0049d":"a","x":{"runId":5}}"#).unwrap();
        assert_eq!((f.ty, f.run_id()), ("RUN_STARTED", Some("a")));
        let e = parse_d(r#"[1]"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("$"));
        assert_eq!(parse_d(r#"{"runId":"r"}"#).unwrap_err().field.as_deref(), Some("$.type"));
    }

    use agui_core::test_rng::Rng;

    /// The compact scan and the serde pass give the same row (every column read from
    /// the JSON) or the same error, on random events: the table's members and others,
    /// in any order, some twice; plain strings, escapes, unicode, lone surrogates,
    /// control characters, integers, fractions, big and invalid numbers, literals,
    /// nested values; whitespace and text after the object.
    #[test]
    fn the_scan_reads_what_serde_reads() {
        let names = [
            "type", "type", "type", "messageId", "toolCallId", "delta", "delta", "threadId", "runId", "parentRunId",
            "role", "name", "toolCallName", "stepName", "timestamp", "usage", "parentMessageId", "x", "", "é",
            "run\\u0049d", "type\\n",
        ];
        let types = [
            "\"TEXT_MESSAGE_CONTENT\"", "\"TOOL_CALL_ARGS\"", "\"REASONING_MESSAGE_CONTENT\"", "\"RUN_STARTED\"",
            "\"RUN_FINISHED\"", "\"STATE_DELTA\"", "\"TOOL_CALL_START\"", "\"NOPE\"", "\"\"", "\"TEXT_MESSAGE_\\u0043ONTENT\"",
            "7", "null",
        ];
        let values = [
            "\"ab\"", "\"\"", "\"é😀 x\"", "\"a\\\"b\"", "\"a\\u0041\"", "\"tab\\there\"", "\"bad\u{1}\"", "\"\\ud800\"",
            "\"\\ud83d\\ude00\"", "\"\\udc00x\"", "\"a\u{7f}b\"", "\"1700000000000\"", "\"\\x\"", "0", "-0", "12", "-5",
            "1700000000000", "123456789012345678901234567890", "01", "-", "1.5", "1e3", "1.7e12", "-1.5e-3", "1e400",
            "true", "false", "null", "[]", "[1,{\"a\":\"\\ud800\"}]", "{\"x\":1}", "[{\"inputTokens\":3,\"outputTokens\":4}]",
            "[{\"inputTokens\":\"3\"}]", "\"unterminated",
            // Escapes of every kind (the scan unescapes them as serde does), surrogate
            // pairs, lone and broken surrogates, bad escapes.
            "\"\\\\\\/\\b\\f\\n\\r\\t\\\"\"", "\"x\\uD83D\\uDE00y\"", "\"\\uDBFF\\uDFFF\"", "\"\\ud83d\\u0041\"",
            "\"\\ud83dx\"", "\"\\u00e9\\u0000\\u001F\"", "\"\\u12\"", "\"\\u12G4\"", "\"a\\\"", "\"{\\\"a\\\":[1,\\\"\\\\n\\\"]}\"",
        ];
        let seps = [",", ",", ",", ",", ", ", " ,", ",\n"];
        let colons = [":", ":", ":", ":", ": ", " :"];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut scanned, mut rows, mut resumed, total) = (0, 0, 0, 40_000);
        let mut shape = Shape::default();
        for _ in 0..total {
            let mut members = Vec::new();
            if rng.below(10) > 0 {
                members.push(("type".to_string(), rng.pick(&types).to_string()));
            }
            for _ in 0..rng.below(5) {
                let name = rng.pick(&names);
                let value = if name == "type" { rng.pick(&types) } else { rng.pick(&values) };
                members.push((name.to_string(), value.to_string()));
            }
            // Mostly in the writers' order, sometimes shuffled.
            if rng.below(4) == 0 {
                for i in (1..members.len()).rev() {
                    members.swap(i, rng.below(i + 1));
                }
            }
            // Mostly compact.
            let compact = rng.below(3) > 0;
            let mut json = String::from(if compact || rng.below(2) == 0 { "{" } else { " {" });
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    json.push_str(if compact { "," } else { rng.pick(&seps) });
                }
                json.push_str(&format!("\"{k}\"{}{v}", if compact { ":" } else { rng.pick(&colons) }));
            }
            json.push('}');
            if !compact {
                json.push_str(rng.pick(&["", " ", "\n", " x", "}", ","]));
            }
            let fast = parse_d(&json);
            scanned += scan(&json, &mut Raw::new(&mut Default::default(), &mut None), &mut Shape::default()).is_some() as usize;
            rows += fast.is_ok() as usize;
            let serde = parse_serde_d(&json);
            assert_eq!(fast, serde, "{json}");
            // Read after the events before it (whatever type they left in `shape`), and
            // again right after itself (its own leading type member, when the scan took it).
            for _ in 0..2 {
                resumed += (!shape.prefix.is_empty() && json.as_bytes().starts_with(&shape.prefix)) as usize;
                let mut out = Fields::default();
                let got = read(&json, None, agui_core::limits::DEFAULT_MAX_DEPTH, &mut out, &mut shape).map(|()| out);
                assert_eq!(got, serde, "{json} after {:?}", String::from_utf8_lossy(&shape.prefix));
            }
        }
        // Both paths and both outcomes are exercised, and reading on from a known type.
        assert!(scanned > total / 10 && scanned < total / 2, "{scanned} of {total} scanned");
        assert!(resumed > total / 10, "{resumed} resumed");
        assert!(rows > total / 20 && rows < total - total / 20, "{rows} of {total} rows");
    }

    /// `json` spaced as Python's `json.dumps` spaces it: `", "` and `": "` between the
    /// tokens of every level (outside strings), nothing else changed (a text that is no
    /// JSON stays as wrong, a cut one as cut).
    pub(crate) fn dumps_spacing(json: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(json.len() + json.len() / 8);
        let (mut string, mut escape) = (false, false);
        for &c in json {
            out.push(c);
            match (string, escape, c) {
                (true, true, _) => escape = false,
                (true, false, b'\\') => escape = true,
                (true, false, b'"') | (false, _, b'"') => string = !string,
                (false, _, b',' | b':') => out.push(b' '),
                _ => {}
            }
        }
        out
    }

    /// Events written as Python's `json.dumps` writes them (`", "` and `": "` at every
    /// level, nested values too) are read by the scan, and by the templates learned from
    /// them, to the rows and errors of the serde pass, and to the rows of the same events
    /// written compactly (errors of the same class and member): random events of the
    /// table's members and others, in any order, some twice; strings holding `, ` and
    /// `: `, escapes, unicode, integers, fractions, big numbers, literals, nested values
    /// (patches, snapshots, `usage` lists), invalid values.
    #[test]
    fn spaced_events_read_as_compact_ones() {
        let names = [
            "type", "messageId", "toolCallId", "delta", "delta", "threadId", "runId", "parentRunId", "role", "name",
            "toolCallName", "stepName", "timestamp", "timestamp", "usage", "usage", "parentMessageId", "x", "é", "run\\u0049d",
        ];
        let types = [
            "\"TEXT_MESSAGE_CONTENT\"", "\"TEXT_MESSAGE_CONTENT\"", "\"TOOL_CALL_ARGS\"", "\"RUN_STARTED\"",
            "\"RUN_FINISHED\"", "\"RUN_FINISHED\"", "\"STATE_DELTA\"", "\"STATE_SNAPSHOT\"", "\"NOPE\"",
            "\"TEXT_MESSAGE_\\u0043ONTENT\"", "7", "null",
        ];
        let values = [
            "\"ab\"", "\"\"", "\"é😀 x\"", "\"a, b: c\"", "\"{\\\"a\\\": [1, \\\"\\\\n\\\"]}\"", "\"a\\\"b\"", "\"a\\\\\"",
            "\"tab\\there\"", "\"\\u00e9\\u0000\"", "\"\\ud83d\\ude00\"", "\"\\ud800\"", "\"bad\u{1}\"", "\"\\x\"",
            "\"1700000000000\"", "0", "-0", "12", "-5", "1700000000000", "123456789012345678901234567890", "01", "1.5",
            "1e3", "1.7e12", "true", "false", "null", "[]", "{}", "[1,2]", "{\"x\":1,\"y\":[\"a,b\",{}]}",
            "[{\"op\":\"add\",\"path\":\"/a\",\"value\":{\"b\":[1,\"x: y\"]}}]", "[{\"op\":\"remove\",\"path\":\"/a\"}]",
            "[{\"provider\":\"p\",\"inputTokens\":3,\"outputTokens\":4}]", "[{\"inputTokens\":1},{\"totalTokens\":2}]",
            "[{\"inputTokens\":1.5}]", "[{\"inputTokens\":\"3\"}]", "[1,]", "{\"a\":\"\\ud800\"}", "[\"\\u12\"]",
            "{\"a\":1", "\"unterminated",
        ];
        let mut rng = Rng(0x5ace_d0d5);
        let (mut scanned, mut rows, mut hits, total) = (0, 0, 0, 20_000);
        let mut shape = Shape::default();
        for _ in 0..total {
            let mut members: Vec<(&str, &str)> = Vec::new();
            if rng.below(12) > 0 {
                members.push(("type", rng.pick(&types)));
            }
            for _ in 0..rng.below(5) {
                let name = rng.pick(&names);
                members.push((name, if name == "type" { rng.pick(&types) } else { rng.pick(&values) }));
            }
            if rng.below(6) == 0 {
                for i in (1..members.len()).rev() {
                    members.swap(i, rng.below(i + 1));
                }
            }
            let compact: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let compact = format!("{{{}}}", compact.join(","));
            let spaced = String::from_utf8(dumps_spacing(compact.as_bytes())).unwrap();
            let serde = parse_serde_d(&spaced);
            assert_eq!(parse_d(&spaced), serde, "{spaced}");
            match (parse_d(&compact), &serde) {
                (Ok(c), Ok(s)) => assert_eq!(&c, s, "{spaced}"),
                (Err(c), Err(s)) => assert_eq!((c.kind, &c.field), (s.kind, &s.field), "{spaced}"),
                (c, s) => panic!("{compact}: {c:?}, spaced: {s:?}"),
            }
            // After the events before it, and again after itself (a template learned
            // from it, when it has a form one reads).
            for _ in 0..2 {
                let before = TEMPLATE_HITS.get();
                let mut out = Fields::default();
                let got = read(&spaced, None, agui_core::limits::DEFAULT_MAX_DEPTH, &mut out, &mut shape).map(|()| out);
                hits += TEMPLATE_HITS.get() - before;
                assert_eq!(got, serde, "{spaced}");
            }
            scanned += scan(&spaced, &mut Raw::new(&mut Default::default(), &mut None), &mut Shape::default()).is_some() as usize;
            rows += serde.is_ok() as usize;
        }
        // The scan and the templates read many of them; rows and errors both come out.
        assert!(scanned > total / 5, "{scanned} of {total} scanned");
        assert!(hits > total as u64 / 10, "{hits} read by templates");
        assert!(rows > total / 10 && rows < total - total / 10, "{rows} of {total} rows");
    }
}
