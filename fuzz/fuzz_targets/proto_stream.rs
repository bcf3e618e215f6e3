//! The protobuf stream decoder: length-prefixed frames -> events as JSON text
//! (`agui_core::proto::StreamDecoder`). Input: a control byte, then the stream. Checks:
//! no panic; chunking invariance (events, warnings and the error are the same fed whole or
//! in chunks derived from the control byte); every error carries the frame index and byte
//! offset of its frame, and only the codec's error kinds occur; each event is valid JSON
//! within the depth limit at a real frame's offset; the collecting mode (`feed_collect`,
//! which goes on past bad frames) agrees with the strict one up to its first error; the
//! MessagePack output fails exactly where the JSON output does.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::limits::{self, DEFAULT_MAX_DEPTH};
use agui_core::proto::{self, decode_message_as, Collected, Error, EventArray, Format, StreamDecoder};
use libfuzzer_sys::fuzz_target;

#[path = "chunking.rs"]
mod chunking;

/// (JSON text, frame index, offset) per event, the warnings, the error.
type Run = (Vec<(Vec<u8>, usize, u64)>, Vec<String>, Option<Error>);

fn run(chunks: &[&[u8]], max_frame_size: usize) -> Run {
    let mut dec = StreamDecoder::new(max_frame_size);
    let mut events = Vec::new();
    let mut warnings = Vec::new();
    let mut error = None;
    for c in chunks {
        let r = dec.feed_positioned(c, Format::Json, &mut warnings, |json, i, off| events.push((json.to_vec(), i, off)));
        if let Err(e) = r {
            error = Some(e);
            break;
        }
        assert!(dec.pending() < max_frame_size.max(4), "{} bytes pending", dec.pending());
    }
    if error.is_none() {
        error = dec.finish().err();
    }
    (events, warnings, error)
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, stream)) = data.split_first() else { return };
    // Small frame limits (4..=131) half of the time, so that the limit is hit often.
    let max_frame_size = if ctl & 0x80 != 0 { 4 + usize::from(ctl & 0x7f) } else { proto::DEFAULT_MAX_FRAME_SIZE };

    let whole = run(&[stream], max_frame_size);
    let chunked = run(&chunking::chunks(stream, ctl), max_frame_size);
    assert_eq!(whole, chunked, "chunking changed the result");
    let (events, _, error) = &whole;

    let frame_at = |off: u64| {
        let off = off as usize;
        let len = u32::from_be_bytes(stream[off..off + 4].try_into().unwrap()) as usize;
        &stream[off + 4..off + 4 + len]
    };
    let mut last: Option<(usize, u64)> = None;
    for (json, i, off) in events {
        if let Some((li, lo)) = last {
            assert!(*i > li && *off > lo, "positions go backwards");
        }
        last = Some((*i, *off));
        let msg = frame_at(*off);
        assert!(4 + msg.len() <= max_frame_size);
        let v = limits::parse_value(json, DEFAULT_MAX_DEPTH + 16)
            .unwrap_or_else(|e| panic!("not JSON within the depth limit ({e}): {}", String::from_utf8_lossy(json)));
        assert!(v.get("type").is_some_and(|t| t.is_string()), "no type");
        // The MessagePack output of the same frame succeeds too.
        let mut mp = Vec::new();
        decode_message_as(msg, &mut Vec::new(), &mut mp, Format::MsgPack).expect("MessagePack output fails where JSON succeeds");
    }
    if let Some(e) = error {
        let (Some(i), Some(off)) = e.position() else { panic!("error without a position: {e:?}") };
        if let Some((li, lo)) = last {
            assert!(i > li && off > lo, "error before the last event: {e:?}");
        }
        assert!(off <= stream.len() as u64);
        match e {
            Error::Frame { source, .. } => {
                assert!(matches!(**source, Error::Decode(_)), "{e:?}");
                let mut mp = Vec::new();
                let r = decode_message_as(frame_at(off), &mut Vec::new(), &mut mp, Format::MsgPack);
                assert_eq!(r.err().as_ref(), Some(&**source), "MessagePack output fails differently");
            }
            Error::FrameTooLarge { .. } | Error::Truncated { .. } => {}
            other => panic!("unexpected error kind {other:?}"),
        }
    }

    // Collecting mode: the same events up to the strict mode's first error.
    let mut dec = StreamDecoder::new(max_frame_size);
    let mut arr = EventArray::new(Format::Json, 0);
    let mut got = Collected::default();
    let r = dec.feed_collect(stream, &mut Vec::new(), &mut arr, &mut got).and_then(|_| dec.finish());
    let items = arr.items();
    assert_eq!(items.len(), got.positions.len());
    assert!(items.len() >= events.len());
    for (k, (json, i, off)) in events.iter().enumerate() {
        assert_eq!(&items[k], json);
        assert_eq!(got.positions[k], (*i, *off));
    }
    match error {
        None => {
            assert!(r.is_ok() && got.errors.is_empty());
            assert_eq!(items.len(), events.len());
        }
        Some(e @ Error::Frame { .. }) => assert_eq!(got.errors.first(), Some(e)),
        Some(e) => {
            assert!(got.errors.is_empty(), "{:?}", got.errors);
            assert_eq!(r.err().as_ref(), Some(e));
            assert_eq!(items.len(), events.len());
        }
    }
});
