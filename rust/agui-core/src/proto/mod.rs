//! The AG-UI 1.0 protobuf codec, wire-identical to `@ag-ui/proto` 1.0.
//!
//! * [`pb`]: prost types generated from `proto/*.proto` (checked in: `pb.rs`, written by
//!   `tools/protogen`; a test fails when the `.proto` files changed since);
//! * [`wkt`]: order-preserving `google.protobuf.Value`/`Struct` over `serde_json`;
//! * [`encode`] / [`decode`]: the JSON ⇄ protobuf mapping rules of the reference;
//! * [`frame`]: 4-byte big-endian length framing with an incremental splitter;
//! * this module: byte-level entry points used by the Python binding and the CLI.

pub mod decode;
pub mod encode;
pub mod error;
mod events;
pub mod frame;
pub mod msgpack;
pub mod node;
pub mod wkt;

/// prost-generated types of package `ag_ui` (from `proto/*.proto` by `tools/protogen`).
#[allow(clippy::all, missing_docs)]
#[rustfmt::skip]
pub mod pb;

#[cfg(test)]
mod inputs;

pub use decode::{
    decode_message, decode_message_as, decode_message_into, decode_message_members, decode_message_reusing,
    event_to_json_text, Flat, Format, Members, Nested, Reuse,
};
pub use encode::json_to_event;
pub use error::{Error, Result};
pub use frame::{FrameSplitter, DEFAULT_MAX_FRAME_SIZE};

use prost::Message as _;
use serde_json::Value as J;

/// The largest integer a JS number holds exactly (2^53 − 1): the int64 fields' range on the
/// wire, as the reference's decoder reads them.
pub const MAX_SAFE_INT: i64 = 9_007_199_254_740_991;

/// The 31 event type names, indexed by `EventType` enum value (from the event table,
/// `events.rs`).
pub const EVENT_TYPES: [&str; 31] = events::NAMES;

/// The length of the longest name in [`EVENT_TYPES`].
pub const LONGEST_TYPE: usize = {
    let (mut i, mut n) = (0, 0);
    while i < EVENT_TYPES.len() {
        if EVENT_TYPES[i].len() > n {
            n = EVENT_TYPES[i].len();
        }
        i += 1;
    }
    n
};

/// Event type of an envelope arm (field number 1..=31).
pub fn arm_number_to_type(arm: u32) -> &'static str {
    EVENT_TYPES[arm_number_to_enum(arm) as usize]
}

/// `EventType` enum value of an envelope arm (field number 1..=31; arms 17–21 are
/// shuffled relative to the enum, the chunk and subagent events).
#[inline]
pub fn arm_number_to_enum(arm: u32) -> u32 {
    events::arm_to_enum(arm)
}

/// Summary of the compiled schema: `{"ag_ui.Msg": [[field, number, label, type], ...]}`.
/// Generated with [`pb`] by `tools/protogen`.
pub const SCHEMA_JSON: &str = include_str!("schema.json");

/// What one warning-producing step reports (dropped content parts, skipped frames).
pub type Warnings = Vec<String>;

/// Warning text for a frame skipped because its event kind is from a later protocol.
pub const FUTURE_EVENT_WARNING: &str =
    "[ag-ui][proto] Dropped an event this build does not know: the protocol has a variant this SDK predates.";

// ---------------------------------------------------------------------------------
// JSON text in
// ---------------------------------------------------------------------------------

/// Parse JSON text. Unpaired UTF-16 surrogate escapes (`"\ud800"`), which serde_json
/// rejects but JavaScript accepts, are replaced by U+FFFD: that is what the reference
/// writes on the wire for them anyway.
pub fn parse_json(text: &[u8]) -> Result<J> {
    match serde_json::from_slice(text) {
        Ok(v) => Ok(v),
        Err(e) => {
            if memchr::memmem::find(text, b"\\u").is_some() {
                if let Some(fixed) = crate::text::replace_lone_surrogates(text) {
                    return serde_json::from_slice(&fixed).map_err(|e| Error::InvalidJson(e.to_string()));
                }
            }
            Err(Error::InvalidJson(e.to_string()))
        }
    }
}

// ---------------------------------------------------------------------------------
// Encoding entry points
// ---------------------------------------------------------------------------------

