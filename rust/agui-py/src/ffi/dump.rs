//! The sink of `model_dump`'s Python mode: the walker's output as Python objects, the
//! walked values themselves wherever the dump keeps them (a str, an int, a datetime, an
//! Enum member: the same object, so lone surrogates, subclasses and any other value pass
//! unchanged), new dicts and lists for the containers.
//!
//! Containers are made when the walker opens them and are at once placed in their
//! parent, so a leaf goes straight into the innermost one: no item vectors.

use agui_core::sink::Sink;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::ffi::layout::Layout;
use crate::ffi::walk::WalkSink;

pub(crate) struct PyDump<'py> {
    py: Python<'py>,
    lay: Layout,
    /// The open containers, innermost last (a strong reference each; true: a dict).
    open: Vec<(*mut ffi::PyObject, bool)>,
    /// The key of the next member of the innermost dict (a strong reference, or null).
    key: *mut ffi::PyObject,
    /// The value built (a strong reference, or null).
    root: *mut ffi::PyObject,
    /// The first failure (memory): nothing more is built.
    error: Option<PyErr>,
}

impl<'py> PyDump<'py> {
    pub(crate) fn new(py: Python<'py>) -> PyDump<'py> {
        PyDump { py, lay: crate::ffi::layout::get(py), open: Vec::new(), key: std::ptr::null_mut(), root: std::ptr::null_mut(), error: None }
    }

    /// The value built, or the first failure.
    pub(crate) fn finish(mut self) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let root = std::mem::replace(&mut self.root, std::ptr::null_mut());
        if root.is_null() || !self.open.is_empty() {
            return Err(pyo3::exceptions::PySystemError::new_err("incomplete value"));
        }
        // SAFETY: `root` is a strong reference this sink owns (taken in `put`), handed over.
        Ok(unsafe { Bound::from_owned_ptr(py, root) })
    }

    /// The sink's own failure, if any (a walk stopped by it then raised another error).
    pub(crate) fn failure(&mut self) -> Option<PyErr> {
        self.error.take()
    }

    #[cold]
    fn fail(&mut self) {
        if self.error.is_none() {
            // (called right after a C API call that failed with its exception set)
            self.error = Some(PyErr::fetch(self.py));
        }
    }

    /// Place `v` (a live object, borrowed: the container takes its own reference) in the
    /// innermost container, or as the value built.
    ///
    /// # Safety
    /// `v` must be a live object; the GIL must be held.
    #[inline(always)]
    unsafe fn put(&mut self, v: *mut ffi::PyObject) {
        if self.error.is_some() {
            return;
        }
        // SAFETY: the contract; each container is a live list or dict this sink holds, and the
        // pending key a live exact str it holds: an append or an insert with such a key runs
        // no Python code.
        unsafe {
            match self.open.last() {
                None => {
                    if self.root.is_null() {
                        self.lay.incref(v);
                        self.root = v;
                    }
                }
                Some(&(list, false)) => {
                    if ffi::PyList_Append(list, v) != 0 {
                        self.fail();
                    }
                }
                Some(&(dict, true)) => {
                    let k = std::mem::replace(&mut self.key, std::ptr::null_mut());
                    if k.is_null() {
                        return; // (a value without its key: the walker always gives one)
                    }
                    let r = ffi::PyDict_SetItem(dict, k, v);
                    self.lay.decref(k);
                    if r != 0 {
                        self.fail();
                    }
                }
            }
        }
    }

    /// Place a new reference (`v` may be null: the call that made it failed).
    ///
    /// # Safety
    /// `v` must be null (with an exception set) or a new reference; the GIL must be held.
    unsafe fn put_new(&mut self, v: *mut ffi::PyObject) {
        if v.is_null() {
            self.fail();
            return;
        }
        // SAFETY: the contract: a live object whose reference is ours, released after the
        // container took its own.
        unsafe {
            self.put(v);
            ffi::Py_DecRef(v);
        }
    }

    /// Open a new container (null when it could not be made).
    fn open(&mut self, dict: bool) {
        if self.error.is_some() {
            self.open.push((std::ptr::null_mut(), dict));
            return;
        }
        // SAFETY: the GIL is held; a new, empty container (a new reference or null).
        let c = unsafe { if dict { ffi::PyDict_New() } else { ffi::PyList_New(0) } };
        if c.is_null() {
            self.fail();
        } else {
            // SAFETY: `c` is the live container just made.
            unsafe { self.put(c) };
        }
        self.open.push((c, dict));
    }

    fn close(&mut self) {
        if let Some((c, _)) = self.open.pop() {
            if !c.is_null() {
                // SAFETY: the reference `open` took (PyDict_New / PyList_New), released once.
                unsafe { self.lay.decref(c) };
            }
        }
    }

