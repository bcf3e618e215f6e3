//! One plain source (not compressed, a regular file or bytes in memory) cut at frame
//! boundaries into parts that are framed and parsed on their own, on any number of
//! threads, and put back in order as if read sequentially.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use agui_core::log::{Event, Format, Limits, LogError, LogReader, Part};
use arrow_array::{RecordBatch, UInt64Array};
use arrow_buffer::Buffer;

use crate::batch::{BatchBuilder, BATCH_ROWS};
use crate::decode::{run_on, Decoded};
use crate::fields;
use crate::issue::Issue;
use crate::rows::{row_event, within, Stop};
use crate::source::{Control, Input, Options, Source};
use crate::views::Utf8Block;

/// Parts of a plain source are at least this big (smaller ones cost more to hand out
/// than they save) ...
pub(crate) const PART_MIN: u64 = 256 << 10;

/// ... and at most this big: a worker holds one part of a file in memory, and a part
/// makes about one batch.
pub(crate) const PART_MAX: u64 = 4 << 20;

/// A source that can be cut into parts: not compressed, of a known format, not empty.
/// `None` for anything else (decoded whole, which also reports a source that cannot be
/// opened or read).
pub(crate) fn plain_source(src: &Source<'_>, opts: &Options) -> Option<(Format, u64)> {
    let (reader, len) = match &src.input {
        Input::Bytes(_) | Input::Buffer(_) => {
            let b = src.input.bytes().unwrap_or_default();
            (LogReader::open(b, opts.format).ok()?, b.len() as u64)
        }
        Input::Path(p) => {
            // A regular file only (looked at before opening it): a pipe or a device has
            // no size to cut by, and its bytes, once read, are gone; it is read as a stream.
            let meta = std::fs::metadata(p).ok().filter(|m| m.is_file())?;
            (LogReader::open(File::open(p).ok()?, opts.format).ok()?, meta.len())
        }
    };
    match (reader.is_gzip(), reader.format()) {
        (false, Some(format)) if !reader.is_empty() => Some((format, len)),
        _ => None,
    }
}

/// How one part of a source stopped early.
pub(crate) enum PartStop {
    /// A framing error: the log ends there.
    Log(LogError),
    /// A bad event that fails the call (raise mode).
    Row(Issue),
    /// The part could not be read (`OSError`), or the call was cancelled (`None`).
    Other(Option<Issue>),
}

impl From<LogError> for PartStop {
    fn from(e: LogError) -> Self {
        PartStop::Log(e)
    }
}

/// What one part of a source gave: rows and issues whose frame indices count from the
/// part's first frame, the part's frame count, and why it stopped early.
#[derive(Default)]
pub(crate) struct PartOut {
    pub(crate) decoded: Decoded,
    pub(crate) frames: u64,
    pub(crate) stop: Option<PartStop>,
}

/// The most bytes of a part held in memory: what cutting at the first boundary after
/// each target (at most [`PART_MAX`] apart) can make of a log that frames (a boundary
/// within a frame's limit of every point). A longer part (the rest of a log that could
/// not be cut, a line of gigabytes) is read as a stream ([`decode_part_streamed`]).
fn part_in_memory(limits: &Limits) -> u64 {
    PART_MAX + limits.max_buffer.max(limits.max_frame_size) as u64 + 8
}

