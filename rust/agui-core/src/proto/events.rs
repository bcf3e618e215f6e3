//! The one table of the 31 events of the 1.0 wire schema, from which every per-event
//! piece of the codec is generated: the decoder's arms (the prost path, the wire paths
//! of flat and nested events and their member lists), the encoder's arms, the envelope's
//! arm numbers and [`EVENT_TYPES`](super::EVENT_TYPES).
//!
//! Each row: the envelope's field number (the arm), the `EventType` value, the type name,
//! the `Event` arm and its message, the wire path that may take it before prost (`flat`:
//! string fields only, [`Flat`](super::Flat); `nested`: [`Nested`](super::Nested);
//! `prost`: none), then its members in the order the decoder writes them: (field number,
//! prost field, JSON key, [`Kind`]). Field 1, the base event, is every event's and is not
//! listed. A test holds the rows to the compiled schema (`SCHEMA_JSON`): numbers, names,
//! keys, labels.
//!
//! The table is a macro that hands its rows to the macro named in its call (each consumer
//! matches the same row grammar and writes its own arms).

/// How a member is read and written. Most are one field of the message; a few stand for
/// the fields they are written together with (their companions, listed in the test).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `string`: written always (`""` when absent).
    Str,
    /// `optional string`: written when present.
    Opt,
    /// `optional google.protobuf.Value`: written when it has a kind; `null` in JSON is
    /// dropped on encode.
    Value,
    /// `google.protobuf.Value` whose JSON `null` is a value (RAW's event, CUSTOM's value,
    /// the snapshot): kept as `null_value` on encode.
    Keep,
    /// `optional bool`.
    Bool,
    /// `google.protobuf.Struct` activity content (a JSON `null` is an encode error, any
    /// other non-object an empty object).
    ActivityContent,
    /// `repeated JsonPatchOperation`.
    Patch,
    /// `repeated Message`.
    Messages,
    /// `optional RunAgentInput` (left to prost by the wire path).
    Input,
    /// `repeated Usage`, written when not empty.
    Usage,
    /// TOOL_CALL_RESULT's `content`: its string (field 5) or its parts (`content_parts`,
    /// field 7, left to prost by the wire path).
    ToolContent,
    /// RUN_FINISHED's `outcome` (field 5) with its `interrupts` and `pending_tool_call_ids`
    /// (left to prost by the wire path): an outcome object after the base event.
    RunOutcome,
    /// SUBAGENT_FINISHED's `outcome` with its `interrupt_ids`. (Only a token of the
    /// table outside its test: no wire path takes the event.)
    #[cfg_attr(not(test), allow(dead_code))]
    SubagentOutcome,
}

impl Kind {
    /// How the nested wire path reads the field: a length-delimited field, a varint, or
    /// a repeated length-delimited one; `None`: it declines an event carrying it.
    pub(crate) const fn wire(self) -> Option<Wire> {
        use Kind::*;
        match self {
            Str | Opt | Value | Keep | ActivityContent | ToolContent | RunOutcome => Some(Wire::Len),
            Bool => Some(Wire::Int),
            Patch | Messages | Usage => Some(Wire::Repeated),
            Input | SubagentOutcome => None,
        }
    }

