//! The stream decoders' work that needs no Python: what the binding's `SseDecoder`,
//! `ProtoDecoder`, `decode_sse` and `decode_protobuf` do before and around the msgspec
//! calls. The binding keeps only the conversion glue (the fallback chain's calls, the
//! exceptions, the GC pause).
//!
//! - [`Mode`]: the one `raw` vocabulary (typed, dict, bytes);
//! - [`Legacy`]: the per-stream 0.x converter and which items it sees;
//! - [`SseStream`]: framing a chunk into one [`Batch`], or a large chunk into parts
//!   ([`SseParts`]) for the producer thread;
//! - [`ProtoStream`]: decoding a chunk into one [`ProtoPart`] (events as MessagePack or
//!   JSON, their depth checked), or a large chunk into parts cut at frame boundaries
//!   ([`ProtoParts`]); the once-per-stream warnings;
//! - [`PartSizes`]: the growing part sizes both producers use;
//! - [`located`]: the one spelling of an error at a frame.

use std::collections::HashSet;
use std::sync::mpsc::{channel, Receiver, Sender};

use crate::proto::{self, Collected, Error, EventArray, Format, FrameSplitter, StreamDecoder};
use crate::sse::{Batch, SseParser};
use crate::stream::legacy::CompatibilityBoundary;

/// Below this many bytes a chunk is framed or decoded with the GIL held: releasing it
/// costs more than it saves.
pub const DETACH_MIN: usize = 64 * 1024;

/// What the decoders hand out (`raw=None`, `raw="dict"`, `raw="bytes"`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Typed events (the Structs).
    Typed = 0,
    /// Plain dicts.
    Dict = 1,
    /// Each event's JSON text, as it is.
    Bytes = 2,
}

impl Mode {
    /// The canonical `raw` spellings (`None`, `"dict"`, `"bytes"`); `None` for anything
    /// else (an old spelling, which warns, or a bad value, which raises: the caller's).
    pub fn from_raw(raw: Option<&str>) -> Option<Mode> {
        match raw {
            None => Some(Mode::Typed),
            Some("dict") => Some(Mode::Dict),
            Some("bytes") => Some(Mode::Bytes),
            Some(_) => None,
        }
    }

    /// Position in the `(typed, dict, bytes)` order the binding holds its backends in.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The mode at `index` (see [`Mode::index`]).
    pub fn from_index(index: usize) -> Option<Mode> {
        [Mode::Typed, Mode::Dict, Mode::Bytes].get(index).copied()
    }
}

/// An error's message at a frame: `"<label> <frame_index> at byte <offset>: <message>"`.
pub fn located(label: &str, frame_index: u64, offset: u64, message: &str) -> String {
    format!("{label} {frame_index} at byte {offset}: {message}")
}

/// The message of an item nested deeper than the limit.
pub fn too_deep(max_depth: usize) -> String {
    format!("nested deeper than max_depth={max_depth}")
}

/// The sizes of the parts a large chunk is cut into: the first `first` bytes (a small
/// first part starts the overlap early), each next 1.5x more, up to `max` (few parts mean
/// few decode calls).
#[derive(Clone, Copy, Debug)]
pub struct PartSizes {
    next: usize,
    max: usize,
}

impl PartSizes {
    pub const fn new(first: usize, max: usize) -> Self {
        PartSizes { next: first, max }
    }

    /// The size of the next part.
    pub fn take(&mut self) -> usize {
        let n = self.next;
        self.next = n.saturating_add(n / 2).min(self.max);
        n
    }
}

/// The per-stream legacy (0.x) converter (it holds the current reasoning ids) and which
/// items it sees. The converter is made when an item first needs it (a 1.0 stream never
/// makes one: its id generator reads the clock).
pub enum Legacy {
    Off,
    /// Dict mode: the candidates, before decoding (every legacy shape decodes as a dict).
    Candidates(Option<Box<CompatibilityBoundary>>),
    /// Typed mode: the items the fast decoder refuses (a legacy shape is no 1.0 event;
    /// legacy nulls alone decode as absent fields).
    Refused(Option<Box<CompatibilityBoundary>>),
}

