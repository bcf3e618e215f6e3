//! The crate's tests: tables, positions and errors of every reader (sequential, parts,
//! framed for workers) against each other, on generated logs.

use std::sync::Arc;

use agui_core::kind::Kind;
use agui_core::log::{Format, Limits, Output, Part};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType, UInt64Type};
use arrow_array::{Array, ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::*;
use crate::batch::source_column;
use crate::parts::{cut_targets, decode_part, shift_index, PartOut, PartStop, PART_MAX, PART_MIN};

thread_local! {
    /// No thread can be started from this thread (`spawn`), as at a thread limit.
    pub(super) static NO_THREADS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn log() -> Vec<u8> {
    let mut out = Vec::new();
    for e in [
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","timestamp":1000}"#,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hé"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"llo"}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","timestamp":3000,"usage":[{"inputTokens":2,"outputTokens":5}]}"#,
    ] {
        agui_core::sse::write_event(&mut out, e.as_bytes());
    }
    out
}

fn bytes(data: &[u8], name: &str) -> Source<'static> {
    Source { input: Input::Bytes(Box::leak(data.to_vec().into_boxed_slice())), name: Some(name.into()) }
}

#[test]
fn batches_follow_the_schema() {
    let d = decode_many(&[bytes(&log(), "a")], 1, &Options::default(), &Control::default()).unwrap();
    assert_eq!(d.batches.len(), 1);
    let b = &d.batches[0];
    assert_eq!(b.schema(), schema());
    assert_eq!(b.num_rows(), 5);
    let delta = b.column_by_name("delta").unwrap().as_string::<i32>();
    assert_eq!(delta.value(2), "hé");
    assert!(delta.is_null(0));
    let input = b.column_by_name("input_tokens").unwrap().as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(input.value(4), 2);
    assert!(input.is_null(3));
    let json = b.column_by_name("json").unwrap().as_string_view();
    assert!(json.value(0).starts_with(r#"{"type":"RUN_STARTED""#));
}

/// The sliced, renamed `source` column is the one arrow's checked constructor makes,
/// whatever name came before (the column made once keeps none of them).
#[test]
fn source_column_is_the_checked_one() {
    for n in [0, 1, 7, BATCH_ROWS - 1, BATCH_ROWS, BATCH_ROWS + 3] {
        for name in [Some("a"), None, Some("bé"), Some("")] {
            let got = source_column(name, n, checked_columns);
            let keys = match name {
                Some(_) => Int32Array::from(vec![0; n]),
                None => Int32Array::from(vec![None; n]),
            };
            let want = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(StringArray::from_iter_values(name))).unwrap();
            assert_eq!(got.to_data(), want.to_data(), "{name:?}, {n} rows");
            assert_eq!(got.data_type(), schema().field(0).data_type());
            if n > 0 {
                let last = got.downcast_dict::<StringArray>().unwrap().into_iter().last().unwrap();
                assert_eq!(last, name);
            }
        }
    }
}

#[test]
fn many_sources_in_parallel_keep_their_order() {
    let srcs: Vec<_> = (0..5).map(|i| bytes(&log(), &format!("s{i}"))).collect();
    let d = decode_many(&srcs, 3, &Options::default(), &Control::default()).unwrap();
    let names: Vec<String> = d
        .batches
        .iter()
        .map(|b| {
            let s = b.column(0).as_dictionary::<Int32Type>();
            s.values().as_string::<i32>().value(0).to_string()
        })
        .collect();
    assert_eq!(names, vec!["s0", "s1", "s2", "s3", "s4"]);
}

#[test]
fn cut_targets_sizes() {
    let sizes = |len: u64, w: usize| {
        let t = cut_targets(len, w);
        let mut cuts = vec![0];
        cuts.extend(t);
        cuts.push(len);
        cuts.windows(2).map(|c| c[1] - c[0]).collect::<Vec<u64>>()
    };
    let mib = 1 << 20;
    // Two threads, 8 MiB: 3/8, 3/8, 1/8, 1/8 (the smallest parts of 4 x 2 even ones).
    assert_eq!(sizes(8 * mib, 2), [3 * mib, 3 * mib, mib, mib]);
    // Too big for it (parts over PART_MAX) or too small (parts under PART_MIN): even.
    assert_eq!(sizes(64 * mib, 2), [4 * mib; 16]);
    assert_eq!(sizes(mib, 2), [256 << 10; 4]);
    assert_eq!(sizes(8 * mib, 1), [4 * mib; 2]);
    assert_eq!(sizes(100, 4), [100]);
    let s = sizes(9 * mib + 7, 3);
    assert_eq!((s.len(), s.iter().sum::<u64>()), (6, 9 * mib + 7));
    assert!(s[..3].iter().all(|&b| b <= PART_MAX) && s[3..].iter().all(|&b| b >= PART_MIN));
}

/// A part's frame indices are made the log's in the batch's own buffer; one shared
/// elsewhere is copied, not changed under its other owner.
#[test]
fn shift_index_in_place() {
    let d = decode_source(&bytes(&log(), "s"), &Options::default(), &Control::default()).unwrap().unwrap();
    let batch = d.batches[0].clone();
    let index = |b: &RecordBatch| b.column(1).as_primitive::<UInt64Type>().clone();
    let before = index(&batch);
    let want: Vec<u64> = before.values().iter().map(|i| i + 7).collect();
    // `before` shares the buffer: copied.
    let shifted = shift_index(batch, 7);
    assert_eq!(index(&shifted).values().to_vec(), want);
    assert_eq!(before.values().iter().map(|i| i + 7).collect::<Vec<_>>(), want);
    let ptr = before.values().as_ptr();
    drop(before);
    // The only owner: the same buffer.
    let ptr2 = index(&shifted).values().as_ptr();
    let again = shift_index(shifted, 1);
    assert_eq!(index(&again).values().as_ptr(), ptr2);
    assert_ne!(ptr, ptr2);
    assert_eq!(index(&again).values().to_vec(), want.iter().map(|i| i + 1).collect::<Vec<_>>());
}

#[test]
fn one_big_source_on_several_threads_is_the_same_table() {
    let mut big = Vec::new();
    for _ in 0..12_000 {
        big.extend_from_slice(&log());
    }
    let mut bad = big.clone();
    agui_core::sse::write_event(&mut bad, br#"{"type":"NOPE"}"#);
    bad.extend_from_slice(&big);
    agui_core::sse::write_event(&mut bad, br#"{"type":7}"#);
    bad.extend_from_slice(&log());
    let rows = |d: &Decoded| -> Vec<(u64, u64, String)> {
        d.batches
            .iter()
            .flat_map(|b| {
                let idx = b.column(1).as_primitive::<arrow_array::types::UInt64Type>().clone();
                let off = b.column(2).as_primitive::<arrow_array::types::UInt64Type>().clone();
                let json = b.column_by_name("json").unwrap().as_string_view().clone();
                (0..b.num_rows()).map(move |i| (idx.value(i), off.value(i), json.value(i).to_string()))
            })
            .collect()
    };
    let src = [bytes(&big, "big")];
    let one = decode_many(&src, 1, &Options::default(), &Control::default()).unwrap();
    let three = decode_many(&src, 3, &Options::default(), &Control::default()).unwrap();
    assert!(three.batches.len() > 2);
    assert_eq!(rows(&one), rows(&three));

    let src = [bytes(&bad, "bad")];
    let e1 = decode_many(&src, 1, &Options::default(), &Control::default()).err().unwrap();
    let e3 = decode_many(&src, 3, &Options::default(), &Control::default()).err().unwrap();
    assert_eq!(e1, e3);
    assert_eq!(e1.index, Some(60_000));
    let opts = Options { collect: true, ..Options::default() };
    let c1 = decode_many(&src, 1, &opts, &Control::default()).unwrap();
    let c3 = decode_many(&src, 3, &opts, &Control::default()).unwrap();
    assert_eq!(c1.issues, c3.issues);
    assert_eq!(c1.issues.len(), 2);
    assert_eq!(rows(&c1), rows(&c3));
}

/// (index, offset, type key, delta, json) of every row.
fn row_values(d: &Decoded) -> Vec<(u64, u64, i32, Option<String>, String)> {
    d.batches
        .iter()
        .flat_map(|b| {
            let idx = b.column(1).as_primitive::<UInt64Type>().clone();
            let off = b.column(2).as_primitive::<UInt64Type>().clone();
            let ty = b.column(3).as_dictionary::<Int32Type>().keys().clone();
            let delta = b.column_by_name("delta").unwrap().as_string::<i32>().clone();
            let json = b.column_by_name("json").unwrap().as_string_view().clone();
            (0..b.num_rows()).map(move |i| {
                let d = (!delta.is_null(i)).then(|| delta.value(i).to_string());
                (idx.value(i), off.value(i), ty.value(i), d, json.value(i).to_string())
            })
        })
        .collect()
}

#[test]
fn parts_match_the_sequential_reader() {
    let mut log = Vec::new();
    for i in 0..30_000 {
        match i % 1000 {
            // Multi-line payloads are joined by the framer (not a slice of the part).
            7 => log.extend_from_slice(b"data: {\"type\":\"CUSTOM\",\ndata: \"name\":\"a\",\"value\":1}\n\n"),
            // Invalid UTF-8 becomes U+FFFD.
            8 => log.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"\xff\"}\n\n"),
            9 => log.extend_from_slice(b": keep-alive\r\n\r\n"),
            _ => agui_core::sse::write_event(
                &mut log,
                format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d\"{i}"}}"#).as_bytes(),
            ),
        }
    }
    let src = [bytes(&log, "x")];
    let seq = decode_source(&src[0], &Options::default(), &Control::default()).unwrap().unwrap();
    let want = row_values(&seq);
    assert_eq!(want.len(), 29_970);
    assert_eq!(want[8].3.as_deref(), Some("\u{fffd}"));
    assert!(want[7].4.contains('\n'));
    // A shared buffer (the binding's `bytes`): the json column points into it (parts
    // with invalid UTF-8 are copied: none here), through arrow's checked constructor
    // (`Options::default()`), which holds `Utf8Views` to its guarantee.
    let clean: Vec<u8> = log.iter().map(|&c| if c == 0xff { b'?' } else { c }).collect();
    let want_clean = row_values(&decode_source(&bytes(&clean, "x"), &Options::default(), &Control::default()).unwrap().unwrap());
    let shared = [Source { input: Input::Buffer(Buffer::from(clean.as_slice())), name: Some("x".into()) }];
    for threads in [1, 2, 5] {
        let d = decode_many(&src, threads, &Options::default(), &Control::default()).unwrap();
        assert_eq!(row_values(&d), want, "{threads} threads");
        let d = decode_many(&shared, threads, &Options::default(), &Control::default()).unwrap();
        assert_eq!(row_values(&d), want_clean, "{threads} threads, shared");
        let Input::Buffer(b) = &shared[0].input else { unreachable!() };
        let inside = |a: &arrow_array::StringViewArray| {
            a.data_buffers().iter().any(|d| d.as_ptr() >= b.as_ptr() && d.as_ptr() < b.as_ptr().wrapping_add(b.len()))
        };
        assert!(d.batches.iter().all(|x| inside(x.column_by_name("json").unwrap().as_string_view())));
    }
}

/// Random logs of events in runs of one form (what templates learn) with every kind of
/// deviation mixed in: other values (escapes, unicode, control bytes, raw or escaped,
/// invalid UTF-8, numbers, null, nested values, empty strings), members added, given
/// twice, reordered or spaced, unknown types, truncated or trailing text, and SSE
/// framing of every kind (CR, LF, CRLF, comments, `event:`/`id:` fields, multi-line
/// data, a frame cut at the end).
/// `bad_utf8`: some events with an invalid byte (then the parts holding them are read
/// event by event, not as checked text).
fn shaped_log(seed: u64, events: usize, bad_utf8: bool) -> Vec<u8> {
    shaped_log_with(seed, events, bad_utf8, false)
}

/// [`shaped_log`], its events spaced as Python's `json.dumps` spaces them when `spaced`
/// (`fields::tests::dumps_spacing`, after the changes to the event and before its
/// framing; a frame cut into two `data` lines is cut at the same place of the event):
/// the same log of the same events, written the other way.
fn shaped_log_with(seed: u64, events: usize, bad_utf8: bool, spaced: bool) -> Vec<u8> {
    use agui_core::test_rng::Rng;
    use fields::tests::dumps_spacing;
    let mut rng = Rng(seed | 1);
    const VALUES: [&str; 22] = [
        "\"m1\"", "\"hello \"", "\"\"", "\"h\u{e9}llo \u{2713}\u{1f600}\"", "\"a\\\"b\"", "\"a\\\\\"", "\"\\u00e9\"",
        "\"\\ud83d\\ude00\"", "\"\\ud800\"", "\"\\x\"", "\"tab\there\"", "\"nl\nx\"", "\"ctl\u{1}\"", "\"del\u{7f}\"",
        "5", "-1", "1.5", "null", "true", "{\"a\":[1,\"x\"]}", "[1,2]", "\"{\\\"q\\\": 1}\"",
    ];
    // Strings with escapes (templates read them: `fields::Template`): every escape,
    // `\u` pairs in both cases, lone and broken surrogates, bad escapes, an escaped
    // quote or backslash at the value's end, an escaped quote where the string ends
    // (`"a\"` then the next member: not JSON), raw control bytes after an escape.
    const ESCAPED: [&str; 24] = [
        "\"\\\"\"", "\"a\\\"\"", "\"a\\\\\"", "\"\\\\\\\"\"", "\"\\\\\\\\\"", "\"\\/\\b\\f\\n\\r\\t\"",
        "\"x\\uD83D\\uDE00y\"", "\"\\uDBFF\\uDFFF\"", "\"\\ud83d\\u0041\"", "\"\\ud83dx\"", "\"\\udc00\"",
        "\"\\uDFFF\\uDBFF\"", "\"\\ud83d\"", "\"\\u00e9\\u0000\\u001F\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\x\"",
        "\"\\\"", "\"a\\\"", "\"\\n\n\"", "\"\\t\u{1}\"", "\"\\u2028\u{2028}\"",
        "\"\\\"}\"", "\"{\\\"a\\\":[1,\\\"\\\\n\\\"]}\"",
    ];
    // Timestamps: integers (the slot reads them) and everything near them: zero,
    // signs, leading zeros, fractions and exponents, the ends of i64 and past them,
    // strings, null, broken numbers.
    const TIMESTAMPS: [&str; 26] = [
        "0", "-0", "-5", "00", "01", "-01", "1e3", "1E3", "1.0", "1.", "1.5e3", "1.5", "-1.0e0", "+1", ".5", "-",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "123456789012345678901234567890", "\"12\"", "\"x\"", "null", "1e400", "[1]",
    ];
    // Nested values (templates skip them as the scan does): patches and snapshots,
    // empty ones, line breaks and spaces inside, escapes the skip passes (a lone
    // surrogate) or not, deep ones (past a small depth limit), invalid JSON, an object
    // where a patch is an array, and not nested at all.
    const NESTED: [&str; 18] = [
        "[{\"op\":\"replace\",\"path\":\"/status\",\"value\":\"done\"}]", "{\"run\":1,\"steps\":[],\"status\":\"x\"}",
        "[]", "{}", "[1,\n2]", "[1, {\"a\" : \"\\ud800\"}]", "{\"a\":\"\\u12\"}", "[[[[1]]]]", "{\"a\":{\"b\":{\"c\":[]}}}",
        "[1,]", "[1e400]", "{\"a\":1", "[\"x\u{1}\"]", "\"s\"", "5", "null", "{\"\\ud800\":1}", "{\"op\":1}",
    ];
    // `usage` lists (templates sum the compact ones as `compact_usage` does): counts
    // summed, saturated, twice, `-0`, negative, fractions, past i64, leading zeros,
    // not integers, whitespace and line breaks, escapes, control bytes, nested
    // members, trailing commas, cut, deeper (past a limit of 3), not lists.
    const USAGES: [&str; 30] = [
        "[{\"provider\":\"p\",\"inputTokens\":101,\"outputTokens\":40}]", "[{\"inputTokens\":2}]", "[]", "[{}]",
        "[{\"inputTokens\":1},{\"inputTokens\":2,\"totalTokens\":3}]", "[{\"inputTokens\":-0}]",
        "[{\"inputTokens\":-1}]", "[{\"inputTokens\":1,\"inputTokens\":2}]", "[{\"inputTokens\":null}]",
        "[{\"inputTokens\":1.5}]", "[{\"inputTokens\":9223372036854775807},{\"inputTokens\":1}]",
        "[{\"inputTokens\":9223372036854775808}]", "[{\"inputTokens\":01}]", "[ {\"inputTokens\":1}]",
        "[{\"inputTokens\":1}\n]", "[{\"provider\":\"a\\\"b\"}]", "[{\"provider\":\"x\u{1}\"}]",
        "[{\"model\":[1]}]", "[{\"inputTokens\":1},]", "[{\"inputTokens\":1}", "{\"inputTokens\":1}", "3",
        "null", "\"x\"", "[[{\"inputTokens\":1}]]", "[{\"inputTokens\":\"5\"}]", "[{\"inputTokens\":1e2}]",
        "[{\"x\":-5,\"cacheWriteInputTokens\":7}]", "[{\"n\":-0,\"reasoningTokens\":0}]", "[{\"in\\u0070utTokens\":1}]",
    ];
    const FORMS: [&[&str]; 16] = [
        // The `name` column takes `name`, else `toolCallName`, else `stepName`.
        &["STEP_FINISHED", "stepName", "toolCallName", "name"],
        &["STEP_FINISHED", "stepName", "toolCallName"],
        &["TEXT_MESSAGE_CONTENT", "messageId", "delta"],
        &["TOOL_CALL_ARGS", "toolCallId", "delta"],
        &["TEXT_MESSAGE_START", "messageId", "role"],
        &["TOOL_CALL_START", "toolCallId", "toolCallName", "parentMessageId"],
        &["RUN_STARTED", "threadId", "runId"],
        &["STEP_STARTED", "stepName"],
        &["NOPE", "messageId", "delta"],
        // An integer timestamp first, or last (then `}` follows it).
        &["RUN_STARTED", "timestamp", "threadId", "runId"],
        &["RUN_FINISHED", "threadId", "runId", "timestamp"],
        // Nested values: a patch (`delta` of STATE_DELTA), a member not read.
        &["STATE_DELTA", "delta"],
        &["STATE_SNAPSHOT", "snapshot"],
        &["TOOL_CALL_START", "toolCallId", "args", "toolCallName"],
        // A `usage` list, last or between strings.
        &["RUN_FINISHED", "threadId", "runId", "usage"],
        &["RUN_FINISHED", "threadId", "usage", "runId"],
    ];
    let mut log = Vec::new();
    if rng.below(4) == 0 {
        log.extend_from_slice(b"\xef\xbb\xbf");
    }
    let mut n = 0;
    while n < events {
        let form = FORMS[rng.below(FORMS.len())];
        // Mostly values a template reads (plain strings, JSON in a string as tool
        // calls' argument deltas, integer timestamps), so that templates are learned
        // and read.
        let nested = matches!(form[0], "STATE_DELTA" | "STATE_SNAPSHOT" | "TOOL_CALL_START");
        let value = |rng: &mut Rng, key: &str| -> String {
            if nested && matches!(key, "delta" | "snapshot" | "args") {
                return match rng.below(3) {
                    0 => rng.pick(&NESTED).to_string(),
                    _ => format!("[{{\"op\":\"add\",\"path\":\"/a\",\"value\":{}}}]", rng.below(1000)),
                };
            }
            if key == "usage" {
                return match rng.below(3) {
                    0 => rng.pick(&USAGES).to_string(),
                    _ => format!("[{{\"provider\":\"p\",\"inputTokens\":{},\"outputTokens\":40}}]", rng.below(1000)),
                };
            }
            if key == "timestamp" {
                return match rng.below(4) {
                    0 => rng.pick(&TIMESTAMPS).to_string(),
                    _ => format!("{}", 1_700_000_000_000u64 + rng.below(100_000) as u64),
                };
            }
            match rng.below(8) {
                0 => rng.pick(&VALUES).to_string(),
                1 => rng.pick(&ESCAPED).to_string(),
                2 => format!("\"{{\\\"q{}\\\": \"", rng.below(1000)),
                _ => format!("\"v{}\"", rng.below(1000)),
            }
        };
        // A first value repeated through half the runs (ids: `fields::Guess` ends it
        // as the last one), among values that start as it does and go on (longer, an
        // escape, a quote or a control byte after it), shorter ones, ones of its
        // length ending at a quote but not plain (an escape, a control byte), and
        // ones of 15 and 16 bytes.
        const FIRSTS: [&str; 12] = [
            "\"v1\"", "\"v10\"", "\"v1\\n\"", "\"v1\\\"\"", "\"v1\u{1}\"", "\"v\"", "\"\"", "\"v1\"x\"",
            "\"\\\"\"", "\"x\u{1}\"", "\"0123456789abcde\"", "\"0123456789abcdef\"",
        ];
        let first = (rng.below(2) == 0).then(|| rng.pick(&FIRSTS));
        let string_first = !(matches!(form[1], "timestamp" | "usage") || (nested && matches!(form[1], "delta" | "snapshot" | "args")));
        for _ in 0..1 + rng.below(40) {
            let mut members: Vec<(String, String)> =
                form[1..].iter().map(|k| (format!("\"{k}\""), value(&mut rng, k))).collect();
            if let Some(first) = first.filter(|_| string_first) {
                members[0].1 = if rng.below(4) == 0 { rng.pick(&FIRSTS) } else { first }.to_string();
            }
            match rng.below(24) {
                0 => members.push(("\"x\"".into(), value(&mut rng, "x"))),
                1 if !members.is_empty() => {
                    let m = members[0].clone();
                    members.push(m)
                }
                2 if members.len() > 1 => members.swap(0, 1),
                3 => members.push(("\"timestamp\"".into(), value(&mut rng, "timestamp"))),
                4 => members.push(("\"usage\"".into(), rng.pick(&["[{\"inputTokens\":2}]", "[]", "3"]).into())),
                5 => members.push(("\"delta\"".into(), "[{\"op\":\"add\"}]".into())),
                _ => {}
            }
            let ty = format!("\"{}\"", if rng.below(30) == 0 { "TEXT_MESSAGE_\\u0043ONTENT" } else { form[0] });
            let mut json = format!("{{\"type\":{ty}");
            for (k, v) in &members {
                let sep = if rng.below(40) == 0 { ": " } else { ":" };
                json.push_str(&format!(",{k}{sep}{v}"));
            }
            json.push('}');
            let mut json = json.into_bytes();
            match rng.below(40) {
                0 => json.truncate(rng.below(json.len())),
                1 => json.extend_from_slice(b" x"),
                2 => json.push(b' '),
                3 if bad_utf8 => json.insert(json.len() - 2, 0xff),
                _ => {}
            }
            let compact = json.clone();
            if spaced {
                json = dumps_spacing(&compact);
            }
            let nl: &[u8] = rng.pick(&[&b"\n"[..], b"\n", b"\n", b"\r\n", b"\r"]);
            match rng.below(30) {
                0 => log.extend_from_slice(&[b": keep-alive", nl].concat()),
                1 => log.extend_from_slice(&[b"event: message", nl, b"id: 7", nl].concat()),
                2 => log.extend_from_slice(&[b"retry: 50", nl].concat()),
                3 => log.extend_from_slice(nl),
                _ => {}
            }
            if rng.below(30) == 0 {
                // A whole event and an empty `data` line after it: the payload ends
                // with a line feed (JSON whitespace), not where the event does.
                log.extend_from_slice(&[&b"data: "[..], &json, nl, b"data:", nl, nl].concat());
            } else if rng.below(30) == 0 && compact.len() > 4 {
                let cut = 1 + rng.below(compact.len() - 2);
                let cut = if spaced { dumps_spacing(&compact[..cut]).len() } else { cut };
                log.extend_from_slice(&[b"data: ", &json[..cut], nl, b"data:", &json[cut..], nl, nl].concat());
            } else {
                let space: &[u8] = if rng.below(20) == 0 { b"data:" } else { b"data: " };
                log.extend_from_slice(&[space, &json, nl, nl].concat());
            }
            n += 1;
        }
    }
    if rng.below(2) == 0 {
        log.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"de");
    }
    log
}

