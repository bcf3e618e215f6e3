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

/// What the stages read of an event: its type and its members by name. An event object
/// (`Value`) is one; a [`Plain`] event, read without one, is another: the reducer and the
/// run outcome take either through the same code.
pub trait Members {
    fn kind(&self) -> EventType;
    fn get(&self, key: &str) -> Option<&Value>;
    /// The event object, when it is one.
    fn object(&self) -> Option<&Value>;
}

impl Members for Value {
    #[inline]
    fn kind(&self) -> EventType {
        EventType::of(self)
    }
    #[inline]
    fn get(&self, key: &str) -> Option<&Value> {
        Value::get(self, key)
    }
    #[inline]
    fn object(&self) -> Option<&Value> {
        Some(self)
    }
}

/// The common events other than deltas in their plain form, read without an event object:
/// starts and ends of messages, tool calls, steps and reasoning spans, tool results with
/// text content, run starts and ends without input, result or outcome, and state snapshots
/// (an object, an array or a string). Each member is a string, an integer or (`usage`,
/// `snapshot`) a value the schema stage keeps exactly as it is, and
/// nothing the stages before the reducer would change or warn about (no `metadata`,
/// `rawEvent`, `subagentRunId`, no `null`). Only the members the reducer reads are kept;
/// the others (`timestamp`, `threadId`, `runId`, `stepName`, `usage`) are checked and
/// dropped. Anything else is read as an event object.
#[derive(Debug)]
pub struct Plain<'a> {
    kind: EventType,
    members: Vec<(&'static str, Value)>,
    /// A `STATE_SNAPSHOT`'s snapshot as its JSON text (an array or an object), and the
    /// levels it may nest: the state is built from the text
    /// ([`State::set_text`](super::State::set_text)), without a `Value` between. A text
    /// that runs to the event's closing brace is not yet known to be one JSON value
    /// ([`snapshot_to_end`]): its reader checks that, as every `set_text` does.
    snapshot: Option<(&'a str, usize)>,
}

impl Members for Plain<'_> {
    #[inline]
    fn kind(&self) -> EventType {
        self.kind
    }
    #[inline]
    fn get(&self, key: &str) -> Option<&Value> {
        self.members.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
    #[inline]
    fn object(&self) -> Option<&Value> {
        None
    }
}

/// The kinds of events with a plain form ([`Plain`]).
const PLAIN_KINDS: [EventType; 14] = {
    use EventType as E;
    [
        E::TextMessageStart,
        E::TextMessageEnd,
        E::ReasoningMessageStart,
        E::ReasoningMessageEnd,
        E::ReasoningStart,
        E::ReasoningEnd,
        E::ToolCallStart,
        E::ToolCallEnd,
        E::ToolCallResult,
        E::StepStarted,
        E::StepFinished,
        E::RunStarted,
        E::RunFinished,
        E::StateSnapshot,
    ]
};

/// The members a plain event may carry, numbered by their place in one list: the table
/// (`PLAIN_MEMBERS`: `true` for those the reducer reads, kept; `false` for those only
/// checked) and the lookup by name ([`plain_member`], a `match`: once a member, event
/// after event), each arm's number found in the table at compile time.
macro_rules! plain_members {
    ($($name:literal => $kept:literal,)*) => {
        const PLAIN_MEMBERS: [(&str, bool); [$($name),*].len()] = [$(($name, $kept)),*];

        /// A member a plain event may carry, by its name: its number in [`PLAIN_MEMBERS`],
        /// its name as a static string, and whether the reducer reads it.
        fn plain_member(name: &str) -> Option<(usize, &'static str, bool)> {
            let i = match name {
                $($name => const { plain_member_number($name) },)*
                _ => return None,
            };
            let (name, kept) = PLAIN_MEMBERS[i];
            Some((i, name, kept))
        }
    };
}

plain_members! {
    "messageId" => true,
    "role" => true,
    "name" => true,
    "toolCallId" => true,
    "toolCallName" => true,
    "parentMessageId" => true,
    "content" => true,
    "snapshot" => true,
    "timestamp" => false,
    "threadId" => false,
    "runId" => false,
    "parentRunId" => false,
    "stepName" => false,
    "usage" => false,
}

/// The place of `name` in [`PLAIN_MEMBERS`] (evaluated when compiling).
const fn plain_member_number(name: &str) -> usize {
    let name = name.as_bytes();
    let mut i = 0;
    while i < PLAIN_MEMBERS.len() {
        let other = PLAIN_MEMBERS[i].0.as_bytes();
        if other.len() == name.len() {
            let mut j = 0;
            while j < name.len() && other[j] == name[j] {
                j += 1;
            }
            if j == name.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a plain member")
}

/// What the schema declares of a kind with a plain form, by plain member
/// ([`PLAIN_MEMBERS`]): looked up once, not by name event after event.
struct PlainSchema {
    /// Each member's field (`None`: not declared: no plain event of the kind has it).
    fields: [Option<&'static super::schema::Field>; PLAIN_MEMBERS.len()],
    /// The members the kind requires, one bit each (`None`: a requirement no plain event
    /// meets: a member of no plain form, a default the stage adds).
    required: Option<u16>,
}

/// The [`PlainSchema`] of `kind`; `None`: no plain form.
fn plain_schema(kind: EventType) -> Option<&'static PlainSchema> {
    const KINDS: usize = EventType::Unknown as usize + 1;
    static TABLE: std::sync::OnceLock<[Option<PlainSchema>; KINDS]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table = std::array::from_fn(|_| None);
        for kind in PLAIN_KINDS {
            let fields = std::array::from_fn(|m| super::schema::field(kind, PLAIN_MEMBERS[m].0));
            let required = super::schema::required(kind)
                .and_then(|mut names| names.try_fold(0u16, |mask, name| if name == "type" { Some(mask) } else { plain_member(name).map(|(m, ..)| mask | 1 << m) }));
            table[kind as usize] = Some(PlainSchema { fields, required });
        }
        table
    });
    table[kind as usize].as_ref()
}

/// A member of a plain event or a plain delta event, by its JSON name, as a static
/// string; `None` (`type` included): a member neither form has.
pub fn plain_member_name(name: &str) -> Option<&'static str> {
    match delta_slot(name) {
        Some((1, false)) => Some("messageId"),
        Some((1, true)) => Some("toolCallId"),
        Some((2, _)) => Some("delta"),
        _ => plain_member(name).map(|(_, name, _)| name),
    }
}

