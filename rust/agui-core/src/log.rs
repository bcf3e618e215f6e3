//! Recorded AG-UI logs: the one reader behind every batch tool (the Arrow builder, the
//! CLI's `convert` / `inspect`, Python's `iter_log`, the stream-semantics engine's
//! replay).
//!
//! A log is an SSE stream (`text/event-stream`), a length-prefixed protobuf stream or
//! JSON Lines (one JSON event per line, as `convert --to jsonl` writes), optionally
//! gzip-compressed (one or more gzip members). [`LogReader::open`] looks at
//! the first bytes: the gzip magic decides decompression, then [`detect_format`] the
//! format. [`LogReader::for_each`] hands out every event's JSON text with its frame
//! index and the byte offset of its frame, reading fixed-size chunks (constant memory
//! whatever the log's size). Framing is the existing one: [`crate::sse::SseParser`] (its
//! JSON Lines mode for JSON Lines) and [`crate::proto::StreamDecoder`] (whose protobuf -> JSON mapping is the reference's).
//! A plain (not compressed) log can also be cut at frame boundaries by [`split`] into
//! parts that frame on their own ([`for_each_in_part`]), for decoding on several threads.
//!
//! The JSON text is not validated here: SSE payloads are handed out as they are in the
//! log, protobuf frames as the JSON the decoder writes. Offsets and indices are those
//! of the decompressed stream, the same numbers `decode_sse` / `decode_protobuf` report.
//!
//! ```
//! use agui_core::log::{LogReader, Limits, LogError};
//! let log = b"data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n";
//! let reader = LogReader::open(&log[..], None).unwrap();
//! let mut seen = Vec::new();
//! reader.for_each(&Limits::default(), |ev| -> Result<(), LogError> {
//!     seen.push((ev.index, ev.offset, ev.json.to_vec()));
//!     Ok(())
//! }).unwrap();
//! assert_eq!(seen, vec![(0, 0, log[6..log.len() - 2].to_vec())]);
//! ```

use std::fmt;
use std::io::{self, Cursor, Read, Seek, SeekFrom};

use flate2::read::MultiGzDecoder;

use crate::kind::Kind;
use crate::proto::{self, StreamDecoder};
use crate::sse::{Frame, SseError, SseParser};

/// Bytes read from the log per step.
pub const DEFAULT_CHUNK_SIZE: usize = 256 * 1024;

/// Bytes looked at by format detection.
const HEAD: usize = 4096;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// The AG-UI log formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/event-stream`, one JSON event per `data` frame.
    Sse,
    /// `application/vnd.ag-ui.event+proto`: 4-byte big-endian length, then one `Event`.
    Protobuf,
    /// JSON Lines: one JSON event per line (blank lines skipped); a frame is a line.
    Jsonl,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Sse => "sse",
            Format::Protobuf => "protobuf",
            Format::Jsonl => "jsonl",
        }
    }

    /// `"sse"`, `"protobuf"` (or `"proto"`), `"jsonl"` (or `"ndjson"`); `None` for
    /// anything else.
    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "sse" => Some(Format::Sse),
            "protobuf" | "proto" => Some(Format::Protobuf),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            _ => None,
        }
    }

    /// The `format=` argument of the log APIs: `"auto"` (None: detect) or a format; the
    /// error says what is accepted.
    pub fn parse_arg(arg: &str) -> Result<Option<Format>, String> {
        match arg {
            "auto" => Ok(None),
            f => Format::parse(f).map(Some).ok_or_else(|| format!("format must be 'auto', 'sse', 'protobuf' or 'jsonl', not {f:?}")),
        }
    }
}

/// True when `head` starts with the gzip magic bytes.
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&GZIP_MAGIC)
}

/// The format of a (decompressed) log from its first bytes; `None` when it is empty or
/// no format. A protobuf log starts with a frame length below the 10 MiB frame limit, so
/// its first byte is 0; an SSE log starts with a field name, a comment (`:`) or a blank
/// line (after an optional byte-order mark); a JSON Lines log with an object (`{`, after
/// spaces or tabs).
pub fn detect_format(head: &[u8]) -> Option<Format> {
    let head = head.strip_prefix(&BOM[..]).unwrap_or(head);
    if head.starts_with(b"PAR1") {
        return None; // a Parquet file would pass for SSE (a field name)
    }
    match *head.first()? {
        0 => Some(Format::Protobuf),
        b':' | b'\r' | b'\n' => Some(Format::Sse),
        b if b.is_ascii_alphabetic() => Some(Format::Sse),
        b' ' | b'\t' | b'{' => match head.iter().find(|&&b| b != b' ' && b != b'\t') {
            Some(b'{') => Some(Format::Jsonl),
            _ => None,
        },
        _ => None,
    }
}

/// Size limits of the framers (the same defaults as the streaming decoders).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Maximum size of one SSE event (`SseParser`'s buffer limit).
    pub max_buffer: usize,
    /// Maximum protobuf frame, prefix included.
    pub max_frame_size: usize,
    /// Bytes read per step.
    pub chunk_size: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_buffer: crate::sse::DEFAULT_MAX_BUFFER,
            max_frame_size: proto::frame::DEFAULT_MAX_FRAME_SIZE,
            chunk_size: DEFAULT_CHUNK_SIZE,
        }
    }
}

/// One event of a log.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// 0-based frame index in the log.
    pub index: u64,
    /// Byte offset of the frame in the (decompressed) log: the first `data` line of an
    /// SSE event, the length prefix of a protobuf frame.
    pub offset: u64,
    /// The event as JSON text (SSE: the payload as written, maybe not valid JSON).
    pub json: &'a [u8],
    /// Protobuf: where the JSON mapping wrote the event's top-level members in `json`
    /// (readers of a few members need not parse the text again); `None` for SSE.
    pub members: Option<&'a proto::Members>,
}

/// Why a log could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum LogError {
    /// Reading the underlying file or stream failed.
    Io(String),
    /// The gzip data is corrupt or ends early.
    Gzip(String),
    /// The log is neither SSE nor length-prefixed protobuf (`head`: its first bytes).
    UnknownFormat { head: Vec<u8> },
    /// The SSE framer failed (buffer limit).
    Sse(SseError),
    /// A protobuf frame failed (size limit, truncation, undecodable message).
    Proto(proto::Error),
}

impl LogError {
    /// The kind of this error (corrupt or cut gzip data is a truncated stream).
    pub fn kind(&self) -> Kind {
        match self {
            LogError::Io(_) => Kind::Io,
            LogError::Gzip(_) => Kind::Truncated,
            LogError::UnknownFormat { .. } => Kind::UnknownFormat,
            LogError::Sse(_) => Kind::BufferLimit,
            LogError::Proto(e) => e.kind(),
        }
    }

    /// Add `by` to the frame index (an error of a part, [`for_each_in_part`], as one of
    /// the whole log).
    pub fn shift_index(&mut self, by: u64) {
        match self {
            LogError::Sse(e) => e.frame_index += by,
            LogError::Proto(
                proto::Error::Frame { frame_index, .. }
                | proto::Error::FrameTooLarge { frame_index, .. }
                | proto::Error::Truncated { frame_index, .. },
            ) => *frame_index += by as usize,
            _ => {}
        }
    }

    /// (frame index, byte offset) where known.
    pub fn position(&self) -> (Option<u64>, Option<u64>) {
        match self {
            LogError::Sse(e) => (Some(e.frame_index), Some(e.offset)),
            LogError::Proto(e) => {
                let (i, o) = e.position();
                (i.map(|i| i as u64), o)
            }
            LogError::UnknownFormat { .. } => (None, Some(0)),
            _ => (None, None),
        }
    }
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogError::Io(m) => write!(f, "{m}"),
            LogError::Gzip(m) => write!(f, "corrupt or truncated gzip data: {m}"),
            LogError::UnknownFormat { head } => {
                let shown: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
                if head.starts_with(b"PAR1") {
                    // What `convert --to parquet` writes: columns, not a stream of events.
                    return write!(f, "a Parquet file, not an AG-UI log (read it with pyarrow, Polars or DuckDB)");
                }
                write!(
                    f,
                    "not an AG-UI log (neither SSE, length-prefixed protobuf nor JSON Lines): it starts with bytes {}",
                    shown.join(" ")
                )
            }
            LogError::Sse(e) => write!(f, "{e}"),
            LogError::Proto(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LogError {}

/// What [`LogReader::for_each`] saw.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Events handed out.
    pub events: u64,
    /// Frames read (skipped protobuf frames of a later version included): the index
    /// the next frame would have.
    pub frames: u64,
    /// Bytes of the (decompressed) log.
    pub bytes: u64,
    /// Protobuf frames of a later protocol version, skipped (as the reference does).
    pub warnings: Vec<String>,
}

/// An opened log: decompression and format decided, the first bytes already read.
pub struct LogReader<'r> {
    inner: Box<dyn Read + Send + 'r>,
    gzip: bool,
    format: Option<Format>,
    /// Decompressed bytes read for detection, handed out first.
    head: Vec<u8>,
    head_pos: usize,
    /// Decompressed bytes handed out so far.
    position: u64,
    empty: bool,
}

