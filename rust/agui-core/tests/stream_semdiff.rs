//! Divergences from the reference client that the differential test
//! (tests/interop/test_semantics_diff.py) found, as the core sees them; the expected
//! values are what `@ag-ui/client` 1.0.0 / fast-json-patch 3.1.1 produced
//! (tests/vectors/semantics/divergences.jsonl).

use agui_core::decoder::{Legacy, Mode};
use agui_core::patch::{apply_json_patch, Dialect, Options};
use agui_core::stream::{replay, verify_events, ReplayOptions};
use serde_json::{json, Value};

fn fjp(doc: Value, patch: Value) -> Result<Value, String> {
    let mut doc = doc;
    let opts = Options { dialect: Dialect::FastJsonPatch, ..Options::default() };
    apply_json_patch(&mut doc, &patch, &opts).map(|()| doc).map_err(|e| e.to_string())
}

fn state() -> Value {
    json!({"a": 1, "list": [1, 2, 3], "obj": {"b": "x", "c": [true]}})
}

#[test]
fn a_leading_zero_index_is_missing_where_fast_json_patch_checks_existence() {
    for op in [
        json!({"op": "replace", "path": "/list/01", "value": 9}),
        json!({"op": "remove", "path": "/list/01"}),
        json!({"op": "_get", "path": "/list/01"}),
        json!({"op": "replace", "path": "/list/", "value": 0}),
        json!({"op": "move", "path": "/a", "from": "/list/01"}),
        json!({"op": "copy", "path": "/a", "from": "/list/01"}),
    ] {
        assert!(fjp(state(), json!([op])).is_err(), "{op}");
    }
    assert!(fjp(json!({"list": [{"y": 1}]}), json!([{"op": "add", "path": "/list/00/x", "value": 9}])).is_err());
    // an object member named "01" exists
    assert_eq!(fjp(json!({"01": 1}), json!([{"op": "replace", "path": "/01", "value": 2}])).unwrap(), json!({"01": 2}));
}

#[test]
fn a_leading_zero_index_is_read_as_a_number_where_nothing_is_checked() {
    let added = fjp(state(), json!([{"op": "add", "path": "/list/01", "value": 9}])).unwrap();
    assert_eq!(added["list"], json!([1, 9, 2, 3]));
    let tested = fjp(state(), json!([{"op": "test", "path": "/list/01", "value": 2}, {"op": "add", "path": "/ok", "value": true}]));
    assert_eq!(tested.unwrap()["ok"], json!(true));
    let moved = fjp(state(), json!([{"op": "move", "path": "/list/01", "from": "/a"}])).unwrap();
    assert_eq!(moved, json!({"list": [1, 1, 2, 3], "obj": {"b": "x", "c": [true]}}));
}

#[test]
fn move_and_copy_past_the_end_append_but_add_does_not() {
    let moved = fjp(state(), json!([{"op": "move", "path": "/list/9", "from": "/a"}])).unwrap();
    assert_eq!(moved, json!({"list": [1, 2, 3, 1], "obj": {"b": "x", "c": [true]}}));
    let copied = fjp(state(), json!([{"op": "copy", "path": "/list/7", "from": "/obj/b"}])).unwrap();
    assert_eq!(copied["list"], json!([1, 2, 3, "x"]));
    assert!(fjp(state(), json!([{"op": "add", "path": "/list/9", "value": 0}])).is_err());
    // the RFC 6902 dialect keeps refusing all of them
    let mut doc = state();
    assert!(apply_json_patch(&mut doc, &json!([{"op": "move", "path": "/list/9", "from": "/a"}]), &Options::default()).is_err());
}

fn run(middle: Vec<Value>) -> Vec<Value> {
    let mut events = vec![json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})];
    events.extend(middle);
    events.push(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}));
    events
}

#[test]
fn a_replay_drops_types_the_protocol_does_not_describe_before_verifying() {
    let verify = ReplayOptions { verify: true, ..ReplayOptions::default() };
    let mut after = run(vec![]);
    after.push(json!({"type": "SOMETHING_NEW", "payload": 1}));
    let mut first = vec![json!({"type": "RUN_SUSPENDED"})];
    first.extend(run(vec![]));
    let tagged = run(vec![json!({"type": "RUN_SUSPENDED", "subagentRunId": null})]);
    for events in [after, first, tagged] {
        let r = replay(events.clone(), vec![], json!({}), verify);
        assert!(r.error.is_none(), "{:?}", r.error);
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].message.starts_with("[ag-ui][enforce] Dropping unrecognised event"), "{}", r.warnings[0].message);
        // verifyEvents alone lets unknown types pass only where a run is open
        assert!(verify_events(&events).is_err());
    }
    // without the schema stage the event reaches verification
    let mut after = run(vec![]);
    after.push(json!({"type": "SOMETHING_NEW"}));
    let r = replay(after, vec![], json!({}), ReplayOptions { schema: false, ..verify });
    assert_eq!(r.error.map(|e| e.index), Some(2));
}

#[test]
fn a_reasoning_message_end_without_start_is_worded_as_the_reference_words_it() {
    let e = verify_events(&vec![
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "REASONING_MESSAGE_END", "messageId": "m1"}),
    ])
    .unwrap_err();
    assert!(
        e.to_string().contains(
            "Cannot send 'REASONING_MESSAGE_END' event: No active reasoning message found with ID 'm1'. Start a reasoning message with 'REASONING_MESSAGE_START' first."
        ),
        "{e}"
    );
}

#[test]
fn the_decoders_convert_a_0x_event_holding_half_an_emoji() {
    let mut legacy = Legacy::new(true, Mode::Dict);
    let start = legacy.convert(br#"{"type":"THINKING_TEXT_MESSAGE_START"}"#, 512).expect("converted");
    let start: Value = serde_json::from_slice(&start).unwrap();
    let content = legacy.convert(br#"{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"\ud83d"}"#, 512).expect("converted");
    let text = String::from_utf8(content).unwrap();
    // the same reasoning message, the lone surrogate written back as it came
    assert!(text.contains(r#""type":"REASONING_MESSAGE_CONTENT""#), "{text}");
    assert!(text.contains(&format!(r#""messageId":"{}""#, start["messageId"].as_str().unwrap())), "{text}");
    assert!(text.contains(r#""delta":"\ud83d""#), "{text}");
}
