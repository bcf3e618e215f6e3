//! The stream engine on adversarial event sequences, built from the input's bytes: every
//! event type (chunks, tool calls, reasoning, activities, messages snapshots, runs, steps,
//! 0.x `THINKING_*` events), ids from a few strings, numbers and `null`, subagent lanes,
//! members missing or of the wrong type. Checks: no panic and bounded memory (the
//! allocation budget, libFuzzer's RSS limit and timeout: an input slower than the timeout
//! is a finding, quadratic time included); the same events replayed as values, from SSE
//! bytes (the plain-delta fast paths), through the log reader and held in memory
//! agree on messages, state, interrupts, warnings and error (stage, rule, index, message);
//! with verification, the verifier alone fails exactly where the replay stops for it.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::stream::{
    expand_chunks, replay, replay_log, replay_log_bytes, replay_sse, verify_events, Replay, ReplayOptions, Stage,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

const TYPES: &[&str] = &[
    "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "STEP_STARTED", "STEP_FINISHED",
    "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TEXT_MESSAGE_CHUNK",
    "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "TOOL_CALL_CHUNK",
    "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
    "REASONING_MESSAGE_CHUNK", "REASONING_END", "REASONING_ENCRYPTED_VALUE",
    "THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END", "THINKING_END",
    "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA",
    "CUSTOM", "RAW", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "NOT_A_TYPE",
    "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR",
];
const ROLES: &[&str] = &["assistant", "user", "system", "developer", "tool", "reasoning", "activity", "robot"];