impl<'a> Plain<'a> {
    /// Take the member `key` out of the event.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.members.iter_mut().find(|(k, _)| *k == key).map(|(_, v)| v.take())
    }

    /// A `STATE_SNAPSHOT`'s snapshot as JSON text, and the levels it may nest (`None`:
    /// another event, or its snapshot is a member).
    pub fn snapshot_text(&self) -> Option<(&'a str, usize)> {
        self.snapshot
    }

    /// Read `payload` as a plain event (see [`Plain`]); `None`: read it as an event object.
    /// `known`: what is known of its text ([`Known`]), if anything. `max_depth` bounds a
    /// nested member as the event's parse would (the event's own level counted).
    pub fn read(payload: &'a [u8], known: Option<Known<'a>>, max_depth: usize) -> Option<Plain<'a>> {
        Self::read_scanned(payload, known, max_depth, None)
    }

    /// [`read`](Self::read), by the layout of the last event of its kind when `payload` is
    /// in it ([`PlainForms`]); otherwise read so, and its layout kept for the next one.
    pub fn read_formed(payload: &'a [u8], known: Option<Known<'a>>, max_depth: usize, forms: &mut PlainForms) -> Option<Plain<'a>> {
        // (no plain event nests less than two levels: `build`)
        if max_depth < 2 {
            return None;
        }
        let known = match known {
            Some(known) => known,
            None => Known { text: simdutf8::basic::from_utf8(payload).ok()?, no_kept_range: false },
        };
        let Some(lead) = PlainForms::lead(payload) else { return Self::read_scanned(payload, Some(known), max_depth, None) };
        // (the layout's bytes start with its kind's name: the first compare checks it)
        if let Some(form) = &forms.forms[PlainForms::slot(lead)] {
            if let Some(read) = form.read(known, max_depth) {
                return read;
            }
        }
        Self::read_scanned(payload, Some(known), max_depth, Some((lead, forms)))
    }

    /// [`read`](Self::read) by the event scanner; with `learn` (the type name its lead
    /// writes, and the forms), the layout of an event read so is kept.
    fn read_scanned(payload: &'a [u8], known: Option<Known<'a>>, max_depth: usize, learn: Option<(&[u8], &mut PlainForms)>) -> Option<Plain<'a>> {
        const MAX: usize = 8;
        let known = match known {
            Some(known) => known,
            None => Known { text: simdutf8::basic::from_utf8(payload).ok()?, no_kept_range: false },
        };
        let json = known.text;
        if let Some(text) = snapshot_to_end(json) {
            return Plain::build_known(EventType::StateSnapshot, &mut [("snapshot", Given::Json(text))], max_depth, known.no_kept_range);
        }
        let mut found: [(&str, Given<'_>); MAX] = std::array::from_fn(|_| ("", Given::Int(0)));
        // Where each value lies in `json`, and its kind (learning only).
        let mut spans = [(0usize, 0usize, Shape::Int); MAX];
        let (mut n, mut kind) = (0, None);
        let each = |m: Member<'a>| {
            if m.name == "type" {
                // (stop at a type of no plain form: the writers put `type` first)
                kind = Some(EventType::parse(m.raw.filter(|_| !m.escaped)?)).filter(|k| plain_schema(*k).is_some());
                kind?;
            }
            let given = m.given()?;
            if learn.is_some() && n < MAX {
                let at = m.raw.unwrap_or(m.text).as_ptr() as usize - json.as_ptr() as usize;
                let shape = match given {
                    Given::Str(_) => Shape::Str,
                    Given::Int(_) => Shape::Int,
                    Given::Json(_) => Shape::Nested,
                };
                spans[n] = (at, at + m.raw.unwrap_or(m.text).len(), shape);
            }
            *found.get_mut(n)? = (m.name, given);
            n += 1;
            Some(())
        };
        scan_flat_as_written(json, each)?;
        let kind = kind?;
        let plain = Plain::build_known(kind, &mut found[..n], max_depth, known.no_kept_range)?;
        if let Some((lead, forms)) = learn {
            if lead == kind.name().as_bytes() {
                forms.learn(kind, json, &found[..n], &spans[..n]);
            }
        }
        Some(plain)
    }

    /// An event of type `kind` with these members (`type` among them or not) in its plain
    /// form, as [`read`](Self::read) reads it from JSON text; `None`: not in that form (a
    /// name given twice included).
    pub fn build(kind: EventType, given: &mut [(&str, Given<'a>)], max_depth: usize) -> Option<Plain<'a>> {
        Self::build_known(kind, given, max_depth, false)
    }

    /// [`build`](Self::build) of members read from a log known to hold no character of
    /// the kept range (`no_kept_range`: not looked for again).
    fn build_known(kind: EventType, given: &mut [(&str, Given<'a>)], max_depth: usize, no_kept_range: bool) -> Option<Plain<'a>> {
        let schema = plain_schema(kind)?;
        if max_depth < 2 {
            return None;
        }
        let mut event = Plain { kind, members: Vec::with_capacity(given.len()), snapshot: None };
        // Each name once (an object with a repeated name is the parser's to read).
        let (mut seen, mut typed) = (0u16, false);
        for (name, value) in given.iter_mut() {
            let name: &str = name;
            if name == "type" {
                if std::mem::replace(&mut typed, true) {
                    return None;
                }
                continue;
            }
            let (m, ..) = plain_member(name)?;
            if seen & 1 << m != 0 {
                return None;
            }
            seen |= 1 << m;
            // (a member the kind does not declare is in no plain form)
            let field = schema.fields[m]?;
            event.put(m, field, std::mem::replace(value, Given::Int(0)), max_depth, no_kept_range)?;
        }
        schema.required.is_some_and(|required| required & !seen == 0).then_some(event)
    }

    /// Member `m` of [`PLAIN_MEMBERS`], declared as `field`, holding `value`: held to the
    /// schema and, when the reducer reads it, kept. `None`: no plain event holds it so.
    /// The one check of a member of [`build`](Self::build) and of a learned layout
    /// ([`PlainForms`]).
    #[inline]
    fn put(&mut self, m: usize, field: &'static super::schema::Field, value: Given<'a>, max_depth: usize, no_kept_range: bool) -> Option<()> {
        let (name, kept) = PLAIN_MEMBERS[m];
        match value {
            Given::Str(s) => {
                // (the characters of the kept range are read by the general parse alone)
                if (!no_kept_range && super::js::holds_kept_range(&s)) || !super::schema::keeps(field, super::schema::Scalar::Str(&s)) {
                    return None;
                }
                if kept {
                    self.members.push((name, Value::String(s.into_owned())));
                }
            }
            Given::Json(text) => {
                // As the event's parse reads it (`parse_event_limited`): the kept range
                // by the general parse alone, the event's own level counted, integers'
                // digits.
                if !no_kept_range && super::js::may_hold_kept_range(text.as_bytes()) {
                    return None;
                }
                // A snapshot stays text: the state reads it (and declines what that
                // parse would not take).
                if self.kind == EventType::StateSnapshot && super::schema::keeps(field, super::schema::Scalar::Nested) {
                    self.snapshot = Some((text, max_depth - 1));
                    return Some(());
                }
                // A member only checked is read by the scanner when it can be (no
                // value built for it), else parsed and walked as the event would be.
                if !kept && super::schema::keeps_text(field, text, max_depth - 1) {
                    return Some(());
                }
                let mut v = nested_text_value(text, max_depth - 1)?;
                if !super::schema::keeps(field, super::schema::Scalar::Value(&mut v)) {
                    return None;
                }
                if kept {
                    self.members.push((name, v));
                }
            }
            Given::Int(i) => {
                if kept || !super::schema::keeps(field, super::schema::Scalar::Int(i)) {
                    return None;
                }
            }
        }
        Some(())
    }
}

/// The layouts of the last plain events read, one per kind: an agent writes each kind of
/// event with the same members in the same order, spaced the same way, event after event
/// (`{"type":"TEXT_MESSAGE_START","messageId":"`, an id, `","role":"`, a role, `"}`). An
/// event whose bytes between its values are the layout's, and whose values are each of
/// the kind the layout's were (a string, an integer, an array or object), holds the same
/// members: its values are found by the scanner's own functions (`string_end`, `int_end`,
/// `nested_end`), so it reads to what the scan reads, without looking at the names again
/// (nor at the order, repetitions and requirements the layout's event passed). Each value
/// is held to the schema as ever ([`Plain::put`]). Anything else is scanned, and its
/// layout learned. Only events that start with their `type` have one.
pub struct PlainForms {
    /// By the name of their kind ([`slot`](Self::slot)).
    forms: [Option<PlainForm>; 32],
}

impl Default for PlainForms {
    fn default() -> Self {
        PlainForms { forms: std::array::from_fn(|_| None) }
    }
}

/// One layout of [`PlainForms`]: the bytes between the values, and each value's kind and
/// member.
struct PlainForm {
    kind: EventType,
    /// The event's bytes without its values (the `type`'s value is part of them).
    bytes: Vec<u8>,
    /// Each value (in order): the bytes before it (`bytes[..]`), its kind, its member (a
    /// number of [`PLAIN_MEMBERS`]) and declared field.
    slots: Vec<Slot>,
    /// The bytes after the last value.
    tail: std::ops::Range<usize>,
}

struct Slot {
    before: std::ops::Range<usize>,
    value: Shape,
    member: usize,
    field: &'static super::schema::Field,
}

/// The kind of a value of a layout: a string (its content between the quotes, which the
/// bytes around it hold), an integer, or an array or object.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Str,
    Int,
    Nested,
}

impl PlainForms {
    /// The type name the start of `payload` writes, as the writers start an event
    /// (`{"type":"NAME"` or `{"type": "NAME"`).
    #[inline]
    fn lead(payload: &[u8]) -> Option<&[u8]> {
        let rest = payload.strip_prefix(b"{\"type\":\"").or_else(|| payload.strip_prefix(b"{\"type\": \""))?;
        let end = rest.iter().take(32).position(|&b| b == b'"')?;
        Some(&rest[..end])
    }

    /// The place of the layout of the kind named `name`: one for each kind with a plain
    /// form (a test checks it), without matching the name against them all.
    #[inline(always)]
    fn slot(name: &[u8]) -> usize {
        (name.len() * 9 + usize::from(name.get(1).copied().unwrap_or(0))) & 31
    }

    /// Keep the layout of an event of type `kind` (`json`) that the scan read to these
    /// members (`found`: their names; their values at `spans`, of those kinds) and
    /// [`Plain::build`] took: it starts with its `type`.
    fn learn(&mut self, kind: EventType, json: &str, found: &[(&str, Given<'_>)], spans: &[(usize, usize, Shape)]) {
        let Some(schema) = plain_schema(kind) else { return };
        let b = json.as_bytes();
        let slot = Self::slot(kind.name().as_bytes());
        let mut form = match self.forms[slot].take() {
            Some(mut form) => {
                form.bytes.clear();
                form.slots.clear();
                form
            }
            None => PlainForm { kind, bytes: Vec::new(), slots: Vec::new(), tail: 0..0 },
        };
        let mut at = 0;
        for (&(name, _), &(start, end, value)) in found.iter().zip(spans) {
            if name == "type" {
                continue;
            }
            let Some(((member, ..), field)) = plain_member(name).and_then(|m| Some((m, schema.fields[m.0]?))) else { return };
            let from = form.bytes.len();
            form.bytes.extend_from_slice(&b[at..start]);
            form.slots.push(Slot { before: from..form.bytes.len(), value, member, field });
            at = end;
        }
        let from = form.bytes.len();
        form.bytes.extend_from_slice(&b[at..]);
        form.tail = from..form.bytes.len();
        self.forms[slot] = Some(form);
    }
}

impl PlainForm {
    /// The event `known` in this layout, read as [`Plain::read`] reads it (`Some(None)`:
    /// no plain event, as that read finds); `None`: not in the layout. `max_depth` at
    /// least 2.
    #[inline]
    fn read<'a>(&self, known: Known<'a>, max_depth: usize) -> Option<Option<Plain<'a>>> {
        let (json, b) = (known.text, known.text.as_bytes());
        let mut event = Plain { kind: self.kind, members: Vec::with_capacity(self.slots.len()), snapshot: None };
        let mut at = 0;
        for slot in &self.slots {
            let before = &self.bytes[slot.before.clone()];
            if b.get(at..at + before.len())? != before {
                return None;
            }
            let start = at + before.len();
            // Where the scan would end the value (`scan_members`), and what it would read.
            let (end, m) = match (slot.value, b.get(start)?) {
                (Shape::Str, _) => {
                    let (end, escaped) = string_end(b, start)?;
                    (end, Member { name: "", text: &json[start - 1..end + 1], raw: Some(&json[start..end]), escaped })
                }
                (Shape::Int, b'-' | b'0'..=b'9') => {
                    let end = int_end(b, start)?;
                    (end, Member { name: "", text: &json[start..end], raw: None, escaped: false })
                }
                (Shape::Nested, b'[' | b'{') => {
                    let end = nested_end(json, start)?;
                    (end, Member { name: "", text: &json[start..end], raw: None, escaped: false })
                }
                _ => return None,
            };
            at = end;
            // A value no plain event holds: the scan reads the bytes up to it as here, and
            // this member the same, so it finds no plain event either.
            if m.given().and_then(|given| event.put(slot.member, slot.field, given, max_depth, known.no_kept_range)).is_none() {
                return Some(None);
            }
        }
        (b.get(at..)? == &self.bytes[self.tail.clone()]).then_some(Some(event))
    }
}

/// The snapshot of a `STATE_SNAPSHOT` written with nothing but its `type` before it (as
/// the writers put them, compact or spaced as `json.dumps` writes it) and an array or an
/// object: its text up to the event's closing brace, not scanned for its end here. The
/// state's one read of it finds that end ([`walk_value`]), and a text that is not one JSON
/// value there (another member after it) is declined by every reader of a snapshot's
/// text, so the event is then read as an object. A large state's text is read once,
/// not scanned and then read (~90 instructions an event of the bench log, callgrind).
fn snapshot_to_end(json: &str) -> Option<&str> {
    let b = json.as_bytes();
    let start = [&b"{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":"[..], b"{\"type\": \"STATE_SNAPSHOT\", \"snapshot\": "]
        .into_iter()
        .find(|lead| b.starts_with(lead))?
        .len();
    // (both ends ASCII: char boundaries)
    (matches!(b.get(start), Some(b'{' | b'[')) && b.len() > start + 1 && b.last() == Some(&b'}')).then(|| &json[start..json.len() - 1])
}

/// A nested member's JSON text (a snapshot, the usage) read as the event's parse reads it
/// (see [`Plain::build`]), nesting at most `max_depth` levels; `None`: that parse decides
/// (an error).
pub(crate) fn nested_text_value(text: &str, max_depth: usize) -> Option<Value> {
    let v = crate::limits::parse_value_str(text, max_depth).ok()?;
    if text.len() > crate::patch::MAX_INT_DIGITS {
        super::js::check_int_digits(&v).ok()?;
    }
    Some(v)
}

/// A member of a [`Plain`] event as given: a string, an integer, or a nested value's JSON
/// text (an array or an object).
#[derive(Debug)]
pub enum Given<'a> {
    Str(std::borrow::Cow<'a, str>),
    Int(i64),
    Json(&'a str),
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
    if payload.len() > crate::patch::MAX_INT_DIGITS {
        super::js::check_int_digits(&v).map_err(|e| StreamError::new(Stage::Decode, e))?;
    }
    Ok(v)
}

/// The `type` of an event as written (`""` when missing or not a string).
pub fn type_str(event: &Value) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("")
}

/// What a reader knows of an event's JSON text before it reads it, when the text is a
/// slice of a log checked whole: the text itself (the log is all UTF-8), and whether the
/// log holds no character of the kept range (`js::may_hold_kept_range` of the whole log
/// false: then no string of the event does, escaped or not).
#[derive(Debug, Clone, Copy)]
pub struct Known<'a> {
    pub text: &'a str,
    pub no_kept_range: bool,
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
                    let Some((slot, tool)) = delta_slot(&key.0) else { return Err(A::Error::custom("another member")) };
                    tool_id |= tool;
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

/// Where a member of a plain delta event goes: 0 `type`, 1 the id (`true`: named
/// `toolCallId`), 2 `delta`; `None`: a member no plain delta event has. The one table of
/// the scan, the parser's visitor and [`Delta::build`] ([`DeltaMembers`]).
pub fn delta_slot(name: &str) -> Option<(usize, bool)> {
    Some(match name {
        "type" => (0, false),
        "messageId" => (1, false),
        "toolCallId" => (1, true),
        "delta" => (2, false),
        _ => return None,
    })
}

/// The members of a plain delta event other than `type`, gathered one by one in their
/// slots ([`delta_slot`]): [`Delta::build`]'s reading, for a caller that knows each
/// member's slot beforehand (a binding's class of event).
#[derive(Default)]
pub struct DeltaMembers<'a> {
    slots: [Option<&'a str>; 3],
    tool_id: bool,
}

impl<'a> DeltaMembers<'a> {
    /// Put member `v` in `slot`; false: `type`, or a slot given twice.
    #[inline]
    pub fn put(&mut self, (slot, tool): (usize, bool), v: &'a str) -> bool {
        self.tool_id |= tool;
        slot != 0 && self.slots[slot].replace(v).is_none()
    }

    /// The delta event of type `kind` these members make (see [`Delta::build`]); `None`:
    /// not in that form. `within_bmp`: the strings are known to hold no character past
    /// U+FFFF (so none of the kept range, which is not looked for then).
    #[inline]
    pub fn finish(self, kind: EventType, within_bmp: bool) -> Option<Delta<'a>> {
        let [_, id, Some(delta)] = self.slots else { return None };
        if !plain_members(kind, id.is_some(), self.tool_id) {
            return None;
        }
        let d = Delta { kind, id: id.map(std::borrow::Cow::Borrowed), delta: std::borrow::Cow::Borrowed(delta) };
        if within_bmp { Some(d) } else { d.plain() }
    }
}

impl<'a> Delta<'a> {
    /// A delta event of type `kind` with these string members (`type` left out), as
    /// [`parse`](Self::parse) reads one from JSON text; `None`: not in that form.
    pub fn build(kind: EventType, given: &[(&str, &'a str)]) -> Option<Delta<'a>> {
        let mut m = DeltaMembers::default();
        for &(name, v) in given {
            if !m.put(delta_slot(name)?, v) {
                return None;
            }
        }
        m.finish(kind, false)
    }

    /// Read a payload as a plain delta event, or `None` (then it takes the general path).
    /// `known`: what is known of its text ([`Known`]), if anything.
    pub fn parse(payload: &'a [u8], known: Option<Known<'a>>) -> Option<Delta<'a>> {
        Self::parse_raw(payload, known).map(|(d, _)| d)
    }

    /// [`parse`](Self::parse), and the delta's text as written (between its
    /// quotes) when the scan read it.
    fn parse_raw(payload: &'a [u8], known: Option<Known<'a>>) -> Option<(Delta<'a>, Option<&'a str>)> {
        let (d, raw) = match Self::scan(payload, known.map(|k| k.text)) {
            Some((d, raw)) => (d, Some(raw)),
            None => (serde_json::from_slice(payload).ok()?, None),
        };
        let d = if known.is_some_and(|k| k.no_kept_range) { d } else { d.plain()? };
        Some((d, raw))
    }

    /// The event, unless a member holds characters of the kept range (those are read by
    /// the general parse alone).
    fn plain(self) -> Option<Delta<'a>> {
        let kept = super::js::holds_kept_range(&self.delta) || self.id.as_deref().is_some_and(super::js::holds_kept_range);
        (!kept).then_some(self)
    }

    /// A delta event in the compact form ([`scan_flat`], escapes included), members in any order, read
    /// without the JSON parser: a third of a replay's time went to serde reading such
    /// events member by member. `None`: not a plain delta event, or not in that form
    /// (left to the parser, which reads the same events to the same values).
    /// The delta's text as written comes with it.
    fn scan(payload: &'a [u8], known: Option<&'a str>) -> Option<(Delta<'a>, &'a str)> {
        // One check of the whole payload (SIMD: std's was ~9% of a replay), unless it is
        // known; the scan then slices the `str`.
        let json = match known {
            Some(json) => json,
            None => simdutf8::basic::from_utf8(payload).ok()?,
        };
        let mut slots: [Option<std::borrow::Cow<'a, str>>; 3] = [None, None, None];
        let (mut tool_id, mut raw) = (false, "");
        scan_flat_as_written(json, |m| {
            let (slot, tool) = delta_slot(m.name)?;
            tool_id |= tool;
            if slot == 2 {
                raw = m.raw?;
            }
            // Each a string, once (the parser's `duplicate member`).
            slots[slot].replace(m.string()?).is_none().then_some(())
        })?;
        let [Some(ty), id, Some(delta)] = slots else { return None };
        let kind = EventType::parse(&ty);
        plain_members(kind, id.is_some(), tool_id).then_some((Delta { kind, id, delta }, raw))
    }
}

/// The leading bytes of the last plain delta events read whose `delta` is their last
/// member (`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"`), one for each
/// kind (the last two kinds: a run's text and its tool calls' arguments alternate): a
/// token stream repeats them event after event, so an event that starts with the same
/// bytes is the same kind for the same id, and only its delta is left to read (its end,
/// its UTF-8, its escapes). An event that differs from them only by its id (a string
/// without escapes) is that kind for that id (the next message's deltas): the form then
/// takes that id. Anything else is read by [`Delta::parse`], which learns the next form.
#[derive(Default)]
pub struct DeltaForm {
    /// The last form read first.
    forms: [Form; 2],
    /// Where the last payload [`end`](Self::end) measured was found when not in the last
    /// form for its id: the form, and where its id ends ([`Other`]).
    found: std::cell::Cell<Option<Other>>,
}

/// A payload found in the other form, or for another id: the form (0: the last one) and,
/// for another id, where it ends (it starts where the form's does).
#[derive(Debug, Clone, Copy)]
struct Other {
    form: usize,
    id_end: Option<usize>,
}

/// One form of [`DeltaForm`].
#[derive(Default)]
struct Form {
    lead: Vec<u8>,
    kind: Option<EventType>,
    /// The id's text within `lead` (written without escapes).
    id: Option<std::ops::Range<usize>>,
}

impl Form {
    /// The end of a payload whose delta's text starts at `start`: the delta's closing
    /// quote and the event's brace.
    #[inline(always)]
    fn delta_end(rest: &[u8], start: usize) -> Option<(usize, bool)> {
        let (end, escaped) = string_end(rest, start)?;
        (rest.get(end + 1) == Some(&b'}')).then_some((end + 2, escaped))
    }

    /// Whether `rest` may be in this form, by the bytes of the type name a payload in it
    /// starts with (the event types differ there: one compare).
    #[inline(always)]
    fn may_start(&self, rest: &[u8]) -> bool {
        match (rest.get(9..25), self.lead.get(9..25)) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
    }

    /// [`DeltaForm::end`] in this form (`form`: its place) for another id than its own.
    fn end_for_another_id(&self, rest: &[u8], form: usize) -> Option<(usize, bool, Other)> {
        let id = self.id.as_ref()?;
        if !rest.starts_with(&self.lead[..id.start]) {
            return None;
        }
        let (id_end, escaped) = string_end(rest, id.start)?;
        let tail = &self.lead[id.end..];
        if escaped || !rest.get(id_end..)?.starts_with(tail) {
            return None;
        }
        let (len, escaped) = Self::delta_end(rest, id_end + tail.len())?;
        Some((len, escaped, Other { form, id_end: Some(id_end) }))
    }
}

impl DeltaForm {
    /// [`Delta::parse`], its form kept for the next event ([`repeat`](Self::repeat)).
    pub fn parse<'a>(&mut self, payload: &'a [u8], known: Option<Known<'a>>) -> Option<Delta<'a>> {
        let (d, raw) = Delta::parse_raw(payload, known)?;
        self.learn(payload, &d, raw);
        Some(d)
    }

    /// `payload` read as [`Delta::parse`] reads it, when it starts as a delta
    /// [`parse`](Self::parse) read (for its id or another); `None`: not in such a form
    /// (parse it). `known`: what is known of its text ([`Known`]), if anything.
    pub fn repeat<'a>(&mut self, payload: &'a [u8], known: Option<Known<'a>>) -> Option<Delta<'a>> {
        let (n, escaped) = self.end(payload)?;
        if n != payload.len() {
            self.found.set(None);
            return None;
        }
        self.repeat_ended(payload, known, escaped)
    }

    /// Where a payload in one of the forms ends in `rest` (its bytes from the start on,
    /// more may follow: a log's framer asks before it looks for the line's end), and
    /// whether its delta holds escapes; `None`: not in such a form. No line break comes
    /// before that end (the scans of the id and the delta stop at control characters).
    /// What it found is read by [`repeat_ended`](Self::repeat_ended), called next.
    #[inline]
    pub fn end(&self, rest: &[u8]) -> Option<(usize, bool)> {
        let last = &self.forms[0];
        last.kind?;
        self.found.set(None);
        if rest.starts_with(&last.lead) {
            return Form::delta_end(rest, last.lead.len());
        }
        let (n, escaped, other) = self.end_in_another_form(rest)?;
        self.found.set(Some(other));
        Some((n, escaped))
    }

    /// Whether `rest` starts in the last form: its kind, where its id is (written without
    /// escapes) and where its delta's text starts ([`end`](Self::end)'s first look, for a
    /// reader that reads the delta itself as it finds its end). Nothing is kept for
    /// [`repeat_ended`](Self::repeat_ended).
    #[inline(always)]
    pub fn in_last_form(&self, rest: &[u8]) -> Option<(EventType, Option<std::ops::Range<usize>>, usize)> {
        let last = &self.forms[0];
        let kind = last.kind?;
        if !rest.starts_with(&last.lead) {
            return None;
        }
        self.found.set(None);
        Some((kind, last.id.clone(), last.lead.len()))
    }

    /// [`end`](Self::end) past the last form as it is: for another id, or in the other form.
    #[inline(never)]
    fn end_in_another_form(&self, rest: &[u8]) -> Option<(usize, bool, Other)> {
        let [last, other] = &self.forms;
        if last.may_start(rest) {
            if let Some(found) = last.end_for_another_id(rest, 0) {
                return Some(found);
            }
        }
        if other.kind.is_none() || !other.may_start(rest) {
            return None;
        }
        if rest.starts_with(&other.lead) {
            let (n, escaped) = Form::delta_end(rest, other.lead.len())?;
            return Some((n, escaped, Other { form: 1, id_end: None }));
        }
        other.end_for_another_id(rest, 1)
    }

    /// [`repeat`](Self::repeat) of a payload [`end`](Self::end) measured whole (`escaped`
    /// as it said), right after it. `known`: what is known of its text ([`Known`]), if anything.
    #[inline(always)]
    pub fn repeat_ended<'a>(&mut self, payload: &'a [u8], known: Option<Known<'a>>, escaped: bool) -> Option<Delta<'a>> {
        if let Some(other) = self.found.take() {
            return self.repeat_other(payload, known, escaped, other);
        }
        self.repeat_ended_raw(payload, known, escaped)?.decode()
    }

    /// [`repeat_ended`](Self::repeat_ended) of a payload [`end`](Self::end) found in the
    /// last form for its id, its delta left as written ([`RawDelta`]); `None` for any
    /// other (nothing taken: [`repeat_ended`](Self::repeat_ended) reads it).
    #[inline(always)]
    pub fn repeat_ended_raw<'a>(&self, payload: &'a [u8], known: Option<Known<'a>>, escaped: bool) -> Option<RawDelta<'a>> {
        if self.found.get().is_some() {
            return None;
        }
        let last = &self.forms[0];
        let kind = last.kind?;
        let start = last.lead.len();
        let end = payload.len().checked_sub(2)?;
        debug_assert!(payload.starts_with(&last.lead) && payload.ends_with(b"\"}") && end >= start);
        // One UTF-8 check from the id on (the bytes between are ASCII punctuation), or
        // none when the payload's text is known.
        let from = last.id.as_ref().map_or(start, |r| r.start);
        let text = match known {
            Some(known) => known.text.get(from..end)?,
            None => simdutf8::basic::from_utf8(&payload[from..end]).ok()?,
        };
        let raw = &text[start - from..];
        let id = last.id.as_ref().map(|r| &text[..r.len()]);
        Some(RawDelta { kind, id, raw, escaped, no_kept_range: known.is_some_and(|k| k.no_kept_range) })
    }

    /// [`repeat_ended`](Self::repeat_ended) of a payload found in the other
    /// form or for another id: read, it makes that form the last one, for that id.
    #[inline(never)]
    fn repeat_other<'a>(&mut self, payload: &'a [u8], known: Option<Known<'a>>, escaped: bool, other: Other) -> Option<Delta<'a>> {
        let form = &self.forms[other.form];
        let kind = form.kind?;
        // (for another id: its own, then the form's bytes after its id)
        let (id, start) = match (&form.id, other.id_end) {
            (Some(r), Some(id_end)) => (Some(r.start..id_end), id_end + form.lead.len() - r.end),
            (id, _) => (id.clone(), form.lead.len()),
        };
        let end = payload.len().checked_sub(2)?;
        let from = id.as_ref().map_or(start, |r| r.start);
        let text = match known {
            Some(known) => known.text.get(from..end)?,
            None => simdutf8::basic::from_utf8(payload.get(from..end)?).ok()?,
        };
        let raw = text.get(start.checked_sub(from)?..)?;
        let delta = Member { name: "delta", text: raw, raw: Some(raw), escaped }.string()?;
        let id_text = id.as_ref().map(|r| &text[..r.len()]);
        // (the id of the form as it is was looked at when it was learned)
        if !known.is_some_and(|k| k.no_kept_range)
            && (super::js::holds_kept_range(&delta) || (other.id_end.is_some() && id_text.is_some_and(super::js::holds_kept_range)))
        {
            return None;
        }
        self.forms.swap(0, other.form);
        if other.id_end.is_some() {
            let last = &mut self.forms[0];
            last.lead.clear();
            last.lead.extend_from_slice(&payload[..start]);
            last.id = id;
        }
        Some(Delta { kind, id: id_text.map(std::borrow::Cow::Borrowed), delta })
    }

    /// Keep the form of `d` (read from `payload`; `raw`: its delta as written, when the
    /// scan read it) when its delta is its last member and its id is written without
    /// escapes: as the last form, in place of the last one when that is of the same kind
    /// (else the last one becomes the other). Otherwise the forms stay as they were.
    fn learn(&mut self, payload: &[u8], d: &Delta<'_>, raw: Option<&str>) {
        let base = payload.as_ptr() as usize;
        let place = |s: &str| -> Option<std::ops::Range<usize>> {
            let start = (s.as_ptr() as usize).checked_sub(base)?;
            (start + s.len() <= payload.len() && payload.get(start..start + s.len()) == Some(s.as_bytes())).then(|| start..start + s.len())
        };
        // (the delta as written: its escapes are read again event by event)
        let delta = match (&d.delta, raw) {
            (_, Some(raw)) => raw,
            (std::borrow::Cow::Borrowed(delta), None) => *delta,
            _ => return,
        };
        let Some(at) = place(delta) else { return };
        if payload.get(at.end..) != Some(b"\"}") || at.start == 0 || payload[at.start - 1] != b'"' {
            return;
        }
        let id = match &d.id {
            None => None,
            // (written between quotes, before the delta)
            Some(std::borrow::Cow::Borrowed(id)) => match place(id) {
                Some(r) if r.end < at.start && r.start > 0 && payload[r.start - 1] == b'"' && payload[r.end] == b'"' => Some(r),
                _ => return,
            },
            Some(std::borrow::Cow::Owned(_)) => return,
        };
        if self.forms[0].kind != Some(d.kind) {
            self.forms.swap(0, 1);
        }
        let last = &mut self.forms[0];
        last.lead.clear();
        last.lead.extend_from_slice(&payload[..at.start]);
        last.kind = Some(d.kind);
        last.id = id;
    }
}

/// A plain delta event read in the last form of a [`DeltaForm`]
/// ([`repeat_ended_raw`](DeltaForm::repeat_ended_raw)), its delta as written: a reader
/// that appends it to a string of its own decodes the escapes straight into that string
/// ([`append_to`](Self::append_to)), with no string between.
#[derive(Debug, Clone, Copy)]
pub struct RawDelta<'a> {
    pub kind: EventType,
    pub id: Option<&'a str>,
    /// The delta's text between its quotes, and whether it holds escapes.
    raw: &'a str,
    escaped: bool,
    /// Whether its text is known to hold no character of the kept range (not looked for).
    no_kept_range: bool,
}

impl<'a> RawDelta<'a> {
    /// The event, as [`DeltaForm::repeat_ended`] reads it; `None`: not a plain delta event
    /// (its escapes are not read so, or it holds a character of the kept range).
    #[inline(always)]
    pub fn decode(self) -> Option<Delta<'a>> {
        let delta = Member { name: "delta", text: self.raw, raw: Some(self.raw), escaped: self.escaped }.string()?;
        if !self.no_kept_range && super::js::holds_kept_range(&delta) {
            return None;
        }
        Some(Delta { kind: self.kind, id: self.id.map(std::borrow::Cow::Borrowed), delta })
    }

    /// The delta appended to `s` as `js::append` appends [`decode`](Self::decode)'s delta,
    /// the escapes decoded in place; `false` (and `s` as it was) where `decode` is `None`.
    #[inline]
    pub fn append_to(&self, s: &mut String) -> bool {
        if !self.escaped {
            if !self.no_kept_range && super::js::holds_kept_range(self.raw) {
                return false;
            }
            super::js::append(s, self.raw);
            return true;
        }
        let at = s.len();
        if unescape_into(self.raw, s).is_none() || (!self.no_kept_range && super::js::holds_kept_range(&s[at..])) {
            s.truncate(at);
            return false;
        }
        // (a delta that starts with 0xF4 may join the string's last character: `js::append`
        // decides that, as it does for every other delta)
        if s.as_bytes().get(at) == Some(&0xF4) {
            let added = s.split_off(at);
            super::js::append(s, &added);
        }
        true
    }
}

/// Whether a delta event of `kind` may have these members: an id (`explicit`), named
/// `toolCallId` (`tool_id`) or `messageId`.
/// Whether events of `kind` have a plain delta form ([`Delta`]): with some id member, by
/// the one table of the form's members.
pub fn has_delta_form(kind: EventType) -> bool {
    plain_members(kind, true, false) || plain_members(kind, true, true)
}

fn plain_members(kind: EventType, explicit: bool, tool_id: bool) -> bool {
    match kind {
        EventType::TextMessageContent | EventType::ReasoningMessageContent => explicit && !tool_id,
        EventType::ToolCallArgs => explicit && tool_id,
        EventType::TextMessageChunk | EventType::ReasoningMessageChunk => !tool_id,
        EventType::ToolCallChunk => tool_id || !explicit,
        _ => false,
    }
}

/// One member of an event in the compact form (see [`scan_flat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member<'a> {
    pub name: &'a str,
    /// The value's JSON text (a string with its quotes).
    pub text: &'a str,
    /// When the value is a string: its content as written, between the quotes.
    pub raw: Option<&'a str>,
    /// Whether `raw` holds escapes (checked valid by the scan).
    pub escaped: bool,
}

impl<'a> Member<'a> {
    /// The value, when it is a string: borrowed when it has no escape, otherwise read by
    /// serde_json from its text (only when asked: most members a caller skips; the scan
    /// took only escapes serde_json reads).
    ///
    /// Inlined whole (the unescaping is not): a `Cow` handed back from a call is written
    /// and read back through the stack, a store-forwarding stall that was ~10% of
    /// `to_arrow`'s scan.
    #[inline(always)]
    pub fn string(&self) -> Option<std::borrow::Cow<'a, str>> {
        let raw = self.raw?;
        if self.escaped {
            self.unescaped()
        } else {
            Some(std::borrow::Cow::Borrowed(raw))
        }
    }

    /// The value as a plain event's reader takes it ([`Given`]): a string, an array or
    /// object as its text, an integer; `None`: none of these (a plain event has none).
    #[inline(always)]
    fn given(&self) -> Option<Given<'a>> {
        Some(match (self.raw, self.text.as_bytes().first()) {
            (Some(_), _) => Given::Str(self.string()?),
            (None, Some(b'[' | b'{')) => Given::Json(self.text),
            (None, _) => Given::Int(self.text.parse().ok()?),
        })
    }

    /// The escapes decoded (serde_json's reading of them; `None` where it would fail).
    /// Not through serde_json itself: its `from_str::<String>` cost ~850 instructions
    /// for a short string (callgrind), a few per cent of `to_arrow` on logs of tool-call
    /// argument deltas, which are JSON text in a string.
    #[inline(never)]
    fn unescaped(&self) -> Option<std::borrow::Cow<'a, str>> {
        let raw = self.raw?;
        let mut out = String::with_capacity(raw.len());
        unescape_into(raw, &mut out)?;
        Some(std::borrow::Cow::Owned(out))
    }
}

