//! The schema stage: each event held to the protocol's typed schema, field by field, before
//! chunk expansion and verification (the reference client's `enforceEvents`, and the
//! specification's processing rules where the two differ).
//!
//! - An event of a type the protocol does not describe is dropped with a warning.
//! - Material the schema does not describe is stripped with a warning naming its path
//!   (`/futureProp`, `/messages/0/content/1`): an unknown member of an object (JSON Patch
//!   operations are open: their extra members stay), an item or optional field whose
//!   discriminator names no known variant (an outcome `{"type": "paused"}`, a content
//!   part `{"type": "hologram"}`, a patch operation `increment`), and an unknown member
//!   of a closed string set (a message role `narrator`). When such material sits in a
//!   required place, the object holding it is what is stripped; an event left without a
//!   required field this way is dropped.
//! - A malformed value in a known field (`delta: 42`, `outcome: [...]`, a `null` where
//!   the field is optional, a missing required field) is fatal: a
//!   [`Stage::Schema`](super::Stage::Schema) error naming the field, whose message carries
//!   the reference's own report of it (a zod issue).
//!
//! The walk reads each member once and allocates nothing for an event that is already
//! valid; paths are built only for a warning or an error.

use super::{Stage, StreamError, Warning, WarningKind};
use serde_json::{Map, Value};

/// Largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE: i64 = 9_007_199_254_740_991;

