//! Compatibility with pre-1.0 (0.x) peers, as the reference client's middlewares do:
//! - [`CompatibilityBoundary`]: always installed, innermost: `THINKING_*` events become
//!   `REASONING_*` (with generated ids), legacy `null`s are removed, legacy `binary`
//!   content parts become image/audio/video/document parts;
//! - the version-gated shims for old peers ([`LegacyChain`] builds them from the peer's
//!   `maxProtocolVersion`): 0.0.57 drops `SUBAGENT_*` events and `subagentRunId` tags,
//!   0.0.45 translates `THINKING_*` after chunk expansion, 0.0.39 flattens the outgoing
//!   message content to text.

use super::chunks::ChunkExpander;
use super::event::EventType;
use super::js;
use super::{StreamError, WarningKind};
use serde_json::{Map, Value};

/// Where generated message ids come from (the reference uses random UUIDs). `Sync` so
/// that a converter can live in a Python object (a stream decoder).
pub type IdGen = Box<dyn FnMut() -> String + Send + Sync>;

static GENERATORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// UUID v4 text without a dependency: splitmix64 seeded by the time and a process-wide
/// generator count. Ids only need to be unique, not unpredictable.
pub fn uuid_generator() -> IdGen {
    let n = GENERATORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut state: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03);
    Box::new(move || {
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let (a, b) = (next(), next());
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xFFFF,
            a & 0xFFF,
            0x8000 | (b >> 48) & 0x3FFF,
            b & 0xFFFF_FFFF_FFFF
        )
    })
}

fn compat_warning(what: &str, replacement: &str) -> String {
    format!(
        "[ag-ui][compat] Converting deprecated {what} to {replacement}. The old shape leaves the protocol after its shim window — see the repo-root DEPRECATIONS.md."
    )
}

/// Remove `field` when it is `null` (a legacy way of saying "absent").
fn omit_null(v: &mut Value, field: &str, context: &str, warnings: &mut Vec<String>) {
    if let Value::Object(o) = v {
        if matches!(o.get(field), Some(Value::Null)) {
            o.shift_remove(field);
            let context = if context.is_empty() { super::event::type_str(v) } else { context };
            warnings.push(compat_warning(&format!("{context}.{field}: null"), "an absent field"));
        }
    }
}

fn for_each_in(v: &mut Value, field: &str, mut f: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = v.get_mut(field) {
        items.iter_mut().for_each(&mut f);
    }
}

/// `normalizeLegacyMessageNulls`: `metadata: null` on media parts.
fn normalize_message_nulls(message: &mut Value, warnings: &mut Vec<String>) {
    for_each_in(message, "content", |part| {
        if let Some(t @ ("image" | "audio" | "video" | "document")) = part.get("type").and_then(Value::as_str) {
            let context = format!("{t} input content");
            omit_null(part, "metadata", &context, warnings);
        }
    });
}

/// `normalizeLegacyRunAgentInput`.
pub fn normalize_run_input(input: &mut Value, warnings: &mut Vec<String>) {
    if !input.is_object() {
        return;
    }
    omit_null(input, "forwardedProps", "RunAgentInput", warnings);
    for_each_in(input, "tools", |t| omit_null(t, "parameters", "Tool", warnings));
    for_each_in(input, "resume", |r| omit_null(r, "payload", "ResumeEntry", warnings));
    for_each_in(input, "messages", |m| normalize_message_nulls(m, warnings));
}

fn media_type(mime: &str) -> &'static str {
    if mime.starts_with("image/") {
        "image"
    } else if mime.starts_with("audio/") {
        "audio"
    } else if mime.starts_with("video/") {
        "video"
    } else {
        "document"
    }
}

