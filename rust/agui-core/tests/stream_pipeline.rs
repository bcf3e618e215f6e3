//! Every way a log is replayed has exactly the outcome of the plain one (each event's text,
//! as the framer's line search frames it, pushed to a `Replayer`): a log held in memory and
//! read ahead of the line search (`replay_log_bytes`), a log read from a reader chunk by
//! chunk and read ahead within each chunk (`replay_log`, with chunks cut anywhere). The
//! same messages, state, interrupts, warnings, events consumed and error (stage, rule,
//! index, type, ids, message), on every client vector and on generated logs in both
//! formats with errors at the start, in the middle, at the end and anywhere between.

use agui_core::log::{Limits, LogError, LogReader};
use agui_core::stream::{parse_json, replay_log, replay_log_bytes, Replay, ReplayOptions, Replayer, Stage, StreamError};
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;

fn load(name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/client").join(name);
    let mut text = String::new();
    if name.ends_with(".gz") {
        flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()).read_to_string(&mut text).unwrap();
    } else {
        text = std::fs::read_to_string(&path).unwrap();
    }
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| parse_json(l.as_bytes()).unwrap()).collect()
}

fn sse(events: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        agui_core::sse::write_event(&mut out, &agui_core::stream::json_text(e));
    }
    out
}

/// The log in protobuf; `None` when an event has no protobuf form.
fn protobuf(events: &[Value]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for e in events {
        agui_core::proto::encode_json(&serde_json::to_vec(e).unwrap(), true, &mut out).ok()?;
    }
    Some(out)
}

/// Everything a replay returns, as text; the random UUIDs the 0.x boundary gives new
/// messages (as the reference does) read as `<uuid>`.
fn outcome<S: std::fmt::Debug>(r: &Replay<S>) -> String {
    let text = format!("{:?}", (&r.messages, &r.state, &r.pending_interrupts, &r.warnings, &r.error, r.events));
    let b = text.as_bytes();
    let is_uuid = |w: &[u8]| {
        w.iter().enumerate().all(|(i, c)| if [8, 13, 18, 23].contains(&i) { *c == b'-' } else { c.is_ascii_hexdigit() })
    };
    let (mut out, mut i) = (String::new(), 0);
    while i < b.len() {
        if b.len() - i >= 36 && is_uuid(&b[i..i + 36]) {
            out.push_str("<uuid>");
            i += 36;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// The plain replay of a log: each event the log reader frames (no reader ahead) pushed
/// to a `Replayer` as its text; a log that stops reading stops the replay there.
fn line_search(log: &[u8], messages: Vec<Value>, state: Value, options: ReplayOptions) -> Replay {
    enum Stop {
        Log(LogError),
        Stream(StreamError),
    }
    impl From<LogError> for Stop {
        fn from(e: LogError) -> Self {
            Stop::Log(e)
        }
    }
    let mut r = Replayer::new(messages, state, options);
    let mut read = 0usize;
    let outcome = LogReader::open(log, None).map_err(Stop::Log).and_then(|l| {
        l.for_each(&Limits::default(), |ev| {
            read += 1;
            r.push_json(ev.json).map(|_| ()).map_err(Stop::Stream)
        })
    });
    match outcome {
        Ok(_) => r.finish(None),
        Err(Stop::Stream(e)) => r.finish(Some(e)),
        Err(Stop::Log(e)) => {
            let error = StreamError { stage: Stage::Decode, rule: None, index: read, event_type: String::new(), ids: Vec::new(), message: e.to_string(), field: None };
            Replay { log_error: Some(agui_core::stream::LogStop::Read(e)), ..r.finish(Some(error)) }
        }
    }
}

/// A reader handing out `log` in pieces of the given sizes, in turn.
struct Pieces<'a> {
    log: &'a [u8],
    sizes: &'a [usize],
    next: usize,
}

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.sizes[self.next % self.sizes.len()].min(buf.len()).min(self.log.len());
        self.next += 1;
        buf[..n].copy_from_slice(&self.log[..n]);
        self.log = &self.log[n..];
        Ok(n)
    }
}