/// The type of a field, as the protocol's schema declares it.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    /// A JSON Pointer (RFC 6901): `""` or `/`-prefixed tokens, `~` only as `~0` / `~1`.
    Pointer,
    /// An integer within `[min, MAX_SAFE]`.
    Int(i64),
    Bool,
    /// Any value (required: present).
    Any,
    /// Any value but `null`.
    NotNull,
    /// A JSON object (metadata, activity content, a response schema).
    Object,
    Literal(&'static str),
    /// A closed string set: a string outside it is unrecognised material.
    Enum(&'static [&'static str]),
    /// An array of items (at least `min`).
    Array(&'static Ty, usize),
    Shape(&'static Shape),
    Union(&'static Union),
    /// A message or tool result's content: a string, or an array of content parts.
    TextOrParts,
    /// `RunAgentInput.state`: any value; `null` reads as absent.
    State,
}

pub(crate) struct Field {
    name: &'static str,
    ty: Ty,
    required: bool,
}

/// An object's declared members. `open`: members it does not declare are kept.
struct Shape {
    fields: &'static [Field],
    open: bool,
    /// Members added with this value when absent (zod's `.default()`).
    defaults: &'static [&'static str],
}

/// A discriminated union: the member whose `key` holds each name.
struct Union {
    key: &'static str,
    members: &'static [(&'static str, &'static Shape)],
}

impl Shape {
    fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

const fn req(name: &'static str, ty: Ty) -> Field {
    Field { name, ty, required: true }
}

const fn opt(name: &'static str, ty: Ty) -> Field {
    Field { name, ty, required: false }
}

const fn closed(fields: &'static [Field]) -> Shape {
    Shape { fields, open: false, defaults: &[] }
}

// -- the schema -----------------------------------------------------------------------
// Transcribed from the protocol's JSON schema as the reference client's zod schemas hold it
// (`@ag-ui/core` `schemas.ts`). `type` is matched by the dispatch; every event declares it.

const TIMESTAMP: Field = opt("timestamp", Ty::Int(-MAX_SAFE));
const RAW_EVENT: Field = opt("rawEvent", Ty::NotNull);
const METADATA: Field = opt("metadata", Ty::Object);
const TAG: Field = opt("subagentRunId", Ty::Str);
const TYPE: Field = req("type", Ty::Any);

macro_rules! event {
    // An event carrying subagent attribution.
    (attributed $($f:expr),* $(,)?) => {
        closed(&[TYPE, TIMESTAMP, RAW_EVENT, METADATA, TAG, $($f),*])
    };
    // A run-scoped event (no attribution) or one whose tag is its own field.
    (scoped $($f:expr),* $(,)?) => {
        closed(&[TYPE, TIMESTAMP, RAW_EVENT, METADATA, $($f),*])
    };
}

const TEXT_ROLES: &[&str] = &["developer", "system", "assistant", "user"];
const STR_ARRAY: Ty = Ty::Array(&Ty::Str, 0);

static TEXT_PART: Shape = closed(&[req("type", Ty::Literal("text")), opt("id", Ty::Str), req("text", Ty::Str), opt("metadata", Ty::NotNull)]);
static DATA_SOURCE: Shape = closed(&[req("type", Ty::Literal("data")), req("value", Ty::Str), req("mimeType", Ty::Str)]);
static URL_SOURCE: Shape = closed(&[req("type", Ty::Literal("url")), req("value", Ty::Str), opt("mimeType", Ty::Str)]);
static FILE_SOURCE: Shape = closed(&[
    req("type", Ty::Literal("file")),
    req("value", Ty::Str),
    opt("provider", Ty::Str),
    opt("mimeType", Ty::Str),
]);
static SOURCE: Union = Union { key: "type", members: &[("data", &DATA_SOURCE), ("url", &URL_SOURCE), ("file", &FILE_SOURCE)] };

macro_rules! media_part {
    ($kind:literal) => {
        closed(&[req("type", Ty::Literal($kind)), opt("id", Ty::Str), req("source", Ty::Union(&SOURCE)), opt("metadata", Ty::NotNull)])
    };
}
static IMAGE_PART: Shape = media_part!("image");
static AUDIO_PART: Shape = media_part!("audio");
static VIDEO_PART: Shape = media_part!("video");
static DOCUMENT_PART: Shape = media_part!("document");
static CONTENT_PART: Union = Union {
    key: "type",
    members: &[("text", &TEXT_PART), ("image", &IMAGE_PART), ("audio", &AUDIO_PART), ("video", &VIDEO_PART), ("document", &DOCUMENT_PART)],
};

macro_rules! op {
    ($name:literal $(, $f:expr)*) => {
        Shape { fields: &[req("op", Ty::Literal($name)), $($f),*], open: true, defaults: &[] }
    };
}
static ADD: Shape = op!("add", req("path", Ty::Pointer), req("value", Ty::Any));
static REMOVE: Shape = op!("remove", req("path", Ty::Pointer));
static REPLACE: Shape = op!("replace", req("path", Ty::Pointer), req("value", Ty::Any));
static MOVE: Shape = op!("move", req("from", Ty::Pointer), req("path", Ty::Pointer));
static COPY: Shape = op!("copy", req("from", Ty::Pointer), req("path", Ty::Pointer));
static TEST: Shape = op!("test", req("path", Ty::Pointer), req("value", Ty::Any));
static OPERATION: Union = Union {
    key: "op",
    members: &[("add", &ADD), ("remove", &REMOVE), ("replace", &REPLACE), ("move", &MOVE), ("copy", &COPY), ("test", &TEST)],
};
// The element types as statics: a `const` may point at a static, not at a temporary
// (Rust 1.88 does not promote an enum built from a reference to a static).
static OPERATION_TY: Ty = Ty::Union(&OPERATION);
const PATCH: Ty = Ty::Array(&OPERATION_TY, 0);

static FUNCTION_CALL: Shape = closed(&[req("name", Ty::Str), req("arguments", Ty::Str)]);
static TOOL_CALL: Shape = closed(&[
    req("id", Ty::Str),
    req("type", Ty::Literal("function")),
    req("function", Ty::Shape(&FUNCTION_CALL)),
    opt("encryptedValue", Ty::Str),
    METADATA,
]);

macro_rules! message {
    ($role:literal, $content:expr $(, $f:expr)*) => {
        closed(&[
            TAG,
            req("id", Ty::Str),
            req("role", Ty::Literal($role)),
            opt("name", Ty::Str),
            opt("encryptedValue", Ty::Str),
            METADATA,
            $content,
            $($f),*
        ])
    };
}
static DEVELOPER_MESSAGE: Shape = message!("developer", req("content", Ty::Str));
static SYSTEM_MESSAGE: Shape = message!("system", req("content", Ty::Str));
static ASSISTANT_MESSAGE: Shape = message!("assistant", opt("content", Ty::Str), opt("toolCalls", Ty::Array(&Ty::Shape(&TOOL_CALL), 0)));
static USER_MESSAGE: Shape = message!("user", req("content", Ty::TextOrParts));
static TOOL_MESSAGE: Shape = closed(&[
    TAG,
    req("id", Ty::Str),
    req("role", Ty::Literal("tool")),
    req("content", Ty::TextOrParts),
    req("toolCallId", Ty::Str),
    opt("error", Ty::Str),
    opt("encryptedValue", Ty::Str),
    METADATA,
]);
static ACTIVITY_MESSAGE: Shape = closed(&[
    TAG,
    req("id", Ty::Str),
    req("role", Ty::Literal("activity")),
    req("activityType", Ty::Str),
    req("content", Ty::Object),
    METADATA,
]);
static REASONING_MESSAGE: Shape = closed(&[
    TAG,
    req("id", Ty::Str),
    req("role", Ty::Literal("reasoning")),
    req("content", Ty::Str),
    opt("encryptedValue", Ty::Str),
    METADATA,
]);
static MESSAGE: Union = Union {
    key: "role",
    members: &[
        ("developer", &DEVELOPER_MESSAGE),
        ("system", &SYSTEM_MESSAGE),
        ("assistant", &ASSISTANT_MESSAGE),
        ("user", &USER_MESSAGE),
        ("tool", &TOOL_MESSAGE),
        ("activity", &ACTIVITY_MESSAGE),
        ("reasoning", &REASONING_MESSAGE),
    ],
};
static MESSAGE_TY: Ty = Ty::Union(&MESSAGE);
const MESSAGES: Ty = Ty::Array(&MESSAGE_TY, 0);

static TOOL: Shape = closed(&[req("name", Ty::Str), req("description", Ty::Str), opt("parameters", Ty::NotNull), METADATA]);
static CONTEXT: Shape = closed(&[req("description", Ty::Str), req("value", Ty::Str)]);
static RESUME_ENTRY: Shape = closed(&[
    req("interruptId", Ty::Str),
    req("status", Ty::Enum(&["resolved", "cancelled"])),
    opt("payload", Ty::NotNull),
    METADATA,
]);
/// The run input (`RUN_STARTED.input`, and what a client sends).
static RUN_AGENT_INPUT: Shape = Shape {
    fields: &[
        req("threadId", Ty::Str),
        req("runId", Ty::Str),
        opt("protocolVersion", Ty::Str),
        opt("parentRunId", Ty::Str),
        opt("state", Ty::State),
        req("messages", MESSAGES),
        opt("tools", Ty::Array(&Ty::Shape(&TOOL), 0)),
        opt("context", Ty::Array(&Ty::Shape(&CONTEXT), 0)),
        opt("forwardedProps", Ty::NotNull),
        opt("resume", Ty::Array(&Ty::Shape(&RESUME_ENTRY), 0)),
    ],
    open: false,
    defaults: &["tools", "context"],
};

static INTERRUPT: Shape = closed(&[
    TAG,
    req("id", Ty::Str),
    req("reason", Ty::Str),
    opt("message", Ty::Str),
    opt("toolCallId", Ty::Str),
    opt("responseSchema", Ty::Object),
    opt("expiresAt", Ty::Str),
    METADATA,
]);
static RUN_SUCCESS: Shape = closed(&[req("type", Ty::Literal("success")), opt("pendingToolCallIds", STR_ARRAY)]);
static RUN_INTERRUPT: Shape = closed(&[req("type", Ty::Literal("interrupt")), req("interrupts", Ty::Array(&Ty::Shape(&INTERRUPT), 1))]);
static RUN_CANCELLED: Shape = closed(&[req("type", Ty::Literal("cancelled"))]);
static RUN_OUTCOME: Union = Union { key: "type", members: &[("success", &RUN_SUCCESS), ("interrupt", &RUN_INTERRUPT), ("cancelled", &RUN_CANCELLED)] };
const COUNT: Ty = Ty::Int(0);
static TOKEN_USAGE: Shape = closed(&[
    opt("provider", Ty::Str),
    opt("model", Ty::Str),
    opt("inputTokens", COUNT),
    opt("outputTokens", COUNT),
    opt("totalTokens", COUNT),
    opt("reasoningTokens", COUNT),
    opt("cachedInputTokens", COUNT),
    opt("cacheWriteInputTokens", COUNT),
]);
static TOKEN_USAGE_TY: Ty = Ty::Shape(&TOKEN_USAGE);
const USAGE: Ty = Ty::Array(&TOKEN_USAGE_TY, 0);
static SUBAGENT_SUCCESS: Shape = closed(&[req("type", Ty::Literal("success"))]);
static SUBAGENT_SUSPENDED: Shape = closed(&[req("type", Ty::Literal("suspended")), opt("interruptIds", STR_ARRAY)]);
static SUBAGENT_OUTCOME: Union = Union { key: "type", members: &[("success", &SUBAGENT_SUCCESS), ("suspended", &SUBAGENT_SUSPENDED)] };

static TEXT_MESSAGE_START: Shape =
    event!(attributed req("messageId", Ty::Str), opt("role", Ty::Enum(TEXT_ROLES)), opt("name", Ty::Str));
static TEXT_MESSAGE_CONTENT: Shape = event!(attributed req("messageId", Ty::Str), req("delta", Ty::Str));
static TEXT_MESSAGE_END: Shape = event!(attributed req("messageId", Ty::Str));
static TEXT_MESSAGE_CHUNK: Shape = event!(attributed
    opt("messageId", Ty::Str),
    opt("role", Ty::Enum(TEXT_ROLES)),
    opt("delta", Ty::Str),
    opt("name", Ty::Str),
);
static TOOL_CALL_START: Shape =
    event!(attributed req("toolCallId", Ty::Str), req("toolCallName", Ty::Str), opt("parentMessageId", Ty::Str));
static TOOL_CALL_ARGS: Shape = event!(attributed req("toolCallId", Ty::Str), req("delta", Ty::Str));
static TOOL_CALL_END: Shape = event!(attributed req("toolCallId", Ty::Str));
static TOOL_CALL_CHUNK: Shape = event!(attributed
    opt("toolCallId", Ty::Str),
    opt("toolCallName", Ty::Str),
    opt("parentMessageId", Ty::Str),
    opt("delta", Ty::Str),
);
static TOOL_CALL_RESULT: Shape = event!(attributed
    req("messageId", Ty::Str),
    req("toolCallId", Ty::Str),
    req("content", Ty::TextOrParts),
    opt("role", Ty::Literal("tool")),
);
static STATE_SNAPSHOT: Shape = event!(attributed req("snapshot", Ty::Any));
static STATE_DELTA: Shape = event!(attributed req("delta", PATCH));
static MESSAGES_SNAPSHOT: Shape = event!(scoped req("messages", MESSAGES));
static ACTIVITY_SNAPSHOT: Shape = event!(attributed
    req("messageId", Ty::Str),
    req("activityType", Ty::Str),
    req("content", Ty::Object),
    opt("replace", Ty::Bool),
);
static ACTIVITY_DELTA: Shape = event!(attributed req("messageId", Ty::Str), req("activityType", Ty::Str), req("patch", PATCH));
static RAW: Shape = event!(attributed req("event", Ty::Any), opt("source", Ty::Str));
static CUSTOM: Shape = event!(attributed req("name", Ty::Str), req("value", Ty::Any));
static RUN_STARTED: Shape = event!(scoped
    req("threadId", Ty::Str),
    req("runId", Ty::Str),
    opt("protocolVersion", Ty::Str),
    opt("parentRunId", Ty::Str),
    opt("input", Ty::Shape(&RUN_AGENT_INPUT)),
);
static RUN_FINISHED: Shape = event!(scoped
    req("threadId", Ty::Str),
    req("runId", Ty::Str),
    opt("result", Ty::NotNull),
    opt("outcome", Ty::Union(&RUN_OUTCOME)),
    opt("usage", USAGE),
);
static RUN_ERROR: Shape = event!(scoped req("message", Ty::Str), opt("code", Ty::Str), opt("usage", USAGE));
static STEP: Shape = event!(attributed req("stepName", Ty::Str));
static REASONING_SPAN: Shape = event!(attributed req("messageId", Ty::Str));
static REASONING_MESSAGE_START: Shape = event!(attributed req("messageId", Ty::Str), req("role", Ty::Literal("reasoning")));
static REASONING_MESSAGE_CONTENT: Shape = event!(attributed req("messageId", Ty::Str), req("delta", Ty::Str));
static REASONING_MESSAGE_CHUNK: Shape = event!(attributed opt("messageId", Ty::Str), opt("delta", Ty::Str));
static REASONING_ENCRYPTED_VALUE: Shape = event!(attributed
    req("subtype", Ty::Enum(&["tool-call", "message"])),
    req("entityId", Ty::Str),
    req("encryptedValue", Ty::Str),
);
static SUBAGENT_STARTED: Shape = event!(scoped
    req("subagentRunId", Ty::Str),
    req("name", Ty::Str),
    opt("description", Ty::Str),
    opt("parentSubagentRunId", Ty::Str),
    opt("parentToolCallId", Ty::Str),
    opt("parentMessageId", Ty::Str),
);
static SUBAGENT_FINISHED: Shape = event!(scoped
    req("subagentRunId", Ty::Str),
    opt("result", Ty::NotNull),
    opt("outcome", Ty::Union(&SUBAGENT_OUTCOME)),
);
static SUBAGENT_ERROR: Shape = event!(scoped req("subagentRunId", Ty::Str), req("message", Ty::Str), opt("code", Ty::Str));

/// The schema of a 1.0 event type (`None`: a type the protocol does not describe).
fn shape_of(ty: super::EventType) -> Option<&'static Shape> {
    use super::EventType as E;
    Some(match ty {
        E::TextMessageStart => &TEXT_MESSAGE_START,
        E::TextMessageContent => &TEXT_MESSAGE_CONTENT,
        E::TextMessageEnd => &TEXT_MESSAGE_END,
        E::TextMessageChunk => &TEXT_MESSAGE_CHUNK,
        E::ToolCallStart => &TOOL_CALL_START,
        E::ToolCallArgs => &TOOL_CALL_ARGS,
        E::ToolCallEnd => &TOOL_CALL_END,
        E::ToolCallChunk => &TOOL_CALL_CHUNK,
        E::ToolCallResult => &TOOL_CALL_RESULT,
        E::StateSnapshot => &STATE_SNAPSHOT,
        E::StateDelta => &STATE_DELTA,
        E::MessagesSnapshot => &MESSAGES_SNAPSHOT,
        E::ActivitySnapshot => &ACTIVITY_SNAPSHOT,
        E::ActivityDelta => &ACTIVITY_DELTA,
        E::Raw => &RAW,
        E::Custom => &CUSTOM,
        E::RunStarted => &RUN_STARTED,
        E::RunFinished => &RUN_FINISHED,
        E::RunError => &RUN_ERROR,
        E::StepStarted | E::StepFinished => &STEP,
        E::ReasoningStart | E::ReasoningEnd | E::ReasoningMessageEnd => &REASONING_SPAN,
        E::ReasoningMessageStart => &REASONING_MESSAGE_START,
        E::ReasoningMessageContent => &REASONING_MESSAGE_CONTENT,
        E::ReasoningMessageChunk => &REASONING_MESSAGE_CHUNK,
        E::ReasoningEncryptedValue => &REASONING_ENCRYPTED_VALUE,
        E::SubagentStarted => &SUBAGENT_STARTED,
        E::SubagentFinished => &SUBAGENT_FINISHED,
        E::SubagentError => &SUBAGENT_ERROR,
        E::Unknown
        | E::ThinkingStart
        | E::ThinkingEnd
        | E::ThinkingTextMessageStart
        | E::ThinkingTextMessageContent
        | E::ThinkingTextMessageEnd => return None,
    })
}

// -- the walk -------------------------------------------------------------------------

/// Where a value sits, as a chain of steps on the stack (rendered only when needed).
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// `/a/0/b`, the reference's spelling (keys are not escaped).
    fn pointer(&self) -> String {
        let mut out = String::new();
        self.write_pointer(&mut out);
        out
    }

    fn write_pointer(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, k) => {
                parent.write_pointer(out);
                out.push('/');
                out.push_str(k);
            }
            Path::Index(parent, i) => {
                parent.write_pointer(out);
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }

    /// `$.a[0].b`, the project's spelling of a field (as the decoders' `field`).
    fn field(&self) -> String {
        let mut out = String::from("$");
        self.write_field(&mut out);
        out
    }

    fn write_field(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, k) => {
                parent.write_field(out);
                out.push('.');
                out.push_str(k);
            }
            Path::Index(parent, i) => {
                parent.write_field(out);
                out.push_str(&format!("[{i}]"));
            }
        }
    }

    /// The zod issue path (`["a",0,"b"]`).
    fn steps(&self, out: &mut Vec<Value>) {
        match self {
            Path::Root => {}
            Path::Key(parent, k) => {
                parent.steps(out);
                out.push(Value::String((*k).to_string()));
            }
            Path::Index(parent, i) => {
                parent.steps(out);
                out.push(Value::from(*i));
            }
        }
    }
}

