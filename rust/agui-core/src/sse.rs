//! Server-Sent Events: an incremental WHATWG `text/event-stream` parser over bytes,
//! a batch builder that turns dispatched frames into one JSON array for bulk
//! decoding, and a minimal framing writer.
//!
//! Parsing rules (WHATWG HTML, "Parsing an event stream"), with the two documented
//! choices of this project:
//! - lines end with CRLF, LF or CR; a CR at the end of a chunk followed by an LF at
//!   the start of the next one is one line end;
//! - a UTF-8 byte-order mark at the very start of the stream is skipped, also when it
//!   is split across chunks; a BOM later in the stream is data;
//! - `data` lines are joined with `\n`; one space after the colon is removed;
//!   comment lines (`:`) and unknown fields are ignored; `event`, `id` (without NUL)
//!   and `retry` (ASCII digits only) are tracked;
//! - an empty line dispatches the event if it has data (an empty `data:` line counts);
//! - deviation from the spec, like the TypeScript reference: `finish()` dispatches a
//!   final event that lacks its closing blank line;
//! - the payload bytes are handed out unchanged; [`Batch`] replaces invalid UTF-8
//!   with U+FFFD (what the reference's `TextDecoder` does) since the data must still be
//!   parsed as JSON.
//!
//! Scanning uses `memchr` for line ends, so the common case does no per-byte work
//! in Rust code, and single-line events are handed out without copying.

use memchr::{memchr, memchr2};

/// Default maximum buffered size of one event: 10 MiB, like the reference client.
pub const DEFAULT_MAX_BUFFER: usize = 10 * 1024 * 1024;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// What went wrong while framing. Only limits can fail at this layer: any byte
/// sequence is a valid event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseErrorKind {
    /// The current event (data buffer plus incomplete line) grew beyond the limit.
    BufferLimit,
}

impl SseErrorKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            SseErrorKind::BufferLimit => "buffer_limit",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseError {
    pub kind: SseErrorKind,
    pub message: String,
    /// Index the offending frame would have had.
    pub frame_index: u64,
    /// Absolute byte offset where the offending event starts.
    pub offset: u64,
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (frame {}, offset {})", self.message, self.frame_index, self.offset)
    }
}

impl std::error::Error for SseError {}

/// One dispatched event, borrowed from the parser or the chunk being fed.
#[derive(Debug)]
pub struct Frame<'a> {
    /// 0-based index among the dispatched frames of the stream.
    pub index: u64,
    /// Absolute byte offset (BOM included) of the event's first `data` line.
    pub offset: u64,
    /// The joined data lines, raw bytes (may hold invalid UTF-8).
    pub data: &'a [u8],
    /// The `event` field, `None` when absent (the spec's default type "message").
    pub event: Option<&'a [u8]>,
    /// The last event id in effect for this event (spec: persists across events).
    pub id: &'a str,
}

/// A [`Frame`] that owns its bytes (to keep frames past the callback: tests, fuzzing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedFrame {
    pub index: u64,
    pub offset: u64,
    pub data: Vec<u8>,
    pub event: Option<Vec<u8>>,
    pub id: String,
}

impl Frame<'_> {
    pub fn to_owned_frame(&self) -> OwnedFrame {
        OwnedFrame {
            index: self.index,
            offset: self.offset,
            data: self.data.to_vec(),
            event: self.event.map(<[u8]>::to_vec),
            id: self.id.to_owned(),
        }
    }
}

/// Where the current event's data lives: still inside the chunk being fed (no copy
/// for the common single-line event), or copied into the parser.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Data {
    None,
    /// Range of the chunk currently being fed.
    Slice(usize, usize),
    /// In `SseParser::data`.
    Owned,
}

/// A reader ahead of [`SseParser::feed_ahead`]'s line search, and where the frames go.
/// Its methods are called from the framer's loop (a trait, not closures, so that they
/// can be inlined there: the frames read ahead are most of a log).
pub trait Ahead {
    /// At a line that starts a frame with `data: `: `rest` is the bytes after `data: ` to
    /// the chunk's end; `Some(n)` when a payload this reader recognises ends after `n`
    /// bytes, none of them a line break.
    fn end(&mut self, rest: &[u8]) -> Option<usize>;
    /// A frame that [`Ahead::end`] found the end of (and that the framer took).
    fn taken(&mut self, frame: Frame<'_>);
    /// Every other frame.
    fn frame(&mut self, frame: Frame<'_>);
    /// The framer's loop over the frames read ahead from one place on ([`AheadRun::go`],
    /// which calls `end` and `taken`): by default inlined where the framer is. A reader
    /// may run it in an out-of-line function of its own with `end` and `taken` inlined
    /// there: one call a run of frames instead of two calls a frame.
    #[inline(always)]
    fn run(&mut self, frames: &mut AheadRun<'_>)
    where
        Self: Sized,
    {
        frames.go(self)
    }
}

/// The frames read ahead from one place of a chunk on ([`Ahead::run`]): the framer's
/// loop over them ([`AheadRun::go`]), what it needs of the framer's state and what it
/// leaves (the place the line search goes on from, the frames taken).
pub struct AheadRun<'a> {
    chunk: &'a [u8],
    /// Where the next frame starts in `chunk`.
    i: usize,
    /// The chunk's offset in the stream.
    base: u64,
    /// The next frame's index.
    index: u64,
    max_buffer: usize,
    /// The first frame's `event` field (the frames after it have none).
    event: Option<&'a [u8]>,
    /// The last event id of every frame of the run.
    id: &'a str,
    /// Where the last frame taken starts in `chunk`.
    last: usize,
}

impl AheadRun<'_> {
    /// Frames that are one `data: ` line and a blank line, their payloads' ends known to
    /// the reader ahead, handed to `r.taken` one after another (most frames of a log are
    /// these), as the line search would dispatch each: the same frame, offset, index,
    /// `event` and `id`. Stops at the first frame that is not one (`end` says `None`, no
    /// `\n\n` after the payload, or over the limit: the line search frames it, and
    /// reports the limit).
    #[inline(always)]
    pub fn go<R: Ahead>(&mut self, r: &mut R) {
        let (chunk, mut i, mut index) = (self.chunk, self.i, self.index);
        while let Some(rest) = chunk[i..].strip_prefix(b"data: ") {
            let Some(n) = r.end(rest) else { break };
            let end = i + 6 + n;
            let Some(next) = blank_line_after(chunk, end) else { break };
            if end - i > self.max_buffer {
                break;
            }
            debug_assert!(memchr2(b'\n', b'\r', &chunk[i..end]).is_none(), "a line break in a payload `ahead` read");
            // (Stored before the call, and the event taken: ~0.4M fewer than stored after it.)
            self.last = i;
            r.taken(Frame { index, offset: self.base + i as u64, data: &chunk[i + 6..end], event: self.event.take(), id: self.id });
            index += 1;
            i = next;
        }
        (self.i, self.index) = (i, index);
    }
}

/// Where the next line starts when a line end and a blank line follow `chunk[end]`
/// (each line end LF, CRLF or CR); `None` when they do not, or when the chunk ends in a
/// CR that an LF of the next chunk may complete (the line search decides that one).
#[inline(always)]
fn blank_line_after(chunk: &[u8], end: usize) -> Option<usize> {
    if chunk.get(end..end + 2) == Some(b"\n\n") {
        return Some(end + 2); // the common case first: one compare
    }
    let line_end = |j: usize| match (chunk.get(j), chunk.get(j + 1)) {
        (Some(b'\n'), _) => Some(j + 1),
        (Some(b'\r'), Some(b'\n')) => Some(j + 2),
        (Some(b'\r'), Some(_)) => Some(j + 1),
        _ => None,
    };
    line_end(line_end(end)?)
}

/// No reader ahead: [`SseParser::feed`]'s frames, all of them to the closure.
struct LineSearch<F>(F);

impl<F: FnMut(Frame<'_>)> Ahead for LineSearch<F> {
    #[inline(always)]
    fn end(&mut self, _: &[u8]) -> Option<usize> {
        None
    }
    #[inline(always)]
    fn taken(&mut self, frame: Frame<'_>) {
        (self.0)(frame)
    }
    #[inline(always)]
    fn frame(&mut self, frame: Frame<'_>) {
        (self.0)(frame)
    }
}

/// Incremental event-stream parser. Feed chunks of any size; frames are handed to
/// a callback as soon as their blank line arrives.
pub struct SseParser {
    max_buffer: usize,
    /// Absolute offset of the next byte to be fed.
    pos: u64,
    /// BOM bytes matched at stream start; `None` once the start is decided.
    bom_matched: Option<usize>,
    /// Incomplete line carried between chunks.
    line: Vec<u8>,
    /// Absolute offset of the current (incomplete) line.
    line_start: u64,
    /// The previous chunk ended with CR: a leading LF belongs to that line end.
    after_cr: bool,
    data_state: Data,
    data: Vec<u8>,
    event_type: Option<Vec<u8>>,
    id_buf: String,
    /// `id_buf` changed since the last dispatch (saves a compare per event).
    id_dirty: bool,
    last_event_id: String,
    retry: Option<u64>,
    frame_start: u64,
    frames: u64,
    failed: Option<SseError>,
    finished: bool,
    /// JSON Lines instead of an event stream: every non-blank line is one frame.
    lines: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BUFFER)
    }
}