/// `convertBinaryToNewFormat` of a legacy binary part (a string `mimeType`): the modern
/// part, or `None` when it has neither data nor url (it then stays as it is).
fn convert_binary(part: &Map<String, Value>, mime: &str, warnings: &mut Vec<String>) -> Option<Value> {
    let (kind, value) = if js::truthy(part.get("data")) {
        ("data", &part["data"])
    } else if js::truthy(part.get("url")) {
        ("url", &part["url"])
    } else {
        warnings.push(format!(
            "[ag-ui][compat] A binary content part carries only an id ('{}') and cannot be converted to a modern media part; a 1.0 peer will not accept it. Provide data or a url. See the repo-root DEPRECATIONS.md.",
            part.get("id").map_or(String::new(), |i| js::show(Some(i)))
        ));
        return None;
    };
    let mut source = Map::new();
    source.insert("type".into(), Value::String(kind.into()));
    source.insert("value".into(), value.clone());
    source.insert("mimeType".into(), Value::String(mime.into()));
    let mut out = Map::new();
    out.insert("type".into(), Value::String(media_type(mime).into()));
    out.insert("source".into(), Value::Object(source));
    if js::truthy(part.get("filename")) {
        let mut meta = Map::new();
        meta.insert("filename".into(), part["filename"].clone());
        out.insert("metadata".into(), Value::Object(meta));
    }
    Some(Value::Object(out))
}

/// A value `===` can find equal to another (as [`js::strict_eq`]: numbers by their double,
/// `-0 === 0`); objects and arrays are equal to nothing (they are never the same object).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Prim<'a> {
    Null,
    Bool(bool),
    Str(&'a str),
    Num(u64),
}

fn prim(v: &Value) -> Option<Prim<'_>> {
    Some(match v {
        Value::Null => Prim::Null,
        Value::Bool(b) => Prim::Bool(*b),
        Value::String(s) => Prim::Str(s),
        Value::Number(n) => Prim::Num(n.as_f64().map(|f| if f == 0.0 { 0 } else { f.to_bits() })?),
        Value::Array(_) | Value::Object(_) => return None,
    })
}

/// `(type, source.type, source.value, source.mimeType)` of a media part.
type MediaKey<'a> = (&'a str, Prim<'a>, Prim<'a>, Prim<'a>);

/// The modern parts of a message, indexed for `matchesModernPart`: one lookup per binary
/// part instead of a scan of the message (a message of n mirrored parts was quadratic).
/// Each key maps to the `metadata.filename` values of the parts carrying it.
struct ModernParts<'a>(std::collections::HashMap<MediaKey<'a>, std::collections::HashSet<Prim<'a>>>);

impl<'a> ModernParts<'a> {
    fn new(parts: &'a [Value]) -> Self {
        let mut index = std::collections::HashMap::new();
        for p in parts {
            let (Some(Value::String(t)), Some(Value::Object(src))) = (p.get("type"), p.get("source")) else { continue };
            let key = |k: &str| src.get(k).and_then(prim);
            let (Some(st), Some(v), Some(m)) = (key("type"), key("value"), key("mimeType")) else { continue };
            let filenames: &mut std::collections::HashSet<Prim<'a>> = index.entry((t.as_str(), st, v, m)).or_default();
            if let Some(Value::Object(meta)) = p.get("metadata") {
                filenames.extend(meta.get("filename").and_then(prim));
            }
        }
        ModernParts(index)
    }

    /// `matchesModernPart` of some part: one already says what `converted` (with the
    /// legacy part's `filename`) says.
    fn mirror(&self, converted: &Value, filename: Option<&Value>) -> bool {
        let (Some(Value::String(t)), Some(src)) = (converted.get("type"), converted.get("source")) else { return false };
        let key = |k: &str| src.get(k).and_then(prim);
        let (Some(st), Some(v), Some(m)) = (key("type"), key("value"), key("mimeType")) else { return false };
        let Some(filenames) = self.0.get(&(t.as_str(), st, v, m)) else { return false };
        !js::truthy(filename) || filename.and_then(prim).is_some_and(|f| filenames.contains(&f))
    }
}

/// `upgradeMessageContent`: legacy binary parts of an array content become modern
/// media parts; a binary part mirroring a modern part of the same message is dropped.
pub fn upgrade_message_content(message: &mut Value, warnings: &mut Vec<String>) {
    let Some(Value::Array(parts)) = message.get("content") else { return };
    let mut modern: Option<ModernParts<'_>> = None; // built at the first converted part
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let mime = match part {
            Value::Object(p) if matches!(p.get("type"), Some(Value::String(t)) if t == "binary") => match p.get("mimeType") {
                Some(Value::String(m)) => Some((p, m.as_str())),
                _ => None,
            },
            _ => None,
        };
        match mime.and_then(|(p, m)| convert_binary(p, m, warnings).map(|c| (p, c))) {
            Some((p, converted)) => {
                if !modern.get_or_insert_with(|| ModernParts::new(parts)).mirror(&converted, p.get("filename")) {
                    out.push(converted);
                }
            }
            None => out.push(part.clone()),
        }
    }
    message["content"] = Value::Array(out);
}