/// The input's bytes, read one at a time (0 once they run out).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    fn done(&self) -> bool {
        self.0.is_empty()
    }
    /// An id: mostly one of a few strings, sometimes a number, `null`, `""` or absent.
    fn id(&mut self, prefix: &str) -> Option<Value> {
        let b = self.next();
        match b % 16 {
            0 => None,
            1 => Some(Value::Null),
            2 => Some(json!(b / 16)),
            3 => Some(json!("")),
            4 => Some(json!(["x"])),
            _ => Some(json!(format!("{prefix}{}", b % 3))),
        }
    }
    fn text(&mut self) -> Value {
        let b = self.next();
        match b % 8 {
            0 => json!(""),
            1 => json!(b),
            2 => Value::Null,
            3 => json!("\u{d7ff}\u{e000}é\n\"\\"),
            _ => json!("hi ".repeat(1 + (b / 8) as usize)),
        }
    }
    fn message(&mut self) -> Value {
        let mut m = Map::new();
        if let Some(id) = self.id("m") {
            m.insert("id".into(), id);
        }
        m.insert("role".into(), json!(ROLES[self.next() as usize % ROLES.len()]));
        match self.next() % 4 {
            0 => {}
            1 => {
                m.insert("content".into(), self.text());
            }
            2 => {
                let id = self.id("c").unwrap_or(Value::Null);
                m.insert("toolCalls".into(), json!([{"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]));
            }
            _ => {
                m.insert("toolCallId".into(), self.id("c").unwrap_or(Value::Null));
                m.insert("content".into(), self.text());
            }
        }
        Value::Object(m)
    }
    fn event(&mut self) -> Value {
        let ty = TYPES[self.next() as usize % TYPES.len()];
        let mut e = Map::new();
        e.insert("type".into(), json!(ty));
        let flags = self.next();
        let put = |e: &mut Map<String, Value>, k: &str, v: Option<Value>| {
            if let Some(v) = v {
                e.insert(k.into(), v);
            }
        };
        match ty {
            "RUN_STARTED" | "RUN_FINISHED" | "RUN_ERROR" => {
                put(&mut e, "threadId", Some(json!("t")));
                put(&mut e, "runId", self.id("r"));
                if flags & 1 != 0 {
                    put(&mut e, "parentRunId", self.id("r"));
                }
                if ty == "RUN_ERROR" {
                    put(&mut e, "message", Some(self.text()));
                }
                if ty == "RUN_FINISHED" && flags & 2 != 0 {
                    put(&mut e, "outcome", Some(json!("interrupt")));
                    put(&mut e, "interrupt", Some(json!({"id": self.id("i"), "reason": "r"})));
                }
            }
            "STEP_STARTED" | "STEP_FINISHED" => put(&mut e, "stepName", self.id("s")),
            "SUBAGENT_STARTED" | "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => {
                put(&mut e, "subagentRunId", self.id("sub"));
                if flags & 1 != 0 {
                    put(&mut e, "parentSubagentRunId", self.id("sub"));
                }
                if flags & 2 != 0 {
                    put(&mut e, "parentToolCallId", self.id("c"));
                }
                if ty == "SUBAGENT_ERROR" {
                    put(&mut e, "message", Some(self.text()));
                }
            }
            "TOOL_CALL_START" | "TOOL_CALL_ARGS" | "TOOL_CALL_END" | "TOOL_CALL_CHUNK" | "TOOL_CALL_RESULT" => {
                put(&mut e, "toolCallId", self.id("c"));
                if flags & 1 != 0 || ty == "TOOL_CALL_START" {
                    put(&mut e, "toolCallName", Some(json!("f")));
                }
                if flags & 2 != 0 {
                    put(&mut e, "parentMessageId", self.id("m"));
                }
                if matches!(ty, "TOOL_CALL_ARGS" | "TOOL_CALL_CHUNK") {
                    put(&mut e, "delta", Some(self.text()));
                }
                if ty == "TOOL_CALL_RESULT" {
                    put(&mut e, "messageId", self.id("m"));
                    put(&mut e, "content", Some(self.text()));
                }
            }
            "STATE_SNAPSHOT" => put(&mut e, "snapshot", Some(json!({"a": [1, {"b": self.text()}]}))),
            "STATE_DELTA" => put(&mut e, "delta", Some(json!([{"op": "add", "path": "/a/-", "value": self.text()}]))),
            "MESSAGES_SNAPSHOT" => {
                let n = self.next() % 4;
                let messages: Vec<Value> = (0..n).map(|_| self.message()).collect();
                put(&mut e, "messages", Some(Value::Array(messages)));
            }
            "ACTIVITY_SNAPSHOT" | "ACTIVITY_DELTA" => {
                put(&mut e, "messageId", self.id("m"));
                put(&mut e, "activityType", Some(json!("plan")));
                if ty == "ACTIVITY_SNAPSHOT" {
                    put(&mut e, "content", Some(json!({"l": [self.text()]})));
                    if flags & 1 != 0 {
                        put(&mut e, "replace", Some(json!(flags & 2 != 0)));
                    }
                } else {
                    put(&mut e, "patch", Some(json!([{"op": "add", "path": "/l/-", "value": 1}])));
                }
            }
            "CUSTOM" => {
                put(&mut e, "name", Some(json!("n")));
                put(&mut e, "value", Some(self.text()));
            }
            "RAW" => put(&mut e, "event", Some(self.text())),
            _ => {
                // text, reasoning and thinking events, and an unknown type
                put(&mut e, "messageId", self.id("m"));
                if flags & 1 != 0 {
                    put(&mut e, "role", Some(json!(ROLES[(flags >> 4) as usize % ROLES.len()])));
                }
                if ty.contains("CONTENT") || ty.contains("CHUNK") || flags & 2 != 0 {
                    put(&mut e, "delta", Some(self.text()));
                }
                if ty == "REASONING_ENCRYPTED_VALUE" {
                    put(&mut e, "subtype", Some(json!(if flags & 2 != 0 { "message" } else { "tool-call" })));
                    put(&mut e, "entityId", self.id("m"));
                    put(&mut e, "encryptedValue", Some(json!("e")));
                }
            }
        }
        if flags & 0x40 != 0 {
            let lane = self.id("sub");
            put(&mut e, "subagentRunId", lane);
        }
        if flags & 0x80 != 0 {
            put(&mut e, "timestamp", Some(json!(flags)));
        }
        Value::Object(e)
    }
}

fn text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap()
}

/// `s` with every UUID (8-4-4-4-12 hex digits) masked: the compatibility boundary mints
/// random ids.
fn mask_uuids(s: String) -> String {
    let b = s.as_bytes();
    let is_uuid = |w: &[u8]| {
        w.len() == 36 && w.iter().enumerate().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if i + 36 <= b.len() && is_uuid(&b[i..i + 36]) {
            out.extend_from_slice(b"<uuid>");
            i += 36;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Everything a replay gives, as text (minted ids masked).
fn outcome(r: &Replay) -> String {
    let error = r.error.as_ref().map(|e| format!("{:?} {:?} {} {} {:?} {}", e.stage, e.rule, e.index, e.event_type, e.ids, e.message));
    let warnings: Vec<(usize, &str)> = r.warnings.iter().map(|w| (w.index, w.message.as_str())).collect();
    mask_uuids(format!(
        "{}\n{}\n{}\n{:?}\n{:?}",
        text(&r.messages),
        text(&r.state),
        text(&r.pending_interrupts),
        warnings,
        error
    ))
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let control = bytes.next();
    let options = ReplayOptions {
        verify: control & 1 != 0,
        compat: control & 2 == 0,
        expand: control & 4 == 0,
        ..ReplayOptions::default()
    };
    let mut events = Vec::new();
    while !bytes.done() && events.len() < 256 {
        events.push(bytes.event());
    }
    let log: Vec<u8> = events.iter().flat_map(|e| format!("data: {e}\n\n").into_bytes()).collect();

    let values = replay(events.clone(), Vec::new(), json!({}), options);
    let want = outcome(&values);
    for (how, other) in [
        ("sse", replay_sse(&log, Vec::new(), json!({}), options)),
        ("log", replay_log(&log[..], None, Vec::new(), json!({}), options)),
        ("held", replay_log_bytes(&log, None, Vec::new(), json!({}), options)),
    ] {
        assert_eq!(outcome(&other), want, "{how}");
        assert_eq!(other.events, values.events, "{how}");
    }

    // The verifier alone (on the expanded events of an all-new-era stream) fails where the
    // replay's verification stops, when nothing but expansion stands in front of it: the
    // schema stage strips what the verifier would refuse (an unknown type such as
    // `THINKING_END` without the boundary, a null optional field).
    if options.verify && options.expand && !options.compat {
        let bare = replay(events.clone(), Vec::new(), json!({}), ReplayOptions { schema: false, ..options });
        let (expanded, chunk_error) = expand_chunks(events.clone());
        let alone = verify_events(expanded.iter());
        match &bare.error {
            Some(e) if e.stage == Stage::Verify => {
                let alone = alone.expect_err("the replay's verification failed");
                assert_eq!((alone.rule, mask_uuids(alone.message.clone())), (e.rule, mask_uuids(e.message.clone())));
            }
            None if chunk_error.is_none() => {
                assert!(alone.is_ok(), "{alone:?}");
            }
            _ => {}
        }
    }
});