/// Parse JSON text into the encoder's borrowed tree; `scratch` keeps the text alive
/// when unpaired surrogate escapes had to be replaced (see [`parse_json`]).
pub fn parse_node<'a>(text: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<node::Node<'a>> {
    match node::parse(text) {
        Ok(n) => Ok(n),
        Err(e) => {
            if memchr::memmem::find(text, b"\\u").is_some() {
                if let Some(fixed) = crate::text::replace_lone_surrogates(text) {
                    *scratch = fixed;
                    return node::parse(scratch).map_err(|e| Error::InvalidJson(e.to_string()));
                }
            }
            Err(Error::InvalidJson(e.to_string()))
        }
    }
}

/// Encode one JSON event as an `Event` message (unframed), appended to `out`.
pub fn encode_value(event: &node::Node<'_>, out: &mut Vec<u8>) -> Result<()> {
    let ev = json_to_event(event)?;
    out.reserve(ev.encoded_len());
    ev.encode_raw(out);
    Ok(())
}

/// Encode one JSON event as a length-prefixed frame, appended to `out`.
pub fn encode_value_framed(event: &node::Node<'_>, out: &mut Vec<u8>) -> Result<()> {
    let ev = json_to_event(event)?;
    let start = out.len();
    out.resize(start + event_wire_len(&ev, true)?, 0);
    write_event(&ev, true, &mut out[start..]);
    Ok(())
}

/// Size of `ev` on the wire: the message, plus the 4-byte length prefix when `framed`
/// (an error if the message is too large for that prefix).
pub fn event_wire_len(ev: &pb::Event, framed: bool) -> Result<usize> {
    let len = ev.encoded_len();
    if !framed {
        return Ok(len);
    }
    if len > u32::MAX as usize {
        return Err(Error::Encode(format!("the event needs {len} bytes, more than a 4-byte length prefix can announce")));
    }
    Ok(4 + len)
}

/// Write `ev` into `out`, which is exactly [`event_wire_len`] bytes long (so callers can
/// encode straight into a buffer they allocated, e.g. a Python bytes object).
pub fn write_event(ev: &pb::Event, framed: bool, mut out: &mut [u8]) {
    use prost::bytes::BufMut as _;
    if framed {
        out.put_u32((out.len() - 4) as u32);
    }
    ev.encode_raw(&mut out);
}

/// Encode JSON event text (`framed`: with the 4-byte prefix), appended to `out`.
pub fn encode_json(text: &[u8], framed: bool, out: &mut Vec<u8>) -> Result<()> {
    let mut scratch = Vec::new();
    let v = parse_node(text, &mut scratch)?;
    if framed {
        encode_value_framed(&v, out)
    } else {
        encode_value(&v, out)
    }
}

// ---------------------------------------------------------------------------------
// Decoding entry points
// ---------------------------------------------------------------------------------

/// Decode one unframed message to JSON text.
pub fn decode_message_to_json(msg: &[u8], warnings: &mut Warnings) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(msg.len() * 2 + 16);
    decode_message_into(msg, warnings, &mut out)?;
    Ok(out)
}

/// Incremental stream decoder: frames in, JSON events out.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    splitter: FrameSplitter,
}

impl StreamDecoder {
    pub fn new(max_frame_size: usize) -> Self {
        StreamDecoder { splitter: FrameSplitter::new(max_frame_size) }
    }

    /// A decoder for a part of a stream that starts at `offset` with frame `frame_index`.
    pub fn at(max_frame_size: usize, offset: u64, frame_index: usize) -> Self {
        StreamDecoder { splitter: FrameSplitter::at(max_frame_size, offset, frame_index) }
    }

    /// Feed bytes; each decoded event's JSON text is passed to `sink`. Frames from a
    /// later protocol version are skipped with a warning. On error, everything decoded
    /// before it has already been passed to `sink`.
    pub fn feed_with<F: FnMut(&[u8])>(&mut self, chunk: &[u8], warnings: &mut Warnings, sink: F) -> Result<()> {
        self.feed_as(chunk, Format::Json, warnings, sink)
    }

    /// [`StreamDecoder::feed_with`] with each event written in `fmt`.
    pub fn feed_as<F: FnMut(&[u8])>(
        &mut self,
        chunk: &[u8],
        fmt: Format,
        warnings: &mut Warnings,
        mut sink: F,
    ) -> Result<()> {
        self.feed_positioned(chunk, fmt, warnings, |event, _, _| sink(event))
    }

    /// [`StreamDecoder::feed_as`] with each event's frame index and the byte offset of
    /// its frame in the stream (what the log reader, `agui_core::log`, reports).
    pub fn feed_positioned<F: FnMut(&[u8], usize, u64)>(
        &mut self,
        chunk: &[u8],
        fmt: Format,
        warnings: &mut Warnings,
        mut sink: F,
    ) -> Result<()> {
        let mut text = Vec::new();
        self.feed_frames(chunk, warnings, |msg, warnings, frame_index, offset| {
            text.clear();
            decode_message_as(msg, warnings, &mut text, fmt)?;
            sink(&text, frame_index, offset);
            Ok(())
        })
    }