/// The boundary's inbound message upgrade (snapshots, `RUN_STARTED.input.messages`).
pub(crate) fn upgrade_inbound_message(message: &mut Value, warnings: &mut Vec<String>) {
    normalize_message_nulls(message, warnings);
    let Some(Value::Array(parts)) = message.get("content") else { return };
    if parts.iter().any(|p| p.get("type").and_then(Value::as_str) == Some("binary")) {
        warnings.push(compat_warning("binary input content", "the modern media content parts"));
        upgrade_message_content(message, warnings);
    }
}

/// Which THINKING translator: the boundary mints an id for an orphan continuation once
/// and resets the message id at the message's end; the 0.0.45 shim does neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Boundary,
    Shim0045,
}

/// `THINKING_*` -> `REASONING_*` with generated ids.
struct Thinking {
    flavor: Flavor,
    reasoning_id: Option<String>,
    message_id: Option<String>,
    ids: IdGen,
}

impl Thinking {
    fn new(flavor: Flavor, ids: IdGen) -> Self {
        Thinking { flavor, reasoning_id: None, message_id: None, ids }
    }

    fn continuation(&mut self, from: &str, span: bool, warnings: &mut Vec<String>) -> String {
        let established = if span { &self.reasoning_id } else { &self.message_id };
        if let Some(id) = established {
            return id.clone();
        }
        let minted = (self.ids)();
        if self.flavor == Flavor::Boundary {
            warnings.push(format!(
                "[ag-ui][compat] Minting a messageId ('{minted}') for {from}: no THINKING opener preceded it, so there was no id to continue."
            ));
        }
        minted
    }

    fn warn(&self, from: &str, to: &str, warnings: &mut Vec<String>) {
        warnings.push(match self.flavor {
            Flavor::Boundary => compat_warning(from, to),
            Flavor::Shim0045 => format!("AG-UI is converting {from} to {to}."),
        });
    }

    /// Translate one event (other types pass unchanged).
    fn convert(&mut self, mut event: Value, warnings: &mut Vec<String>) -> Value {
        let ty = EventType::of(&event);
        let Value::Object(o) = &mut event else { return event };
        let set = |o: &mut Map<String, Value>, ty: EventType, id: String| {
            o.insert("type".into(), Value::String(ty.name().into()));
            o.insert("messageId".into(), Value::String(id));
        };
        match ty {
            EventType::ThinkingStart => {
                let id = (self.ids)();
                self.reasoning_id = Some(id.clone());
                let title = o.shift_remove("title");
                self.warn("THINKING_START", "REASONING_START", warnings);
                if let (Some(t), Flavor::Boundary) = (title, self.flavor) {
                    warnings.push(format!(
                        "[ag-ui][compat] Dropping THINKING_START.title {t}: REASONING_START has no title field, so the span's label cannot be carried and nothing downstream can recover it."
                    ));
                }
                set(o, EventType::ReasoningStart, id);
            }
            EventType::ThinkingTextMessageStart => {
                let id = (self.ids)();
                self.message_id = Some(id.clone());
                self.warn("THINKING_TEXT_MESSAGE_START", "REASONING_MESSAGE_START", warnings);
                set(o, EventType::ReasoningMessageStart, id);
                o.insert("role".into(), Value::String("reasoning".into()));
            }
            EventType::ThinkingTextMessageContent => {
                let delta = o.shift_remove("delta");
                self.warn("THINKING_TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", warnings);
                let id = self.continuation("THINKING_TEXT_MESSAGE_CONTENT", false, warnings);
                set(o, EventType::ReasoningMessageContent, id);
                if let Some(d) = delta {
                    o.insert("delta".into(), d);
                }
            }
            EventType::ThinkingTextMessageEnd => {
                let id = self.continuation("THINKING_TEXT_MESSAGE_END", false, warnings);
                if self.flavor == Flavor::Boundary {
                    self.message_id = None;
                }
                self.warn("THINKING_TEXT_MESSAGE_END", "REASONING_MESSAGE_END", warnings);
                set(o, EventType::ReasoningMessageEnd, id);
            }
            EventType::ThinkingEnd => {
                let id = self.continuation("THINKING_END", true, warnings);
                if self.flavor == Flavor::Boundary {
                    self.reasoning_id = None;
                }
                self.warn("THINKING_END", "REASONING_END", warnings);
                set(o, EventType::ReasoningEnd, id);
            }
            _ => {}
        }
        event
    }
}