/// A malformed value: where, and the reference's issue for it.
struct Issue {
    field: String,
    zod: Value,
}

impl Issue {
    fn new(path: &Path<'_>, code: &str, message: String, extra: &[(&str, Value)]) -> Issue {
        let mut steps = Vec::new();
        path.steps(&mut steps);
        let mut zod = Map::new();
        zod.insert("code".into(), Value::String(code.into()));
        for (k, v) in extra {
            zod.insert((*k).into(), v.clone());
        }
        zod.insert("path".into(), Value::Array(steps));
        zod.insert("message".into(), Value::String(message));
        Issue { field: path.field(), zod: Value::Object(zod) }
    }

    /// zod's `invalid_type`.
    fn invalid_type(path: &Path<'_>, expected: &str, got: Option<&Value>) -> Issue {
        let message = format!("Invalid input: expected {expected}, received {}", received(got));
        Issue::new(path, "invalid_type", message, &[("expected", Value::String(expected.into()))])
    }

    /// zod's `custom` (a refinement failed).
    fn custom(path: &Path<'_>) -> Issue {
        Issue::new(path, "custom", "Invalid input".into(), &[])
    }

    fn values(path: &Path<'_>, values: &[&str], message: String) -> Issue {
        let vs = Value::Array(values.iter().map(|v| Value::String((*v).into())).collect());
        Issue::new(path, "invalid_value", message, &[("values", vs)])
    }
}