/// Decode one part (read from the file for a path: a worker holds one part at a time).
pub(crate) fn decode_part(src: &Source<'_>, format: Format, part: Part, opts: &Options, control: &Control) -> PartOut {
    // (The caller's buffer is in memory already: its views cost nothing.)
    if part.end - part.start > part_in_memory(&opts.limits) && !matches!(src.input, Input::Buffer(_)) {
        return decode_part_streamed(src, format, part, opts, control);
    }
    let mut out = PartOut::default();
    let (start, len) = (part.start as usize, (part.end - part.start) as usize);
    // The part as one buffer the `json` column points into: the caller's (no copy), the
    // bytes read from the file, or a copy of a borrowed slice.
    let buffer = match &src.input {
        Input::Buffer(b) => b.slice_with_length(start, len),
        Input::Bytes(b) => Buffer::from(&b[start..start + len]),
        Input::Path(p) => {
            let read = File::open(p).and_then(|mut f| {
                f.seek(SeekFrom::Start(part.start))?;
                let mut buf = vec![0u8; len];
                f.read_exact(&mut buf)?;
                Ok(buf)
            });
            match read {
                Ok(buf) => Buffer::from_vec(buf),
                Err(e) => {
                    let mut issue = Issue::io(format!("cannot read {}: {e}", p.display()));
                    issue.source = src.name.clone();
                    out.stop = Some(PartStop::Other(Some(issue)));
                    return out;
                }
            }
        }
    };
    let data = buffer.as_slice();
    // Sized for the part (about one batch), so that the buffers never regrow (a
    // protobuf event is about half as long as its SSE frame).
    let per_row = if format == Format::Protobuf { 24 } else { 48 };
    let rows = (data.len() / per_row).clamp(1024, BATCH_ROWS);
    let mut builder = BatchBuilder::with_capacity(src.name.clone(), rows).columns_with(opts.columns);
    // One UTF-8 check for the whole part instead of one per event (SIMD: std's was ~5%
    // of `to_arrow`).
    let text = simdutf8::basic::from_utf8(data).ok();
    builder.set_part(text.and_then(|t| Utf8Block::new(buffer.clone(), t)));
    let mut rows = PartRows {
        shape: fields::Shape::default(),
        builder,
        batches: &mut out.decoded.batches,
        issues: &mut out.decoded.issues,
        found: "",
        text,
        ahead: text.filter(|_| opts.max_depth >= 1),
        src,
        opts,
        control,
    };
    let r = agui_core::log::for_each_in_part_ahead(data, format, part, &opts.limits, &mut rows);
    let PartRows { mut builder, batches, .. } = rows;
    if !builder.is_empty() {
        batches.push(builder.finish());
    }
    control.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
    count_events(control, &r);
    match r {
        Ok(summary) => out.frames = summary.frames,
        Err(stop) => out.stop = Some(stop),
    }
    out
}

/// A part's events for the progress (those before an error are not known: none).
fn count_events(control: &Control, r: &Result<agui_core::log::Summary, PartStop>) {
    if let Ok(summary) = r {
        control.events.fetch_add(summary.events, Ordering::Relaxed);
    }
}

/// [`decode_part`] for a part read in chunks (constant memory): its events' texts are
/// copied into the batches (there is no buffer of the part for them to point into).
fn decode_part_streamed(src: &Source<'_>, format: Format, part: Part, opts: &Options, control: &Control) -> PartOut {
    let mut out = PartOut::default();
    let reader: std::io::Result<Box<dyn Read + '_>> = match &src.input {
        Input::Path(p) => File::open(p).and_then(|mut f| {
            f.seek(SeekFrom::Start(part.start))?;
            Ok(Box::new(f) as Box<dyn Read>)
        }),
        _ => {
            let b = src.input.bytes().unwrap_or_default();
            Ok(Box::new(b.get(part.start as usize..part.end as usize).unwrap_or_default()))
        }
    };
    let mut reader = match reader {
        Ok(r) => r,
        Err(e) => {
            let name = match &src.input {
                Input::Path(p) => p.display().to_string(),
                _ => "the log".into(),
            };
            let mut issue = Issue::io(format!("cannot read {name}: {e}"));
            issue.source = src.name.clone();
            out.stop = Some(PartStop::Other(Some(issue)));
            return out;
        }
    };
    let mut rows = PartRows {
        shape: fields::Shape::default(),
        builder: BatchBuilder::new(src.name.clone()).columns_with(opts.columns),
        batches: &mut out.decoded.batches,
        issues: &mut out.decoded.issues,
        found: "",
        text: None,
        ahead: None,
        src,
        opts,
        control,
    };
    let read = |n: usize| {
        control.bytes.fetch_add(n as u64, Ordering::Relaxed);
    };
    let r = agui_core::log::for_each_in_part_read(&mut reader, format, part, &opts.limits, &mut rows, read);
    let PartRows { mut builder, batches, .. } = rows;
    if !builder.is_empty() {
        batches.push(builder.finish());
    }
    count_events(control, &r);
    match r {
        Ok(summary) => out.frames = summary.frames,
        Err(stop) => out.stop = Some(stop),
    }
    out
}