/// The always-installed inbound translator (`CompatibilityBoundary`). It reads the raw
/// stream: chunks are not expanded here.
pub struct CompatibilityBoundary {
    thinking: Thinking,
    warnings: Vec<String>,
}

impl Default for CompatibilityBoundary {
    fn default() -> Self {
        Self::new(uuid_generator())
    }
}

impl CompatibilityBoundary {
    pub fn new(ids: IdGen) -> Self {
        CompatibilityBoundary { thinking: Thinking::new(Flavor::Boundary, ids), warnings: Vec::new() }
    }

    /// Warnings the reference would print, drained.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// The outgoing run input's messages, as the boundary forwards them.
    pub fn upgrade_input_messages(&mut self, messages: &mut [Value]) {
        for m in messages {
            upgrade_message_content(m, &mut self.warnings);
        }
    }

    /// Translate one inbound event.
    pub fn convert(&mut self, mut event: Value) -> Value {
        let w = &mut self.warnings;
        let ty = EventType::of(&event);
        // An empty context names the event's own type.
        omit_null(&mut event, "rawEvent", "", w);
        if matches!(ty, EventType::RunFinished | EventType::SubagentFinished) {
            omit_null(&mut event, "result", "", w);
        }
        match ty {
            EventType::ToolCallStart | EventType::ToolCallChunk => omit_null(&mut event, "parentMessageId", "", w),
            EventType::RunFinished => omit_null(&mut event, "outcome", "RUN_FINISHED", w),
            EventType::MessagesSnapshot => for_each_in(&mut event, "messages", |m| upgrade_inbound_message(m, w)),
            EventType::RunStarted => {
                if let Some(input) = event.get_mut("input") {
                    normalize_run_input(input, w);
                    for_each_in(input, "messages", |m| upgrade_inbound_message(m, w));
                }
            }
            _ => return self.thinking.convert(event, w),
        }
        event
    }
}

/// `BackwardCompatibility_0_0_57` on one (chunk-expanded) event: `SUBAGENT_*` dropped
/// (`None`), top-level `subagentRunId` removed from the event, from snapshot and run
/// input messages and from `RUN_FINISHED` interrupts.
pub fn strip_subagents(mut event: Value, warnings: &mut Vec<String>) -> Option<Value> {
    let ty = EventType::of(&event);
    if matches!(ty, EventType::SubagentStarted | EventType::SubagentFinished | EventType::SubagentError) {
        warnings.push(format!("AG-UI is dropping {} because the target agent predates subagent support.", ty.name()));
        return None;
    }
    let strip = |v: &mut Value| {
        if let Value::Object(o) = v {
            o.shift_remove("subagentRunId");
        }
    };
    strip(&mut event);
    match ty {
        EventType::MessagesSnapshot => for_each_in(&mut event, "messages", strip),
        EventType::RunFinished => {
            if let Some(outcome) = event.get_mut("outcome").filter(|o| js::truthy(Some(o))) {
                for_each_in(outcome, "interrupts", strip);
            }
        }
        EventType::RunStarted => {
            if let Some(input) = event.get_mut("input").filter(|i| js::truthy(Some(i))) {
                for_each_in(input, "messages", strip);
            }
        }
        _ => {}
    }
    Some(event)
}

/// `BackwardCompatibility_0_0_57` on the outgoing run input's messages.
pub fn strip_input_subagents(messages: &mut [Value]) {
    for m in messages {
        if let Value::Object(o) = m {
            o.shift_remove("subagentRunId");
        }
    }
}