/// Every path on `log` against the plain replay; the outcome, for the caller's checks.
fn same(log: &[u8], messages: Vec<Value>, state: Value, options: ReplayOptions, what: &str) -> Replay {
    let plain = line_search(log, messages.clone(), state.clone(), options);
    let check = |r: &Replay, how: &str| {
        assert_eq!(outcome(&plain), outcome(r), "{what} ({how})");
        assert_eq!(format!("{:?}", plain.log_error), format!("{:?}", r.log_error), "{what} ({how})");
    };
    // (a log in memory, framed where it lies)
    check(&replay_log_bytes(log, None, messages.clone(), state.clone(), options), "held in memory");
    // (read in chunks: whole ones, and cut anywhere, inside frames, escapes and characters)
    check(&replay_log(log, None, messages.clone(), state.clone(), options), "read");
    // (a long log in a few larger pieces: its frames and their reads are the short logs')
    let cuts: &[&[usize]] = if log.len() <= 1 << 16 { &[&[1], &[7, 1, 30, 2, 113], &[300, 4096, 65, 1500]] } else { &[&[4093, 65, 1500, 70_001]] };
    for &sizes in cuts {
        let pieces = Pieces { log, sizes, next: 0 };
        check(&replay_log(pieces, None, messages.clone(), state.clone(), options), &format!("read in pieces of {sizes:?}"));
    }
    plain
}

#[test]
fn every_client_vector_replays_the_same_every_way() {
    let mut n = 0;
    for (file, key) in [("chunks.jsonl", "input"), ("verify.jsonl", "input"), ("legacy.jsonl", "input"), ("apply.jsonl.gz", "events")] {
        for case in load(file) {
            let events = case[key].as_array().cloned().unwrap_or_default();
            let (messages, state) = match case.get("initial") {
                Some(i) => (i["messages"].as_array().cloned().unwrap_or_default(), i["state"].clone()),
                None => (Vec::new(), json!({})),
            };
            for verify in [false, true] {
                let options = ReplayOptions { verify, ..ReplayOptions::default() };
                let what = format!("{file} {} verify={verify}", case["name"]);
                same(&sse(&events), messages.clone(), state.clone(), options, &what);
                if let Some(pb) = protobuf(&events) {
                    same(&pb, messages.clone(), state.clone(), options, &format!("{what} (protobuf)"));
                }
                n += 1;
            }
        }
    }
    assert!(n > 1000, "{n} cases");
}

