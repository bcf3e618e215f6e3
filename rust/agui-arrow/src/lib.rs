//! agui-arrow: AG-UI logs as Arrow record batches and Parquet files, in pure Rust.
//!
//! Every log is read by the core crate's one reader ([`agui_core::log`]); each event
//! becomes one row of [`schema`] (its columns read by [`fields::parse`]), or, with
//! `collect`, one row of [`errors_schema`]. Several sources, or the parts of one, decode
//! in parallel on the calling thread and worker threads kept between calls (`pool.rs`;
//! [`decode_many`]); [`write_parquet`] streams batches into a Parquet
//! file (constant memory); [`inspect`] aggregates the same rows into a [`Report`].

#![forbid(unsafe_code)]

mod columns;
pub mod fields;
mod pool;
pub mod views;

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use agui_core::log::{write_event, Event, Format, Limits, LogError, LogReader, Output, Part};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType, UInt64Type};
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

pub use fields::{Fields, RowError, Usage};
pub use views::{checked_columns, ColumnsFn, DictKeys, Trusted, Utf8Block, Utf8Strings, Utf8Views};
// The Arrow crates of this crate's types, for the binding.
pub use {arrow_array, arrow_buffer, arrow_schema};
use arrow_buffer::Buffer;
use columns::OptColumn;
use views::{JsonViews, StrColumn};

/// Rows per record batch (and per Parquet row group).
pub const BATCH_ROWS: usize = 65_536;
/// A batch is also closed when its JSON text reaches this size (the views' offsets into
/// the texts copied are u32).
const BATCH_JSON_BYTES: usize = 256 << 20;

/// The token-usage columns, in order (sums over the event's `usage` entries).
pub const USAGE_COLUMNS: [&str; 6] = [
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
];

fn dict() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The events table (see docs/logs.md).
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let mut fields = vec![
                Field::new("source", dict(), true),
                Field::new("index", DataType::UInt64, false),
                Field::new("offset", DataType::UInt64, false),
                Field::new("type", dict(), false),
                Field::new("timestamp", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), true),
            ];
            for name in ["thread_id", "run_id", "parent_run_id", "message_id", "tool_call_id", "role", "name", "delta"] {
                fields.push(Field::new(name, DataType::Utf8, true));
            }
            for name in USAGE_COLUMNS {
                fields.push(Field::new(name, DataType::Int64, true));
            }
            fields.push(Field::new("json", DataType::Utf8View, false));
            Arc::new(Schema::new(fields))
        })
        .clone()
}

/// The errors table of `collect` mode.
pub fn errors_schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("source", DataType::Utf8, true),
                Field::new("index", DataType::UInt64, true),
                Field::new("offset", DataType::UInt64, true),
                Field::new("error", DataType::Utf8, false),
                Field::new("message", DataType::Utf8, false),
                Field::new("field", DataType::Utf8, true),
            ]))
        })
        .clone()
}

/// One failure: an event that is not a valid row, or a log that cannot be read on.
/// `class` names an `agui_fast.errors` class (or `OSError` / `FileNotFoundError`).
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub source: Option<String>,
    pub index: Option<u64>,
    pub offset: Option<u64>,
    pub class: &'static str,
    pub message: String,
    pub field: Option<String>,
}

impl Issue {
    /// A log that cannot be read on.
    pub fn from_log_error(source: Option<String>, e: LogError) -> Self {
        let (index, offset) = e.position();
        Issue { source, index, offset, class: e.python_class(), message: e.to_string(), field: None }
    }

    fn from_row(source: &Option<String>, ev: &Event<'_>, e: RowError) -> Self {
        Issue {
            source: source.clone(),
            index: Some(ev.index),
            offset: Some(ev.offset),
            class: e.class,
            message: e.message,
            field: e.field,
        }
    }

    /// A failure of the output (or of the system), not of the input.
    fn io(message: String) -> Self {
        Issue { source: None, index: None, offset: None, class: "OSError", message, field: None }
    }

    /// A failed write: a reader that went away (`agui-fast convert -o - | head`) is told
    /// apart from other I/O errors, so the CLI can end quietly as pipes expect.
    fn write(e: &std::io::Error) -> Self {
        let class = if e.kind() == std::io::ErrorKind::BrokenPipe { "BrokenPipeError" } else { "OSError" };
        Issue { class, ..Issue::io(format!("cannot write the output: {e}")) }
    }

    /// One line: `file: message (frame N at byte offset M, field F)`.
    pub fn describe(&self) -> String {
        let mut where_ = Vec::new();
        if let Some(i) = self.index {
            where_.push(format!("frame {i}"));
        }
        if let Some(o) = self.offset {
            where_.push(format!("byte offset {o}"));
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

/// Where a log comes from.
pub enum Input<'a> {
    Path(PathBuf),
    Bytes(&'a [u8]),
    /// Bytes the `json` column may point into (no copy): kept alive by the table.
    Buffer(Buffer),
}

impl Input<'_> {
    /// The log's bytes when they are in memory.
    fn bytes(&self) -> Option<&[u8]> {
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
            columns: checked_columns,
        }
    }
}

/// Rows of one source become record batches.
pub struct BatchBuilder {
    source: Option<String>,
    rows: usize,
    /// Rows the vectors are sized for (a batch's first value in a column reserves them).
    capacity: usize,
    json_bytes: usize,
    index: Vec<u64>,
    offset: Vec<u64>,
    /// Keys into `EVENT_TYPES`, the dictionary of every batch (no hashing per row).
    ty: Vec<i32>,
    timestamp: OptColumn<TimestampMillisecondType>,
    strings: [StrColumn; 8],
    usage: [OptColumn<Int64Type>; 6],
    json: JsonViews,
    columns: ColumnsFn,
    /// The string columns of protobuf flat events' members, by type.
    flat: fields::FlatColumns,
}

impl BatchBuilder {
    pub fn new(source: Option<String>) -> Self {
        // Sized for a typical part of a log (a few thousand events), so that most
        // batches never regrow their buffers.
        const ROWS: usize = 8192;
        Self::with_capacity(source, ROWS)
    }

    /// A builder sized for `rows` rows.
    pub fn with_capacity(source: Option<String>, rows: usize) -> Self {
        BatchBuilder {
            source,
            rows: 0,
            capacity: rows,
            json_bytes: 0,
            index: Vec::with_capacity(rows),
            offset: Vec::with_capacity(rows),
            ty: Vec::with_capacity(rows),
            timestamp: OptColumn::default(),
            strings: std::array::from_fn(|_| StrColumn::with_capacity(rows)),
            usage: Default::default(),
            json: JsonViews::with_capacity(rows),
            columns: checked_columns,
            flat: fields::FlatColumns::default(),
        }
    }

    /// The `json`, string and `type` columns made by `columns` (see [`Options::columns`]).
    pub fn columns_with(mut self, columns: ColumnsFn) -> Self {
        self.columns = columns;
        self
    }