/// An items array of one's own and its spans.
pub type OwnedItems = (Vec<u8>, Vec<(usize, usize)>);

impl Legacy {
    /// `on`: convert at all (bytes mode hands out the items' text as it is: nothing to
    /// convert).
    pub fn new(on: bool, mode: Mode) -> Self {
        match (on, mode) {
            (true, Mode::Typed) => Legacy::Refused(None),
            (true, Mode::Dict) => Legacy::Candidates(None),
            _ => Legacy::Off,
        }
    }

    pub fn is_on(&self) -> bool {
        !matches!(self, Legacy::Off)
    }

    /// Whether the framing should flag the items that may be legacy.
    pub fn wants_candidates(&self) -> bool {
        matches!(self, Legacy::Candidates(_))
    }

    /// Whether the items the fast decoder refuses are converted.
    pub fn converts_refused(&self) -> bool {
        matches!(self, Legacy::Refused(_))
    }

    /// `item` (an event's JSON text) in its 1.0 shape, or `None` when the converter is off
    /// or leaves it as it is. Text the core cannot parse (invalid JSON) is left for the
    /// decoders to judge; lone surrogate escapes (half an emoji in a delta) are read and
    /// written back as the stream stages keep them (`stream::parse_json_limited`,
    /// `stream::json_text`), so such an event is converted too. The converter warns about
    /// every change it makes (the reference's compat messages, not repeated here), so no
    /// warning means nothing changed.
    pub fn convert(&mut self, item: &[u8], max_depth: usize) -> Option<Vec<u8>> {
        let (Legacy::Candidates(boundary) | Legacy::Refused(boundary)) = self else { return None };
        let v = crate::stream::parse_json_limited(item, max_depth).ok().filter(serde_json::Value::is_object)?;
        let boundary = boundary.get_or_insert_with(Box::default);
        let v = boundary.convert(v);
        if boundary.take_warnings().is_empty() {
            return None;
        }
        Some(crate::stream::json_text(&v))
    }

    /// The items (`spans` in `array`) with the `candidates` converted (dict mode), the
    /// array rebuilt around them with the framing's own separators; `None` when none
    /// changes.
    pub fn convert_candidates(&mut self, array: &[u8], spans: &[(usize, usize)], candidates: &[usize], max_depth: usize) -> Option<OwnedItems> {
        let mut changed: Vec<(usize, Vec<u8>)> = Vec::new();
        for &c in candidates {
            let (s, e) = spans[c];
            changed.extend(self.convert(&array[s..e], max_depth).map(|t| (c, t)));
        }
        if changed.is_empty() {
            return None;
        }
        let grown: usize = changed.iter().map(|(_, t)| t.len()).sum();
        let mut out = Vec::with_capacity(array.len() + grown);
        let mut out_spans = Vec::with_capacity(spans.len());
        let (mut changed, mut copied) = (changed.into_iter().peekable(), 0);
        for (k, &(s, e)) in spans.iter().enumerate() {
            out.extend_from_slice(&array[copied..s]); // what precedes the item
            let start = out.len();
            match changed.next_if(|(c, _)| *c == k) {
                Some((_, text)) => out.extend_from_slice(&text),
                None => out.extend_from_slice(&array[s..e]),
            }
            out_spans.push((start, out.len()));
            copied = e;
        }
        out.extend_from_slice(&array[copied..]);
        Some((out, out_spans))
    }
}

/// Chunks this large (a `decode_sse` input, an `iter_sse` read) are framed on a producer
/// thread in parts of [`SSE_PART`] growing to [`SSE_MAX_PART`] bytes.
pub const SSE_PIPELINE_MIN: usize = 1 << 20;
pub const SSE_PART: usize = 128 << 10;
pub const SSE_MAX_PART: usize = 512 << 10;

/// One SSE stream's framing state: the parser, the legacy converter of its items and
/// the depth limit; and the batch of the last call, given back ([`SseStream::recycle`]) to
/// be filled again (a live stream's call per chunk allocates nothing for its frames).
pub struct SseStream {
    pub parser: SseParser,
    pub legacy: Legacy,
    pub max_depth: usize,
    pub spare: Option<Box<Batch>>,
}