/// How zod names what it received.
fn received(v: Option<&Value>) -> &'static str {
    match v {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

/// What became of a value.
enum Walked {
    Kept,
    /// Unrecognisable (no known variant, an unknown member of a closed set): the place
    /// holding it strips it, or, when required there, becomes unrecognisable itself.
    Unknown,
}

/// What the walk strips: their paths, in order; and the required place whose
/// unrecognised material made its holder unrecognisable.
struct Cx {
    stripped: Vec<String>,
    unknown_at: Option<String>,
    /// An optional field holding `null` is removed, not an error (what a client does to
    /// the run input it sends: the reference's `omitOptionalNulls`).
    omit_nulls: bool,
}

type Step = Result<Walked, Issue>;

fn walk(v: &mut Value, ty: Ty, path: &Path<'_>, cx: &mut Cx) -> Step {
    match ty {
        Ty::Str => match v {
            Value::String(_) => Ok(Walked::Kept),
            _ => Err(Issue::invalid_type(path, "string", Some(v))),
        },
        Ty::Pointer => match v {
            Value::String(s) if is_pointer(s) => Ok(Walked::Kept),
            Value::String(_) => Err(Issue::new(
                path,
                "invalid_format",
                "Invalid string: must match pattern /^(\\/([^/~]|~[01])*)*$/".into(),
                &[("format", Value::String("regex".into())), ("pattern", Value::String("/^(\\/([^/~]|~[01])*)*$/".into()))],
            )),
            _ => Err(Issue::invalid_type(path, "string", Some(v))),
        },
        Ty::Int(min) => int(v, min, path),
        Ty::Bool => match v {
            Value::Bool(_) => Ok(Walked::Kept),
            _ => Err(Issue::invalid_type(path, "boolean", Some(v))),
        },
        Ty::Any | Ty::State => Ok(Walked::Kept),
        Ty::NotNull => match v {
            Value::Null => Err(Issue::custom(path)),
            _ => Ok(Walked::Kept),
        },
        Ty::Object => match v {
            Value::Object(_) => Ok(Walked::Kept),
            _ => Err(Issue::custom(path)),
        },
        Ty::Literal(want) => match v {
            Value::String(s) if s == want => Ok(Walked::Kept),
            _ => Err(Issue::values(path, &[want], format!("Invalid input: expected \"{want}\""))),
        },
        Ty::Enum(set) => match v {
            Value::String(s) if set.contains(&s.as_str()) => Ok(Walked::Kept),
            // An unknown member of a closed set is unrecognised material, not a malformed
            // value (the specification's rule; the reference client rejects it).
            Value::String(_) => Ok(Walked::Unknown),
            _ => {
                let quoted: Vec<String> = set.iter().map(|s| format!("\"{s}\"")).collect();
                Err(Issue::values(path, set, format!("Invalid option: expected one of {}", quoted.join("|"))))
            }
        },
        Ty::Array(item, min) => {
            let Value::Array(items) = v else { return Err(Issue::invalid_type(path, "array", Some(v))) };
            array(items, *item, path, cx)?;
            if items.len() < min {
                return Err(Issue::new(
                    path,
                    "too_small",
                    format!("Too small: expected array to have >={min} items"),
                    &[("origin", Value::String("array".into())), ("minimum", Value::from(min))],
                ));
            }
            Ok(Walked::Kept)
        }
        Ty::Shape(shape) => match v {
            Value::Object(m) => object(m, shape, path, cx),
            _ => Err(Issue::invalid_type(path, "object", Some(v))),
        },
        Ty::Union(u) => {
            let Value::Object(m) = v else { return Err(Issue::invalid_type(path, "object", Some(v))) };
            let Some(shape) = m.get(u.key).and_then(Value::as_str).and_then(|k| u.members.iter().find(|(name, _)| *name == k)).map(|(_, s)| *s)
            else {
                return Ok(Walked::Unknown);
            };
            object(m, shape, path, cx)
        }
        Ty::TextOrParts => match v {
            Value::String(_) => Ok(Walked::Kept),
            Value::Array(items) => array(items, Ty::Union(&CONTENT_PART), path, cx).map(|()| Walked::Kept),
            _ => Err(Issue::new(path, "invalid_union", "Invalid input".into(), &[])),
        },
    }
}

/// Each item walked; the unrecognisable ones stripped.
fn array(items: &mut Vec<Value>, ty: Ty, path: &Path<'_>, cx: &mut Cx) -> Result<(), Issue> {
    let mut unknown: Vec<usize> = Vec::new();
    for (i, item) in items.iter_mut().enumerate() {
        if let Walked::Unknown = walk(item, ty, &Path::Index(path, i), cx)? {
            cx.unknown_at = None;
            cx.stripped.push(Path::Index(path, i).pointer());
            unknown.push(i);
        }
    }
    if !unknown.is_empty() {
        let mut i = 0;
        items.retain(|_| {
            let keep = unknown.binary_search(&i).is_err();
            i += 1;
            keep
        });
    }
    Ok(())
}

/// An object held to `shape`: undeclared members stripped (kept when the shape is open),
/// each declared one walked, the required ones present.
fn object(m: &mut Map<String, Value>, shape: &Shape, path: &Path<'_>, cx: &mut Cx) -> Step {
    let mut outcome: Step = Ok(Walked::Kept);
    m.retain(|key, value| {
        if !matches!(outcome, Ok(Walked::Kept)) {
            return true;
        }
        let Some(field) = shape.field(key) else {
            if !shape.open {
                cx.stripped.push(Path::Key(path, key).pointer());
            }
            return shape.open;
        };
        if value.is_null() && (matches!(field.ty, Ty::State) || (cx.omit_nulls && !field.required)) {
            return false;
        }
        match walk(value, field.ty, &Path::Key(path, key), cx) {
            Ok(Walked::Kept) => true,
            Ok(Walked::Unknown) if !field.required => {
                cx.unknown_at = None;
                cx.stripped.push(Path::Key(path, key).pointer());
                false
            }
            other => {
                if matches!(other, Ok(Walked::Unknown)) && cx.unknown_at.is_none() {
                    cx.unknown_at = Some(Path::Key(path, key).pointer());
                }
                outcome = other;
                true
            }
        }
    });
    if !matches!(outcome, Ok(Walked::Kept)) {
        return outcome;
    }
    for field in shape.fields {
        if field.required && !m.contains_key(field.name) {
            return Err(missing(field, &Path::Key(path, field.name)));
        }
    }
    for name in shape.defaults {
        if !m.contains_key(*name) {
            m.insert((*name).to_string(), Value::Array(Vec::new()));
        }
    }
    Ok(Walked::Kept)
}

/// The issue of a required field that is absent.
fn missing(field: &Field, path: &Path<'_>) -> Issue {
    let expected = match field.ty {
        Ty::Str | Ty::Pointer => "string",
        Ty::Int(_) => "number",
        Ty::Bool => "boolean",
        Ty::Array(..) => "array",
        Ty::Shape(_) | Ty::Union(_) => "object",
        Ty::Literal(want) => return Issue::values(path, &[want], format!("Invalid input: expected \"{want}\"")),
        Ty::Enum(set) => {
            let quoted: Vec<String> = set.iter().map(|s| format!("\"{s}\"")).collect();
            return Issue::values(path, set, format!("Invalid option: expected one of {}", quoted.join("|")));
        }
        Ty::TextOrParts => return Issue::new(path, "invalid_union", "Invalid input".into(), &[]),
        Ty::Any | Ty::NotNull | Ty::Object | Ty::State => return Issue::custom(path),
    };
    Issue::invalid_type(path, expected, None)
}

/// `z.int().min(min).max(MAX_SAFE)`.
fn int(v: &Value, min: i64, path: &Path<'_>) -> Step {
    let Value::Number(n) = v else { return Err(Issue::invalid_type(path, "number", Some(v))) };
    let x = if let Some(i) = n.as_i64() {
        i as f64
    } else if n.as_u64().is_some() {
        f64::INFINITY
    } else {
        match n.as_f64() {
            Some(f) if f.is_finite() && f.fract() == 0.0 => f,
            Some(f) if f.is_infinite() => f,
            _ => {
                return Err(Issue::new(
                    path,
                    "invalid_type",
                    "Invalid input: expected int, received number".into(),
                    &[("expected", Value::String("int".into())), ("format", Value::String("safeint".into()))],
                ))
            }
        }
    };
    if x > MAX_SAFE as f64 {
        return Err(Issue::new(
            path,
            "too_big",
            format!("Too big: expected int to be <{MAX_SAFE}"),
            &[("maximum", Value::from(MAX_SAFE)), ("origin", Value::String("int".into()))],
        ));
    }
    if x < min as f64 {
        return Err(Issue::new(
            path,
            "too_small",
            format!("Too small: expected number to be >={min}"),
            &[("origin", Value::String("number".into())), ("minimum", Value::from(min))],
        ));
    }
    Ok(Walked::Kept)
}

/// The JSON Pointer pattern of the schema: `^(/([^/~]|~[01])*)*$`.
fn is_pointer(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.is_empty() && b[0] != b'/' {
        return false;
    }
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'~', &b[i..]) {
        if !matches!(b.get(i + at + 1), Some(b'0' | b'1')) {
            return false;
        }
        i += at + 2;
    }
    true
}