/// Every table and error with templates (`fields::Template`) is the one without:
/// rows, frame indices, byte offsets, error classes and messages, on both readers
/// (the parts' and the sequential one), collected and raised.
#[test]
fn templates_read_what_the_scan_reads() {
    use fields::tests::{NO_TEMPLATES, TEMPLATE_HITS};
    let run = |src: &Source<'_>, opts: &Options, templates: bool| {
        NO_TEMPLATES.set(!templates);
        let many = decode_many(std::slice::from_ref(src), 1, opts, &Control::default())
            .map(|d| (d.batches, d.issues));
        let seq = decode_source(src, opts, &Control::default()).map(|d| d.map(|d| (d.batches, d.issues)));
        NO_TEMPLATES.set(false);
        (many, seq)
    };
    let mut hits = 0;
    for seed in 1..=12u64 {
        let log = shaped_log(seed * 0x9e37_79b9, 3000, seed % 3 == 0);
        let srcs = [bytes(&log, "x"), Source { input: Input::Buffer(Buffer::from(log.as_slice())), name: None }];
        for src in &srcs {
            for (collect, max_depth) in [(true, Options::default().max_depth), (false, Options::default().max_depth), (true, 3), (true, 2)] {
                let opts = Options { collect, max_depth, ..Options::default() };
                let before = TEMPLATE_HITS.get();
                let (many, seq) = run(src, &opts, true);
                hits += TEMPLATE_HITS.get() - before;
                let (want_many, want_seq) = run(src, &opts, false);
                assert_eq!(many, want_many, "seed {seed}, collect {collect}, depth {max_depth}");
                assert_eq!(seq, want_seq, "seed {seed}, collect {collect}, depth {max_depth}, sequential");
            }
        }
    }
    // The templates read most events of these logs (runs of one form).
    assert!(hits > 12 * 3000, "{hits} events read by templates");
}

