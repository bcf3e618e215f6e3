//! google.protobuf.Value/Struct corner cases of the decoder (reference §5.3) and the
//! encoder's JSON reading (duplicate keys, key order, numbers).

use agui_core::proto::{self, wkt};
use serde_json::json;

fn value_json(body: &[u8]) -> Option<serde_json::Value> {
    let mut out = Vec::new();
    wkt::value_body(body, &mut agui_core::json::JsonSink::new(&mut out), 0).unwrap().then(|| serde_json::from_slice(&out).unwrap())
}

fn entry(key: &[u8], value_body: &[u8]) -> Vec<u8> {
    let mut e = Vec::new();
    if !key.is_empty() {
        e.push(0x0A);
        e.push(key.len() as u8);
        e.extend_from_slice(key);
    }
    e.push(0x12);
    e.push(value_body.len() as u8);
    e.extend_from_slice(value_body);
    let mut out = vec![0x0A, e.len() as u8];
    out.extend(e);
    out
}

fn struct_value(entries: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = entries.concat();
    let mut v = vec![0x2A, body.len() as u8];
    v.extend(body);
    v
}

const ONE: [u8; 9] = [0x11, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F];
const TRUE: [u8; 2] = [0x20, 0x01];
const NULL: [u8; 2] = [0x08, 0x00];

#[test]
fn scalars() {
    assert_eq!(value_json(&NULL), Some(json!(null)));
    assert_eq!(value_json(&[0x08, 0x05]), Some(json!(null))); // any enum number is null
    assert_eq!(value_json(&TRUE), Some(json!(true)));
    assert_eq!(value_json(&ONE), Some(json!(1)));
    assert_eq!(value_json(&[0x1A, 0x02, b'h', b'i']), Some(json!("hi")));
    assert_eq!(value_json(&[]), None); // no kind
    let mut neg_zero = vec![0x11];
    neg_zero.extend((-0.0f64).to_le_bytes());
    let mut out = Vec::new();
    wkt::value_body(&neg_zero, &mut agui_core::json::JsonSink::new(&mut out), 0).unwrap();
    assert_eq!(out, b"-0.0");
    let mut nan = vec![0x11];
    nan.extend(f64::NAN.to_le_bytes());
    assert_eq!(value_json(&nan), Some(json!(null)));
}

#[test]
fn last_kind_wins_and_structs_merge() {
    // string then bool: the bool wins
    let mut b = vec![0x1A, 0x01, b'x'];
    b.extend(TRUE);
    assert_eq!(value_json(&b), Some(json!(true)));
    // two struct_value occurrences merge key-wise
    let mut b = struct_value(&[entry(b"a", &ONE)]);
    b.extend(struct_value(&[entry(b"b", &TRUE)]));
    assert_eq!(value_json(&b), Some(json!({"a": 1, "b": true})));
}

#[test]
fn struct_entries() {
    // duplicated key: first position, last value
    let b = struct_value(&[entry(b"a", &ONE), entry(b"b", &NULL), entry(b"a", &TRUE)]);
    let mut out = Vec::new();
    wkt::value_body(&b, &mut agui_core::json::JsonSink::new(&mut out), 0).unwrap();
    assert_eq!(out, br#"{"a":true,"b":null}"#);
    // entry with a kind-less value is dropped; entry without key has key ""
    let b = struct_value(&[entry(b"gone", &[]), entry(b"", &ONE)]);
    let mut out = Vec::new();
    wkt::value_body(&b, &mut agui_core::json::JsonSink::new(&mut out), 0).unwrap();
    assert_eq!(out, br#"{"":1}"#);
    // many keys (hash index) with a late duplicate
    let mut entries: Vec<Vec<u8>> = (0..40u8).map(|i| entry(&[b'k', b'0' + i % 10, b'0' + i / 10], &ONE)).collect();
    entries.push(entry(b"k00", &TRUE));
    let mut body = entries.concat();
    let mut v = vec![0x2A];
    prost::encoding::encode_varint(body.len() as u64, &mut v);
    v.append(&mut body);
    let j = value_json(&v).unwrap();
    assert_eq!(j.as_object().unwrap().len(), 40);
    assert_eq!(j["k00"], json!(true));
    assert_eq!(j.as_object().unwrap().keys().next().unwrap(), "k00");
}

#[test]
fn list_elements_without_kind_are_null() {
    let mut list = vec![0x0A, 0x00]; // kind-less element
    list.extend([0x0A, 0x02]);
    list.extend(TRUE);
    let mut b = vec![0x32, list.len() as u8];
    b.extend(list);
    assert_eq!(value_json(&b), Some(json!([null, true])));
}

#[test]
fn malformed_payloads_are_errors_not_panics() {
    for bad in [&[0x2A, 0x05, 0x0A][..], &[0x11, 0x00], &[0x32, 0x02, 0x0A, 0x09], &[0x1A]] {
        let mut out = Vec::new();
        assert!(wkt::value_body(bad, &mut agui_core::json::JsonSink::new(&mut out), 0).is_err(), "{bad:?}");
    }
}

fn encode(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    proto::encode_json(text.as_bytes(), false, &mut out).unwrap();
    out
}

#[test]
fn encoder_reads_json_like_javascript() {
    // duplicate keys: first position, last value (also in event fields)
    assert_eq!(
        encode(r#"{"type":"STATE_SNAPSHOT","snapshot":{"a":1,"b":2,"a":3}}"#),
        encode(r#"{"type":"STATE_SNAPSHOT","snapshot":{"a":3,"b":2}}"#)
    );
    assert_eq!(
        encode(r#"{"type":"TEXT_MESSAGE_START","messageId":"x","messageId":"y"}"#),
        encode(r#"{"type":"TEXT_MESSAGE_START","messageId":"y"}"#)
    );
    // integer-like keys first, ascending
    assert_eq!(
        encode(r#"{"type":"STATE_SNAPSHOT","snapshot":{"b":1,"10":2,"2":3}}"#),
        encode(r#"{"type":"STATE_SNAPSHOT","snapshot":{"2":3,"10":2,"b":1}}"#)
    );
    // number spellings are the same double
    assert_eq!(
        encode(r#"{"type":"STATE_SNAPSHOT","snapshot":[5.0,1E2,9007199254740993]}"#),
        encode(r#"{"type":"STATE_SNAPSHOT","snapshot":[5,100,9007199254740992]}"#)
    );
    // fractional timestamp: error, integral float: fine
    let mut out = Vec::new();
    assert!(proto::encode_json(br#"{"type":"RAW","event":1,"timestamp":1.5}"#, false, &mut out).is_err());
    assert_eq!(
        encode(r#"{"type":"RAW","event":1,"timestamp":1.7e12}"#),
        encode(r#"{"type":"RAW","event":1,"timestamp":1700000000000}"#)
    );
    // unpaired surrogate escapes -> U+FFFD
    assert_eq!(
        encode(r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\ud800b"}"#),
        encode("{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"a\u{FFFD}b\"}")
    );
    // unknown type: zero bytes
    assert!(encode(r#"{"type":"THINKING_START"}"#).is_empty());
}
