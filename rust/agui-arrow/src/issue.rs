//! What goes wrong: one [`Issue`] per bad event or unreadable log, and the errors table
//! they make ([`errors_batch`]).

use std::sync::Arc;

use agui_core::kind::Kind;
use agui_core::log::{Event, LogError};
use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt64Array};

use crate::fields::RowError;
use crate::schema::errors_schema;

/// One failure: an event that is not a valid row, or a log that cannot be read on.
/// `kind` says what kind of failure it is (a binding names it: [`errors_batch`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub source: Option<String>,
    pub index: Option<u64>,
    pub offset: Option<u64>,
    pub kind: Kind,
    pub message: String,
    pub field: Option<String>,
}

impl Issue {
    /// A log that cannot be read on.
    pub fn from_log_error(source: Option<String>, e: LogError) -> Self {
        let (index, offset) = e.position();
        let message = match &e {
            // The position is the issue's own (`describe` says it once).
            LogError::Sse(e) => e.message.clone(),
            e => e.to_string(),
        };
        Issue { source, index, offset, kind: e.kind(), message: bounded(message), field: None }
    }

    pub(crate) fn from_row(source: &Option<String>, ev: &Event<'_>, e: RowError) -> Self {
        Issue {
            source: source.clone(),
            index: Some(ev.index),
            offset: Some(ev.offset),
            kind: e.kind,
            message: bounded(e.message),
            field: e.field,
        }
    }

    /// The error of a call that would collect more than `max` errors
    /// ([`crate::Options::max_errors`]): an error of the call, not of one event.
    pub(crate) fn too_many(max: usize) -> Self {
        Issue {
            source: None,
            index: None,
            offset: None,
            kind: Kind::TooManyErrors,
            message: format!(
                "more than {max} bad events or unreadable logs to collect (max_errors={max}): \
                 raise the limit, or stop at the first error"
            ),
            field: None,
        }
    }

    /// Whether this is the error of too many errors ([`Issue::too_many`]).
    pub(crate) fn is_too_many(&self) -> bool {
        self.kind == Kind::TooManyErrors
    }

    /// A failure of the output (or of the system), not of the input.
    pub(crate) fn io(message: String) -> Self {
        Issue { source: None, index: None, offset: None, kind: Kind::Io, message, field: None }
    }

    /// A failed write: a reader that went away (`agui-fast convert -o - | head`) is told
    /// apart from other I/O errors, so the CLI can end quietly as pipes expect.
    pub fn write(e: &std::io::Error) -> Self {
        let kind = if e.kind() == std::io::ErrorKind::BrokenPipe { Kind::BrokenPipe } else { Kind::Io };
        Issue { kind, ..Issue::io(format!("cannot write the output: {e}")) }
    }

    /// One line: `file: message (frame N at byte offset M, field F)`. (A position that
    /// is no frame's, the start of a file that is no log, goes unsaid.)
    pub fn describe(&self) -> String {
        let mut where_ = Vec::new();
        if let Some(i) = self.index {
            where_.push(format!("frame {i}"));
            if let Some(o) = self.offset {
                where_.push(format!("byte offset {o}"));
            }
        }
        if let Some(f) = &self.field {
            where_.push(format!("field {f}"));
        }
        let mut s = String::new();
        if let Some(src) = &self.source {
            s.push_str(src);
            s.push_str(": ");
        }
        s.push_str(&self.message);
        if !where_.is_empty() && !self.message.contains("byte offset") {
            s.push_str(&format!(" ({})", where_.join(", ")));
        }
        s
    }
}

/// The longest message an issue keeps: an error quoting a bad event's value (an unknown
/// type name, a timestamp's text) says what it is, not the megabytes of it.
const MAX_MESSAGE: usize = 500;

/// `message`, cut to [`MAX_MESSAGE`] bytes (on a char boundary) with `...` when longer.
fn bounded(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str("...");
    }
    message
}

/// The errors table; `class` names each issue's kind in its `error` column (a binding: the
/// exception class it raises for the kind).
pub fn errors_batch(issues: &[Issue], class: impl Fn(Kind) -> &'static str) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter(issues.iter().map(|i| i.source.as_deref()))),
        Arc::new(UInt64Array::from_iter(issues.iter().map(|i| i.index))),
        Arc::new(UInt64Array::from_iter(issues.iter().map(|i| i.offset))),
        Arc::new(StringArray::from_iter_values(issues.iter().map(|i| class(i.kind)))),
        Arc::new(StringArray::from_iter_values(issues.iter().map(|i| i.message.as_str()))),
        Arc::new(StringArray::from_iter(issues.iter().map(|i| i.field.as_deref()))),
    ];
    RecordBatch::try_new(errors_schema(), columns).expect("the columns follow errors_schema()")
}
