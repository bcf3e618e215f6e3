//! Differential: SSE framing (`agui_core::sse::SseParser`, fed in chunks derived from the
//! input) against a small reference parser written straight from the WHATWG
//! `text/event-stream` rules below, over the whole input at once. They must agree on every
//! dispatched event (data, event type, last event id, index, byte offset) and on the final
//! last event id and reconnection time.
//!
//! The reference works on bytes: the field names and line ends are ASCII, so decoding the
//! stream as UTF-8 first (what the spec does) splits it at the same places, and comparing
//! bytes is stricter than comparing decoded text.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::sse::{Frame, OwnedFrame, SseParser, DEFAULT_MAX_BUFFER};
use libfuzzer_sys::fuzz_target;

#[path = "chunking.rs"]
mod chunking;

#[derive(Debug, PartialEq, Default)]
struct Outcome {
    events: Vec<OwnedFrame>,
    /// Kept as text by the parser (invalid UTF-8 replaced), and so by the reference.
    last_event_id: String,
    retry: Option<u64>,
}

/// WHATWG HTML, "Interpreting an event stream", with the project's one documented
/// deviation (an incomplete last line is processed and the final event dispatched at the
/// end of the stream, as the TypeScript reference client does).
fn reference(input: &[u8]) -> Outcome {
    // One leading byte-order mark is ignored.
    let start = if input.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    // Lines end with CRLF, LF or CR; (offset, line) pairs.
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let (mut i, mut line_start) = (start, start);
    while i < input.len() {
        match input[i] {
            b'\n' => {
                lines.push((line_start, &input[line_start..i]));
                i += 1;
                line_start = i;
            }
            b'\r' => {
                lines.push((line_start, &input[line_start..i]));
                i += if input.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                line_start = i;
            }
            _ => i += 1,
        }
    }
    let tail = (line_start < input.len()).then(|| (line_start, &input[line_start..]));

    let mut out = Outcome::default();
    let mut data: Vec<u8> = Vec::new();
    let mut data_seen = false; // the data buffer is not the empty string
    let mut data_offset = 0usize;
    let mut event_type: Option<Vec<u8>> = None;
    let mut id_buffer: Vec<u8> = Vec::new();

    let dispatch = |out: &mut Outcome, data: &mut Vec<u8>, data_seen: &mut bool, event_type: &mut Option<Vec<u8>>, id_buffer: &[u8], offset: usize| {
        out.last_event_id = String::from_utf8_lossy(id_buffer).into_owned();
        if *data_seen {
            // The buffer holds each value followed by LF; the last LF is removed.
            data.pop();
            out.events.push(OwnedFrame {
                index: out.events.len() as u64,
                offset: offset as u64,
                data: std::mem::take(data),
                event: event_type.take(),
                id: String::from_utf8_lossy(id_buffer).into_owned(),
            });
        }
        data.clear();
        *data_seen = false;
        *event_type = None;
    };

    for (offset, line) in lines.into_iter().chain(tail) {
        if line.is_empty() {
            dispatch(&mut out, &mut data, &mut data_seen, &mut event_type, &id_buffer, data_offset);
            continue;
        }
        if line[0] == b':' {
            continue; // comment
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => event_type = Some(value.to_vec()),
            b"data" => {
                if !data_seen {
                    data_offset = offset;
                }
                data.extend_from_slice(value);
                data.push(b'\n');
                data_seen = true;
            }
            b"id" if !value.contains(&0) => id_buffer = value.to_vec(),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Saturating, as the parser does for absurd values (the field is advisory).
                out.retry = Some(value.iter().fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0'))));
            }
            _ => {}
        }
    }
    dispatch(&mut out, &mut data, &mut data_seen, &mut event_type, &id_buffer, data_offset);
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, stream)) = data.split_first() else { return };
    let mut p = SseParser::new(DEFAULT_MAX_BUFFER);
    let mut got = Outcome::default();
    let mut push = |f: Frame<'_>| got.events.push(f.to_owned_frame());
    for c in chunking::chunks(stream, split) {
        p.feed(c, &mut push).expect("within the default limit");
    }
    p.finish(&mut push).expect("within the default limit");
    got.retry = p.retry();
    got.last_event_id = p.last_event_id().to_owned();
    assert_eq!(got, reference(stream));
});