/// The content of a string as written between its quotes (`raw`), its escapes decoded
/// as [`Member::string`] decodes them, appended to `out`; `None` (with `out` partly
/// written) where serde_json would not read it. Public for readers that find a value's
/// end as the scan does ([`string_end`]) and want its text in a buffer of their own
/// (`agui_arrow::fields`' templates: no allocation a value).
#[inline(never)]
pub fn unescape_into(raw: &str, out: &mut String) -> Option<()> {
    let b = raw.as_bytes();
    let mut i = 0;
    // The next backslash eight bytes at a time (a `memchr` call was ~40 instructions an
    // escape of the short values most are); quotes and control bytes are copied as they
    // are (the caller's scan refused them).
    while let Some(at) = backslash(b, i) {
        // Before the backslash: ASCII next to it, a char boundary.
        crate::copy::push_short(out, &raw[i..at]);
        let (c, len) = escape(b, at)?;
        out.push(c);
        i = at + len;
    }
    out.push_str(&raw[i..]);
    Some(())
}

/// The next backslash in `b` from `start` on, eight bytes at a time ([`stop`]'s search
/// for it alone).
#[inline]
fn backslash(b: &[u8], start: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    let mut i = start;
    while let Some(chunk) = b.get(i..i + 8) {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ (ONES * b'\\' as u64);
        // (the high bit of each zero byte, maybe of bytes above the first: the lowest is exact)
        let found = x.wrapping_sub(ONES) & !x & HIGH;
        if found != 0 {
            return Some(i + found.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    b.get(i..)?.iter().position(|&c| c == b'\\').map(|n| i + n)
}

/// The char the escape at `at` (a backslash) stands for and its length, as serde_json
/// reads it when it decodes a string; `None` where it would not.
#[inline]
fn escape(b: &[u8], at: usize) -> Option<(char, usize)> {
    Some(match b.get(at + 1)? {
        b'"' => ('"', 2),
        b'\\' => ('\\', 2),
        b'/' => ('/', 2),
        b'b' => ('\u{8}', 2),
        b'f' => ('\u{c}', 2),
        b'n' => ('\n', 2),
        b'r' => ('\r', 2),
        b't' => ('\t', 2),
        b'u' => match hex4(b, at + 2)? {
            hi @ 0xD800..=0xDBFF => {
                // A high surrogate counts only with a low one escaped right after it.
                if b.get(at + 6..at + 8) != Some(b"\\u") {
                    return None;
                }
                let lo = hex4(b, at + 8)?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return None;
                }
                (char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?, 12)
            }
            // A lone low surrogate is no char: `None`.
            cp => (char::from_u32(cp)?, 6),
        },
        _ => return None,
    })
}

/// [`string_end`] and [`unescape_into`] in one pass: the content of the string starting
/// at `start` (after its opening quote) decoded into `out`, and the position of its
/// closing quote; `None` (with `out` partly written) where `string_end` refuses it (a
/// control byte, a bad escape, no closing quote). For readers that decode a value as
/// they find its end (`agui_arrow::fields`' templates: the search and the decoding were
/// two passes, ~145 and ~320 instructions a short escaped value, callgrind).
#[inline(never)]
pub fn unescape_end(json: &str, start: usize, out: &mut String) -> Option<usize> {
    let b = json.as_bytes();
    let mut i = start;
    loop {
        let at = stop(b, i)?;
        // (Next to an ASCII byte: a char boundary.)
        // (Most runs between escapes are a few bytes.)
        crate::copy::push_short(out, &json[i..at]);
        match b[at] {
            b'"' => return Some(at),
            b'\\' => {
                let (c, len) = escape(b, at)?;
                out.push(c);
                i = at + len;
            }
            _ => return None,
        }
    }
}

/// The compact form writers emit for most events of a log (token deltas, starts and
/// ends): one JSON object, no whitespace, plain member names (no escape), string values
/// with or without escapes (no control character, no lone surrogate escape), every
/// other value an integer, as in `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hi"}`
/// or `{"type":"RUN_STARTED","timestamp":1700000000000,"threadId":"t","runId":"r"}`,
/// or an array or object (a snapshot, a patch, `usage`), which is not read but skipped
/// as serde_json skips a value it ignores (`IgnoredAny`: its text checked as JSON, its
/// strings not decoded) and handed out as its text (`raw` is `None`).
/// Read without the JSON parser: `member` gets the members in order, and may decline
/// the event (`None`). `None` when the text is in any other form (whitespace between
/// members, fractions, a text after the object ...) or was declined: the caller then
/// uses the parser, which accepts everything this accepts, to the same values
/// (duplicate names are the caller's to refuse).
pub fn scan_flat<'a>(json: &'a str, member: impl FnMut(Member<'a>) -> Option<()>) -> Option<()> {
    scan_flat_in::<false>(json, member)
}

/// [`scan_flat`] of an event that may also hold whitespace between its tokens (inside the
/// object: Python's `json.dumps` writes `", "` and `": "`), to the same members.
pub fn scan_flat_spaced<'a>(json: &'a str, member: impl FnMut(Member<'a>) -> Option<()>) -> Option<()> {
    scan_flat_in::<true>(json, member)
}

/// [`scan_flat`], or [`scan_flat_spaced`] for an event that starts as Python's `json.dumps`
/// writes one (`{"type": `): the compact form pays nothing for the other. The one choice
/// of scanner for every reader of events as written (the replay, `agui_arrow::fields`).
#[inline(always)]
pub fn scan_flat_as_written<'a>(json: &'a str, member: impl FnMut(Member<'a>) -> Option<()>) -> Option<()> {
    if json.as_bytes().get(8) == Some(&b' ') {
        scan_flat_spaced(json, member)
    } else {
        scan_flat(json, member)
    }
}

/// The JSON whitespace at `i` skipped.
#[inline(always)]
pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

#[inline(always)]
fn scan_flat_in<'a, const WS: bool>(json: &'a str, member: impl FnMut(Member<'a>) -> Option<()>) -> Option<()> {
    let b = json.as_bytes();
    if b.first() != Some(&b'{') {
        return None;
    }
    let i = if WS { skip_ws(b, 1) } else { 1 };
    if b.get(i) == Some(&b'}') {
        return (b.len() == i + 1).then_some(());
    }
    scan_members_in::<WS>(json, i, member)
}

/// [`scan_flat`] from byte `start` on, where a member of the compact form begins (its
/// name's quote: after the `{` or after a `,`). A caller that knows the bytes before
/// `start` to be a leading part of that form which it has already read (e.g. the same
/// `{"type":"NAME",` as an earlier event's) reads the rest of the event here, as
/// `scan_flat` would have.
pub fn scan_members<'a>(json: &'a str, start: usize, member: impl FnMut(Member<'a>) -> Option<()>) -> Option<()> {
    scan_members_in::<false>(json, start, member)
}

/// [`scan_members`], with whitespace between the tokens (`WS`) or without.
#[inline(always)]
fn scan_members_in<'a, const WS: bool>(json: &'a str, start: usize, mut member: impl FnMut(Member<'a>) -> Option<()>) -> Option<()> {
    let b = json.as_bytes();
    let mut i = start;
    loop {
        // Every slice below starts and ends next to an ASCII byte: char boundaries.
        if WS {
            i = skip_ws(b, i);
        }
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let name_end = plain_end(b, i + 1)?;
        let colon = if WS { skip_ws(b, name_end + 1) } else { name_end + 1 };
        if b.get(colon) != Some(&b':') {
            return None;
        }
        let v = if WS { skip_ws(b, colon + 1) } else { colon + 1 };
        let (end, raw, escaped) = match b.get(v)? {
            b'"' => {
                let (e, escaped) = string_end(b, v + 1)?;
                (e + 1, Some(&json[v + 1..e]), escaped)
            }
            b'-' | b'0'..=b'9' => (int_end(b, v)?, None, false),
            b'[' | b'{' => (nested_end(json, v)?, None, false),
            _ => return None,
        };
        member(Member { name: &json[i + 1..name_end], text: &json[v..end], raw, escaped })?;
        let after = if WS { skip_ws(b, end) } else { end };
        match b.get(after)? {
            b',' => i = after + 1,
            b'}' if after + 1 == b.len() => return Some(()),
            _ => return None,
        }
    }
}

/// The position of the quote closing a string whose content starts at `start`, and
/// whether the content holds escapes; `None` for a control character, an unknown
/// escape, or a `\u` escape of a surrogate that is not a high one followed by a low
/// one (serde_json refuses lone surrogates when it reads a string: left to the parser).
/// Public for readers that match a learned event form byte for byte (`agui_arrow::
/// fields`' templates) and must find a value's end as the scan does.
#[inline]
pub fn string_end(b: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut i = stop(b, start)?;
    let mut escaped = false;
    loop {
        match b[i] {
            b'"' => return Some((i, escaped)),
            b'\\' => {
                escaped = true;
                i += match b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                    b'u' => match hex4(b, i + 2)? {
                        0xD800..=0xDBFF if b.get(i + 6..i + 8) == Some(b"\\u") && matches!(hex4(b, i + 8)?, 0xDC00..=0xDFFF) => 12,
                        0xD800..=0xDFFF => return None,
                        _ => 6,
                    },
                    _ => return None,
                };
                i = stop(b, i)?;
            }
            _ => return None,
        }
    }
}

/// The end of the array or object starting at `start`, where serde_json's skip of a
/// value it ignores ends it (so checked as it would check it there; that skip is a loop
/// over its own stack, with no depth limit: callers bound nesting before they scan, as
/// `agui_arrow::fields` does with `limits::exceeds_depth`), or `None` when that fails:
/// the common values by [`skip_nested`]'s byte loop (~550 instructions a snapshot or
/// patch of the bench log, callgrind), anything it declines by serde_json's skip itself
/// (~1,140). Out of line: most events have no nested value. Public for readers that match a learned event
/// form (`agui_arrow::fields`' templates) and must skip a nested value as the scan does.
#[inline(never)]
pub fn nested_end(json: &str, start: usize) -> Option<usize> {
    skip_nested(json.as_bytes(), start).or_else(|| nested_end_serde(json, start))
}

/// serde_json's skip itself, for what [`skip_nested`] leaves to it.
#[cold]
fn nested_end_serde(json: &str, start: usize) -> Option<usize> {
    use serde::de::IgnoredAny;
    let mut values = serde_json::Deserializer::from_str(json.get(start..)?).into_iter::<IgnoredAny>();
    values.next()?.ok()?;
    Some(start + values.byte_offset())
}

/// The end of the array or object at `start` when it holds only what the nested values
/// of a log mostly hold (strings without escapes, numbers, `true`, `false`, `null`,
/// whitespace, at most 64 levels): where serde_json's skip ends it (its grammar: no
/// trailing comma, no leading zero, keys are strings). `None` for anything else (an
/// escape, a control byte, an error, deeper nesting): serde_json decides those. Its skip was ~1,100 instructions for a 50-byte patch or snapshot
/// (callgrind), ~100 a string; this is the scan's own string search (`plain_end`).
fn skip_nested(b: &[u8], start: usize) -> Option<usize> {
    // An object's key and its colon from `i` on: where its value may start. (A function
    // inlined at both calls: as a closure it was a call, ~3.0M of the bench log's 154.6M.)
    #[inline(always)]
    fn key(b: &[u8], i: usize) -> Option<usize> {
        let i = skip_ws(b, i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let i = skip_ws(b, plain_end(b, i + 1)? + 1);
        (b.get(i) == Some(&b':')).then_some(i + 1)
    }
    if !matches!(b.get(start), Some(b'[' | b'{')) {
        return None;
    }
    // The levels open, one bit each (set: an object), the innermost lowest.
    let (mut objects, mut depth) = (0u64, 0u32);
    let mut i = start;
    loop {
        // A value.
        i = skip_ws(b, i);
        match *b.get(i)? {
            open @ (b'[' | b'{') => {
                let close = if open == b'{' { b'}' } else { b']' };
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&close) {
                    // Empty: a value whose last byte is `i`.
                    if depth == 0 {
                        return Some(i + 1);
                    }
                } else {
                    if depth == 64 {
                        return None;
                    }
                    (objects, depth) = (objects << 1 | u64::from(open == b'{'), depth + 1);
                    if open == b'{' {
                        i = key(b, i)?;
                    }
                    continue;
                }
            }
            b'"' => i = plain_end(b, i + 1)?,
            b'-' | b'0'..=b'9' => i = number_end(b, i)? - 1,
            b't' if b.get(i..i + 4) == Some(b"true") => i += 3,
            b'f' if b.get(i..i + 5) == Some(b"false") => i += 4,
            b'n' if b.get(i..i + 4) == Some(b"null") => i += 3,
            _ => return None,
        }
        // `i`: the value's last byte. Then a comma and the next value, or closes.
        loop {
            i = skip_ws(b, i + 1);
            match *b.get(i)? {
                b',' => {
                    i = if objects & 1 != 0 { key(b, i + 1)? } else { i + 1 };
                    break;
                }
                b']' if objects & 1 == 0 => {}
                b'}' if objects & 1 != 0 => {}
                _ => return None,
            }
            (objects, depth) = (objects >> 1, depth - 1);
            if depth == 0 {
                return Some(i + 1);
            }
        }
    }
}

/// JSON text holding only what [`skip_nested`]'s loop reads itself (strings without
/// escapes, numbers, `true`, `false`, `null`, whitespace, at most 64 levels and at most
/// `max_depth`), walked into a sink as [`crate::sink::json_text`] walks it (each number's
/// text through the same `sink::number`; a repeated key given again, as there); `None`
/// for anything else, serde_json's number token as a key included. The sink then holds
/// part of a value: the caller starts again with a general walk. A byte loop over its own
/// stack of levels: jiter's parse of the bench log's 2,000-item state snapshot was about
/// half of building its tree (callgrind).
pub fn walk_nested<'a, S: crate::sink::Sink<'a> + ?Sized>(json: &str, max_depth: usize, s: &mut S) -> Option<()> {
    (walk_value(json, max_depth, s)? == json.len()).then_some(())
}

/// [`walk_nested`] of the value at the start of `json` (after any whitespace), to where
/// it ends: the position after it and the whitespace after it. What follows is the
/// caller's (a position before the end: one whole JSON value and more text, which no
/// parser reads as one value). `None` as for `walk_nested`.
pub fn walk_value<'a, S: crate::sink::Sink<'a> + ?Sized>(json: &str, max_depth: usize, s: &mut S) -> Option<usize> {
    // An object's key and its colon from `i` on: the key to the sink, where its value may
    // start.
    #[inline(always)]
    fn key<'a, S: crate::sink::Sink<'a> + ?Sized>(json: &str, b: &[u8], i: usize, s: &mut S) -> Option<usize> {
        let i = skip_ws(b, i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let end = plain_end(b, i + 1)?;
        let k = json.get(i + 1..end)?;
        if k == crate::sink::NUMBER_TOKEN {
            return None;
        }
        s.key(k);
        let i = skip_ws(b, end + 1);
        (b.get(i) == Some(&b':')).then_some(i + 1)
    }
    let b = json.as_bytes();
    let limit = max_depth.min(64);
    // The levels open, one bit each (set: an object), the innermost lowest.
    let (mut objects, mut depth) = (0u64, 0usize);
    let mut i = 0;
    loop {
        // A value.
        i = skip_ws(b, i);
        match *b.get(i)? {
            open @ (b'[' | b'{') => {
                if depth >= limit {
                    return None;
                }
                let object = open == b'{';
                if object {
                    s.begin_object();
                } else {
                    s.begin_array();
                }
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(if object { &b'}' } else { &b']' }) {
                    // Empty: a value whose last byte is `i`.
                    if object {
                        s.end_object(true);
                    } else {
                        s.end_array();
                    }
                } else {
                    (objects, depth) = (objects << 1 | u64::from(object), depth + 1);
                    if object {
                        i = key(json, b, i, s)?;
                    }
                    continue;
                }
            }
            b'"' => {
                let end = plain_end(b, i + 1)?;
                s.str(json.get(i + 1..end)?);
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let end = number_end(b, i)?;
                crate::sink::number(json.get(i..end)?, s);
                i = end - 1;
            }
            b't' if b.get(i..i + 4) == Some(b"true") => {
                s.bool(true);
                i += 3;
            }
            b'f' if b.get(i..i + 5) == Some(b"false") => {
                s.bool(false);
                i += 4;
            }
            b'n' if b.get(i..i + 4) == Some(b"null") => {
                s.null();
                i += 3;
            }
            _ => return None,
        }
        // `i`: the value's last byte. Then a comma and the next value, or closes.
        loop {
            i = skip_ws(b, i + 1);
            if depth == 0 {
                return Some(i);
            }
            match *b.get(i)? {
                b',' => {
                    i = if objects & 1 != 0 { key(json, b, i + 1, s)? } else { i + 1 };
                    break;
                }
                b']' if objects & 1 == 0 => s.end_array(),
                b'}' if objects & 1 != 0 => s.end_object(false),
                _ => return None,
            }
            (objects, depth) = (objects >> 1, depth - 1);
        }
    }
}

/// The end of the JSON number at `start`: its integer part, then a fraction and an
/// exponent as JSON's grammar spells them (digits after `.`, after `e` and its sign).
pub(crate) fn number_end(b: &[u8], start: usize) -> Option<usize> {
    let digits = |i: usize| b.get(i..).map_or(0, |r| r.iter().take_while(|c| c.is_ascii_digit()).count());
    let mut i = int_end(b, start)?;
    if b.get(i) == Some(&b'.') {
        i += 1 + Some(digits(i + 1)).filter(|&n| n > 0)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1 + usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        i += Some(digits(i)).filter(|&n| n > 0)?;
    }
    Some(i)
}

/// The four hex digits at `at` (a `\u` escape's), or `None`.
#[inline]
fn hex4(b: &[u8], at: usize) -> Option<u32> {
    crate::json::hex4(b.get(at..)?).map(u32::from)
}

/// Bytes a string without escapes may hold as they are: not `"`, a backslash, nor a control
/// character (JSON wants those escaped).
const PLAIN: [bool; 256] = {
    let mut t = [true; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = false;
        c += 1;
    }
    t[b'"' as usize] = false;
    t[b'\\' as usize] = false;
    t
};

/// The position of the quote closing a string whose content starts at `start`, when the
/// content needs no unescaping (`None`: an escape or a control character comes first, or
/// no quote). Public for readers that match a learned event form byte for byte
/// (`agui_arrow::fields`' templates) and must find a value's end as the scan does.
#[inline]
pub fn plain_end(b: &[u8], start: usize) -> Option<usize> {
    stop(b, start).filter(|&i| b[i] == b'"')
}

/// The position of the first byte from `start` a string cannot hold as it is (a quote,
/// a backslash, a control character). Eight bytes at a time (most names and values are
/// longer than a few bytes), then byte by byte.
#[inline]
fn stop(b: &[u8], start: usize) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // The high bit of each zero byte of `x` (and maybe of bytes above the first: the
    // lowest one set is always exact).
    let zeros = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut i = start;
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        let stop = zeros(w ^ (ONES * b'"' as u64))
            | zeros(w ^ (ONES * b'\\' as u64))
            // Bytes below 0x20: control characters.
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if stop != 0 {
            return Some(i + stop.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    b.get(i..)?.iter().position(|&c| !PLAIN[c as usize]).map(|n| i + n)
}

/// The end of a JSON integer (`-?(0|[1-9][0-9]*)`) starting at `start`. What follows it
/// (a fraction, an exponent) is the caller's to refuse. Public for the same readers as
/// [`plain_end`].
#[inline]
pub fn int_end(b: &[u8], start: usize) -> Option<usize> {
    let i = start + usize::from(b[start] == b'-');
    match b.get(i)? {
        b'0' => Some(i + 1),
        b'1'..=b'9' => Some(i + 1 + b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count()),
        _ => None,
    }
}

/// The operations of a `STATE_DELTA` event in its plain form: exactly `{type, delta}` with
/// a plain patch (`patch::PlainOps`), nesting at most `max_depth` levels. `None`: read
/// the event the general way (an event object).
pub fn plain_state_delta(payload: &[u8], max_depth: usize, pointers: &mut crate::patch::cache::PointerCache) -> Option<Vec<crate::patch::Operation>> {
    plain_state_delta_known(payload, None, max_depth, pointers)
}

/// [`plain_state_delta`] of a payload whose text is known ([`Known`]: not checked
/// again, nor looked through for the kept range when the log holds none).
pub(crate) fn plain_state_delta_known(
    payload: &[u8],
    known: Option<Known<'_>>,
    max_depth: usize,
    pointers: &mut crate::patch::cache::PointerCache,
) -> Option<Vec<crate::patch::Operation>> {
    let no_kept_range = known.is_some_and(|k| k.no_kept_range);
    struct V<'c>(&'c mut crate::patch::cache::PointerCache);
    struct Map<'c>(V<'c>);
    impl<'de> serde::de::DeserializeSeed<'de> for Map<'_> {
        type Value = Vec<crate::patch::Operation>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self.0)
        }
    }
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
    // (the characters of the kept range, and integers too long for Python, are read by
    // the general parse alone)
    if crate::limits::exceeds_depth(payload, max_depth) || (!no_kept_range && super::js::may_hold_kept_range(payload)) || payload.len() > crate::patch::MAX_INT_DIGITS {
        return None;
    }
    // The compact form as writers send it: its operations by the scanner's byte loop.
    if let Some(rest) = payload.strip_prefix(b"{\"type\":\"STATE_DELTA\",\"delta\":") {
        // (text that is not UTF-8 is refused by the parser below)
        let text = known.map(|k| k.text).or_else(|| simdutf8::basic::from_utf8(payload).ok());
        if let Some((ops, end)) = text.and_then(|text| crate::patch::scan_plain_ops(text, payload.len() - rest.len(), pointers)) {
            if payload.get(end) == Some(&b'}') && skip_ws(payload, end + 1) == payload.len() {
                return Some(ops);
            }
        }
    }
    let mut de = serde_json::Deserializer::from_slice(payload);
    let ops = crate::limits::deserialize_nested(&mut de, Map(V(pointers)), max_depth).ok()?;
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
        let Some(rest) = payload.strip_prefix(b"{\"type\":\"").or_else(|| payload.strip_prefix(b"{\"type\": \"")) else { return Lead::Unknown };
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

    #[test]
    fn each_plain_member_is_found_at_its_number() {
        for (i, (name, kept)) in PLAIN_MEMBERS.iter().enumerate() {
            assert_eq!(plain_member(name), Some((i, *name, *kept)));
        }
        assert!(PLAIN_MEMBERS.len() <= 16, "the schema's masks are u16");
        assert_eq!(plain_member("type"), None);
    }

    #[test]
    fn the_kinds_with_a_delta_form_are_the_content_args_and_chunk_events() {
        let names = ["TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TEXT_MESSAGE_CHUNK", "REASONING_MESSAGE_CHUNK", "TOOL_CALL_CHUNK"];
        for name in names {
            assert!(has_delta_form(EventType::parse(name)), "{name}");
        }
        for name in ["TEXT_MESSAGE_START", "TOOL_CALL_END", "STATE_DELTA", "CUSTOM", "RAW", "NOPE"] {
            assert!(!has_delta_form(EventType::parse(name)), "{name}");
        }
    }

    /// A delta appended as written (its escapes decoded in place) leaves the string as
    /// `js::append` of the decoded delta does, or refuses it where decoding does: the seam
    /// of a kept high surrogate and a kept low one included.
    #[test]
    fn a_raw_delta_appends_as_its_decoded_delta() {
        let targets = ["", "ab", "é", "x\u{10F83D}", "\u{10F83D}", "\u{10FE00}", "\u{100000}", "\u{1F600}"];
        let raws = [
            "plain", "", "a\\nb", "\\\"q\\\"", "\\u00e9 and \\/", "\\ud83d\\ude00x", "\\ude00", "\\ud83d", "\\ud83dx",
            "\u{10FE00}rest", "\u{10FE00}\\n", "\\n\u{10FE00}", "\u{100000}\\t", "\\udbc0\\udc00 after", "\\udbfe\\ude00",
            "\\udbff\\udfff", "\\x", "tail \\", "\u{1F600}\\r\\n", "\\uDE00\\n",
        ];
        let mut joined = 0;
        for target in targets {
            for raw in raws {
                for no_kept_range in [false, true] {
                    let d = RawDelta { kind: EventType::TextMessageContent, id: Some("m"), raw, escaped: raw.contains('\\'), no_kept_range };
                    let mut want = target.to_string();
                    let decoded = d.decode().map(|d| super::super::js::append(&mut want, &d.delta)).is_some();
                    let mut got = target.to_string();
                    got.reserve(3);
                    assert_eq!(d.append_to(&mut got), decoded, "{target:?} {raw:?} {no_kept_range}");
                    if decoded {
                        assert_eq!(got, want, "{target:?} {raw:?} {no_kept_range}");
                        joined += usize::from(got.len() < target.len() + d.decode().unwrap().delta.len());
                    } else {
                        assert_eq!(got, target, "{target:?} {raw:?} {no_kept_range}");
                    }
                }
            }
        }
        // (the seam joined a kept pair, the delta written and escaped)
        assert!(joined >= 2, "{joined}");
    }

    /// An event read in the form of the delta before it is read as `Delta::parse` reads it
    /// (or left to it), whatever came before.
    #[test]
    fn delta_form_reads_as_parse() {
        let events: &[&str] = &[
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hello"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":" world"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a\"b\u00e9\n"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x"} "#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x","extra":1}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"\ud800"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"\udbff\udc00"}"#,
            "{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"\u{10F800}\"}",
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"tab	"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":5}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"é"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"other"}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"t\u0031","delta":"{\"a\""}"#,
            r#"{"type":"TOOL_CALL_ARGS","toolCallId":"t\u0031","delta":":1}"}"#,
            r#"{"type":"TOOL_CALL_CHUNK","delta":"x"}"#,
            r#"{"type":"TOOL_CALL_CHUNK","delta":"y"}"#,
            r#"{"type":"TOOL_CALL_CHUNK","delta":"y"}}"#,
            r#"{"messageId":"m1","type":"TEXT_MESSAGE_CONTENT","delta":"z"}"#,
            r#"{"messageId":"m1","type":"TEXT_MESSAGE_CONTENT","delta":"zz"}"#,
            r#"{"delta":"first","type":"TEXT_MESSAGE_CONTENT","messageId":"m1"}"#,
        ];
        let mut form = DeltaForm::default();
        for e in events {
            let b = e.as_bytes();
            let want = Delta::parse(b, None).map(|d| (d.kind, d.id.map(|i| i.into_owned()), d.delta.into_owned()));
            let got = form.repeat(b, None).or_else(|| form.parse(b, None)).map(|d| (d.kind, d.id.map(|i| i.into_owned()), d.delta.into_owned()));
            assert_eq!(got, want, "{e}");
        }
        // a run in one form is read by the repeat alone, for another id too
        form.parse(events[0].as_bytes(), None);
        assert!(form.repeat(events[1].as_bytes(), None).is_some());
        let other = form.repeat(events[11].as_bytes(), None).expect("another id");
        assert_eq!(other.id.as_deref(), Some("m2"));
        assert!(form.repeat(events[12].as_bytes(), None).is_none(), "an escaped id");
    }

    /// Deltas of two kinds alternating, each kind's id changing: each read in its form (as
    /// the parse reads it), or left to the parse, whatever came before.
    #[test]
    fn delta_forms_read_other_ids_and_kinds_as_parse() {
        let text = |id: &str, d: &str| format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"{id}","delta":"{d}"}}"#);
        let args = |id: &str, d: &str| format!(r#"{{"type":"TOOL_CALL_ARGS","toolCallId":"{id}","delta":"{d}"}}"#);
        let reasoning = |id: &str, d: &str| format!(r#"{{"type":"REASONING_MESSAGE_CONTENT","messageId":"{id}","delta":"{d}"}}"#);
        let ids = ["m1", "m2", "", "m\\u0032", "m\"", "a\tb", "\u{10F800}", "é", "m1\",\"x\":\"1"];
        let mut events = Vec::new();
        for (n, id) in ids.iter().enumerate() {
            events.push(text(id, &format!("t{n}")));
            events.push(text(id, "\\n more"));
            events.push(args(&format!("c{id}"), "{\\\"a\\\": "));
            events.push(args(&format!("c{id}"), "1}"));
            if n % 3 == 0 {
                events.push(reasoning(id, "why"));
            }
            events.push(r#"{"type":"TEXT_MESSAGE_END","messageId":"m1"}"#.to_string());
        }
        let mut form = DeltaForm::default();
        let mut repeated = 0;
        for e in &events {
            let b = e.as_bytes();
            let want = Delta::parse(b, None).map(|d| (d.kind, d.id.map(|i| i.into_owned()), d.delta.into_owned()));
            let ended = form.end(b);
            let got = match form.repeat(b, None) {
                Some(d) => {
                    repeated += 1;
                    Some(d)
                }
                None => form.parse(b, None),
            }
            .map(|d| (d.kind, d.id.map(|i| i.into_owned()), d.delta.into_owned()));
            assert_eq!(got, want, "{e}");
            if let Some((n, _)) = ended {
                assert!(n <= b.len(), "{e}");
            }
        }
        // (the first delta of each kind, of an escaped id, and the unreadable ones parsed)
        assert!(repeated >= 12, "{repeated} of {}", events.len());
    }

    /// Escapes decode as serde_json decodes them, and what it refuses is `None`.
    #[test]
    fn unescapes_as_serde_json() {
        let cases = [
            r#""a\"b""#, r#""\\\/\b\f\n\r\t""#, r#""x\u0041é\u00e9""#, r#""\ud83d\ude00""#, r#""\uDBFF\uDFFF z""#,
            r#""\u0000\u001f""#, r#""\ud800""#, r#""\udc00""#, r#""\ud83d\u0041""#, r#""\ud83dx""#, r#""\ud83d\n""#,
            r#""\x""#, r#""\u12G4""#, r#""end\\""#, r#""😀\"""#,
        ];
        for text in cases {
            let raw = &text[1..text.len() - 1];
            let m = Member { name: "n", text, raw: Some(raw), escaped: true };
            assert_eq!(m.unescaped().map(|c| c.into_owned()), serde_json::from_str::<String>(text).ok(), "{text}");
        }
        // A backslash at the very end (no scan hands it out) is no escape either.
        let m = Member { name: "n", text: "\"a\\\"", raw: Some("a\\"), escaped: true };
        assert_eq!(m.unescaped(), None);
    }

    fn serde(p: &[u8]) -> Option<(EventType, Option<String>, String)> {
        let d: Delta<'_> = serde_json::from_slice(p).ok()?;
        Some((d.kind, d.id.map(|s| s.into_owned()), d.delta.into_owned()))
    }

    /// The scan reads what the parser reads, or leaves the payload to it.
    #[test]
    fn the_scan_agrees_with_the_parser() {
        let kinds = ["TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK", "RUN_STARTED"];
        let ids = [None, Some(("messageId", "m1")), Some(("toolCallId", "c-é"))];
        // Escapes of every kind, surrogate pairs and lone surrogates (left to the parser).
        let deltas = [
            "ab", "", "é😀 x", "a\\\"b", "a\\u0041", "tab\there", "bad\u{1}", "\\ud83d", "\\\\\\/\\b\\f\\n\\r\\t",
            "\\ud83d\\ude00", "x\\uD83D\\uDE00y", "\\uDBFF\\uDFFF", "\\udc00", "\\ud83d\\u0041", "\\ud83dx", "\\u00e9\\u0000\\u001F",
            "\\x", "\\u12", "\\u12G4", "a\\", "{\\\"a\\\":[1,\\\"\\\\n\\\"]}",
        ];
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
                        let scan = Delta::scan(p.as_bytes(), None).map(|(d, _)| (d.kind, d.id.map(|s| s.into_owned()), d.delta.into_owned()));
                        if scan.is_some() {
                            scanned += 1;
                            assert_eq!(scan, serde(p.as_bytes()), "{p}");
                        }
                        let parsed = Delta::parse(p.as_bytes(), None).map(|d| (d.kind, d.id.map(|s| s.into_owned()), d.delta.into_owned()));
                        // (a character of the kept range is left to the general parse)
                        let want = serde(p.as_bytes()).filter(|(_, _, d)| !crate::stream::js::holds_kept_range(d));
                        assert_eq!(parsed, want, "{p}");
                    }
                }
            }
        }
        // (the compact and the spaced variants)
        assert!(scanned == 198 && scanned < total, "{scanned} of {total}");
        // Invalid UTF-8 in a delta: neither reads it (the general path replaces it).
        assert!(Delta::scan(b"{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a\xffb\"}", None).is_none());
    }

    /// The members `scan_flat` reads, or `None`.
    fn flat(json: &str, spaced: bool) -> Option<Vec<(String, String, Option<String>)>> {
        let mut out = Vec::new();
        let each = |m: Member<'_>| {
            out.push((m.name.to_string(), m.text.to_string(), m.string().map(|s| s.into_owned())));
            Some(())
        };
        match spaced {
            true => scan_flat_spaced(json, each)?,
            false => scan_flat(json, each)?,
        }
        Some(out)
    }

    /// What the scan accepts is JSON serde_json accepts, to the same members: checked on
    /// compact events with every byte position replaced by each byte that matters to
    /// JSON (quotes, escapes, control characters, separators, number syntax, whitespace,
    /// non-ASCII) and with text cut at every position.
    #[test]
    fn the_flat_scan_accepts_only_what_serde_json_reads_the_same() {
        let events = [
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hé 😀"}"#,
            r#"{"type":"RUN_STARTED","timestamp":1700000000000,"threadId":"t","runId":"r"}"#,
            r#"{"type":"X","n":-0,"m":0,"big":123456789012345678901234567890,"":""}"#,
            r#"{}"#,
            r#"{"type":"TOOL_CALL_ARGS","delta":"{\"a\":\"\n\t\u00e9\ud83d\ude00\\\/\b\f\r\"}"}"#,
            r#"{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "a \"b\""}"#,
            "{ \"n\" :\t1 ,\r\n\"s\":\"x\" }",
        ];
        let bytes: [&str; 30] = [
            "\"", "\\", "\u{1}", "\u{1f}", "\u{7f}", " ", "\n", "\t", "{", "}", "[", "]", ",", ":", "-", "+", "0", "1", ".", "e", "E", "é", "n", "x",
            "u", "d", "D", "8", "c", "/",
        ];
        let mut variants = Vec::new();
        for e in events {
            for i in 0..e.len() {
                if !e.is_char_boundary(i) {
                    continue;
                }
                variants.push(e[..i].to_string());
                let next = (i + 1..=e.len()).find(|&j| e.is_char_boundary(j)).unwrap();
                for b in bytes {
                    variants.push(format!("{}{b}{}", &e[..i], &e[next..]));
                    variants.push(format!("{}{b}{}", &e[..i], &e[i..]));
                }
            }
            variants.push(e.to_string());
        }
        let mut accepted = [0, 0];
        for (v, spaced) in variants.iter().flat_map(|v| [(v, false), (v, true)]) {
            let Some(members) = flat(v, spaced) else { continue };
            accepted[usize::from(spaced)] += 1;
            // (the spaced scan reads what the compact one reads the same)
            if spaced {
                if let Some(compact) = flat(v, false) {
                    assert_eq!(compact, members, "{v:?}");
                }
            }
            let parsed: serde_json::Map<String, Value> =
                serde_json::from_str(v).unwrap_or_else(|e| panic!("{v:?} was scanned but does not parse: {e}"));
            let names: Vec<&str> = members.iter().map(|m| m.0.as_str()).collect();
            let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
            if unique.len() == names.len() {
                // (A name given twice keeps its last value in the map: the callers refuse those.)
                assert_eq!(parsed.keys().map(String::as_str).collect::<Vec<_>>(), names, "{v:?}");
            }
            for (name, text, string) in &members {
                let value: Value = serde_json::from_str(text).unwrap();
                assert_eq!(string.as_ref().map(|s| Value::String(s.clone())), value.is_string().then(|| value.clone()), "{v:?}");
                assert!(value.is_string() || value.is_number(), "{v:?}");
                if unique.len() == names.len() {
                    assert_eq!(parsed[name.as_str()], value, "{v:?}");
                }
            }
        }
        for n in accepted {
            assert!(n > 1000 && n < variants.len() / 2, "{accepted:?} of {}", variants.len());
        }
        assert!(accepted[1] > accepted[0], "{accepted:?}");
    }

    /// A random JSON-ish value (`depth` levels left): mostly valid, with escapes,
    /// fractions, exponents, leading zeros, broken literals, trailing commas, bare keys,
    /// control bytes and whitespace of every kind between tokens.
    fn nested_value(rng: &mut crate::test_rng::Rng, depth: usize, out: &mut String) {
        let ws = [" ", "\n", "\t", "\r", "  ", "\u{b}", "\u{c}", "\u{a0}"];
        let space = |rng: &mut crate::test_rng::Rng, out: &mut String| {
            if rng.below(6) == 0 {
                let n = if rng.below(8) == 0 { 8 } else { 5 };
                out.push_str(rng.pick(&ws[..n]));
            }
        };
        let scalars = [
            "\"a\"", "\"\"", "\"é😀\"", "\"done\"", "\"/status\"", "\"a\\\"b\"", "\"\\u0041\"", "\"\\ud800\"",
            "\"\\u12G4\"", "\"\\x\"", "\"a\u{1}\"", "\"a\u{7f}\"", "\"\\/\\n\"", "0", "-0", "12", "-5", "01", "-",
            "1.5", "1.", "1e3", "1E+2", "-1.5e-3", "1e", "0.25", "-0.0e0", "2.e3", ".5", "1e+", "1.5E", "1e400", "0.1234567890123", "123456789012345678901234567890", "true", "false", "null", "tru",
            "nul", "nulll", "falsey", "+1", "\"unterminated",
        ];
        if depth == 0 || rng.below(3) == 0 {
            out.push_str(rng.pick(&scalars));
            return;
        }
        let object = rng.below(2) == 0;
        out.push(if object { '{' } else { '[' });
        let n = [0, 1, 2, 3, 5][rng.below(5)];
        for k in 0..n {
            if k > 0 || rng.below(40) == 0 {
                out.push(',');
            }
            space(rng, out);
            if object {
                let n = if rng.below(10) == 0 { 6 } else { 2 };
                out.push_str(rng.pick(&["\"op\"", "\"\"", "\"k\\n\"", "\"é\"", "op", "1"][..n]));
                space(rng, out);
                out.push_str(if rng.below(40) == 0 { "=" } else { ":" });
                space(rng, out);
            }
            nested_value(rng, depth - 1, out);
            space(rng, out);
        }
        if rng.below(40) == 0 {
            out.push(',');
        }
        out.push(match (object, rng.below(40)) {
            (_, 0) => '}',
            (_, 1) => ']',
            (true, _) => '}',
            (false, _) => ']',
        });
    }

    /// The nested values the fast skip takes end where serde_json's skip ends them:
    /// random values (valid and not, cut anywhere, mutated at any byte, with text after
    /// them and nested up to 74 levels), and `nested_end` is serde_json's skip on all.
    #[test]
    fn the_nested_skip_is_serde_jsons() {
        let mut rng = crate::test_rng::Rng(0x005e_ed0f_5c1b);
        let (mut fast, mut valid, mut total) = (0, 0, 0);
        let bytes = ["\"", "\\", "\u{1}", " ", "\n", "{", "}", "[", "]", ",", ":", "-", "0", "1", ".", "e", "é", "n", "u", "x"];
        for round in 0..6_000 {
            let mut v = String::new();
            let deep = if round % 50 == 0 { 70 } else { 4 };
            if deep == 70 {
                // Arrays and objects around it, 58 to 71 levels.
                let open: Vec<bool> = (0..58 + rng.below(14)).map(|_| rng.below(2) == 0).collect();
                open.iter().for_each(|&o| v.push_str(if o { "{\"k\":" } else { "[" }));
                nested_value(&mut rng, 2, &mut v);
                open.iter().rev().for_each(|&o| v.push(if o { '}' } else { ']' }));
            } else {
                nested_value(&mut rng, deep, &mut v);
            }
            let mut cases = vec![v.clone()];
            // The outermost level closed by the other bracket (past 64 levels a skip
            // that lost track of the outer levels would take it).
            if let Some(last @ (']' | '}')) = v.chars().last() {
                cases.push(format!("{}{}", &v[..v.len() - 1], if last == ']' { '}' } else { ']' }));
            }
            // Mutated at one byte, cut at one place.
            let at = (0..=v.len()).filter(|&i| v.is_char_boundary(i)).nth(rng.below(v.chars().count() + 1)).unwrap();
            cases.push(format!("{}{}{}", &v[..at], rng.pick(&bytes), &v[at..]));
            cases.push(v[..at].to_string());
            if let Some(c) = v[at..].chars().next() {
                cases.push(format!("{}{}{}", &v[..at], rng.pick(&bytes), &v[at + c.len_utf8()..]));
            }
            for case in cases {
                for (prefix, suffix) in [("", ""), ("{\"a\":", ",\"b\":1}"), ("[", "]x")] {
                    let text = format!("{prefix}{case}{suffix}");
                    let start = prefix.len();
                    let serde = nested_end_serde(&text, start);
                    assert_eq!(nested_end(&text, start), serde, "{text:?}");
                    let skipped = skip_nested(text.as_bytes(), start);
                    if skipped.is_some() {
                        assert_eq!(skipped, serde, "{text:?}");
                        fast += 1;
                    }
                    valid += serde.is_some() as usize;
                    total += 1;
                }
            }
        }
        // Most valid values are taken by the fast skip; serde_json decides the rest.
        assert!(fast > valid / 4 && valid > total / 8 && valid < total, "{fast} fast, {valid} valid of {total}");
    }

    /// `unescape_into` written with `memchr`: the reference for its own search.
    fn unescape_memchr(raw: &str, out: &mut String) -> Option<()> {
        let b = raw.as_bytes();
        let mut i = 0;
        while let Some(n) = memchr::memchr(b'\\', &b[i..]) {
            let at = i + n;
            out.push_str(&raw[i..at]);
            // (The escape grammar is `escape`'s: this reference is the search's.)
            let (c, len) = escape(b, at)?;
            out.push(c);
            i = at + len;
        }
        out.push_str(&raw[i..]);
        Some(())
    }

    /// `unescape_into` decodes (and refuses) what it did with `memchr`, written into the
    /// same buffer as far as it gets: random strings of every escape, surrogates paired,
    /// lone, reversed and broken, bad and cut escapes, quotes, control bytes and unicode
    /// as they are (which it copies: `string_end` refuses them before), of 0 to ~60 bytes;
    /// and `unescape_end` is `string_end` then `unescape_into` on the same strings.
    #[test]
    fn unescape_into_is_the_memchr_loop() {
        let pieces = [
            "a", "bc", "query", "é", "😀", " ", "\"", "\u{1}", "\u{1f}", "\u{7f}", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n",
            "\\r", "\\t", "\\u0041", "\\u00e9", "\\u0000", "\\u001F", "\\u2028", "\\ud83d\\ude00", "\\uD83D\\uDE00",
            "\\uDBFF\\uDFFF", "\\ud800", "\\udc00", "\\ud800\\u0041", "\\ud83dx", "\\udc00\\ud800", "\\u12G4", "\\u12",
            "\\x", "\\", "\\u", "\\ud83d\\u", "\\ud83d\\ude0",
        ];
        let mut rng = crate::test_rng::Rng(0x0e5c_a9e5);
        let (mut refused, mut ended) = (0, 0);
        for round in 0..40_000 {
            let mut raw = String::new();
            for _ in 0..rng.below(if round % 8 == 0 { 24 } else { 6 }) {
                raw.push_str(rng.pick(&pieces));
            }
            let (mut new, mut old) = (String::from("x"), String::from("x"));
            let got = unescape_into(&raw, &mut new);
            assert_eq!(got, unescape_memchr(&raw, &mut old), "{raw:?}");
            assert_eq!(new, old, "{raw:?}");
            refused += got.is_none() as usize;
            // `unescape_end`: `string_end`'s end and `unescape_into`'s text of what it
            // ends, or `None` where `string_end` refuses (the quote closing it, or none).
            for text in [format!("{raw}\"x\\\""), format!("\"{raw}\""), raw.clone()] {
                let start = usize::from(text.starts_with('"'));
                let mut one = String::from("x");
                let end = unescape_end(&text, start, &mut one);
                assert_eq!(end, string_end(text.as_bytes(), start).map(|e| e.0), "{text:?}");
                if let Some(end) = end {
                    let mut two = String::from("x");
                    unescape_into(&text[start..end], &mut two).unwrap();
                    assert_eq!(one, two, "{text:?}");
                    ended += 1;
                }
            }
        }
        assert!(refused > 4_000 && refused < 36_000 && ended > 10_000, "{refused} {ended}");
    }

    /// `plain_end` (eight bytes at a time) finds what a byte-by-byte loop finds: every
    /// byte value at every position of strings of 0 to 24 bytes, after any start.
    /// A learned layout reads an event to exactly what the scan reads (`Plain::read`):
    /// events of every plain kind, compact and spaced, read after the layout of another
    /// event of their kind was learned, with their members reordered, respelled, retyped,
    /// added, dropped, spaced and cut, at every depth limit, with and without the kept range
    /// looked for; and the layouts learned from those events read the originals as the scan does.
    #[test]
    fn plain_layouts_read_what_the_scan_reads() {
        let bases = [
            r#"{"type":"TEXT_MESSAGE_START","messageId":"msg-1","role":"assistant"}"#,
            r#"{"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_END","messageId":"msg-1"}"#,
            r#"{"type": "TEXT_MESSAGE_END", "messageId": "m1"}"#,
            r#"{"type":"TOOL_CALL_START","toolCallId":"call-1","toolCallName":"search","parentMessageId":"msg-1"}"#,
            r#"{"type":"TOOL_CALL_END","toolCallId":"call-1"}"#,
            r#"{"type":"TOOL_CALL_RESULT","messageId":"result-2","toolCallId":"call-2","content":"caf\u00e9 \"q\" \\ done"}"#,
            r#"{"type":"RUN_STARTED","timestamp":1700000001000,"threadId":"thread-1","runId":"run-1"}"#,
            r#"{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1","usage":[{"provider":"p","inputTokens":101,"outputTokens":40}]}"#,
            r#"{"type":"STATE_SNAPSHOT","snapshot":{"run":1,"steps":[],"status":"thinking"}}"#,
            r#"{"type":"STATE_SNAPSHOT","snapshot":[1,"two",{"three":3}]}"#,
            r#"{"type":"STEP_STARTED","stepName":"plan"}"#,
            r#"{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}"#,
            r#"{"type":"REASONING_START","messageId":"r1","timestamp":5}"#,
        ];
        // Respellings of parts of an event, each tried in place of the first match.
        let swaps: &[(&str, &str)] = &[
            ("msg-1", "msg-2"), ("msg-1", "m\\u0031"), ("msg-1", ""), ("msg-1", "\u{10FE00}"), ("msg-1", "\\ud83d\\ude00"),
            ("msg-1", "\\ud83d"), ("\"msg-1\"", "1"), ("\"msg-1\"", "null"), ("\"msg-1\"", "[]"), ("assistant", "robot"),
            ("assistant", "user"), ("assistant", "assist\\u0061nt"), ("reasoning", "assistant"), ("1700000001000", "-1"),
            ("1700000001000", "9007199254740992"), ("1700000001000", "1.5"), ("1700000001000", "\"1\""), ("1700000001000", "01"),
            ("101", "-101"), ("101", "1e3"), ("\"p\"", "1"), ("\"provider\"", "\"future\""), ("[{", "[ {"), ("{\"run\":1", "{\"run\":1,\"run\":2"),
            ("\"snapshot\":{", "\"snapshot\":["), ("\"steps\":[]", "\"steps\":[\"\\ud800\"]"), ("\"thinking\"", "\"\u{10FE00}\""),
            (",\"role\"", ",\"name\":\"x\",\"role\""), (",\"role\":\"assistant\"", ""), (",\"runId\":\"run-1\"", ""),
            (",\"threadId\"", ",\"type\":\"RUN_STARTED\",\"threadId\""), (",\"messageId\"", ",\"metadata\":{},\"messageId\""),
            (":", ": "), (",", ", "), ("\"}", "\" }"), ("}", "}\n"), ("search", "se\\\"arch"), ("plan", "pl\\nan"),
            ("\"content\":\"", "\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"x\":\""), ("\"step", "\"Step"),
            ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END"), ("\"type\":\"", "\"type\": \""), ("{\"type", "{ \"type"),
        ];
        // Each mutation with the base it came from.
        let mut mutations: Vec<(usize, Vec<u8>)> = Vec::new();
        for (at, base) in bases.iter().enumerate() {
            let b = base.as_bytes();
            let mut mutations = Mutations(at, &mut mutations);
            mutations.push(b.to_vec());
            for &(from, to) in swaps {
                if base.contains(from) {
                    mutations.push(base.replacen(from, to, 1).into_bytes());
                }
            }
            // Reordered: the members after `type`, rotated.
            if let Some(rest) = base.strip_prefix("{\"type\":").or_else(|| base.strip_prefix("{\"type\": ")) {
                let parts: Vec<&str> = rest.trim_end_matches('}').split(',').collect();
                if parts.len() > 2 && !rest.contains('[') && !rest.contains('{') {
                    let mut rotated = parts[1..].to_vec();
                    rotated.rotate_left(1);
                    mutations.push(format!("{{\"type\":{},{}}}", parts[0], rotated.join(",")).into_bytes());
                }
            }
            for i in 0..b.len() {
                mutations.push(b[..i].to_vec());
                let mut cut = b.to_vec();
                cut.remove(i);
                mutations.push(cut);
                for ins in [" ", "\"", "\\", "x", "1", "-", "{", "[", ",", "}", "é"] {
                    let mut v = b.to_vec();
                    v.splice(i..i, ins.bytes());
                    mutations.push(v);
                    let mut v = b.to_vec();
                    v.splice(i..i + 1, ins.bytes());
                    mutations.push(v);
                }
            }
        }
        struct Mutations<'v>(usize, &'v mut Vec<(usize, Vec<u8>)>);
        impl Mutations<'_> {
            fn push(&mut self, v: Vec<u8>) {
                self.1.push((self.0, v));
            }
        }
        let show = |p: &Option<Plain<'_>>| format!("{p:?}");
        let (mut in_layout, mut read_in_layout, mut learned) = (0, 0, 0);
        for (from, m) in &mutations {
            // (after the layout of its own event, and of the next kind's)
            for base in [bases[*from], bases[(from + 1) % bases.len()]] {
                for max_depth in [1, 2, 3, 512] {
                    for no_kept_range in [false, true] {
                        fn known(p: &[u8], no_kept_range: bool) -> Option<Known<'_>> {
                            let text = std::str::from_utf8(p).ok()?;
                            // (as a log's reader says it: only of texts that hold none)
                            (!no_kept_range || !super::super::js::may_hold_kept_range(p)).then_some(Known { text, no_kept_range })
                        }
                        let mut forms = PlainForms::default();
                        let b = base.as_bytes();
                        assert_eq!(show(&Plain::read_formed(b, known(b, no_kept_range), max_depth, &mut forms)), show(&Plain::read(b, known(b, no_kept_range), max_depth)));
                        if max_depth >= 2 {
                            // (the base's layout learned, where it is one)
                            if let Some(form) = &forms.forms[PlainForms::slot(PlainForms::lead(b).unwrap())] {
                                learned += 1;
                                if let Some(k) = known(m, no_kept_range) {
                                    if let Some(read) = form.read(k, max_depth) {
                                        in_layout += 1;
                                        read_in_layout += usize::from(read.is_some());
                                        assert_eq!(show(&read), show(&Plain::read(m, Some(k), max_depth)), "{base} {}", String::from_utf8_lossy(m));
                                    }
                                }
                            }
                        }
                        for p in [&m[..], b, &m[..], b] {
                            let want = show(&Plain::read(p, known(p, no_kept_range), max_depth));
                            assert_eq!(show(&Plain::read_formed(p, known(p, no_kept_range), max_depth, &mut forms)), want, "{base} then {}", String::from_utf8_lossy(p));
                        }
                    }
                }
            }
        }
        // (each kind its own layout's place)
        let slots: std::collections::HashSet<usize> = PLAIN_KINDS.iter().map(|k| PlainForms::slot(k.name().as_bytes())).collect();
        assert_eq!(slots.len(), PLAIN_KINDS.len());
        // (the layouts were read: events in them, plain and not)
        assert!(learned > 1000 && in_layout > 5_000 && read_in_layout > 1_000, "{learned} {in_layout} {read_in_layout}");
    }

    #[test]
    fn plain_end_is_the_byte_loop() {
        let reference = |b: &[u8], start: usize| {
            let n = b.get(start..)?.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
            (b[start + n] == b'"').then_some(start + n)
        };
        for len in 0..24 {
            for at in 0..=len {
                for byte in 0..=255u8 {
                    let mut b = vec![b'a'; len];
                    b.push(b'"');
                    if at < len {
                        b[at] = byte;
                    }
                    b.extend_from_slice(b"xyz\"");
                    for start in [0, 1, 3] {
                        assert_eq!(plain_end(&b, start), reference(&b, start), "{b:?} from {start}");
                    }
                }
            }
        }
    }
}
