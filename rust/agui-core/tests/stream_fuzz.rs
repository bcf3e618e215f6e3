//! Every stage on malformed events: member values swapped for other JSON types, members
//! dropped. Whatever the reference would do, here nothing panics: each event is accepted,
//! warned about, or rejected with a `StreamError`.

use agui_core::stream::legacy::{LegacyChain, Shims};
use agui_core::stream::{compact_events, expand_chunks, replay, verify_events, EventApplier, ReplayOptions};
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;

fn load(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/client").join(name);
    let mut text = String::new();
    let mut f = std::fs::File::open(path).unwrap();
    if name.ends_with(".gz") {
        flate2::read::GzDecoder::new(f).read_to_string(&mut text).unwrap();
    } else {
        f.read_to_string(&mut text).unwrap();
    }
    text.lines().map(|l| agui_core::stream::parse_json(l.as_bytes()).unwrap()).collect()
}

use agui_core::test_rng::Rng;

fn odd_value(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => Value::Null,
        1 => json!(7),
        2 => json!(-0.5),
        3 => json!(true),
        4 => json!(""),
        5 => json!([null, 1, "a", {}]),
        6 => json!({"type": "success", "id": null}),
        _ => json!("\u{10F83D}"), // a kept surrogate half
    }
}

/// Swap a member (at any depth) for another type, or drop it.
fn mutate(v: &mut Value, rng: &mut Rng, depth: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let i = rng.below(m.len());
            let key = m.keys().nth(i).unwrap().clone();
            if key == "type" && rng.below(4) != 0 {
                return;
            }
            match rng.below(3) {
                0 => {
                    m.shift_remove(&key);
                }
                1 if depth < 4 => mutate(m.get_mut(&key).unwrap(), rng, depth + 1),
                _ => {
                    m.insert(key, odd_value(rng));
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = rng.below(a.len());
            if rng.below(2) == 0 && depth < 4 {
                mutate(&mut a[i], rng, depth + 1);
            } else {
                a[i] = odd_value(rng);
            }
        }
        _ => *v = odd_value(rng),
    }
}

fn streams() -> Vec<(Vec<Value>, Vec<Value>, Value)> {
    let mut out = Vec::new();
    for f in ["chunks.jsonl", "verify.jsonl", "compact.jsonl", "legacy.jsonl"] {
        for c in load(f) {
            out.push((c["input"].as_array().cloned().unwrap_or_default(), Vec::new(), json!({})));
        }
    }
    for c in load("apply.jsonl.gz").into_iter().filter(|c| c["events"].as_array().is_some_and(|e| e.len() < 400)) {
        let i = &c["initial"];
        out.push((c["events"].as_array().cloned().unwrap(), i["messages"].as_array().cloned().unwrap_or_default(), i["state"].clone()));
    }
    out
}

#[test]
fn malformed_events_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (events, messages, state) in streams() {
        for _round in 0..3 {
            let mut events = events.clone();
            for _ in 0..1 + events.len() / 4 {
                let i = rng.below(events.len());
                if let Some(e) = events.get_mut(i) {
                    mutate(e, &mut rng, 0);
                }
            }
            let _ = expand_chunks(events.clone());
            let _ = verify_events(&events);
            let _ = compact_events(events.clone());
            let mut ap = EventApplier::new(messages.clone(), state.clone());
            for e in &events {
                let _ = ap.apply(e);
            }
            let mut chain = LegacyChain::new(Shims::for_peer("0.0.39"), Box::new(|| "id".to_string()));
            let mut input = messages.clone();
            chain.prepare_input_messages(&mut input);
            for e in &events {
                let _ = chain.push(e.clone());
            }
            let opts = ReplayOptions { verify: rng.below(2) == 0, ..ReplayOptions::default() };
            let _ = replay(events, messages.clone(), state.clone(), opts);
        }
    }
}

#[test]
fn malformed_payload_bytes_never_panic() {
    use agui_core::stream::replay_sse;
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for (events, _, _) in streams().into_iter().step_by(3) {
        let mut log = Vec::new();
        for e in &events {
            let mut p = serde_json::to_vec(e).unwrap();
            match rng.below(6) {
                0 if !p.is_empty() => {
                    let cut = rng.below(p.len());
                    p.truncate(cut)
                }
                1 if !p.is_empty() => {
                    let i = rng.below(p.len());
                    let pool = b"{}[]\",:\\\xff\x00u";
                    p[i] = pool[rng.below(pool.len())];
                }
                2 => p = b"{\"type\":\"TEXT_MESSAGE_CHUNK\",\"delta\":\"\\ud83d\"}".to_vec(),
                _ => {}
            }
            log.extend_from_slice(b"data: ");
            log.extend_from_slice(&p);
            log.extend_from_slice(b"\n\n");
        }
        for verify in [false, true] {
            let _ = replay_sse(&log, Vec::new(), json!({}), ReplayOptions { verify, ..ReplayOptions::default() });
        }
    }
}
