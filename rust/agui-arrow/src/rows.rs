//! The one loop over a source's events and rows, shared by decoding, conversion,
//! Parquet and inspection: the core reader opens and frames the log, each event is read
//! as a row, and what fails goes to the issues (`collect`) or stops the source.

use std::fs::File;
use std::io::Read;
use std::sync::atomic::Ordering;

use agui_core::kind::Kind;
use agui_core::log::{Event, LogError, LogReader};

use crate::fields::{self, Fields};
use crate::issue::Issue;
use crate::source::{Control, Input, Options, Source, SourceInfo};

pub(crate) enum Stop {
    Issue(Issue),
    Cancelled,
}

impl From<LogError> for Stop {
    fn from(e: LogError) -> Self {
        // The source name is filled in by the caller.
        Stop::Issue(Issue::from_log_error(None, e))
    }
}

/// Counts read bytes into `Control::bytes` as the reader pulls them.
pub(crate) struct Counted<'c, R: Send> {
    inner: R,
    control: &'c Control,
}

impl<R: Read + Send> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.control.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Keep `issue` in `issues` if the call may collect one more
/// ([`crate::Options::max_errors`]); else the call's `LimitError`.
pub(crate) fn collect(issue: Issue, issues: &mut Vec<Issue>, opts: &Options, control: &Control) -> Result<(), Issue> {
    if !control.count_error(opts.max_errors) {
        return Err(Issue::too_many(opts.max_errors));
    }
    issues.push(issue);
    Ok(())
}

/// The one loop over a source's events (opened by the core reader): `sink` gets each
/// one; a log that cannot be opened or read on goes to `issues` (`collect`) or fails.
/// `Ok(None)` when cancelled.
pub(crate) fn each_event<F>(
    src: &Source<'_>,
    opts: &Options,
    control: &Control,
    issues: &mut Vec<Issue>,
    mut sink: F,
) -> Result<Option<SourceInfo>, Issue>
where
    F: FnMut(&Event<'_>, &mut Vec<Issue>) -> Result<(), Stop>,
{
    let name = &src.name;
    let failed = |issue: Issue, issues: &mut Vec<Issue>| if opts.collect { collect(issue, issues, opts, control) } else { Err(issue) };
    let reader = match &src.input {
        Input::Path(p) => match File::open(p) {
            Ok(f) => LogReader::open(Counted { inner: f, control }, opts.format),
            Err(e) => {
                let kind = if e.kind() == std::io::ErrorKind::NotFound { Kind::NotFound } else { Kind::Io };
                let message = format!("cannot open {}: {e}", p.display());
                failed(Issue { source: name.clone(), index: None, offset: None, kind, message, field: None }, issues)?;
                return Ok(Some(SourceInfo::default()));
            }
        },
        _ => LogReader::open(Counted { inner: src.input.bytes().unwrap_or_default(), control }, opts.format),
    };
    let reader = match reader {
        Ok(r) => r,
        Err(e) => {
            failed(Issue::from_log_error(name.clone(), e), issues)?;
            return Ok(Some(SourceInfo::default()));
        }
    };
    let mut info = SourceInfo { format: reader.format(), gzip: reader.is_gzip(), ..SourceInfo::default() };
    // Events counted for the progress in steps (not an atomic add an event).
    let mut seen = 0u64;
    let result = reader.for_each(&opts.limits, |ev| {
        sink(&ev, issues)?;
        seen += 1;
        if seen.is_multiple_of(4096) {
            control.events.fetch_add(4096, Ordering::Relaxed);
            if control.cancel.load(Ordering::Relaxed) {
                return Err(Stop::Cancelled);
            }
        }
        Ok(())
    });
    control.events.fetch_add(seen % 4096, Ordering::Relaxed);
    match result {
        Ok(summary) => {
            info.bytes = summary.bytes;
            info.events = summary.events;
            Ok(Some(info))
        }
        Err(Stop::Cancelled) => Ok(None),
        // (Of the call, not of this source: not collected, not named after it.)
        Err(Stop::Issue(issue)) if issue.is_too_many() => Err(issue),
        Err(Stop::Issue(mut issue)) => {
            issue.source = name.clone();
            failed(issue, issues)?;
            Ok(Some(info))
        }
    }
}

/// One event as a row: `row` gets its columns, or the problem goes to `issues`
/// (`collect`, within the call's budget) or stops the source.
/// `part`: the text of the part the event was framed from when it is valid UTF-8 (then
/// an event read straight from it needs no check of its own).
/// `shape`: the source's [`fields::Shape`], for its events in order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn row_event<F>(
    ev: &Event<'_>,
    part: Option<&str>,
    name: &Option<String>,
    opts: &Options,
    control: &Control,
    issues: &mut Vec<Issue>,
    shape: &mut fields::Shape,
    row: &mut F,
) -> Result<(), Stop>
where
    F: FnMut(&Event<'_>, &str, &Fields<'_>),
{
    // Invalid UTF-8 becomes U+FFFD, as in the typed decoders.
    let lossy;
    let json: &str = match within(ev.json, part).map_or_else(|| simdutf8::basic::from_utf8(ev.json).map_err(drop), Ok) {
        Ok(s) => s,
        Err(_) => {
            lossy = String::from_utf8_lossy(ev.json);
            &lossy
        }
    };
    // Protobuf: the columns come from where the JSON mapping wrote them, not from
    // parsing its text again.
    let mut f = Fields::default();
    match fields::read(json, ev.members, opts.max_depth, &mut f, shape) {
        Ok(()) => row(ev, json, &f),
        Err(e) => {
            let issue = Issue::from_row(name, ev, e);
            if opts.collect {
                collect(issue, issues, opts, control).map_err(Stop::Issue)?;
            } else {
                return Err(Stop::Issue(issue));
            }
        }
    }
    Ok(())
}

/// `bytes` as a slice of `text` when they lie in it (a single-line SSE payload is a
/// slice of the part it was framed from; a joined multi-line one is not). Allocations
/// never overlap, so an address range inside `text` is `text`'s own bytes.
pub(crate) fn within<'a>(bytes: &[u8], text: Option<&'a str>) -> Option<&'a str> {
    let text = text?;
    let start = (bytes.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    text.get(start..start.checked_add(bytes.len())?)
}

/// The one loop over a source's rows: `row` gets every valid event; bad events go to
/// `issues` (`collect`) or stop the source. `Ok(None)` when cancelled.
pub(crate) fn each_row<F>(
    src: &Source<'_>,
    opts: &Options,
    control: &Control,
    issues: &mut Vec<Issue>,
    mut row: F,
) -> Result<Option<SourceInfo>, Issue>
where
    F: FnMut(&Event<'_>, &str, &Fields<'_>),
{
    let mut shape = fields::Shape::default();
    each_event(src, opts, control, issues, |ev, issues| row_event(ev, None, &src.name, opts, control, issues, &mut shape, &mut row))
}
