//! The incremental and whole-sequence APIs of `agui_core::stream` agree with each other,
//! and bad input fails cleanly: the right stage, rule, event index and ids, with the
//! events before it applied.

use agui_core::stream::{
    expand_chunks, replay, replay_sse, verify_events, ChunkExpander, EventApplier, ReplayOptions, Replayer, Stage,
};
use serde_json::{json, Value};

fn sse(events: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(serde_json::to_string(e).unwrap().as_bytes());
        out.extend_from_slice(b"\n\n");
    }
    out
}

fn run() -> Vec<Value> {
    vec![
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"n": 0, "items": []}}),
        json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "delta": "Hel"}),
        json!({"type": "TEXT_MESSAGE_CHUNK", "delta": "lo"}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "m1"}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{\"a\":"}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "1}"}),
        json!({"type": "TOOL_CALL_END", "toolCallId": "c1"}),
        json!({"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "ok"}),
        json!({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 1}]}),
        json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/items/-", "value": 1}, {"op": "test", "path": "/n", "value": 9}]}),
        json!({"type": "THINKING_TEXT_MESSAGE_START"}),
        json!({"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hmm"}),
        json!({"type": "THINKING_TEXT_MESSAGE_END"}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    ]
}

#[test]
fn whole_run_replays_into_messages_and_state() {
    let r = replay(run(), Vec::new(), json!({}), ReplayOptions { verify: true, ..ReplayOptions::default() });
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.events, run().len());
    let ids: Vec<&str> = r.messages.iter().map(|m| m.get("id").and_then(Value::as_str).unwrap()).collect();
    assert_eq!(ids[..2], ["m1", "t1"]);
    assert_eq!(r.messages[0].to_value()["content"], "Hello");
    assert_eq!(r.messages[0].to_value()["toolCalls"][0]["function"]["arguments"], "{\"a\":1}");
    assert_eq!(r.messages[2].to_value()["role"], "reasoning");
    assert_eq!(r.messages[2].to_value()["content"], "hmm");
    // The failing `test` discarded its whole patch, with a warning on that event.
    assert_eq!(r.state, json!({"n": 1, "items": []}));
    assert!(r.warnings.iter().any(|w| w.index == 10 && w.message.contains("state patch")));
}

#[test]
fn sse_log_incremental_and_whole_agree() {
    let events = run();
    let options = ReplayOptions::default();
    let whole = replay_sse(&sse(&events), Vec::new(), json!({}), options);
    let mut inc = Replayer::new(Vec::new(), json!({}), options);
    let mut changes = Vec::new();
    for e in events.clone() {
        changes.push(inc.push(e).unwrap());
    }
    let inc = inc.finish(None);
    // Generated reasoning ids differ between the two runs: compare everything else.
    assert_eq!(whole.state, inc.state);
    assert_eq!(whole.messages[..2], inc.messages[..2]);
    assert_eq!(whole.messages.len(), inc.messages.len());
    // What each event changed: the chunk opened and filled m1 (one change for both).
    assert!(changes[2].messages && changes[2].message == Some(0));
    assert!(changes[9].state && !changes[9].messages);
    assert!(changes[10].is_empty() && changes[10].warning.is_none(), "warnings go to the replayer");
    assert!(changes[14].is_empty() && changes[14].interrupts);
}

#[test]
fn without_the_reducer_events_are_checked_and_dropped() {
    let options = ReplayOptions { verify: true, ..ReplayOptions::default() };
    let mut r = Replayer::new(Vec::new(), json!({}), options).without_reducer();
    for e in run() {
        assert!(r.push_json(serde_json::to_string(&e).unwrap().as_bytes()).unwrap().is_empty());
    }
    // The same rules as with the reducer: a message after the run finished breaks one.
    let late = json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"});
    let err = r.push(late.clone()).unwrap_err();
    let mut full = Replayer::new(Vec::new(), json!({}), options);
    run().into_iter().for_each(|e| drop(full.push(e)));
    assert_eq!(full.push(late).unwrap_err().message, err.message);
    assert_eq!(err.index, run().len());
    let kept = r.finish(None);
    assert!(kept.messages.is_empty() && kept.state == json!({}));
}

