//! The reducer generic over its state (`stream::State`): a binding's own document sees
//! every snapshot and delta, and `Replayer::push_state_with` takes a delta directly only
//! when the stages let it past (no verification, no pending chunk stream).

use agui_core::patch::{Operation, PatchError};
use agui_core::stream::{PatchLimits, ReplayOptions, Replayer, State};
use serde_json::{json, Value};

/// A JSON state that counts what reached it.
#[derive(Debug, Default)]
struct Counting {
    doc: Value,
    sets: usize,
    patches: usize,
}

impl State for Counting {
    fn set(&mut self, snapshot: &Value) -> Result<(), String> {
        self.sets += 1;
        self.doc.set(snapshot)
    }
    fn patch(&mut self, ops: Vec<Operation>, limits: &mut PatchLimits) -> Result<(), PatchError> {
        self.patches += 1;
        self.doc.patch(ops, limits)
    }
}

fn text(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

#[test]
fn snapshots_and_deltas_reach_the_state_as_on_a_json_state() {
    let events = [
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}}),
        json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/b", "value": 2}]}),
        json!({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/missing"}]}),
        json!({"delta": [{"op": "add", "path": "/c", "value": 3}], "type": "STATE_DELTA"}),
    ];
    let mut own = Replayer::new(Vec::new(), Counting { doc: json!({}), ..Default::default() }, ReplayOptions::default());
    let mut plain = Replayer::new(Vec::new(), json!({}), ReplayOptions::default());
    for e in &events {
        let a = own.push_json(&text(e.clone())).unwrap();
        let b = plain.push_json(&text(e.clone())).unwrap();
        assert_eq!(a, b);
    }
    assert_eq!(own.take_warnings(), plain.take_warnings());
    let s = own.applier().state();
    assert_eq!(&s.doc, plain.applier().state());
    assert_eq!(s.doc, json!({"a": 1, "b": 2, "c": 3}));
    assert_eq!((s.sets, s.patches), (1, 3));
}

#[test]
fn deltas_go_directly_only_when_the_stages_let_them_past() {
    let mut r = Replayer::new(Vec::new(), json!({}), ReplayOptions::default());
    assert!(r.takes_state_delta_directly());
    let c = r.push_state_with(|s, _| {
        s.as_object_mut().unwrap().insert("x".into(), json!(1));
        true
    });
    assert!(c.is_some_and(|c| c.state));
    // declined: nothing counted, the event still to push
    assert!(r.push_state_with(|_, _| false).is_none());
    // a pending chunk stream must be closed by the delta: the general path
    r.push_json(&text(json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"}))).unwrap();
    assert!(!r.takes_state_delta_directly());
    assert!(r.push_state_with(|_, _| panic!("not called")).is_none());
    r.push_json(&text(json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/y", "value": 2}]}))).unwrap();
    assert!(r.takes_state_delta_directly());
    assert_eq!(r.applier().state(), &json!({"x": 1, "y": 2}));
    // indices count the direct delta as an event
    r.push_json(&text(json!({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/nope"}]}))).unwrap();
    assert_eq!(r.take_warnings().last().map(|w| w.index), Some(3));

    let verified = Replayer::new(Vec::new(), json!({}), ReplayOptions { verify: true, ..ReplayOptions::default() });
    assert!(!verified.takes_state_delta_directly());
}