    /// A key made from text (a sink call the walker makes outside the Python mode).
    fn text_key(&mut self, k: &str) {
        // SAFETY: the GIL is held; a new str (or null with an exception set).
        let s = unsafe { ffi::PyUnicode_FromStringAndSize(k.as_ptr().cast(), k.len() as ffi::Py_ssize_t) };
        if s.is_null() {
            self.fail();
            return;
        }
        self.drop_key();
        self.key = s;
    }

    fn drop_key(&mut self) {
        let k = std::mem::replace(&mut self.key, std::ptr::null_mut());
        if !k.is_null() {
            // SAFETY: the pending key's reference, owned by this sink.
            unsafe { self.lay.decref(k) };
        }
    }
}

impl Drop for PyDump<'_> {
    fn drop(&mut self) {
        while !self.open.is_empty() {
            self.close();
        }
        self.drop_key();
        if !self.root.is_null() {
            // SAFETY: the value built, owned by this sink and not handed over.
            unsafe { self.lay.decref(self.root) };
        }
    }
}

impl<'a> Sink<'a> for PyDump<'_> {
    fn null(&mut self) {
        // SAFETY: None is immortal-or-live; the GIL is held.
        unsafe { self.put(ffi::Py_None()) }
    }
    fn bool(&mut self, v: bool) {
        // SAFETY: the bool singletons are live; the GIL is held.
        unsafe { self.put(if v { ffi::Py_True() } else { ffi::Py_False() }) }
    }
    fn i64(&mut self, v: i64) {
        // SAFETY: the GIL is held; a new int or null.
        unsafe { self.put_new(ffi::PyLong_FromLongLong(v)) }
    }
    fn big_int(&mut self, decimal: &str) {
        let Ok(c) = std::ffi::CString::new(decimal) else { return };
        // SAFETY: a NUL-terminated decimal; the GIL is held; a new int or null.
        unsafe { self.put_new(ffi::PyLong_FromString(c.as_ptr(), std::ptr::null_mut(), 10)) }
    }
    fn f64(&mut self, v: f64) {
        // SAFETY: the GIL is held; a new float or null.
        unsafe { self.put_new(ffi::PyFloat_FromDouble(v)) }
    }
    fn str(&mut self, s: &str) {
        // SAFETY: valid UTF-8 of the given length; the GIL is held; a new str or null.
        unsafe { self.put_new(ffi::PyUnicode_FromStringAndSize(s.as_ptr().cast(), s.len() as ffi::Py_ssize_t)) }
    }
    fn begin_array(&mut self) {
        self.open(false)
    }
    fn end_array(&mut self) {
        self.close()
    }
    fn begin_object(&mut self) {
        self.open(true)
    }
    fn key(&mut self, k: &str) {
        self.text_key(k)
    }
    fn end_object(&mut self, _distinct_keys: bool) {
        self.close()
    }
    fn object_mark(&self) -> usize {
        0
    }
    fn rewind_object(&mut self, _mark: usize) {}
    fn full(&self) -> bool {
        self.error.is_some()
    }
}

// SAFETY: a leaf or a key placed here is a dict insert with an exact `str` key into a dict
// this sink made (no `__hash__` or `__eq__` of user code), a list append, or a new scalar
// (None, bool, int, float, str: not tracked by the cyclic GC, so no collection starts).
// Containers are made at `begin_*`, which the walker reaches only holding what it walks,
// reading in place again after.
unsafe impl<'a> WalkSink<'a> for PyDump<'_> {
    const PYTHON: bool = true;

    #[inline(always)]
    unsafe fn py_value(&mut self, v: *mut ffi::PyObject) {
        // SAFETY: the trait's contract: a live object.
        unsafe { self.put(v) }
    }

    #[inline(always)]
    unsafe fn py_key(&mut self, k: *mut ffi::PyObject) {
        self.drop_key();
        // SAFETY: the trait's contract: a live exact str; the reference taken here is released
        // when the key is used or dropped.
        unsafe { self.lay.incref(k) };
        self.key = k;
    }

    unsafe fn py_discard(&mut self, k: *mut ffi::PyObject) {
        if self.error.is_some() {
            return;
        }
        if let Some(&(dict, true)) = self.open.last() {
            // SAFETY: `dict` is a live dict this sink made, whose keys are exact str, as `k` is
            // (the trait's contract): the lookup and the removal run no Python code.
            unsafe {
                match ffi::PyDict_Contains(dict, k) {
                    1 => {
                        if ffi::PyDict_DelItem(dict, k) != 0 {
                            self.fail();
                        }
                    }
                    0 => {}
                    _ => self.fail(),
                }
            }
        }
    }
}