impl SseParser {
    pub fn new(max_buffer: usize) -> Self {
        SseParser {
            max_buffer,
            pos: 0,
            bom_matched: Some(0),
            line: Vec::new(),
            line_start: 0,
            after_cr: false,
            data_state: Data::None,
            data: Vec::new(),
            event_type: None,
            id_buf: String::new(),
            id_dirty: false,
            last_event_id: String::new(),
            retry: None,
            frame_start: 0,
            frames: 0,
            failed: None,
            finished: false,
            lines: false,
        }
    }

    /// The same parser for JSON Lines (a recorded log of one JSON event per line): each
    /// line that is not blank is a frame whose data is the line; there are no fields,
    /// comments or blank-line dispatch. Line ends, the byte-order mark, offsets, frame
    /// indices and the buffer limit (one line) are those of the event stream, so every
    /// consumer of frames reads both.
    pub fn lines(mut self) -> Self {
        self.lines = true;
        self
    }

    /// Whether this parser reads JSON Lines ([`SseParser::lines`]).
    pub fn is_lines(&self) -> bool {
        self.lines
    }

    /// A parser for a part of a stream that starts at byte `offset`, at an event
    /// boundary (after a blank line): offsets are those of the whole stream, frame
    /// indices count from 0 (the caller adds the frames before the part), and no
    /// byte-order mark is looked for (one there is data, as mid-stream).
    pub fn at(max_buffer: usize, offset: u64) -> Self {
        SseParser { pos: offset, bom_matched: None, line_start: offset, frame_start: offset, ..Self::new(max_buffer) }
    }

    /// The last event id of the stream (spec: set at every dispatch point), for the
    /// `Last-Event-ID` header of a reconnect.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The last valid `retry` value (milliseconds), if any.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Frames dispatched so far.
    pub fn frame_count(&self) -> u64 {
        self.frames
    }