/// What [`decode_part`] writes a part's rows with: the framer's reader ahead and the
/// rows of its events.
pub(crate) struct PartRows<'o, 's> {
    shape: fields::Shape,
    builder: BatchBuilder,
    batches: &'o mut Vec<RecordBatch>,
    issues: &'o mut Vec<Issue>,
    /// The event the reader ahead last found a form at, as a slice of the checked part:
    /// the frame it hands on next (`taken`) is that event (the same address and length),
    /// so its row needs no `within` of its own.
    found: &'o str,
    /// The part's text when it is valid UTF-8.
    text: Option<&'o str>,
    /// `text` when forms may be read (a depth limit of at least 1): what `end` searches.
    ahead: Option<&'o str>,
    src: &'o Source<'s>,
    opts: &'o Options,
    control: &'o Control,
}

impl<'o> PartRows<'o, '_> {
    /// The row of one event of a part: `json`, its text as a slice of the checked part
    /// (`None`: it is not one, or has protobuf members), read by a form kept when one
    /// reads it, else by `other_row` (out of line).
    #[inline(always)]
    fn row(&mut self, ev: &Event<'_>, json: Option<&str>) -> Result<(), PartStop> {
        let r = match json {
            Some(json) if self.builder.push_form(ev, json, &mut self.shape) => {
                self.close_if_full();
                Ok(())
            }
            _ => other_row(ev, self.text, self.src, self.opts, &mut self.builder, self.batches, self.control, self.issues, &mut self.shape),
        };
        self.go_on(ev, r)
    }

    /// The batch closed once a row of a form has filled it.
    #[inline(always)]
    fn close_if_full(&mut self) {
        if self.builder.full() {
            self.batches.push(self.builder.finish());
        }
    }

    /// Whether to go on after the row of `ev` (`r`): its error, or the call's cancel.
    #[inline(always)]
    fn go_on(&self, ev: &Event<'_>, r: Result<(), Stop>) -> Result<(), PartStop> {
        match r {
            // (Every 4096th event; `is_multiple_of` is newer than the MSRV.)
            Ok(()) if ev.index & 4095 == 0 && self.control.cancel.load(Ordering::Relaxed) => Err(PartStop::Other(None)),
            Ok(()) => Ok(()),
            Err(Stop::Issue(issue)) => Err(PartStop::Row(issue)),
            Err(Stop::Cancelled) => Err(PartStop::Other(None)),
        }
    }
}

impl agui_core::log::ReadAhead<PartStop> for PartRows<'_, '_> {
    /// An SSE frame `data: <event>\n\n` whose event has a form already read is framed
    /// with no line search: the form's end is the event's (`Shape::form_end`). Inlined
    /// into `run`'s loop, which holds only the framer's loop besides (callgrind of
    /// `examples/stages.rs`: 3-4% fewer instructions than with `end` a call there or with
    /// `end` and `push_found` two calls from the framer's own loop).
    #[inline(always)]
    fn end(&mut self, rest: &[u8]) -> Option<usize> {
        let rest = within(rest, self.ahead)?;
        let n = self.shape.form_end(rest)?;
        self.found = rest.get(..n)?;
        Some(n)
    }

    /// The frames read ahead (most of a log), inlined into `run`'s loop. Such a
    /// frame is the text `end` has just found a form at (`found`, the framer's contract):
    /// its row is that form's, with no match of its own.
    #[inline(always)]
    fn taken(&mut self, ev: Event<'_>) -> Result<(), PartStop> {
        debug_assert!(std::ptr::eq(self.found.as_bytes(), ev.json), "a frame read ahead is the event its form was found at");
        self.builder.push_found(&ev, self.found, &mut self.shape);
        self.close_if_full();
        self.go_on(&ev, Ok(()))
    }

    /// Every other frame (CRLF, fields, several lines, no form found ahead; protobuf
    /// events other than flat ones).
    #[inline(never)]
    fn event(&mut self, ev: Event<'_>) -> Result<(), PartStop> {
        let json = within(ev.json, self.text).filter(|_| ev.members.is_none() && self.opts.max_depth >= 1);
        self.row(&ev, json)
    }

    /// The framer's loop over the frames read ahead (most of a log), out of line with
    /// `end` and `taken` inlined in it: one call a run of frames, not two a frame.
    #[inline(never)]
    fn run<T>(&mut self, go: impl FnOnce(&mut Self) -> T) -> T {
        go(self)
    }

