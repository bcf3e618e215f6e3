//! Calls of the C API with no safe form in PyO3, each wrapped so that it cannot be misused:
//! the cyclic GC's switch, reference counts read, type flags read once and kept with their
//! object.

use std::os::raw::c_ulong;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The cyclic GC paused for a scope (C API, GIL held). Only the flag is flipped, so a
/// nested or concurrent pause by someone else is left as it was.
pub(crate) struct GcPause<'py>(bool, Python<'py>);

impl<'py> GcPause<'py> {
    pub(crate) fn new(py: Python<'py>, wanted: bool) -> Self {
        // SAFETY: the GIL is held (the token); PyGC_Disable only sets the collector's flag
        // and returns its previous state (1: it was enabled).
        GcPause(wanted && unsafe { ffi::PyGC_Disable() } == 1, py)
    }
}

impl Drop for GcPause<'_> {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: the GIL is held: the pause holds the token of the thread that paused
            // (a `Python<'py>` cannot leave its thread).
            unsafe { ffi::PyGC_Enable() };
        }
    }
}

/// `dict[key] = value`, the key and the value given away: their references are released
/// in place (`Layout::decref`) once the dict has taken its own, where pyo3's `set_item`
/// releases them through two calls of the limited API (a visible cost of a large state's
/// hand-over: a call per member).
pub(crate) fn set_item_given<'py>(lay: crate::ffi::layout::Layout, dict: &Bound<'py, PyDict>, key: Bound<'py, pyo3::types::PyString>, value: Bound<'py, PyAny>) -> PyResult<()> {
    let (k, v) = (key.into_ptr(), value.into_ptr());
    // SAFETY: the GIL is held (the dict's token); `k` and `v` are live objects whose
    // references were the Bounds' (into_ptr), each released once, after PyDict_SetItem (which
    // never steals) took its own or failed.
    let r = unsafe {
        let r = ffi::PyDict_SetItem(dict.as_ptr(), k, v);
        lay.decref(k);
        lay.decref(v);
        r
    };
    if r != 0 {
        return Err(PyErr::fetch(dict.py()));
    }
    Ok(())
}

/// A new dict of a template's keys, in its order, whose values are then written into its
/// entries one by one ([`DictFill::put`]): a copy of the template's table (`PyDict_Copy`:
/// one allocation and a copy) where a new dict hashes each key into its table (the first
/// insert allocating it) and each insert of the limited API is a call. The dict is the
/// filler's alone until [`DictFill::finish`] hands it over: no watcher, cache or other
/// reference can see an entry written in place.
pub(crate) struct DictFill<'py> {
    lay: crate::ffi::layout::Layout,
    dict: Bound<'py, PyDict>,
    /// A value the cyclic GC tracks was put (the dict is tracked since).
    tracked: bool,
}

impl<'py> DictFill<'py> {
    /// A copy of `template` (a dict made by the caller, held by nothing else, of `len`
    /// members, none ever removed) to fill; None where the entries cannot be written in
    /// place (the dict reads are off: another interpreter, or `AGUI_FAST_PUBLIC_API=1`), or
    /// the copy's table is not `len` entries in a row.
    pub(crate) fn copy(lay: crate::ffi::layout::Layout, template: &Bound<'py, PyDict>, len: usize) -> PyResult<Option<Self>> {
        let dict = template.copy()?;
        let d = dict.as_ptr();
        // SAFETY: `d` is the live dict just made (the GIL held: its token); its table is read
        // only when dict_direct holds, and no Python code ran since.
        let whole = len > 0 && unsafe { lay.dict_direct(d) && lay.dict_entries(d).value_slot(len - 1).is_some() && lay.dict_entries(d).value_slot(len).is_none() };
        if !whole {
            return Ok(None);
        }
        Ok(Some(DictFill { lay, dict, tracked: false }))
    }