    /// Bytes fed so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    pub fn max_buffer(&self) -> usize {
        self.max_buffer
    }

    /// Bytes buffered for the current event (data so far plus the incomplete line).
    pub fn buffered(&self) -> usize {
        self.data_len(&[]) + self.line.len()
    }

    fn data_len(&self, chunk: &[u8]) -> usize {
        match self.data_state {
            Data::None => 0,
            Data::Slice(s, e) => {
                debug_assert!(e <= chunk.len());
                e - s
            }
            Data::Owned => self.data.len(),
        }
    }

    fn limit_error(&mut self, line_offset: u64) -> SseError {
        let offset = if self.data_state == Data::None { line_offset } else { self.frame_start };
        let err = SseError {
            kind: SseErrorKind::BufferLimit,
            message: if self.lines {
                format!("JSON Lines line exceeded maximum limit of {} bytes", self.max_buffer)
            } else {
                format!("SSE buffer size exceeded maximum limit of {} bytes", self.max_buffer)
            },
            frame_index: self.frames,
            offset,
        };
        self.failed = Some(err.clone());
        // A failed parser keeps only its error (every later call returns it): what it
        // buffered is never read again, and data still pointing into the chunk being fed
        // must not outlive that chunk (`buffered` read it as a slice of a gone chunk).
        self.data_state = Data::None;
        self.data.clear();
        self.line.clear();
        err
    }

    /// Feed one chunk; `sink` receives every frame completed by it, in order. On a
    /// buffer-limit error the frames before it have already been handed out and the
    /// parser stays failed (every later call returns the same error).
    pub fn feed<F: FnMut(Frame<'_>)>(&mut self, chunk: &[u8], sink: F) -> Result<(), SseError> {
        self.feed_ahead(chunk, &mut LineSearch(sink))
    }

    /// [`SseParser::feed`] with a reader ahead of the line search: at a line that starts a
    /// frame with `data: `, `ahead` gets the bytes after `data: ` to the chunk's end and
    /// may say where a payload it recognises ends (`Some(n)`: `n` bytes, none of them a
    /// line break). When `\n\n` follows those `n` bytes the frame is exactly that one
    /// `data` line and a blank line, and it is dispatched from there with no line search:
    /// the same frame, offsets, index and state (`id`/`event` fields before it included)
    /// as the search would give. Anything else (`None`, CR, more lines) is framed as ever.
    /// Such a frame goes to [`Ahead::taken`], every other to [`Ahead::frame`] (in stream
    /// order, one or the other); the loop over such frames runs where the reader says
    /// ([`Ahead::run`]).
    pub fn feed_ahead<R: Ahead>(&mut self, chunk: &[u8], r: &mut R) -> Result<(), SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.finished {
            // Feeding after finish() starts nothing new: a stream has one end.
            return Ok(());
        }
        let base = self.pos;
        self.pos += chunk.len() as u64;
        let mut i = 0usize;

        // Byte-order mark at stream start, possibly split across chunks.
        if let Some(m0) = self.bom_matched {
            let mut m = m0;
            while m < 3 && i < chunk.len() && chunk[i] == BOM[m] {
                m += 1;
                i += 1;
            }
            if m == 3 {
                self.bom_matched = None;
                self.line_start = 3;
            } else if i < chunk.len() {
                // Not a BOM after all: the bytes matched so far are ordinary line data
                // (none of them is a line end). Those from earlier chunks go to the line
                // buffer; those from this chunk are re-read from its start.
                self.bom_matched = None;
                self.line.extend_from_slice(&BOM[..m0]);
                self.line_start = 0;
                i = 0;
            } else {
                self.bom_matched = Some(m);
                return Ok(());
            }
        }

        if self.after_cr && i < chunk.len() {
            if chunk[i] == b'\n' {
                i += 1;
                self.line_start = base + i as u64;
            }
            self.after_cr = false;
        }

        while i < chunk.len() {
            // Frames that are one `data: ` line and a blank line, their payloads' ends
            // known to the reader ahead: dispatched as the two lines below would
            // dispatch each (one after another: most frames of a log are these).
            if self.data_state == Data::None && self.line.is_empty() && !self.lines {
                // (While `id_dirty`, the frames' id is `id_buf`: `last_event_id` is set to
                // it below, when a frame was taken, as `frame` sets it.)
                let id = if self.id_dirty { &self.id_buf } else { &self.last_event_id };
                let mut run =
                    AheadRun { chunk, i, base, index: self.frames, max_buffer: self.max_buffer, event: self.event_type.as_deref(), id, last: i };
                r.run(&mut run);
                let AheadRun { i: next, index, last, .. } = run;
                if index > self.frames {
                    // (`frame` and `dispatched`, less what these frames leave as it was: no
                    // data kept, and an event type only before the first, from an `event:` line.)
                    self.frame_start = base + last as u64;
                    self.frames = index;
                    if self.id_dirty {
                        self.last_event_id.clone_from(&self.id_buf);
                        self.id_dirty = false;
                    }
                    if self.event_type.is_some() {
                        self.event_type = None;
                    }
                }
                i = next;
                self.line_start = base + i as u64;
                if i == chunk.len() {
                    break;
                }
            }
            // Every other line of a stream is the blank one ending an event: looked at
            // before memchr, whose set-up costs more than the one byte.
            let rel = if matches!(chunk[i], b'\n' | b'\r') { Some(0) } else { memchr2(b'\n', b'\r', &chunk[i..]) };
            let Some(rel) = rel else {
                // Incomplete line: keep it for the next chunk.
                if self.line.is_empty() {
                    self.line_start = base + i as u64;
                }
                self.line.extend_from_slice(&chunk[i..]);
                break;
            };
            let j = i + rel;
            if self.line.is_empty() {
                let start = base + i as u64;
                self.line_start = start;
                if self.data_len(chunk) + (j - i) > self.max_buffer {
                    return Err(self.limit_error(start));
                }
                self.process_line_in_chunk(chunk, i, j, &mut |f| r.frame(f));
            } else {
                self.line.extend_from_slice(&chunk[i..j]);
                if self.data_len(chunk) + self.line.len() > self.max_buffer {
                    let start = self.line_start;
                    return Err(self.limit_error(start));
                }
                let line = std::mem::take(&mut self.line);
                let start = self.line_start;
                self.process_owned_line(&line, start, &mut |f| r.frame(f));
                self.line = line;
                self.line.clear();
            }
            i = j + 1;
            if chunk[j] == b'\r' {
                if i < chunk.len() {
                    if chunk[i] == b'\n' {
                        i += 1;
                    }
                } else {
                    self.after_cr = true;
                }
            }
            self.line_start = base + i as u64;
        }

        // Data still pointing into this chunk must be copied before it goes away.
        if let Data::Slice(s, e) = self.data_state {
            self.data.clear();
            self.data.extend_from_slice(&chunk[s..e]);
            self.data_state = Data::Owned;
        }
        if self.data_len(chunk) + self.line.len() > self.max_buffer {
            let start = self.line_start;
            return Err(self.limit_error(start));
        }
        Ok(())
    }

    /// End of stream: the incomplete last line is processed and a final event without
    /// its blank line is dispatched (as the TypeScript reference does).
    pub fn finish<F: FnMut(Frame<'_>)>(&mut self, mut sink: F) -> Result<(), SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if let Some(m) = self.bom_matched.take() {
            // The stream ended inside what looked like a BOM: those bytes are a line.
            self.line.extend_from_slice(&BOM[..m]);
            self.line_start = 0;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            let start = self.line_start;
            self.process_owned_line(&line, start, &mut sink);
        }
        self.dispatch(&[], &mut sink);
        Ok(())
    }

    fn process_line_in_chunk<F: FnMut(Frame<'_>)>(&mut self, chunk: &[u8], s: usize, e: usize, sink: &mut F) {
        let line = &chunk[s..e];
        if self.lines {
            if !is_blank(line) {
                self.frame_start = self.line_start;
                self.data_state = Data::Slice(s, e);
                self.dispatch(chunk, sink);
            }
            return;
        }
        if line.is_empty() {
            self.dispatch(chunk, sink);
            return;
        }
        // Fast path: `data:` lines are the bulk of an AG-UI stream. Byte patterns, not
        // slice equality, which would call memcmp for every line.
        let (is_data, field, vs) = if let [b'd', b'a', b't', b'a', b':', rest @ ..] = line {
            (true, &line[..4], if let [b' ', ..] = rest { 6 } else { 5 })
        } else {
            match split_field(line) {
                Some((f, vs)) => (matches!(f, [b'd', b'a', b't', b'a']), f, vs),
                None => return,
            }
        };
        if is_data {
            let vstart = s + vs;
            let start = self.line_start;
            match self.data_state {
                Data::None => {
                    self.frame_start = start;
                    self.data_state = Data::Slice(vstart, e);
                }
                Data::Slice(a, b) => {
                    self.data.clear();
                    self.data.extend_from_slice(&chunk[a..b]);
                    self.data.push(b'\n');
                    self.data.extend_from_slice(&chunk[vstart..e]);
                    self.data_state = Data::Owned;
                }
                Data::Owned => {
                    self.data.push(b'\n');
                    self.data.extend_from_slice(&chunk[vstart..e]);
                }
            }
        } else {
            self.other_field(field, &line[vs..]);
        }
    }

    fn process_owned_line<F: FnMut(Frame<'_>)>(&mut self, line: &[u8], start: u64, sink: &mut F) {
        if self.lines {
            if !is_blank(line) {
                self.frame_start = start;
                self.data.clear();
                self.data.extend_from_slice(line);
                self.data_state = Data::Owned;
                self.dispatch(&[], sink);
            }
            return;
        }
        if line.is_empty() {
            self.dispatch(&[], sink);
            return;
        }
        let (field, vs) = match split_field(line) {
            Some(x) => x,
            None => return,
        };
        if matches!(field, [b'd', b'a', b't', b'a']) {
            // An owned line only occurs at a chunk's first line or at finish(), so no
            // data can still be pointing into a chunk here.
            debug_assert!(!matches!(self.data_state, Data::Slice(..)));
            match self.data_state {
                Data::None => {
                    self.frame_start = start;
                    self.data.clear();
                }
                _ => self.data.push(b'\n'),
            }
            self.data.extend_from_slice(&line[vs..]);
            self.data_state = Data::Owned;
        } else {
            self.other_field(field, &line[vs..]);
        }
    }

    fn other_field(&mut self, field: &[u8], value: &[u8]) {
        match field {
            b"event" => self.event_type = Some(value.to_vec()),
            // An id containing NUL is ignored (spec).
            b"id" if memchr(0, value).is_none() => {
                self.id_buf = String::from_utf8_lossy(value).into_owned();
                self.id_dirty = true;
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Saturate absurd values instead of failing: the field is advisory.
                let mut n: u64 = 0;
                for d in value {
                    n = n.saturating_mul(10).saturating_add(u64::from(d - b'0'));
                }
                self.retry = Some(n);
            }
            _ => {}
        }
    }

    fn dispatch<F: FnMut(Frame<'_>)>(&mut self, chunk: &[u8], sink: &mut F) {
        match self.data_state {
            Data::None => {
                if self.id_dirty {
                    self.last_event_id.clone_from(&self.id_buf);
                    self.id_dirty = false;
                }
                self.event_type = None;
            }
            Data::Slice(s, e) => self.emit(&chunk[s..e], sink),
            Data::Owned => {
                // (Taken for the call and put back: its capacity is kept.)
                let data = std::mem::take(&mut self.data);
                self.emit(&data, sink);
                self.data = data;
            }
        }
    }

    /// Dispatch an event whose data is `data` (of the chunk or the parser's buffer):
    /// [`SseParser::dispatch`]'s one way of handing a frame out (and, in its two steps,
    /// the frame read ahead's, inlined into the loop: a call of ~60 instructions an
    /// event there, most of a log's frames).
    #[inline(always)]
    fn emit<F: FnMut(Frame<'_>)>(&mut self, data: &[u8], sink: &mut F) {
        sink(self.frame(data));
        self.dispatched();
    }

    /// The frame of the event being dispatched, its data `data`.
    #[inline(always)]
    fn frame<'a>(&'a mut self, data: &'a [u8]) -> Frame<'a> {
        if self.id_dirty {
            self.last_event_id.clone_from(&self.id_buf);
            self.id_dirty = false;
        }
        Frame {
            index: self.frames,
            offset: self.frame_start,
            data,
            event: self.event_type.as_deref(),
            id: &self.last_event_id,
        }
    }

    /// After a frame is handed out: the next event starts.
    #[inline(always)]
    fn dispatched(&mut self) {
        self.frames += 1;
        self.data_state = Data::None;
        self.event_type = None;
    }
}