impl<'r> LogReader<'r> {
    /// Open a log. `format`: `None` to detect it; an empty log has no format (and no
    /// events), a log of neither format fails with [`LogError::UnknownFormat`] when read.
    pub fn open<R: Read + Send + 'r>(mut reader: R, format: Option<Format>) -> Result<Self, LogError> {
        let raw = read_up_to(&mut reader, HEAD, false)?;
        let gzip = is_gzip(&raw);
        let mut inner: Box<dyn Read + Send + 'r> = if gzip {
            Box::new(MultiGzDecoder::new(Cursor::new(raw).chain(reader)))
        } else {
            Box::new(Cursor::new(raw).chain(reader))
        };
        let head = read_up_to(&mut inner, HEAD, gzip)?;
        let format = format.or_else(|| detect_format(&head));
        let empty = head.is_empty();
        Ok(LogReader { inner, gzip, format, head, head_pos: 0, position: 0, empty })
    }

    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// The format given or detected; `None` for an empty log or an unknown format.
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// True when the log has no bytes at all (after decompression).
    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// The format, `None` for an empty log, [`LogError::UnknownFormat`] for bytes of
    /// neither format.
    pub fn checked_format(&self) -> Result<Option<Format>, LogError> {
        match self.format {
            None if !self.empty => Err(LogError::UnknownFormat { head: self.head.iter().take(16).copied().collect() }),
            f => Ok(f),
        }
    }

    /// Hand out every event to `sink`, in order. Stops at the first error (of the log or
    /// of `sink`): the events before it have been handed out.
    pub fn for_each<E, F>(self, limits: &Limits, sink: F) -> Result<Summary, E>
    where
        E: From<LogError>,
        F: FnMut(Event<'_>) -> Result<(), E>,
    {
        self.for_each_ahead(limits, &mut Each(sink))
    }

    /// [`LogReader::for_each`] with a reader ahead of the SSE framer's line search
    /// ([`ReadAhead`]), made for each chunk read ([`ChunkAhead::rows`]): it may read the
    /// chunk's frames where they lie. The same events, summary and errors.
    pub fn for_each_ahead<E, A>(mut self, limits: &Limits, rows: &mut A) -> Result<Summary, E>
    where
        E: From<LogError>,
        A: ChunkAhead<E>,
    {
        let Some(format) = self.checked_format()? else {
            return Ok(Summary::default());
        };
        let mut buf = vec![0u8; limits.chunk_size.max(1)];
        let mut framer = Framer::new(format, limits, 0);
        let mut events = 0u64;
        loop {
            let n = self.read(&mut buf).map_err(|e| self.io_error(e))?;
            let chunk = &buf[..n];
            framer.feed_ahead((n > 0).then_some(chunk), &mut events, &mut rows.rows(chunk))?;
            if n == 0 {
                break;
            }
        }
        Ok(framer.summary(events, self.position))
    }

    /// Fill `buf` with the next decompressed bytes (fewer only at the end; 0 at the
    /// end): [`Read::read`] with the errors of a corrupt gzip stream told apart.
    pub fn read_chunk(&mut self, buf: &mut [u8]) -> Result<usize, LogError> {
        let r = read_full(self, buf);
        r.map_err(|e| self.io_error(e))
    }

    fn io_error(&self, e: io::Error) -> LogError {
        classify(e, self.gzip)
    }
}

/// The framer of one format: the one loop behind [`LogReader::for_each`] (a stream, in
/// chunks) and [`for_each_in_part`] (a part in memory, fed at once).
enum Framer {
    Sse(SseParser),
    Protobuf(StreamDecoder, Vec<String>),
}

impl Framer {
    /// A framer starting at byte `offset` of the log, a frame boundary (0: the start).
    fn new(format: Format, limits: &Limits, offset: u64) -> Self {
        match format {
            Format::Sse if offset == 0 => Framer::Sse(SseParser::new(limits.max_buffer)),
            Format::Sse => Framer::Sse(SseParser::at(limits.max_buffer, offset)),
            Format::Jsonl if offset == 0 => Framer::Sse(SseParser::new(limits.max_buffer).lines()),
            Format::Jsonl => Framer::Sse(SseParser::at(limits.max_buffer, offset).lines()),
            Format::Protobuf => Framer::Protobuf(StreamDecoder::at(limits.max_frame_size, offset, 0), Vec::new()),
        }
    }

    /// Feed a chunk (`None`: the end of the log), the SSE framer's reader ahead
    /// ([`SseParser::feed_ahead`]): `rows` gets the events ([`ReadAhead`]). The first
    /// error stops the log: the frames after it (in the same chunk) are dropped.
    fn feed_ahead<E, R>(&mut self, chunk: Option<&[u8]>, events: &mut u64, rows: &mut R) -> Result<(), E>
    where
        E: From<LogError>,
        R: ReadAhead<E>,
    {
        let mut d = Deliver { rows, failed: None, events: 0 };
        let r = match (self, chunk) {
            (Framer::Sse(p), Some(c)) => p.feed_ahead(c, &mut d).map_err(LogError::Sse),
            (Framer::Sse(p), None) => p.finish(|f| crate::sse::Ahead::frame(&mut d, f)).map_err(LogError::Sse),
            (Framer::Protobuf(dec, warnings), Some(c)) => dec
                .feed_decoded(c, warnings, |event, index, offset| match event {
                    proto::Decoded::Flat(flat) => d.offer(|r| r.flat(index as u64, offset, flat)),
                    proto::Decoded::Nested(nested) => d.offer(|r| r.nested(index as u64, offset, nested)),
                    proto::Decoded::Text(json, members) => {
                        d.deliver(false, Event { index: index as u64, offset, json, members: Some(members) });
                        true
                    }
                })
                .map_err(LogError::Proto),
            (Framer::Protobuf(dec, _), None) => dec.finish().map_err(LogError::Proto),
        };
        *events += d.events;
        if let Some(e) = d.failed {
            return Err(e);
        }
        Ok(r?)
    }

    fn summary(self, events: u64, bytes: u64) -> Summary {
        let (frames, warnings) = match self {
            Framer::Sse(p) => (p.frame_count(), Vec::new()),
            Framer::Protobuf(d, w) => (d.frame_index() as u64, w),
        };
        Summary { events, frames, bytes, warnings }
    }
}

