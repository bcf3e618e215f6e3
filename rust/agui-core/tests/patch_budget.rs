//! The memory budget of a patch application: what a patch builds is counted as it is
//! built, and a patch past its budget fails (the document unchanged), never an abort. A
//! stream's patches also share one allowance for what their copies copy.

use agui_core::patch::{apply_json_patch, ErrorKind, Options};
use agui_core::stream::{compact_events_within, replay, replay_sse, PatchLimits, ReplayOptions};
use serde_json::{json, Value};

/// A patch copying the whole document into itself `n` times: it doubles each time.
fn doubling(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!({"op": "copy", "from": "", "path": format!("/b{i}")})).collect())
}

fn sse(events: &[Value]) -> Vec<u8> {
    events.iter().flat_map(|e| format!("data: {e}\n\n").into_bytes()).collect()
}

#[test]
fn a_patch_past_its_budget_fails_and_leaves_the_document() {
    let mut doc = json!({"a": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"});
    let before = doc.clone();
    let opts = Options { max_bytes: 1 << 20, ..Options::default() };
    let e = apply_json_patch(&mut doc, &doubling(40), &opts).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Limit);
    assert_eq!(agui_core::kind::Kind::from(e.kind), agui_core::kind::Kind::PatchLimit);
    assert!(e.to_string().contains("exceed the limit of 1048576 bytes"), "{e}");
    assert!(e.index.is_some_and(|i| (10..20).contains(&i)), "{e}");
    assert_eq!(doc, before);
    // what a patch adds counts too, copies or not
    let big = json!([{"op": "add", "path": "/big", "value": "x".repeat(2 << 20)}]);
    assert_eq!(apply_json_patch(&mut doc, &big, &opts).unwrap_err().kind, ErrorKind::Limit);
    assert_eq!(doc, before);
    // a budget counts one patch: the same patch applies under a larger one
    apply_json_patch(&mut doc, &big, &Options { max_bytes: 3 << 20, ..Options::default() }).unwrap();
    // keys are counted by their length
    let mut doc = json!({"k".repeat(1 << 16): 1});
    assert_eq!(apply_json_patch(&mut doc, &doubling(6), &opts).unwrap_err().kind, ErrorKind::Limit);
}

#[test]
fn the_copy_bomb_log_replays_with_a_warning() {
    let events = [
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"a": "xxxxxxxxxxxxxxxxxxxxxxxxxx"}}),
        json!({"type": "STATE_DELTA", "delta": doubling(25)}),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    ];
    let options = ReplayOptions { max_patch_bytes: 1 << 20, ..ReplayOptions::default() };
    for r in [replay_sse(&sse(&events), vec![], json!({}), options), replay(events.clone(), vec![], json!({}), options)] {
        assert!(r.error.is_none());
        assert_eq!(r.state, json!({"a": "xxxxxxxxxxxxxxxxxxxxxxxxxx"}));
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].message.contains("exceed the limit of 1048576 bytes"), "{:?}", r.warnings);
    }
    // the default budget (128 MiB) stops it too
    let r = replay_sse(&sse(&events), vec![], json!({}), ReplayOptions::default());
    assert!(r.warnings.iter().any(|w| w.message.contains("exceed the limit")), "{:?}", r.warnings);
    let (out, warnings) = compact_events_within(events.clone(), PatchLimits::new(512, 1 << 20));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(out.iter().any(|e| e["snapshot"] == json!({"a": "xxxxxxxxxxxxxxxxxxxxxxxxxx"})));
}

/// Many small patches that each double the state: each fits the budget of one patch, but
/// together they would grow it without end; the copy allowance of the stream stops them.
#[test]
fn copies_share_one_allowance_over_a_stream() {
    let mut events = vec![json!({"type": "STATE_SNAPSHOT", "snapshot": {"a": "x".repeat(1000)}})];
    events.extend((0..64).map(|i| json!({"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "", "path": format!("/c{i}")}]})));
    let max = 1 << 20;
    let options = ReplayOptions { max_patch_bytes: max, ..ReplayOptions::default() };
    let r = replay_sse(&sse(&events), vec![], json!({}), options);
    let size = serde_json::to_string(&r.state).unwrap().len();
    assert!(size < 2 * max, "{size}");
    assert!(r.warnings.iter().any(|w| w.message.contains("copied by all the patches exceed the limit of 1048576 bytes")), "{:?}", r.warnings);
    // activity content: the same allowance
    let mut events = vec![json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "x", "content": {"a": "x".repeat(1000)}})];
    events.extend((0..64).map(|i| json!({"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "x", "patch": [{"op": "copy", "from": "", "path": format!("/c{i}")}]})));
    let r = replay_sse(&sse(&events), vec![], json!({}), options);
    let size = serde_json::to_string(&r.messages).unwrap().len();
    assert!(size < 2 * max, "{size}");
    assert!(r.warnings.iter().any(|w| w.message.contains("exceed the limit")), "{:?}", r.warnings);
}

/// An activity patch that fails leaves the content as it was: missing, null or a value.
#[test]
fn a_failed_activity_patch_leaves_the_content() {
    for content in [None, Some(Value::Null), Some(json!({"k": 1}))] {
        let mut snap = json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "x"});
        if let Some(c) = &content {
            snap["content"] = c.clone();
        }
        let bad = json!({"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "x", "patch": [{"op": "remove", "path": "/nope"}]});
        // The reducer's own handling: the schema stage refuses a snapshot without object content.
        let options = ReplayOptions { schema: false, ..ReplayOptions::default() };
        let r = replay(vec![snap.clone()], vec![], json!({}), options);
        let after = replay(vec![snap, bad], vec![], json!({}), options);
        assert_eq!(serde_json::to_string(&after.messages).unwrap(), serde_json::to_string(&r.messages).unwrap());
        assert_eq!(after.warnings.len(), 1);
    }
}
