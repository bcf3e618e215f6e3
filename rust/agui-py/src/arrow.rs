//! Logs at scale: the binding of `agui_arrow` (Arrow tables, Parquet, conversion,
//! inspection) and of the core log reader (`agui_core::log`) for `agui_fast.logs`.
//!
//! Every call takes its sources as a list of paths (`str`) or bytes, reads them with
//! the GIL released, and raises the first problem as an `agui_fast.errors` class (or
//! `OSError` / `FileNotFoundError`) whose message names the source, frame and byte
//! offset. Tables cross into Python as [`ArrowTable`], through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`) by arrow-rs's own C stream interface: pyarrow, Polars
//! and DuckDB import it without a copy.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;

use agui_arrow::arrow_array::{RecordBatch, RecordBatchIterator};
use agui_arrow::arrow_schema::SchemaRef;
use agui_arrow::{Control, Input, Issue, Options, Source};
use agui_core::log::{Format, GzipWriter, Limits, LogReader, Output};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyStopIteration, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_schema::ffi::FFI_ArrowSchema;

use crate::errors::{class_name, kind_error, takes_position};
use crate::ffi::arrow::{bytes_buffer, trusted_columns};
use crate::shared::Shared;

/// A source as given from Python.
enum Arg {
    Path(String),
    Bytes(PyBackedBytes),
}

impl<'py> FromPyObject<'_, 'py> for Arg {
    type Error = PyErr;

    fn extract(ob: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.extract::<String>() {
            return Ok(Arg::Path(s));
        }
        match ob.extract::<PyBackedBytes>() {
            Ok(b) => Ok(Arg::Bytes(b)),
            Err(_) => Err(PyTypeError::new_err(format!(
                "a log is a path (str) or bytes, not {}",
                ob.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))),
        }
    }
}

fn sources(args: Vec<Arg>, names: Vec<Option<String>>) -> PyResult<Vec<Source<'static>>> {
    if names.len() != args.len() {
        return Err(PyValueError::new_err("one name per source"));
    }
    Ok(args
        .into_iter()
        .zip(names)
        .map(|(a, name)| Source {
            input: match a {
                Arg::Path(p) => Input::Path(p.into()),
                Arg::Bytes(b) => Input::Buffer(bytes_buffer(b)),
            },
            name,
        })
        .collect())
}

/// The `format=` argument of the log APIs (`to_arrow`, `replay_log`...): `None` detects.
pub(crate) fn format_arg(format: &str) -> PyResult<Option<Format>> {
    Format::parse_arg(format).map_err(PyValueError::new_err)
}

fn options(format: &str, collect: bool, max_buffer_size: usize, max_frame_size: usize, max_errors: usize) -> PyResult<Options> {
    Ok(Options {
        format: format_arg(format)?,
        limits: Limits { max_buffer: max_buffer_size, max_frame_size, ..Limits::default() },
        collect,
        max_errors,
        columns: trusted_columns,
        ..Options::default()
    })
}

/// An issue as the matching Python exception (message: `source: what (where)`).
pub(crate) fn issue_to_py(py: Python<'_>, issue: &Issue) -> PyErr {
    let message = issue.describe();
    if !takes_position(py, issue.kind) {
        // (An event protobuf cannot take, the error of too many errors, a failure of the
        // system: the message says where, the class takes no place.)
        return kind_error(py, issue.kind, message, None);
    }
    let kwargs = PyDict::new(py);
    // set_item on a fresh dict cannot fail short of MemoryError.
    let _ = kwargs.set_item("frame_index", issue.index);
    let _ = kwargs.set_item("offset", issue.offset);
    let _ = kwargs.set_item("field", issue.field.as_deref());
    kind_error(py, issue.kind, message, Some(&kwargs))
}

/// An Arrow table (record batches of one schema) handed to Python through the Arrow
/// PyCapsule interface: `__arrow_c_stream__` exports it as an `ArrowArrayStream`,
/// `__arrow_c_schema__` its schema, both by arrow-rs's own C data/stream interface.
/// pyarrow (`pa.table(t)`), Polars (`pl.DataFrame(t)`) and DuckDB import it without a
/// copy; each export shares the same buffers, so a table can be read any number of times.
#[pyclass(frozen, module = "agui_fast._native", name = "ArrowTable")]
pub struct ArrowTable {
    batches: Vec<RecordBatch>,
    schema: SchemaRef,
}