/// A run of `n` events: text streamed as explicit deltas and as chunks, tool calls with
/// streamed arguments, reasoning, and state deltas (some failing their `test`).
fn generated(n: usize) -> Vec<Value> {
    let mut out = vec![
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"n": 0, "items": [], "k": {"a": 1}}}),
    ];
    let mut i = 0;
    while out.len() < n {
        let m = format!("m{i}");
        match i % 4 {
            0 => {
                out.push(json!({"type": "TEXT_MESSAGE_START", "messageId": m, "role": "assistant"}));
                for k in 0..40 {
                    out.push(json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": m, "delta": format!("w{k} é\"\\\n")}));
                }
                out.push(json!({"type": "TEXT_MESSAGE_END", "messageId": m}));
            }
            1 => {
                out.push(json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": m, "delta": "a"}));
                for k in 0..30 {
                    out.push(json!({"type": "TEXT_MESSAGE_CHUNK", "delta": format!("{k} ")}));
                }
                out.push(json!({"type": "TOOL_CALL_CHUNK", "toolCallId": format!("c{i}"), "toolCallName": "f", "delta": "{"}));
                for _ in 0..10 {
                    out.push(json!({"type": "TOOL_CALL_CHUNK", "toolCallId": format!("c{i}"), "delta": "\"x\":1,"}));
                }
                out.push(json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/items/-", "value": i}]}));
            }
            2 => {
                let c = format!("c{i}");
                out.push(json!({"type": "TOOL_CALL_START", "toolCallId": c, "toolCallName": "g"}));
                for _ in 0..20 {
                    out.push(json!({"type": "TOOL_CALL_ARGS", "toolCallId": c, "delta": "[1,"}));
                }
                out.push(json!({"type": "TOOL_CALL_END", "toolCallId": c}));
                out.push(json!({"type": "TOOL_CALL_RESULT", "messageId": format!("r{i}"), "toolCallId": c, "content": "ok"}));
            }
            _ => {
                out.push(json!({"type": "REASONING_MESSAGE_START", "messageId": m, "role": "reasoning"}));
                for _ in 0..15 {
                    out.push(json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": m, "delta": "hm"}));
                }
                out.push(json!({"type": "REASONING_MESSAGE_END", "messageId": m}));
                for k in 0..10 {
                    out.push(json!({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": k}, {"op": "test", "path": "/k/a", "value": k % 3}]}));
                }
            }
        }
        i += 1;
    }
    out.truncate(n);
    out.push(json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}));
    out
}

/// The kinds of error put into a generated log at event `at`.
fn spoil(events: &[Value], at: usize, how: usize) -> (Vec<u8>, Option<Vec<u8>>) {
    let (before, after) = events.split_at(at.min(events.len()));
    let bad: &[u8] = match how {
        0 => b"data: {not json\n\n",
        1 => b"data: [1, 2]\n\n",
        // A chunk stream the expander rejects (no id to open it).
        2 => b"data: {\"type\":\"TOOL_CALL_CHUNK\",\"delta\":\"x\"}\n\n",
        // A second RUN_STARTED while the run is active (R-rules, with verify) and an
        // event after it.
        _ => b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n",
    };
    let mut log = sse(before);
    log.extend_from_slice(bad);
    log.extend(sse(after));
    // Protobuf: a frame that does not decode, then the rest.
    let pb = protobuf(before).and_then(|mut pb| {
        pb.extend_from_slice(&[0, 0, 0, 2, 0xff, 0xff]);
        pb.extend(protobuf(after)?);
        Some(pb)
    });
    (log, pb)
}

#[test]
fn generated_logs_with_errors_anywhere_replay_the_same_every_way() {
    // (several of the reader's 256 KiB chunks)
    let events = generated(8_200);
    let clean = same(&sse(&events), Vec::new(), json!({}), ReplayOptions::default(), "clean");
    assert!(clean.error.is_none(), "{:?}", clean.error);
    assert!(!clean.warnings.is_empty() && clean.messages.len() > 100);
    same(&protobuf(&events).unwrap(), Vec::new(), json!({}), ReplayOptions::default(), "clean protobuf");
    for at in [0, 1, 100, 2_999, 3_000, 5_000, events.len() - 1, events.len()] {
        for how in 0..4 {
            let (log, pb) = spoil(&events, at, how);
            for verify in [false, true] {
                let options = ReplayOptions { verify, ..ReplayOptions::default() };
                let r = same(&log, Vec::new(), json!({}), options, &format!("sse at {at} how {how} verify {verify}"));
                if how < 2 && !verify {
                    assert_eq!(r.error.as_ref().map(|e| e.index), Some(at), "sse at {at} how {how} verify {verify}");
                }
                if how > 0 {
                    continue; // the protobuf log is spoiled one way only: checked once
                }
                let pb = pb.as_ref().unwrap();
                let r = same(pb, Vec::new(), json!({}), options, &format!("protobuf at {at} verify {verify}"));
                if !verify {
                    assert_eq!(r.error.as_ref().map(|e| e.index), Some(at), "protobuf at {at}");
                }
            }
        }
    }
}

/// A token stream's frames in every way a frame may differ from the last delta's form
/// (what the replay of a log in memory reads ahead of the framer's line search): the same
/// outcome as the line search alone.
#[test]
fn frames_read_ahead_replay_as_the_line_search_frames_them() {
    let start: &[u8] = b"data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m1\",\"role\":\"assistant\"}\n\n";
    let delta = |d: &str| format!("data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":\"{d}\"}}\n\n").into_bytes();
    let lead = "{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m1\",\"delta\":";
    let variants: Vec<Vec<u8>> = vec![
        format!("data: {lead}\"crlf\"}}\r\n\r\n").into_bytes(),
        format!("data: {lead}\"cr\"}}\r\r").into_bytes(),
        format!("data: {lead}\"lf cr\"}}\n\r").into_bytes(),
        format!("data: {lead}\"two\"}}\ndata: {lead}\"lines\"}}\n\n").into_bytes(),
        format!("data: {lead}\"then a field\"}}\nid: 7\n\n").into_bytes(),
        format!("id: 7\ndata: {lead}\"after a field\"}}\n\n").into_bytes(),
        format!("event: x\ndata: {lead}\"named\"}}\n\n").into_bytes(),
        format!(": comment\ndata: {lead}\"commented\"}}\n\n").into_bytes(),
        format!("data:{lead}\"no space\"}}\n\n").into_bytes(),
        format!("data: {lead}\"trailing\"}} \n\n").into_bytes(),
        format!("data: {lead}\"a\\n\\\"b\\u00e9\\ud83d\\ude00\"}}\n\n").into_bytes(),
        format!("data: {lead}\"lone \\ud800\"}}\n\n").into_bytes(),
        format!("data: {lead}\"kept \u{10F800}\"}}\n\n").into_bytes(),
        format!("data: {lead}\"kept escaped \\udbff\\udfff\"}}\n\n").into_bytes(),
        [format!("data: {lead}\"bad ").as_bytes(), b"\xff\xfe", b"\"}\n\n"].concat(),
        [format!("data: {lead}\"tab ").as_bytes(), b"\t", b"\"}\n\n"].concat(),
        format!("data: {lead}\"more\",\"x\":1}}\n\n").into_bytes(),
        format!("data: {lead}\"open\"").into_bytes(),
        format!("data: {lead}\"last\"}}").into_bytes(),
        format!("data: {lead}\"last\"}}\n").into_bytes(),
        delta("other form").into_iter().map(|b| if b == b'1' { b'2' } else { b }).collect(),
        // (escaped deltas in frames the line search frames: the delta decoded while its
        // end was found is cut back)
        format!("data: {lead}\"esc\\n two\"}}\ndata: {lead}\"lines\"}}\n\n").into_bytes(),
        format!("data: {lead}\"esc\\t trailing\"}} \n\n").into_bytes(),
        format!("data: {lead}\"esc\\\" field\"}}\nid: 8\n\n").into_bytes(),
    ];
    let mut n = 0;
    for v in &variants {
        for verify in [false, true] {
            let mut log = start.to_vec();
            for i in 0..3 {
                log.extend(delta(&format!("w{i} ")));
            }
            log.extend_from_slice(v);
            for i in 3..6 {
                log.extend(delta(&format!("w{i} ")));
            }
            let options = ReplayOptions { verify, ..ReplayOptions::default() };
            let r = same(&log, Vec::new(), json!({}), options, &String::from_utf8_lossy(v));
            n += usize::from(r.error.is_none() && !r.messages.is_empty());
        }
    }
    // (the variants that keep the log readable, without verification: it refuses a log
    // that does not start with RUN_STARTED)
    assert_eq!(n, 18, "replays without an error");
}

#[test]
fn truncated_and_gzip_logs_replay_the_same_every_way() {
    use std::io::Write;
    let events = generated(3_000);
    for log in [sse(&events), protobuf(&events).unwrap()] {
        for cut in [7, log.len() / 2, log.len() - 3] {
            let r = same(&log[..cut], Vec::new(), json!({}), ReplayOptions::default(), &format!("cut at {cut}"));
            assert!(r.events > 0 || cut < 100);
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&log).unwrap();
        let gz = gz.finish().unwrap();
        let whole = same(&gz, Vec::new(), json!({}), ReplayOptions::default(), "gzip");
        assert!(whole.error.is_none());
        let r = same(&gz[..gz.len() * 2 / 3], Vec::new(), json!({}), ReplayOptions::default(), "truncated gzip");
        assert!(r.error.is_some());
    }
    // Not a log at all; an empty one.
    assert!(same(b"\x89PNG\r\n", Vec::new(), json!({}), ReplayOptions::default(), "png").error.is_some());
    assert_eq!(same(b"", Vec::new(), json!({}), ReplayOptions::default(), "empty").events, 0);
}

#[test]
fn deep_events_fail_the_same_every_way() {
    // The replay parses on this thread: give it a main thread's stack.
    std::thread::Builder::new().stack_size(agui_core::pipeline::STACK).spawn(deep).unwrap().join().unwrap();
}

fn deep() {
    let cap = agui_core::limits::MAX_DEPTH_CAP;
    for depth in [cap - 1, cap, cap + 1, 100_000] {
        let mut log = b"data: {\"type\":\"STATE_SNAPSHOT\",\"snapshot\":".to_vec();
        log.extend(std::iter::repeat_n(b'[', depth));
        log.extend(std::iter::repeat_n(b']', depth));
        log.extend_from_slice(b"}\n\n");
        let options = ReplayOptions { max_depth: cap, ..ReplayOptions::default() };
        let r = same(&log, Vec::new(), json!({}), options, &format!("depth {depth}"));
        assert_eq!(r.error.is_some(), depth + 1 > cap, "depth {depth}");
    }
}

/// Plain deltas (read without an event object, their target kept from one to the next)
/// against the same events as objects (the general path), around every event that moves,
/// replaces or retypes messages between two deltas to the same id.
#[test]
fn plain_deltas_apply_as_event_objects_do() {
    let text = |id: &str, d: &str| json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": d});
    let args = |id: &str, d: &str| json!({"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": d});
    let events = vec![
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
        text("m1", "a"),
        text("m1", "b\"é"),
        json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f", "parentMessageId": "m1"}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "g", "parentMessageId": "m1"}),
        args("c2", "["),
        args("c1", "{"),
        args("c1", "1"),
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"}),
        text("m2", "x"),
        // A result inserted before m2: m2 moves one place on.
        json!({"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": "ok"}),
        text("m2", "y"),
        text("m1", "c"),
        text("m2", "z"),
        // Reasoning content to a text message's id, arguments to a message id.
        json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": "m2", "delta": "r"}),
        args("m2", "no such call"),
        // A snapshot that reorders, and one that drops a message.
        json!({"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "m2", "role": "assistant", "content": "Z"},
            {"id": "m1", "role": "assistant", "content": "A", "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{"}}]}]}),
        text("m2", "1"),
        text("m1", "2"),
        args("c1", "2"),
        args("c2", "lost"),
        // m1 becomes an activity: deltas to it now warn.
        json!({"type": "ACTIVITY_SNAPSHOT", "messageId": "m1", "activityType": "a", "content": {}}),
        text("m1", "3"),
        text("m2", "4"),
        json!({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/x", "value": 1}]}),
        text("m2", "5"),
        args("c1", "3"),
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    ];
    let options = ReplayOptions::default();
    let objects = agui_core::stream::replay(events.clone(), Vec::new(), json!({}), options);
    let log = sse(&events);
    let text_path = same(&log, Vec::new(), json!({}), options, "plain deltas");
    assert_eq!(outcome(&objects), outcome(&text_path));
    assert!(objects.warnings.len() >= 3, "{:?}", objects.warnings);
    let m2 = objects.messages.iter().find(|m| m.get("id") == Some(&json!("m2"))).unwrap();
    assert_eq!(m2.get("content"), Some(&json!("Z145")));
}

