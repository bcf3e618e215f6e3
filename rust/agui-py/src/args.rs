//! The numeric arguments of the public API (sizes, limits, depths, thread counts), one
//! converter per argument name, used as `#[pyo3(from_py_with = args::<name>)]`.
//!
//! What a caller gets for a bad value is the same everywhere: `TypeError` for anything but
//! an int (a float, a str, `None` where it is not allowed, a bool; objects with `__index__`
//! are ints), `ValueError` naming the argument and its range for an int out of range. A
//! size limit or budget has no upper end: past the machine's sizes it means no limit.
//! Never PyO3's `OverflowError` (an int past 64 bits, a negative one for an unsigned
//! parameter), and never a value so large that the core would overflow on it, allocate it,
//! start that many threads or recurse past a thread's stack.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBool;

use agui_core::limits::MAX_DEPTH_CAP;

/// The largest size limit accepted (bytes of a frame, a buffer, a chunk): the largest
/// allocation Rust can make, so arithmetic on a limit never overflows `u64`.
pub const MAX_SIZE: u64 = isize::MAX as u64;

/// The largest read size accepted (`chunk_size=`): each read allocates a buffer that large.
pub const MAX_CHUNK_SIZE: u64 = 1 << 30;

/// The most threads a call may ask for. More is never faster (a call's work is cut in
/// far fewer parts than that) and each one is an OS thread with its own stack.
pub const MAX_THREADS: u64 = 1024;

/// An int argument as far as `u64` reaches: `Ok(Some(v))`, `Ok(None)` past it (negative,
/// or beyond 64 bits; `negative` tells which), `TypeError` for anything but an int.
fn read(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<Result<u64, bool>> {
    if ob.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{name} must be an int, not bool")));
    }
    match ob.extract::<u64>() {
        Ok(v) => Ok(Ok(v)),
        Err(e) if e.is_instance_of::<PyOverflowError>(ob.py()) => Ok(Err(ob.lt(0)?)),
        Err(_) => {
            let kind = ob.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
            Err(PyTypeError::new_err(format!("{name} must be an int, not {kind}")))
        }
    }
}

/// `ob` as an int in `lo..=hi`, or the error the module documentation describes.
pub fn int_in(ob: &Bound<'_, PyAny>, name: &str, lo: u64, hi: u64) -> PyResult<u64> {
    match read(ob, name)? {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(PyValueError::new_err(format!("{name} must be between {lo} and {hi}, not {}", shown(ob)))),
    }
}

/// A size limit or budget: an int of at least `lo`; past `MAX_SIZE` (the machine's sizes)
/// it means no limit, and is `MAX_SIZE`.
pub fn limit_at_least(ob: &Bound<'_, PyAny>, name: &str, lo: u64) -> PyResult<u64> {
    match read(ob, name)? {
        Ok(v) if v >= lo => Ok(v.min(MAX_SIZE)),
        Err(false) => Ok(MAX_SIZE),
        _ => Err(PyValueError::new_err(format!("{name} must be at least {lo}, not {}", shown(ob)))),
    }
}

/// An int as the message shows it (a huge one by its size: its digits would be the message).
fn shown(ob: &Bound<'_, PyAny>) -> String {
    let text = ob.str().map(|s| s.to_string()).unwrap_or_default();
    if text.len() > 40 {
        format!("an int of {} digits", text.trim_start_matches('-').len())
    } else {
        text
    }
}

/// A size limit in bytes, or a count limit: `0..`, no limit past the machine's sizes.
pub fn size_limit(ob: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    Ok(limit_at_least(ob, name, 0)? as usize)
}

/// `max_depth=`: `0..=MAX_DEPTH_CAP` (deeper could exhaust a thread's stack).
pub fn max_depth(ob: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(int_in(ob, "max_depth", 0, MAX_DEPTH_CAP as u64)? as usize)
}

/// `max_depth=` of the object walk, whose depth counter is a `u32`.
pub fn max_depth_u32(ob: &Bound<'_, PyAny>) -> PyResult<u32> {
    Ok(max_depth(ob)? as u32)
}

/// `max_frame_size=`: bytes, `0..=MAX_SIZE`.
pub fn max_frame_size(ob: &Bound<'_, PyAny>) -> PyResult<usize> {
    size_limit(ob, "max_frame_size")
}

/// `max_buffer_size=`: bytes, `0..=MAX_SIZE`.
pub fn max_buffer_size(ob: &Bound<'_, PyAny>) -> PyResult<usize> {
    size_limit(ob, "max_buffer_size")
}

/// `max_buffer_size=` where `None` means "not given".
pub fn max_buffer_size_opt(ob: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if ob.is_none() {
        return Ok(None);
    }
    max_buffer_size(ob).map(Some)
}

/// `max_errors=`: the errors one call may collect, `0..=MAX_SIZE`.
pub fn max_errors(ob: &Bound<'_, PyAny>) -> PyResult<usize> {
    size_limit(ob, "max_errors")
}

/// `chunk_size=`: bytes read at a time, `1..=MAX_CHUNK_SIZE`.
pub fn chunk_size(ob: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(int_in(ob, "chunk_size", 1, MAX_CHUNK_SIZE)? as usize)
}

/// `threads=`: `None` (the default of the call) or `1..=MAX_THREADS`.
pub fn threads(ob: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if ob.is_none() {
        return Ok(None);
    }
    Ok(Some(int_in(ob, "threads", 1, MAX_THREADS)? as usize))
}

/// `threads=` where `0` means "one per core": `0..=MAX_THREADS`.
pub fn threads_or_zero(ob: &Bound<'_, PyAny>) -> PyResult<usize> {
    Ok(int_in(ob, "threads", 0, MAX_THREADS)? as usize)
}

/// `check_int(name, value, lo, hi, /) -> int`: the same check for the arguments the Python
/// layer takes itself (`chunk_size` of a file read, a response's `max_batch`).
#[pyfunction]
#[pyo3(signature = (name, value, lo, hi, /))]
fn check_int(name: &str, value: &Bound<'_, PyAny>, lo: u64, hi: u64) -> PyResult<u64> {
    int_in(value, name, lo, hi)
}

/// `check_limit(name, value, lo=0, /) -> int`: a size limit or budget the Python layer takes
/// itself: at least `lo`, `MAX_SIZE` (no limit) past the machine's sizes.
#[pyfunction]
#[pyo3(signature = (name, value, lo = 0, /))]
fn check_limit(name: &str, value: &Bound<'_, PyAny>, lo: u64) -> PyResult<u64> {
    limit_at_least(value, name, lo)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(check_int, m)?)?;
    m.add_function(wrap_pyfunction!(check_limit, m)?)?;
    m.add("MAX_SIZE", MAX_SIZE)?;
    m.add("MAX_CHUNK_SIZE", MAX_CHUNK_SIZE)?;
    m.add("MAX_THREADS", MAX_THREADS)?;
    m.add("MAX_DEPTH_CAP", MAX_DEPTH_CAP)?;
    Ok(())
}
