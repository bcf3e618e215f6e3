//! Replays of streams of adversarial state and activity patches, built from the input's
//! bytes (copies of the root into itself, moves, removes, deep values, `01` and `-`
//! indices, big strings), with a memory budget from the control byte. Checks: no panic and
//! bounded memory (libFuzzer's RSS limit: a copy bomb must end in a failed patch); the
//! state and messages stay within what the log and the budget allow; the SSE log replayed
//! from bytes, through the log reader and held in memory, and the events replayed
//! as values all agree (state, messages, warnings); a patch that warns leaves the state
//! (or the activity) as it was; compacting the events keeps the replayed state.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::stream::{
    compact_events_within, replay, replay_log, replay_log_bytes, replay_sse, EventApplier, PatchLimits, ReplayOptions,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const PATHS: &[&str] = &[
    "", "/a", "/a/b", "/a/b/c", "/l", "/l/0", "/l/1", "/l/-", "/l/01", "/x", "/a/x", "/b0", "/b1", "/b0/b1", "/m/k~1y", "/l/0/a",
];
const OPS: &[&str] = &["copy", "copy", "copy", "move", "add", "remove", "replace", "test", "_get"];

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
    fn path(&mut self) -> &'static str {
        PATHS[self.next() as usize % PATHS.len()]
    }
    fn value(&mut self, depth: u8) -> Value {
        let b = self.next();
        match b % 8 {
            0 => Value::Null,
            1 => json!(b),
            2 => json!("s".repeat((b / 8) as usize)),
            3 => json!("x".repeat(1024 * (b / 8) as usize)),
            4 if depth < 6 => json!([self.value(depth + 1), self.value(depth + 1)]),
            5 if depth < 6 => json!({"a": self.value(depth + 1), "b": {"c": self.value(depth + 1)}}),
            6 => json!([[[[[[[[b]]]]]]]]),
            _ => json!({"k/y": [1, 2, 3]}),
        }
    }
    fn patch(&mut self) -> Value {
        let n = 1 + self.next() % 8;
        let ops = (0..n)
            .map(|_| {
                let op = OPS[self.next() as usize % OPS.len()];
                let mut o = json!({"op": op, "path": self.path()});
                match op {
                    "copy" | "move" => o["from"] = json!(self.path()),
                    "add" | "replace" | "test" => o["value"] = self.value(0),
                    _ => {}
                }
                o
            })
            .collect();
        Value::Array(ops)
    }
    fn event(&mut self) -> Value {
        let b = self.next();
        let id = format!("m{}", b >> 7);
        match b % 8 {
            0 => json!({"type": "STATE_SNAPSHOT", "snapshot": {"a": {"b": {"c": 1}}, "l": [{"a": 1}, 2], "x": self.value(0)}}),
            1..=4 => json!({"type": "STATE_DELTA", "delta": self.patch()}),
            5 => json!({"type": "ACTIVITY_SNAPSHOT", "messageId": id, "activityType": "t", "content": {"a": {"b": 1}, "l": [1]}}),
            6 => json!({"type": "ACTIVITY_DELTA", "messageId": id, "activityType": "t", "patch": self.patch()}),
            _ => json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "t", "delta": "hi"}),
        }
    }
}

fn text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    // 1 KiB .. 4 MiB (the default, 128 MiB, bounds the same way, but a copy bomb under it
    // takes seconds to replay the five ways checked here)
    let max_patch_bytes = 1usize << (10 + bytes.next() % 13);
    let mut events = Vec::new();
    while !bytes.done() && events.len() < 64 {
        events.push(bytes.event());
    }
    let log: Vec<u8> = events.iter().flat_map(|e| format!("data: {e}\n\n").into_bytes()).collect();
    let options = ReplayOptions { max_patch_bytes, ..ReplayOptions::default() };

    let whole = replay_sse(&log, Vec::new(), json!({}), options);
    assert!(whole.error.is_none(), "{:?}", whole.error);
    let size = text(&whole.state).len() + text(&whole.messages).len();
    assert!(size <= 4 * log.len() + 3 * max_patch_bytes, "{size} bytes from {} of log", log.len());
    for other in [
        replay(events.clone(), Vec::new(), json!({}), options),
        replay_log(&log[..], None, Vec::new(), json!({}), options),
        replay_log_bytes(&log, None, Vec::new(), json!({}), options),
    ] {
        assert_eq!(text(&other.state), text(&whole.state));
        assert_eq!(text(&other.messages), text(&whole.messages));
        assert_eq!(other.warnings, whole.warnings);
    }

    // One event at a time: a patch that warns changes nothing.
    let mut ap = EventApplier::new(Vec::new(), json!({})).with_max_patch_bytes(max_patch_bytes);
    for e in &events {
        if e["type"] == "TEXT_MESSAGE_CHUNK" {
            continue; // (the reducer alone takes no chunks)
        }
        let (state, messages) = (text(ap.state()), text(&ap.messages().collect::<Vec<_>>()));
        let c = ap.apply(e).unwrap();
        if c.warning.is_some() {
            assert_eq!(text(ap.state()), state, "{e}");
            assert_eq!(text(&ap.messages().collect::<Vec<_>>()), messages, "{e}");
        }
    }

    // Compaction keeps the replayed state (when no limit was reached: the allowance of a
    // compaction is spent from its last snapshot, a replay's from the start).
    let (compacted, _) = compact_events_within(events.clone(), PatchLimits::new(options.max_depth, max_patch_bytes));
    let again = replay(compacted, Vec::new(), json!({}), options);
    let limited = |ws: &[agui_core::stream::Warning]| ws.iter().any(|w| w.message.contains("exceed the limit"));
    if !limited(&whole.warnings) && !limited(&again.warnings) {
        assert_eq!(text(&again.state), text(&whole.state));
    }
});