    /// The block the next events' texts are slices of (`None`: they are copied).
    pub fn set_part(&mut self, part: Option<Utf8Block>) {
        self.json.set_part(part);
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    fn full(&self) -> bool {
        self.rows >= BATCH_ROWS || self.json_bytes >= BATCH_JSON_BYTES
    }

    /// Append one event's row. The nullable columns only take the values present: most
    /// events carry few of the table's members, and the rows without one are filled in
    /// when a string column's next value comes, or when the batch is finished.
    #[inline]
    pub fn push(&mut self, ev: &Event<'_>, json: &str, f: &Fields<'_>) {
        let row = self.rows;
        self.index.push(ev.index);
        self.offset.push(ev.offset);
        self.ty.push(f.ty_index);
        if let Some(t) = f.timestamp {
            self.timestamp.set(row, t);
        }
        for (c, v) in self.strings.iter_mut().zip(f.string_columns()) {
            if let Some(v) = v {
                c.set(row, v.as_bytes());
            }
        }
        if let Some(u) = &f.usage {
            self.set_usage(row, u);
        }
        self.json.push(json);
        self.rows += 1;
        self.json_bytes += json.len();
    }

    /// Append the row of an event of a form `shape` has learned (`fields::Shape::
    /// read_form`), column by column, with no [`Fields`] in between: the row `push`
    /// would append from [`fields::read`]. `false` (nothing appended) when it has none.
    #[inline]
    pub fn push_form(&mut self, ev: &Event<'_>, json: &str, shape: &mut fields::Shape) -> bool {
        let Some(form) = shape.read_form(json) else { return false };
        self.push_row(ev, json, &form);
        true
    }

    /// [`BatchBuilder::push_form`] of the event `shape` has just found the form of
    /// (`fields::Shape::found_form`: a frame read ahead), with no match of its own.
    /// (Out of line, as `push_form` was: inlined into the framer's loop it took the loop's
    /// registers, stop 26; into `run`'s loop with the match, 135.10M against 133.83M,
    /// stop 29.)
    #[inline(never)]
    fn push_found(&mut self, ev: &Event<'_>, json: &str, shape: &mut fields::Shape) {
        let form = shape.found_form(json);
        self.push_row(ev, json, &form);
    }

    /// The row of a form's values (`fields::Shape::read_form`).
    #[inline(always)]
    fn push_row(&mut self, ev: &Event<'_>, json: &str, form: &fields::FormRow<'_>) {
        let row = self.rows;
        self.index.push(ev.index);
        self.offset.push(ev.offset);
        self.ty.push(form.ty);
        if let Some(t) = form.timestamp {
            self.timestamp.set(row, t);
        }
        // (The plain test once a row, not a value: most rows have no escaped value.)
        if form.plain() {
            for (c, v) in form.plain_values(json) {
                // (A value no column reads has a column past them: the bounds check is the filter.)
                if let Some(column) = self.strings.get_mut(usize::from(c)) {
                    column.set(row, v);
                }
            }
        } else {
            for (k, &c) in form.columns.iter().enumerate() {
                if let Some(column) = self.strings.get_mut(usize::from(c)) {
                    column.set(row, form.bytes(json, k, false));
                }
            }
        }
        if let Some(u) = form.usage {
            self.set_usage(row, u);
        }
        self.json.push(json);
        self.rows += 1;
        self.json_bytes += json.len();
    }

    /// Append the row of a protobuf flat event straight from its wire fields (its
    /// members the column values, its JSON text written once, into the `json` column):
    /// the row `push` would append from its text and [`fields::read`] with its members.
    /// `false` (nothing appended) when its arm's members are not read so
    /// ([`fields::FlatColumns`]).
    #[inline(always)]
    fn push_flat(&mut self, index: u64, offset: u64, flat: &agui_core::proto::Flat<'_>) -> bool {
        let Some(&columns) = self.flat.of(flat) else { return false };
        let row = self.rows;
        self.index.push(index);
        self.offset.push(offset);
        self.ty.push(flat.type_index() as i32);
        if let Some(t) = flat.timestamp() {
            self.timestamp.set(row, t);
        }
        // The members walked once: each value to its column as its text is written.
        let strings = &mut self.strings;
        let n = self.json.push_written(|out| {
            flat.write_json_each(out, None, |k, v| {
                // (A member no column reads has a column past them: the bounds check is the filter.)
                if let Some(column) = strings.get_mut(usize::from(columns[k])) {
                    column.set(row, v);
                }
            })
        });
        self.rows += 1;
        self.json_bytes += n;
        true
    }

    /// Append the row of a protobuf nested event ([`agui_core::proto::Nested`]) straight
    /// from its wire fields (its top-level string members the column values, its `usage`
    /// entries summed), its JSON text written once, into the `json` column: the row
    /// `push` would append from its text and [`fields::read`] with its members. `false`
    /// (nothing appended, block 0 as it was) when its type's members are not read so
    /// ([`fields::FlatColumns`]), its text fails (the text path gives the error) or is
    /// nested deeper than `max_depth` (the text path's row error). (Out of line: nested
    /// events are a few a run.)
    #[inline(never)]
    fn push_nested(&mut self, index: u64, offset: u64, nested: &agui_core::proto::Nested<'_>, max_depth: usize) -> bool {
        let Some(&columns) = self.flat.of_nested(nested) else { return false };
        // The text first: the row is appended only once it is written.
        let written = self.json.try_push_written(|out| {
            let start = out.len();
            nested.write_json(out) && !fields::too_deep(&out[start..], max_depth)
        });
        let Some(n) = written else { return false };
        let row = self.rows;
        self.index.push(index);
        self.offset.push(offset);
        self.ty.push(nested.type_index() as i32);
        if let Some(t) = nested.timestamp() {
            self.timestamp.set(row, t);
        }
        for (k, v) in nested.members() {
            // (A member no column reads has a column past them: the bounds check is the filter.)
            if let Some(column) = self.strings.get_mut(usize::from(columns[k])) {
                column.set(row, v);
            }
        }
        if let Some(entries) = nested.usage() {
            let mut sum = fields::Usage::default();
            entries.for_each(|e| sum.add_counts(e));
            self.set_usage(row, &sum);
        }
        self.rows += 1;
        self.json_bytes += n;
        true
    }

    /// The token counts of row `row`'s `usage` list (few events have one: out of line).
    #[cold]
    #[inline(never)]
    fn set_usage(&mut self, row: usize, u: &fields::Usage) {
        // (By position, not a zip with the columns: that was ~30 instructions a count.)
        for (k, v) in u.counts().into_iter().enumerate() {
            if let Some(v) = v {
                self.usage[k].set(row, v);
            }
        }
    }

    /// The rows so far as one batch; the builder starts over.
    pub fn finish(&mut self) -> RecordBatch {
        let (n, cap) = (self.rows, self.capacity);
        let source = source_column(self.source.as_deref(), n, self.columns);
        let ts_type = schema().field(4).data_type().clone();
        let timestamp: ArrayRef = match self.timestamp.finish(n) {
            Some(t) => Arc::new(t.with_data_type(ts_type)),
            None => all_null(&ts_type, n),
        };
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(source),
            Arc::new(columns::primitive::<UInt64Type>(&mut self.index, cap)),
            Arc::new(columns::primitive::<UInt64Type>(&mut self.offset, cap)),
            type_column(std::mem::replace(&mut self.ty, Vec::with_capacity(cap)), self.columns),
            timestamp,
        ];
        columns.extend(self.strings.iter_mut().map(|c| match c.finish(n) {
            Some(s) => (self.columns)(Trusted::Strings(s)),
            None => all_null(&DataType::Utf8, n),
        }));
        columns.extend(self.usage.iter_mut().map(|c| match c.finish(n) {
            Some(a) => Arc::new(a) as ArrayRef,
            None => all_null(&DataType::Int64, n),
        }));
        columns.push(self.json.finish(self.columns));
        self.rows = 0;
        self.json_bytes = 0;
        RecordBatch::try_new(schema(), columns).expect("the columns follow schema()")
    }
}

/// An all-null column of `n` rows: the first rows of one of [`BATCH_ROWS`] rows made
/// once per type (a slice: no copy). Most columns of most batches are all null: zeroed
/// buffers made for each batch were ~4% of `to_arrow`, as memset and fresh pages.
fn all_null(ty: &DataType, n: usize) -> ArrayRef {
    static MADE: Mutex<Vec<ArrayRef>> = Mutex::new(Vec::new());
    if n > BATCH_ROWS {
        return arrow_array::new_null_array(ty, n);
    }
    let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
    let column = match made.iter().find(|c| c.data_type() == ty) {
        Some(c) => c.clone(),
        None => {
            let c = arrow_array::new_null_array(ty, BATCH_ROWS);
            made.push(c.clone());
            c
        }
    };
    column.slice(0, n)
}

/// The `source` column of `n` rows: every key 0 (the one name) or null (no name).
/// Arrow's `try_new` checks every key against the dictionary (~20 instructions a row
/// for null keys, 1% of `to_arrow`); instead both columns are made and checked once and
/// sliced, and a name is put in by `with_values`, which keeps the checked keys (it only
/// asserts that the new dictionary is no shorter than the old one). Made once a process,
/// yet it showed in the counts of two calls: the keys 0 are checked by `DictKeys`, the
/// null keys not at all (an all-null column; `try_new` was 1.3M instructions for them).
fn source_column(name: Option<&str>, n: usize, make: ColumnsFn) -> DictionaryArray<Int32Type> {
    static NAMED: OnceLock<DictionaryArray<Int32Type>> = OnceLock::new();
    static NAMELESS: OnceLock<DictionaryArray<Int32Type>> = OnceLock::new();
    let values = |name: Option<&str>| -> ArrayRef { Arc::new(StringArray::from_iter_values(name)) };
    let keys = |n: usize, name: Option<&str>| match name {
        Some(_) => Int32Array::from(vec![0; n]),
        None => all_null(&DataType::Int32, n).as_primitive::<Int32Type>().clone(),
    };
    let checked = |n: usize, name: Option<&str>| {
        DictionaryArray::try_new(keys(n, name), values(name)).expect("every key is 0 and there is one value, or null")
    };
    if n > BATCH_ROWS {
        return checked(n, name);
    }
    match name {
        Some(name) => NAMED
            .get_or_init(|| {
                let keys = DictKeys::new(vec![0; BATCH_ROWS], values(Some(""))).expect("every key is 0 and there is one value");
                make(Trusted::Keys(keys)).as_dictionary::<Int32Type>().clone()
            })
            .slice(0, n)
            .with_values(values(Some(name))),
        None => NAMELESS.get_or_init(|| arrow_array::new_null_array(&dict(), BATCH_ROWS).as_dictionary::<Int32Type>().clone()).slice(0, n),
    }
}

/// The `type` column: keys into the 31 event type names (checked by `DictKeys`, ~1
/// instruction a key, and not again by `make`: arrow's `try_new` was ~15 a key).
fn type_column(keys: Vec<i32>, make: ColumnsFn) -> ArrayRef {
    static VALUES: OnceLock<ArrayRef> = OnceLock::new();
    let values = VALUES.get_or_init(|| Arc::new(StringArray::from_iter_values(agui_core::proto::EVENT_TYPES)));
    make(Trusted::Keys(DictKeys::new(keys, values.clone()).expect("every key is a position in EVENT_TYPES")))
}

/// The errors table.
pub fn errors_batch(issues: &[Issue]) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter(issues.iter().map(|i| i.source.as_deref()))),
        Arc::new(UInt64Array::from_iter(issues.iter().map(|i| i.index))),
        Arc::new(UInt64Array::from_iter(issues.iter().map(|i| i.offset))),
        Arc::new(StringArray::from_iter_values(issues.iter().map(|i| i.class))),
        Arc::new(StringArray::from_iter_values(issues.iter().map(|i| i.message.as_str()))),
        Arc::new(StringArray::from_iter(issues.iter().map(|i| i.field.as_deref()))),
    ];
    RecordBatch::try_new(errors_schema(), columns).expect("the columns follow errors_schema()")
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

/// Shared by the threads of one call: stop early (`errors="raise"` failed elsewhere)
/// and count the bytes read (a progress bar polls it).
#[derive(Debug, Default)]
pub struct Control {
    pub cancel: AtomicBool,
    pub bytes: AtomicU64,
}