/// `BackwardCompatibility_0_0_39` on one outgoing message: array content flattened to
/// its text parts (other parts dropped with a warning), absent content becomes `""`; a
/// malformed text part leaves the message unchanged.
pub fn flatten_message_content(message: &mut Value, warnings: &mut Vec<String>) {
    let Value::Object(m) = message else { return };
    match m.get("content") {
        Some(Value::Array(parts)) => {
            let is_text_part = |p: &Value| p.get("type").and_then(Value::as_str) == Some("text");
            let is_text = |p: &Value| is_text_part(p) && p.get("text").is_some_and(Value::is_string);
            let malformed = parts.iter().filter(|p| is_text_part(p) && !is_text(p)).count();
            if malformed > 0 {
                warnings.push(format!(
                    "[ag-ui][compat] Not flattening message content for a <=0.0.39 peer: {malformed} content part(s) claim type \"text\" but carry a malformed 'text' value."
                ));
                return;
            }
            let dropped: Vec<String> = parts
                .iter()
                .filter(|p| !is_text(p))
                .map(|p| match p {
                    Value::Object(o) if o.contains_key("type") => js::show(o.get("type")),
                    Value::Object(_) | Value::Array(_) | Value::Null => "object".into(),
                    Value::String(_) => "string".into(),
                    Value::Number(_) => "number".into(),
                    Value::Bool(_) => "boolean".into(),
                })
                .collect();
            if !dropped.is_empty() {
                warnings.push(format!(
                    "[ag-ui][compat] Flattening message content for a <=0.0.39 peer DROPS non-text parts ({}). The peer cannot receive them; upgrade it to keep media content. See the repo-root DEPRECATIONS.md.",
                    dropped.join(", ")
                ));
            }
            let mut text = String::new();
            for p in parts.iter().filter(|p| is_text(p)) {
                js::append(&mut text, p["text"].as_str().unwrap_or_default());
            }
            m.insert("content".into(), Value::String(text));
        }
        None => {
            m.insert("content".into(), Value::String(String::new()));
        }
        _ => {}
    }
}

/// `compare-versions` for `x.y.z` ceilings: numeric segments, missing ones are zero.
pub(crate) fn version_le(v: &str, limit: &str) -> bool {
    let parse = |s: &str| -> Vec<u64> {
        s.trim_start_matches('v').split(['.', '-', '+']).take(3).map(|p| p.parse().unwrap_or(0)).collect()
    };
    let (a, b) = (parse(v), parse(limit));
    for i in 0..3 {
        let (x, y) = (a.get(i).copied().unwrap_or(0), b.get(i).copied().unwrap_or(0));
        if x != y {
            return x < y;
        }
    }
    true
}

/// `compare-versions`' `validate`: a version a peer ceiling may be (`1`, `0.0.39`,
/// `v1.2.3-rc.1+build`, with `x` / `*` wildcards).
pub fn valid_version(v: &str) -> bool {
    let v = v.trim_start_matches(['v', '^', '~', '<', '>', '=']);
    let (core, _) = v.split_once(['-', '+']).unwrap_or((v, ""));
    let parts: Vec<&str> = core.split('.').collect();
    !core.is_empty()
        && parts.len() <= 4
        && parts[0].bytes().all(|b| b.is_ascii_digit())
        && !parts[0].is_empty()
        && parts[1..].iter().all(|p| !p.is_empty() && (p.bytes().all(|b| b.is_ascii_digit()) || *p == "x" || *p == "*"))
}

/// A protocol version as the versioning rules compare it: `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProtocolVersion {
    pub major: u32,
    pub minor: u32,
}

