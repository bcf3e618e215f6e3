//! An HTTP client's side of a run, around the pipeline: the run input it sends
//! ([`prepare_run_input`]: the era's shims, legacy content upgraded, the protocol version
//! declared, the input held to the schema), and the response read chunk by chunk
//! ([`RunReader`]: SSE or length-prefixed protobuf framing, each frame's event through a
//! [`Replayer`] or handed on as JSON, the first error ending the stream, the run's
//! completion checked at its end).

use super::apply::State;
use super::legacy::{self, CompatibilityBoundary, LegacyChain, ProtocolVersion, Shims};
use super::replay::Replayer;
use super::{Stage, StreamError, Warning, WarningKind};
use crate::proto::{self, StreamDecoder};
use crate::sse::{SseError, SseParser};
use serde_json::Value;

/// The peer's era when the caller names none: a 1.0 peer.
pub const CURRENT_PEER: &str = "1.0.0";

/// A run input made ready to send.
#[derive(Debug)]
pub struct Prepared {
    /// What is sent.
    pub body: Value,
    /// The messages the run starts from on this side (the input's, legacy content
    /// upgraded; not shimmed for the peer).
    pub messages: Vec<Value>,
    /// Warnings about the input (kind `Request`).
    pub warnings: Vec<Warning>,
}

/// Prepare a run input for a peer of `max_protocol_version` (its era; `None`: a 1.0
/// peer), as the reference client does between `runAgent` and the request: activity
/// messages (this side's own) left out, `subagentRunId: null` removed, `protocolVersion`
/// declared when the client speaks one (`protocol_version`) and the peer is 1.0 or later,
/// the era's shims on the messages (0.0.57: attribution removed; 0.0.39: content
/// flattened to text), legacy `binary` parts upgraded, optional `null`s left out, then
/// the input held to the schema (unknown material stripped with a warning, a malformed
/// field an error).
pub fn prepare_run_input(mut input: Value, max_protocol_version: Option<&str>, protocol_version: Option<ProtocolVersion>) -> Result<Prepared, StreamError> {
    let era = max_protocol_version.unwrap_or(CURRENT_PEER);
    if !legacy::valid_version(era) {
        return Err(StreamError::new(Stage::Legacy, format!("max_protocol_version {era:?} is not a version this client can compare")));
    }
    let Value::Object(fields) = &mut input else {
        return Err(StreamError::new(Stage::Schema, "the run input must be a JSON object"));
    };
    let mut scratch = Vec::new();
    let mut messages: Vec<Value> = match fields.get("messages") {
        Some(Value::Array(ms)) => ms.clone(),
        _ => Vec::new(),
    };
    for m in &mut messages {
        legacy::upgrade_inbound_message(m, &mut scratch);
    }
    let mut warnings = Vec::new();
    let warn = |warnings: &mut Vec<Warning>, message: String| warnings.push(Warning::new(WarningKind::Request, 0, message));
    if let Some(Value::Array(sent)) = fields.get_mut("messages") {
        sent.retain(|m| m.get("role").and_then(Value::as_str) != Some("activity"));
        for m in sent.iter_mut() {
            if let Value::Object(o) = m {
                if matches!(o.get("subagentRunId"), Some(Value::Null)) {
                    o.shift_remove("subagentRunId");
                }
            }
        }
        let mut chain = LegacyChain::new(Shims::for_peer(era), legacy::uuid_generator());
        chain.prepare_input_messages(sent);
        chain.drain_warnings(|_, m| warn(&mut warnings, m));
    }
    if let Some(ours) = protocol_version {
        if legacy::version_le(CURRENT_PEER, era) {
            fields.insert("protocolVersion".into(), Value::String(ours.to_string()));
        }
    }
    let mut stripped = Vec::new();
    let checked = super::schema::check_run_input(&mut input, &mut stripped);
    for path in stripped {
        warnings.push(Warning {
            path: Some(path.clone()),
            ..Warning::new(WarningKind::Request, 0, format!("[ag-ui][enforce] Removed unrecognised material at '{path}' from the outgoing input."))
        });
    }
    checked?;
    Ok(Prepared { body: input, messages, warnings })
}