/// A JSON Lines line holding only JSON whitespace (skipped, as JSON Lines readers do).
#[inline]
fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t'))
}

/// Split a non-empty line into (field name, start of value). `None` for comments.
#[inline]
fn split_field(line: &[u8]) -> Option<(&[u8], usize)> {
    if line[0] == b':' {
        return None;
    }
    match memchr(b':', line) {
        Some(c) => {
            let vs = if line.get(c + 1) == Some(&b' ') { c + 2 } else { c + 1 };
            Some((&line[..c], vs))
        }
        None => Some((line, line.len())),
    }
}

/// Frames collected for bulk decoding: the payloads joined as one JSON array
/// `[p0,p1,...]` (valid UTF-8, invalid sequences replaced by U+FFFD), with each
/// payload's span in that buffer and its stream offset.
#[derive(Debug, Clone)]
pub struct Batch {
    pub buf: Vec<u8>,
    pub spans: Vec<(usize, usize)>,
    pub offsets: Vec<u64>,
    pub first_index: u64,
    /// Every payload is structurally one JSON value (balanced, no top-level comma),
    /// so a successful decode of `buf` yields exactly one element per frame (known once
    /// the batch is closed, as are `too_deep` and the number counts).
    pub balanced: bool,
    /// Batch-relative indices of frames that may need the legacy (0.x) conversion.
    pub candidates: Vec<usize>,
    /// Batch-relative indices (sorted) of frames nested deeper than `max_depth`: they
    /// must not reach a parser that recurses (their nesting is the caller's error).
    pub too_deep: Vec<usize>,
    /// Deepest nesting accepted (see [`crate::limits`]).
    pub max_depth: usize,
    /// Number literals seen by the structural check (see [`Shape`]).
    pub floats: u64,
    pub hard_floats: u64,
    pub error: Option<SseError>,
    check: bool,
    want_candidates: bool,
    closed: bool,
}

impl Batch {
    /// `check`: run the structural check needed before decoding `buf` as one array;
    /// `want_candidates`: flag frames that mention legacy shapes.
    pub fn new(first_index: u64, check: bool, want_candidates: bool) -> Self {
        Batch {
            buf: vec![b'['],
            spans: Vec::new(),
            offsets: Vec::new(),
            first_index,
            balanced: true,
            candidates: Vec::new(),
            too_deep: Vec::new(),
            max_depth: crate::limits::DEFAULT_MAX_DEPTH,
            floats: 0,
            hard_floats: 0,
            error: None,
            check,
            want_candidates,
            closed: false,
        }
    }

    /// The same batch checking frames against `max_depth` instead of the default.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Close the joined array (idempotent); no frame may be pushed afterwards. With
    /// `check`, every payload is scanned here ([`scan_value`]), but a lone payload no
    /// longer than `max_depth` bytes: it cannot nest deeper (every level takes a byte), and
    /// as the only item it is decoded by itself, so its shape is not needed (the
    /// one-frame call of a live stream, whose decode the scan would double).
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.buf.push(b']');
        self.closed = true;
        let lone = self.spans.len() == 1 && self.spans[0].1 - self.spans[0].0 <= self.max_depth;
        if !self.check || lone {
            return;
        }
        for k in 0..self.spans.len() {
            let (s, e) = self.spans[k];
            // Every frame is scanned (not only while the batch is balanced): the depth
            // limit holds for each of them.
            let shape = scan_value(&self.buf[s..e]);
            if shape.depth as usize > self.max_depth {
                self.too_deep.push(k);
                self.balanced = false;
            }
            self.balanced &= shape.single;
            self.floats += shape.floats as u64;
            self.hard_floats += shape.hard_floats as u64;
        }
    }

    /// Empty again, for the frames from `first_index` on, as [`Batch::new`] and
    /// [`Batch::with_max_depth`] make it (its buffers keep their capacity: a stream's batch
    /// is reused call after call).
    pub fn renew(&mut self, first_index: u64, check: bool, want_candidates: bool, max_depth: usize) {
        self.check = check;
        self.want_candidates = want_candidates;
        self.max_depth = max_depth;
        self.buf.clear();
        self.buf.push(b'[');
        self.spans.clear();
        self.offsets.clear();
        self.first_index = first_index;
        self.balanced = true;
        self.candidates.clear();
        self.too_deep.clear();
        self.floats = 0;
        self.hard_floats = 0;
        self.error = None;
        self.closed = false;
    }

    pub fn payload(&self, i: usize) -> &[u8] {
        let (s, e) = self.spans[i];
        &self.buf[s..e]
    }

    pub fn push(&mut self, frame: &Frame<'_>) {
        debug_assert!(!self.closed);
        if !self.spans.is_empty() {
            self.buf.push(b',');
        }
        let s = self.buf.len();
        match std::str::from_utf8(frame.data) {
            Ok(_) => self.buf.extend_from_slice(frame.data),
            Err(_) => self.buf.extend_from_slice(String::from_utf8_lossy(frame.data).as_bytes()),
        }
        let e = self.buf.len();
        if self.want_candidates && maybe_legacy(&self.buf[s..e]) {
            self.candidates.push(self.spans.len());
        }
        self.spans.push((s, e));
        self.offsets.push(frame.offset);
    }
}

impl Batch {
    /// Whether the batch should be decoded with a float hook (Python's own `float`)
    /// rather than msgspec's number parser. msgspec parses a float with a decimal
    /// exponent beyond about ±290 on an exact big-decimal fallback that costs ~10 µs
    /// (measured: `1.5e+300`, `1.7976931348623157e+308`), while the hook costs ~60 ns
    /// more than msgspec's fast path on an ordinary float. Both give the correctly
    /// rounded double, so the choice is a pure cost estimate: worth it when the hard
    /// numbers outweigh the hook's toll on the others.
    pub fn prefer_float_hook(&self) -> bool {
        self.hard_floats > 0 && self.hard_floats * 150 > self.floats
    }

    /// One plain decode call can take the whole joined array: structurally balanced, no
    /// buffer-limit error, no legacy candidates, no float hook wanted.
    pub fn is_plain(&self) -> bool {
        self.balanced && self.error.is_none() && self.candidates.is_empty() && !self.prefer_float_hook()
    }
}

