//! Rows become record batches of [`schema`]: [`BatchBuilder`] and the columns every
//! batch shares (all-null columns, the `source` and `type` dictionaries).

use std::sync::{Arc, Mutex, OnceLock};

use agui_core::log::Event;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMillisecondType, UInt64Type};
use arrow_array::{ArrayRef, DictionaryArray, Int32Array, RecordBatch, StringArray};
use arrow_schema::DataType;

use crate::columns::{self, OptColumn};
use crate::fields::{self, Fields};
use crate::schema::{dict, schema};
use crate::views::{checked_columns, ColumnsFn, DictKeys, JsonViews, StrColumn, Trusted, Utf8Block};

/// Rows per record batch (and per Parquet row group).
pub const BATCH_ROWS: usize = 65_536;

/// A batch is also closed when its JSON text reaches this size (the views' offsets into
/// the texts copied are u32).
pub(crate) const BATCH_JSON_BYTES: usize = 256 << 20;

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
    pub(crate) json: JsonViews,
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

    pub(crate) fn full(&self) -> bool {
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
    /// (Out of line: inlined into the framer's loop it takes the loop's registers, and
    /// into `run`'s loop with the match it costs ~1% more instructions.)
    #[inline(never)]
    pub(crate) fn push_found(&mut self, ev: &Event<'_>, json: &str, shape: &mut fields::Shape) {
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
    pub(crate) fn push_flat(&mut self, index: u64, offset: u64, flat: &agui_core::proto::Flat<'_>) -> bool {
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
    pub(crate) fn push_nested(&mut self, index: u64, offset: u64, nested: &agui_core::proto::Nested<'_>, max_depth: usize) -> bool {
        let Some(&columns) = self.flat.of_nested(nested) else { return false };
        // The text first: the row is appended only once it is written.
        let written = self.json.try_push_written(|out| {
            let start = out.len();
            nested.write_json(out) && !agui_core::limits::exceeds_depth(&out[start..], max_depth)
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
pub(crate) fn all_null(ty: &DataType, n: usize) -> ArrayRef {
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
pub(crate) fn source_column(name: Option<&str>, n: usize, make: ColumnsFn) -> DictionaryArray<Int32Type> {
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
pub(crate) fn type_column(keys: Vec<i32>, make: ColumnsFn) -> ArrayRef {
    static VALUES: OnceLock<ArrayRef> = OnceLock::new();
    let values = VALUES.get_or_init(|| Arc::new(StringArray::from_iter_values(agui_core::proto::EVENT_TYPES)));
    make(Trusted::Keys(DictKeys::new(keys, values.clone()).expect("every key is a position in EVENT_TYPES")))
}