/// A member of an event read without an event object ([`super::event::Plain`]).
pub(crate) enum Scalar<'a> {
    Str(&'a str),
    Int(i64),
    /// A nested value, parsed on its own.
    Value(&'a mut Value),
    /// An array or an object, not read: kept where any such value is.
    Nested,
}

/// Whether the stage keeps member `name` holding `v` of an event of type `ty` exactly as it
/// is (declared, well-formed, nothing in it to strip): a plain event takes no other member,
/// so that [`check_event`] would pass it unchanged and quietly.
pub(crate) fn keeps(field: &Field, v: Scalar<'_>) -> bool {
    match (field.ty, v) {
        (ty, Scalar::Value(v)) => {
            let mut cx = Cx { stripped: Vec::new(), unknown_at: None, omit_nulls: false };
            !(v.is_null() && matches!(ty, Ty::State)) && matches!(walk(v, ty, &Path::Root, &mut cx), Ok(Walked::Kept)) && cx.stripped.is_empty()
        }
        (ty, v) => keeps_scalar(ty, &v),
    }
}

/// The scalar cases of [`walk`]: whether it keeps a string or an integer where `ty` is
/// declared, as it is and quietly.
fn keeps_scalar(ty: Ty, v: &Scalar<'_>) -> bool {
    match (ty, v) {
        (Ty::Str | Ty::TextOrParts | Ty::Any | Ty::NotNull, Scalar::Str(_)) => true,
        (Ty::Pointer, Scalar::Str(s)) => is_pointer(s),
        (Ty::Literal(want), Scalar::Str(s)) => *s == want,
        (Ty::Enum(set), Scalar::Str(s)) => set.contains(s),
        (Ty::Int(min), Scalar::Int(i)) => (min..=MAX_SAFE).contains(i),
        (Ty::Any | Ty::NotNull, Scalar::Int(_)) => true,
        (Ty::Any | Ty::State | Ty::NotNull, Scalar::Nested) => true,
        _ => false,
    }
}

/// [`keeps`] of a nested member given as its JSON text in the compact form (an event's
/// free-form member such as `usage`), read by the event scanner instead of parsed into a
/// value: `true` when [`walk`] would keep it as it is, quietly, at most `max_depth` levels
/// deep. Only arrays and closed objects of strings and integers are read so (each name
/// once, every required one present); `false` leaves the member to the parse and the walk,
/// which decide everything else. The caller has checked the text for the kept range.
pub(crate) fn keeps_text(field: &Field, text: &str, max_depth: usize) -> bool {
    text_kept(field.ty, text, max_depth)
}

/// The member `name` events of type `ty` declare (for [`keeps`] and [`keeps_text`]; a
/// reader of many events looks it up once).
pub(crate) fn field(ty: super::EventType, name: &str) -> Option<&'static Field> {
    shape_of(ty).and_then(|s| s.field(name))
}