enum Stop {
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
struct Counted<'c, R: Send> {
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

/// The one loop over a source's events (opened by the core reader): `sink` gets each
/// one; a log that cannot be opened or read on goes to `issues` (`collect`) or fails.
/// `Ok(None)` when cancelled.
fn each_event<F>(
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
    let failed = |issue: Issue, issues: &mut Vec<Issue>| if opts.collect { issues.push(issue); Ok(()) } else { Err(issue) };
    let reader = match &src.input {
        Input::Path(p) => match File::open(p) {
            Ok(f) => LogReader::open(Counted { inner: f, control }, opts.format),
            Err(e) => {
                let class = if e.kind() == std::io::ErrorKind::NotFound { "FileNotFoundError" } else { "OSError" };
                let message = format!("cannot open {}: {e}", p.display());
                failed(Issue { source: name.clone(), index: None, offset: None, class, message, field: None }, issues)?;
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
    let result = reader.for_each(&opts.limits, |ev| {
        sink(&ev, issues)?;
        if ev.index % 4096 == 0 && control.cancel.load(Ordering::Relaxed) {
            return Err(Stop::Cancelled);
        }
        Ok(())
    });
    match result {
        Ok(summary) => {
            info.bytes = summary.bytes;
            info.events = summary.events;
            Ok(Some(info))
        }
        Err(Stop::Cancelled) => Ok(None),
        Err(Stop::Issue(mut issue)) => {
            issue.source = name.clone();
            failed(issue, issues)?;
            Ok(Some(info))
        }
    }
}

/// One event as a row: `row` gets its columns, or the problem goes to `issues`
/// (`collect`) or stops the source.
/// `part`: the text of the part the event was framed from when it is valid UTF-8 (then
/// an event read straight from it needs no check of its own).
/// `shape`: the source's [`fields::Shape`], for its events in order.
fn row_event<F>(
    ev: &Event<'_>,
    part: Option<&str>,
    name: &Option<String>,
    opts: &Options,
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
                issues.push(issue);
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
fn within<'a>(bytes: &[u8], text: Option<&'a str>) -> Option<&'a str> {
    let text = text?;
    let start = (bytes.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    text.get(start..start.checked_add(bytes.len())?)
}

/// The one loop over a source's rows: `row` gets every valid event; bad events go to
/// `issues` (`collect`) or stop the source. `Ok(None)` when cancelled.
fn each_row<F>(
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
    each_event(src, opts, control, issues, |ev, issues| row_event(ev, None, &src.name, opts, issues, &mut shape, &mut row))
}

/// Events of one source packed for a worker: their JSON texts back to back.
#[derive(Default)]
struct Packed {
    seq: usize,
    data: Vec<u8>,
    /// (frame index, byte offset, end of its JSON text in `data`)
    events: Vec<(u64, u64, usize)>,
}

/// Payload bytes per part: big enough to amortise the hand-over, small enough to
/// balance the workers.
const PART_BYTES: usize = 1 << 20;

/// Decode one source on `workers` threads: the calling thread reads and frames it (the
/// core reader: cheap) and packs the events into parts; the workers turn parts into
/// batches. Positions come from the reader, so they are exact; results are put back in
/// order. Memory stays bounded: at most `2 * workers` parts wait.
fn decode_source_parallel(src: &Source<'_>, opts: &Options, control: &Control, workers: usize) -> Result<Option<Decoded>, Issue> {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc::sync_channel;

    let (tx, rx) = sync_channel::<Packed>(workers * 2);
    let rx = Mutex::new(rx);
    let results: Mutex<BTreeMap<usize, Result<Decoded, Issue>>> = Mutex::new(BTreeMap::new());
    // The first failing part (raise mode): parts after it are skipped, parts before it
    // still run, so the error reported is the first in the log.
    let failed_at = AtomicUsize::new(usize::MAX);
    let mut reader_issues = Vec::new();
    let read = std::thread::scope(|s| {
        let mut started = 0;
        for _ in 0..workers {
            let worker = spawn(s, || loop {
                let part = match rx.lock().unwrap_or_else(|p| p.into_inner()).recv() {
                    Ok(p) => p,
                    Err(_) => break,
                };
                if part.seq > failed_at.load(Ordering::Relaxed) {
                    continue;
                }
                let mut out = Decoded::default();
                let mut builder = BatchBuilder::new(src.name.clone()).columns_with(opts.columns);
                let mut shape = fields::Shape::default();
                let mut start = 0;
                let mut r = Ok(());
                for &(index, offset, end) in &part.events {
                    let ev = Event { index, offset, json: &part.data[start..end], members: None };
                    start = end;
                    r = row_event(&ev, None, &src.name, opts, &mut out.issues, &mut shape, &mut |ev, json, f| {
                        builder.push(ev, json, f)
                    });
                    if r.is_err() {
                        break;
                    }
                }
                let r = match r {
                    Ok(()) => {
                        if !builder.is_empty() {
                            out.batches.push(builder.finish());
                        }
                        Ok(out)
                    }
                    Err(Stop::Issue(issue)) => {
                        failed_at.fetch_min(part.seq, Ordering::Relaxed);
                        control.cancel.store(true, Ordering::Relaxed);
                        Err(issue)
                    }
                    Err(Stop::Cancelled) => unreachable!("row_event does not cancel"),
                };
                results.lock().unwrap_or_else(|p| p.into_inner()).insert(part.seq, r);
            });
            started += usize::from(worker.is_ok());
        }
        // No worker to be had (a process at its thread limit): read on this thread alone.
        if started == 0 {
            return None;
        }
        let mut part = Packed::default();
        let read = each_event(src, opts, control, &mut reader_issues, |ev, _| {
            part.data.extend_from_slice(ev.json);
            part.events.push((ev.index, ev.offset, part.data.len()));
            if part.data.len() >= PART_BYTES {
                let seq = part.seq + 1;
                let full = std::mem::replace(&mut part, Packed { seq, ..Packed::default() });
                // The workers only hang up when they are gone (a panic).
                tx.send(full).map_err(|_| Stop::Cancelled)?;
            }
            Ok(())
        });
        if !part.events.is_empty() {
            let _ = tx.send(part);
        }
        drop(tx);
        Some(read)
    });
    let Some(read) = read else { return decode_source(src, opts, control) };
    let mut out = Decoded::default();
    for (_, r) in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        let d = r?;
        out.batches.extend(d.batches);
        out.issues.extend(d.issues);
    }
    // A framing problem comes after every event before it.
    let info = read?;
    out.issues.extend(reader_issues);
    Ok(info.map(|_| out))
}

/// Parts of a plain source are at least this big (smaller ones cost more to hand out
/// than they save) ...
const PART_MIN: u64 = 256 << 10;
/// ... and at most this big: a worker holds one part of a file in memory, and a part
/// makes about one batch.
const PART_MAX: u64 = 4 << 20;

/// A source that can be cut into parts: not compressed, of a known format, not empty.
/// `None` for anything else (decoded whole, which also reports a source that cannot be
/// opened or read).
fn plain_source(src: &Source<'_>, opts: &Options) -> Option<(Format, u64)> {
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
enum PartStop {
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
struct PartOut {
    decoded: Decoded,
    frames: u64,
    stop: Option<PartStop>,
}

/// Decode one part (read from the file for a path: a worker holds one part at a time).
fn decode_part(src: &Source<'_>, format: Format, part: Part, opts: &Options, control: &Control) -> PartOut {
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
    match r {
        Ok(summary) => out.frames = summary.frames,
        Err(stop) => out.stop = Some(stop),
    }
    out
}

/// What [`decode_part`] writes a part's rows with: the framer's reader ahead and the
/// rows of its events.
struct PartRows<'o, 's> {
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
            _ => other_row(ev, self.text, self.src, self.opts, &mut self.builder, self.batches, self.issues, &mut self.shape),
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
    /// `examples/stages.rs`, stop 29: 133.83M, against 139.02M with `end` a call there
    /// and 138.31M with `end` and `push_found` two calls from the framer's own loop).
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
fn other_row(
    ev: &Event<'_>,
    text: Option<&str>,
    src: &Source<'_>,
    opts: &Options,
    builder: &mut BatchBuilder,
    batches: &mut Vec<RecordBatch>,
    issues: &mut Vec<Issue>,
    shape: &mut fields::Shape,
) -> Result<(), Stop> {
    row_event(ev, text, &src.name, opts, issues, shape, &mut |ev, json, f| {
        builder.push(ev, json, f);
        if builder.full() {
            batches.push(builder.finish());
        }
    })
}

/// `batch` with `by` added to its frame indices: in place, as the batch is the only owner
/// of its index column (a copy was 8 fresh bytes a row, written on the calling thread
/// after every worker is done: the serial end of a call).
fn shift_index(batch: RecordBatch, by: u64) -> RecordBatch {
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
fn cut_targets(len: u64, workers: usize) -> Vec<u64> {
    let w = workers as u64;
    if w > 1 && len.div_ceil(4 * w) >= PART_MIN && (3 * len).div_ceil(4 * w) <= PART_MAX {
        let big = 3 * len / (4 * w);
        let small = (len - big * w) / w;
        return (1..2 * w).map(|k| if k <= w { big * k } else { big * w + small * (k - w) }).collect();
    }
    let parts = if w > 1 { (w * 4).max(len.div_ceil(PART_MAX)) } else { len.div_ceil(PART_MAX) };
    agui_core::log::even_cuts(len, parts.min(len.div_ceil(PART_MIN)))
}

/// Decode a plain source cut at frame boundaries into parts, on `workers` threads: each
/// part is framed and parsed on its own (no thread reads the whole log), then the parts
/// are put back in order and their frame indices made those of the whole log, so rows,
/// positions and the first error are those of a sequential read. Memory: one part per
/// worker besides the batches.
fn decode_source_parts(
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
    let mut decoded = Decoded::default();
    let mut base = 0u64;
    for out in outs {
        let Some(out) = out.into_inner().unwrap_or_else(|p| p.into_inner()) else {
            return Ok(None); // cancelled before it ran
        };
        decoded.batches.extend(out.decoded.batches.into_iter().map(|b| shift_index(b, base)));
        decoded.issues.extend(out.decoded.issues.into_iter().map(|mut i| {
            i.index = i.index.map(|i| i + base);
            i
        }));
        let ended = match out.stop {
            None => {
                base += out.frames;
                continue;
            }
            Some(PartStop::Log(mut e)) => {
                e.shift_index(base);
                Issue::from_log_error(src.name.clone(), e)
            }
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
        decoded.issues.push(ended);
        break;
    }
    Ok(Some(decoded))
}

/// Decode one source on `threads` threads: cut into parts when it is plain, else read
/// whole by the core reader (on more threads: framed by the calling thread, parsed by
/// the others).
fn decode_one(src: &Source<'_>, opts: &Options, control: &Control, threads: usize) -> Result<Option<Decoded>, Issue> {
    match plain_source(src, opts) {
        Some((format, len)) => decode_source_parts(src, format, len, opts, control, threads),
        None if threads > 1 => decode_source_parallel(src, opts, control, threads),
        None => decode_source(src, opts, control),
    }
}

/// The batches and issues of one source.
#[derive(Default)]
pub struct Decoded {
    pub batches: Vec<RecordBatch>,
    pub issues: Vec<Issue>,
}

/// Decode one source into record batches.
pub fn decode_source(src: &Source<'_>, opts: &Options, control: &Control) -> Result<Option<Decoded>, Issue> {
    let mut out = Decoded::default();
    let mut builder = BatchBuilder::new(src.name.clone()).columns_with(opts.columns);
    let info = each_row(src, opts, control, &mut out.issues, |ev, json, f| {
        builder.push(ev, json, f);
        if builder.full() {
            out.batches.push(builder.finish());
        }
    })?;
    if info.is_none() {
        return Ok(None);
    }
    if !builder.is_empty() {
        out.batches.push(builder.finish());
    }
    Ok(Some(out))
}

/// Run `work` on `threads` threads (`work` takes its items from a shared counter until
/// none are left, so any of them can do all of it): `threads` workers of the kept pool
/// ([`pool`]) while the calling thread waits, or, when there is no pool to be had, the
/// calling thread and `threads - 1` scoped ones. The calling thread takes no share on the
/// pool: its allocator heap is the cold one (what it allocates is freed with the table and
/// purged before its next call, so the kernel zeroed fresh pages for it every call, ~3% of
/// a call's CPU in `perf`, none on a worker, whose heap gets the pages freed to it back at
/// its next call). Stop 24: two threads cost 8-13% more CPU than one with the caller
/// working, ~3% with it waiting. A thread that cannot be started (a process at its thread
/// limit) is not an error: the others, the calling thread at least, do its share.
fn run_on<F: Fn() + Sync>(threads: usize, work: F) {
    if threads <= 1 {
        return work();
    }
    if let Some(pool) = pool::get(threads) {
        return pool.in_place_scope(|s| {
            for _ in 0..threads {
                s.spawn(|_| work());
            }
        });
    }
    std::thread::scope(|s| {
        for _ in 1..threads {
            if spawn(s, &work).is_err() {
                break;
            }
        }
        work();
    });
}

/// A scoped thread (`Err` at the process's thread limit, or in a test that asks for it).
fn spawn<'s, 'e, F: FnOnce() + Send + 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    f: F,
) -> std::io::Result<std::thread::ScopedJoinHandle<'s, ()>> {
    #[cfg(test)]
    if tests::NO_THREADS.with(std::cell::Cell::get) {
        return Err(std::io::Error::other("no thread (test)"));
    }
    std::thread::Builder::new().spawn_scoped(s, f)
}

/// One source's outcome, filled by whichever thread decoded it (`None` until then).
type Slot = Mutex<Option<Result<Option<Decoded>, Issue>>>;

/// Decode many sources, `threads` at a time (each source on one thread), in source
/// order. Without `collect`, the first failing source (in order) fails the call and
/// the others stop early.
pub fn decode_many(sources: &[Source<'_>], threads: usize, opts: &Options, control: &Control) -> Result<Decoded, Issue> {
    // Fewer sources than threads: one source at a time, its events parsed on every
    // thread. Otherwise one source per thread.
    let pipelined = threads > 1 && sources.len() < threads;
    let threads = if pipelined { threads } else { threads.clamp(1, sources.len().max(1)) };
    let runners = if pipelined { 1 } else { threads };
    let results: Vec<Slot> = sources.iter().map(|_| Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(src) = sources.get(i) else { break };
        if control.cancel.load(Ordering::Relaxed) {
            break;
        }
        let r = decode_one(src, opts, control, if pipelined { threads } else { 1 });
        if r.is_err() {
            control.cancel.store(true, Ordering::Relaxed);
        }
        *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    };
    run_on(runners, work);
    let mut out = Decoded::default();
    let mut first_error = None;
    for r in results {
        match r.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(Ok(Some(d))) => {
                out.batches.extend(d.batches);
                out.issues.extend(d.issues);
            }
            Some(Err(e)) if first_error.is_none() => first_error = Some(e),
            _ => {}
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Counts of [`write_parquet`].
#[derive(Debug, Clone, Default)]
pub struct WriteInfo {
    pub rows: u64,
    pub bytes_in: u64,
    pub issues: Vec<Issue>,
}

/// Stream the sources, one after the other, into one Parquet file (snappy, one row
/// group per [`BATCH_ROWS`] rows): memory stays that of one batch and one row group.
pub fn write_parquet<W: Write + Send>(
    sources: &[Source<'_>],
    opts: &Options,
    control: &Control,
    out: W,
) -> Result<WriteInfo, Issue> {
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;

    let parquet_issue = |e: parquet::errors::ParquetError| Issue::io(format!("cannot write Parquet: {e}"));
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(BATCH_ROWS))
        .build();
    let mut writer = ArrowWriter::try_new(out, schema(), Some(props)).map_err(parquet_issue)?;
    let mut info = WriteInfo::default();
    let mut write_error = None;
    for src in sources {
        let mut builder = BatchBuilder::new(src.name.clone()).columns_with(opts.columns);
        let mut flush = |builder: &mut BatchBuilder, writer: &mut ArrowWriter<W>| {
            if write_error.is_none() {
                if let Err(e) = writer.write(&builder.finish()) {
                    write_error = Some(parquet_issue(e));
                }
            } else {
                builder.finish();
            }
        };
        // Rows written, not events seen: with `collect`, bad events are in `issues` only.
        let mut written = 0u64;
        let seen = each_row(src, opts, control, &mut info.issues, |ev, json, f| {
            builder.push(ev, json, f);
            written += 1;
            if builder.full() {
                flush(&mut builder, &mut writer);
            }
        })?;
        if !builder.is_empty() {
            flush(&mut builder, &mut writer);
        }
        if let Some(e) = write_error.take() {
            return Err(e);
        }
        info.rows += written;
        if let Some(s) = seen {
            info.bytes_in += s.bytes;
        }
    }
    writer.close().map_err(parquet_issue)?;
    Ok(info)
}

/// Stream the sources' events, one after the other, into `out` as SSE, protobuf or
/// JSON lines. Each event is checked as a row first (JSON, `type`, the table's members),
/// so what is written is what `to_arrow` would read.
pub fn convert<W: Write>(
    sources: &[Source<'_>],
    opts: &Options,
    control: &Control,
    to: Output,
    out: &mut W,
) -> Result<WriteInfo, Issue> {
    let mut info = WriteInfo::default();
    let mut buf = Vec::with_capacity(1 << 20);
    // Encoding problems (protobuf output only) are per event: collected like the rows'
    // own, or the first one fails the call. A write error always does.
    let mut encode_issues = Vec::new();
    let mut failure: Option<Issue> = None;
    let io_issue = |e: std::io::Error| Issue::write(&e);
    for src in sources {
        let mut written = 0u64;
        let seen = each_row(src, opts, control, &mut info.issues, |ev, json, _| {
            if failure.is_some() {
                return;
            }
            let mark = buf.len();
            if let Err(e) = write_event(&mut buf, to, json.as_bytes()) {
                buf.truncate(mark);
                let issue = Issue {
                    source: src.name.clone(),
                    index: Some(ev.index),
                    offset: Some(ev.offset),
                    class: e.python_class(),
                    message: e.to_string(),
                    field: None,
                };
                if opts.collect {
                    encode_issues.push(issue);
                } else {
                    failure = Some(issue);
                }
                return;
            }
            written += 1;
            if buf.len() >= 1 << 20 {
                if let Err(e) = out.write_all(&buf) {
                    failure = Some(io_issue(e));
                }
                buf.clear();
            }
        })?;
        if let Some(f) = failure.take() {
            return Err(f);
        }
        info.rows += written;
        if let Some(s) = seen {
            info.bytes_in += s.bytes;
        }
    }
    out.write_all(&buf).and_then(|_| out.flush()).map_err(io_issue)?;
    info.issues.extend(encode_issues);
    Ok(info)
}

/// What `agui-fast inspect` prints for a log.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub format: Option<Format>,
    pub gzip: bool,
    pub bytes: u64,
    pub events: u64,
    pub types: BTreeMap<String, u64>,
    pub runs: usize,
    pub threads: usize,
    pub messages: usize,
    pub tool_calls: usize,
    pub usage: [Option<i64>; 6],
    pub first_timestamp: Option<i64>,
    pub last_timestamp: Option<i64>,
    pub issues: Vec<Issue>,
}

/// Aggregate one source's rows (with `collect`, bad events are listed, not fatal).
pub fn inspect(src: &Source<'_>, opts: &Options, control: &Control) -> Result<Report, Issue> {
    let mut report = Report::default();
    let mut runs = HashSet::new();
    let mut threads = HashSet::new();
    let mut messages = HashSet::new();
    let mut tool_calls = HashSet::new();
    let mut issues = Vec::new();
    let mut by_type = [0u64; agui_core::proto::EVENT_TYPES.len()];
    let info = each_row(src, opts, control, &mut issues, |_, _, f| {
        by_type[f.ty_index as usize] += 1;
        for (set, v) in [
            (&mut runs, f.run_id()),
            (&mut threads, f.thread_id()),
            (&mut messages, f.message_id()),
            (&mut tool_calls, f.tool_call_id()),
        ] {
            if let Some(v) = v {
                if !set.contains(v) {
                    set.insert(v.to_string());
                }
            }
        }
        if let Some(u) = f.usage {
            for (acc, v) in report.usage.iter_mut().zip(u.counts()) {
                if let Some(v) = v {
                    *acc = Some(acc.unwrap_or(0).saturating_add(v));
                }
            }
        }
        if let Some(t) = f.timestamp {
            report.first_timestamp = Some(report.first_timestamp.map_or(t, |m| m.min(t)));
            report.last_timestamp = Some(report.last_timestamp.map_or(t, |m| m.max(t)));
        }
    })?
    .unwrap_or_default();
    for (name, n) in agui_core::proto::EVENT_TYPES.iter().zip(by_type) {
        if n > 0 {
            report.types.insert(name.to_string(), n);
        }
    }
    report.format = info.format;
    report.gzip = info.gzip;
    report.bytes = info.bytes;
    report.events = report.types.values().sum();
    report.runs = runs.len();
    report.threads = threads.len();
    report.messages = messages.len();
    report.tool_calls = tool_calls.len();
    report.issues = issues;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;

    thread_local! {
        /// No thread can be started from this thread (`spawn`), as at a thread limit.
        pub(super) static NO_THREADS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    fn log() -> Vec<u8> {
        let mut out = Vec::new();
        for e in [
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","timestamp":1000}"#,
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hé"}"#,
            r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"llo"}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","timestamp":3000,"usage":[{"inputTokens":2,"outputTokens":5}]}"#,
        ] {
            agui_core::sse::write_event(&mut out, e.as_bytes());
        }
        out
    }

    fn bytes(data: &[u8], name: &str) -> Source<'static> {
        Source { input: Input::Bytes(Box::leak(data.to_vec().into_boxed_slice())), name: Some(name.into()) }
    }

    #[test]
    fn batches_follow_the_schema() {
        let d = decode_many(&[bytes(&log(), "a")], 1, &Options::default(), &Control::default()).unwrap();
        assert_eq!(d.batches.len(), 1);
        let b = &d.batches[0];
        assert_eq!(b.schema(), schema());
        assert_eq!(b.num_rows(), 5);
        let delta = b.column_by_name("delta").unwrap().as_string::<i32>();
        assert_eq!(delta.value(2), "hé");
        assert!(delta.is_null(0));
        let input = b.column_by_name("input_tokens").unwrap().as_primitive::<arrow_array::types::Int64Type>();
        assert_eq!(input.value(4), 2);
        assert!(input.is_null(3));
        let json = b.column_by_name("json").unwrap().as_string_view();
        assert!(json.value(0).starts_with(r#"{"type":"RUN_STARTED""#));
    }

    /// The sliced, renamed `source` column is the one arrow's checked constructor makes,
    /// whatever name came before (the column made once keeps none of them).
    #[test]
    fn source_column_is_the_checked_one() {
        for n in [0, 1, 7, BATCH_ROWS - 1, BATCH_ROWS, BATCH_ROWS + 3] {
            for name in [Some("a"), None, Some("bé"), Some("")] {
                let got = source_column(name, n, checked_columns);
                let keys = match name {
                    Some(_) => Int32Array::from(vec![0; n]),
                    None => Int32Array::from(vec![None; n]),
                };
                let want = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(StringArray::from_iter_values(name))).unwrap();
                assert_eq!(got.to_data(), want.to_data(), "{name:?}, {n} rows");
                assert_eq!(got.data_type(), schema().field(0).data_type());
                if n > 0 {
                    let last = got.downcast_dict::<StringArray>().unwrap().into_iter().last().unwrap();
                    assert_eq!(last, name);
                }
            }
        }
    }

    #[test]
    fn many_sources_in_parallel_keep_their_order() {
        let srcs: Vec<_> = (0..5).map(|i| bytes(&log(), &format!("s{i}"))).collect();
        let d = decode_many(&srcs, 3, &Options::default(), &Control::default()).unwrap();
        let names: Vec<String> = d
            .batches
            .iter()
            .map(|b| {
                let s = b.column(0).as_dictionary::<Int32Type>();
                s.values().as_string::<i32>().value(0).to_string()
            })
            .collect();
        assert_eq!(names, vec!["s0", "s1", "s2", "s3", "s4"]);
    }

    #[test]
    fn cut_targets_sizes() {
        let sizes = |len: u64, w: usize| {
            let t = cut_targets(len, w);
            let mut cuts = vec![0];
            cuts.extend(t);
            cuts.push(len);
            cuts.windows(2).map(|c| c[1] - c[0]).collect::<Vec<u64>>()
        };
        let mib = 1 << 20;
        // Two threads, 8 MiB: 3/8, 3/8, 1/8, 1/8 (the smallest parts of 4 x 2 even ones).
        assert_eq!(sizes(8 * mib, 2), [3 * mib, 3 * mib, mib, mib]);
        // Too big for it (parts over PART_MAX) or too small (parts under PART_MIN): even.
        assert_eq!(sizes(64 * mib, 2), [4 * mib; 16]);
        assert_eq!(sizes(mib, 2), [256 << 10; 4]);
        assert_eq!(sizes(8 * mib, 1), [4 * mib; 2]);
        assert_eq!(sizes(100, 4), [100]);
        let s = sizes(9 * mib + 7, 3);
        assert_eq!((s.len(), s.iter().sum::<u64>()), (6, 9 * mib + 7));
        assert!(s[..3].iter().all(|&b| b <= PART_MAX) && s[3..].iter().all(|&b| b >= PART_MIN));
    }

    /// A part's frame indices are made the log's in the batch's own buffer; one shared
    /// elsewhere is copied, not changed under its other owner.
    #[test]
    fn shift_index_in_place() {
        let d = decode_source(&bytes(&log(), "s"), &Options::default(), &Control::default()).unwrap().unwrap();
        let batch = d.batches[0].clone();
        let index = |b: &RecordBatch| b.column(1).as_primitive::<UInt64Type>().clone();
        let before = index(&batch);
        let want: Vec<u64> = before.values().iter().map(|i| i + 7).collect();
        // `before` shares the buffer: copied.
        let shifted = shift_index(batch, 7);
        assert_eq!(index(&shifted).values().to_vec(), want);
        assert_eq!(before.values().iter().map(|i| i + 7).collect::<Vec<_>>(), want);
        let ptr = before.values().as_ptr();
        drop(before);
        // The only owner: the same buffer.
        let ptr2 = index(&shifted).values().as_ptr();
        let again = shift_index(shifted, 1);
        assert_eq!(index(&again).values().as_ptr(), ptr2);
        assert_ne!(ptr, ptr2);
        assert_eq!(index(&again).values().to_vec(), want.iter().map(|i| i + 1).collect::<Vec<_>>());
    }

    #[test]
    fn one_big_source_on_several_threads_is_the_same_table() {
        let mut big = Vec::new();
        for _ in 0..12_000 {
            big.extend_from_slice(&log());
        }
        let mut bad = big.clone();
        agui_core::sse::write_event(&mut bad, br#"{"type":"NOPE"}"#);
        bad.extend_from_slice(&big);
        agui_core::sse::write_event(&mut bad, br#"{"type":7}"#);
        bad.extend_from_slice(&log());
        let rows = |d: &Decoded| -> Vec<(u64, u64, String)> {
            d.batches
                .iter()
                .flat_map(|b| {
                    let idx = b.column(1).as_primitive::<arrow_array::types::UInt64Type>().clone();
                    let off = b.column(2).as_primitive::<arrow_array::types::UInt64Type>().clone();
                    let json = b.column_by_name("json").unwrap().as_string_view().clone();
                    (0..b.num_rows()).map(move |i| (idx.value(i), off.value(i), json.value(i).to_string()))
                })
                .collect()
        };
        let src = [bytes(&big, "big")];
        let one = decode_many(&src, 1, &Options::default(), &Control::default()).unwrap();
        let three = decode_many(&src, 3, &Options::default(), &Control::default()).unwrap();
        assert!(three.batches.len() > 2);
        assert_eq!(rows(&one), rows(&three));

        let src = [bytes(&bad, "bad")];
        let e1 = decode_many(&src, 1, &Options::default(), &Control::default()).err().unwrap();
        let e3 = decode_many(&src, 3, &Options::default(), &Control::default()).err().unwrap();
        assert_eq!(e1, e3);
        assert_eq!(e1.index, Some(60_000));
        let opts = Options { collect: true, ..Options::default() };
        let c1 = decode_many(&src, 1, &opts, &Control::default()).unwrap();
        let c3 = decode_many(&src, 3, &opts, &Control::default()).unwrap();
        assert_eq!(c1.issues, c3.issues);
        assert_eq!(c1.issues.len(), 2);
        assert_eq!(rows(&c1), rows(&c3));
    }

    /// (index, offset, type key, delta, json) of every row.
    fn row_values(d: &Decoded) -> Vec<(u64, u64, i32, Option<String>, String)> {
        d.batches
            .iter()
            .flat_map(|b| {
                let idx = b.column(1).as_primitive::<UInt64Type>().clone();
                let off = b.column(2).as_primitive::<UInt64Type>().clone();
                let ty = b.column(3).as_dictionary::<Int32Type>().keys().clone();
                let delta = b.column_by_name("delta").unwrap().as_string::<i32>().clone();
                let json = b.column_by_name("json").unwrap().as_string_view().clone();
                (0..b.num_rows()).map(move |i| {
                    let d = (!delta.is_null(i)).then(|| delta.value(i).to_string());
                    (idx.value(i), off.value(i), ty.value(i), d, json.value(i).to_string())
                })
            })
            .collect()
    }

    #[test]
    fn parts_match_the_sequential_reader() {
        let mut log = Vec::new();
        for i in 0..30_000 {
            match i % 1000 {
                // Multi-line payloads are joined by the framer (not a slice of the part).
                7 => log.extend_from_slice(b"data: {\"type\":\"CUSTOM\",\ndata: \"name\":\"a\",\"value\":1}\n\n"),
                // Invalid UTF-8 becomes U+FFFD.
                8 => log.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"\xff\"}\n\n"),
                9 => log.extend_from_slice(b": keep-alive\r\n\r\n"),
                _ => agui_core::sse::write_event(
                    &mut log,
                    format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d\"{i}"}}"#).as_bytes(),
                ),
            }
        }
        let src = [bytes(&log, "x")];
        let seq = decode_source(&src[0], &Options::default(), &Control::default()).unwrap().unwrap();
        let want = row_values(&seq);
        assert_eq!(want.len(), 29_970);
        assert_eq!(want[8].3.as_deref(), Some("\u{fffd}"));
        assert!(want[7].4.contains('\n'));
        // A shared buffer (the binding's `bytes`): the json column points into it (parts
        // with invalid UTF-8 are copied: none here), through arrow's checked constructor
        // (`Options::default()`), which holds `Utf8Views` to its guarantee.
        let clean: Vec<u8> = log.iter().map(|&c| if c == 0xff { b'?' } else { c }).collect();
        let want_clean = row_values(&decode_source(&bytes(&clean, "x"), &Options::default(), &Control::default()).unwrap().unwrap());
        let shared = [Source { input: Input::Buffer(Buffer::from(clean.as_slice())), name: Some("x".into()) }];
        for threads in [1, 2, 5] {
            let d = decode_many(&src, threads, &Options::default(), &Control::default()).unwrap();
            assert_eq!(row_values(&d), want, "{threads} threads");
            let d = decode_many(&shared, threads, &Options::default(), &Control::default()).unwrap();
            assert_eq!(row_values(&d), want_clean, "{threads} threads, shared");
            let Input::Buffer(b) = &shared[0].input else { unreachable!() };
            let inside = |a: &arrow_array::StringViewArray| {
                a.data_buffers().iter().any(|d| d.as_ptr() >= b.as_ptr() && d.as_ptr() < b.as_ptr().wrapping_add(b.len()))
            };
            assert!(d.batches.iter().all(|x| inside(x.column_by_name("json").unwrap().as_string_view())));
        }
    }

    /// Random logs of events in runs of one form (what templates learn) with every kind of
    /// deviation mixed in: other values (escapes, unicode, control bytes, raw or escaped,
    /// invalid UTF-8, numbers, null, nested values, empty strings), members added, given
    /// twice, reordered or spaced, unknown types, truncated or trailing text, and SSE
    /// framing of every kind (CR, LF, CRLF, comments, `event:`/`id:` fields, multi-line
    /// data, a frame cut at the end).
    /// `bad_utf8`: some events with an invalid byte (then the parts holding them are read
    /// event by event, not as checked text).
    fn shaped_log(seed: u64, events: usize, bad_utf8: bool) -> Vec<u8> {
        use agui_core::test_rng::Rng;
        let mut rng = Rng(seed | 1);
        const VALUES: [&str; 22] = [
            "\"m1\"", "\"hello \"", "\"\"", "\"h\u{e9}llo \u{2713}\u{1f600}\"", "\"a\\\"b\"", "\"a\\\\\"", "\"\\u00e9\"",
            "\"\\ud83d\\ude00\"", "\"\\ud800\"", "\"\\x\"", "\"tab\there\"", "\"nl\nx\"", "\"ctl\u{1}\"", "\"del\u{7f}\"",
            "5", "-1", "1.5", "null", "true", "{\"a\":[1,\"x\"]}", "[1,2]", "\"{\\\"q\\\": 1}\"",
        ];
        // Strings with escapes (templates read them: `fields::Template`): every escape,
        // `\u` pairs in both cases, lone and broken surrogates, bad escapes, an escaped
        // quote or backslash at the value's end, an escaped quote where the string ends
        // (`"a\"` then the next member: not JSON), raw control bytes after an escape.
        const ESCAPED: [&str; 24] = [
            "\"\\\"\"", "\"a\\\"\"", "\"a\\\\\"", "\"\\\\\\\"\"", "\"\\\\\\\\\"", "\"\\/\\b\\f\\n\\r\\t\"",
            "\"x\\uD83D\\uDE00y\"", "\"\\uDBFF\\uDFFF\"", "\"\\ud83d\\u0041\"", "\"\\ud83dx\"", "\"\\udc00\"",
            "\"\\uDFFF\\uDBFF\"", "\"\\ud83d\"", "\"\\u00e9\\u0000\\u001F\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\x\"",
            "\"\\\"", "\"a\\\"", "\"\\n\n\"", "\"\\t\u{1}\"", "\"\\u2028\u{2028}\"",
            "\"\\\"}\"", "\"{\\\"a\\\":[1,\\\"\\\\n\\\"]}\"",
        ];
        // Timestamps: integers (the slot reads them) and everything near them: zero,
        // signs, leading zeros, fractions and exponents, the ends of i64 and past them,
        // strings, null, broken numbers.
        const TIMESTAMPS: [&str; 26] = [
            "0", "-0", "-5", "00", "01", "-01", "1e3", "1E3", "1.0", "1.", "1.5e3", "1.5", "-1.0e0", "+1", ".5", "-",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
            "123456789012345678901234567890", "\"12\"", "\"x\"", "null", "1e400", "[1]",
        ];
        // Nested values (templates skip them as the scan does): patches and snapshots,
        // empty ones, line breaks and spaces inside, escapes the skip passes (a lone
        // surrogate) or not, deep ones (past a small depth limit), invalid JSON, an object
        // where a patch is an array, and not nested at all.
        const NESTED: [&str; 18] = [
            "[{\"op\":\"replace\",\"path\":\"/status\",\"value\":\"done\"}]", "{\"run\":1,\"steps\":[],\"status\":\"x\"}",
            "[]", "{}", "[1,\n2]", "[1, {\"a\" : \"\\ud800\"}]", "{\"a\":\"\\u12\"}", "[[[[1]]]]", "{\"a\":{\"b\":{\"c\":[]}}}",
            "[1,]", "[1e400]", "{\"a\":1", "[\"x\u{1}\"]", "\"s\"", "5", "null", "{\"\\ud800\":1}", "{\"op\":1}",
        ];
        // `usage` lists (templates sum the compact ones as `compact_usage` does): counts
        // summed, saturated, twice, `-0`, negative, fractions, past i64, leading zeros,
        // not integers, whitespace and line breaks, escapes, control bytes, nested
        // members, trailing commas, cut, deeper (past a limit of 3), not lists.
        const USAGES: [&str; 30] = [
            "[{\"provider\":\"p\",\"inputTokens\":101,\"outputTokens\":40}]", "[{\"inputTokens\":2}]", "[]", "[{}]",
            "[{\"inputTokens\":1},{\"inputTokens\":2,\"totalTokens\":3}]", "[{\"inputTokens\":-0}]",
            "[{\"inputTokens\":-1}]", "[{\"inputTokens\":1,\"inputTokens\":2}]", "[{\"inputTokens\":null}]",
            "[{\"inputTokens\":1.5}]", "[{\"inputTokens\":9223372036854775807},{\"inputTokens\":1}]",
            "[{\"inputTokens\":9223372036854775808}]", "[{\"inputTokens\":01}]", "[ {\"inputTokens\":1}]",
            "[{\"inputTokens\":1}\n]", "[{\"provider\":\"a\\\"b\"}]", "[{\"provider\":\"x\u{1}\"}]",
            "[{\"model\":[1]}]", "[{\"inputTokens\":1},]", "[{\"inputTokens\":1}", "{\"inputTokens\":1}", "3",
            "null", "\"x\"", "[[{\"inputTokens\":1}]]", "[{\"inputTokens\":\"5\"}]", "[{\"inputTokens\":1e2}]",
            "[{\"x\":-5,\"cacheWriteInputTokens\":7}]", "[{\"n\":-0,\"reasoningTokens\":0}]", "[{\"in\\u0070utTokens\":1}]",
        ];
        const FORMS: [&[&str]; 16] = [
            // The `name` column takes `name`, else `toolCallName`, else `stepName`.
            &["STEP_FINISHED", "stepName", "toolCallName", "name"],
            &["STEP_FINISHED", "stepName", "toolCallName"],
            &["TEXT_MESSAGE_CONTENT", "messageId", "delta"],
            &["TOOL_CALL_ARGS", "toolCallId", "delta"],
            &["TEXT_MESSAGE_START", "messageId", "role"],
            &["TOOL_CALL_START", "toolCallId", "toolCallName", "parentMessageId"],
            &["RUN_STARTED", "threadId", "runId"],
            &["STEP_STARTED", "stepName"],
            &["NOPE", "messageId", "delta"],
            // An integer timestamp first, or last (then `}` follows it).
            &["RUN_STARTED", "timestamp", "threadId", "runId"],
            &["RUN_FINISHED", "threadId", "runId", "timestamp"],
            // Nested values: a patch (`delta` of STATE_DELTA), a member not read.
            &["STATE_DELTA", "delta"],
            &["STATE_SNAPSHOT", "snapshot"],
            &["TOOL_CALL_START", "toolCallId", "args", "toolCallName"],
            // A `usage` list, last or between strings.
            &["RUN_FINISHED", "threadId", "runId", "usage"],
            &["RUN_FINISHED", "threadId", "usage", "runId"],
        ];
        let mut log = Vec::new();
        if rng.below(4) == 0 {
            log.extend_from_slice(b"\xef\xbb\xbf");
        }
        let mut n = 0;
        while n < events {
            let form = FORMS[rng.below(FORMS.len())];
            // Mostly values a template reads (plain strings, JSON in a string as tool
            // calls' argument deltas, integer timestamps), so that templates are learned
            // and read.
            let nested = matches!(form[0], "STATE_DELTA" | "STATE_SNAPSHOT" | "TOOL_CALL_START");
            let value = |rng: &mut Rng, key: &str| -> String {
                if nested && matches!(key, "delta" | "snapshot" | "args") {
                    return match rng.below(3) {
                        0 => rng.pick(&NESTED).to_string(),
                        _ => format!("[{{\"op\":\"add\",\"path\":\"/a\",\"value\":{}}}]", rng.below(1000)),
                    };
                }
                if key == "usage" {
                    return match rng.below(3) {
                        0 => rng.pick(&USAGES).to_string(),
                        _ => format!("[{{\"provider\":\"p\",\"inputTokens\":{},\"outputTokens\":40}}]", rng.below(1000)),
                    };
                }
                if key == "timestamp" {
                    return match rng.below(4) {
                        0 => rng.pick(&TIMESTAMPS).to_string(),
                        _ => format!("{}", 1_700_000_000_000u64 + rng.below(100_000) as u64),
                    };
                }
                match rng.below(8) {
                    0 => rng.pick(&VALUES).to_string(),
                    1 => rng.pick(&ESCAPED).to_string(),
                    2 => format!("\"{{\\\"q{}\\\": \"", rng.below(1000)),
                    _ => format!("\"v{}\"", rng.below(1000)),
                }
            };
            // A first value repeated through half the runs (ids: `fields::Guess` ends it
            // as the last one), among values that start as it does and go on (longer, an
            // escape, a quote or a control byte after it), shorter ones, ones of its
            // length ending at a quote but not plain (an escape, a control byte), and
            // ones of 15 and 16 bytes.
            const FIRSTS: [&str; 12] = [
                "\"v1\"", "\"v10\"", "\"v1\\n\"", "\"v1\\\"\"", "\"v1\u{1}\"", "\"v\"", "\"\"", "\"v1\"x\"",
                "\"\\\"\"", "\"x\u{1}\"", "\"0123456789abcde\"", "\"0123456789abcdef\"",
            ];
            let first = (rng.below(2) == 0).then(|| rng.pick(&FIRSTS));
            let string_first = !(matches!(form[1], "timestamp" | "usage") || (nested && matches!(form[1], "delta" | "snapshot" | "args")));
            for _ in 0..1 + rng.below(40) {
                let mut members: Vec<(String, String)> =
                    form[1..].iter().map(|k| (format!("\"{k}\""), value(&mut rng, k))).collect();
                if let Some(first) = first.filter(|_| string_first) {
                    members[0].1 = if rng.below(4) == 0 { rng.pick(&FIRSTS) } else { first }.to_string();
                }
                match rng.below(24) {
                    0 => members.push(("\"x\"".into(), value(&mut rng, "x"))),
                    1 if !members.is_empty() => {
                        let m = members[0].clone();
                        members.push(m)
                    }
                    2 if members.len() > 1 => members.swap(0, 1),
                    3 => members.push(("\"timestamp\"".into(), value(&mut rng, "timestamp"))),
                    4 => members.push(("\"usage\"".into(), rng.pick(&["[{\"inputTokens\":2}]", "[]", "3"]).into())),
                    5 => members.push(("\"delta\"".into(), "[{\"op\":\"add\"}]".into())),
                    _ => {}
                }
                let ty = format!("\"{}\"", if rng.below(30) == 0 { "TEXT_MESSAGE_\\u0043ONTENT" } else { form[0] });
                let mut json = format!("{{\"type\":{ty}");
                for (k, v) in &members {
                    let sep = if rng.below(40) == 0 { ": " } else { ":" };
                    json.push_str(&format!(",{k}{sep}{v}"));
                }
                json.push('}');
                let mut json = json.into_bytes();
                match rng.below(40) {
                    0 => json.truncate(rng.below(json.len())),
                    1 => json.extend_from_slice(b" x"),
                    2 => json.push(b' '),
                    3 if bad_utf8 => json.insert(json.len() - 2, 0xff),
                    _ => {}
                }
                let nl: &[u8] = rng.pick(&[&b"\n"[..], b"\n", b"\n", b"\r\n", b"\r"]);
                match rng.below(30) {
                    0 => log.extend_from_slice(&[b": keep-alive", nl].concat()),
                    1 => log.extend_from_slice(&[b"event: message", nl, b"id: 7", nl].concat()),
                    2 => log.extend_from_slice(&[b"retry: 50", nl].concat()),
                    3 => log.extend_from_slice(nl),
                    _ => {}
                }
                if rng.below(30) == 0 {
                    // A whole event and an empty `data` line after it: the payload ends
                    // with a line feed (JSON whitespace), not where the event does.
                    log.extend_from_slice(&[&b"data: "[..], &json, nl, b"data:", nl, nl].concat());
                } else if rng.below(30) == 0 && json.len() > 4 {
                    let cut = 1 + rng.below(json.len() - 2);
                    log.extend_from_slice(&[b"data: ", &json[..cut], nl, b"data:", &json[cut..], nl, nl].concat());
                } else {
                    let space: &[u8] = if rng.below(20) == 0 { b"data:" } else { b"data: " };
                    log.extend_from_slice(&[space, &json, nl, nl].concat());
                }
                n += 1;
            }
        }
        if rng.below(2) == 0 {
            log.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"de");
        }
        log
    }

    /// Every table and error with templates (`fields::Template`) is the one without:
    /// rows, frame indices, byte offsets, error classes and messages, on both readers
    /// (the parts' and the sequential one), collected and raised.
    #[test]
    fn templates_read_what_the_scan_reads() {
        use fields::tests::{NO_TEMPLATES, TEMPLATE_HITS};
        let run = |src: &Source<'_>, opts: &Options, templates: bool| {
            NO_TEMPLATES.set(!templates);
            let many = decode_many(std::slice::from_ref(src), 1, opts, &Control::default())
                .map(|d| (d.batches, d.issues));
            let seq = decode_source(src, opts, &Control::default()).map(|d| d.map(|d| (d.batches, d.issues)));
            NO_TEMPLATES.set(false);
            (many, seq)
        };
        let mut hits = 0;
        for seed in 1..=12u64 {
            let log = shaped_log(seed * 0x9e37_79b9, 3000, seed % 3 == 0);
            let srcs = [bytes(&log, "x"), Source { input: Input::Buffer(Buffer::from(log.as_slice())), name: None }];
            for src in &srcs {
                for (collect, max_depth) in [(true, Options::default().max_depth), (false, Options::default().max_depth), (true, 3), (true, 2)] {
                    let opts = Options { collect, max_depth, ..Options::default() };
                    let before = TEMPLATE_HITS.get();
                    let (many, seq) = run(src, &opts, true);
                    hits += TEMPLATE_HITS.get() - before;
                    let (want_many, want_seq) = run(src, &opts, false);
                    assert_eq!(many, want_many, "seed {seed}, collect {collect}, depth {max_depth}");
                    assert_eq!(seq, want_seq, "seed {seed}, collect {collect}, depth {max_depth}, sequential");
                }
            }
        }
        // The templates read most events of these logs (runs of one form).
        assert!(hits > 12 * 3000, "{hits} events read by templates");
    }

    /// What `decode_part` gave, comparable.
    fn part_out(out: PartOut) -> (Vec<RecordBatch>, Vec<Issue>, u64, String) {
        let stop = match out.stop {
            None => String::new(),
            Some(PartStop::Log(e)) => format!("log {e:?}"),
            Some(PartStop::Row(issue)) => format!("row {issue:?}"),
            Some(PartStop::Other(issue)) => format!("other {issue:?}"),
        };
        (out.decoded.batches, out.decoded.issues, out.frames, stop)
    }

    /// SSE frames read ahead of the framer's line search (`Shape::form_end`) give the
    /// tables, errors and frame counts of the line search and of no templates at all, in
    /// parts cut at many places (frames at a part's start and end, a part that ends
    /// inside a frame), on every framing `shaped_log` writes.
    #[test]
    fn frames_read_ahead_read_what_the_line_search_reads() {
        use fields::tests::{FRAME_SKIPS, NO_FRAME_SKIP, NO_TEMPLATES};
        use agui_core::test_rng::Rng;
        let mut skips = 0;
        for seed in 1..=12u64 {
            let log = shaped_log(seed * 0x51_7cc1_b727, 1500, seed % 3 == 0);
            let mut rng = Rng(seed | 1);
            let len = log.len() as u64;
            let mut cuts: Vec<Vec<Part>> = Vec::new();
            for parts in [1usize, 2, 7, 40] {
                let targets: Vec<u64> = (1..parts).map(|k| k as u64 * len / parts as u64 + rng.below(64) as u64).collect();
                let mut r = std::io::Cursor::new(&log);
                cuts.push(agui_core::log::split_at(&mut r, len, Format::Sse, &targets, &Limits::default()).unwrap());
            }
            // A part that ends anywhere (as a log cut short).
            cuts.push(vec![Part { start: 0, end: 1 + rng.below(log.len() - 1) as u64 }]);
            let src = bytes(&log, "x");
            for parts in &cuts {
                for collect in [true, false] {
                    for max_buffer in [Limits::default().max_buffer, 90] {
                        let opts = Options { collect, limits: Limits { max_buffer, ..Limits::default() }, ..Options::default() };
                        let run = |templates: bool, skip: bool| {
                            NO_TEMPLATES.set(!templates);
                            NO_FRAME_SKIP.set(!skip);
                            let outs: Vec<_> = parts
                                .iter()
                                .map(|p| part_out(decode_part(&src, Format::Sse, *p, &opts, &Control::default())))
                                .collect();
                            NO_TEMPLATES.set(false);
                            NO_FRAME_SKIP.set(false);
                            outs
                        };
                        let before = FRAME_SKIPS.get();
                        let got = run(true, true);
                        skips += FRAME_SKIPS.get() - before;
                        let what = format!("seed {seed}, {} parts, collect {collect}, max {max_buffer}", parts.len());
                        assert_eq!(got, run(true, false), "{what}: vs the line search");
                        assert_eq!(got, run(false, false), "{what}: vs no templates");
                    }
                }
            }
        }
        // Many events of these logs are one `data: ` line and a blank line of a known form
        // (a third of those read whole, collected: the others stop at an error). Only the
        // frames taken count, not those found and then declined by the framer (~49%).
        assert!(skips > 12 * 1500 * 2 / 5, "{skips} frames read ahead");
    }

    /// Every cell of every row, as text (`None`: null), column by column.
    fn cells(d: &Decoded) -> Vec<Vec<Option<String>>> {
        let cell = |c: &ArrayRef, i: usize| -> Option<String> {
            if c.is_null(i) {
                return None;
            }
            Some(match c.data_type() {
                DataType::UInt64 => c.as_primitive::<UInt64Type>().value(i).to_string(),
                DataType::Int64 => c.as_primitive::<Int64Type>().value(i).to_string(),
                DataType::Timestamp(..) => c.as_primitive::<TimestampMillisecondType>().value(i).to_string(),
                DataType::Utf8 => c.as_string::<i32>().value(i).to_string(),
                DataType::Utf8View => c.as_string_view().value(i).to_string(),
                DataType::Dictionary(..) => {
                    let d = c.as_dictionary::<Int32Type>();
                    let k = d.keys().value(i);
                    format!("{k}:{}", d.values().as_string::<i32>().value(k as usize))
                }
                t => panic!("a column of {t}"),
            })
        };
        d.batches.iter().flat_map(|b| (0..b.num_rows()).map(move |i| b.columns().iter().map(|c| cell(c, i)).collect())).collect()
    }

    /// A protobuf log: flat events of every arm (all of a flat arm's string fields or
    /// some, in any order, with empty strings, escapes, control bytes, unicode, invalid
    /// UTF-8, a type or timestamp off, a field twice or unknown, no base event) between
    /// events of the other kinds and frames that are no event.
    fn protobuf_log(seed: u64, events: usize) -> Vec<u8> {
        use agui_core::test_rng::Rng;
        let mut rng = Rng(seed | 1);
        let strs: [&[u8]; 10] = [
            b"",
            b"m1",
            b"Hello, world",
            "h\u{e9}llo \u{1f600}\u{2028}".as_bytes(),
            b"ok\xff\xfe",
            b"a\"b\\c\n\x01\x7f",
            &[b'x'; 40],
            b"{\"q\": [1, \"</script>\"]}",
            b"tool_call_1",
            b"assistant",
        ];
        let others = [
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","timestamp":1000}"#,
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"a":[1,2]}}"#,
            r#"{"type":"STATE_DELTA","delta":[{"op":"add","path":"/a","value":1}]}"#,
            r#"{"type":"STATE_SNAPSHOT","snapshot":{"a":{"b":"c"}}}"#,
            r#"{"type":"RUN_ERROR","message":"no","code":"E1"}"#,
            r#"{"type":"CUSTOM","name":"n","value":"v"}"#,
        ];
        let varint = |out: &mut Vec<u8>, v: u64| prost_varint(out, v);
        let len_field = |out: &mut Vec<u8>, f: u32, p: &[u8]| {
            prost_varint(out, (f as u64) << 3 | 2);
            prost_varint(out, p.len() as u64);
            out.extend_from_slice(p);
        };
        let mut log = Vec::new();
        for i in 0..events {
            // (A frame that does not decode ends a protobuf log: those only near the end.)
            let late = i > events * 9 / 10;
            let mut msg = Vec::new();
            match rng.below(20) {
                0 => agui_core::proto::encode_json(others[rng.below(others.len())].as_bytes(), false, &mut msg).unwrap(),
                1 if late => msg.extend((0..rng.below(12)).map(|_| rng.next_u64() as u8)),
                _ => {
                    // Flat arms and their string fields' count (other arms, and fields past
                    // those, only near the end: what prost makes of them may end the log).
                    const FLAT: [(u32, u32); 19] = [
                        (1, 4), (2, 3), (3, 2), (4, 4), (5, 3), (6, 2), (15, 2), (16, 2), (17, 5), (18, 5), (19, 6),
                        (21, 3), (25, 2), (26, 3), (27, 3), (28, 2), (29, 3), (30, 2), (31, 4),
                    ];
                    let (arm, n) = match late && rng.below(4) == 0 {
                        true => (1 + rng.below(31) as u32, 6),
                        false => FLAT[rng.below(FLAT.len())],
                    };
                    let mut base = Vec::new();
                    let ty = match rng.below(30) {
                        0 if late => rng.below(40) as u64,
                        1 => u64::from(agui_core::proto::arm_number_to_enum(arm)) | 1 << 32,
                        _ => u64::from(agui_core::proto::arm_number_to_enum(arm)),
                    };
                    if ty != 0 || rng.below(2) == 0 {
                        varint(&mut base, 1 << 3);
                        varint(&mut base, ty);
                    }
                    if rng.below(4) == 0 {
                        varint(&mut base, 2 << 3);
                        let ts = match rng.below(5) {
                            0 => 9_007_199_254_740_991u64,
                            1 if late => 9_007_199_254_740_992,
                            2 => (-9_007_199_254_740_991i64) as u64,
                            3 => 0,
                            _ => 1_700_000_000_000 + rng.below(1 << 20) as u64,
                        };
                        varint(&mut base, ts);
                    }
                    let mut body = Vec::new();
                    if !late || rng.below(40) > 0 {
                        len_field(&mut body, 1, &base);
                    }
                    let mut fields: Vec<u32> = (2..2 + n).filter(|_| rng.below(3) > 0).collect();
                    if rng.below(30) == 0 {
                        fields.push(2 + rng.below(n as usize + usize::from(late)) as u32);
                    }
                    for i in (1..fields.len()).rev() {
                        if rng.below(5) == 0 {
                            fields.swap(i, rng.below(i + 1));
                        }
                    }
                    for f in fields {
                        let s = strs[rng.below(strs.len())];
                        let s: &[u8] = if s.ends_with(b"\xfe") && (!late || rng.below(4) > 0) { b"ok" } else { s };
                        len_field(&mut body, f, s);
                    }
                    len_field(&mut msg, arm, &body);
                }
            }
            log.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            log.extend_from_slice(&msg);
        }
        log
    }

    fn prost_varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// `src` decoded by the parts' reader on 1 and 3 threads gives the cells and issues
    /// (or the error) of the sequential reader; the decodings that succeeded.
    fn parts_as_sequential(src: &Source<'_>, collect: bool, max_depth: usize, what: &str) -> Vec<Decoded> {
        let opts = Options { collect, max_depth, ..Options::default() };
        let want = decode_source(src, &opts, &Control::default()).map(|d| d.unwrap());
        let mut ok = Vec::new();
        for threads in [1, 3] {
            let got = decode_many(std::slice::from_ref(src), threads, &opts, &Control::default());
            let what = format!("{what}, collect {collect}, depth {max_depth}, {threads} threads");
            match (got, &want) {
                (Ok(got), Ok(want)) => {
                    assert_eq!(cells(&got), cells(want), "{what}");
                    assert_eq!(got.issues, want.issues, "{what}");
                    ok.push(got);
                }
                (Err(got), Err(want)) => assert_eq!(&got, want, "{what}"),
                (got, want) => panic!("{what}: {:?} vs {:?}", got.err(), want.as_ref().err()),
            }
        }
        ok
    }

    /// The rows of protobuf flat events made from their wire fields (the parts' reader,
    /// `BatchBuilder::push_flat`) are those of their JSON text read with its members (the
    /// sequential reader), cell by cell, and so are the issues: collected and raised, on
    /// one thread and several, in batches of any size, and with a depth limit of 0.
    #[test]
    fn flat_protobuf_rows_are_those_of_their_text() {
        let mut flat_rows = 0;
        for seed in 0..4u64 {
            let log = protobuf_log(seed, 12_000);
            let src = bytes(&log, "p");
            for (collect, max_depth) in [(true, 64), (false, 64), (true, 0)] {
                for got in parts_as_sequential(&src, collect, max_depth, &format!("seed {seed}")) {
                    flat_rows += usize::from(max_depth > 0) * cells(&got).len();
                }
            }
            // Raised: the first issue stops both at the same frame.
            let one = decode_many(std::slice::from_ref(&src), 1, &Options::default(), &Control::default());
            assert!(one.is_err(), "seed {seed}: a frame that is no event");
        }
        assert!(flat_rows > 4 * 2 * 9_000, "{flat_rows}");
    }

    /// A protobuf log of nested events (every arm the wire path takes, and others): JSON
    /// events of random ids (escapes, control bytes, unicode, empty), timestamps, usage
    /// lists of several entries (negative and unsafe counts), snapshots and
    /// patches nested a few levels or past a depth limit, encoded by the core's encoder,
    /// then some changed on the wire (a field appended, unknown or twice, a byte flipped,
    /// invalid UTF-8 in an id, a type off; those that fail only near the end), between
    /// flat events.
    fn nested_protobuf_log(seed: u64, events: usize) -> Vec<u8> {
        use agui_core::test_rng::Rng;
        let mut rng = Rng(seed | 1);
        let ids = ["", "t1", "run-7", "a\"b\\c\n\u{1}", "h\u{e9}llo \u{1f600}", "msg-123456789012345", "thread-1"];
        // (The unsafe count fails its event: drawn only near the end.)
        let counts = ["1", "0", "-5", "9007199254740991", "40", "9007199254740992"];
        let mut log = Vec::new();
        for i in 0..events {
            let late = i > events * 9 / 10;
            let mut id = || serde_json::to_string(ids[rng.below(ids.len())]).unwrap();
            let (a, b, c) = (id(), id(), id());
            let mut rng2 = Rng(rng.next_u64() | 1);
            let deep = |rng: &mut Rng| {
                let n = [1usize, 2, 4, 8][rng.below(4)];
                format!("{}1{}", "[".repeat(n), "]".repeat(n))
            };
            let ts = match rng2.below(4) {
                0 => String::new(),
                1 => ",\"timestamp\":1700000000000".into(),
                2 => ",\"timestamp\":-9007199254740991".into(),
                _ => ",\"timestamp\":0".into(),
            };
            let mut usage = || {
                let entries: Vec<String> = (0..1 + rng2.below(3))
                    .map(|_| {
                        let mut e = vec![format!("\"provider\":{}", serde_json::to_string(ids[rng2.below(ids.len())]).unwrap())];
                        for k in ["inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens", "cacheWriteInputTokens"] {
                            if rng2.below(2) == 0 {
                                e.push(format!("\"{k}\":{}", counts[rng2.below(counts.len() - usize::from(!late))]));
                            }
                        }
                        format!("{{{}}}", e.join(","))
                    })
                    .collect();
                format!("[{}]", entries.join(","))
            };
            let text = match rng.below(16) {
                0 => format!(r#"{{"type":"RUN_STARTED","threadId":{a},"runId":{b}{ts}}}"#),
                1 => format!(r#"{{"type":"RUN_STARTED","threadId":{a},"runId":{b},"parentRunId":{c},"protocolVersion":"1.0"{ts}}}"#),
                2 => format!(r#"{{"type":"RUN_FINISHED","threadId":{a},"runId":{b},"usage":{}{ts}}}"#, usage()),
                3 => format!(r#"{{"type":"RUN_FINISHED","threadId":{a},"runId":{b},"result":{{"a":{}}},"outcome":{{"type":"success"}}}}"#, deep(&mut rng)),
                4 => format!(r#"{{"type":"RUN_ERROR","message":{a},"code":{b},"usage":{}{ts}}}"#, usage()),
                5 => format!(r#"{{"type":"STATE_SNAPSHOT","snapshot":{{"run":1,"steps":{},"status":{a}}}{ts}}}"#, deep(&mut rng)),
                6 => format!(r#"{{"type":"STATE_DELTA","delta":[{{"op":"replace","path":"/status","value":{a}}}]{ts}}}"#),
                7 => format!(r#"{{"type":"MESSAGES_SNAPSHOT","messages":[{{"id":{a},"role":"user","content":{b}}},{{"id":{c},"role":"assistant","toolCalls":[{{"id":"c1","type":"function","function":{{"name":"f","arguments":"{{}}"}}}}]}}]}}"#),
                8 => format!(r#"{{"type":"TOOL_CALL_RESULT","messageId":{a},"toolCallId":{b},"content":{c},"role":"tool"{ts}}}"#),
                9 => format!(r#"{{"type":"TOOL_CALL_RESULT","messageId":{a},"toolCallId":{b},"content":{c}}}"#),
                10 => format!(r#"{{"type":"CUSTOM","name":{a},"value":{}{ts}}}"#, deep(&mut rng)),
                11 => format!(r#"{{"type":"RAW","event":{{"x":{a}}},"source":{b}}}"#),
                12 => format!(r#"{{"type":"ACTIVITY_SNAPSHOT","messageId":{a},"activityType":{b},"content":{{"k":{}}},"replace":true}}"#, deep(&mut rng)),
                13 => format!(r#"{{"type":"ACTIVITY_DELTA","messageId":{a},"activityType":{b},"patch":[{{"op":"add","path":"/a","value":1}}]}}"#),
                14 => format!(r#"{{"type":"STATE_SNAPSHOT","snapshot":{a},"rawEvent":{{"r":{}}},"metadata":{{"m":{b}}}{ts}}}"#, deep(&mut rng)),
                _ => format!(r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":{a},"delta":{b}}}"#),
            };
            let mut msg = Vec::new();
            agui_core::proto::encode_json(text.as_bytes(), false, &mut msg).unwrap();
            // Changes on the wire: in the arm's body (the envelope's one field: a one-byte
            // key and length for arms below 16 and most bodies) or of the whole message (near the end: it may fail).
            match rng.below(24) {
                0 if msg.len() > 2 && msg[0] < 0x80 && msg[1] < 0x7c => {
                    // An unknown varint field in the body: the prost path's.
                    msg.extend_from_slice(&[15 << 3, 1]);
                    msg[1] += 2;
                }
                1 if late && msg.len() > 2 && msg[0] < 0x80 && msg[1] < 0x7c => {
                    // The base event's type off (field 1 of a base appended twice: merged).
                    msg.extend_from_slice(&[0x0a, 0x02, 0x08, 0x03]);
                    msg[1] += 4;
                }
                2 if late => {
                    let at = rng.below(msg.len());
                    msg[at] ^= 1 << rng.below(8);
                }
                3 if late => msg.truncate(rng.below(msg.len())),
                4 if late => {
                    if let Some(at) = msg.windows(2).position(|w| w == b"t1") {
                        msg[at] = 0xff;
                    }
                }
                _ => {}
            }
            log.extend_from_slice(&(msg.len() as u32).to_be_bytes());
            log.extend_from_slice(&msg);
        }
        log
    }

    /// The rows of protobuf nested events made from their wire fields (the parts' reader,
    /// `BatchBuilder::push_nested`) are those of their JSON text read with its members
    /// (the sequential reader), cell by cell, and so are the issues: collected and
    /// raised, on one thread and several, with depth limits that some texts pass and
    /// some fail, and of 0.
    #[test]
    fn nested_protobuf_rows_are_those_of_their_text() {
        let (mut rows, mut too_deep) = (0, 0);
        for seed in 0..6u64 {
            let log = nested_protobuf_log(seed, 6_000);
            let src = bytes(&log, "n");
            for (collect, max_depth) in [(true, 64), (false, 64), (true, 3), (true, 5), (false, 4), (true, 0)] {
                for got in parts_as_sequential(&src, collect, max_depth, &format!("seed {seed}")) {
                    rows += cells(&got).len();
                    too_deep += got.issues.iter().filter(|i| i.message.contains("nested too deeply")).count();
                }
            }
        }
        assert!(rows > 6 * 2 * 12_000 && too_deep > 6 * 2 * 1_000, "{rows} rows, {too_deep} too deep");
    }

    /// A nested event `push_nested` declines leaves the batch as it was: no row, and block
    /// 0 of the `json` column cut back to the bytes it had (events that fail once written,
    /// or are nested deeper than the limit), between events it takes.
    #[test]
    fn declined_nested_events_leave_block_0_as_it_was() {
        let log = nested_protobuf_log(7, 4_000);
        let mut builder = BatchBuilder::with_capacity(None, 16);
        let (mut taken, mut declined, mut at) = (0, 0, 0);
        while at + 4 <= log.len() {
            let n = u32::from_be_bytes(log[at..at + 4].try_into().unwrap()) as usize;
            let msg = &log[at + 4..(at + 4 + n).min(log.len())];
            at += 4 + n;
            let Some(nested) = agui_core::proto::Nested::read(msg) else { continue };
            let (before, rows) = (builder.json.block0().to_vec(), builder.len());
            let max_depth = [3, 64][taken % 2];
            if builder.push_nested(0, 0, &nested, max_depth) {
                taken += 1;
                assert_eq!(builder.len(), rows + 1);
                assert_eq!(&builder.json.block0()[..before.len()], &before[..]);
            } else {
                declined += 1;
                assert_eq!((builder.json.block0(), builder.len()), (&before[..], rows));
            }
        }
        assert!(taken > 1_000 && declined > 200, "{taken} taken, {declined} declined");
        builder.finish();
    }

    #[test]
    fn errors_raise_or_collect() {
        let mut bad = log();
        agui_core::sse::write_event(&mut bad, br#"{"type":"NOPE"}"#);
        agui_core::sse::write_event(&mut bad, br#"{"type":"RUN_STARTED","threadId":"t","runId":"r2"}"#);
        let srcs = [bytes(&log(), "good"), bytes(&bad, "bad")];
        let e = decode_many(&srcs, 2, &Options::default(), &Control::default()).err().unwrap();
        assert_eq!((e.source.as_deref(), e.index, e.class), (Some("bad"), Some(5), "EventValidationError"));
        assert!(e.describe().starts_with("bad: unknown event type"), "{}", e.describe());
        let opts = Options { collect: true, ..Options::default() };
        let d = decode_many(&srcs, 2, &opts, &Control::default()).unwrap();
        assert_eq!(d.batches.iter().map(|b| b.num_rows()).sum::<usize>(), 11);
        assert_eq!(d.issues.len(), 1);
        let eb = errors_batch(&d.issues);
        assert_eq!(eb.num_rows(), 1);
        assert_eq!(eb.column_by_name("field").unwrap().as_string::<i32>().value(0), "$.type");
    }

    #[test]
    fn parquet_and_inspect() {
        let srcs = [bytes(&log(), "a"), bytes(&log(), "b")];
        let mut out = Vec::new();
        let info = write_parquet(&srcs, &Options::default(), &Control::default(), &mut out).unwrap();
        assert_eq!(info.rows, 10);
        assert_eq!(&out[..4], b"PAR1");
        for to in [Output::Sse, Output::Protobuf, Output::Jsonl] {
            let mut out = Vec::new();
            let info = convert(&srcs, &Options::default(), &Control::default(), to, &mut out).unwrap();
            assert_eq!(info.rows, 10);
            if to != Output::Jsonl {
                let back = decode_many(&[bytes(&out, "c")], 1, &Options::default(), &Control::default()).unwrap();
                assert_eq!(back.batches[0].num_rows(), 10, "{to:?}");
            }
        }
        let r = inspect(&srcs[0], &Options::default(), &Control::default()).unwrap();
        assert_eq!(r.events, 5);
        assert_eq!(r.types["TEXT_MESSAGE_CONTENT"], 2);
        assert_eq!((r.runs, r.threads, r.messages, r.tool_calls), (1, 1, 1, 0));
        assert_eq!(r.usage[1], Some(5));
        assert_eq!((r.first_timestamp, r.last_timestamp), (Some(1000), Some(3000)));
        let missing = Source { input: Input::Path("/nonexistent/x.sse".into()), name: Some("x".into()) };
        assert_eq!(inspect(&missing, &Options::default(), &Control::default()).unwrap_err().class, "FileNotFoundError");
    }

    /// Without threads to be had, every way of decoding runs on the calling thread and
    /// gives the same table (no panic, no wait for a worker that never came).
    #[test]
    fn no_thread_to_be_had() {
        let mut big = Vec::new();
        for _ in 0..20_000 {
            big.extend_from_slice(&log());
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &big).unwrap();
        let gz = gz.finish().unwrap();
        let cases = [vec![bytes(&big, "big")], vec![bytes(&gz, "gz")], (0..4).map(|i| bytes(&log(), &format!("s{i}"))).collect()];
        for (srcs, rows) in cases.iter().zip([100_000, 100_000, 20]) {
            let want = row_values(&decode_many(srcs, 1, &Options::default(), &Control::default()).unwrap());
            assert_eq!(want.len(), rows);
            NO_THREADS.with(|n| n.set(true));
            let got = decode_many(srcs, 3, &Options::default(), &Control::default());
            NO_THREADS.with(|n| n.set(false));
            assert_eq!(row_values(&got.unwrap()), want);
        }
    }
}
