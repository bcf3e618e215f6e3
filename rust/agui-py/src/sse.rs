//! Binding of `agui_core::sse`: the incremental `SseParser`, the whole-buffer
//! `split_sse` (GIL released while splitting) and the `SseBatch` they return. Typing
//! the payloads (msgspec) happens in `agui_fast/sse.py`; this layer only frames.

use agui_core::sse::{self as core, Batch, SseParser as CoreParser};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList};

/// Below this size releasing the GIL costs more than it saves.
const DETACH_MIN: usize = 64 * 1024;

/// Run `f` on the bytes of a bytes-like object without copying `bytes`.
fn with_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(f(&b.to_vec()));
    }
    // memoryview and other buffer objects: one copy through bytes().
    let py = obj.py();
    let b = py.get_type::<PyBytes>().call1((obj,))?;
    let b = b.cast::<PyBytes>()?;
    Ok(f(b.as_bytes()))
}

/// Frames of one `feed`/`close`/`split_sse` call: payloads joined as one JSON array
/// (valid UTF-8; invalid sequences replaced by U+FFFD), with per-frame offsets.
#[pyclass(module = "agui_fast._native", name = "SseBatch", frozen)]
pub struct SseBatch {
    inner: Batch,
}

#[pymethods]
impl SseBatch {
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Stream index of the first frame of this batch.
    #[getter]
    fn first_index(&self) -> u64 {
        self.inner.first_index
    }

    /// True when every payload is structurally one JSON value, so decoding `array()`
    /// successfully yields exactly one element per frame.
    #[getter]
    fn balanced(&self) -> bool {
        self.inner.balanced
    }

    /// `b"[p0,p1,...]"`: decode all frames with one msgspec call.
    fn array<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.buf)
    }

    /// Each payload as bytes.
    fn payloads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, (0..self.inner.len()).map(|i| PyBytes::new(py, self.inner.payload(i))))
    }

    fn payload<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyBytes>> {
        if i >= self.inner.len() {
            return Err(pyo3::exceptions::PyIndexError::new_err("frame index out of range"));
        }
        Ok(PyBytes::new(py, self.inner.payload(i)))
    }

    /// `(start, end)` of each payload inside `array()` (a `,`, or `[` for the first, sits
    /// just before each start; a `,` or the closing `]` at each end).
    #[getter]
    fn spans(&self) -> Vec<(usize, usize)> {
        self.inner.spans.clone()
    }

    /// Byte offset in the stream of each frame's first `data` line.
    #[getter]
    fn offsets(&self) -> Vec<u64> {
        self.inner.offsets.clone()
    }

    /// Decode this batch with a float hook (see `Batch::prefer_float_hook`): it holds
    /// numbers with huge exponents that msgspec parses slowly.
    #[getter]
    fn float_hook(&self) -> bool {
        self.inner.prefer_float_hook()
    }

    /// Batch-relative indices of frames that may carry legacy (0.x) shapes.
    #[getter]
    fn candidates(&self) -> Vec<usize> {
        self.inner.candidates.clone()
    }

    /// `None`, or `(kind, message, frame_index, offset)` of the error that ended the
    /// batch; the frames before it are in the batch.
    #[getter]
    fn error(&self) -> Option<(&'static str, String, u64, u64)> {
        self.inner
            .error
            .as_ref()
            .map(|e| (e.kind.as_str(), e.message.clone(), e.frame_index, e.offset))
    }

    fn __repr__(&self) -> String {
        format!(
            "SseBatch(frames={}, first_index={}, error={:?})",
            self.inner.len(),
            self.inner.first_index,
            self.inner.error.as_ref().map(|e| e.kind.as_str())
        )
    }
}

/// Incremental WHATWG event-stream parser (see `agui_core::sse`).
#[pyclass(module = "agui_fast._native", name = "SseParser")]
pub struct SseParser {
    inner: CoreParser,
    check: bool,
    candidates: bool,
}