fn text_kept(ty: Ty, text: &str, depth: usize) -> bool {
    use super::event::{nested_end, scan_flat};
    if depth == 0 {
        return false;
    }
    match ty {
        Ty::Array(item, min) => {
            let b = text.as_bytes();
            if b.first() != Some(&b'[') || b.last() != Some(&b']') {
                return false;
            }
            let (mut i, mut n) = (1, 0);
            if b.get(1) != Some(&b']') {
                loop {
                    // Items are arrays or objects here (anything else is the walk's).
                    if !matches!(b.get(i), Some(b'[' | b'{')) {
                        return false;
                    }
                    let Some(end) = nested_end(text, i) else { return false };
                    if !text_kept(*item, &text[i..end], depth - 1) {
                        return false;
                    }
                    n += 1;
                    match b.get(end) {
                        Some(b',') => i = end + 1,
                        Some(b']') if end + 1 == b.len() => break,
                        _ => return false,
                    }
                }
            } else if b.len() != 2 {
                return false;
            }
            n >= min
        }
        Ty::Shape(shape) if !shape.open && shape.defaults.is_empty() && shape.fields.len() <= 64 => {
            // The fields seen, by their place in the shape.
            let mut seen = 0u64;
            let read = scan_flat(text, |m| {
                let at = shape.fields.iter().position(|f| f.name == m.name)?;
                if seen & (1 << at) != 0 {
                    return None;
                }
                seen |= 1 << at;
                let ty = shape.fields[at].ty;
                let kept = match (m.raw, m.text.as_bytes().first()) {
                    (Some(_), _) => keeps_scalar(ty, &Scalar::Str(&m.string()?)),
                    (None, Some(b'[' | b'{')) => text_kept(ty, m.text, depth - 1),
                    (None, _) => keeps_scalar(ty, &Scalar::Int(m.text.parse().ok()?)),
                };
                kept.then_some(())
            });
            read.is_some() && shape.fields.iter().enumerate().all(|(at, f)| !f.required || seen & (1 << at) != 0)
        }
        _ => false,
    }
}