/// Logs of events written as Python's `json.dumps` writes them (every deviation and
/// framing of `shaped_log`) give the tables, errors and frame counts of the serde pass
/// alone (no scan, so no template and no frame read ahead), byte for byte, on both
/// readers and in parts.
#[test]
fn spaced_logs_read_as_the_serde_pass_reads() {
    use fields::tests::{FRAME_SKIPS, NO_SCAN, TEMPLATE_HITS};
    let (mut hits, mut skips) = (0, 0);
    for seed in 1..=4u64 {
        let log = shaped_log_with(seed * 0x2545_f491, 1500, seed % 2 == 0, true);
        let src = bytes(&log, "x");
        let len = log.len() as u64;
        let targets: Vec<u64> = (1..5).map(|k| k * len / 5).collect();
        let mut r = std::io::Cursor::new(&log);
        let parts = agui_core::log::split_at(&mut r, len, Format::Sse, &targets, &Limits::default()).unwrap();
        for (collect, max_depth) in [(true, Options::default().max_depth), (false, Options::default().max_depth), (true, 3)] {
            let opts = Options { collect, max_depth, ..Options::default() };
            let run = |fast: bool| {
                NO_SCAN.set(!fast);
                let many = decode_many(std::slice::from_ref(&src), 1, &opts, &Control::default())
                    .map(|d| (d.batches, d.issues));
                let seq = decode_source(&src, &opts, &Control::default()).map(|d| d.map(|d| (d.batches, d.issues)));
                let parts: Vec<_> =
                    parts.iter().map(|p| part_out(decode_part(&src, Format::Sse, *p, &opts, &Control::default()))).collect();
                NO_SCAN.set(false);
                (many, seq, parts)
            };
            let (before, skipped) = (TEMPLATE_HITS.get(), FRAME_SKIPS.get());
            let got = run(true);
            (hits, skips) = (hits + TEMPLATE_HITS.get() - before, skips + FRAME_SKIPS.get() - skipped);
            assert_eq!(got, run(false), "seed {seed}, collect {collect}, depth {max_depth}");
        }
    }
    // Templates learned from spaced events read most of them, many read ahead (the
    // parts' reader; the others stop at an error, or the frame is declined).
    assert!(hits > 4 * 1500, "{hits} events read by templates");
    assert!(skips > 4 * 1500 / 3, "{skips} frames read ahead");
}