#[test]
fn decode_error_keeps_the_events_before_it() {
    let mut log = sse(&run()[..3]);
    log.extend_from_slice(b"data: {\"type\": \"TEXT_MESSAGE_CONTENT\", \"messageId\": \n\n");
    log.extend_from_slice(&sse(&run()[3..]));
    let r = replay_sse(&log, Vec::new(), json!({}), ReplayOptions::default());
    let err = r.error.expect("a decode error");
    assert_eq!((err.stage, err.index), (Stage::Decode, 3));
    assert_eq!(r.events, 4);
    assert_eq!(r.messages[0].to_value()["content"], "Hel");
    assert_eq!(r.state, json!({"n": 0, "items": []}));
    // A JSON value that is not an object is not an event.
    let r = replay_sse(b"data: [1]\n\n", Vec::new(), json!({}), ReplayOptions::default());
    assert_eq!(r.error.unwrap().stage, Stage::Decode);
}

#[test]
fn verification_error_names_rule_index_and_ids() {
    let mut events = run();
    events.insert(5, json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"}));
    let e = verify_events(&expand_chunks(events.clone()).0).unwrap_err();
    assert_eq!((e.stage, e.rule, e.event_type.as_str()), (Stage::Verify, Some("R12"), "TEXT_MESSAGE_CONTENT"));
    assert_eq!(e.ids, vec!["nope".to_string()]);
    assert!(e.to_string().contains("R12") && e.to_string().contains("nope"));
    // Through the pipeline, the index is the caller's (chunks expanded to more events).
    let r = replay(events, Vec::new(), json!({}), ReplayOptions { verify: true, ..ReplayOptions::default() });
    let err = r.error.unwrap();
    assert_eq!((err.stage, err.index), (Stage::Verify, 5));
    assert_eq!(r.messages[0].to_value()["content"], "Hello", "events before the violation are applied");
}

#[test]
fn chunk_errors_and_incremental_expansion() {
    let events = run();
    let (whole, err) = expand_chunks(events.clone());
    assert!(err.is_none());
    let mut x = ChunkExpander::new();
    let inc: Vec<Value> = events.into_iter().flat_map(|e| x.push(e).unwrap()).collect();
    assert_eq!(whole, inc);
    let mut x = ChunkExpander::new();
    let e = x.push(json!({"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "delta": "{"})).unwrap_err();
    assert_eq!((e.stage, e.index, e.event_type.as_str()), (Stage::Chunks, 0, "TOOL_CALL_CHUNK"));
    assert!(e.message.contains("toolCallName"));
}

#[test]
fn reducer_rejects_unexpanded_chunks_and_keeps_going_state() {
    let mut ap = EventApplier::default();
    let e = ap.apply(&json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"})).unwrap_err();
    assert_eq!(e.stage, Stage::Apply);
    assert_eq!(ap.messages().len(), 0);
    let c = ap.apply(&json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"})).unwrap();
    assert!(c.is_empty() && c.warning.unwrap().contains("No message found"));
}

#[test]
fn surrogate_halves_split_across_deltas_are_joined() {
    let log = b"data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}\n\n\
data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a\\ud83d\"}\n\n\
data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"\\ude00b\"}\n\n";
    let r = replay_sse(log, Vec::new(), json!({}), ReplayOptions::default());
    assert!(r.error.is_none());
    assert_eq!(r.messages[0].to_value()["content"], "a\u{1F600}b");
    // A half that stays alone is kept (in its private-use form), not replaced.
    let r = replay_sse(&log[..log.len() - 60], Vec::new(), json!({}), ReplayOptions::default());
    let content = r.messages[0].get("content").and_then(Value::as_str).unwrap();
    assert_eq!(content.chars().last().and_then(agui_core::stream::kept_surrogate), Some(0xD83D));
}

#[test]
fn several_logs_on_threads_match_one_by_one() {
    use agui_core::stream::replay_sse_many;
    let a = sse(&run());
    let mut b = sse(&run()[..5]);
    b.extend_from_slice(b"data: not json\n\n");
    let logs: Vec<&[u8]> = vec![&a, &b, &a];
    let many = replay_sse_many(&logs, ReplayOptions::default(), 2);
    assert_eq!(many.len(), 3);
    for (r, log) in many.iter().zip(&logs) {
        let one = replay_sse(log, Vec::new(), json!({}), ReplayOptions::default());
        assert_eq!((r.events, &r.state, r.error.as_ref().map(|e| e.index)), (one.events, &one.state, one.error.as_ref().map(|e| e.index)));
        assert_eq!(r.messages[0], one.messages[0]);
    }
    assert_eq!(many[1].error.as_ref().unwrap().index, 5);
}

#[test]
fn invalid_utf8_is_replaced_not_rejected() {
    let log = b"data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a\xffb\"}\n\n";
    let r = replay_sse(log, Vec::new(), json!({}), ReplayOptions::default());
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.messages[0].to_value()["content"], "a\u{FFFD}b");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let depth = 100_000;
    let mut payload = String::from("data: {\"type\":\"STATE_SNAPSHOT\",\"snapshot\":");
    payload.push_str(&"[".repeat(depth));
    payload.push_str(&"]".repeat(depth));
    payload.push_str("}\n\n");
    let r = replay_sse(payload.as_bytes(), Vec::new(), json!({}), ReplayOptions::default());
    assert_eq!(r.error.unwrap().stage, Stage::Decode);
}

#[test]
fn compaction_of_many_unfinished_streams_is_linear() {
    use agui_core::stream::compact_events;
    // Messages that never end, each followed by an unrelated event: a linear search per
    // event would make 4x the events take 16x the time. A ratio of two sizes (best of three
    // each), not a wall-clock limit, so a loaded machine slows both alike.
    let run = |n: usize| {
        let mut events = Vec::new();
        for i in 0..n {
            events.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": format!("m{i}"), "delta": "x"}));
            events.push(json!({"type": "CUSTOM", "name": "c", "value": i}));
        }
        let t = std::time::Instant::now();
        let (out, warnings) = compact_events(events);
        let took = t.elapsed().as_secs_f64();
        assert!(warnings.is_empty());
        assert_eq!(out.len(), 2 * n);
        took
    };
    let best = |n: usize| (0..3).map(|_| run(n)).fold(f64::INFINITY, f64::min);
    let growth = best(40_000) / best(10_000).max(1e-6);
    assert!(growth < 10.0, "4x the events took {growth:.1}x the time");
}

#[test]
fn malformed_histories_do_not_panic() {
    // Messages and tool calls that are not objects, ids that are absent or not strings.
    let messages = vec![
        json!(null),
        json!(7),
        json!({"role": "assistant", "toolCalls": [null, 3, {"function": {"name": "f"}}]}),
        json!({"id": 5, "role": "user", "content": [1]}),
    ];
    let mut ap = EventApplier::new(messages, json!(null));
    let events = [
        json!({"type": "TEXT_MESSAGE_CONTENT", "delta": "x"}),
        json!({"type": "TEXT_MESSAGE_END"}),
        json!({"type": "TOOL_CALL_ARGS", "delta": "x"}),
        json!({"type": "TOOL_CALL_END", "metadata": {"a": 1}}),
        json!({"type": "TOOL_CALL_START", "toolCallName": "g"}),
        json!({"type": "TOOL_CALL_RESULT", "content": "r"}),
        json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "encryptedValue": "e"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": 5, "delta": 1.5}),
        json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}),
        json!({"type": "ACTIVITY_DELTA", "messageId": 5, "patch": []}),
        json!({"type": "MESSAGES_SNAPSHOT", "messages": [7, {"id": "x", "role": "user", "content": "hi"}]}),
    ];
    for e in &events {
        let _ = ap.apply(e);
    }
    assert!(ap.messages().any(|m| m.to_value()["id"] == "x"));
}
