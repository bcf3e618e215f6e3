//! `model_dump` over the one object walker (`ffi/walk.rs`): its Python mode into
//! `ffi::dump::PyDump` (`dump_python`, behind `core/_dump.py:to_builtins` and
//! `model_dump`), and its JSON mode's text (`dump_json`: keys by attribute name,
//! `exclude_none`; behind `model_dump(mode="json")` and `model_dump_json`).
//!
//! The rules are those of `core/_dump.py`'s Python loop, which stays the reference: what
//! the walk does not spell itself (a dict key that is not an exact `str`, a msgspec Struct
//! that is not one of ours, nesting past `max_depth`: rare) is handed to that loop whole.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::ffi::dump::PyDump;
use crate::ffi::walk::{Dump, Opts, Walker};

/// dump_python(obj, by_alias, enums, exclude_none, fallback, /): `obj` as plain Python
/// data by `model_dump`'s Python-mode rules (`core/_dump.py:to_builtins`, with
/// `exclude_none`); what the walk leaves to the Python loop is
/// `fallback(obj, by_alias, enums, exclude_none)`.
#[pyfunction]
#[pyo3(signature = (obj, by_alias, enums, exclude_none, fallback, /))]
pub fn dump_python<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    by_alias: &Bound<'py, PyAny>,
    enums: &Bound<'py, PyAny>,
    exclude_none: &Bound<'py, PyAny>,
    fallback: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let dump = Dump { by_name: !by_alias.is_truthy()?, enums: enums.is_truthy()?, exclude_none: exclude_none.is_truthy()? };
    let mut w = Walker::new(py, PyDump::new(py), Opts::JSON).dumping(dump);
    let walked = w.walk(obj);
    let gave_up = w.gave_up;
    let mut sink = std::mem::replace(&mut w.sink, PyDump::new(py));
    drop(w);
    match walked {
        Ok(()) => sink.finish(),
        Err(_) if gave_up => {
            drop(sink);
            fallback.call1((obj, !dump.by_name, dump.enums, dump.exclude_none))
        }
        // (the sink's own failure first: the walk then stopped at the next container)
        Err(e) => Err(sink.failure().unwrap_or(e)),
    }
}

/// dump_json(obj, by_alias, exclude_none, /) -> bytes: `dumps(obj)` with `model_dump`'s
/// options: without `by_alias` the members of our Structs keyed by attribute name
/// (`message_id`, `from` for `from_`), as `model_dump_json()` writes them (a msgspec
/// Struct that is not one of ours is then an `EncodeError`); with `exclude_none` the
/// members of msgspec Structs written as null left out, as pydantic's filter leaves them
/// out of JSON-mode data.
#[pyfunction]
#[pyo3(signature = (obj, by_alias, exclude_none, /))]
pub fn dump_json<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, by_alias: &Bound<'py, PyAny>, exclude_none: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let dump = Dump { by_name: !by_alias.is_truthy()?, exclude_none: exclude_none.is_truthy()?, ..Dump::default() };
    crate::encode::dumps_with(py, obj, dump)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dump_python, m)?)?;
    m.add_function(wrap_pyfunction!(dump_json, m)?)?;
    Ok(())
}