/// How the response is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Sse,
    Protobuf,
}

/// Why reading a response stopped.
#[derive(Debug, Clone)]
pub enum RunError {
    /// The pipeline refused an event (unreadable, malformed, a rule broken, ...): its
    /// `index` is the event's frame; `offset` where that frame starts.
    Stream { error: Box<StreamError>, offset: u64 },
    /// The SSE framing (an event larger than the buffer limit).
    Sse(SseError),
    /// The protobuf framing or a frame's message.
    Proto(proto::Error),
    /// The stream ended while a run was open (or before one started).
    Incomplete(String),
}

enum Framer {
    Sse(SseParser),
    Proto(StreamDecoder),
}

/// Reads one response, chunk by chunk. With a [`Replayer`], every frame's event goes
/// through it (the pipeline refuses an event without a `type`, as a client's transport
/// does); without one, the frames' JSON texts are kept for the caller
/// ([`take_frames`](Self::take_frames)), each checked to be one JSON object and a 0.x
/// event converted by the compatibility boundary. The first
/// error ends the stream: the frames after it, also those of the same chunk, are not
/// read. The end ([`finish`](Self::finish)) is an error when the last run is not over.
pub struct RunReader<S = Value> {
    replayer: Option<Replayer<S>>,
    framer: Framer,
    /// The frames' JSON texts (no replayer).
    frames: Vec<Vec<u8>>,
    boundary: CompatibilityBoundary,
    /// The run events seen (no replayer).
    started: bool,
    ended: bool,
    max_depth: usize,
    warnings: Vec<Warning>,
    error: Option<RunError>,
}

impl<S: State> RunReader<S> {
    /// `max_frame`: the SSE buffer or the protobuf frame limit; `max_depth`: the nesting
    /// limit of an event (without a replayer; a replayer has its own).
    pub fn new(wire: Wire, max_frame: usize, max_depth: usize, replayer: Option<Replayer<S>>) -> Self {
        let mut replayer = replayer;
        if let Some(r) = &mut replayer {
            r.require_type(true);
        }
        let framer = match wire {
            Wire::Sse => Framer::Sse(SseParser::new(max_frame)),
            Wire::Protobuf => Framer::Proto(StreamDecoder::new(max_frame)),
        };
        RunReader {
            replayer,
            framer,
            frames: Vec::new(),
            boundary: CompatibilityBoundary::default(),
            started: false,
            ended: false,
            max_depth,
            warnings: Vec::new(),
            error: None,
        }
    }

    pub fn replayer(&mut self) -> Option<&mut Replayer<S>> {
        self.replayer.as_mut()
    }

    pub fn into_replayer(self) -> Option<Replayer<S>> {
        self.replayer
    }