/// The names of the members events of type `ty` require (`type` among them); `None` where
/// the stage adds members when absent (defaults) or `ty` has no declared shape.
pub(crate) fn required(ty: super::EventType) -> Option<impl Iterator<Item = &'static str>> {
    let shape = shape_of(ty).filter(|s| s.defaults.is_empty())?;
    Some(shape.fields.iter().filter(|f| f.required).map(|f| f.name))
}

/// What the stage made of one event.
#[derive(Debug)]
pub enum Checked {
    /// Deliver the event (with the material stripped from it).
    Keep,
    /// The event is dropped.
    Drop,
}

/// The name an event's `type` is shown by (as the reference's `String(e.type)`).
fn type_name(event: &Value) -> String {
    match event.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Object(_)) => "[object Object]".into(),
        Some(v) => v.to_string(),
        None => "undefined".into(),
    }
}

/// Hold one event to the schema: strip what it does not describe (a warning each into
/// `warnings`, at `index`), reject a malformed known field. `Drop`: the event's type is
/// not the protocol's, or a required place held only unrecognised material.
pub fn check_event(event: &mut Value, index: usize, warnings: &mut Vec<Warning>) -> Result<Checked, StreamError> {
    let ty = super::EventType::of(event);
    let Some(shape) = shape_of(ty) else {
        let name = type_name(event);
        warnings.push(Warning::new(
            WarningKind::Schema,
            index,
            format!("[ag-ui][enforce] Dropping unrecognised event '{name}': no middleware translated it and the protocol does not describe it."),
        ));
        return Ok(Checked::Drop);
    };
    let name = ty.name();
    let Value::Object(m) = event else { return Ok(Checked::Drop) };
    let mut cx = Cx { stripped: Vec::new(), unknown_at: None, omit_nulls: false };
    let outcome = object(m, shape, &Path::Root, &mut cx);
    for path in cx.stripped {
        let message = format!(
            "[ag-ui][enforce] Removed unrecognised material at '{path}' on {name}. Nothing handled it; see the repo-root DEPRECATIONS.md if it is a retired shape."
        );
        warnings.push(Warning { path: Some(path), ..Warning::new(WarningKind::Schema, index, message) });
    }
    match outcome {
        Ok(Walked::Kept) => Ok(Checked::Keep),
        Ok(Walked::Unknown) => {
            let at = cx.unknown_at.unwrap_or_default();
            let message = format!("[ag-ui][enforce] Dropping {name}: its required '{at}' holds unrecognised material.");
            warnings.push(Warning { path: Some(at), ..Warning::new(WarningKind::Schema, index, message) });
            Ok(Checked::Drop)
        }
        Err(issue) => Err(schema_error(issue, index, name)),
    }
}

/// `$.delta: Invalid input: expected string, received number — [<the zod issue>]`: the
/// field, the reference's words, and its report of the issue as it prints it (JSON).
fn issue_text(issue: &Issue, prefix: &str) -> String {
    let words = issue.zod.get("message").and_then(Value::as_str).unwrap_or("invalid");
    let zod = super::json_text(&Value::Array(vec![issue.zod.clone()]));
    format!("{prefix}{}: {words} — {}", issue.field, String::from_utf8_lossy(&zod))
}

fn schema_error(issue: Issue, index: usize, event_type: &str) -> StreamError {
    let mut e = StreamError::new(Stage::Schema, issue_text(&issue, ""));
    e.index = index;
    e.event_type = event_type.to_string();
    e.field = Some(issue.field.into());
    e
}