    /// [`StreamDecoder::feed_positioned`] in JSON, each event with where its top-level
    /// members were written ([`Members`]), what reads a few members of each event (the log
    /// reader's consumers) takes them from there instead of parsing the text again; and each
    /// flat event, and each nested one the wire path may take, offered to `sink` first as
    /// read from the wire ([`Decoded::Flat`], [`Decoded::Nested`]), before any text is
    /// written: a reader that makes its own of it (agui-arrow's rows) takes it (`true`);
    /// one not taken is then written and handed on as text ([`Decoded::Text`], as every
    /// other event; the return is then ignored).
    pub fn feed_decoded<F: FnMut(Decoded<'_>, usize, u64) -> bool>(
        &mut self,
        chunk: &[u8],
        warnings: &mut Warnings,
        mut sink: F,
    ) -> Result<()> {
        let (mut text, mut reuse, mut members) = (Vec::new(), Reuse::default(), Members::default());
        self.feed_frames(chunk, warnings, |msg, warnings, frame_index, offset| {
            let flat = Flat::read(msg);
            let nested = match &flat {
                Some(flat) if sink(Decoded::Flat(flat), frame_index, offset) => return Ok(()),
                Some(_) => None,
                None => Nested::read(msg),
            };
            if let Some(nested) = &nested {
                if sink(Decoded::Nested(nested), frame_index, offset) {
                    return Ok(());
                }
            }
            text.clear();
            decode::decode_members_read(msg, flat.as_ref(), nested.as_ref(), warnings, &mut text, &mut reuse, &mut members)?;
            sink(Decoded::Text(&text, &members), frame_index, offset);
            Ok(())
        })
    }

    /// Feed bytes, appending each decoded event to `arr` (written in place: no per-event
    /// buffer or copy).
    pub fn feed_array(&mut self, chunk: &[u8], warnings: &mut Warnings, arr: &mut EventArray) -> Result<()> {
        self.feed_frames(chunk, warnings, |msg, warnings, _, _| arr.push_decoded(msg, warnings))
    }

    /// The frame loop: `decode(message, warnings)` per complete frame. Frames from a later
    /// protocol version are skipped with a warning; other errors get the frame position.
    fn feed_frames<F>(&mut self, chunk: &[u8], warnings: &mut Warnings, mut decode: F) -> Result<()>
    where
        F: FnMut(&[u8], &mut Warnings, usize, u64) -> Result<()>,
    {
        self.splitter.feed(chunk, |msg, frame_index, offset| match decode(msg, warnings, frame_index, offset) {
            Ok(()) => Ok(()),
            Err(Error::UnknownEventType) => {
                warnings.push(format!("{FUTURE_EVENT_WARNING} (frame {frame_index} at byte offset {offset})"));
                Ok(())
            }
            Err(e) => Err(Error::Frame { frame_index, offset, source: Box::new(e) }),
        })
    }

    /// Feed bytes, appending each decoded event to `arr` and going on past frames whose
    /// message does not decode (their errors are collected, with the frame's position):
    /// only a framing error (a length over the limit) stops the stream, and is returned.
    /// Frames from a later protocol version are counted, not warned about per frame.
    pub fn feed_collect(
        &mut self,
        chunk: &[u8],
        warnings: &mut Warnings,
        arr: &mut EventArray,
        got: &mut Collected,
    ) -> Result<()> {
        self.splitter.feed(chunk, |msg, frame_index, offset| {
            match arr.push_decoded(msg, warnings) {
                Ok(()) => got.positions.push((frame_index, offset)),
                Err(Error::UnknownEventType) => got.skipped += 1,
                Err(e) => got.errors.push(Error::Frame { frame_index, offset, source: Box::new(e) }),
            }
            Ok(())
        })
    }

    /// Feed bytes, collecting events as JSON texts.
    pub fn feed_json(&mut self, chunk: &[u8], warnings: &mut Warnings, out: &mut Vec<Vec<u8>>) -> Result<()> {
        self.feed_with(chunk, warnings, |text| out.push(text.to_vec()))
    }

    /// End of stream: an error if an unfinished frame remains.
    pub fn finish(&mut self) -> Result<()> {
        self.splitter.finish()
    }

    pub fn pending(&self) -> usize {
        self.splitter.pending()
    }