/// A limit below one level refuses every event, plain deltas too, on both paths.
#[test]
fn a_zero_depth_limit_refuses_plain_deltas() {
    let events = [
        json!({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "a"}),
        json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "b"}),
    ];
    for from in 0..2 {
        let options = ReplayOptions { max_depth: 0, ..ReplayOptions::default() };
        let r = same(&sse(&events[from..]), Vec::new(), json!({}), options, "depth 0");
        assert_eq!(r.error.map(|e| (e.stage, e.index)), Some((agui_core::stream::Stage::Decode, 0)));
    }
}

/// Chunk streams (text, tool calls, reasoning; continued by id, without one, by a tagged
/// lane, with opener fields repeated or changed, interrupted by other events, escapes,
/// lone surrogates and the kept range in their deltas) in random runs of repeated forms,
/// each replayed from its text (a chunk that continues a pending stream appended to the
/// string the reducer holds) against the same events as objects: the same outcome under
/// each stage's options.
#[test]
fn plain_chunks_apply_as_event_objects_do() {
    let deltas = ["a", "b\\\"é", "\\n", "", "\\ud83d\\ude00", "\\ud83d", "\\ude00", "\u{10F800}", "\\udbff\\udfff", "\u{10FFFF}x", "\\\\uDBFF", "{\\\"q\\\":1}"];
    let forms = [
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m2","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","role":"assistant","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","role":"user","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","subagentRunId":"s","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","subagentRunId":null,"delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1"}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"D","timestamp":1}"#,
        r#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"c1","delta":"D"}"#,
        r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"f","delta":"D"}"#,
        r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","delta":"D"}"#,
        r#"{"type":"TOOL_CALL_CHUNK","delta":"D"}"#,
        r#"{"type":"TOOL_CALL_CHUNK","toolCallId":"c1","toolCallName":"g","delta":"D"}"#,
        r#"{"type":"REASONING_MESSAGE_CHUNK","messageId":"r1","delta":"D"}"#,
        r#"{"type":"REASONING_MESSAGE_CHUNK","delta":"D"}"#,
        r#"{"type":"REASONING_MESSAGE_CHUNK","messageId":"m1","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"D"}"#,
        r#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"D"}"#,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#,
        r#"{"type":"TEXT_MESSAGE_END","messageId":"m1"}"#,
        r#"{"type":"TEXT_MESSAGE_START","messageId":"m3","role":"assistant","subagentRunId":"s"}"#,
        r#"{"type":"MESSAGES_SNAPSHOT","messages":[]}"#,
        r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/x","value":1}]}"#,
        r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
    ];
    let base = ReplayOptions::default();
    let options = [base, ReplayOptions { verify: true, ..base }, ReplayOptions { schema: false, ..base }, ReplayOptions { expand: false, ..base }];
    let mut rng = agui_core::test_rng::Rng(0xc4_0e5c);
    let (mut clean, mut chunks) = (0, 0);
    for round in 0..1500 {
        let mut texts = vec![r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#.to_string()];
        let mut form = forms[0];
        for _ in 0..5 + rng.below(30) {
            // (mostly runs of one form, as token streams are)
            if rng.below(10) < 3 {
                form = forms[rng.below(forms.len())];
            }
            texts.push(form.replace('D', deltas[rng.below(deltas.len())]));
        }
        let texts: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let mut log = Vec::new();
        for t in &texts {
            agui_core::sse::write_event(&mut log, t);
        }
        let options = options[round % options.len()];
        let objects = general(&texts, json!({}), options);
        let what = format!("{:?} ({options:?})", texts.iter().map(|t| String::from_utf8_lossy(t)).collect::<Vec<_>>());
        assert_eq!(outcome(&objects), outcome(&same(&log, Vec::new(), json!({}), options, &what)), "{what}");
        clean += usize::from(objects.error.is_none());
        chunks += usize::from(objects.messages.iter().any(|m| m.get("content").and_then(Value::as_str).is_some_and(|c| c.len() > 8)));
    }
    // (both outcomes, and streams of some length)
    assert!(clean > 300 && clean < 1400 && chunks > 300, "{clean} clean, {chunks} with text");
}

