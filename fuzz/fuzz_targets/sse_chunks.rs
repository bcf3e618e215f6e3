//! The incremental SSE parser (`agui_core::sse`). Input: a split byte, a limit byte, then
//! the stream. Checks: no panic; chunking invariance (the stream fed in chunks derived from
//! the split byte gives the same frames, error, last event id and retry as fed whole);
//! bounded buffering (never more than the limit held, no frame over it); every frame's
//! offset is a `data` line of the stream; the bulk-decode batch (`Batch`, `scan_value`)
//! keeps one element per frame and never merges two.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::limits;
use agui_core::sse::{Batch, Frame, OwnedFrame, SseError, SseParser, DEFAULT_MAX_BUFFER};
use libfuzzer_sys::fuzz_target;

#[path = "chunking.rs"]
mod chunking;

#[derive(Debug, PartialEq)]
struct Run {
    frames: Vec<OwnedFrame>,
    error: Option<SseError>,
    last_event_id: String,
    retry: Option<u64>,
}

fn run(chunks: &[&[u8]], max_buffer: usize) -> Run {
    let mut p = SseParser::new(max_buffer);
    let mut frames = Vec::new();
    let mut push = |f: Frame<'_>| {
        assert!(f.data.len() <= max_buffer, "a frame over the limit");
        frames.push(f.to_owned_frame());
    };
    let mut error = None;
    for c in chunks {
        if let Err(e) = p.feed(c, &mut push) {
            error = Some(e);
            break;
        }
        assert!(p.buffered() <= max_buffer, "{} bytes buffered over the limit {max_buffer}", p.buffered());
    }
    if error.is_none() {
        error = p.finish(&mut push).err();
    }
    Run { frames, error, last_event_id: p.last_event_id().to_owned(), retry: p.retry() }
}

fuzz_target!(|data: &[u8]| {
    let Some((&[split, limit], stream)) = data.split_first_chunk::<2>() else { return };
    // Small limits (0..127) half of the time, so that the limit is hit often.
    let max_buffer = if limit & 0x80 != 0 { usize::from(limit & 0x7f) } else { DEFAULT_MAX_BUFFER };

    let whole = run(&[stream], max_buffer);
    let chunked = run(&chunking::chunks(stream, split), max_buffer);
    assert_eq!(whole, chunked, "chunking changed the result");

    for (i, f) in whole.frames.iter().enumerate() {
        assert_eq!(f.index, i as u64);
        assert!(stream[f.offset as usize..].starts_with(b"data"), "offset {} is not a data line", f.offset);
    }
    if let Some(e) = &whole.error {
        assert_eq!(e.frame_index, whole.frames.len() as u64);
        assert!(e.offset <= stream.len() as u64);
    }

    // The bulk-decode batch of the whole stream, with a small depth limit.
    let max_depth = usize::from(split >> 4);
    let mut p = SseParser::new(max_buffer);
    let mut b = Batch::new(0, true, true).with_max_depth(max_depth);
    let r = p.feed(stream, |f| b.push(&f)).and_then(|_| p.finish(|f| b.push(&f)));
    assert_eq!(r.err(), whole.error);
    b.close();
    assert_eq!(b.len(), whole.frames.len());
    assert!(std::str::from_utf8(&b.buf).is_ok(), "the batch is not UTF-8");
    let mut all_valid = true;
    for (i, f) in whole.frames.iter().enumerate() {
        let payload = b.payload(i);
        assert_eq!(payload, String::from_utf8_lossy(&f.data).as_bytes());
        assert_eq!(b.offsets[i], f.offset);
        match limits::parse_value(payload, 10_000) {
            Ok(_) => {
                // A valid JSON value is never taken for several, and its depth is seen.
                let shape = agui_core::sse::scan_value(payload);
                assert!(shape.single, "valid JSON not single: {:?}", String::from_utf8_lossy(payload));
                let deep = limits::exceeds_depth(payload, max_depth);
                assert_eq!(b.too_deep.contains(&i), deep, "depth flag of frame {i}");
                all_valid &= !deep;
            }
            Err(_) => all_valid = false,
        }
    }
    if all_valid {
        assert!(b.balanced, "valid frames within the depth limit must take the bulk path");
    }
    if b.balanced {
        // The joined array, when it is JSON, holds exactly one element per frame.
        if let Ok(serde_json::Value::Array(items)) = limits::parse_value(&b.buf, max_depth + 1) {
            assert_eq!(items.len(), b.len(), "frames merged or split in the joined array");
            for (i, item) in items.iter().enumerate() {
                let alone = limits::parse_value(b.payload(i), max_depth).expect("element parses alone");
                assert_eq!(*item, alone);
            }
        }
    }
});