/// A batch given back keeps its buffers up to this size (a large chunk's do not stay).
const SPARE_MAX: usize = 64 << 10;

/// Frame `chunk` (and, with `finish`, the end of the stream) into `batch`, then close it.
fn frame_into(parser: &mut SseParser, batch: &mut Batch, chunk: Option<&[u8]>, finish: bool) {
    let mut r = match chunk {
        Some(c) => parser.feed(c, |f| batch.push(&f)),
        None => Ok(()),
    };
    if r.is_ok() && finish {
        r = parser.finish(|f| batch.push(&f));
    }
    if let Err(e) = r {
        batch.error = Some(e);
    }
    batch.close();
}

fn new_batch(parser: &SseParser, candidates: bool, max_depth: usize) -> Batch {
    Batch::new(parser.frame_count(), true, candidates).with_max_depth(max_depth)
}

impl SseStream {
    /// `legacy`: convert 0.x frames (see [`Legacy`]).
    pub fn new(max_frame_size: usize, max_depth: usize, legacy: bool, mode: Mode) -> Self {
        SseStream { parser: SseParser::new(max_frame_size), legacy: Legacy::new(legacy, mode), max_depth, spare: None }
    }

    /// The same stream read as JSON Lines ([`SseParser::lines`]).
    pub fn lines(mut self) -> Self {
        self.parser = SseParser::new(self.parser.max_buffer()).lines();
        self
    }

    /// Whether `chunk` is framed in parts on a producer thread ([`SseStream::parts`]).
    pub fn pipelines(chunk: Option<&[u8]>) -> bool {
        chunk.is_some_and(|c| c.len() >= SSE_PIPELINE_MIN)
    }

    /// Frame one chunk (`None`: nothing more) and, with `finish`, the end of the stream
    /// into one closed batch.
    pub fn frame(&mut self, chunk: Option<&[u8]>, finish: bool) -> Box<Batch> {
        let candidates = self.legacy.wants_candidates();
        let mut batch = match self.spare.take() {
            Some(mut b) => {
                b.renew(self.parser.frame_count(), true, candidates, self.max_depth);
                b
            }
            None => Box::new(new_batch(&self.parser, candidates, self.max_depth)),
        };
        frame_into(&mut self.parser, &mut batch, chunk, finish);
        batch
    }

    /// Give a decoded batch back, for the next call to fill (kept when its buffers are
    /// small).
    pub fn recycle(&mut self, batch: Box<Batch>) {
        if batch.buf.capacity() <= SPARE_MAX && batch.spans.capacity() <= SPARE_MAX / 16 {
            self.spare = Some(batch);
        }
    }

    /// A large chunk's parts (framed by this stream's own parser, so frames may span
    /// parts and chunks), and the legacy converter their items go through meanwhile.
    pub fn parts<'a>(&'a mut self, data: &'a [u8], finish: bool) -> (SseParts<'a>, &'a mut Legacy) {
        let candidates = self.legacy.wants_candidates();
        let parts = SseParts {
            parser: &mut self.parser,
            data,
            offset: 0,
            sizes: PartSizes::new(SSE_PART, SSE_MAX_PART),
            finish,
            candidates,
            max_depth: self.max_depth,
        };
        (parts, &mut self.legacy)
    }
}

/// The producer of a large SSE chunk's batches (see [`SseStream::parts`]).
pub struct SseParts<'a> {
    parser: &'a mut SseParser,
    data: &'a [u8],
    offset: usize,
    sizes: PartSizes,
    finish: bool,
    candidates: bool,
    max_depth: usize,
}