/// What [`scan_value`] learns about one payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// See [`is_single_value`].
    pub single: bool,
    /// Number literals with a fraction or an exponent outside strings (approximate:
    /// counts `.` and exponent markers, so `1.5e3` counts twice).
    pub floats: u32,
    /// Exponents of magnitude 280 or more (`1e300`, `5e-324`): slow for msgspec.
    pub hard_floats: u32,
    /// Deepest nesting of arrays and objects reached (`[]` is 1), up to where the scan
    /// stopped.
    pub depth: u32,
}

/// Cheap structural test: strings closed, brackets balanced and never below zero, no
/// `,` or `:` at depth 0. Not a JSON validator: it only guarantees that, once the
/// joined array is valid JSON, each payload is exactly one of its elements (a payload
/// like `[1` followed by `2]` would otherwise merge two frames into one element).
pub fn is_single_value(p: &[u8]) -> bool {
    scan_value(p).single
}

/// Magnitude of the exponent starting at `p[i]` (after `e`/`E`), or None when no
/// digits follow (`true`, `false`, or not JSON).
#[inline]
fn exponent_at(p: &[u8], mut i: usize) -> Option<u32> {
    if i < p.len() && (p[i] == b'+' || p[i] == b'-') {
        i += 1;
    }
    let mut v: u32 = 0;
    let mut digits = 0;
    while i < p.len() && p[i].is_ascii_digit() {
        v = v.saturating_mul(10).saturating_add((p[i] - b'0') as u32);
        digits += 1;
        i += 1;
    }
    (digits > 0).then_some(v)
}

/// [`is_single_value`] plus the number statistics of [`Shape`], in the same pass.
pub fn scan_value(p: &[u8]) -> Shape {
    // Byte classes: 0 other, 1 quote, 2 backslash, 3 open, 4 close, 5 `,`/`:`, 6 blank,
    // 7 `.` and 8 `e`/`E` (outside strings: parts of numbers, or of true/false).
    // A table-driven loop: payload strings are short, so a per-string memchr call
    // costs more than it saves.
    const fn table() -> [u8; 256] {
        let mut t = [0u8; 256];
        t[b'"' as usize] = 1;
        t[b'\\' as usize] = 2;
        t[b'[' as usize] = 3;
        t[b'{' as usize] = 3;
        t[b']' as usize] = 4;
        t[b'}' as usize] = 4;
        t[b',' as usize] = 5;
        t[b':' as usize] = 5;
        t[b' ' as usize] = 6;
        t[b'\t' as usize] = 6;
        t[b'\n' as usize] = 6;
        t[b'\r' as usize] = 6;
        t[b'.' as usize] = 7;
        t[b'e' as usize] = 8;
        t[b'E' as usize] = 8;
        t
    }
    static CLASS: [u8; 256] = table();
    let mut depth: i64 = 0;
    let mut deepest: i64 = 0;
    let mut seen_value = false;
    let mut floats: u32 = 0;
    let mut hard: u32 = 0;
    let mut i = 0;
    let n = p.len();
    let not_single = |deepest: i64| Shape { single: false, floats: 0, hard_floats: 0, depth: deepest as u32 };
    while i < n {
        match CLASS[p[i] as usize] {
            7 => {
                seen_value = true;
                floats += 1;
            }
            8 => {
                seen_value = true;
                if let Some(e) = exponent_at(p, i + 1) {
                    floats += 1;
                    if e >= 280 {
                        hard += 1;
                    }
                }
            }
            0 | 2 => seen_value = true,
            1 => {
                seen_value = true;
                // String body: find the next `"` or `\\` eight bytes at a time.
                i += 1;
                loop {
                    match find_quote_or_backslash(p, i) {
                        Some(j) => i = j,
                        None => return not_single(deepest), // unterminated string
                    }
                    if p[i] == b'"' {
                        break;
                    }
                    i += 2; // backslash: the escaped byte cannot end the string
                }
            }
            3 => {
                depth += 1;
                deepest = deepest.max(depth);
                seen_value = true;
            }
            4 => {
                depth -= 1;
                if depth < 0 {
                    return not_single(deepest);
                }
            }
            5 if depth == 0 => return not_single(deepest),
            _ => {}
        }
        i += 1;
    }
    // An empty (or blank) payload would vanish from the array: `[` + `` + `]` is `[]`.
    Shape { single: depth == 0 && seen_value, floats, hard_floats: hard, depth: deepest.min(u32::MAX as i64) as u32 }
}