impl ArrowTable {
    fn new(batches: Vec<RecordBatch>, schema: SchemaRef) -> Self {
        ArrowTable { batches, schema }
    }
}

#[pymethods]
impl ArrowTable {
    /// The table as an `arrow_array_stream` capsule. A `requested_schema` is accepted and
    /// not applied (the interface makes it a best-effort request): the stream carries the
    /// table's own schema, which the consumer reads from it.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = self.batches.clone().into_iter().map(Ok);
        let reader = RecordBatchIterator::new(batches, self.schema.clone());
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(Box::new(reader)), c"arrow_array_stream")
    }

    /// The schema as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema.as_ref()).map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyCapsule::new_with_value(py, schema, c"arrow_schema")
    }

    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    #[getter]
    fn num_columns(&self) -> usize {
        self.schema.fields().len()
    }

    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    fn __len__(&self) -> usize {
        self.num_rows()
    }

    fn __repr__(&self) -> String {
        format!("<agui_fast ArrowTable: {} rows, columns {:?}>", self.num_rows(), self.column_names())
    }
}

/// Bytes and events read so far by the call it is passed to (a progress bar polls them
/// from another thread while the call runs with the GIL released), and a way to stop
/// the call early (`cancel`).
#[pyclass(frozen, module = "agui_fast._native")]
pub struct LogProgress {
    control: Arc<Control>,
}

#[pymethods]
impl LogProgress {
    #[new]
    fn new() -> Self {
        LogProgress { control: Arc::new(Control::default()) }
    }

    /// Input bytes read (compressed bytes for a gzip log).
    #[getter]
    fn bytes(&self) -> u64 {
        self.control.bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Events read (counted in steps of a few thousand).
    #[getter]
    fn events(&self) -> u64 {
        self.control.events.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stop the call soon (within a few thousand events): it returns what it has read.
    fn cancel(&self) {
        self.control.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn control(progress: Option<&LogProgress>) -> Arc<Control> {
    progress.map(|p| p.control.clone()).unwrap_or_default()
}

/// Decode logs into an Arrow table (and, with `collect`, an errors table).
#[pyfunction]
#[pyo3(signature = (sources, names, format="auto", threads=None, collect=false, max_buffer_size=agui_core::sse::DEFAULT_MAX_BUFFER, max_frame_size=agui_core::proto::DEFAULT_MAX_FRAME_SIZE, max_depth=agui_core::limits::DEFAULT_MAX_DEPTH, max_errors=agui_arrow::DEFAULT_MAX_ERRORS, progress=None))]
#[allow(clippy::too_many_arguments)]
fn logs_to_arrow<'py>(
    py: Python<'py>,
    sources: Vec<Arg>,
    names: Vec<Option<String>>,
    format: &str,
    #[pyo3(from_py_with = crate::args::threads)] threads: Option<usize>,
    collect: bool,
    #[pyo3(from_py_with = crate::args::max_buffer_size)] max_buffer_size: usize,
    #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
    #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
    #[pyo3(from_py_with = crate::args::max_errors)] max_errors: usize,
    progress: Option<&LogProgress>,
) -> PyResult<Bound<'py, PyAny>> {
    let opts = Options { max_depth, ..options(format, collect, max_buffer_size, max_frame_size, max_errors)? };
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let srcs = self::sources(sources, names)?;
    let control = control(progress);
    let decoded = py.detach(|| agui_arrow::decode_many(&srcs, threads, &opts, &control));
    let decoded = decoded.map_err(|issue| issue_to_py(py, &issue))?;
    let events = ArrowTable::new(decoded.batches, agui_arrow::schema()).into_pyobject(py)?.into_any();
    if !collect {
        return Ok(events);
    }
    let errors = ArrowTable::new(vec![agui_arrow::errors_batch(&decoded.issues, class_name)], agui_arrow::errors_schema());
    Ok((events, errors).into_pyobject(py)?.into_any())
}

/// The events table's schema (an empty table).
#[pyfunction]
fn log_schema(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    Ok(ArrowTable::new(Vec::new(), agui_arrow::schema()).into_pyobject(py)?.into_any())
}

/// Where a conversion writes: a file, or stdout for `-`; gzip-compressed or not.
enum Sink {
    Plain(Box<dyn Write + Send>),
    Gzip(GzipWriter<Box<dyn Write + Send>>),
}

impl Sink {
    fn open(path: &str, gzip: bool) -> PyResult<Sink> {
        let out: Box<dyn Write + Send> = if path == "-" {
            Box::new(std::io::stdout())
        } else {
            let f = File::create(path).map_err(|e| PyOSError::new_err(format!("cannot create {path}: {e}")))?;
            Box::new(BufWriter::with_capacity(1 << 20, f))
        };
        Ok(if gzip { Sink::Gzip(GzipWriter::new(out)) } else { Sink::Plain(out) })
    }

    /// Everything written, the end of a gzip stream included.
    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Plain(mut w) => w.flush(),
            Sink::Gzip(w) => w.finish().map(drop),
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
        }
    }
}