    /// The frames read since the last call (no replayer): each event's JSON text (as
    /// sent, or in its 1.0 shape when the boundary converted it).
    pub fn take_frames(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.frames)
    }

    /// Warnings of the transport (and of the pipeline, when there is one), drained.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        let mut w = std::mem::take(&mut self.warnings);
        if let Some(r) = &mut self.replayer {
            w.extend(r.take_warnings());
        }
        w
    }

    /// Read a chunk of the response. After an error every call returns it again.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), RunError> {
        self.read(Some(chunk))
    }

    /// The end of the response: a frame left unterminated is read (a cut one is an
    /// error), then the run must be over.
    pub fn finish(&mut self) -> Result<(), RunError> {
        self.read(None)?;
        let (started, ended) = match &self.replayer {
            Some(r) => (r.outcome().started, r.outcome().ended),
            None => (self.started, self.ended),
        };
        if !ended {
            let e = RunError::Incomplete(if started {
                "the stream ended before the run was over: no RUN_FINISHED or RUN_ERROR after the last RUN_STARTED".into()
            } else {
                "the stream ended without RUN_FINISHED or RUN_ERROR".into()
            });
            self.error = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    fn read(&mut self, chunk: Option<&[u8]>) -> Result<(), RunError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let RunReader { replayer, framer, frames, boundary, started, ended, max_depth, warnings, error } = self;
        let mut converted = Vec::new();
        let mut on_frame = |data: &[u8], index: u64, offset: u64| -> Result<(), RunError> {
            let stream = |mut error: StreamError| {
                error.index = index as usize;
                RunError::Stream { error: Box::new(error), offset }
            };
            match replayer {
                Some(r) => r.push_json(data).map(|_| ()).map_err(stream),
                None => {
                    let v = boundary.convert(super::parse_event_limited(data, *max_depth).map_err(stream)?);
                    match super::EventType::of(&v) {
                        super::EventType::RunStarted => (*started, *ended) = (true, false),
                        super::EventType::RunFinished | super::EventType::RunError => *ended = true,
                        _ => {}
                    }
                    let notes = boundary.take_warnings();
                    if notes.is_empty() {
                        frames.push(data.to_vec());
                    } else {
                        frames.push(super::json_text(&v));
                        converted.extend(notes.into_iter().map(|n| Warning::new(WarningKind::Compat, index as usize, n)));
                    }
                    Ok(())
                }
            }
        };
        let r = match framer {
            Framer::Sse(parser) => {
                let mut failed: Option<RunError> = None;
                let mut sink = |f: crate::sse::Frame<'_>| {
                    if failed.is_none() {
                        failed = on_frame(f.data, f.index, f.offset).err();
                    }
                };
                let framed = match chunk {
                    Some(c) => parser.feed(c, &mut sink),
                    None => parser.finish(&mut sink),
                };
                match (failed, framed) {
                    (Some(e), _) => Err(e),
                    (None, Err(e)) => Err(RunError::Sse(e)),
                    (None, Ok(())) => Ok(()),
                }
            }
            Framer::Proto(decoder) => {
                let mut failed: Option<RunError> = None;
                let mut notes = Vec::new();
                let framed = match chunk {
                    Some(c) => decoder.feed_positioned(c, proto::Format::Json, &mut notes, |data, index, offset| {
                        if failed.is_none() {
                            failed = on_frame(data, index as u64, offset).err();
                        }
                    }),
                    None => decoder.finish(),
                };
                for n in notes {
                    warnings.push(Warning::new(WarningKind::Transport, 0, n));
                }
                match (failed, framed) {
                    (Some(e), _) => Err(e),
                    (None, Err(e)) => Err(RunError::Proto(e)),
                    (None, Ok(())) => Ok(()),
                }
            }
        };
        warnings.append(&mut converted);
        if let Err(e) = &r {
            *error = Some(e.clone());
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::ReplayOptions;
    use serde_json::json;

    fn reader(verify: bool) -> RunReader {
        let r = Replayer::new(Vec::new(), json!({}), ReplayOptions { verify, ..ReplayOptions::default() });
        RunReader::new(Wire::Sse, 1 << 20, 512, Some(r))
    }

    const START: &str = "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
    const END: &str = "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";

    #[test]
    fn a_complete_run_in_any_chunking() {
        let body = format!(
            "{START}data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\",\"role\":\"assistant\"}}\n\n\
             data: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"hi\"}}\n\n\
             data: {{\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\"}}\n\n{END}"
        );
        for cut in 0..=body.len() {
            let mut r = reader(true);
            r.feed(&body.as_bytes()[..cut]).unwrap();
            r.feed(&body.as_bytes()[cut..]).unwrap();
            r.finish().unwrap();
            let replay = r.into_replayer().unwrap().finish(None);
            assert_eq!(replay.messages, vec![json!({"id": "m", "role": "assistant", "content": "hi"})]);
        }
        // Open at the end: the verifier refuses RUN_FINISHED while the message is open.
        let open = format!("{START}data: {{\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}}\n\n{END}");
        let Err(RunError::Stream { error, .. }) = reader(true).feed(open.as_bytes()) else { panic!() };
        assert_eq!((error.rule, error.index), (Some("R29"), 2));
    }

    #[test]
    fn nothing_after_the_first_error_is_applied() {
        let body = format!("{START}data: {{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":1}}\n\ndata: {{\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":42}}\n\ndata: {{\"type\":\"STATE_SNAPSHOT\",\"snapshot\":2}}\n\n{END}");
        let mut r = reader(false);
        let Err(RunError::Stream { error, .. }) = r.feed(body.as_bytes()) else { panic!() };
        assert_eq!((error.stage, error.index, error.field.as_deref()), (Stage::Schema, 2, Some("$.delta")));
        let replay = r.into_replayer().unwrap().finish(None);
        assert_eq!(replay.state, json!(1));
    }

    #[test]
    fn a_restarted_run_cut_short_is_incomplete() {
        let mut r = reader(false);
        r.feed(format!("{START}{END}{START}").as_bytes()).unwrap();
        assert!(matches!(r.finish(), Err(RunError::Incomplete(_))));
        let mut r = reader(false);
        r.feed(format!("{START}{END}").as_bytes()).unwrap();
        r.finish().unwrap();
    }

    #[test]
    fn a_frame_without_a_type_is_refused() {
        let mut r = reader(false);
        let Err(RunError::Stream { error, .. }) = r.feed(format!("{START}data: {{\"delta\":\"x\"}}\n\n").as_bytes()) else { panic!() };
        assert!(error.message.contains("carries no event type"));
    }

    #[test]
    fn transport_mode_keeps_the_frames() {
        let mut r: RunReader = RunReader::new(Wire::Sse, 1 << 20, 512, None);
        r.feed(format!("{START}: keep-alive\n\ndata: {{\"type\":\"THINKING_START\"}}\n\n{END}").as_bytes()).unwrap();
        let frames = r.take_frames();
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[0], START.as_bytes()[6..START.len() - 2]);
        let v: Value = serde_json::from_slice(&frames[1]).unwrap();
        assert_eq!(v["type"], "REASONING_START");
        assert!(!r.take_warnings().is_empty());
        r.finish().unwrap();
        let mut r: RunReader = RunReader::new(Wire::Sse, 1 << 20, 512, None);
        assert!(matches!(r.feed(b"data: {\"a\":1},{\"b\":2}\n\n"), Err(RunError::Stream { .. })));
    }

    #[test]
    fn the_input_a_client_sends() {
        let input = json!({"threadId": "t", "runId": "r", "messages": [
            {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "binary", "mimeType": "image/png", "url": "u"}]},
            {"id": "a", "role": "activity", "activityType": "x", "content": {}},
            {"id": "s", "role": "assistant", "content": "x", "subagentRunId": "s1", "name": null},
        ], "futureProp": 1});
        let p = prepare_run_input(input.clone(), None, ProtocolVersion::parse("1.1")).unwrap();
        assert_eq!(p.body["protocolVersion"], "1.1");
        assert_eq!(p.body["messages"].as_array().unwrap().len(), 2);
        assert_eq!(p.body["messages"][0]["content"][1]["type"], "image");
        assert_eq!(p.body["messages"][1], json!({"id": "s", "role": "assistant", "content": "x", "subagentRunId": "s1"}));
        assert!(p.body.get("futureProp").is_none());
        assert_eq!(p.messages.len(), 3);
        assert!(p.warnings.iter().any(|w| w.path.as_deref() == Some("/futureProp")));
        let old = prepare_run_input(input, Some("0.0.39"), ProtocolVersion::parse("1.1")).unwrap();
        assert!(old.body.get("protocolVersion").is_none());
        assert_eq!(old.body["messages"][0]["content"], "hi");
        assert!(old.body["messages"][1].get("subagentRunId").is_none());
        assert!(prepare_run_input(json!({"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": 5}]}), None, None).is_err());
    }
}