/// Common events in their plain form (starts, ends, results, run events: read without an
/// event object) and their near misses against the same events as objects (the general
/// path), each after a few events that give it something to act on, with and without a
/// pending chunk stream, under each stage's options: the same outcome (messages, state,
/// warnings, error with its stage, index, field and message).
#[test]
fn plain_events_apply_as_event_objects_do() {
    let big_int_snapshot = format!(r#"{{"type":"STATE_SNAPSHOT","snapshot":{{"n":{}}}}}"#, "9".repeat(5000)).into_bytes();
    let variants: &[&[u8]] = &[
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","role":"assistant"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","role":"user","name":"n","timestamp":1700000000000}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"developer"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","role":"narrator"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","role":5}"#,
        br#"{"type":"TEXT_MESSAGE_START","role":"assistant"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":7}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","name":null}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","timestamp":-9007199254740991}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","timestamp":9007199254740992}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","timestamp":-9007199254740992}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","timestamp":99999999999999999999999}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","timestamp":1.5}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","foo":1}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","messageId":"m8"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m\u0039","role":"assistant"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"\ud83d\ude00"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"\ud83d"}"#,
        "{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"\u{10F800}\"}".as_bytes(),
        b"{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\xff\"}",
        br#"{"type":"TEXT_MESSAGE_\u0045ND","messageId":"m1"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","subagentRunId":"s"}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m9","metadata":{"a":1}}"#,
        br#"{ "type":"TEXT_MESSAGE_START","messageId":"m9"}"#,
        br#"{"type":"TEXT_MESSAGE_END","messageId":"m1"}"#,
        br#"{"type":"TEXT_MESSAGE_END","messageId":"nope"}"#,
        br#"{"type":"TEXT_MESSAGE_END","messageId":"a1"}"#,
        br#"{"type":"TEXT_MESSAGE_END","messageId":"m1","metadata":{"k":"v"}}"#,
        br#"{"type":"TEXT_MESSAGE_END","messageId":"m1","rawEvent":{}}"#,
        br#"{"type":"TEXT_MESSAGE_END","messageId":"m1","rawEvent":null}"#,
        br#"{"type":"TEXT_MESSAGE_END"}"#,
        br#"{"type":"REASONING_START","messageId":"r1"}"#,
        br#"{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"reasoning"}"#,
        br#"{"type":"REASONING_MESSAGE_START","messageId":"m1","role":"reasoning"}"#,
        br#"{"type":"REASONING_MESSAGE_START","messageId":"a1","role":"reasoning"}"#,
        br#"{"type":"REASONING_MESSAGE_START","messageId":"r1"}"#,
        br#"{"type":"REASONING_MESSAGE_START","messageId":"r1","role":"assistant"}"#,
        br#"{"type":"REASONING_MESSAGE_END","messageId":"m1"}"#,
        br#"{"type":"REASONING_END","messageId":"r1"}"#,
        br#"{"type":"STEP_STARTED","stepName":"s"}"#,
        br#"{"type":"STEP_FINISHED"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c9","toolCallName":"f","parentMessageId":"m1"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c9","toolCallName":"f"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c9","toolCallName":"f","parentMessageId":"u1"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c9","toolCallName":"f","parentMessageId":"a1"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c9","toolCallName":"f","parentMessageId":""}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"g","parentMessageId":"m1"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"m1","toolCallName":"f"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c9"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c9","toolCallName":"f","parentMessageId":null}"#,
        br#"{"type":"TOOL_CALL_END","toolCallId":"c1"}"#,
        br#"{"type":"TOOL_CALL_END","toolCallId":"zz"}"#,
        br#"{"type":"TOOL_CALL_END","toolCallId":"c1","metadata":{"x":1}}"#,
        br#"{"type":"TOOL_CALL_RESULT","messageId":"t9","toolCallId":"c1","content":"ok"}"#,
        br#"{"type":"TOOL_CALL_RESULT","messageId":"t9","toolCallId":"c1","content":"ok","role":"tool"}"#,
        br#"{"type":"TOOL_CALL_RESULT","messageId":"t9","toolCallId":"zz","content":"a\n\"b\""}"#,
        br#"{"type":"TOOL_CALL_RESULT","messageId":"t9","toolCallId":"c1","content":"ok","role":"user"}"#,
        br#"{"type":"TOOL_CALL_RESULT","messageId":"t9","toolCallId":"c1","content":[{"type":"text","text":"x"}]}"#,
        br#"{"type":"TOOL_CALL_RESULT","messageId":"t9","toolCallId":"c1"}"#,
        br#"{"type":"TOOL_CALL_RESULT","messageId":"m1","toolCallId":"c1","content":"dup"}"#,
        br#"{"type":"RUN_STARTED","threadId":"t","runId":"r2"}"#,
        br#"{"type":"RUN_STARTED","timestamp":1,"threadId":"t","runId":"r2","parentRunId":"r"}"#,
        br#"{"type":"RUN_STARTED","threadId":"t","runId":"r2","protocolVersion":"9.0"}"#,
        br#"{"type":"RUN_STARTED","threadId":"t"}"#,
        br#"{"type":"RUN_STARTED","threadId":5,"runId":"r"}"#,
        br#"{"type":"RUN_STARTED","threadId":"t","runId":"r2","input":{"threadId":"t","runId":"r2","messages":[{"id":"i1","role":"user","content":"hi"}]}}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r"}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"provider":"p","inputTokens":1,"outputTokens":2}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":-1}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":1,"future":2}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":{"inputTokens":1}}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[[[[[[1]]]]]]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":1.0}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"provider":"p"},{"model":"m","totalTokens":0}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"provider":"p","provider":"q"}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"provider":"p\u00e9","inputTokens":9007199254740992}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"provider":null}]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"provider":"p"} ]}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"a":1}}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":null}"#,
        br#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"i","reason":"r"}]}}"#,
        br#"{"type":"RUN_FINISHED","runId":"r"}"#,
        br#"{"type":"RUN_ERROR","message":"boom"}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":{"a":[1,{"b":"c"}],"d":"\n"}}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":[1,2]}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":"s"}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":5}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":null}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":{}}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":{"a":{"b":{"c":{}}}}}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":{"a":"\ud800"}}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":{"a":"\udbff\udfff"}}"#,
        "{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":{\"a\":\"\u{10F800}\"}}".as_bytes(),
        br#"{"type":"STATE_SNAPSHOT","snapshot":{"a":1},"snapshot":{"b":2}}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":{"a":1,}}"#,
        br#"{"type":"STATE_SNAPSHOT","snapshot":{"a":1},"timestamp":3}"#,
        br#"{"type":"STATE_SNAPSHOT"}"#,
        &big_int_snapshot,
    ];
    let before: &[&[u8]] = &[
        br#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#,
        br#"{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u1","role":"user","content":"q"}]}"#,
        br#"{"type":"ACTIVITY_SNAPSHOT","messageId":"a1","activityType":"x","content":{}}"#,
        br#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}"#,
        br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a"}"#,
        br#"{"type":"TOOL_CALL_START","toolCallId":"c1","toolCallName":"f","parentMessageId":"m1"}"#,
        br#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"{"}"#,
    ];
    let chunk: &[u8] = br#"{"type":"TEXT_MESSAGE_CHUNK","messageId":"k1","delta":"x"}"#;
    let after: &[&[u8]] = &[
        br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"b"}"#,
        br#"{"type":"TOOL_CALL_ARGS","toolCallId":"c1","delta":"}"}"#,
        br#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/z","value":1}]}"#,
    ];
    let base = ReplayOptions::default();
    let options = [
        base,
        ReplayOptions { verify: true, ..base },
        ReplayOptions { schema: false, ..base },
        ReplayOptions { compat: false, ..base },
        ReplayOptions { max_depth: 3, ..base },
        ReplayOptions { protocol_version: agui_core::stream::legacy::ProtocolVersion::parse("1.0.0"), ..base },
    ];
    let mut plain = 0;
    for v in variants {
        plain += usize::from(agui_core::stream::event::Plain::read(v, None, 512).is_some());
        for pending in [false, true] {
            for &options in &options {
                let mut texts: Vec<&[u8]> = before.to_vec();
                if pending {
                    texts.push(chunk);
                }
                texts.push(v);
                texts.extend_from_slice(after);
                let mut log = Vec::new();
                for t in &texts {
                    agui_core::sse::write_event(&mut log, t);
                }
                let objects = general(&texts, json!({}), options);
                let text = same(&log, Vec::new(), json!({}), options, "plain events");
                let what = String::from_utf8_lossy(v);
                assert_eq!(outcome(&objects), outcome(&text), "{what} (pending chunk stream: {pending}, {options:?})");
            }
        }
    }
    // (the variants include both forms)
    assert!(plain >= 25 && plain < variants.len() - 25, "{plain} plain of {}", variants.len());
}