/// The same events written compactly and as `json.dumps` writes them (`shaped_log`'s
/// logs both ways) give the same rows, every column but `offset` and `json` (where the
/// event lies and its text), and errors of the same event, class and member.
#[test]
fn spaced_logs_read_as_compact_ones() {
    let issue = |i: &Issue| (i.index, i.kind, i.field.clone());
    let mut rows = 0;
    for seed in 1..=4u64 {
        let [compact, spaced] = [false, true].map(|spaced| shaped_log_with(seed * 0x1b87_3593, 1500, seed % 2 == 1, spaced));
        for collect in [true, false] {
            let opts = Options { collect, ..Options::default() };
            let [c, s] = [&compact, &spaced].map(|log| decode_many(&[bytes(log, "x")], 1, &opts, &Control::default()));
            let (c, s) = match (c, s) {
                (Ok(c), Ok(s)) => (c, s),
                (Err(c), Err(s)) => {
                    assert_eq!(issue(&c), issue(&s), "seed {seed}");
                    continue;
                }
                (c, s) => panic!("seed {seed}: {:?} {:?}", c.map(|d| d.issues), s.map(|d| d.issues)),
            };
            let schema = schema::schema();
            let keep: Vec<usize> = (0..schema.fields().len()).filter(|&i| !matches!(schema.field(i).name().as_str(), "offset" | "json")).collect();
            let cells_of = |d: &Decoded| -> Vec<Vec<Option<String>>> {
                cells(d).into_iter().map(|row| keep.iter().map(|&i| row[i].clone()).collect()).collect()
            };
            assert_eq!(cells_of(&c), cells_of(&s), "seed {seed}, collect {collect}");
            assert_eq!(c.issues.iter().map(issue).collect::<Vec<_>>(), s.issues.iter().map(issue).collect::<Vec<_>>(), "seed {seed}");
            rows += cells(&s).len();
        }
    }
    assert!(rows > 4 * 1500 / 2, "{rows} rows");
}