fn issues_list<'py>(py: Python<'py>, issues: &[Issue]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for i in issues {
        list.append(i.describe())?;
    }
    Ok(list)
}

/// Convert logs into one output: `to` is "sse", "protobuf", "jsonl" or "parquet";
/// `gzip`: compressed. Returns (events written, input bytes, problems skipped with
/// `collect`).
#[pyfunction]
#[pyo3(signature = (sources, names, output, to, format="auto", collect=false, progress=None, max_errors=agui_arrow::DEFAULT_MAX_ERRORS, gzip=false, max_frame_size=agui_core::proto::DEFAULT_MAX_FRAME_SIZE))]
#[allow(clippy::too_many_arguments)]
fn convert_logs<'py>(
    py: Python<'py>,
    sources: Vec<Arg>,
    names: Vec<Option<String>>,
    output: &str,
    to: &str,
    format: &str,
    collect: bool,
    progress: Option<&LogProgress>,
    #[pyo3(from_py_with = crate::args::max_errors)] max_errors: usize,
    gzip: bool,
    #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
) -> PyResult<(u64, u64, Bound<'py, PyList>)> {
    let opts = options(format, collect, max_frame_size, max_frame_size, max_errors)?;
    let target = if to == "parquet" {
        if !cfg!(feature = "parquet") {
            return Err(PyValueError::new_err("this build of agui_fast has no Parquet writer (built without the `parquet` feature)"));
        }
        None
    } else {
        Some(Output::parse(to).ok_or_else(|| {
            PyValueError::new_err(format!("to must be 'sse', 'protobuf', 'jsonl' or 'parquet', not {to:?}"))
        })?)
    };
    let srcs = self::sources(sources, names)?;
    let control = control(progress);
    let mut out = Sink::open(output, gzip)?;
    let result = py.detach(|| {
        let info = match target {
            #[cfg(feature = "parquet")]
            None => agui_arrow::write_parquet(&srcs, &opts, &control, &mut out),
            #[cfg(not(feature = "parquet"))]
            None => unreachable!("refused above"),
            Some(t) => agui_arrow::convert(&srcs, &opts, &control, t, &mut out),
        }?;
        out.finish().map_err(|e| Issue::write(&e))?;
        Ok(info)
    });
    let info = result.map_err(|issue| issue_to_py(py, &issue))?;
    Ok((info.rows, info.bytes_in, issues_list(py, &info.issues)?))
}

/// Inspect one log: a dict of counts (see `agui-fast inspect`).
#[pyfunction]
#[pyo3(signature = (source, name, format="auto", collect=false, progress=None, max_frame_size=agui_core::proto::DEFAULT_MAX_FRAME_SIZE))]
fn inspect_log<'py>(
    py: Python<'py>,
    source: Arg,
    name: Option<String>,
    format: &str,
    collect: bool,
    progress: Option<&LogProgress>,
    #[pyo3(from_py_with = crate::args::max_frame_size)] max_frame_size: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = options(format, collect, max_frame_size, max_frame_size, agui_arrow::DEFAULT_MAX_ERRORS)?;
    let srcs = self::sources(vec![source], vec![name])?;
    let control = control(progress);
    let report = py.detach(|| agui_arrow::inspect(&srcs[0], &opts, &control));
    let r = report.map_err(|issue| issue_to_py(py, &issue))?;
    let d = PyDict::new(py);
    d.set_item("format", r.format.map(Format::as_str))?;
    d.set_item("gzip", r.gzip)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("events", r.events)?;
    let types = PyDict::new(py);
    for (k, v) in &r.types {
        types.set_item(k, v)?;
    }
    d.set_item("types", types)?;
    d.set_item("runs", r.runs)?;
    d.set_item("threads", r.threads)?;
    d.set_item("messages", r.messages)?;
    d.set_item("tool_calls", r.tool_calls)?;
    let usage = PyDict::new(py);
    for (k, v) in agui_arrow::USAGE_COLUMNS.iter().zip(r.usage) {
        if let Some(v) = v {
            usage.set_item(*k, v)?;
        }
    }
    d.set_item("usage", usage)?;
    d.set_item("first_timestamp", r.first_timestamp)?;
    d.set_item("last_timestamp", r.last_timestamp)?;
    d.set_item("errors", issues_list(py, &r.issues)?)?;
    Ok(d)
}