/// Where the events of a part go when the SSE framer has a reader ahead of its line
/// search ([`for_each_in_part_ahead`]; the other formats call only `event`). Methods, not
/// closures, so that they are inlined into the framer's loop (the frames read ahead are
/// most of a log; as closures they were calls).
pub trait ReadAhead<E> {
    /// Where the payload after a frame's `data: ` ends when this reader recognises it
    /// ([`crate::sse::Ahead::end`]).
    fn end(&mut self, rest: &[u8]) -> Option<usize>;
    /// An event whose end [`ReadAhead::end`] found (the framer took it).
    fn taken(&mut self, ev: Event<'_>) -> Result<(), E>;
    /// Every other event.
    fn event(&mut self, ev: Event<'_>) -> Result<(), E>;
    /// Protobuf: a flat event at frame `index`, byte `offset`, as read from the wire
    /// ([`proto::Flat`]), before its JSON text is written: `None` when not taken (the
    /// event then comes to `event` as text, as every other one).
    #[inline(always)]
    fn flat(&mut self, index: u64, offset: u64, flat: &proto::Flat<'_>) -> Option<Result<(), E>> {
        let _ = (index, offset, flat);
        None
    }
    /// Runs `go`, the SSE framer's loop over the frames read ahead from one place on
    /// ([`crate::sse::Ahead::run`]: it calls `end` and `taken`): by default where the
    /// framer is. A reader may run it in an out-of-line function of its own, with `end`
    /// and `taken` inlined there (one call a run of frames, not two a frame).
    #[inline(always)]
    fn run<T>(&mut self, go: impl FnOnce(&mut Self) -> T) -> T
    where
        Self: Sized,
    {
        go(self)
    }
    /// Protobuf: a nested event the wire path may take ([`proto::Nested`]), before its
    /// JSON text is written: `None` when not taken (the event then comes to `event` as
    /// text, or its error, as every other one).
    #[inline(always)]
    fn nested(&mut self, index: u64, offset: u64, nested: &proto::Nested<'_>) -> Option<Result<(), E>> {
        let _ = (index, offset, nested);
        None
    }
}

/// A [`ReadAhead`] for each chunk of a log read in chunks ([`LogReader::for_each_ahead`]):
/// what lasts from chunk to chunk is kept by the implementor, the view of one chunk's
/// bytes by its `Rows`.
pub trait ChunkAhead<E> {
    type Rows<'c>: ReadAhead<E>
    where
        Self: 'c;
    /// The reader of `chunk`'s frames (those that end in it; a frame cut by the chunk's
    /// end comes whole to the next chunk's reader, as an [`ReadAhead::event`]).
    fn rows<'c>(&'c mut self, chunk: &'c [u8]) -> Self::Rows<'c>;
}

/// No reader ahead, whatever the chunk: every event to the closure.
struct Each<F>(F);

impl<E, F: FnMut(Event<'_>) -> Result<(), E>> ChunkAhead<E> for Each<F> {
    type Rows<'c>
        = LineSearch<&'c mut F>
    where
        Self: 'c;
    #[inline(always)]
    fn rows<'c>(&'c mut self, _: &'c [u8]) -> LineSearch<&'c mut F> {
        LineSearch(&mut self.0)
    }
}

/// No reader ahead: every event to the closure.
struct LineSearch<F>(F);

impl<E, F: FnMut(Event<'_>) -> Result<(), E>> ReadAhead<E> for LineSearch<F> {
    #[inline(always)]
    fn end(&mut self, _: &[u8]) -> Option<usize> {
        None
    }
    #[inline(always)]
    fn taken(&mut self, ev: Event<'_>) -> Result<(), E> {
        (self.0)(ev)
    }
    #[inline(always)]
    fn event(&mut self, ev: Event<'_>) -> Result<(), E> {
        (self.0)(ev)
    }
}

/// The framer's side of a [`ReadAhead`]: events counted, the first error kept and the
/// events after it dropped.
struct Deliver<'r, R, E> {
    rows: &'r mut R,
    failed: Option<E>,
    /// The events delivered in this chunk (counted here, not through the caller's
    /// reference: a load and a store a frame).
    events: u64,
}

impl<E, R: ReadAhead<E>> Deliver<'_, R, E> {
    #[inline(always)]
    fn deliver(&mut self, taken: bool, ev: Event<'_>) {
        if self.failed.is_none() {
            let r = if taken { self.rows.taken(ev) } else { self.rows.event(ev) };
            match r {
                Ok(()) => self.events += 1,
                Err(e) => self.stop(e),
            }
        }
    }

    /// An event offered from the wire ([`ReadAhead::flat`], [`ReadAhead::nested`]):
    /// whether the reader took it.
    #[inline(always)]
    fn offer(&mut self, to: impl FnOnce(&mut R) -> Option<Result<(), E>>) -> bool {
        if self.failed.is_some() {
            // (Dropped, as `deliver` drops the events after an error.)
            return true;
        }
        let r = to(self.rows);
        self.took(r)
    }

    /// What the reader made of an event offered from the wire: whether it took it.
    #[inline(always)]
    fn took(&mut self, r: Option<Result<(), E>>) -> bool {
        match r {
            None => false,
            Some(Ok(())) => {
                self.events += 1;
                true
            }
            Some(Err(e)) => {
                self.stop(e);
                true
            }
        }
    }

    // (Out of line: the error's drop glue kept the callers from being inlined.)
    #[cold]
    #[inline(never)]
    fn stop(&mut self, e: E) {
        self.failed = Some(e);
    }
}

impl<E, R: ReadAhead<E>> crate::sse::Ahead for Deliver<'_, R, E> {
    #[inline(always)]
    fn end(&mut self, rest: &[u8]) -> Option<usize> {
        self.rows.end(rest)
    }
    #[inline(always)]
    fn taken(&mut self, f: Frame<'_>) {
        self.deliver(true, Event { index: f.index, offset: f.offset, json: f.data, members: None })
    }
    #[inline(always)]
    fn frame(&mut self, f: Frame<'_>) {
        self.deliver(false, Event { index: f.index, offset: f.offset, json: f.data, members: None })
    }
    /// The loop run where the reader runs it ([`ReadAhead::run`]), counting and keeping
    /// the first error there. (After an error nothing is read ahead: the line search
    /// frames the rest, and `deliver` drops it.)
    #[inline(always)]
    fn run(&mut self, frames: &mut crate::sse::AheadRun<'_>) {
        if self.failed.is_some() {
            return;
        }
        let (failed, events) = self.rows.run(|rows| {
            let mut d = Deliver { rows, failed: None, events: 0 };
            frames.go(&mut d);
            (d.failed, d.events)
        });
        self.events += events;
        self.failed = failed;
    }
}

/// A byte range of a plain (not compressed) log that starts at a frame boundary, so it
/// frames on its own ([`split`], [`for_each_in_part`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub start: u64,
    pub end: u64,
}

/// Bytes read per step while looking for a cut point (at most; see [`next_boundary`]).
const SPLIT_WINDOW: usize = 64 * 1024;
/// The first step's size: most cuts find their boundary within an event or two.
const SPLIT_FIRST: usize = 1024;

/// Cut a plain log of `len` bytes into at most `parts` parts at frame boundaries (fewer
/// when it has fewer boundaries), reading only near the cut points: for SSE the first
/// blank line after each even cut (line ends LF, CRLF or CR; for JSON Lines the first
/// line end); for protobuf the length prefixes, hopping from frame to frame. Each search
/// reads at most a frame's size limit past its cut point and never reads bytes an
/// earlier search read, so cutting is linear in the log whatever it holds. Where no
/// boundary lies within a frame's limit (a line or frame over the limit, a truncated or
/// oversized protobuf frame) the log is not cut any further: the last part holds the
/// rest and reports the error as the whole log would.
pub fn split<R: Read + Seek>(reader: &mut R, len: u64, format: Format, parts: usize, limits: &Limits) -> io::Result<Vec<Part>> {
    split_at(reader, len, format, &even_cuts(len, parts as u64), limits)
}

/// The `parts - 1` even cut points of `len` bytes (none for one part or fewer): where
/// [`split`] seeks its cuts.
pub fn even_cuts(len: u64, parts: u64) -> Vec<u64> {
    let parts = parts.max(1);
    (1..parts).map(|k| (u128::from(len) * u128::from(k) / u128::from(parts)) as u64).collect()
}

