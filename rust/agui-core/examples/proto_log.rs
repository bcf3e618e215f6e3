//! Timing of whole-log decoding stages: cargo run --release --example proto_log <log.bin>
use agui_core::proto::{self, pb, Format};
use prost::Message;
use std::time::Instant;

fn main() {
    let data = std::fs::read(std::env::args().nth(1).expect("path")).unwrap();
    let mut frames = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let n = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        frames.push(&data[pos + 4..pos + 4 + n]);
        pos += 4 + n;
    }
    for _ in 0..3 {
        let t = Instant::now();
        for f in &frames {
            std::hint::black_box(pb::Event::decode(*f).unwrap());
        }
        let prost_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let mut out = Vec::with_capacity(data.len() * 2);
        let mut w = Vec::new();
        for f in &frames {
            proto::decode_message_as(f, &mut w, &mut out, Format::MsgPack).unwrap();
        }
        let full_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let mut dec = proto::StreamDecoder::default();
        let mut n = 0;
        dec.feed_as(&data, Format::MsgPack, &mut w, |_| n += 1).unwrap();
        let stream_ms = t.elapsed().as_secs_f64() * 1e3;
        println!("{} frames: prost {prost_ms:.1} ms, full msgpack {full_ms:.1} ms, stream {stream_ms:.1} ms", frames.len());
    }
}