    pub fn max_frame_size(&self) -> usize {
        self.splitter.max_frame_size()
    }

    pub fn frame_index(&self) -> usize {
        self.splitter.frame_index()
    }

    /// See [`FrameSplitter::first_boundary`].
    pub fn first_boundary(&self, chunk: &[u8]) -> usize {
        self.splitter.first_boundary(chunk)
    }
}

/// One event of [`StreamDecoder::feed_decoded`].
pub enum Decoded<'a> {
    /// A flat event as read from the wire (no text written yet).
    Flat(&'a Flat<'a>),
    /// A nested event as read from the wire (no text written yet: it may still fail,
    /// [`Nested::write_json`]).
    Nested(&'a Nested<'a>),
    /// An event's JSON text and where its top-level members are in it.
    Text(&'a [u8], &'a Members),
}

/// What [`StreamDecoder::feed_collect`] found besides the events.
#[derive(Debug, Default)]
pub struct Collected {
    /// `(frame_index, offset)` of each event appended to the array, in order.
    pub positions: Vec<(usize, u64)>,
    /// Frames whose message failed to decode (each an [`Error::Frame`]).
    pub errors: Vec<Error>,
    /// Frames skipped because only a later protocol version knows their event type.
    pub skipped: usize,
}

/// Decoded events collected into one array (JSON text `[e1,e2,...]` or a MessagePack
/// array), so the typed layer builds them all with one msgspec call. Each event's span
/// is kept so the events before an error can be handed back one by one.
#[derive(Debug)]
pub struct EventArray {
    fmt: Format,
    out: Vec<u8>,
    spans: Vec<(usize, usize)>,
    header_at: usize,
    reuse: Reuse,
}

impl EventArray {
    pub fn new(fmt: Format, capacity: usize) -> Self {
        Self::with_buffer(fmt, Vec::new(), capacity)
    }

    /// Like `new`, writing into `out` (cleared): a buffer handed back by the consumer of
    /// an earlier array, so that a long stream does not fault in fresh pages per part.
    pub fn with_buffer(fmt: Format, mut out: Vec<u8>, capacity: usize) -> Self {
        out.clear();
        out.reserve(capacity);
        let header_at = match fmt {
            Format::Json => {
                out.push(b'[');
                0
            }
            // The count is only known at the end: a 32-bit header patched in `finish`.
            Format::MsgPack => msgpack::placeholder(&mut out, false),
        };
        EventArray { fmt, out, spans: Vec::new(), header_at, reuse: Reuse::default() }
    }

    /// Decode one unframed message and append its event; on error nothing is appended.
    pub fn push_decoded(&mut self, msg: &[u8], warnings: &mut Warnings) -> Result<()> {
        let mark = self.out.len();
        if self.fmt == Format::Json && !self.spans.is_empty() {
            self.out.push(b',');
        }
        let start = self.out.len();
        match decode_message_reusing(msg, warnings, &mut self.out, self.fmt, &mut self.reuse) {
            Ok(()) => {
                self.spans.push((start, self.out.len()));
                Ok(())
            }
            Err(e) => {
                self.out.truncate(mark);
                Err(e)
            }
        }
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The whole array.
    pub fn finish(mut self) -> Vec<u8> {
        match self.fmt {
            Format::Json => self.out.push(b']'),
            Format::MsgPack => msgpack::patch_count(&mut self.out, self.header_at, self.spans.len()),
        }
        self.out
    }

    /// The whole array and each event's span in it.
    pub fn finish_with_spans(mut self) -> (Vec<u8>, Vec<(usize, usize)>) {
        let spans = std::mem::take(&mut self.spans);
        match self.fmt {
            Format::Json => self.out.push(b']'),
            Format::MsgPack => msgpack::patch_count(&mut self.out, self.header_at, spans.len()),
        }
        (self.out, spans)
    }

    /// Each event on its own (what an error hands back).
    pub fn items(&self) -> Vec<Vec<u8>> {
        self.spans.iter().map(|&(s, t)| self.out[s..t].to_vec()).collect()
    }
}

/// Decode a whole framed stream. Returns the events decoded before any error together
/// with that error, so nothing is lost.
pub fn decode_stream_json(data: &[u8], max_frame_size: usize) -> (Vec<Vec<u8>>, Warnings, Option<Error>) {
    let mut dec = StreamDecoder::new(max_frame_size);
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let err = dec.feed_json(data, &mut warnings, &mut out).and_then(|_| dec.finish()).err();
    (out, warnings, err)
}
