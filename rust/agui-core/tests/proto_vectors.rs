//! Conformance of the protobuf codec with the reference vectors (tests/vectors/codec).

use agui_core::proto::{self, Error};
use serde_json::Value as J;
use std::path::PathBuf;

fn vectors(name: &str) -> Vec<J> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/codec").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    text.split('\n').filter(|l| !l.is_empty()).map(|l| proto::parse_json(l.as_bytes()).unwrap()).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// JSON equality with numbers compared as doubles (so 1 == 1.0 and -0 == 0).
fn same(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Number(x), J::Number(y)) => {
            proto::wkt::number_f64(x) == proto::wkt::number_f64(y)
        }
        (J::Array(x), J::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn input_text(case: &J) -> Vec<u8> {
    match case.get("event_json").and_then(J::as_str) {
        Some(t) => t.as_bytes().to_vec(),
        None => serde_json::to_vec(&case["event"]).unwrap(),
    }
}

#[test]
fn events_encode_byte_exact() {
    let mut bad = Vec::new();
    let cases = vectors("events.jsonl");
    for case in &cases {
        let mut out = Vec::new();
        match proto::encode_json(&input_text(case), true, &mut out) {
            Ok(()) => {
                if hex(&out) != case["proto_frame_hex"].as_str().unwrap() {
                    bad.push(format!("{}: got {}\n   want {}", case["name"], hex(&out), case["proto_frame_hex"]));
                }
            }
            Err(e) => bad.push(format!("{}: error {e}", case["name"])),
        }
    }
    assert!(bad.is_empty(), "{} of {} mismatched:\n{}", bad.len(), cases.len(), bad.join("\n"));
}

#[test]
fn events_decode_as_reference() {
    let mut bad = Vec::new();
    let cases = vectors("events.jsonl");
    for case in &cases {
        let frame = unhex(case["proto_frame_hex"].as_str().unwrap());
        let mut w = Vec::new();
        match proto::decode_message(&frame[4..], &mut w) {
            Ok(v) => {
                if !same(&v, &case["proto_decoded"]) {
                    bad.push(format!("{}: got {v}\n   want {}", case["name"], case["proto_decoded"]));
                }
            }
            Err(e) => bad.push(format!("{}: error {e}", case["name"])),
        }
    }
    assert!(bad.is_empty(), "{} of {} mismatched:\n{}", bad.len(), cases.len(), bad.join("\n"));
}

fn b64(s: &str) -> Vec<u8> {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        if c == b'=' {
            break;
        }
        acc = (acc << 6) | T.iter().position(|&x| x == c).unwrap() as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

fn run_stream(data: &[u8], chunks: &[usize]) -> (Vec<J>, Vec<String>, Option<Error>) {
    let mut dec = proto::StreamDecoder::default();
    let mut events = Vec::new();
    let mut warnings = Vec::new();
    let mut pos = 0;
    for &n in chunks {
        if let Err(e) = dec.feed_with(&data[pos..pos + n], &mut warnings, |t| events.push(serde_json::from_slice(t).unwrap())) {
            return (events, warnings, Some(e));
        }
        pos += n;
    }
    let err = dec.finish().err();
    (events, warnings, err)
}

fn kind(e: &Error) -> &'static str {
    match e {
        Error::FrameTooLarge { .. } => "frame_too_large",
        Error::Truncated { .. } => "truncated",
        _ => "decode",
    }
}

#[test]
fn proto_streams_recorded_and_random_chunkings() {
    let mut bad = Vec::new();
    let mut seed = 0x5eed_u64;
    for case in vectors("proto_streams.jsonl") {
        let data = b64(case["stream_b64"].as_str().unwrap());
        let recorded: Vec<usize> = case["chunk_sizes"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap() as usize).collect();
        let mut chunkings = vec![recorded, vec![data.len()]];
        for _ in 0..5 {
            let mut c = Vec::new();
            let mut left = data.len();
            while left > 0 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let n = ((seed >> 33) as usize % 64).min(left);
                c.push(n);
                left -= n;
            }
            chunkings.push(c);
        }
        let want_events = case["events"].as_array().unwrap();
        let want_kind = case["error_kind"].as_str();
        for ch in &chunkings {
            let (events, warnings, err) = run_stream(&data, ch);
            let ok_events = events.len() == want_events.len() && events.iter().zip(want_events).all(|(a, b)| same(a, b));
            let got_kind = err.as_ref().map(kind);
            let want_warn = case.get("warnings").and_then(J::as_array).map_or(0, |w| w.len());
            if !ok_events || got_kind != want_kind || warnings.len() != want_warn {
                bad.push(format!(
                    "{}: events {}/{} ok={ok_events}, error {:?} (want {:?}), warnings {}",
                    case["name"], events.len(), want_events.len(), err.map(|e| e.to_string()), want_kind, warnings.len()
                ));
                break;
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn random_bytes_never_panic() {
    let mut seed = 12345u64;
    for _ in 0..20000 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let len = (seed >> 58) as usize;
        let mut b = Vec::with_capacity(len);
        for _ in 0..len {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            b.push((seed >> 56) as u8);
        }
        let _ = proto::decode_message(&b, &mut Vec::new());
        let _ = proto::decode_stream_json(&b, 1 << 20);
    }
    // Mutations of real frames reach deeper into the decoder.
    for case in vectors("events.jsonl").iter().take(200) {
        let frame = unhex(case["proto_frame_hex"].as_str().unwrap());
        for i in 4..frame.len().min(64) {
            let mut m = frame[4..].to_vec();
            m[i - 4] ^= 0x5a;
            let _ = proto::decode_message(&m, &mut Vec::new());
            let _ = proto::decode_message(&frame[4..i], &mut Vec::new());
        }
    }
}

#[test]
fn frame_limits() {
    // Exactly at the limit waits for data, one over fails from the prefix alone.
    let mut s = proto::FrameSplitter::new(100);
    assert!(s.feed(&96u32.to_be_bytes(), |_, _, _| Ok(())).is_ok());
    assert!(matches!(s.finish(), Err(Error::Truncated { trailing: 4, .. })));
    let mut s = proto::FrameSplitter::new(100);
    assert!(matches!(
        s.feed(&97u32.to_be_bytes(), |_, _, _| Ok(())),
        Err(Error::FrameTooLarge { frame_index: 0, offset: 0, length: 97, .. })
    ));
}

#[test]
fn first_boundary_of_a_chunk() {
    // Frames of 3 and 2 message bytes: [0,0,0,3,a,b,c][0,0,0,2,d,e].
    let stream = [0u8, 0, 0, 3, 1, 2, 3, 0, 0, 0, 2, 4, 5];
    for cut in 0..stream.len() {
        let mut s = proto::FrameSplitter::new(100);
        s.feed(&stream[..cut], |_, _, _| Ok(())).unwrap();
        let rest = &stream[cut..];
        // The next frame start at or after `cut`, relative to the chunk.
        let want = [0usize, 7, 13].iter().find(|&&b| b >= cut).map_or(rest.len(), |&b| b - cut);
        let want = if s.pending() == 0 { 0 } else { want };
        assert_eq!(s.first_boundary(rest), want, "cut at {cut}");
        // A chunk too short to complete the buffered prefix or frame: all of it.
        if s.pending() > 0 {
            assert_eq!(s.first_boundary(&rest[..1]), 1);
        }
    }
}

#[test]
fn schema_summary_lists_all_arms() {
    let s: J = serde_json::from_str(proto::SCHEMA_JSON).unwrap();
    let ev = s["ag_ui.Event"].as_array().unwrap();
    assert_eq!(ev.len(), 31);
    for f in ev {
        let n = f[1].as_u64().unwrap() as u32;
        let name = f[0].as_str().unwrap().to_uppercase();
        assert_eq!(proto::arm_number_to_type(n), name);
    }
}