impl SseParts<'_> {
    /// The next part's batch, and whether it is the last (the end of the data, or a
    /// framing error: the stream cannot go on).
    pub fn next_part(&mut self) -> (Batch, bool) {
        let data = self.data;
        let end = self.offset.saturating_add(self.sizes.take()).min(data.len());
        let mut batch = new_batch(self.parser, self.candidates, self.max_depth);
        frame_into(self.parser, &mut batch, Some(&data[self.offset..end]), self.finish && end == data.len());
        self.offset = end;
        let last = end == data.len() || batch.error.is_some();
        (batch, last)
    }
}

/// Chunks larger than this are decoded on a producer thread in parts cut at frame
/// boundaries (the first about [`PROTO_PART`] bytes, growing to [`PROTO_MAX_PART`]), so
/// the decoding of part i+1 overlaps msgspec on part i.
pub const PROTO_PIPELINE_MIN: usize = 4 * PROTO_PART;
pub const PROTO_PART: usize = 1 << 16;
pub const PROTO_MAX_PART: usize = 1 << 19;

/// The events one call (or one part of it) decoded, as one array of MessagePack or JSON.
pub struct ProtoPart {
    pub array: Vec<u8>,
    pub spans: Vec<(usize, usize)>,
    pub got: Collected,
    pub warnings: Vec<String>,
    /// Events nested deeper than `max_depth` (sorted): found here, off the GIL (and on
    /// the producer thread of a large chunk), before msgspec sees them.
    pub too_deep: Vec<usize>,
    /// A framing error: the stream cannot go on.
    pub fatal: Option<Error>,
}

/// Decode `chunk` (`None`: nothing more; `finish`: then the end of the stream) into one
/// array of `fmt`, written into `buf`.
fn decode_part(dec: &mut StreamDecoder, fmt: Format, max_depth: usize, chunk: Option<&[u8]>, finish: bool, buf: Vec<u8>) -> ProtoPart {
    let mut arr = EventArray::with_buffer(fmt, buf, 0);
    let mut got = Collected::default();
    let mut warnings = Vec::new();
    let mut r = match chunk {
        Some(c) => dec.feed_collect(c, &mut warnings, &mut arr, &mut got),
        None => Ok(()),
    };
    if r.is_ok() && finish {
        r = dec.finish();
    }
    let (array, spans) = arr.finish_with_spans();
    let too_deep = (0..spans.len())
        .filter(|&k| {
            let item = &array[spans[k].0..spans[k].1];
            if item.len() <= max_depth {
                return false; // every level takes a byte: most events need no scan
            }
            let depth = match fmt {
                Format::MsgPack => proto::decode::msgpack_depth(item),
                Format::Json => crate::sse::scan_value(item).depth as usize,
            };
            depth > max_depth
        })
        .collect();
    ProtoPart { array, spans, got, warnings, too_deep, fatal: r.err() }
}

/// One protobuf stream's decoding state. A frame whose message does not decode is an
/// error of its call and the stream goes on; a length prefix over the limit or a stream
/// cut inside a frame ends it. Frames from a later protocol version are skipped as the
/// reference client does: counted, and warned about once per stream and kind.
pub struct ProtoStream {
    pub decoder: StreamDecoder,
    pub fmt: Format,
    pub max_depth: usize,
    /// Frames skipped so far (a later protocol version).
    pub skipped: usize,
    warned: HashSet<String>,
    /// The output array of the last call, given back ([`ProtoStream::recycle`]) for the next.
    pub spare: Vec<u8>,
}

impl ProtoStream {
    /// `msgpack`: events as MessagePack (typed and dict modes) rather than JSON text.
    pub fn new(msgpack: bool, max_frame_size: usize, max_depth: usize) -> Self {
        let fmt = if msgpack { Format::MsgPack } else { Format::Json };
        ProtoStream { decoder: StreamDecoder::new(max_frame_size), fmt, max_depth, skipped: 0, warned: HashSet::new(), spare: Vec::new() }
    }

    /// The output buffer for a chunk of `len` bytes, reserved before anything is decoded
    /// (a chunk too large for memory fails here): the number of bytes refused on error.
    pub fn output_buffer(len: usize) -> Result<Vec<u8>, usize> {
        Self::reserved(Vec::new(), len)
    }