    /// Entry `i`'s value set to `value` (given away): the value of the template's `i`-th key.
    /// The dict is tracked by the cyclic GC once it holds a value the GC tracks, as an
    /// insert tracks it.
    pub(crate) fn put(&mut self, i: usize, value: Bound<'py, PyAny>) -> PyResult<()> {
        let d = self.dict.as_ptr();
        let gc = !self.tracked && type_flags(&value) & ffi::Py_TPFLAGS_HAVE_GC != 0;
        // SAFETY: the dict is live and this filler's alone (made by `copy` from a table that
        // dict_direct confirmed; a combined table never becomes split); its table is read
        // again here (nothing else writes it, but making a value may have run a collection)
        // and entry i's slot holds a live value whose reference the dict owns: it is replaced
        // by `value`'s reference (into_ptr), then released. The dict is tracked through the
        // API, once, only when it is not yet (tracking a tracked object aborts).
        unsafe {
            let Some(slot) = self.lay.dict_entries(d).value_slot(i) else {
                return Err(pyo3::exceptions::PySystemError::new_err("no such entry"));
            };
            let old = std::mem::replace(&mut *slot, value.into_ptr());
            if gc {
                if ffi::PyObject_GC_IsTracked(d) == 0 {
                    ffi::PyObject_GC_Track(d.cast());
                }
                self.tracked = true;
            }
            self.lay.decref(old);
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Bound<'py, PyDict> {
        self.dict
    }
}

/// The reference count of a live object (`sys.getrefcount` less the argument's own).
pub(crate) fn refcount(o: &Bound<'_, PyAny>) -> isize {
    // SAFETY: `o` is a live object and the GIL is held (the token it carries).
    unsafe { ffi::Py_REFCNT(o.as_ptr()) }
}

/// The flags of `v`'s type (`PyType_GetFlags`: a call under the limited API, where every
/// `PyDict_Check`-style test is one).
pub(crate) fn type_flags(v: &Bound<'_, PyAny>) -> c_ulong {
    // SAFETY: `v` is a live object, so its type is too; the GIL is held (its token).
    unsafe { ffi::PyType_GetFlags(ffi::Py_TYPE(v.as_ptr())) }
}

/// A value seen as a container.
pub(crate) enum Container<'a, 'py> {
    Dict(&'a Bound<'py, PyDict>),
    List(&'a Bound<'py, PyList>),
    Other,
}

/// `v` as a container, by one read of its type flags.
pub(crate) fn container<'a, 'py>(v: &'a Bound<'py, PyAny>) -> Container<'a, 'py> {
    container_by(v, type_flags(v))
}

/// `v` as a container, `flags` being its type's flags (private: [`Typed`] keeps the two
/// together).
fn container_by<'a, 'py>(v: &'a Bound<'py, PyAny>, flags: c_ulong) -> Container<'a, 'py> {
    if flags & ffi::Py_TPFLAGS_DICT_SUBCLASS != 0 {
        // SAFETY: the type's flags say it is a dict (or subclass).
        Container::Dict(unsafe { v.cast_unchecked::<PyDict>() })
    } else if flags & ffi::Py_TPFLAGS_LIST_SUBCLASS != 0 {
        // SAFETY: the type's flags say it is a list (or subclass).
        Container::List(unsafe { v.cast_unchecked::<PyList>() })
    } else {
        Container::Other
    }
}

/// A value with its type's flags, read once (an object's type is fixed for the flags read
/// here: `__class__` assignment cannot turn a dict or list into anything else, nor make
/// anything else one).
#[derive(Clone)]
pub(crate) struct Typed<'py> {
    v: Bound<'py, PyAny>,
    flags: c_ulong,
}

impl<'py> Typed<'py> {
    pub(crate) fn new(v: Bound<'py, PyAny>) -> Self {
        let flags = type_flags(&v);
        Typed { v, flags }
    }
    pub(crate) fn value(&self) -> &Bound<'py, PyAny> {
        &self.v
    }
    pub(crate) fn into_value(self) -> Bound<'py, PyAny> {
        self.v
    }
    pub(crate) fn flags(&self) -> c_ulong {
        self.flags
    }
    pub(crate) fn container(&self) -> Container<'_, 'py> {
        container_by(&self.v, self.flags)
    }
}

/// A data descriptor (both `__get__` and `__set__` in its type's slots: an instance
/// `__dict__` cannot shadow it) with its `tp_descr_get`, called directly (getattr's
/// result, without the MRO lookup).
pub(crate) struct DataDescr {
    descr: Py<PyAny>,
    get: ffi::descrgetfunc,
}

impl DataDescr {
    /// `descr`'s getter when it is a data descriptor.
    pub(crate) fn of(descr: &Bound<'_, PyAny>) -> Option<DataDescr> {
        // SAFETY: `descr` is a live object, so its type is too; the GIL is held (its token).
        // `PyType_GetSlot` only reads the type's slots.
        let (get, set) = unsafe {
            let dtp = ffi::Py_TYPE(descr.as_ptr());
            (ffi::PyType_GetSlot(dtp, ffi::Py_tp_descr_get), ffi::PyType_GetSlot(dtp, ffi::Py_tp_descr_set))
        };
        // Python 3.10's PyType_GetSlot on a static type may raise: treat as "no".
        // SAFETY: the GIL is held.
        unsafe { ffi::PyErr_Clear() };
        if get.is_null() || set.is_null() {
            return None;
        }
        // SAFETY: the `Py_tp_descr_get` slot holds a `descrgetfunc` (checked non-NULL).
        let get = unsafe { std::mem::transmute::<*mut std::os::raw::c_void, ffi::descrgetfunc>(get) };
        Some(DataDescr { descr: descr.clone().unbind(), get })
    }

    /// `descr.__get__(obj, type(obj))`: a new reference, or the error it raises.
    pub(crate) fn get<'py>(&self, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = obj.py();
        // SAFETY: `get` is the `tp_descr_get` of `descr`'s type (read in `of`; a type's
        // slots do not change), called as CPython calls it: the descriptor, a live
        // instance and its type, all borrowed for the call, under the GIL; it returns a
        // new reference or NULL with an exception set.
        unsafe {
            let tp = ffi::Py_TYPE(obj.as_ptr()) as *mut ffi::PyObject;
            Bound::from_owned_ptr_or_err(py, (self.get)(self.descr.as_ptr(), obj.as_ptr(), tp))
        }
    }
}

/// True when the value "has no value" for the omission rule: None or a non-finite float.
pub(crate) fn is_absent(v: &Bound<'_, PyAny>) -> bool {
    v.is_none() || v.cast_exact::<pyo3::types::PyFloat>().is_ok_and(|f| !f.value().is_finite())
}