/// [`split`] with the cuts sought after the given positions (ascending) instead of even
/// ones: parts of chosen sizes.
pub fn split_at<R: Read + Seek>(reader: &mut R, len: u64, format: Format, targets: &[u64], limits: &Limits) -> io::Result<Vec<Part>> {
    let mut cuts = vec![0u64];
    let parts = targets.len() as u64 + 1;
    let target = |k: u64| targets[k as usize - 1];
    match format {
        Format::Sse | Format::Jsonl => {
            let mut window = vec![0u8; SPLIT_WINDOW];
            // A frame's bytes up to a blank line: its longest line (or its data) and the
            // line ends around it.
            let reach = limits.max_buffer as u64 + 4;
            for k in 1..parts {
                let target = target(k).max(*cuts.last().unwrap_or(&0));
                if target >= len {
                    break;
                }
                match next_boundary(reader, target, &mut window, format == Format::Jsonl, reach)? {
                    Some(cut) if cut < len => {
                        if cut > *cuts.last().unwrap_or(&0) {
                            cuts.push(cut);
                        }
                    }
                    // None within reach (the log fails there, or frames as no log should)
                    // or none before the end: no cut after this point.
                    _ => break,
                }
            }
        }
        Format::Protobuf => {
            reader.seek(SeekFrom::Start(0))?;
            let mut r = io::BufReader::with_capacity(SPLIT_WINDOW, reader);
            let (mut pos, mut k) = (0u64, 1u64);
            let mut prefix = [0u8; 4];
            while k < parts && pos < len {
                if pos >= target(k) {
                    if pos > *cuts.last().unwrap_or(&0) {
                        cuts.push(pos);
                    }
                    k += 1;
                    continue;
                }
                if len - pos < 4 {
                    break;
                }
                r.read_exact(&mut prefix)?;
                let size = u32::from_be_bytes(prefix) as u64;
                if 4 + size > limits.max_frame_size as u64 || pos + 4 + size > len {
                    break;
                }
                r.seek_relative(size as i64)?;
                pos += 4 + size;
            }
        }
    }
    cuts.push(len);
    Ok(cuts.windows(2).map(|w| Part { start: w[0], end: w[1] }).collect())
}

/// Where a line end starting at `data[j]` (`\r` or `\n`) ends: `None` when that is not
/// decided by `data` (a `\r` as its last byte, which a `\n` may follow), unless `eof`.
fn line_end(data: &[u8], j: usize, eof: bool) -> Option<usize> {
    match (data[j], data.get(j + 1)) {
        (b'\r', Some(b'\n')) => Some(j + 2),
        (b'\r', None) if !eof => None,
        _ => Some(j + 1),
    }
}

/// The first SSE event boundary (the position after a blank line: a line end right
/// after a line end, each LF, CRLF or CR) found from `from`; with `lines` (JSON Lines)
/// the first line boundary. `None` at the end of the log, or when none lies within
/// `reach` bytes of `from`. Every position returned is a boundary, wherever `from` is
/// (a `\n` seen first ends a line whether or not a `\r` came before it).
fn next_boundary<R: Read + Seek>(reader: &mut R, from: u64, window: &mut [u8], lines: bool, reach: u64) -> io::Result<Option<u64>> {
    reader.seek(SeekFrom::Start(from))?;
    // The undecided end of the previous window (at most 3 bytes: `\r`, `\r\n\r`...),
    // searched again with the next one.
    let mut carry: Vec<u8> = Vec::with_capacity(window.len() + 4);
    let mut base = from; // the log position of `carry[0]`
    // Windows from `SPLIT_FIRST` up, doubling: a boundary is most often a few hundred
    // bytes away, and reading (copying) 64 KiB for each cut of an in-memory log was most
    // of what a second thread adds to `to_arrow`.
    let mut size = SPLIT_FIRST.min(window.len());
    loop {
        if base.saturating_sub(from) > reach {
            return Ok(None);
        }
        let n = read_full(reader, &mut window[..size])?;
        // (`read_full` fills the window unless the log ends.)
        let eof = n < size;
        size = (size * 2).min(window.len());
        carry.extend_from_slice(&window[..n]);
        let data = &carry[..];
        let mut i = 0;
        let mut undecided = None;
        while let Some(rel) = memchr::memchr2(b'\n', b'\r', &data[i..]) {
            let j = i + rel;
            let Some(e1) = line_end(data, j, eof) else {
                undecided = Some(j);
                break;
            };
            if lines {
                return Ok(Some(base + e1 as u64));
            }
            match data.get(e1) {
                Some(b'\n' | b'\r') => match line_end(data, e1, eof) {
                    Some(e2) => return Ok(Some(base + e2 as u64)),
                    None => {
                        undecided = Some(j);
                        break;
                    }
                },
                Some(_) => i = e1,
                None if eof => return Ok(None),
                None => {
                    undecided = Some(j);
                    break;
                }
            }
        }
        if n == 0 {
            return Ok(None);
        }
        let keep = undecided.unwrap_or(data.len());
        base += keep as u64;
        carry.drain(..keep);
    }
}

/// Fill `buf` (fewer bytes only at the end of `reader`).
fn read_full<R: Read + ?Sized>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// [`LogReader::for_each`] of a whole log held in memory: a plain (not compressed) log is
/// framed where it lies ([`for_each_in_part`] of all of it), not copied through the
/// reader's buffer; a gzip log through a [`LogReader`]. The same events, summary and errors.
pub fn for_each_in_bytes<E, F>(data: &[u8], format: Option<Format>, limits: &Limits, sink: F) -> Result<Summary, E>
where
    E: From<LogError>,
    F: FnMut(Event<'_>) -> Result<(), E>,
{
    for_each_in_bytes_ahead(data, format, limits, &mut Each(sink))
}

/// [`for_each_in_bytes`] with a reader ahead of the SSE framer's line search, made for
/// the bytes framed ([`ChunkAhead::rows`]): all of a plain log, where it lies (see
/// [`for_each_in_part_ahead`]); each decompressed chunk of a gzip log, as
/// [`LogReader::for_each_ahead`] reads it.
pub fn for_each_in_bytes_ahead<E, A>(data: &[u8], format: Option<Format>, limits: &Limits, rows: &mut A) -> Result<Summary, E>
where
    E: From<LogError>,
    A: ChunkAhead<E>,
{
    let log = LogReader::open(data, format)?;
    if log.is_gzip() {
        return log.for_each_ahead(limits, rows);
    }
    let Some(format) = log.checked_format()? else {
        return Ok(Summary::default());
    };
    for_each_in_part_ahead(data, format, Part { start: 0, end: data.len() as u64 }, limits, &mut rows.rows(data))
}

/// Hand out the events of one part of a plain log (`data`: its bytes, from
/// [`split`]), as [`LogReader::for_each`] does for a whole log: offsets are those of the
/// whole log; frame indices count from the part's first frame (add the
/// [`Summary::frames`] of the parts before it).
pub fn for_each_in_part<E, F>(data: &[u8], format: Format, part: Part, limits: &Limits, sink: F) -> Result<Summary, E>
where
    E: From<LogError>,
    F: FnMut(Event<'_>) -> Result<(), E>,
{
    for_each_in_part_ahead(data, format, part, limits, &mut LineSearch(sink))
}

/// [`for_each_in_part`] with a reader ahead of the SSE framer's line search
/// ([`SseParser::feed_ahead`]: [`ReadAhead::end`] may say where the payload after a
/// frame's `data: ` ends; the events are the same, those it read handed to
/// [`ReadAhead::taken`], the others to [`ReadAhead::event`], in order). `end` is not
/// called for the other formats.
pub fn for_each_in_part_ahead<E, R>(data: &[u8], format: Format, part: Part, limits: &Limits, rows: &mut R) -> Result<Summary, E>
where
    E: From<LogError>,
    R: ReadAhead<E>,
{
    let mut framer = Framer::new(format, limits, part.start);
    let mut events = 0u64;
    framer.feed_ahead(Some(data), &mut events, rows)?;
    framer.feed_ahead(None, &mut events, rows)?;
    Ok(framer.summary(events, data.len() as u64))
}

/// [`for_each_in_part_ahead`] for a part read from `reader` (positioned at the part's
/// start) in chunks of [`Limits::chunk_size`], not held in memory whole: for a part too
/// big to hold (a log that could not be cut). The events are the same; none of them is
/// a slice of the part's bytes (there are none), so `end` only sees chunks' bytes.
/// `read` is told the bytes of each chunk read.
pub fn for_each_in_part_read<E, R, A>(reader: &mut R, format: Format, part: Part, limits: &Limits, rows: &mut A, mut read: impl FnMut(usize)) -> Result<Summary, E>
where
    E: From<LogError>,
    R: Read + ?Sized,
    A: ReadAhead<E>,
{
    let mut framer = Framer::new(format, limits, part.start);
    let mut events = 0u64;
    let mut buf = vec![0u8; limits.chunk_size.max(1)];
    let mut left = part.end - part.start;
    while left > 0 {
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = read_full(reader, &mut buf[..want]).map_err(|e| LogError::Io(e.to_string()))?;
        if n == 0 {
            break;
        }
        read(n);
        left -= n as u64;
        framer.feed_ahead(Some(&buf[..n]), &mut events, rows)?;
    }
    framer.feed_ahead(None, &mut events, rows)?;
    Ok(framer.summary(events, part.end - part.start - left))
}

/// The decompressed log, from its first byte (what the typed Python decoders are fed).
impl Read for LogReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = if self.head_pos < self.head.len() {
            let n = (self.head.len() - self.head_pos).min(buf.len());
            buf[..n].copy_from_slice(&self.head[self.head_pos..self.head_pos + n]);
            self.head_pos += n;
            if self.head_pos == self.head.len() {
                self.head = Vec::new();
                self.head_pos = 0;
            }
            n
        } else {
            self.inner.read(buf)?
        };
        self.position += n as u64;
        Ok(n)
    }
}