    /// [`ProtoStream::output_buffer`], made of the last call's array when it is there.
    pub fn buffer(&mut self, len: usize) -> Result<Vec<u8>, usize> {
        Self::reserved(std::mem::take(&mut self.spare), len)
    }

    /// Give a call's array back, for the next call (kept when small).
    pub fn recycle(&mut self, array: Vec<u8>) {
        if array.capacity() <= SPARE_MAX {
            self.spare = array;
        }
    }

    fn reserved(mut v: Vec<u8>, len: usize) -> Result<Vec<u8>, usize> {
        v.clear();
        let n = len.saturating_mul(2).saturating_add(8);
        v.try_reserve(n).map_err(|_| n)?;
        Ok(v)
    }

    /// Where the first whole frame of `data` starts, when `data` is decoded in parts
    /// ([`ProtoStream::parts`]); `None`: in one call (a small chunk, or one that is a
    /// single part, like a frame as large as the chunk).
    pub fn pipeline_start(&self, data: &[u8]) -> Option<usize> {
        if data.len() <= PROTO_PIPELINE_MIN {
            return None;
        }
        let first = self.decoder.first_boundary(data);
        (FrameSplitter::cut_point(data, first, PROTO_PART) < data.len()).then_some(first)
    }

    /// Decode one chunk (`None`: nothing more) and, with `finish`, the end of the stream.
    /// The frames skipped are counted.
    pub fn decode(&mut self, chunk: Option<&[u8]>, finish: bool, buf: Vec<u8>) -> ProtoPart {
        decode_part(&mut self.decoder, self.fmt, self.max_depth, chunk, finish, buf)
    }

    /// The warnings a part raises, in order (the skipped-frames one last).
    pub fn part_warnings(part: &ProtoPart) -> Vec<String> {
        let mut texts = part.warnings.clone();
        if part.got.skipped > 0 {
            texts.push(format!("{} (counted in ProtoDecoder.skipped_frames)", proto::FUTURE_EVENT_WARNING));
        }
        texts
    }

    /// Whether `text` is this stream's first warning of its kind (it is then recorded).
    pub fn first_warning(&mut self, text: &str) -> bool {
        !self.warned.contains(text) && self.warned.insert(text.to_owned())
    }

    /// Count a part's skipped frames.
    pub fn count(&mut self, part: &ProtoPart) {
        self.skipped += part.got.skipped;
    }
}

/// The producer of a large protobuf chunk's parts, cut at frame boundaries, decoding with
/// a stream's decoder (taken out of its [`ProtoStream`] for the duration, so the stream's
/// other state stays usable meanwhile). Arrays already consumed come back through the
/// [`Sender`] returned with it, for reuse.
pub struct ProtoParts<'a> {
    decoder: &'a mut StreamDecoder,
    fmt: Format,
    max_depth: usize,
    data: &'a [u8],
    first: usize,
    offset: usize,
    sizes: PartSizes,
    finish: bool,
    recycled: Receiver<Vec<u8>>,
}

impl<'a> ProtoParts<'a> {
    /// `decoder`: taken out of `stream` (whose format and depth limit the parts take);
    /// `first`: [`ProtoStream::pipeline_start`]; `buf`: the output reserved for the chunk
    /// (the first part's array starts there).
    pub fn new(decoder: &'a mut StreamDecoder, stream: &ProtoStream, data: &'a [u8], first: usize, finish: bool, buf: Vec<u8>) -> (Self, Sender<Vec<u8>>) {
        let (fmt, max_depth) = (stream.fmt, stream.max_depth);
        let (recycle, recycled) = channel::<Vec<u8>>();
        let _ = recycle.send(buf); // the receiver is alive: cannot fail
        let sizes = PartSizes::new(PROTO_PART, PROTO_MAX_PART);
        (ProtoParts { decoder, fmt, max_depth, data, first, offset: 0, sizes, finish, recycled }, recycle)
    }