/// A log whose bytes read are counted into a call's progress (`LogProgress.bytes`).
struct Counted<R> {
    inner: R,
    control: Arc<Control>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.control.bytes.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// A log's decompressed bytes in chunks, with its format and compression decided by
/// the core reader: what `agui_fast.logs.iter_log` feeds the typed decoders. Threads that
/// share one take turns (`crate::shared`; a read runs with the GIL released).
#[pyclass(module = "agui_fast._native", frozen)]
pub struct LogChunks {
    reader: Shared<Option<LogReader<'static>>>,
    format: Option<&'static str>,
    gzip: bool,
    chunk_size: usize,
    name: String,
}

#[pymethods]
impl LogChunks {
    #[new]
    #[pyo3(signature = (source, format="auto", chunk_size=agui_core::log::DEFAULT_CHUNK_SIZE, progress=None))]
    fn new(
        py: Python<'_>,
        source: Arg,
        format: &str,
        #[pyo3(from_py_with = crate::args::chunk_size)] chunk_size: usize,
        progress: Option<&LogProgress>,
    ) -> PyResult<Self> {
        let fmt = format_arg(format)?;
        let (opened, name) = match source {
            Arg::Path(p) => {
                let f = File::open(&p).map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(format!("cannot open {p}: {e}")),
                    _ => PyOSError::new_err(format!("cannot open {p}: {e}")),
                })?;
                let f = Counted { inner: f, control: control(progress) };
                (py.detach(|| LogReader::open(f, fmt)), p)
            }
            Arg::Bytes(b) => {
                let b = Counted { inner: std::io::Cursor::new(b.to_vec()), control: control(progress) };
                (LogReader::open(b, fmt), "<bytes>".to_string())
            }
        };
        let reader = opened
            .and_then(|r| r.checked_format().map(|_| r))
            .map_err(|e| issue_to_py(py, &Issue::from_log_error(Some(name.clone()), e)))?;
        Ok(LogChunks {
            format: reader.format().map(Format::as_str),
            gzip: reader.is_gzip(),
            reader: Shared::new(Some(reader)),
            chunk_size: chunk_size.max(1),
            name,
        })
    }

    /// "sse", "protobuf", or None (empty log, or neither format).
    #[getter]
    fn format(&self) -> Option<&'static str> {
        self.format
    }

    #[getter]
    fn gzip(&self) -> bool {
        self.gzip
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.reader.with(py, |slot| {
            let Some(reader) = slot.as_mut() else {
                return Err(PyStopIteration::new_err(()));
            };
            let mut buf = vec![0u8; self.chunk_size];
            let n = py.detach(|| reader.read_chunk(&mut buf)).map_err(|e| {
                issue_to_py(py, &Issue::from_log_error(Some(self.name.clone()), e))
            })?;
            if n == 0 {
                *slot = None;
                return Err(PyStopIteration::new_err(()));
            }
            Ok(PyBytes::new(py, &buf[..n]))
        })
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(logs_to_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(log_schema, m)?)?;
    m.add_function(wrap_pyfunction!(convert_logs, m)?)?;
    m.add_function(wrap_pyfunction!(inspect_log, m)?)?;
    m.add_class::<ArrowTable>()?;
    m.add_class::<LogChunks>()?;
    m.add_class::<LogProgress>()?;
    Ok(())
}