/// What a log can be written as, event by event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Sse,
    Protobuf,
    /// One JSON event per line.
    Jsonl,
}

impl Output {
    /// The names of [`Format::parse`].
    pub fn parse(name: &str) -> Option<Output> {
        Format::parse(name).map(|f| match f {
            Format::Sse => Output::Sse,
            Format::Protobuf => Output::Protobuf,
            Format::Jsonl => Output::Jsonl,
        })
    }
}

/// Append one event (JSON text, as [`LogReader::for_each`] hands it out) to `out` in the
/// `to` format. Protobuf encoding parses the JSON (an invalid event fails as
/// `proto::encode_json` does); SSE and JSON lines copy it.
pub fn write_event(out: &mut Vec<u8>, to: Output, json: &[u8]) -> Result<(), proto::Error> {
    match to {
        Output::Sse => crate::sse::write_event(out, json),
        Output::Protobuf => proto::encode_json(json, true, out)?,
        Output::Jsonl => {
            // A multi-line SSE payload has raw line ends only between JSON tokens (inside
            // strings they are escaped): as spaces the event fits one line.
            let start = out.len();
            out.extend_from_slice(json);
            for b in &mut out[start..] {
                if *b == b'\n' || *b == b'\r' {
                    *b = b' ';
                }
            }
            out.push(b'\n');
        }
    }
    Ok(())
}

/// A gzip-compressed output (one member), as logs are read: what a `.gz` name promises.
/// [`GzipWriter::finish`] writes the end of the stream (dropping it unfinished leaves a
/// truncated one, which every reader refuses).
pub struct GzipWriter<W: io::Write>(flate2::write::GzEncoder<W>);

impl<W: io::Write> GzipWriter<W> {
    pub fn new(inner: W) -> Self {
        // (Level 6, gzip's own default: a log is written once and read many times.)
        GzipWriter(flate2::write::GzEncoder::new(inner, flate2::Compression::default()))
    }

    /// Write the end of the gzip stream and flush: the output it wrote into.
    pub fn finish(self) -> io::Result<W> {
        let mut inner = self.0.finish()?;
        inner.flush()?;
        Ok(inner)
    }
}

impl<W: io::Write> io::Write for GzipWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    /// Flushes the compressed bytes so far (not the end of the stream: [`GzipWriter::finish`]).
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A gzip decoder reports corrupt or truncated data as `InvalidData` / `InvalidInput` /
/// `UnexpectedEof`: that is bad input, not an I/O failure.
fn classify(e: io::Error, gzip: bool) -> LogError {
    match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::UnexpectedEof if gzip => {
            LogError::Gzip(e.to_string())
        }
        _ => LogError::Io(e.to_string()),
    }
}

