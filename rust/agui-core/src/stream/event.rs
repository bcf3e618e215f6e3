//! The event representation: a JSON object (`serde_json::Value`, members in input order),
//! dispatched on its `type` once per stage through [`EventType`].

use super::{Stage, StreamError};
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
pub fn parse_event(payload: &[u8]) -> Result<Value, StreamError> {
    let v = super::js::parse_json(payload).map_err(|e| StreamError::new(Stage::Decode, e))?;
    if !v.is_object() {
        return Err(StreamError::new(Stage::Decode, "an event must be a JSON object"));
    }
    Ok(v)
}

/// The `type` of an event as written (`""` when missing or not a string).
pub fn type_str(event: &Value) -> &str {
    event.get("type").and_then(Value::as_str).unwrap_or("")
}
