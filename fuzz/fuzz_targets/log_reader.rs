//! The log reader (`agui_core::log`): gzip and format detection, then SSE or protobuf
//! framing. Input: a control byte, then the log. Checks: no panic; only the reader's error
//! kinds, never an I/O error on an in-memory log; the events and the error do not depend
//! on the read size (the control byte's, against the default 256 KiB); gzip is transparent
//! (the gzipped log gives the same events, error and warnings); the events are exactly
//! those of the framer used directly (`SseParser` / `StreamDecoder`; JSON Lines against an
//! independent line splitter); `Read` hands out the decompressed log.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use std::io::{Read, Write};

use agui_core::log::{detect_format, is_gzip, Format, Limits, LogError, LogReader};
use agui_core::proto::decode_stream_json;
use agui_core::sse::SseParser;
use libfuzzer_sys::fuzz_target;

/// (index, offset, JSON text) per event, then the warnings, or the error with the events
/// before it.
type Run = (Vec<(u64, u64, Vec<u8>)>, Result<Vec<String>, LogError>);

fn read(log: &[u8], limits: &Limits) -> Run {
    let mut events = Vec::new();
    let r = LogReader::open(log, None).and_then(|reader| {
        reader.for_each(limits, |ev| -> Result<(), LogError> {
            events.push((ev.index, ev.offset, ev.json.to_vec()));
            Ok(())
        })
    });
    if let Err(e) = &r {
        assert!(!matches!(e, LogError::Io(_)), "I/O error on an in-memory log: {e}");
        assert_ne!(e.kind(), agui_core::kind::Kind::Io);
    }
    (events, r.map(|s| s.warnings))
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, log)) = data.split_first() else { return };
    let small = Limits { chunk_size: 1 + usize::from(ctl & 0x3f), ..Limits::default() };
    let default = Limits::default();
    let got = read(log, &small);
    assert_eq!(got, read(log, &default), "the read size changed the result");

    if is_gzip(log) {
        return; // the plain log's checks below need the decompressed bytes
    }
    assert_eq!(read(&gzip(log), &small), got, "gzip is not transparent");

    let mut plain = Vec::new();
    LogReader::open(log, None).unwrap().read_to_end(&mut plain).unwrap();
    assert_eq!(plain, log);

    // The framer used directly gives the same events.
    let (events, result) = got;
    match detect_format(log) {
        None => {
            assert!(events.is_empty());
            assert_eq!(result.is_err(), !log.is_empty(), "{result:?}");
        }
        Some(Format::Sse) => {
            let mut direct = Vec::new();
            let mut p = SseParser::new(default.max_buffer);
            let r = p.feed(log, |f| direct.push((f.index, f.offset, f.data.to_vec())));
            let r = r.and_then(|_| p.finish(|f| direct.push((f.index, f.offset, f.data.to_vec()))));
            assert_eq!(events, direct);
            assert_eq!(result.err(), r.err().map(LogError::Sse));
        }
        Some(Format::Jsonl) => {
            // An independent reading: lines end at CR, LF or CRLF; a leading BOM is
            // skipped; lines of only spaces and tabs are not events. No limit is reached
            // by a fuzz input (10 MiB).
            let start = if log.starts_with(b"\xef\xbb\xbf") { 3 } else { 0 };
            let mut direct = Vec::new();
            let mut i = start;
            while i < log.len() {
                let end = log[i..].iter().position(|&b| b == b'\n' || b == b'\r').map_or(log.len(), |k| i + k);
                let line = &log[i..end];
                if !line.iter().all(|&b| b == b' ' || b == b'\t') {
                    direct.push((direct.len() as u64, i as u64, line.to_vec()));
                }
                i = if log[end..].starts_with(b"\r\n") { end + 2 } else { end + 1 };
            }
            assert_eq!(events, direct);
            assert!(result.is_ok());
        }
        Some(Format::Protobuf) => {
            let (jsons, warnings, err) = decode_stream_json(log, default.max_frame_size);
            assert_eq!(events.iter().map(|e| e.2.clone()).collect::<Vec<_>>(), jsons);
            match err {
                Some(e) => assert_eq!(result, Err(LogError::Proto(e))),
                None => assert_eq!(result, Ok(warnings)),
            }
        }
    }
});