/// What `decode_part` gave, comparable.
fn part_out(out: PartOut) -> (Vec<RecordBatch>, Vec<Issue>, u64, String) {
    let stop = match out.stop {
        None => String::new(),
        Some(PartStop::Log(e)) => format!("log {e:?}"),
        Some(PartStop::Row(issue)) => format!("row {issue:?}"),
        Some(PartStop::Other(issue)) => format!("other {issue:?}"),
    };
    (out.decoded.batches, out.decoded.issues, out.frames, stop)
}

/// SSE frames read ahead of the framer's line search (`Shape::form_end`) give the
/// tables, errors and frame counts of the line search and of no templates at all, in
/// parts cut at many places (frames at a part's start and end, a part that ends
/// inside a frame), on every framing `shaped_log` writes.
#[test]
fn frames_read_ahead_read_what_the_line_search_reads() {
    use fields::tests::{FRAME_SKIPS, NO_FRAME_SKIP, NO_TEMPLATES};
    use agui_core::test_rng::Rng;
    let mut skips = 0;
    for seed in 1..=12u64 {
        let log = shaped_log(seed * 0x51_7cc1_b727, 1500, seed % 3 == 0);
        let mut rng = Rng(seed | 1);
        let len = log.len() as u64;
        let mut cuts: Vec<Vec<Part>> = Vec::new();
        for parts in [1usize, 2, 7, 40] {
            let targets: Vec<u64> = (1..parts).map(|k| k as u64 * len / parts as u64 + rng.below(64) as u64).collect();
            let mut r = std::io::Cursor::new(&log);
            cuts.push(agui_core::log::split_at(&mut r, len, Format::Sse, &targets, &Limits::default()).unwrap());
        }
        // A part that ends anywhere (as a log cut short).
        cuts.push(vec![Part { start: 0, end: 1 + rng.below(log.len() - 1) as u64 }]);
        let src = bytes(&log, "x");
        for parts in &cuts {
            for collect in [true, false] {
                for max_buffer in [Limits::default().max_buffer, 90] {
                    let opts = Options { collect, limits: Limits { max_buffer, ..Limits::default() }, ..Options::default() };
                    let run = |templates: bool, skip: bool| {
                        NO_TEMPLATES.set(!templates);
                        NO_FRAME_SKIP.set(!skip);
                        let outs: Vec<_> = parts
                            .iter()
                            .map(|p| part_out(decode_part(&src, Format::Sse, *p, &opts, &Control::default())))
                            .collect();
                        NO_TEMPLATES.set(false);
                        NO_FRAME_SKIP.set(false);
                        outs
                    };
                    let before = FRAME_SKIPS.get();
                    let got = run(true, true);
                    skips += FRAME_SKIPS.get() - before;
                    let what = format!("seed {seed}, {} parts, collect {collect}, max {max_buffer}", parts.len());
                    assert_eq!(got, run(true, false), "{what}: vs the line search");
                    assert_eq!(got, run(false, false), "{what}: vs no templates");
                }
            }
        }
    }
    // Many events of these logs are one `data: ` line and a blank line of a known form
    // (a third of those read whole, collected: the others stop at an error). Only the
    // frames taken count, not those found and then declined by the framer (~49%).
    assert!(skips > 12 * 1500 * 2 / 5, "{skips} frames read ahead");
}

/// Every cell of every row, as text (`None`: null), column by column.
fn cells(d: &Decoded) -> Vec<Vec<Option<String>>> {
    let cell = |c: &ArrayRef, i: usize| -> Option<String> {
        if c.is_null(i) {
            return None;
        }
        Some(match c.data_type() {
            DataType::UInt64 => c.as_primitive::<UInt64Type>().value(i).to_string(),
            DataType::Int64 => c.as_primitive::<Int64Type>().value(i).to_string(),
            DataType::Timestamp(..) => c.as_primitive::<TimestampMillisecondType>().value(i).to_string(),
            DataType::Utf8 => c.as_string::<i32>().value(i).to_string(),
            DataType::Utf8View => c.as_string_view().value(i).to_string(),
            DataType::Dictionary(..) => {
                let d = c.as_dictionary::<Int32Type>();
                let k = d.keys().value(i);
                format!("{k}:{}", d.values().as_string::<i32>().value(k as usize))
            }
            t => panic!("a column of {t}"),
        })
    };
    d.batches.iter().flat_map(|b| (0..b.num_rows()).map(move |i| b.columns().iter().map(|c| cell(c, i)).collect())).collect()
}

/// A protobuf log: flat events of every arm (all of a flat arm's string fields or
/// some, in any order, with empty strings, escapes, control bytes, unicode, invalid
/// UTF-8, a type or timestamp off, a field twice or unknown, no base event) between
/// events of the other kinds and frames that are no event.
fn protobuf_log(seed: u64, events: usize) -> Vec<u8> {
    use agui_core::test_rng::Rng;
    let mut rng = Rng(seed | 1);
    let strs: [&[u8]; 10] = [
        b"",
        b"m1",
        b"Hello, world",
        "h\u{e9}llo \u{1f600}\u{2028}".as_bytes(),
        b"ok\xff\xfe",
        b"a\"b\\c\n\x01\x7f",
        &[b'x'; 40],
        b"{\"q\": [1, \"</script>\"]}",
        b"tool_call_1",
        b"assistant",
    ];
    let others = [
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","timestamp":1000}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"a":[1,2]}}"#,
        r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/a","value":1}]}"#,
        r#"{"type":"STATE_SNAPSHOT","snapshot":{"a":{"b":"c"}}}"#,
        r#"{"type":"RUN_ERROR","message":"no","code":"E1"}"#,
        r#"{"type":"CUSTOM","name":"n","value":"v"}"#,
    ];
    let varint = |out: &mut Vec<u8>, v: u64| prost_varint(out, v);
    let len_field = |out: &mut Vec<u8>, f: u32, p: &[u8]| {
        prost_varint(out, (f as u64) << 3 | 2);
        prost_varint(out, p.len() as u64);
        out.extend_from_slice(p);
    };
    let mut log = Vec::new();
    for i in 0..events {
        // (A frame that does not decode ends a protobuf log: those only near the end.)
        let late = i > events * 9 / 10;
        let mut msg = Vec::new();
        match rng.below(20) {
            0 => agui_core::proto::encode_json(others[rng.below(others.len())].as_bytes(), false, &mut msg).unwrap(),
            1 if late => msg.extend((0..rng.below(12)).map(|_| rng.next_u64() as u8)),
            _ => {
                // Flat arms and their string fields' count (other arms, and fields past
                // those, only near the end: what prost makes of them may end the log).
                const FLAT: [(u32, u32); 19] = [
                    (1, 4), (2, 3), (3, 2), (4, 4), (5, 3), (6, 2), (15, 2), (16, 2), (17, 5), (18, 5), (19, 6),
                    (21, 3), (25, 2), (26, 3), (27, 3), (28, 2), (29, 3), (30, 2), (31, 4),
                ];
                let (arm, n) = match late && rng.below(4) == 0 {
                    true => (1 + rng.below(31) as u32, 6),
                    false => FLAT[rng.below(FLAT.len())],
                };
                let mut base = Vec::new();
                let ty = match rng.below(30) {
                    0 if late => rng.below(40) as u64,
                    1 => u64::from(agui_core::proto::arm_number_to_enum(arm)) | 1 << 32,
                    _ => u64::from(agui_core::proto::arm_number_to_enum(arm)),
                };
                if ty != 0 || rng.below(2) == 0 {
                    varint(&mut base, 1 << 3);
                    varint(&mut base, ty);
                }
                if rng.below(4) == 0 {
                    varint(&mut base, 2 << 3);
                    let ts = match rng.below(5) {
                        0 => 9_007_199_254_740_991u64,
                        1 if late => 9_007_199_254_740_992,
                        2 => (-9_007_199_254_740_991i64) as u64,
                        3 => 0,
                        _ => 1_700_000_000_000 + rng.below(1 << 20) as u64,
                    };
                    varint(&mut base, ts);
                }
                let mut body = Vec::new();
                if !late || rng.below(40) > 0 {
                    len_field(&mut body, 1, &base);
                }
                let mut fields: Vec<u32> = (2..2 + n).filter(|_| rng.below(3) > 0).collect();
                if rng.below(30) == 0 {
                    fields.push(2 + rng.below(n as usize + usize::from(late)) as u32);
                }
                for i in (1..fields.len()).rev() {
                    if rng.below(5) == 0 {
                        fields.swap(i, rng.below(i + 1));
                    }
                }
                for f in fields {
                    let s = strs[rng.below(strs.len())];
                    let s: &[u8] = if s.ends_with(b"\xfe") && (!late || rng.below(4) > 0) { b"ok" } else { s };
                    len_field(&mut body, f, s);
                }
                len_field(&mut msg, arm, &body);
            }
        }
        log.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        log.extend_from_slice(&msg);
    }
    log
}

