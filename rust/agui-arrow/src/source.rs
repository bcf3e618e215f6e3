//! What is read and how: the logs ([`Source`], [`Input`]), the options of a call
//! ([`Options`]), what reading a source saw ([`SourceInfo`]) and what the threads of a
//! call share ([`Control`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use agui_core::log::{Format, Limits};
use arrow_buffer::Buffer;

use crate::views::{checked_columns, ColumnsFn};

/// Where a log comes from.
pub enum Input<'a> {
    Path(PathBuf),
    Bytes(&'a [u8]),
    /// Bytes the `json` column may point into (no copy): kept alive by the table.
    Buffer(Buffer),
}

impl Input<'_> {
    /// The log's bytes when they are in memory.
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match self {
            Input::Bytes(b) => Some(b),
            Input::Buffer(b) => Some(b.as_slice()),
            Input::Path(_) => None,
        }
    }
}

/// A log and the name written in the `source` column (`None`: null).
pub struct Source<'a> {
    pub input: Input<'a>,
    pub name: Option<String>,
}

/// How logs are read.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// `None`: detected per log.
    pub format: Option<Format>,
    pub limits: Limits,
    /// Maximum nesting of an event's JSON (`agui_core::limits::DEFAULT_MAX_DEPTH`).
    pub max_depth: usize,
    /// Bad events and unreadable logs go to the errors table instead of failing.
    pub collect: bool,
    /// With `collect`, the most errors one call collects: one more fails the call with a
    /// `LimitError` ([`DEFAULT_MAX_ERRORS`]).
    pub max_errors: usize,
    /// Makes the columns whose checks are known to pass, the `json` column's views among
    /// them ([`checked_columns`] by default).
    pub columns: ColumnsFn,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: None,
            limits: Limits::default(),
            max_depth: agui_core::limits::DEFAULT_MAX_DEPTH,
            collect: false,
            max_errors: DEFAULT_MAX_ERRORS,
            columns: checked_columns,
        }
    }
}

/// What reading one source saw.
#[derive(Debug, Clone, Default)]
pub struct SourceInfo {
    pub format: Option<Format>,
    pub gzip: bool,
    /// Bytes of the decompressed log.
    pub bytes: u64,
    pub events: u64,
}

/// The errors one call collects at most by default ([`Options::max_errors`]): a log of
/// nothing but bad events would otherwise collect one error for every few bytes (a few
/// hundred bytes each: 100,000 of them are ~20-50 MB).
pub const DEFAULT_MAX_ERRORS: usize = 100_000;

/// Shared by the threads of one call: stop early (`errors="raise"` failed elsewhere, or
/// the caller's `cancel`), count the bytes and events read (a progress bar polls them)
/// and the errors collected (against [`Options::max_errors`]).
#[derive(Debug, Default)]
pub struct Control {
    pub cancel: AtomicBool,
    pub bytes: AtomicU64,
    /// Events read so far (counted in steps of a few thousand, for a progress bar).
    pub events: AtomicU64,
    /// Errors collected so far (each one counted before it is kept).
    pub errors: AtomicUsize,
}

impl Control {
    /// Count one more error to collect: `false` when the call already holds `max`.
    pub(crate) fn count_error(&self, max: usize) -> bool {
        self.errors.fetch_add(1, Ordering::Relaxed) < max
    }
}