    /// A protobuf flat event (most of a protobuf log), its row made from its wire fields
    /// (`BatchBuilder::push_flat`), with no JSON text to read back. (A depth limit under
    /// 1 fails every event: those are read from their text, for the error.)
    #[inline(always)]
    fn flat(&mut self, index: u64, offset: u64, flat: &agui_core::proto::Flat<'_>) -> Option<Result<(), PartStop>> {
        if self.opts.max_depth < 1 || !self.builder.push_flat(index, offset, flat) {
            return None;
        }
        self.close_if_full();
        Some(self.go_on(&Event { index, offset, json: &[], members: None }, Ok(())))
    }

    /// A protobuf nested event the wire path may take, its row made from its wire fields
    /// (`BatchBuilder::push_nested`); one it declines comes as text (`event`).
    #[inline(always)]
    fn nested(&mut self, index: u64, offset: u64, nested: &agui_core::proto::Nested<'_>) -> Option<Result<(), PartStop>> {
        if self.opts.max_depth < 1 || !self.builder.push_nested(index, offset, nested, self.opts.max_depth) {
            return None;
        }
        self.close_if_full();
        Some(self.go_on(&Event { index, offset, json: &[], members: None }, Ok(())))
    }
}

/// The row of an event of a part that no form kept reads ([`decode_part`]): read whole
/// by `row_event`, out of line (the rows of forms are inlined into the framer's loop).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn other_row(
    ev: &Event<'_>,
    text: Option<&str>,
    src: &Source<'_>,
    opts: &Options,
    builder: &mut BatchBuilder,
    batches: &mut Vec<RecordBatch>,
    control: &Control,
    issues: &mut Vec<Issue>,
    shape: &mut fields::Shape,
) -> Result<(), Stop> {
    row_event(ev, text, &src.name, opts, control, issues, shape, &mut |ev, json, f| {
        builder.push(ev, json, f);
        if builder.full() {
            batches.push(builder.finish());
        }
    })
}

/// `batch` with `by` added to its frame indices: in place, as the batch is the only owner
/// of its index column (a copy was 8 fresh bytes a row, written on the calling thread
/// after every worker is done: the serial end of a call).
pub(crate) fn shift_index(batch: RecordBatch, by: u64) -> RecordBatch {
    if by == 0 {
        return batch;
    }
    let (schema, mut columns, _) = batch.into_parts();
    let index = UInt64Array::from(columns.remove(1).to_data());
    let index = index.unary_mut(|i| i + by).unwrap_or_else(|shared| shared.unary(|i| i + by));
    columns.insert(1, Arc::new(index));
    RecordBatch::try_new(schema, columns).expect("the same schema")
}

/// Where to cut a plain source of `len` bytes for `workers` threads (the parts start at
/// the first frame boundary from each). Parts of at most [`PART_MAX`] (one batch each),
/// and on several threads at least `4 × workers` of them, so that a thread that falls
/// behind is caught up by the others a small part at a time; and when the log is small
/// enough for it, the same smallest parts with half as many batches: `workers` parts of
/// 3/4 of the log first, then `workers` of 1/4 (each batch costs the hand-off to pyarrow
/// ~25 µs on the calling thread after the workers are done).
pub(crate) fn cut_targets(len: u64, workers: usize) -> Vec<u64> {
    let w = workers as u64;
    if w > 1 && len.div_ceil(4 * w) >= PART_MIN && (3 * len).div_ceil(4 * w) <= PART_MAX {
        let big = 3 * len / (4 * w);
        let small = (len - big * w) / w;
        return (1..2 * w).map(|k| if k <= w { big * k } else { big * w + small * (k - w) }).collect();
    }
    let parts = if w > 1 { (w * 4).max(len.div_ceil(PART_MAX)) } else { len.div_ceil(PART_MAX) };
    agui_core::log::even_cuts(len, parts.min(len.div_ceil(PART_MIN)))
}

/// Take back from the call's count of collected errors those of a part whose errors are
/// not kept ([`decode_source_parts`]): each one it kept, and the one refused when the
/// budget ran out.
fn uncount(control: &Control, out: Option<&PartOut>) {
    if let Some(out) = out {
        let refused = matches!(&out.stop, Some(PartStop::Row(issue)) if issue.is_too_many());
        control.errors.fetch_sub(out.decoded.issues.len() + usize::from(refused), Ordering::Relaxed);
    }
}