/// A `STATE_SNAPSHOT` whose snapshot comes right after its type and whose text the reader
/// hands over to the event's end unscanned: replayed into the core's tree and into a JSON
/// state, each gives what the event's object gives (messages, state, warnings, error),
/// whatever follows the snapshot (more members, a stray bracket, spacing) and whatever it
/// holds (escapes, number forms, nesting past the depth limit): the texts below and 600
/// mutations of them (bytes cut, doubled, replaced).
#[test]
fn snapshots_read_to_the_events_end_apply_as_event_objects_do() {
    use agui_core::patch::tree::Tree;
    let snapshots = [
        r#"{"item_0001":{"id":1,"status":"pending","score":0.123456789,"tags":["a","b"]},"plan":{"steps":[],"done":0},"counter":0}"#,
        r#"{"a":[1,{"b":"c"}],"d":"\n","e":"\u00e9\/","f":[-0,-0.0,1e5,1E-5,2.5e+3,1e400,18446744073709551616]}"#,
        r#"{"a":{"b":{"c":{"d":[]}}}}"#,
        r#"{"a":1,"a":2,"b":{"a":[3]}}"#,
        r#"[1,"x",null,true,false,{}]"#,
        r#" { "a" : [ 1 , 2 ] } "#,
        r#"{}"#,
        r#"[]"#,
    ];
    let tails = ["", r#","timestamp":3"#, r#","rawEvent":{"b":2}"#, r#","x":[3]"#, "}", "]", " ", r#","snapshot":{"z":1}"#];
    let mut events = Vec::new();
    for snap in snapshots {
        for tail in tails {
            events.push(format!(r#"{{"type":"STATE_SNAPSHOT","snapshot":{snap}{tail}}}"#));
        }
        events.push(format!(r#"{{"type": "STATE_SNAPSHOT", "snapshot": {snap}}}"#));
        events.push(format!(r#"{{"type": "STATE_SNAPSHOT", "snapshot": {snap}, "timestamp": 3}}"#));
        events.push(format!(r#"{{"type":"STATE_SNAPSHOT","timestamp":3,"snapshot":{snap}}}"#));
    }
    let mut rng = agui_core::test_rng::Rng(0x5a9_5e07);
    let base = events.clone();
    for _ in 0..600 {
        let mut t = base[rng.below(base.len())].clone().into_bytes();
        // (past the lead: the mutations probe the snapshot and what follows it)
        let at = 30 + rng.below(t.len() - 30);
        match rng.below(3) {
            0 => t.truncate(at),
            1 => t.insert(at, t[at]),
            _ => {
                let bytes = b"{}[]\",:-+.eE019 \\tfnu\t\n\x01";
                t[at] = bytes[rng.below(bytes.len())];
            }
        }
        if let Ok(t) = String::from_utf8(t) {
            events.push(t);
        }
    }
    let before: &[u8] = br#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
    let after: &[u8] = br#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/z","value":1}]}"#;
    let base = ReplayOptions::default();
    let mut taken = 0;
    for event in &events {
        taken += usize::from(agui_core::stream::event::Plain::read(event.as_bytes(), None, 512).is_some());
        for options in [base, ReplayOptions { max_depth: 3, ..base }, ReplayOptions { verify: true, ..base }] {
            let texts = [before, event.as_bytes(), after];
            let mut log = Vec::new();
            for t in texts {
                agui_core::sse::write_event(&mut log, t);
            }
            let what = format!("{event} ({options:?})");
            let objects = general(&texts, json!({}), options);
            assert_eq!(outcome(&objects), outcome(&same(&log, Vec::new(), json!({}), options, &what)), "{what}");
            let objects = general(&texts, Tree::object(), options);
            let one = replay_log(&log[..], None, Vec::new(), Tree::object(), options);
            assert_eq!(outcome(&objects), outcome(&one), "{what} (tree)");
            let held = replay_log_bytes(&log, None, Vec::new(), Tree::object(), options);
            assert_eq!(outcome(&objects), outcome(&held), "{what} (tree, held in memory)");
        }
    }
    // (both ways taken: the lead's events and the others)
    assert!(taken > 100 && taken < events.len() - 100, "{taken} of {}", events.len());
}

/// The general path: each payload parsed into an object and pushed, into `state` (an event
/// that does not parse is counted as read).
fn general<S: agui_core::stream::State>(texts: &[&[u8]], state: S, options: ReplayOptions) -> Replay<S> {
    let mut r = Replayer::new(Vec::new(), state, options);
    let (mut error, mut unread) = (None, None);
    for (i, t) in texts.iter().enumerate() {
        let pushed = match agui_core::stream::parse_event_limited(t, options.max_depth) {
            Ok(e) => r.push(e),
            Err(mut e) => {
                (e.index, unread) = (i, Some(i + 1));
                Err(e)
            }
        };
        if let Err(e) = pushed {
            error = Some(e);
            break;
        }
    }
    let mut r = r.finish(error);
    r.events = unread.unwrap_or(r.events);
    r
}