impl SseParser {
    fn run(&mut self, py: Python<'_>, chunk: Option<&[u8]>) -> SseBatch {
        let mut batch = Batch::new(self.inner.frame_count(), self.check, self.candidates);
        let inner = &mut self.inner;
        let mut work = |batch: &mut Batch| {
            let r = match chunk {
                Some(c) => inner.feed(c, |f| batch.push(&f)),
                None => inner.finish(|f| batch.push(&f)),
            };
            if let Err(e) = r {
                batch.error = Some(e);
            }
            batch.close();
        };
        if chunk.map_or(0, |c| c.len()) >= DETACH_MIN {
            py.detach(|| work(&mut batch));
        } else {
            work(&mut batch);
        }
        SseBatch { inner: batch }
    }
}

#[pymethods]
impl SseParser {
    #[new]
    #[pyo3(signature = (max_buffer_size = core::DEFAULT_MAX_BUFFER, check = true, candidates = false))]
    fn new(max_buffer_size: usize, check: bool, candidates: bool) -> Self {
        SseParser { inner: CoreParser::new(max_buffer_size), check, candidates }
    }

    /// Feed a chunk (bytes-like); returns the frames it completed.
    fn feed(&mut self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<SseBatch> {
        with_bytes(chunk, |c| self.run(py, Some(c)))
    }

    /// Feed a chunk and, when the batch is plain (`Batch::is_plain`) and has fewer
    /// than `max_frames` frames, decode it right here with `decode(array)`: returns the
    /// decoded list, or the `SseBatch` when the batch is not plain, is larger, or
    /// `decode` raised or returned another count (the caller's general path then finds
    /// and reports the frame). A live stream's feed is then one native call.
    fn feed_decode<'py>(
        &mut self,
        py: Python<'py>,
        chunk: &Bound<'py, PyAny>,
        decode: &Bound<'py, PyAny>,
        max_frames: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        let batch = with_bytes(chunk, |c| self.run(py, Some(c)))?;
        let b = &batch.inner;
        let n = b.len();
        if n < max_frames && b.is_plain() {
            if let Ok(items) = decode.call1((PyBytes::new(py, &b.buf),)) {
                if items.cast::<PyList>().is_ok_and(|l| l.len() == n) {
                    return Ok(items);
                }
            }
        }
        Ok(Bound::new(py, batch)?.into_any())
    }

    /// End of stream: returns the final frame if the stream lacked its blank line.
    fn close(&mut self, py: Python<'_>) -> SseBatch {
        self.run(py, None)
    }

    #[getter]
    fn last_event_id(&self) -> &str {
        self.inner.last_event_id()
    }

    #[getter]
    fn retry(&self) -> Option<u64> {
        self.inner.retry()
    }

    #[getter]
    fn frame_count(&self) -> u64 {
        self.inner.frame_count()
    }

    #[getter]
    fn position(&self) -> u64 {
        self.inner.position()
    }

    #[getter]
    fn buffered(&self) -> usize {
        self.inner.buffered()
    }

    #[getter]
    fn max_buffer_size(&self) -> usize {
        self.inner.max_buffer()
    }
}

/// Split a whole recorded stream (feed + close) with the GIL released.
#[pyfunction]
#[pyo3(signature = (data, max_buffer_size = core::DEFAULT_MAX_BUFFER, check = true, candidates = false))]
fn split_sse(py: Python<'_>, data: &Bound<'_, PyAny>, max_buffer_size: usize, check: bool, candidates: bool) -> PyResult<SseBatch> {
    with_bytes(data, |d| {
        let batch = if d.len() >= DETACH_MIN {
            py.detach(|| core::split_all(d, max_buffer_size, check, candidates))
        } else {
            core::split_all(d, max_buffer_size, check, candidates)
        };
        SseBatch { inner: batch }
    })
}