/// Decode a plain source cut at frame boundaries into parts, on `workers` threads: each
/// part is framed and parsed on its own (no thread reads the whole log), then the parts
/// are put back in order and their frame indices made those of the whole log, so rows,
/// positions and the first error are those of a sequential read. Memory: one part per
/// worker besides the batches.
pub(crate) fn decode_source_parts(
    src: &Source<'_>,
    format: Format,
    len: u64,
    opts: &Options,
    control: &Control,
    workers: usize,
) -> Result<Option<Decoded>, Issue> {
    use std::sync::atomic::AtomicUsize;

    let targets = cut_targets(len, workers);
    let split = match &src.input {
        Input::Path(p) => File::open(p).and_then(|mut f| agui_core::log::split_at(&mut f, len, format, &targets, &opts.limits)),
        _ => {
            let b = src.input.bytes().unwrap_or_default();
            agui_core::log::split_at(&mut std::io::Cursor::new(b), len, format, &targets, &opts.limits)
        }
    };
    let parts = split.map_err(|e| {
        let mut issue = Issue::io(format!("cannot read the log: {e}"));
        issue.source = src.name.clone();
        issue
    })?;
    let outs: Vec<Mutex<Option<PartOut>>> = parts.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    // The first part that stopped early: the parts after it are not needed.
    let stopped_at = AtomicUsize::new(usize::MAX);
    let work = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(&part) = parts.get(k) else { break };
        if k > stopped_at.load(Ordering::Relaxed) {
            continue;
        }
        let out = decode_part(src, format, part, opts, control);
        if out.stop.is_some() {
            stopped_at.fetch_min(k, Ordering::Relaxed);
        }
        *outs[k].lock().unwrap_or_else(|p| p.into_inner()) = Some(out);
    };
    run_on(workers.clamp(1, parts.len()), work);
    let mut outs: Vec<Option<PartOut>> = outs.into_iter().map(|o| o.into_inner().unwrap_or_else(|p| p.into_inner())).collect();
    let mut decoded = Decoded::default();
    let mut base = 0u64;
    // From a part on, decoded again one part after the other (see below).
    let mut again = false;
    let mut k = 0;
    while let Some(&part) = parts.get(k) {
        let out = if again { Some(decode_part(src, format, part, opts, control)) } else { outs[k].take() };
        let Some(out) = out else {
            return Ok(None); // cancelled before it ran
        };
        if !again && matches!(&out.stop, Some(PartStop::Row(issue)) if issue.is_too_many())
            && decoded.issues.len() + out.decoded.issues.len() < opts.max_errors
        {
            // The budget of collected errors ran out while parts were decoded at the same
            // time, some of them maybe past where the log ends (a framing error in an
            // earlier part): those parts' errors are not counted any more, and the log is
            // decoded on from this part one part after the other, so that the limit is
            // reached where, and only if, a sequential read reaches it.
            uncount(control, Some(&out));
            outs[k + 1..].iter_mut().for_each(|o| uncount(control, o.take().as_ref()));
            again = true;
            continue;
        }
        decoded.batches.extend(out.decoded.batches.into_iter().map(|b| shift_index(b, base)));
        decoded.issues.extend(out.decoded.issues.into_iter().map(|mut i| {
            i.index = i.index.map(|i| i + base);
            i
        }));
        k += 1;
        let ended = match out.stop {
            None => {
                base += out.frames;
                continue;
            }
            Some(PartStop::Log(mut e)) => {
                e.shift_index(base);
                Issue::from_log_error(src.name.clone(), e)
            }
            Some(PartStop::Row(issue)) if issue.is_too_many() => return Err(issue),
            Some(PartStop::Row(mut issue)) => {
                issue.index = issue.index.map(|i| i + base);
                return Err(issue);
            }
            Some(PartStop::Other(Some(issue))) => issue,
            Some(PartStop::Other(None)) => return Ok(None),
        };
        // As in a sequential read, a framing or read error ends the log.
        if !opts.collect {
            return Err(ended);
        }
        // The parts after it are past the log's end: their errors are not the log's.
        outs[k..].iter_mut().for_each(|o| uncount(control, o.take().as_ref()));
        crate::rows::collect(ended, &mut decoded.issues, opts, control)?;
        break;
    }
    Ok(Some(decoded))
}