    /// The next part, and whether it is the last (the end of the data, or a framing
    /// error: the stream cannot go on).
    pub fn next_part(&mut self) -> (ProtoPart, bool) {
        let data = self.data;
        let end = FrameSplitter::cut_point(data, self.offset.max(self.first), self.sizes.take());
        let chunk = &data[self.offset..end];
        let mut buf = self.recycled.try_recv().unwrap_or_default();
        // A failed reservation leaves the array to grow as it goes.
        let _ = buf.try_reserve(chunk.len().saturating_mul(2).saturating_add(8));
        let part = decode_part(self.decoder, self.fmt, self.max_depth, Some(chunk), self.finish && end == data.len(), buf);
        self.offset = end;
        let last = end == data.len() || part.fatal.is_some();
        (part, last)
    }
}

/// Decode one unframed `Event` message as `fmt` into a per-thread output buffer, reused
/// across calls instead of a malloc and free per message, and hand the bytes to `f`.
pub fn with_decoded_message<R>(msg: &[u8], fmt: Format, warnings: &mut Vec<String>, f: impl FnOnce(&[u8]) -> R) -> Result<R, Error> {
    thread_local! {
        static OUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let run = |out: &mut Vec<u8>| {
        out.clear();
        let r = proto::decode_message_as(msg, warnings, out, fmt).map(|_| f(out));
        if out.capacity() > 1 << 16 {
            *out = Vec::new(); // a large event does not pin its buffer
        }
        r
    };
    OUT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut out) => run(&mut out),
        Err(_) => run(&mut Vec::new()), // re-entered from `f`: no sharing
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(Mode::from_raw(None), Some(Mode::Typed));
        assert_eq!(Mode::from_raw(Some("dict")), Some(Mode::Dict));
        assert_eq!(Mode::from_raw(Some("bytes")), Some(Mode::Bytes));
        assert_eq!(Mode::from_raw(Some("Dict")), None);
        assert_eq!(Mode::from_raw(Some("")), None);
        for m in [Mode::Typed, Mode::Dict, Mode::Bytes] {
            assert_eq!(Mode::from_index(m.index()), Some(m));
        }
        assert_eq!(Mode::from_index(3), None);
    }

    #[test]
    fn located_messages() {
        assert_eq!(located("SSE frame", 3, 120, "bad"), "SSE frame 3 at byte 120: bad");
        assert_eq!(too_deep(512), "nested deeper than max_depth=512");
    }

    #[test]
    fn part_sizes_grow_to_the_cap() {
        let mut s = PartSizes::new(100, 300);
        let got: Vec<usize> = (0..5).map(|_| s.take()).collect();
        assert_eq!(got, [100, 150, 225, 300, 300]);
        let mut s = PartSizes::new(usize::MAX - 1, usize::MAX);
        assert_eq!(s.take(), usize::MAX - 1);
        assert_eq!(s.take(), usize::MAX); // saturates, no overflow
    }

    const OLD: &[u8] = br#"{"type":"THINKING_START","title":"Planning"}"#;
    const NEW: &[u8] = br#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;

    #[test]
    fn legacy_by_mode() {
        assert!(Legacy::new(true, Mode::Typed).converts_refused());
        assert!(Legacy::new(true, Mode::Dict).wants_candidates());
        assert!(!Legacy::new(true, Mode::Bytes).is_on());
        assert!(!Legacy::new(false, Mode::Dict).is_on());
        let mut off = Legacy::new(false, Mode::Typed);
        assert_eq!(off.convert(OLD, 512), None);
        let mut on = Legacy::new(true, Mode::Typed);
        let text = on.convert(OLD, 512).expect("a 0.x event is converted");
        assert!(std::str::from_utf8(&text).unwrap().contains("REASONING_START"), "{text:?}");
        assert_eq!(on.convert(NEW, 512), None, "a 1.0 event is left as it is");
        assert_eq!(on.convert(b"{not json", 512), None, "left for the decoders to judge");
        assert_eq!(on.convert(b"[1]", 512), None, "not an event");
        assert_eq!(on.convert(OLD, 0), None, "too deep to parse: left as it is");
    }

    #[test]
    fn candidates_rebuild_the_array() {
        let mut array = b"[".to_vec();
        let mut spans = Vec::new();
        for (i, item) in [NEW, OLD, NEW].iter().enumerate() {
            if i > 0 {
                array.push(b',');
            }
            let s = array.len();
            array.extend_from_slice(item);
            spans.push((s, array.len()));
        }
        array.push(b']');
        let mut legacy = Legacy::new(true, Mode::Dict);
        assert!(legacy.convert_candidates(&array, &spans, &[0, 2], 512).is_none(), "1.0 candidates: unchanged");
        let (out, out_spans) = legacy.convert_candidates(&array, &spans, &[1], 512).expect("converted");
        let v: serde_json::Value = serde_json::from_slice(&out).expect("still one JSON array");
        assert_eq!(v.as_array().unwrap().len(), 3);
        assert_eq!(v[1]["type"], "REASONING_START");
        assert_eq!(&out[out_spans[0].0..out_spans[0].1], NEW);
        assert_eq!(&out[out_spans[2].0..out_spans[2].1], NEW);
        let item: serde_json::Value = serde_json::from_slice(&out[out_spans[1].0..out_spans[1].1]).unwrap();
        assert_eq!(item, v[1]);
    }

    fn sse_stream(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            crate::sse::write_event(&mut out, format!(r#"{{"type":"CUSTOM","name":"n{i}","value":{i}}}"#).as_bytes());
        }
        out
    }

    fn payloads(b: &Batch) -> Vec<Vec<u8>> {
        (0..b.len()).map(|i| b.payload(i).to_vec()).collect()
    }

    #[test]
    fn sse_parts_frame_like_one_call() {
        let data = sse_stream(40_000);
        assert!(SseStream::pipelines(Some(&data)));
        assert!(!SseStream::pipelines(Some(b"data: {}\n\n")) && !SseStream::pipelines(None));
        let mut one = SseStream::new(1 << 20, 512, false, Mode::Typed);
        let whole = one.frame(Some(&data), true);
        assert!(whole.error.is_none());
        let mut split = SseStream::new(1 << 20, 512, false, Mode::Typed);
        let (mut parts, _legacy) = split.parts(&data, true);
        let (mut got, mut offsets, mut first_indices, mut n_parts) = (Vec::new(), Vec::new(), Vec::new(), 0);
        loop {
            let (b, last) = parts.next_part();
            first_indices.push((b.first_index, got.len() as u64));
            got.extend(payloads(&b));
            offsets.extend(b.offsets.iter().copied());
            n_parts += 1;
            if last {
                break;
            }
        }
        assert!(n_parts > 2);
        assert_eq!(got, payloads(&whole));
        assert_eq!(offsets, whole.offsets);
        assert!(first_indices.iter().all(|(a, b)| a == b), "each part's first frame index continues the count");
        assert_eq!(split.parser.frame_count(), 40_000);
    }

    #[test]
    fn sse_frame_flags_candidates_and_depth() {
        let mut s = SseStream::new(1 << 20, 2, true, Mode::Dict);
        let mut data = Vec::new();
        crate::sse::write_event(&mut data, OLD);
        crate::sse::write_event(&mut data, b"[[[1]]]");
        let b = s.frame(Some(&data), false);
        assert_eq!(b.candidates, [0]);
        assert_eq!(b.too_deep, [1]);
        // an unterminated event is framed by `finish` only
        let b = s.frame(Some(b"data: {}\n"), false);
        assert!(b.is_empty());
        let b = s.frame(None, true);
        assert_eq!(payloads(&b), [b"{}".to_vec()]);
        assert_eq!(b.first_index, 2);
    }

    fn proto_stream(n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            proto::encode_json(format!(r#"{{"type":"CUSTOM","name":"n{i}","value":[{i}]}}"#).as_bytes(), true, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn proto_parts_decode_like_one_call() {
        let data = proto_stream(30_000);
        let mut one = ProtoStream::new(false, 1 << 20, 512);
        assert_eq!(one.pipeline_start(&data[..100]), None);
        let whole = one.decode(Some(&data), true, Vec::new());
        assert!(whole.fatal.is_none() && whole.got.errors.is_empty());
        assert_eq!(whole.spans.len(), 30_000);
        // Start mid-frame: the first part begins at the next frame boundary.
        let mut split = ProtoStream::new(false, 1 << 20, 512);
        let head = split.decode(Some(&data[..7]), false, Vec::new());
        assert!(head.spans.is_empty());
        let first = split.pipeline_start(&data[7..]).expect("large enough to pipeline");
        assert!(first > 0);
        let mut dec = std::mem::take(&mut split.decoder);
        let (mut parts, recycle) = ProtoParts::new(&mut dec, &split, &data[7..], first, true, Vec::new());
        let (mut items, mut positions, mut n_parts) = (Vec::new(), Vec::new(), 0);
        loop {
            let (p, last) = parts.next_part();
            assert!(p.fatal.is_none());
            items.extend(p.spans.iter().map(|&(s, e)| p.array[s..e].to_vec()));
            positions.extend(p.got.positions.iter().copied());
            let _ = recycle.send(p.array);
            n_parts += 1;
            if last {
                break;
            }
        }
        assert!(n_parts > 2);
        let expected: Vec<Vec<u8>> = whole.spans.iter().map(|&(s, e)| whole.array[s..e].to_vec()).collect();
        assert_eq!(items, expected);
        assert_eq!(positions, whole.got.positions);
    }

    #[test]
    fn proto_depth_errors_and_warnings() {
        let mut out = Vec::new();
        proto::encode_json(br#"{"type":"CUSTOM","name":"deep","value":[[[[1]]]]}"#, true, &mut out).unwrap();
        proto::encode_json(br#"{"type":"CUSTOM","name":"flat","value":1}"#, true, &mut out).unwrap();
        for msgpack in [false, true] {
            let mut s = ProtoStream::new(msgpack, 1 << 20, 3);
            let p = s.decode(Some(&out), true, Vec::new());
            assert_eq!(p.too_deep, [0], "msgpack={msgpack}");
            assert_eq!(p.spans.len(), 2);
        }
        // A truncated stream is fatal at the end.
        let mut s = ProtoStream::new(false, 1 << 20, 512);
        let p = s.decode(Some(&out[..out.len() - 1]), true, Vec::new());
        assert!(matches!(p.fatal, Some(Error::Truncated { .. })), "{:?}", p.fatal);
        // Warnings: once per stream and kind.
        let part = ProtoPart { array: vec![], spans: vec![], got: Collected { skipped: 2, ..Default::default() }, warnings: vec!["w".into()], too_deep: vec![], fatal: None };
        let texts = ProtoStream::part_warnings(&part);
        assert_eq!(texts.len(), 2);
        assert!(texts[1].contains("skipped_frames"));
        assert!(s.first_warning(&texts[0]) && !s.first_warning(&texts[0]) && s.first_warning(&texts[1]));
        s.count(&part);
        s.count(&part);
        assert_eq!(s.skipped, 4);
        assert_eq!(ProtoStream::output_buffer(10).unwrap().capacity(), 28);
        assert_eq!(ProtoStream::output_buffer(usize::MAX).unwrap_err(), usize::MAX);
    }

    #[test]
    fn decoded_message_reuses_and_reenters() {
        let mut framed = Vec::new();
        proto::encode_json(br#"{"type":"CUSTOM","name":"n","value":1}"#, false, &mut framed).unwrap();
        let mut w = Vec::new();
        let text = with_decoded_message(&framed, Format::Json, &mut w, |b| b.to_vec()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(v["name"], "n");
        // Re-entered from the callback: a fresh buffer, same result.
        let nested = with_decoded_message(&framed, Format::Json, &mut Vec::new(), |outer| {
            let inner = with_decoded_message(&framed, Format::Json, &mut Vec::new(), |b| b.to_vec()).unwrap();
            (outer.to_vec(), inner)
        })
        .unwrap();
        assert_eq!(nested.0, nested.1);
        assert!(with_decoded_message(b"\xff\xff", Format::Json, &mut w, |_| ()).is_err());
    }
}