/// Read until `limit` bytes or the end of the stream.
fn read_up_to<R: Read + ?Sized>(reader: &mut R, limit: usize, gzip: bool) -> Result<Vec<u8>, LogError> {
    let mut out = Vec::with_capacity(limit);
    reader.take(limit as u64).read_to_end(&mut out).map_err(|e| classify(e, gzip))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// (frame index, byte offset, event JSON) of each event.
    type Events = Vec<(u64, u64, Vec<u8>)>;

    fn collect(data: &[u8], format: Option<Format>, chunk: usize) -> Result<(Events, Summary), LogError> {
        let mut out = Vec::new();
        let limits = Limits { chunk_size: chunk, ..Limits::default() };
        let summary = LogReader::open(data, format)?.for_each(&limits, |ev| -> Result<(), LogError> {
            out.push((ev.index, ev.offset, ev.json.to_vec()));
            Ok(())
        })?;
        Ok((out, summary))
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    const E1: &[u8] = br#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#;
    const E2: &[u8] = br#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}"#;

    fn sse_log() -> Vec<u8> {
        let mut log = b": comment\n".to_vec();
        crate::sse::write_event(&mut log, E1);
        crate::sse::write_event(&mut log, E2);
        log
    }

    fn proto_log() -> Vec<u8> {
        let mut log = Vec::new();
        for e in [E1, E2] {
            proto::encode_json(e, true, &mut log).unwrap();
        }
        log
    }

    #[test]
    fn detects_formats() {
        assert_eq!(detect_format(b"data: {}"), Some(Format::Sse));
        assert_eq!(detect_format(b"\xef\xbb\xbf: hi"), Some(Format::Sse));
        assert_eq!(detect_format(b"\n\ndata: {}"), Some(Format::Sse));
        assert_eq!(detect_format(b"\x00\x00\x00\x02\x08\x01"), Some(Format::Protobuf));
        assert_eq!(detect_format(b""), None);
        assert_eq!(detect_format(b"\x89PNG"), None);
        assert_eq!(detect_format(b"{\"type\":1}"), Some(Format::Jsonl));
        assert_eq!(detect_format(b"\xef\xbb\xbf \t{}"), Some(Format::Jsonl));
        assert_eq!(detect_format(b"  [1]"), None);
        assert_eq!(detect_format(b"PAR1\x15\x04"), None);
        let parquet = LogError::UnknownFormat { head: b"PAR1\x15\x04".to_vec() };
        assert!(parquet.to_string().starts_with("a Parquet file"), "{parquet}");
        assert_eq!(Format::parse("ndjson"), Some(Format::Jsonl));
        assert_eq!(Format::Jsonl.as_str(), "jsonl");
        assert!(is_gzip(&gzip(b"x")));
        assert_eq!(Format::parse("proto"), Some(Format::Protobuf));
        assert_eq!(Format::parse("json"), None);
        assert_eq!(Format::parse_arg("auto"), Ok(None));
        assert_eq!(Format::parse_arg("sse"), Ok(Some(Format::Sse)));
        assert_eq!(Format::parse_arg("json").unwrap_err(), "format must be 'auto', 'sse', 'protobuf' or 'jsonl', not \"json\"");
    }

    fn jsonl_log() -> Vec<u8> {
        let mut log = b"\xef\xbb\xbf".to_vec();
        log.extend_from_slice(E1);
        log.extend_from_slice(b"\r\n\n  \t\n");
        log.extend_from_slice(E2);
        log // no line end at the end
    }

    #[test]
    fn jsonl_events_with_positions_in_any_chunking() {
        let log = jsonl_log();
        let (whole, summary) = collect(&log, None, 1 << 16).unwrap();
        assert_eq!(whole, vec![(0, 3, E1.to_vec()), (1, (3 + E1.len() + 7) as u64, E2.to_vec())]);
        assert_eq!(summary.events, 2);
        for chunk in 1..=log.len() {
            assert_eq!(collect(&log, None, chunk).unwrap().0, whole, "chunk {chunk}");
            assert_eq!(collect(&gzip(&log), Some(Format::Jsonl), chunk).unwrap().0, whole, "gzip, chunk {chunk}");
        }
        // An SSE log read as JSON Lines: each line is a frame (no fields).
        let (as_lines, _) = collect(b"data: 1\n\n", Some(Format::Jsonl), 4).unwrap();
        assert_eq!(as_lines, vec![(0, 0, b"data: 1".to_vec())]);
        // One line over the limit: its index and offset, the events before it handed out.
        let limits = Limits { max_buffer: E1.len(), chunk_size: 7, ..Limits::default() };
        let mut seen = 0;
        let long = [E1, b"\n", E1, b"x\n"].concat();
        let err = LogReader::open(&long[..], None).unwrap().for_each(&limits, |_| -> Result<(), LogError> {
            seen += 1;
            Ok(())
        });
        let err = err.unwrap_err();
        assert_eq!((seen, err.position()), (1, (Some(1), Some(E1.len() as u64 + 1))));
        assert!(err.to_string().starts_with("JSON Lines line exceeded maximum limit"), "{err}");
    }

    #[test]
    fn jsonl_parts_read_like_the_whole_log() {
        let mut log = Vec::new();
        for i in 0..300 {
            log.extend_from_slice(format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{i}"}}"#).as_bytes());
            log.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
            if i % 11 == 0 {
                log.extend_from_slice(b"\n \n");
            }
        }
        let whole = collect(&log, None, 1 << 16).unwrap().0;
        assert_eq!(whole.len(), 300);
        for n in [1, 2, 3, 7, 50, 10_000] {
            let (parts, got) = by_parts(&log, Format::Jsonl, n, &Limits::default());
            assert_eq!(got.unwrap(), whole, "{n} parts");
            assert_eq!(parts.len() > 1, n > 1, "{n} parts");
        }
    }

    #[test]
    fn sse_events_with_positions_in_any_chunking() {
        let log = sse_log();
        let (whole, summary) = collect(&log, None, 1 << 16).unwrap();
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0], (0, 10, E1.to_vec()));
        assert_eq!(whole[1].2, E2.to_vec());
        assert_eq!(&log[whole[1].1 as usize..][..6], b"data: ");
        assert_eq!(summary.events, 2);
        assert_eq!(summary.bytes, log.len() as u64);
        for chunk in [1, 2, 3, 7, 64] {
            assert_eq!(collect(&log, None, chunk).unwrap().0, whole, "chunk {chunk}");
        }
    }

    #[test]
    fn protobuf_events_are_json_with_frame_offsets() {
        let log = proto_log();
        let (events, _) = collect(&log, None, 5).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!((events[0].0, events[0].1), (0, 0));
        let first_len = 4 + u32::from_be_bytes(log[..4].try_into().unwrap()) as u64;
        assert_eq!((events[1].0, events[1].1), (1, first_len));
        let v: serde_json::Value = serde_json::from_slice(&events[1].2).unwrap();
        assert_eq!(v["delta"], "hi");
        assert_eq!(v["messageId"], "m");
    }

    #[test]
    fn gzip_is_transparent_and_multi_member() {
        for log in [sse_log(), proto_log()] {
            let plain = collect(&log, None, 7).unwrap().0;
            let mut gz = gzip(&log[..10]);
            gz.extend(gzip(&log[10..]));
            let reader = LogReader::open(&gz[..], None).unwrap();
            assert!(reader.is_gzip());
            assert_eq!(collect(&gz, None, 7).unwrap().0, plain);
        }
    }

    /// A gzip output reads back as the log written, in any chunking; unfinished, it is
    /// a truncated gzip stream.
    #[test]
    fn gzip_output_reads_back() {
        let log = sse_log().repeat(50);
        let mut w = GzipWriter::new(Vec::new());
        for c in log.chunks(37) {
            w.write_all(c).unwrap();
            w.flush().unwrap();
        }
        let gz = w.finish().unwrap();
        assert!(is_gzip(&gz) && gz.len() < log.len());
        assert_eq!(collect(&gz, None, 7).unwrap().0, collect(&log, None, 7).unwrap().0);
        let mut cut = GzipWriter::new(Vec::new());
        cut.write_all(&log).unwrap();
        cut.flush().unwrap();
        let cut = cut.0.get_ref().clone();
        assert_eq!(collect(&cut, None, 64).unwrap_err().kind(), Kind::Truncated);
    }

    #[test]
    fn writes_each_output_and_reads_it_back() {
        let multi = b"{\"type\":\"CUSTOM\",\n\"name\":\"a\\nb\",\"value\":1}";
        for to in [Output::Sse, Output::Protobuf, Output::Jsonl] {
            let mut out = Vec::new();
            for e in [E1, E2, &multi[..]] {
                write_event(&mut out, to, e).unwrap();
            }
            if to == Output::Jsonl {
                assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 3);
            }
            let back: Vec<serde_json::Value> =
                collect(&out, None, 5).unwrap().0.iter().map(|e| serde_json::from_slice(&e.2).unwrap()).collect();
            assert_eq!(back.len(), 3, "{to:?}");
            assert_eq!(back[2]["name"], "a\nb", "{to:?}");
            assert_eq!(back[1]["delta"], "hi", "{to:?}");
        }
        assert_eq!(Output::parse("proto"), Some(Output::Protobuf));
        assert!(write_event(&mut Vec::new(), Output::Protobuf, b"{nope").is_err());
    }

    #[test]
    fn read_hands_out_the_decompressed_log() {
        let log = sse_log();
        let mut out = Vec::new();
        LogReader::open(&gzip(&log)[..], None).unwrap().read_to_end(&mut out).unwrap();
        assert_eq!(out, log);
    }

    #[test]
    fn errors_carry_positions_and_events_before_are_delivered() {
        // Truncated protobuf: the first frame is delivered, then the error.
        let log = proto_log();
        let cut = &log[..log.len() - 3];
        let mut seen = 0;
        let err = LogReader::open(cut, None)
            .unwrap()
            .for_each(&Limits::default(), |_| -> Result<(), LogError> {
                seen += 1;
                Ok(())
            })
            .unwrap_err();
        assert_eq!(seen, 1);
        assert_eq!(err.kind(), Kind::Truncated);
        assert_eq!(err.position().0, Some(1));

        // Garbage message in a frame.
        let mut bad = proto_log();
        bad.extend_from_slice(&[0, 0, 0, 2, 0xff, 0xff]);
        let err = collect(&bad, None, 3).unwrap_err();
        assert_eq!(err.kind(), Kind::ProtobufDecode);
        assert_eq!(err.position(), (Some(2), Some(proto_log().len() as u64)));

        // SSE buffer limit.
        let limits = Limits { max_buffer: 16, ..Limits::default() };
        let err = LogReader::open(&sse_log()[..], None).unwrap().for_each(&limits, |_| -> Result<(), LogError> { Ok(()) });
        assert_eq!(err.unwrap_err().kind(), Kind::BufferLimit);

        // Truncated gzip.
        let gz = gzip(&sse_log());
        let err = collect(&gz[..gz.len() - 12], None, 64).unwrap_err();
        assert!(matches!(err, LogError::Gzip(_)), "{err:?}");

        // Neither format; empty is no events.
        let err = collect(b"\x89PNG\r\n", None, 64).unwrap_err();
        assert!(err.to_string().contains("89 50 4e 47"), "{err}");
        assert_eq!(collect(b"", None, 64).unwrap().0.len(), 0);
    }

    /// Every event of `log` read part by part, with the frame indices of the whole log.
    fn by_parts(log: &[u8], format: Format, parts: usize, limits: &Limits) -> (Vec<Part>, Result<Events, LogError>) {
        let cut = split(&mut Cursor::new(log), log.len() as u64, format, parts, limits).unwrap();
        let mut out = Vec::new();
        let mut base = 0;
        for p in &cut {
            let data = &log[p.start as usize..p.end as usize];
            let r = for_each_in_part(data, format, *p, limits, |ev| -> Result<(), LogError> {
                out.push((ev.index + base, ev.offset, ev.json.to_vec()));
                Ok(())
            });
            match r {
                Ok(s) => base += s.frames,
                Err(mut e) => {
                    e.shift_index(base);
                    return (cut, Err(e));
                }
            }
        }
        (cut, Ok(out))
    }

    #[test]
    fn parts_read_like_the_whole_log() {
        let limits = Limits::default();
        let mut lf = Vec::new();
        let mut crlf = Vec::new();
        for i in 0..200 {
            let e = format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{i}"}}"#);
            crate::sse::write_event(&mut lf, e.as_bytes());
            crlf.extend_from_slice(format!("data: {e}\r\n\r\n").as_bytes());
            if i % 7 == 0 {
                // A BOM mid-stream is data (an unknown field line), not a BOM to skip.
                lf.extend_from_slice(b"\xef\xbb\xbfdata: x\n\n");
                crlf.extend_from_slice(b": comment\r\n");
            }
        }
        let cr: Vec<u8> = lf.iter().map(|&b| if b == b'\n' { b'\r' } else { b }).collect();
        for (log, cuts) in [(&lf, true), (&crlf, true), (&cr, true)] {
            let whole = collect(log, Some(Format::Sse), 1 << 16).unwrap().0;
            for n in [1, 2, 3, 7, 50, 10_000] {
                let (parts, got) = by_parts(log, Format::Sse, n, &limits);
                assert_eq!(got.unwrap(), whole, "{n} parts");
                assert_eq!(parts.first().unwrap().start, 0);
                assert_eq!(parts.last().unwrap().end, log.len() as u64);
                assert!(parts.windows(2).all(|w| w[0].end == w[1].start && w[0].start < w[0].end));
                assert_eq!(parts.len() > 1, cuts && n > 1, "{n} parts");
            }
        }
        let pb: Vec<u8> = proto_log().repeat(100);
        let whole = collect(&pb, None, 1 << 16).unwrap().0;
        for n in [1, 2, 5, 1000] {
            let (parts, got) = by_parts(&pb, Format::Protobuf, n, &limits);
            assert_eq!(got.unwrap(), whole, "{n} parts");
            assert_eq!(parts.len(), n.min(200));
        }
    }

    /// Cuts sought after chosen positions: each at the first boundary from its target,
    /// parts of unequal sizes that read like the whole log.
    #[test]
    fn parts_of_chosen_sizes() {
        let limits = Limits::default();
        let mut sse = Vec::new();
        for i in 0..300 {
            crate::sse::write_event(&mut sse, format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{i}"}}"#).as_bytes());
        }
        let pb: Vec<u8> = proto_log().repeat(150);
        for (log, format) in [(&sse, Format::Sse), (&pb, Format::Protobuf)] {
            let len = log.len() as u64;
            let whole = collect(log, Some(format), 1 << 16).unwrap().0;
            let targets = [len * 3 / 8, len * 3 / 4, len * 7 / 8];
            let parts = split_at(&mut Cursor::new(&log[..]), len, format, &targets, &limits).unwrap();
            assert_eq!(parts.len(), 4);
            for (p, t) in parts[1..].iter().zip(targets) {
                // At or after its target, by less than one frame.
                assert!(p.start >= t && p.start - t < 200, "{p:?} {t}");
            }
            let (mut got, mut base) = (Vec::new(), 0);
            for p in &parts {
                let data = &log[p.start as usize..p.end as usize];
                base += for_each_in_part(data, format, *p, &limits, |ev| -> Result<(), LogError> {
                    got.push((ev.index + base, ev.offset, ev.json.to_vec()));
                    Ok(())
                })
                .unwrap()
                .frames;
            }
            assert_eq!(got, whole);
            assert_eq!(parts.last().unwrap().end, len);
        }
    }

    /// Events longer than the first windows the cut search reads (1, 2, 4 KiB ...), so
    /// that boundaries and the bytes of their blank lines fall on both sides of a
    /// window's end: every cut is the first boundary after its even point, and the parts
    /// read as the whole log.
    #[test]
    fn cuts_are_found_across_windows() {
        // The first frame boundary at or after `from`, found byte by byte: the end of a
        // line end (LF, CRLF or CR) right after a line end.
        fn boundary_after(log: &[u8], from: usize) -> Option<usize> {
            let end = |j: usize| match log.get(j..) {
                Some([b'\r', b'\n', ..]) => Some(j + 2),
                Some([b'\r' | b'\n', ..]) => Some(j + 1),
                _ => None,
            };
            (from..log.len()).find_map(|j| end(end(j)?))
        }
        let limits = Limits::default();
        for end in ["\n\n", "\r\n\r\n", "\n\r\n", "\r\r", "\r\n\r", "\n\r", "\r\r\n"] {
            let mut log = Vec::new();
            for i in 0..60 {
                let e = format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{}"}}"#, "x".repeat(700 + i * 97));
                log.extend_from_slice(format!("data: {e}{end}").as_bytes());
            }
            let whole = collect(&log, Some(Format::Sse), 1 << 16).unwrap().0;
            let len = log.len();
            for n in 2..40usize {
                let (parts, got) = by_parts(&log, Format::Sse, n, &limits);
                assert_eq!(got.unwrap(), whole, "{n} parts");
                // The cuts as the search defines them, found byte by byte.
                let mut want = vec![0usize];
                for k in 1..n {
                    let from = (len * k / n).max(*want.last().unwrap());
                    if let Some(cut) = boundary_after(&log, from).filter(|&c| c < len && c > *want.last().unwrap()) {
                        want.push(cut);
                    }
                }
                let got: Vec<usize> = parts.iter().map(|p| p.start as usize).collect();
                assert_eq!(got, want, "{n} parts, {end:?}");
            }
            // From every position of a shorter log: each window end falls inside a
            // blank line somewhere.
            let short = &log[..log.len().min(12_000)];
            let mut window = vec![0u8; SPLIT_WINDOW];
            for from in 0..short.len() {
                let want = boundary_after(short, from).map(|c| c as u64);
                let got = next_boundary(&mut Cursor::new(short), from as u64, &mut window, false, u64::MAX).unwrap();
                assert_eq!(got, want, "from {from}, {end:?}");
            }
        }
    }

    #[test]
    fn errors_of_parts_are_those_of_the_whole_log() {
        let limits = Limits { max_buffer: 200, ..Limits::default() };
        let mut log = sse_log().repeat(50);
        log.extend_from_slice(format!("data: {}\n\n", "x".repeat(300)).as_bytes());
        log.extend(sse_log().repeat(50));
        let whole = LogReader::open(&log[..], None).unwrap().for_each(&limits, |_| -> Result<(), LogError> { Ok(()) });
        let (parts, got) = by_parts(&log, Format::Sse, 8, &limits);
        assert!(parts.len() > 2);
        assert_eq!(got.unwrap_err(), whole.unwrap_err());
        // A truncated protobuf log: cut before the bad frame, reported by its part.
        let mut pb = proto_log().repeat(60);
        pb.extend_from_slice(&[0, 0, 0, 9, 1]);
        let whole = collect(&pb, None, 64).unwrap_err();
        let (parts, got) = by_parts(&pb, Format::Protobuf, 4, &limits);
        assert_eq!(parts.len(), 4);
        assert_eq!(got.unwrap_err(), whole);
        assert_eq!(whole.position().0, Some(120));
    }

    /// A reader that counts the bytes read from it.
    struct CountingReader<'a> {
        inner: Cursor<&'a [u8]>,
        read: u64,
    }

    impl Read for CountingReader<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl Seek for CountingReader<'_> {
        fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    /// A log with no boundary past some point (one line over the limit, a line of
    /// NULs, a region of short lines with no blank one): each cut is sought within one
    /// frame's limit and no byte is read twice, so cutting reads at most the limit past
    /// the last boundary, and the rest is one part that reads as the whole log would.
    #[test]
    fn cutting_is_linear_when_nothing_frames() {
        let limits = Limits { max_buffer: 1000, ..Limits::default() };
        let good = sse_log().repeat(40);
        let tails: [Vec<u8>; 4] = [
            [&b"data: "[..], &[0u8; 200_000]].concat(),
            b"data: x".repeat(30_000),
            b": keep-alive\n".repeat(15_000),
            b"data: 1\r".repeat(25_000),
        ];
        for (t, tail) in tails.iter().enumerate() {
            let log = [&good[..], tail].concat();
            let len = log.len() as u64;
            let mut r = CountingReader { inner: Cursor::new(&log[..]), read: 0 };
            let parts = split(&mut r, len, Format::Sse, 64, &limits).unwrap();
            assert!(r.read < good.len() as u64 + 2 * (limits.max_buffer as u64 + SPLIT_WINDOW as u64), "tail {t}: {} read", r.read);
            assert!(parts.last().unwrap().start <= good.len() as u64 && parts.len() > 1, "tail {t}: {parts:?}");
            let whole = LogReader::open(&log[..], None).unwrap().for_each(&limits, |_| -> Result<(), LogError> { Ok(()) });
            let (_, got) = by_parts(&log, Format::Sse, 64, &limits);
            match whole {
                Ok(_) => assert_eq!(got.unwrap(), collect_with(&log, &limits).unwrap(), "tail {t}"),
                Err(e) => assert_eq!(got.unwrap_err(), e, "tail {t}"),
            }
        }
    }

    fn collect_with(data: &[u8], limits: &Limits) -> Result<Events, LogError> {
        let mut out = Vec::new();
        LogReader::open(data, None)?.for_each(limits, |ev| -> Result<(), LogError> {
            out.push((ev.index, ev.offset, ev.json.to_vec()));
            Ok(())
        })?;
        Ok(out)
    }

    /// A part read in chunks from a reader gives the events, frame counts and errors of
    /// the part read from memory, in any chunking.
    #[test]
    fn parts_read_in_chunks_are_parts_read_whole() {
        let mut long = sse_log().repeat(30);
        long.extend_from_slice(format!("data: {}\n\n", "x".repeat(300)).as_bytes());
        long.extend(sse_log().repeat(5));
        let cr: Vec<u8> = sse_log().repeat(30).iter().map(|&b| if b == b'\n' { b'\r' } else { b }).collect();
        let mut pb = proto_log().repeat(40);
        pb.extend_from_slice(&[0, 0, 0, 9, 1]);
        for (log, format) in [(&long, Format::Sse), (&cr, Format::Sse), (&jsonl_log().repeat(9), Format::Jsonl), (&pb, Format::Protobuf)] {
            for max_buffer in [200, 1 << 20] {
                let parts = split(&mut Cursor::new(&log[..]), log.len() as u64, format, 5, &Limits { max_buffer, ..Limits::default() }).unwrap();
                for chunk_size in [1, 7, 64, 1 << 16] {
                    let limits = Limits { max_buffer, chunk_size, ..Limits::default() };
                    for p in &parts {
                        let data = &log[p.start as usize..p.end as usize];
                        let mut whole = Vec::new();
                        let want = for_each_in_part(data, format, *p, &limits, |ev| -> Result<(), LogError> {
                            whole.push((ev.index, ev.offset, ev.json.to_vec()));
                            Ok(())
                        });
                        let (mut got, mut read) = (Vec::new(), 0);
                        let r = for_each_in_part_read(&mut Cursor::new(data), format, *p, &limits, &mut LineSearch(|ev: Event<'_>| -> Result<(), LogError> {
                            got.push((ev.index, ev.offset, ev.json.to_vec()));
                            Ok(())
                        }), |n| read += n);
                        assert_eq!(got, whole, "{format:?} {p:?} chunk {chunk_size}");
                        match (r, want) {
                            (Ok(a), Ok(b)) => {
                                assert_eq!((a.frames, a.events, a.bytes), (b.frames, b.events, b.bytes));
                                assert_eq!(read as u64, a.bytes);
                            }
                            (a, b) => assert_eq!(a.unwrap_err(), b.unwrap_err()),
                        }
                    }
                }
            }
        }
    }

    /// A sink's own error (`Stop`), beside the log's.
    #[derive(Debug, PartialEq)]
    enum Mine {
        Stop(u64),
        Log(LogError),
    }

    impl From<LogError> for Mine {
        fn from(e: LogError) -> Self {
            Mine::Log(e)
        }
    }

    /// A reader ahead that runs the framer's loop in a function of its own
    /// (`ReadAhead::run`) gets the events, offsets, indices, errors and summary of the line
    /// search alone, a sink error anywhere (in a run or not) stopping the part there:
    /// random SSE parts (LF, CR, CRLF, fields, several data lines, blank lines, frames
    /// over the limit, a cut last frame), the reader knowing every payload's end.
    #[test]
    fn parts_read_ahead_in_runs_are_those_of_the_line_search() {
        use crate::test_rng::Rng;
        type Seen = Vec<(u64, u64, Vec<u8>)>;
        struct Rows {
            seen: Seen,
            stop_at: u64,
            runs: usize,
            taken: usize,
        }
        impl Rows {
            fn push(&mut self, ev: Event<'_>) -> Result<(), Mine> {
                self.seen.push((ev.index, ev.offset, ev.json.to_vec()));
                if ev.index == self.stop_at { Err(Mine::Stop(ev.index)) } else { Ok(()) }
            }
        }
        impl ReadAhead<Mine> for Rows {
            fn end(&mut self, rest: &[u8]) -> Option<usize> {
                Some(memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len()))
            }
            fn taken(&mut self, ev: Event<'_>) -> Result<(), Mine> {
                self.taken += 1;
                self.push(ev)
            }
            fn event(&mut self, ev: Event<'_>) -> Result<(), Mine> {
                self.push(ev)
            }
            #[inline(never)]
            fn run<T>(&mut self, go: impl FnOnce(&mut Self) -> T) -> T {
                self.runs += 1;
                go(self)
            }
        }
        let (mut runs, mut taken) = (0, 0);
        for seed in 1..=300u64 {
            let mut rng = Rng((seed * 0x9e37_79b9) | 1);
            let mut log: Vec<u8> = Vec::new();
            for _ in 0..rng.below(30) + 1 {
                let nl: &[u8] = rng.pick(&[&b"\n"[..], b"\n", b"\n", b"\n", b"\r\n", b"\r"]);
                for _ in 0..rng.below(4) / 3 {
                    log.extend_from_slice(rng.pick(&[&b": c"[..], b"event: e", b"id: 5", b"retry: 30", b"x"]));
                    log.extend_from_slice(nl);
                }
                for _ in 0..rng.below(5) / 3 + 1 {
                    log.extend_from_slice(b"data: ");
                    let n = rng.pick(&[&0usize, &3, &20, &70][..]);
                    log.extend((0..*n).map(|k| b"{\"a\":1}"[k % 7]));
                    log.extend_from_slice(nl);
                }
                if rng.below(8) > 0 {
                    log.extend_from_slice(nl);
                }
            }
            log.truncate(log.len() - rng.below(4).min(log.len()));
            let limits = Limits { max_buffer: 80, ..Limits::default() };
            let start = (0..log.len()).find(|&k| k > 0 && log[k - 1] == b'\n' && log.get(k - 2) == Some(&b'\n')).filter(|_| rng.below(2) == 0);
            let part = Part { start: start.unwrap_or(0) as u64, end: log.len() as u64 };
            let data = &log[part.start as usize..];
            let stop_at = if rng.below(3) == 0 { rng.below(20) as u64 } else { u64::MAX };
            let mut plain = Rows { seen: Vec::new(), stop_at, runs: 0, taken: 0 };
            let want = for_each_in_part(data, Format::Sse, part, &limits, |ev| plain.push(ev));
            let mut rows = Rows { seen: Vec::new(), stop_at, runs: 0, taken: 0 };
            let got = for_each_in_part_ahead(data, Format::Sse, part, &limits, &mut rows);
            assert_eq!(rows.seen, plain.seen, "seed {seed}");
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!((g.events, g.frames, g.bytes), (w.events, w.frames, w.bytes), "seed {seed}"),
                (g, w) => assert_eq!(g.err(), w.err(), "seed {seed}"),
            }
            runs += rows.runs;
            taken += rows.taken;
        }
        // (The runs were the reader's, and frames were taken in them.)
        assert!(runs > 300 && taken > 400, "{runs} runs, {taken} frames taken");
    }

    #[test]
    fn sink_errors_stop_the_log() {
        for log in [sse_log(), proto_log()] {
            let mut seen = Vec::new();
            let r = LogReader::open(&log[..], None).unwrap().for_each(&Limits::default(), |ev| {
                seen.push(ev.index);
                if ev.index == 0 { Err(Mine::Stop(ev.index)) } else { Ok(()) }
            });
            assert!(matches!(r, Err(Mine::Stop(0))));
            assert_eq!(seen, vec![0]);
        }
        let r: Result<Summary, Mine> = LogReader::open(&b"\x89PNG"[..], None).unwrap().for_each(&Limits::default(), |_| Ok(()));
        assert!(matches!(r, Err(Mine::Log(LogError::UnknownFormat { .. }))));
    }
}