/// Split a whole recorded stream in parts on a Rust thread and call `consume(batch)`
/// with each part's `SseBatch`, in order. The first part has `part_size` bytes and each
/// next one 1.5x the previous, up to `max_part_size`. The thread never needs the GIL, so
/// the caller's decoding of part i (msgspec, which holds the GIL throughout) overlaps
/// the framing of part i+1; a Python worker thread could not overlap at all. The last
/// batch ends the stream (a final frame without its blank line is in it); a batch with
/// an `error` (buffer limit) is the last one. An exception from `consume` stops all.
#[pyfunction]
#[pyo3(signature = (data, consume, part_size, max_part_size = usize::MAX, max_buffer_size = core::DEFAULT_MAX_BUFFER, check = true, candidates = false))]
#[allow(clippy::too_many_arguments)]
fn split_sse_parts(
    py: Python<'_>,
    data: &[u8],
    consume: &Bound<'_, PyAny>,
    part_size: usize,
    max_part_size: usize,
    max_buffer_size: usize,
    check: bool,
    candidates: bool,
) -> PyResult<()> {
    let mut parser = CoreParser::new(max_buffer_size);
    let mut offset: usize = 0;
    let mut budget = part_size.max(1);
    let produce = move || {
        let end = offset.saturating_add(budget).min(data.len());
        budget = budget.saturating_add(budget / 2).min(max_part_size.max(1));
        let mut batch = Batch::new(parser.frame_count(), check, candidates);
        let mut r = parser.feed(&data[offset..end], |f| batch.push(&f));
        let last = end == data.len() || r.is_err();
        if r.is_ok() && end == data.len() {
            r = parser.finish(|f| batch.push(&f));
        }
        if let Err(e) = r {
            batch.error = Some(e);
        }
        batch.close();
        offset = end;
        (batch, last)
    };
    crate::pipeline::pipelined(py, produce, |batch| consume.call1((SseBatch { inner: batch },)).map(drop))
}

/// Reads and frames a recorded stream file on a Rust thread, one `SseBatch` per chunk
/// read, in order: `iter_sse` decodes batch i (msgspec, GIL held) while the thread reads
/// and frames the next one. At most two batches wait in between, so memory stays
/// bounded by a few chunks whatever the file size. The last batch ends the stream (a
/// final frame without its blank line is in it); a batch with an `error` (buffer
/// limit) is the last one. A read error raises `OSError` from `__next__`. Dropping the
/// iterator stops the thread.
#[pyclass(module = "agui_fast._native", name = "SseFileFrames")]
struct SseFileFrames {
    reader: crate::pipeline::FileThread<Batch>,
}

#[pymethods]
impl SseFileFrames {
    #[new]
    #[pyo3(signature = (path, chunk_size, max_buffer_size = core::DEFAULT_MAX_BUFFER, check = true, candidates = false))]
    fn new(path: std::path::PathBuf, chunk_size: usize, max_buffer_size: usize, check: bool, candidates: bool) -> PyResult<Self> {
        let mut parser = CoreParser::new(max_buffer_size);
        let reader = crate::pipeline::FileThread::spawn(&path, chunk_size, move |chunk| {
            let mut batch = Batch::new(parser.frame_count(), check, candidates);
            let r = match chunk {
                Some(c) => parser.feed(c, |f| batch.push(&f)),
                None => parser.finish(|f| batch.push(&f)),
            };
            let failed = r.is_err();
            if let Err(e) = r {
                batch.error = Some(e);
            }
            batch.close();
            (batch, failed)
        })?;
        Ok(SseFileFrames { reader })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<SseBatch>> {
        Ok(self.reader.next(py)?.map(|inner| SseBatch { inner }))
    }
}

/// One SSE event for `payload`: `data: <line>\n` per line, then `\n`.
#[pyfunction]
fn sse_event<'py>(py: Python<'py>, payload: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_bytes(payload, |p| {
        let mut out = Vec::with_capacity(p.len() + 8);
        core::write_event(&mut out, p);
        PyBytes::new(py, &out)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SseParser>()?;
    m.add_class::<SseBatch>()?;
    m.add_function(wrap_pyfunction!(split_sse_parts, m)?)?;
    m.add_class::<SseFileFrames>()?;
    m.add_function(wrap_pyfunction!(split_sse, m)?)?;
    m.add_function(wrap_pyfunction!(sse_event, m)?)?;
    m.add("SSE_DEFAULT_MAX_BUFFER", core::DEFAULT_MAX_BUFFER)?;
    Ok(())
}