/// Index of the first `"` or `\\` at or after `i` (SWAR: strings in AG-UI payloads are
/// mostly short keys and ids, too short for memchr's setup to pay off).
#[inline]
fn find_quote_or_backslash(p: &[u8], mut i: usize) -> Option<usize> {
    if i >= p.len() {
        return None;
    }
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const QUOTES: u64 = LO * b'"' as u64;
    const BACKSLASHES: u64 = LO * b'\\' as u64;
    while i + 8 <= p.len() {
        let w = u64::from_le_bytes(p[i..i + 8].try_into().unwrap());
        let q = w ^ QUOTES;
        let b = w ^ BACKSLASHES;
        // Zero-byte detection; the lowest flagged byte is always a true match.
        let m = (q.wrapping_sub(LO) & !q & HI) | (b.wrapping_sub(LO) & !b & HI);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    p[i..].iter().position(|&c| c == b'"' || c == b'\\').map(|r| i + r)
}

/// A frame may carry a legacy (0.x) shape: a `THINKING_*` type, a `binary` content
/// part or a `null` the compatibility layer removes. A superset test on bytes, so the
/// common case skips the Python-side conversion entirely.
pub fn maybe_legacy(p: &[u8]) -> bool {
    use memchr::memmem;
    memmem::find(p, b"null").is_some()
        || memmem::find(p, b"THINKING_").is_some()
        || memmem::find(p, b"\"binary\"").is_some()
}

/// Parse a whole buffer (feed + finish) into one closed batch. A buffer-limit error is
/// stored in `Batch::error` together with the frames before it.
pub fn split_all(data: &[u8], max_buffer: usize, check: bool, want_candidates: bool) -> Batch {
    let mut p = SseParser::new(max_buffer);
    let mut b = Batch::new(0, check, want_candidates);
    let r = p.feed(data, |f| b.push(&f)).and_then(|_| p.finish(|f| b.push(&f)));
    if let Err(e) = r {
        b.error = Some(e);
    }
    b.close();
    b
}

/// Write one SSE event carrying `payload` (e.g. a JSON text): every line of the
/// payload becomes a `data:` line (so multi-line text round-trips), then a blank line.
pub fn write_event(out: &mut Vec<u8>, payload: &[u8]) {
    let mut rest = payload;
    loop {
        out.extend_from_slice(b"data: ");
        match memchr2(b'\n', b'\r', rest) {
            Some(j) => {
                out.extend_from_slice(&rest[..j]);
                out.push(b'\n');
                let skip = if rest[j] == b'\r' && rest.get(j + 1) == Some(&b'\n') { 2 } else { 1 };
                rest = &rest[j + skip..];
            }
            None => {
                out.extend_from_slice(rest);
                out.extend_from_slice(b"\n\n");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]], max: usize) -> (Vec<OwnedFrame>, Option<SseError>, SseParser) {
        let mut p = SseParser::new(max);
        let mut out = Vec::new();
        let mut push = |f: Frame<'_>| out.push(f.to_owned_frame());
        for c in chunks {
            if let Err(e) = p.feed(c, &mut push) {
                return (out, Some(e), p);
            }
        }
        let err = p.finish(&mut push).err();
        (out, err, p)
    }

    fn datas(chunks: &[&[u8]]) -> Vec<Vec<u8>> {
        run(chunks, DEFAULT_MAX_BUFFER).0.into_iter().map(|f| f.data).collect()
    }

    thread_local! {
        /// Frames handed to [`Ahead::taken`] (`state_after`'s reader).
        static TAKEN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Everything a parser tells about its stream after `chunks` (fed with `ahead` or
    /// without): frames, the error, and the state a reader goes on from.
    #[allow(clippy::type_complexity)]
    fn state_after(
        chunks: &[&[u8]],
        max: usize,
        offset: u64,
        ahead: Option<&dyn Fn(&[u8]) -> Option<usize>>,
    ) -> (Vec<OwnedFrame>, Option<SseError>, String, Option<u64>, u64, u64, usize) {
        let mut p = if offset == 0 { SseParser::new(max) } else { SseParser::at(max, offset) };
        struct Reader<'a>(&'a dyn Fn(&[u8]) -> Option<usize>, Vec<OwnedFrame>);
        impl Ahead for Reader<'_> {
            fn end(&mut self, rest: &[u8]) -> Option<usize> {
                (self.0)(rest)
            }
            // (The frames read ahead and the others, in one list: the order counts.)
            fn taken(&mut self, frame: Frame<'_>) {
                // A frame read ahead is one `data: ` line: its payload holds no line break.
                assert!(memchr2(b'\n', b'\r', frame.data).is_none(), "a line break in a frame read ahead");
                TAKEN.set(TAKEN.get() + 1);
                self.1.push(frame.to_owned_frame());
            }
            fn frame(&mut self, frame: Frame<'_>) {
                self.1.push(frame.to_owned_frame());
            }
        }
        let mut out = Vec::new();
        let mut err = None;
        for c in chunks {
            let r = match ahead {
                Some(a) => {
                    let mut reader = Reader(a, std::mem::take(&mut out));
                    let r = p.feed_ahead(c, &mut reader);
                    out = reader.1;
                    r
                }
                None => p.feed(c, |f: Frame<'_>| out.push(f.to_owned_frame())),
            };
            if let Err(e) = r {
                err = Some(e);
                break;
            }
        }
        // (After an error the parser keeps only the error.)
        let (pos, buffered) = (p.position(), p.buffered());
        if err.is_none() {
            err = p.finish(|f| out.push(f.to_owned_frame())).err();
        }
        (out, err, p.last_event_id().to_string(), p.retry(), p.frame_count(), pos, buffered)
    }

    /// A frame read ahead of the line search (`feed_ahead`) leaves what the search
    /// leaves: frames, offsets, indices, event types, ids, retry, position, errors, on
    /// every framing (LF, CR, CRLF, fields, comments, multi-line data, BOM, blank lines,
    /// a cut last frame, the buffer limit) cut anywhere. `ahead` here knows every
    /// payload's end (its line's), the most a reader ahead may claim.
    #[test]
    fn frames_read_ahead_are_those_of_the_line_search() {
        use crate::test_rng::Rng;
        let line_end = |rest: &[u8]| Some(memchr2(b'\n', b'\r', rest).unwrap_or(rest.len()));
        let mut taken = 0;
        let counting = std::cell::Cell::new(0usize);
        let count = |rest: &[u8]| {
            let n = line_end(rest);
            if blank_line_after(rest, n.unwrap_or(0)).is_some() {
                counting.set(counting.get() + 1);
            }
            n
        };
        for seed in 1..=60u64 {
            let mut rng = Rng((seed * 0x9e37_79b9) | 1);
            let mut s: Vec<u8> = Vec::new();
            if rng.below(4) == 0 {
                s.extend_from_slice(&BOM);
            }
            for _ in 0..rng.below(12) + 1 {
                let nl: &[u8] = rng.pick(&[&b"\n"[..], b"\n", b"\n", b"\r\n", b"\r"]);
                let extra: &[&[u8]] = &[b": c", b"event: e", b"id: 5", b"id: x\0", b"retry: 30", b"retry: x", b"", b"data", b"x"];
                for _ in 0..rng.below(3) {
                    if rng.below(2) == 0 {
                        s.extend_from_slice(&[rng.pick(extra), nl].concat());
                    }
                }
                for _ in 0..1 + usize::from(rng.below(6) == 0) {
                    let sep: &[u8] = rng.pick(&[&b"data: "[..], b"data: ", b"data:", b"data:  "]);
                    let v: &[u8] = rng.pick(&[&b"{\"a\":1}"[..], b"x", b"", b"{\"type\":\"T\",\"d\":\"yy\"}"]);
                    s.extend_from_slice(&[sep, v, nl].concat());
                }
                s.extend_from_slice(nl);
            }
            if rng.below(2) == 0 {
                s.extend_from_slice(b"data: {\"cut");
            }
            let offset = if rng.below(3) == 0 { 7 } else { 0 };
            for max in [DEFAULT_MAX_BUFFER, 4 + rng.below(20)] {
                let want = state_after(&[&s], max, offset, None);
                TAKEN.set(0);
                assert_eq!(state_after(&[&s], max, offset, Some(&count)), want, "seed {seed}, whole");
                // Every frame read ahead went to `taken`: those the reader claimed with a
                // blank line after them (but one over the buffer limit, which fails).
                let (claimed, took) = (counting.replace(0), TAKEN.replace(0));
                assert!(took <= claimed && took + 1 >= claimed, "seed {seed}: {took} taken of {claimed} claimed");
                taken += took;
                for k in 0..=s.len() {
                    let (a, b) = s.split_at(k);
                    let want = state_after(&[a, b], max, offset, None);
                    assert_eq!(state_after(&[a, b], max, offset, Some(&line_end)), want, "seed {seed}, split at {k}");
                }
                let bytes: Vec<&[u8]> = s.chunks(1).collect();
                assert_eq!(state_after(&bytes, max, offset, Some(&line_end)), state_after(&bytes, max, offset, None));
            }
        }
        // Most frames of these streams are one `data: ` line and a blank line.
        assert!(taken > 100, "{taken} frames read ahead");
    }

    /// Frames ended by CR or CRLF line ends are read ahead as LF ones are (a log of
    /// either is no slower): all but a last frame whose final CR an LF of the next chunk
    /// might complete, which the line search frames the same way.
    #[test]
    fn every_line_end_is_read_ahead() {
        let line_end = |rest: &[u8]| Some(memchr2(b'\n', b'\r', rest).unwrap_or(rest.len()));
        for end in ["\n\n", "\r\r", "\r\n\r\n", "\n\r\n", "\r\n\n", "\r\r\n"] {
            let s = format!("data: {{\"a\":1}}{end}").repeat(50);
            TAKEN.set(0);
            let whole = state_after(&[s.as_bytes()], DEFAULT_MAX_BUFFER, 0, Some(&line_end));
            assert_eq!(whole, state_after(&[s.as_bytes()], DEFAULT_MAX_BUFFER, 0, None), "{end:?}");
            let open_end = end.ends_with('\r');
            assert_eq!(TAKEN.replace(0), if open_end { 49 } else { 50 }, "{end:?}");
            assert_eq!(whole.0.len(), 50);
        }
    }

    fn every_split(stream: &[u8]) -> Vec<Vec<u8>> {
        let whole = datas(&[stream]);
        for k in 0..=stream.len() {
            let (a, b) = stream.split_at(k);
            assert_eq!(datas(&[a, b]), whole, "split at {k}");
        }
        // Byte by byte too.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(datas(&bytes), whole, "byte by byte");
        whole
    }

    #[test]
    fn frames_nested_deeper_than_max_depth_are_flagged() {
        let deep = |d: usize| format!("data: {}{}\n\n", "[".repeat(d), "]".repeat(d));
        let mut p = SseParser::new(DEFAULT_MAX_BUFFER);
        let mut b = Batch::new(0, true, false).with_max_depth(3);
        let stream = format!("{}{}{}", deep(3), deep(4), deep(2));
        p.feed(stream.as_bytes(), |f| b.push(&f)).unwrap();
        b.close();
        assert_eq!(b.len(), 3);
        assert_eq!(b.too_deep, vec![1]);
        assert!(!b.balanced, "a too deep frame must not reach the bulk decoder");
        // the default is the crate's limit
        assert_eq!(Batch::new(0, true, false).max_depth, crate::limits::DEFAULT_MAX_DEPTH);
        assert_eq!(scan_value(b"[[1],{\"a\":[2]}]").depth, 3);
        assert_eq!(scan_value(b"\"[[[\"").depth, 0); // brackets inside strings do not count
    }

    #[test]
    fn basic_lf() {
        let d = every_split(b"data: {\"a\":1}\n\ndata: 2\n\n");
        assert_eq!(d, vec![b"{\"a\":1}".to_vec(), b"2".to_vec()]);
    }

    #[test]
    fn line_endings_crlf_cr_mixed() {
        let lf = datas(&[b"data: 1\ndata: 2\n\ndata: 3\n\n"]);
        assert_eq!(lf, vec![b"1\n2".to_vec(), b"3".to_vec()]);
        assert_eq!(every_split(b"data: 1\r\ndata: 2\r\n\r\ndata: 3\r\n\r\n"), lf);
        assert_eq!(every_split(b"data: 1\rdata: 2\r\rdata: 3\r\r"), lf);
        assert_eq!(every_split(b"data: 1\r\ndata: 2\r\rdata: 3\n\r\n"), lf);
        // CR then LF in the next chunk is one line end, not an empty line.
        assert_eq!(datas(&[b"data: 1\r", b"\ndata: 2\r", b"\n\r", b"\n"]), vec![b"1\n2".to_vec()]);
    }

    #[test]
    fn field_rules() {
        assert_eq!(every_split(b"data:x\n\n"), vec![b"x".to_vec()]);
        assert_eq!(every_split(b"data:  x\n\n"), vec![b" x".to_vec()]);
        assert_eq!(every_split(b"data:\tx\n\n"), vec![b"\tx".to_vec()]);
        // Bare `data` is a data line with an empty value.
        assert_eq!(every_split(b"data\ndata: x\n\n"), vec![b"\nx".to_vec()]);
        // Case-sensitive names, no leading whitespace allowed, comments ignored.
        assert_eq!(every_split(b"DATA: 1\n\n data: 2\n\n: c\n:\nfoo: 3\ndata: 4\n\n"), vec![b"4".to_vec()]);
        // An empty data line dispatches an empty payload.
        assert_eq!(every_split(b"data:\n\n"), vec![b"".to_vec()]);
        assert_eq!(every_split(b"data: a\ndata:\ndata: b\n\n"), vec![b"a\n\nb".to_vec()]);
        // Events without data are not dispatched.
        assert_eq!(every_split(b"event: x\nid: 1\n\n\n\n"), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn event_id_retry() {
        let (f, e, p) = run(&[b"event: foo\nid: 7\nretry: 1500\ndata: 1\n\ndata: 2\n\nid\nretry: x\n\n"], DEFAULT_MAX_BUFFER);
        assert!(e.is_none());
        assert_eq!(f[0].event.as_deref(), Some(&b"foo"[..]));
        assert_eq!(f[0].id, "7");
        assert_eq!(f[1].event, None);
        assert_eq!(f[1].id, "7", "id persists across events");
        assert_eq!(p.last_event_id(), "", "a bare `id` resets it at the next dispatch");
        assert_eq!(p.retry(), Some(1500));
        // id with NUL is ignored.
        let (_, _, p) = run(&[b"id: 5\n\nid: a\0b\n\n"], DEFAULT_MAX_BUFFER);
        assert_eq!(p.last_event_id(), "5");
        // The id takes effect at the dispatch point, not before.
        let (_, _, p) = run(&[b"id: 5\n\nid: 6\n"], DEFAULT_MAX_BUFFER);
        assert_eq!(p.last_event_id(), "6", "finish() is a dispatch point");
    }

    #[test]
    fn bom() {
        let s = b"\xEF\xBB\xBFdata: 1\n\n";
        assert_eq!(every_split(s), vec![b"1".to_vec()]);
        // Offsets count the BOM.
        let (f, _, _) = run(&[&s[..1], &s[1..2], &s[2..]], DEFAULT_MAX_BUFFER);
        assert_eq!(f[0].offset, 3);
        // Only at stream start.
        assert_eq!(every_split(b"data: 1\n\n\xEF\xBB\xBFdata: 2\n\n"), vec![b"1".to_vec()]);
        // A partial BOM is data: `\xEF\xBB` then `data:` is an unknown field line.
        assert_eq!(every_split(b"\xEF\xBBdata: 1\n\ndata: 2\n\n"), vec![b"2".to_vec()]);
        assert_eq!(every_split(b"\xEFdata: 1\n\n"), Vec::<Vec<u8>>::new());
        assert_eq!(datas(&[b"\xEF\xBB"]), Vec::<Vec<u8>>::new());
        assert_eq!(datas(&[b"\xEF", b"\xBB", b"\xBF"]), Vec::<Vec<u8>>::new());
        assert_eq!(datas(&[b"\xEF", b"data: 1\n\n"]), Vec::<Vec<u8>>::new());
        // Two BOMs: the second is data.
        assert_eq!(every_split(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: 1\n\n"), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn utf8_split_is_kept_bytewise() {
        let s = "data: {\"d\":\"a\u{1F600}b\u{20AC}\"}\n\n".as_bytes();
        let d = every_split(s);
        assert_eq!(d, vec!["{\"d\":\"a\u{1F600}b\u{20AC}\"}".as_bytes().to_vec()]);
    }

    #[test]
    fn invalid_utf8_replaced_in_batch() {
        let b = split_all(b"data: \"a\xFF\xC3(\xED\xA0\x80b\"\n\n", DEFAULT_MAX_BUFFER, true, false);
        let text = std::str::from_utf8(b.payload(0)).unwrap();
        // Maximal-subpart replacement, like the WHATWG decoder.
        assert_eq!(text, "\"a\u{FFFD}\u{FFFD}(\u{FFFD}\u{FFFD}\u{FFFD}b\"");
    }

    #[test]
    fn final_event_without_blank_line() {
        assert_eq!(every_split(b"data: 1\n\ndata: 2"), vec![b"1".to_vec(), b"2".to_vec()]);
        assert_eq!(every_split(b"data: 1\n\ndata: 2\n"), vec![b"1".to_vec(), b"2".to_vec()]);
        assert_eq!(every_split(b"data: 1\n\ndata: 2\r"), vec![b"1".to_vec(), b"2".to_vec()]);
        assert_eq!(every_split(b": only a comment"), Vec::<Vec<u8>>::new());
        assert_eq!(every_split(b""), Vec::<Vec<u8>>::new());
    }

    #[test]
    fn offsets_and_indices() {
        let s = b": hi\n\ndata: 1\n\nevent: e\ndata: 2\r\ndata: 3\r\n\r\n\ndata: 4";
        let whole = run(&[s], DEFAULT_MAX_BUFFER).0;
        assert_eq!(whole.iter().map(|f| f.index).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(whole.iter().map(|f| f.offset).collect::<Vec<_>>(), vec![6, 24, 45]);
        assert_eq!(&s[24..31], b"data: 2");
        for k in 0..=s.len() {
            let (a, b) = s.split_at(k);
            assert_eq!(run(&[a, b], DEFAULT_MAX_BUFFER).0, whole, "split at {k}");
        }
    }

    #[test]
    fn buffer_limit() {
        // Within the limit (the raw line counts: `data: 12345` is 11 bytes).
        let (f, e, _) = run(&[b"data: 12345\n\n"], 11);
        assert!(e.is_none());
        assert_eq!(f.len(), 1);
        assert!(run(&[b"data: 12345\n\n"], 10).1.is_some());
        // Incomplete line too long, in one chunk or spread over several.
        let (_, e, _) = run(&[b"data: 1\n\ndata: 1234"], 8);
        let e = e.unwrap();
        assert_eq!((e.kind.clone(), e.frame_index, e.offset), (SseErrorKind::BufferLimit, 1, 9));
        let (f, e, _) = run(&[b"data: 1\n\nda", b"ta: 12", b"34"], 8);
        assert_eq!(f.len(), 1);
        assert_eq!(e.unwrap().offset, 9);
        // Multi-line data over the limit.
        let (_, e, _) = run(&[b"data: 1234\ndata: 1234\n\n"], 8);
        assert!(e.is_some());
        // Failed parsers stay failed.
        let mut p = SseParser::new(4);
        assert!(p.feed(b"data: 123456", |_| ()).is_err());
        assert!(p.feed(b"\n\n", |_| ()).is_err());
        assert!(p.finish(|_| ()).is_err());
        // ... holding nothing: a line of data still in the failed chunk (`data: 1` then a
        // line over the limit) is dropped with it, not read later as a slice of a gone chunk.
        let mut p = SseParser::new(8);
        let e = p.feed(b"data: 1\ndata: 123456789\n", |_| ()).unwrap_err();
        assert_eq!((e.kind, p.buffered()), (SseErrorKind::BufferLimit, 0));
        assert!(p.feed(b"\n", |_| ()).is_err());
        // Frames before the error in the same chunk are delivered.
        let (f, e, _) = run(&[b"data: 1\n\ndata: 2\n\ndata: 123456789\n\n"], 8);
        assert_eq!(f.len(), 2);
        assert_eq!(e.unwrap().frame_index, 2);
        // Chunking does not change whether the limit is hit.
        let s = b"data: 1\n\n: a long comment\ndata: 2\n\n";
        for max in 0..s.len() {
            let whole = run(&[s], max).1.is_some();
            for k in 0..=s.len() {
                let (a, b) = s.split_at(k);
                assert_eq!(run(&[a, b], max).1.is_some(), whole, "max {max} split {k}");
            }
        }
    }

    #[test]
    fn structural_check() {
        assert!(is_single_value(b"{\"a\":[1,2,{\"b\":\"x,]\\\"\"}]}"));
        assert!(is_single_value(b"42"));
        // Number statistics: only outside strings; `true`/`false` are not exponents.
        let sh = scan_value(br#"{"a":[1.5,2e10,1.5e+300,5e-324,-1E300,1e279],"s":"1e300 x.y","t":true,"f":false}"#);
        assert!(sh.single);
        assert_eq!(sh.hard_floats, 3);
        assert_eq!(sh.floats, 7); // 2 dots + 5 exponents
        assert_eq!(scan_value(b"[1,2,3]").floats, 0);
        assert_eq!(scan_value(br#""\"1e999""#).hard_floats, 0);
        assert!(is_single_value(b" null "));
        assert!(!is_single_value(b"[1"));
        assert!(!is_single_value(b"2]"));
        assert!(!is_single_value(b"1,2"));
        assert!(!is_single_value(b"\"abc"));
        assert!(!is_single_value(b"\"abc\\"));
        assert!(!is_single_value(b"}{"));
        assert!(!is_single_value(b""));
        assert!(!is_single_value(b" \n"));
        let b = split_all(b"data: [1\n\ndata: 2]\n\n", 100, true, false);
        assert!(!b.balanced);
        let b = split_all(b"data: [1]\n\ndata: {\"a\":2}\n\n", 100, true, true);
        assert!(b.balanced);
        assert_eq!(b.buf, b"[[1],{\"a\":2}]");
        let b = split_all(b"data: 1\n\ndata: [2]\n\n", 100, true, true);
        assert_eq!(b.buf, b"[1,[2]]");
        assert!(b.candidates.is_empty());
    }

    /// The byte-at-a-time definition the fast scans must agree with.
    fn naive_single_value(p: &[u8]) -> bool {
        let (mut depth, mut in_str, mut esc, mut seen) = (0i64, false, false, false);
        for &c in p {
            if in_str {
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    in_str = false;
                }
                continue;
            }
            match c {
                b'"' => {
                    in_str = true;
                    seen = true;
                }
                b'[' | b'{' => {
                    depth += 1;
                    seen = true;
                }
                b']' | b'}' => {
                    depth -= 1;
                    if depth < 0 {
                        return false;
                    }
                }
                b',' | b':' if depth == 0 => return false,
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => seen = true,
            }
        }
        !in_str && depth == 0 && seen
    }

    #[test]
    fn structural_check_matches_naive_definition() {
        let alphabet = b"\"\\[]{},: a1\n\xc3\xa9";
        let mut state: u64 = 0x5eed;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        for _ in 0..200_000 {
            let len = next() % 40;
            let p: Vec<u8> = (0..len).map(|_| alphabet[next() % alphabet.len()]).collect();
            assert_eq!(is_single_value(&p), naive_single_value(&p), "{:?}", String::from_utf8_lossy(&p));
            for i in 0..=p.len() + 1 {
                let naive = p.get(i..).and_then(|t| t.iter().position(|&c| c == b'"' || c == b'\\')).map(|r| i + r);
                assert_eq!(find_quote_or_backslash(&p, i), naive);
            }
        }
        // Long strings (the eight-byte steps) with escapes at every position.
        for k in 0..40 {
            let mut p = b"{\"k\":\"".to_vec();
            p.extend(std::iter::repeat_n(b'x', k));
            p.extend_from_slice(b"\\\"");
            p.extend(std::iter::repeat_n(b'y', 40 - k));
            p.extend_from_slice(b"\"}");
            assert!(is_single_value(&p));
            p.truncate(p.len() - 2);
            assert!(!is_single_value(&p));
        }
    }

    #[test]
    fn legacy_candidates() {
        let b = split_all(
            b"data: {\"type\":\"THINKING_START\"}\n\ndata: {\"a\":1}\n\ndata: {\"rawEvent\":null}\n\ndata: {\"type\":\"binary\"}\n\n",
            DEFAULT_MAX_BUFFER,
            true,
            true,
        );
        assert_eq!(b.candidates, vec![0, 2, 3]);
    }

    #[test]
    fn empty_batch() {
        let b = split_all(b"", 10, true, false);
        assert_eq!(b.buf, b"[]");
        assert!(b.is_empty());
    }

    #[test]
    fn writer_round_trip() {
        for payload in [&b"{\"a\":1}"[..], b"line1\nline2", b"a\r\nb\rc", b""] {
            let mut out = Vec::new();
            write_event(&mut out, payload);
            let got = datas(&[&out]);
            // Line ends inside the payload come back as LF (the data-line join).
            let norm: Vec<u8> = String::from_utf8_lossy(payload).replace("\r\n", "\n").replace('\r', "\n").into_bytes();
            assert_eq!(got, vec![norm]);
        }
    }
}