    /// Whether the member is one of an event's top-level string members, and then
    /// whether it is written only when present (TOOL_CALL_RESULT's content counts as an
    /// optional one: absent, it is an empty list, no string).
    pub(crate) const fn string(self) -> Option<bool> {
        match self {
            Kind::Str => Some(false),
            Kind::Opt | Kind::ToolContent => Some(true),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    Len,
    Int,
    Repeated,
}

/// A member of a row, as the const helpers below read it: (field number, JSON key, kind).
pub(crate) type Member = (u32, &'static str, Kind);

/// The masks of the nested wire path's field reader for an event of these members: its
/// length-delimited fields (the base event's 1 among them), varint fields and repeated
/// fields, one bit per field number.
pub(crate) const fn wire_masks(members: &[Member]) -> (u16, u16, u16) {
    let (mut len, mut int, mut rep) = (1u16 << 1, 0u16, 0u16);
    let mut i = 0;
    while i < members.len() {
        let bit = 1u16 << members[i].0;
        match members[i].2.wire() {
            Some(Wire::Len) => len |= bit,
            Some(Wire::Int) => int |= bit,
            Some(Wire::Repeated) => {
                len |= bit;
                rep |= bit;
            }
            None => {}
        }
        i += 1;
    }
    (len, int, rep)
}

/// How many of `members` are string members ([`Kind::string`]).
pub(crate) const fn count_strings(members: &[Member]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < members.len() {
        if members[i].2.string().is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The string members of `members` (`N` of them: [`count_strings`]), in order: (field
/// number, JSON key, written only when present).
pub(crate) const fn strings<const N: usize>(members: &[Member]) -> [(u32, &'static str, bool); N] {
    let mut out = [(0, "", false); N];
    let (mut n, mut i) = (0, 0);
    while i < members.len() {
        if let Some(optional) = members[i].2.string() {
            out[n] = (members[i].0, members[i].1, optional);
            n += 1;
        }
        i += 1;
    }
    out
}

/// The field number of the member of kind `kind`, if any.
pub(crate) const fn field_of(members: &[Member], kind: Kind) -> Option<u32> {
    let mut i = 0;
    while i < members.len() {
        if members[i].2 as u8 == kind as u8 {
            return Some(members[i].0);
        }
        i += 1;
    }
    None
}

/// Hands the table's rows to the macro `$then`, after the rest of its arguments in
/// parentheses (see the module's documentation).
macro_rules! event_table {
    ($then:ident $($args:tt)*) => {
        $then! {
            ($($args)*)
            1 0 "TEXT_MESSAGE_START" TextMessageStart(TextMessageStartEvent) flat {
                2 message_id "messageId" Str,
                3 role "role" Opt,
                4 name "name" Opt,
                5 subagent_run_id "subagentRunId" Opt,
            }
            2 1 "TEXT_MESSAGE_CONTENT" TextMessageContent(TextMessageContentEvent) flat {
                2 message_id "messageId" Str,
                3 delta "delta" Str,
                4 subagent_run_id "subagentRunId" Opt,
            }
            3 2 "TEXT_MESSAGE_END" TextMessageEnd(TextMessageEndEvent) flat {
                2 message_id "messageId" Str,
                3 subagent_run_id "subagentRunId" Opt,
            }
            4 3 "TOOL_CALL_START" ToolCallStart(ToolCallStartEvent) flat {
                2 tool_call_id "toolCallId" Str,
                3 tool_call_name "toolCallName" Str,
                4 parent_message_id "parentMessageId" Opt,
                5 subagent_run_id "subagentRunId" Opt,
            }
            5 4 "TOOL_CALL_ARGS" ToolCallArgs(ToolCallArgsEvent) flat {
                2 tool_call_id "toolCallId" Str,
                3 delta "delta" Str,
                4 subagent_run_id "subagentRunId" Opt,
            }
            6 5 "TOOL_CALL_END" ToolCallEnd(ToolCallEndEvent) flat {
                2 tool_call_id "toolCallId" Str,
                3 subagent_run_id "subagentRunId" Opt,
            }
            7 6 "STATE_SNAPSHOT" StateSnapshot(StateSnapshotEvent) nested {
                2 snapshot "snapshot" Keep,
                3 subagent_run_id "subagentRunId" Opt,
            }
            8 7 "STATE_DELTA" StateDelta(StateDeltaEvent) nested {
                2 delta "delta" Patch,
                3 subagent_run_id "subagentRunId" Opt,
            }
            9 8 "MESSAGES_SNAPSHOT" MessagesSnapshot(MessagesSnapshotEvent) nested {
                2 messages "messages" Messages,
            }
            10 9 "RAW" Raw(RawEvent) nested {
                2 event "event" Keep,
                3 source "source" Opt,
                4 subagent_run_id "subagentRunId" Opt,
            }
            11 10 "CUSTOM" Custom(CustomEvent) nested {
                2 name "name" Str,
                3 value "value" Keep,
                4 subagent_run_id "subagentRunId" Opt,
            }
            12 11 "RUN_STARTED" RunStarted(RunStartedEvent) nested {
                2 thread_id "threadId" Str,
                3 run_id "runId" Str,
                4 parent_run_id "parentRunId" Opt,
                5 input "input" Input,
                6 protocol_version "protocolVersion" Opt,
            }
            13 12 "RUN_FINISHED" RunFinished(RunFinishedEvent) nested {
                2 thread_id "threadId" Str,
                3 run_id "runId" Str,
                4 result "result" Value,
                7 usage "usage" Usage,
                5 outcome "outcome" RunOutcome,
            }
            14 13 "RUN_ERROR" RunError(RunErrorEvent) nested {
                2 code "code" Opt,
                3 message "message" Str,
                4 usage "usage" Usage,
            }
            15 14 "STEP_STARTED" StepStarted(StepStartedEvent) flat {
                2 step_name "stepName" Str,
                3 subagent_run_id "subagentRunId" Opt,
            }
            16 15 "STEP_FINISHED" StepFinished(StepFinishedEvent) flat {
                2 step_name "stepName" Str,
                3 subagent_run_id "subagentRunId" Opt,
            }
            17 19 "TEXT_MESSAGE_CHUNK" TextMessageChunk(TextMessageChunkEvent) flat {
                2 message_id "messageId" Opt,
                3 role "role" Opt,
                4 delta "delta" Opt,
                5 name "name" Opt,
                6 subagent_run_id "subagentRunId" Opt,
            }
            18 20 "TOOL_CALL_CHUNK" ToolCallChunk(ToolCallChunkEvent) flat {
                2 tool_call_id "toolCallId" Opt,
                3 tool_call_name "toolCallName" Opt,
                4 parent_message_id "parentMessageId" Opt,
                5 delta "delta" Opt,
                6 subagent_run_id "subagentRunId" Opt,
            }
            19 16 "SUBAGENT_STARTED" SubagentStarted(SubagentStartedEvent) flat {
                2 subagent_run_id "subagentRunId" Str,
                3 name "name" Str,
                4 description "description" Opt,
                5 parent_subagent_run_id "parentSubagentRunId" Opt,
                6 parent_tool_call_id "parentToolCallId" Opt,
                7 parent_message_id "parentMessageId" Opt,
            }
            20 17 "SUBAGENT_FINISHED" SubagentFinished(SubagentFinishedEvent) prost {
                2 subagent_run_id "subagentRunId" Str,
                3 result "result" Value,
                4 outcome "outcome" SubagentOutcome,
            }
            21 18 "SUBAGENT_ERROR" SubagentError(SubagentErrorEvent) flat {
                2 subagent_run_id "subagentRunId" Str,
                3 message "message" Str,
                4 code "code" Opt,
            }
            22 21 "TOOL_CALL_RESULT" ToolCallResult(ToolCallResultEvent) nested {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
                4 tool_call_id "toolCallId" Str,
                5 content "content" ToolContent,
                6 role "role" Opt,
            }
            23 22 "ACTIVITY_SNAPSHOT" ActivitySnapshot(ActivitySnapshotEvent) nested {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
                4 activity_type "activityType" Str,
                5 content "content" ActivityContent,
                6 replace "replace" Bool,
            }
            24 23 "ACTIVITY_DELTA" ActivityDelta(ActivityDeltaEvent) nested {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
                4 activity_type "activityType" Str,
                5 patch "patch" Patch,
            }
            25 24 "REASONING_START" ReasoningStart(ReasoningStartEvent) flat {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
            }
            26 25 "REASONING_MESSAGE_START" ReasoningMessageStart(ReasoningMessageStartEvent) flat {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
                4 role "role" Str,
            }
            27 26 "REASONING_MESSAGE_CONTENT" ReasoningMessageContent(ReasoningMessageContentEvent) flat {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
                4 delta "delta" Str,
            }
            28 27 "REASONING_MESSAGE_END" ReasoningMessageEnd(ReasoningMessageEndEvent) flat {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
            }
            29 28 "REASONING_MESSAGE_CHUNK" ReasoningMessageChunk(ReasoningMessageChunkEvent) flat {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Opt,
                4 delta "delta" Opt,
            }
            30 29 "REASONING_END" ReasoningEnd(ReasoningEndEvent) flat {
                2 subagent_run_id "subagentRunId" Opt,
                3 message_id "messageId" Str,
            }
            31 30 "REASONING_ENCRYPTED_VALUE" ReasoningEncryptedValue(ReasoningEncryptedValueEvent) flat {
                2 subagent_run_id "subagentRunId" Opt,
                3 subtype "subtype" Str,
                4 entity_id "entityId" Str,
                5 encrypted_value "encryptedValue" Str,
            }
        }
    };
}
pub(crate) use event_table;

// ---------------------------------------------------------------------------------
// What the table gives the whole module: type names, arm numbers
// ---------------------------------------------------------------------------------

macro_rules! names {
    (() $( $arm:literal $en:literal $ty:literal $v:ident($m:ident) $path:ident { $($body:tt)* } )*) => {
        /// The type names by `EventType` value.
        pub(crate) const NAMES: [&str; 31] = {
            let mut out = [""; 31];
            $( out[$en] = $ty; )*
            out
        };

        /// `EventType` value of an envelope arm (field number); arms beyond the table
        /// give 31, no type.
        #[inline]
        pub(crate) const fn arm_to_enum(arm: u32) -> u32 {
            match arm {
                $( $arm => $en, )*
                _ => 31,
            }
        }

        /// The envelope field number of an arm.
        pub fn arm_number(a: &super::pb::event::Event) -> u32 {
            use super::pb::event::Event as Arm;
            match a {
                $( Arm::$v(_) => $arm, )*
            }
        }

        /// The arm cleared to its default, keeping its buffers.
        pub(crate) fn clear_arm(a: &mut super::pb::event::Event) {
            use super::pb::event::Event as Arm;
            use prost::Message as _;
            match a {
                $( Arm::$v(e) => e.clear(), )*
            }
        }
    };
}
event_table!(names);

#[cfg(test)]
mod tests {
    //! The table against the compiled schema.
    use super::Kind;
    use serde_json::Value as J;

    /// Fields a member of this kind is written with besides its own.
    fn companions(kind: Kind) -> &'static [&'static str] {
        match kind {
            Kind::ToolContent => &["content_parts"],
            Kind::RunOutcome => &["interrupts", "pending_tool_call_ids"],
            Kind::SubagentOutcome => &["interrupt_ids"],
            _ => &[],
        }
    }

    fn camel(snake: &str) -> String {
        let mut out = String::new();
        let mut up = false;
        for c in snake.chars() {
            match c {
                '_' => up = true,
                c if up => {
                    out.push(c.to_ascii_uppercase());
                    up = false;
                }
                c => out.push(c),
            }
        }
        out
    }

    /// What the schema says of a field of a message: (label, type).
    fn field<'s>(schema: &'s J, message: &str, number: u32, name: &str) -> (&'s str, &'s str) {
        let fields = schema[format!("ag_ui.{message}")].as_array().unwrap_or_else(|| panic!("{message}"));
        let f = fields.iter().find(|f| f[1] == number).unwrap_or_else(|| panic!("{message}: no field {number}"));
        assert_eq!(f[0], name, "{message}: field {number}");
        (f[2].as_str().unwrap(), f[3].as_str().unwrap())
    }

    macro_rules! check {
        (() $( $arm:literal $en:literal $ty:literal $v:ident($m:ident) $path:ident {
            $( $n:literal $f:ident $k:literal $kind:ident ),* $(,)?
        } )*) => {{
            let schema: J = serde_json::from_str(crate::proto::SCHEMA_JSON).unwrap();
            let enums = schema["enum ag_ui.EventType"].as_array().unwrap();
            let mut arms = Vec::new();
            $(
                arms.push($arm);
                let m = stringify!($m);
                // The envelope's arm holds the message; the enum value names the type.
                assert_eq!(field(&schema, "Event", $arm, &camel_to_snake(stringify!($v))).1, format!("ag_ui.{m}"));
                assert!(enums.iter().any(|e| e[0] == $ty && e[1] == $en), "{}", $ty);
                assert_eq!(field(&schema, m, 1, "base_event").1, "ag_ui.BaseEvent");
                let mut covered = vec!["base_event".to_string()];
                let mut strings_only = true;
                $(
                    let (label, ty) = field(&schema, m, $n, stringify!($f));
                    assert_eq!($k, camel(stringify!($f)), "{m}.{}", stringify!($f));
                    let kind = Kind::$kind;
                    let want: &[(&str, &str)] = match kind {
                        Kind::Str => &[("implicit", "string")],
                        Kind::Opt | Kind::ToolContent => &[("optional", "string")],
                        Kind::Value => &[("optional", "google.protobuf.Value")],
                        Kind::Keep => &[("implicit", "google.protobuf.Value")],
                        Kind::Bool => &[("optional", "bool")],
                        Kind::ActivityContent => &[("implicit", "google.protobuf.Struct")],
                        Kind::Patch => &[("repeated", "ag_ui.JsonPatchOperation")],
                        Kind::Messages => &[("repeated", "ag_ui.Message")],
                        Kind::Input => &[("optional", "ag_ui.RunAgentInput")],
                        Kind::Usage => &[("repeated", "ag_ui.Usage")],
                        Kind::RunOutcome | Kind::SubagentOutcome => &[("implicit", "string")],
                    };
                    assert!(want.contains(&(label, ty)), "{m}.{}: {label} {ty}", stringify!($f));
                    strings_only &= kind.string().is_some() && kind != Kind::ToolContent;
                    covered.push(stringify!($f).to_string());
                    covered.extend(companions(kind).iter().map(|c| c.to_string()));
                )*
                // Every field of the message is a member or a member's companion.
                let mut all: Vec<String> = schema[format!("ag_ui.{m}")].as_array().unwrap().iter()
                    .map(|f| f[0].as_str().unwrap().to_string()).collect();
                all.sort();
                covered.sort();
                assert_eq!(all, covered, "{m}");
                // The flat path takes string fields numbered 2, 3, ... alone.
                if stringify!($path) == "flat" {
                    assert!(strings_only, "{m}");
                    let numbers = [$($n),*];
                    assert!(numbers.iter().enumerate().all(|(i, &n)| n == i as u32 + 2), "{m}");
                }
            )*
            arms.sort();
            assert_eq!(arms, (1..=31).collect::<Vec<u32>>());
        }};
    }

    fn camel_to_snake(camel: &str) -> String {
        let mut out = String::new();
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() {
                if i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn the_table_is_the_schema() {
        event_table!(check);
    }
}
