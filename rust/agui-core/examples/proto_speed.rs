//! Quick timing of the core codec: cargo run --release --example proto_speed [events.jsonl]
use agui_core::proto;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1);
    let text = match &path {
        Some(p) => std::fs::read(p).unwrap(),
        None => br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_1","delta":"Hello, world"}"#.to_vec(),
    };
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let n = (200_000 / lines.len()).max(5);
    let per = |t: Instant| t.elapsed().as_nanos() as f64 / (n * lines.len()) as f64;
    let t = Instant::now();
    let mut out = Vec::new();
    for _ in 0..n {
        for l in &lines {
            out.clear();
            proto::encode_json(l, false, &mut out).unwrap();
        }
    }
    println!("encode_json {:.0} ns/event", per(t));
    let t = Instant::now();
    for _ in 0..n {
        for l in &lines {
            std::hint::black_box(proto::parse_json(l).unwrap());
        }
    }
    println!("parse_json {:.0} ns/event", per(t));
    let t = Instant::now();
    for _ in 0..n {
        for l in &lines {
            std::hint::black_box(proto::node::parse(l).unwrap());
        }
    }
    println!("node::parse {:.0} ns/event", per(t));
    let msgs: Vec<Vec<u8>> = lines.iter().map(|l| { let mut o = Vec::new(); proto::encode_json(l, false, &mut o).unwrap(); o }).collect();
    let t = Instant::now();
    for _ in 0..n {
        for m in &msgs {
            let mut w = Vec::new();
            std::hint::black_box(proto::decode_message_to_json(m, &mut w).unwrap());
        }
    }
    println!("decode_message_to_json {:.0} ns/event", per(t));
    let t = Instant::now();
    for _ in 0..n {
        for m in &msgs {
            let mut w = Vec::new();
            std::hint::black_box(proto::decode_message(m, &mut w).unwrap());
        }
    }
    println!("decode_message (Value) {:.0} ns/event", per(t));
}
