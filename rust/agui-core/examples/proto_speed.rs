//! Quick timing of the core codec (cargo run --release --example proto_speed).
use agui_core::proto;
use std::time::Instant;

fn main() {
    let json = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_1","delta":"Hello, world"}"#;
    let n = 1_000_000;
    let t = Instant::now();
    let mut out = Vec::new();
    for _ in 0..n {
        out.clear();
        proto::encode_json(json, false, &mut out).unwrap();
    }
    println!("encode_json {:.0} ns", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    for _ in 0..n {
        let v = proto::parse_json(json).unwrap();
        std::hint::black_box(v);
    }
    println!("parse_json {:.0} ns", t.elapsed().as_nanos() as f64 / n as f64);
    let msg = out.clone();
    let t = Instant::now();
    for _ in 0..n {
        let mut w = Vec::new();
        let v = proto::decode_message_to_json(&msg, &mut w).unwrap();
        std::hint::black_box(v);
    }
    println!("decode_message_to_json {:.0} ns", t.elapsed().as_nanos() as f64 / n as f64);
}