/// Hold a run input to the schema as a client sends it (`enforceOutgoingInput`): optional
/// fields holding `null` left out, what it does not describe stripped (the paths into
/// `stripped`), a malformed field an error.
pub fn check_run_input(input: &mut Value, stripped: &mut Vec<String>) -> Result<(), StreamError> {
    let mut cx = Cx { stripped: Vec::new(), unknown_at: None, omit_nulls: true };
    let outcome = match input {
        Value::Object(m) => object(m, &RUN_AGENT_INPUT, &Path::Root, &mut cx),
        other => Err(Issue::invalid_type(&Path::Root, "object", Some(other))),
    };
    stripped.append(&mut cx.stripped);
    match outcome {
        Ok(_) => Ok(()),
        Err(issue) => {
            let mut e = StreamError::new(Stage::Schema, issue_text(&issue, "run input "));
            e.field = Some(issue.field.into());
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The scanner's reading of a free-form member says "kept" only where the parse and
    /// the walk keep it (and at no deeper nesting than the parse allows).
    #[test]
    fn a_member_kept_by_its_text_is_kept_by_the_walk() {
        use super::super::EventType as E;
        let texts = [
            r#"[]"#,
            r#"[ ]"#,
            r#"[{}]"#,
            r#"[{"provider":"p","inputTokens":1,"outputTokens":2}]"#,
            r#"[{"provider":"p"},{"model":"m","totalTokens":0}]"#,
            r#"[{"provider":"p\n\u00e9"}]"#,
            r#"[{"provider":"p","provider":"q"}]"#,
            r#"[{"inputTokens":-1}]"#,
            r#"[{"inputTokens":-0}]"#,
            r#"[{"inputTokens":9007199254740991}]"#,
            r#"[{"inputTokens":9007199254740992}]"#,
            r#"[{"inputTokens":99999999999999999999999}]"#,
            r#"[{"inputTokens":1.0}]"#,
            r#"[{"inputTokens":1e3}]"#,
            r#"[{"inputTokens":"1"}]"#,
            r#"[{"provider":1}]"#,
            r#"[{"provider":null}]"#,
            r#"[{"future":2}]"#,
            r#"[{"provider":"p"},]"#,
            r#"[{"provider":"p"}]]"#,
            r#"[{"provider":"p"} ]"#,
            r#"[{"provider":["p"]}]"#,
            r#"[[{"provider":"p"}]]"#,
            r#"[1]"#,
            r#"["p"]"#,
            r#"{"provider":"p"}"#,
            r#"[{"provider":"p"}{"provider":"p"}]"#,
        ];
        let mut kept = 0;
        for text in texts {
            for depth in 0..4 {
                let usage = field(E::RunFinished, "usage").unwrap();
                let by_text = keeps_text(usage, text, depth);
                let by_walk = crate::limits::parse_value(text.as_bytes(), depth)
                    .is_ok_and(|mut v| keeps(usage, Scalar::Value(&mut v)));
                assert!(!by_text || by_walk, "{text} at depth {depth}");
                kept += usize::from(by_text);
            }
            assert!(!keeps_text(field(E::RunFinished, "threadId").unwrap(), text, 4));
        }
        // (the common forms are read by the scanner)
        assert_eq!(kept, 15, "kept by the text");
    }

    fn check(mut v: Value) -> (Result<Checked, StreamError>, Value, Vec<String>) {
        let mut w = Vec::new();
        let r = check_event(&mut v, 3, &mut w);
        (r, v, w.into_iter().map(|w| w.path.unwrap_or(w.message)).collect())
    }

    #[test]
    fn valid_events_pass_unchanged_and_quietly() {
        for e in [
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "timestamp": 1_700_000_000_000_i64}),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "r"}]}}),
            json!({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/a/~0~1", "value": 1}]}),
            json!({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": [{"type": "image", "source": {"type": "url", "value": "x"}}]}]}),
            json!({"type": "STATE_SNAPSHOT", "snapshot": null}),
        ] {
            let (r, out, w) = check(e.clone());
            assert!(matches!(r, Ok(Checked::Keep)), "{e}");
            assert_eq!(out, e);
            assert!(w.is_empty(), "{w:?}");
        }
    }

    #[test]
    fn unknown_material_is_stripped_with_its_path() {
        let (r, out, w) = check(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x", "futureProp": 1}));
        assert!(matches!(r, Ok(Checked::Keep)));
        assert_eq!(out, json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}));
        assert_eq!(w, ["/futureProp"]);
        let (_, out, w) = check(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "paused"}}));
        assert_eq!(out, json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}));
        assert_eq!(w, ["/outcome"]);
        let (_, out, w) = check(json!({"type": "STATE_DELTA", "delta": [{"op": "increment", "path": "/c"}, {"op": "add", "path": "/c", "value": 1}]}));
        assert_eq!(out, json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/c", "value": 1}]}));
        assert_eq!(w, ["/delta/0"]);
        let (_, out, w) = check(json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "narrator"}));
        assert_eq!(out, json!({"type": "TEXT_MESSAGE_START", "messageId": "m"}));
        assert_eq!(w, ["/role"]);
        // A part whose required source is of an unknown kind: the part goes.
        let (_, out, w) = check(json!({"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "t",
            "content": [{"type": "image", "source": {"type": "hologram"}}, {"type": "text", "text": "x"}]}));
        assert_eq!(out["content"], json!([{"type": "text", "text": "x"}]));
        assert_eq!(w, ["/content/0"]);
    }

    #[test]
    fn events_the_protocol_does_not_describe_are_dropped() {
        let (r, _, w) = check(json!({"type": "FUTURE_EVENT"}));
        assert!(matches!(r, Ok(Checked::Drop)));
        assert!(w[0].contains("'FUTURE_EVENT'"));
        let (r, _, w) = check(json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "thought", "entityId": "e", "encryptedValue": "x"}));
        assert!(matches!(r, Ok(Checked::Drop)));
        assert_eq!(w, ["/subtype"]);
    }

    #[test]
    fn a_malformed_known_field_is_fatal_and_named() {
        for (e, field, phrase) in [
            (json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42}), "$.delta", "expected string, received number"),
            (json!({"type": "REASONING_MESSAGE_START", "messageId": "m", "role": "assistant"}), "$.role", "expected \\\"reasoning\\\""),
            (json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": [1]}), "$.outcome", "expected object, received array"),
            (json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "name": null}), "$.name", "received null"),
            (json!({"type": "TEXT_MESSAGE_END"}), "$.messageId", "received undefined"),
            (json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1.5}), "$.timestamp", "expected int"),
            (json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "a", "value": 1}]}), "$.delta[0].path", "must match pattern"),
            (json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": []}}), "$.outcome.interrupts", ">=1 items"),
            (json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"inputTokens": -1}]}), "$.usage[0].inputTokens", ">=0"),
        ] {
            let (r, _, _) = check(e.clone());
            let err = r.expect_err(&e.to_string());
            assert_eq!(err.stage, Stage::Schema);
            assert_eq!(err.field.as_deref(), Some(field), "{e}");
            assert_eq!(err.index, 3);
            assert!(err.to_string().contains(phrase), "{err}");
        }
    }

    #[test]
    fn run_input_defaults_and_null_state() {
        let (r, out, w) = check(json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r",
            "input": {"threadId": "t", "runId": "r", "messages": [], "state": null}}));
        assert!(matches!(r, Ok(Checked::Keep)));
        assert_eq!(out["input"], json!({"threadId": "t", "runId": "r", "messages": [], "tools": [], "context": []}));
        assert!(w.is_empty());
    }

    #[test]
    fn pointers() {
        for (p, ok) in [("", true), ("/", true), ("/a~0b~1", true), ("a", false), ("/a~2", false), ("/a~", false)] {
            assert_eq!(is_pointer(p), ok, "{p}");
        }
    }
}