fn prost_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `src` decoded by the parts' reader on 1 and 3 threads gives the cells and issues
/// (or the error) of the sequential reader; the decodings that succeeded.
fn parts_as_sequential(src: &Source<'_>, collect: bool, max_depth: usize, what: &str) -> Vec<Decoded> {
    let opts = Options { collect, max_depth, ..Options::default() };
    parts_as_sequential_with(src, &opts, &format!("{what}, collect {collect}, depth {max_depth}"))
}

/// [`parts_as_sequential`] with any options.
fn parts_as_sequential_with(src: &Source<'_>, opts: &Options, what: &str) -> Vec<Decoded> {
    let want = decode_source(src, opts, &Control::default()).map(|d| d.unwrap());
    let mut ok = Vec::new();
    for threads in [1, 3] {
        let got = decode_many(std::slice::from_ref(src), threads, opts, &Control::default());
        let what = format!("{what}, {threads} threads");
        match (got, &want) {
            (Ok(got), Ok(want)) => {
                assert_eq!(cells(&got), cells(want), "{what}");
                assert_eq!(got.issues, want.issues, "{what}");
                ok.push(got);
            }
            (Err(got), Err(want)) => assert_eq!(&got, want, "{what}"),
            (got, want) => panic!("{what}: {:?} vs {:?}", got.err(), want.as_ref().err()),
        }
    }
    ok
}

/// The rows of protobuf flat events made from their wire fields (the parts' reader,
/// `BatchBuilder::push_flat`) are those of their JSON text read with its members (the
/// sequential reader), cell by cell, and so are the issues: collected and raised, on
/// one thread and several, in batches of any size, and with a depth limit of 0.
#[test]
fn flat_protobuf_rows_are_those_of_their_text() {
    let mut flat_rows = 0;
    for seed in 0..4u64 {
        let log = protobuf_log(seed, 12_000);
        let src = bytes(&log, "p");
        for (collect, max_depth) in [(true, 64), (false, 64), (true, 0)] {
            for got in parts_as_sequential(&src, collect, max_depth, &format!("seed {seed}")) {
                flat_rows += usize::from(max_depth > 0) * cells(&got).len();
            }
        }
        // Raised: the first issue stops both at the same frame.
        let one = decode_many(std::slice::from_ref(&src), 1, &Options::default(), &Control::default());
        assert!(one.is_err(), "seed {seed}: a frame that is no event");
    }
    assert!(flat_rows > 4 * 2 * 9_000, "{flat_rows}");
}