impl ProtocolVersion {
    /// `"1.1"` (exactly two numbers); `None` for anything else.
    pub fn parse(text: &str) -> Option<ProtocolVersion> {
        let (major, minor) = text.split_once('.')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) {
            return None;
        }
        Some(ProtocolVersion { major: major.parse().ok()?, minor: minor.parse().ok()? })
    }

    /// The warning for a producer's `RUN_STARTED.protocolVersion` (absent, or the same as
    /// ours, or older: none), as the reference words it.
    pub fn check_declared(self, declared: Option<&Value>) -> Option<String> {
        let declared = declared?;
        let text = match declared {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if text == self.to_string() {
            return None;
        }
        match ProtocolVersion::parse(&text) {
            None => Some(format!("[ag-ui] The producer declared protocol version '{text}', which this client cannot interpret.")),
            Some(theirs) if theirs > self => Some(format!(
                "[ag-ui] The producer speaks protocol {text}; this client speaks {self}. Unrecognised material will be stripped with warnings."
            )),
            Some(_) => None,
        }
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Which middlewares run, innermost first after the boundary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shims {
    pub boundary: bool,
    pub v0_0_39: bool,
    pub v0_0_45: bool,
    pub v0_0_57: bool,
}

impl Shims {
    /// What `AbstractAgent` installs for a peer declaring `max_protocol_version`.
    pub fn for_peer(max_protocol_version: &str) -> Shims {
        Shims {
            boundary: true,
            v0_0_39: version_le(max_protocol_version, "0.0.39"),
            v0_0_45: version_le(max_protocol_version, "0.0.45"),
            v0_0_57: version_le(max_protocol_version, "0.0.57"),
        }
    }
}

/// The inbound middleware chain: boundary, then (if any shim is installed) chunk
/// expansion and the shims in order 0.0.39, 0.0.45, 0.0.57. Every shim expands chunks
/// before its own work; after the first expansion the others have nothing left to
/// expand, so one expander serves them all.
pub struct LegacyChain {
    shims: Shims,
    boundary: CompatibilityBoundary,
    expander: Option<ChunkExpander>,
    thinking: Option<Thinking>,
    warnings: Vec<String>,
    scratch: Vec<Value>,
}

impl LegacyChain {
    pub fn new(shims: Shims, ids: IdGen) -> Self {
        let any = shims.v0_0_39 || shims.v0_0_45 || shims.v0_0_57;
        let (boundary_ids, shim_ids): (IdGen, IdGen) = {
            let shared = std::sync::Arc::new(std::sync::Mutex::new(ids));
            let a = shared.clone();
            (
                Box::new(move || (a.lock().expect("id generator"))()),
                Box::new(move || (shared.lock().expect("id generator"))()),
            )
        };
        LegacyChain {
            shims,
            boundary: CompatibilityBoundary::new(boundary_ids),
            expander: any.then(ChunkExpander::new),
            thinking: shims.v0_0_45.then(|| Thinking::new(Flavor::Shim0045, shim_ids)),
            warnings: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The chain `AbstractAgent` builds for a peer declaring `max_protocol_version`.
    pub fn for_peer(max_protocol_version: &str) -> Self {
        Self::new(Shims::for_peer(max_protocol_version), uuid_generator())
    }

    /// Warnings the reference would print, drained.
    pub fn take_warnings(&mut self) -> Vec<String> {
        let mut w = Vec::new();
        self.drain_warnings(|_, m| w.push(m));
        w
    }

    /// [`take_warnings`](Self::take_warnings) with the kind of each: the translations and
    /// drops are `Compat`, the chunk expansion's `Chunks`.
    pub fn drain_warnings(&mut self, mut f: impl FnMut(WarningKind, String)) {
        for m in self.boundary.take_warnings() {
            f(WarningKind::Compat, m);
        }
        if let Some(x) = &mut self.expander {
            for m in x.take_warnings() {
                f(WarningKind::Chunks, m);
            }
        }
        for m in self.warnings.drain(..) {
            f(WarningKind::Compat, m);
        }
    }

    /// The outgoing run input's messages as the agent behind the chain receives them
    /// (outermost shim first, the boundary last).
    pub fn prepare_input_messages(&mut self, messages: &mut [Value]) {
        if self.shims.v0_0_57 {
            strip_input_subagents(messages);
        }
        if self.shims.v0_0_39 {
            for m in messages.iter_mut() {
                flatten_message_content(m, &mut self.warnings);
            }
        }
        if self.shims.boundary {
            self.boundary.upgrade_input_messages(messages);
        }
    }

    /// Convert one inbound event into `out`.
    pub fn push_into(&mut self, event: Value, out: &mut Vec<Value>) -> Result<(), StreamError> {
        let event = if self.shims.boundary { self.boundary.convert(event) } else { event };
        let mut batch = std::mem::take(&mut self.scratch);
        match &mut self.expander {
            Some(x) => x.push_into(event, &mut batch)?,
            None => batch.push(event),
        }
        for e in batch.drain(..) {
            let e = match &mut self.thinking {
                Some(t) => t.convert(e, &mut self.warnings),
                None => e,
            };
            if self.shims.v0_0_57 {
                out.extend(strip_subagents(e, &mut self.warnings));
            } else {
                out.push(e);
            }
        }
        self.scratch = batch;
        Ok(())
    }

    pub fn push(&mut self, event: Value) -> Result<Vec<Value>, StreamError> {
        let mut out = Vec::new();
        self.push_into(event, &mut out)?;
        Ok(out)
    }
}