/// A protobuf log of nested events (every arm the wire path takes, and others): JSON
/// events of random ids (escapes, control bytes, unicode, empty), timestamps, usage
/// lists of several entries (negative and unsafe counts), snapshots and
/// patches nested a few levels or past a depth limit, encoded by the core's encoder,
/// then some changed on the wire (a field appended, unknown or twice, a byte flipped,
/// invalid UTF-8 in an id, a type off; those that fail only near the end), between
/// flat events.
fn nested_protobuf_log(seed: u64, events: usize) -> Vec<u8> {
    use agui_core::test_rng::Rng;
    let mut rng = Rng(seed | 1);
    let ids = ["", "t1", "run-7", "a\"b\\c\n\u{1}", "h\u{e9}llo \u{1f600}", "msg-123456789012345", "thread-1"];
    // (The unsafe count fails its event: drawn only near the end.)
    let counts = ["1", "0", "-5", "9007199254740991", "40", "9007199254740992"];
    let mut log = Vec::new();
    for i in 0..events {
        let late = i > events * 9 / 10;
        let mut id = || serde_json::to_string(ids[rng.below(ids.len())]).unwrap();
        let (a, b, c) = (id(), id(), id());
        let mut rng2 = Rng(rng.next_u64() | 1);
        let deep = |rng: &mut Rng| {
            let n = [1usize, 2, 4, 8][rng.below(4)];
            format!("{}1{}", "[".repeat(n), "]".repeat(n))
        };
        let ts = match rng2.below(4) {
            0 => String::new(),
            1 => ",\"timestamp\":1700000000000".into(),
            2 => ",\"timestamp\":-9007199254740991".into(),
            _ => ",\"timestamp\":0".into(),
        };
        let mut usage = || {
            let entries: Vec<String> = (0..1 + rng2.below(3))
                .map(|_| {
                    let mut e = vec![format!("\"provider\":{}", serde_json::to_string(ids[rng2.below(ids.len())]).unwrap())];
                    for k in ["inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens", "cacheWriteInputTokens"] {
                        if rng2.below(2) == 0 {
                            e.push(format!("\"{k}\":{}", counts[rng2.below(counts.len() - usize::from(!late))]));
                        }
                    }
                    format!("{{{}}}", e.join(","))
                })
                .collect();
            format!("[{}]", entries.join(","))
        };
        let text = match rng.below(16) {
            0 => format!(r#"{{"type":"RUN_STARTED","threadId":{a},"runId":{b}{ts}}}"#),
            1 => format!(r#"{{"type":"RUN_STARTED","threadId":{a},"runId":{b},"parentRunId":{c},"protocolVersion":"1.0"{ts}}}"#),
            2 => format!(r#"{{"type":"RUN_FINISHED","threadId":{a},"runId":{b},"usage":{}{ts}}}"#, usage()),
            3 => format!(r#"{{"type":"RUN_FINISHED","threadId":{a},"runId":{b},"result":{{"a":{}}},"outcome":{{"type":"success"}}}}"#, deep(&mut rng)),
            4 => format!(r#"{{"type":"RUN_ERROR","message":{a},"code":{b},"usage":{}{ts}}}"#, usage()),
            5 => format!(r#"{{"type":"STATE_SNAPSHOT","snapshot":{{"run":1,"steps":{},"status":{a}}}{ts}}}"#, deep(&mut rng)),
            6 => format!(r#"{{"type":"STATE_DELTA","delta":[{{"op":"replace","path":"/status","value":{a}}}]{ts}}}"#),
            7 => format!(r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":{a},"role":"user","content":{b}}},{{"id":{c},"role":"assistant","toolCalls":[{{"id":"c1","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}]}}"#),
            8 => format!(r#"{{"type":"TOOL_CALL_RESULT","messageId":{a},"toolCallId":{b},"content":{c},"role":"tool"{ts}}}"#),
            9 => format!(r#"{{"type":"TOOL_CALL_RESULT","messageId":{a},"toolCallId":{b},"content":{c}}}"#),
            10 => format!(r#"{{"type":"CUSTOM","name":{a},"value":{}{ts}}}"#, deep(&mut rng)),
            11 => format!(r#"{{"type":"RAW","event":{{"x":{a}}},"source":{b}}}"#),
            12 => format!(r#"{{"type":"ACTIVITY_SNAPSHOT","messageId":{a},"activityType":{b},"content":{{"k":{}}},"replace":true}}"#, deep(&mut rng)),
            13 => format!(r#"{{"type":"ACTIVITY_DELTA","messageId":{a},"activityType":{b},"patch":[{{"op":"add","path":"/a","value":1}}]}}"#),
            14 => format!(r#"{{"type":"STATE_SNAPSHOT","snapshot":{a},"rawEvent":{{"r":{}}},"metadata":{{"m":{b}}}{ts}}}"#, deep(&mut rng)),
            _ => format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":{a},"delta":{b}}}"#),
        };
        let mut msg = Vec::new();
        // The encoder refuses the unsafe count: it is written as the largest safe one, whose
        // varint has the same length, and put on the wire in its place.
        let safe = text.replace("9007199254740992", "9007199254740991");
        agui_core::proto::encode_json(safe.as_bytes(), false, &mut msg).unwrap();
        if safe != text {
            const SAFE: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f];
            const UNSAFE: [u8; 8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10];
            let mut at = 0;
            while let Some(p) = msg[at..].windows(8).position(|w| w == SAFE) {
                msg[at + p..at + p + 8].copy_from_slice(&UNSAFE);
                at += p + 8;
            }
        }
        // Changes on the wire: in the arm's body (the envelope's one field: a one-byte
        // key and length for arms below 16 and most bodies) or of the whole message (near the end: it may fail).
        match rng.below(24) {
            0 if msg.len() > 2 && msg[0] < 0x80 && msg[1] < 0x7c => {
                // An unknown varint field in the body: the prost path's.
                msg.extend_from_slice(&[15 << 3, 1]);
                msg[1] += 2;
            }
            1 if late && msg.len() > 2 && msg[0] < 0x80 && msg[1] < 0x7c => {
                // The base event's type off (field 1 of a base appended twice: merged).
                msg.extend_from_slice(&[0x0a, 0x02, 0x08, 0x03]);
                msg[1] += 4;
            }
            2 if late => {
                let at = rng.below(msg.len());
                msg[at] ^= 1 << rng.below(8);
            }
            3 if late => msg.truncate(rng.below(msg.len())),
            4 if late => {
                if let Some(at) = msg.windows(2).position(|w| w == b"t1") {
                    msg[at] = 0xff;
                }
            }
            _ => {}
        }
        log.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        log.extend_from_slice(&msg);
    }
    log
}

/// The rows of protobuf nested events made from their wire fields (the parts' reader,
/// `BatchBuilder::push_nested`) are those of their JSON text read with its members
/// (the sequential reader), cell by cell, and so are the issues: collected and
/// raised, on one thread and several, with depth limits that some texts pass and
/// some fail, and of 0.
#[test]
fn nested_protobuf_rows_are_those_of_their_text() {
    let (mut rows, mut too_deep) = (0, 0);
    for seed in 0..6u64 {
        let log = nested_protobuf_log(seed, 6_000);
        let src = bytes(&log, "n");
        for (collect, max_depth) in [(true, 64), (false, 64), (true, 3), (true, 5), (false, 4), (true, 0)] {
            for got in parts_as_sequential(&src, collect, max_depth, &format!("seed {seed}")) {
                rows += cells(&got).len();
                too_deep += got.issues.iter().filter(|i| i.message.contains("nested too deeply")).count();
            }
        }
    }
    assert!(rows > 6 * 2 * 12_000 && too_deep > 6 * 2 * 1_000, "{rows} rows, {too_deep} too deep");
}

/// A nested event `push_nested` declines leaves the batch as it was: no row, and block
/// 0 of the `json` column cut back to the bytes it had (events that fail once written,
/// or are nested deeper than the limit), between events it takes.
#[test]
fn declined_nested_events_leave_block_0_as_it_was() {
    let log = nested_protobuf_log(7, 4_000);
    let mut builder = BatchBuilder::with_capacity(None, 16);
    let (mut taken, mut declined, mut at) = (0, 0, 0);
    while at + 4 <= log.len() {
        let n = u32::from_be_bytes(log[at..at + 4].try_into().unwrap()) as usize;
        let msg = &log[at + 4..(at + 4 + n).min(log.len())];
        at += 4 + n;
        let Some(nested) = agui_core::proto::Nested::read(msg) else { continue };
        let (before, rows) = (builder.json.block0().to_vec(), builder.len());
        let max_depth = [3, 64][taken % 2];
        if builder.push_nested(0, 0, &nested, max_depth) {
            taken += 1;
            assert_eq!(builder.len(), rows + 1);
            assert_eq!(&builder.json.block0()[..before.len()], &before[..]);
        } else {
            declined += 1;
            assert_eq!((builder.json.block0(), builder.len()), (&before[..], rows));
        }
    }
    assert!(taken > 1_000 && declined > 200, "{taken} taken, {declined} declined");
    builder.finish();
}

#[test]
fn errors_raise_or_collect() {
    let mut bad = log();
    agui_core::sse::write_event(&mut bad, br#"{"type":"NOPE"}"#);
    agui_core::sse::write_event(&mut bad, br#"{"type":"RUN_STARTED","threadId":"t","runId":"r2"}"#);
    let srcs = [bytes(&log(), "good"), bytes(&bad, "bad")];
    let e = decode_many(&srcs, 2, &Options::default(), &Control::default()).err().unwrap();
    assert_eq!((e.source.as_deref(), e.index, e.kind), (Some("bad"), Some(5), Kind::EventValidation));
    assert!(e.describe().starts_with("bad: unknown event type"), "{}", e.describe());
    let opts = Options { collect: true, ..Options::default() };
    let d = decode_many(&srcs, 2, &opts, &Control::default()).unwrap();
    assert_eq!(d.batches.iter().map(|b| b.num_rows()).sum::<usize>(), 11);
    assert_eq!(d.issues.len(), 1);
    let eb = errors_batch(&d.issues, |k| if k == Kind::EventValidation { "Bad" } else { "?" });
    assert_eq!(eb.num_rows(), 1);
    assert_eq!(eb.column_by_name("error").unwrap().as_string::<i32>().value(0), "Bad");
    assert_eq!(eb.column_by_name("field").unwrap().as_string::<i32>().value(0), "$.type");
}

#[test]
fn parquet_and_inspect() {
    let srcs = [bytes(&log(), "a"), bytes(&log(), "b")];
    #[cfg(feature = "parquet")]
    {
        let mut out = Vec::new();
        let info = write_parquet(&srcs, &Options::default(), &Control::default(), &mut out).unwrap();
        assert_eq!(info.rows, 10);
        assert_eq!(&out[..4], b"PAR1");
    }
    for to in [Output::Sse, Output::Protobuf, Output::Jsonl] {
        let mut out = Vec::new();
        let info = convert(&srcs, &Options::default(), &Control::default(), to, &mut out).unwrap();
        assert_eq!(info.rows, 10);
        if to != Output::Jsonl {
            let back = decode_many(&[bytes(&out, "c")], 1, &Options::default(), &Control::default()).unwrap();
            assert_eq!(back.batches[0].num_rows(), 10, "{to:?}");
        }
    }
    let r = inspect(&srcs[0], &Options::default(), &Control::default()).unwrap();
    assert_eq!(r.events, 5);
    assert_eq!(r.types["TEXT_MESSAGE_CONTENT"], 2);
    assert_eq!((r.runs, r.threads, r.messages, r.tool_calls), (1, 1, 1, 0));
    assert_eq!(r.usage[1], Some(5));
    assert_eq!((r.first_timestamp, r.last_timestamp), (Some(1000), Some(3000)));
    // Totals past i64 (each event's count within it): exact, not saturated.
    let big = b"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"usage\":[{\"inputTokens\":9223372036854775807,\"outputTokens\":-9223372036854775808}]}\n\n".repeat(3);
    let r = inspect(&bytes(&big, "big"), &Options::default(), &Control::default()).unwrap();
    assert_eq!((r.usage[0], r.usage[1]), (Some(3 * i128::from(i64::MAX)), Some(3 * i128::from(i64::MIN))));
    let missing = Source { input: Input::Path("/nonexistent/x.sse".into()), name: Some("x".into()) };
    assert_eq!(inspect(&missing, &Options::default(), &Control::default()).unwrap_err().kind, Kind::NotFound);
}

/// Without threads to be had, every way of decoding runs on the calling thread and
/// gives the same table (no panic, no wait for a worker that never came).
#[test]
fn no_thread_to_be_had() {
    let mut big = Vec::new();
    for _ in 0..20_000 {
        big.extend_from_slice(&log());
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &big).unwrap();
    let gz = gz.finish().unwrap();
    let cases = [vec![bytes(&big, "big")], vec![bytes(&gz, "gz")], (0..4).map(|i| bytes(&log(), &format!("s{i}"))).collect()];
    for (srcs, rows) in cases.iter().zip([100_000, 100_000, 20]) {
        let want = row_values(&decode_many(srcs, 1, &Options::default(), &Control::default()).unwrap());
        assert_eq!(want.len(), rows);
        NO_THREADS.with(|n| n.set(true));
        let got = decode_many(srcs, 3, &Options::default(), &Control::default());
        NO_THREADS.with(|n| n.set(false));
        assert_eq!(row_values(&got.unwrap()), want);
    }
}

/// A log of bad events (some good ones, a framing error in the middle or not, more bad
/// events after it) decoded with budgets of collected errors around its count: parts on
/// several threads fail with the `LimitError` exactly when a sequential read does, and
/// otherwise give its table and errors (also when parts past the framing error spent
/// the budget first); so do several sources and a gzip source.
#[test]
fn collected_errors_stop_at_the_budget_as_a_sequential_read_does() {
    let pad = "p".repeat(200);
    let bad = |i: usize| format!("data: {{\"type\":\"NOPE\",\"i\":{i},\"pad\":\"{pad}\"}}\n\n");
    let good = |i: usize| format!("data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"{i}\"}}\n\n");
    let (mut plain, mut framing) = (String::new(), String::new());
    for i in 0..40_000 {
        plain.push_str(&if i % 3 == 0 { good(i) } else { bad(i) });
        framing.push_str(&if i % 3 == 0 { good(i) } else { bad(i) });
        if i == 5_000 {
            // A line over the limit (1000 bytes below): the log ends there.
            framing.push_str(&format!("data: {}\n\n", "x".repeat(2_000)));
        }
    }
    let limits = Limits { max_buffer: 1_000, ..Limits::default() };
    let (mut limited, mut kept) = (0, 0);
    for (log, count) in [(&plain, 26_666usize), (&framing, 3_335)] {
        let src = bytes(log.as_bytes(), "x");
        for max_errors in [0, 1, 100, count - 1, count, count + 1, 30_000, 100_000] {
            let opts = Options { collect: true, max_errors, limits, ..Options::default() };
            let got = parts_as_sequential_with(&src, &opts, &format!("{count} errors, max {max_errors}"));
            match got.first() {
                Some(d) => {
                    assert!(d.issues.len() <= max_errors && d.issues.len() >= count.min(max_errors + 1) - 1, "{max_errors}");
                    kept += 1;
                }
                None => {
                    let e = decode_source(&src, &opts, &Control::default()).err().unwrap();
                    assert_eq!(e.kind, Kind::TooManyErrors);
                    assert!(max_errors < count, "{max_errors} >= {count}");
                    limited += 1;
                }
            }
        }
        // Several sources: one budget for the call.
        let srcs = [bytes(log.as_bytes(), "a"), bytes(log.as_bytes(), "b")];
        for (max_errors, fails) in [(2 * count - 1, true), (2 * count, false)] {
            let opts = Options { collect: true, max_errors, limits, ..Options::default() };
            for threads in [1, 2, 3] {
                let got = decode_many(&srcs, threads, &opts, &Control::default());
                assert_eq!(got.as_ref().err().map(|e| e.kind), fails.then_some(Kind::TooManyErrors), "{threads} threads, max {max_errors}");
            }
        }
        // A gzip source (framed on this thread, parsed by workers).
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, log.as_bytes()).unwrap();
        let gz = bytes(&gz.finish().unwrap(), "gz");
        for (max_errors, fails) in [(count - 1, true), (count, false)] {
            let opts = Options { collect: true, max_errors, limits, ..Options::default() };
            for threads in [1, 3] {
                let got = decode_many(std::slice::from_ref(&gz), threads, &opts, &Control::default());
                assert_eq!(got.as_ref().err().map(|e| e.kind), fails.then_some(Kind::TooManyErrors), "gzip, {threads} threads");
                if let Ok(d) = got {
                    assert_eq!(d.issues.len(), count);
                }
            }
        }
    }
    assert!(limited >= 6 && kept >= 6, "{limited} limited, {kept} kept");
}

/// A log that cannot be cut past some point (a region of short lines with no blank
/// line, a line of NULs over the limit) is one part from there, read as a stream (not
/// held in memory whole): its rows and errors are the sequential reader's, from memory
/// and from a file.
#[test]
fn parts_too_big_to_hold_are_read_as_streams() {
    let mut head = Vec::new();
    for _ in 0..3_000 {
        head.extend_from_slice(&log());
    }
    let limits = Limits { max_buffer: 1_000, ..Limits::default() };
    let big = crate::parts::PART_MAX as usize + 2 * limits.max_buffer;
    let mut soup = head.clone();
    while soup.len() < head.len() + big {
        soup.extend_from_slice(b": keep-alive\n");
    }
    soup.extend_from_slice(b"\n");
    soup.extend_from_slice(&head);
    let mut nul = head.clone();
    nul.extend_from_slice(b"data: ");
    nul.resize(head.len() + big, 0);
    let dir = std::env::temp_dir();
    for (name, log) in [("soup", &soup), ("nul", &nul)] {
        let path = dir.join(format!("agui-arrow-test-{}-{name}.sse", std::process::id()));
        std::fs::write(&path, log).unwrap();
        let srcs = [bytes(log, "x"), Source { input: Input::Path(path.clone()), name: Some("x".into()) }];
        for src in &srcs {
            for collect in [true, false] {
                let opts = Options { collect, limits, ..Options::default() };
                parts_as_sequential_with(src, &opts, name);
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}
