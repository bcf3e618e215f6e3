//! The call slot of the Structs' metaclass (`construct.rs` holds the plans, the Python
//! surface and the docs): the `tp_call` and vectorcall entry points CPython calls, the
//! routing of a call's keywords read in place, msgspec's constructor called with them, and
//! the metaclass type made from a spec. `PyRead`, the reading of Python values for the
//! core's one interpreter of construction checks, also serves the walker's schema checks.

use std::os::raw::{c_int, c_uint, c_void};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use agui_core::construct::{JsonReader, JsonValue, Keyword, Route};

use crate::construct::{lenient, plan_for, Check, JsonDefault, Plan, SHARED_RECORDS, WITHOUT_TAG_SITES};
use crate::ffi::layout::Layout;

/// `plan_of(cls)`, `lenient(cls, kwargs)`, the metaclass, and msgspec's call slot.
pub(crate) struct Meta {
    pub(crate) plan_of: Py<PyAny>,
    pub(crate) lenient: Py<PyAny>,
    /// `core._given.Extras`: an instance `__dict__` that records fields given at their
    /// default (and the tag) in its `given` slot.
    pub(crate) extras: Py<PyType>,
    /// `core._given.Shared`: the `Extras` subclass of the records that the instances
    /// built with the same names share (`Plan::records`) until one needs a `__dict__` of
    /// its own (`construct::instance_dict`).
    pub(crate) shared: Py<PyType>,
    /// How a record is made without a call through the type: `Extras`' `tp_new` (dict's,
    /// which an `Extras` needs no `__init__` after), the empty arguments it is given, and
    /// the `given` slot's member descriptor with its `__set__` (`Shared` inherits both).
    extras_new: ffi::newfunc,
    no_args: Py<PyTuple>,
    given: (Py<PyAny>, ffi::descrsetfunc),
    pub(crate) ty: Py<PyType>,
    base_call: ffi::ternaryfunc,
    /// msgspec's `Struct_vectorcall` and the offset, in each class object, of our own
    /// vectorcall slot (see `struct_meta`); None: calls take `tp_call` (tuple + dict).
    vectorcall: Option<(ffi::vectorcallfunc, usize)>,
}
static META: PyOnceLock<Meta> = PyOnceLock::new();


/// `a == b` for two `str` objects (pointer first: keywords and field names are interned).
#[inline]
pub(crate) unsafe fn str_eq(a: *mut ffi::PyObject, b: *mut ffi::PyObject) -> bool {
    if a == b {
        return true;
    }
    // SAFETY: the contract: two live str objects, the GIL held.
    unsafe {
        let r = ffi::PyUnicode_Compare(a, b);
        if r == -1 && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return false;
        }
        r == 0
    }
}

/// How the one interpreter of a `Check` (`agui_core::construct::check`) reads Python
/// values: exactly (`SCHEMA = false`, construction's fast path: exact `str`, `int` within
/// `i64` and not `bool`, `dict` with `str` keys, `list`, exact classes, patterns run) or
/// as a schema (`true`, the encoder's: subclasses too, tuples as arrays, ints of any
/// size; patterns other than JSON Pointers are not re-run, a regex call per string would
/// cost more than the whole encode). Values are borrowed and alive for the check; only a
/// pattern runs Python code (a compiled pattern on an exact str: no user code). The
/// schema reading takes list and tuple items in place (`Layout`).
pub(super) struct PyRead<'py, const SCHEMA: bool>(pub(crate) Python<'py>, pub(crate) Option<Layout>);

impl<const SCHEMA: bool> agui_core::construct::Access for PyRead<'_, SCHEMA> {
    type Value = *mut ffi::PyObject;
    type Lit = Py<PyString>;
    type Pattern = Py<PyAny>;
    // SAFETY (every method): `v` is a live object borrowed for the check. Exact types by
    // pointer first: the flag checks are calls under the limited API.
    fn is_none(&self, v: Self::Value) -> bool {
        // SAFETY: Py_None only takes the address of the None singleton.
        v == unsafe { ffi::Py_None() }
    }
    fn is_str(&self, v: Self::Value) -> bool {
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`).
        unsafe { ffi::PyUnicode_CheckExact(v) != 0 || (SCHEMA && ffi::PyUnicode_Check(v) != 0) }
    }
    fn str_is(&self, v: Self::Value, lit: &Py<PyString>) -> bool {
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`); `lit` is a live str the plan holds.
        unsafe { str_eq(v, lit.as_ptr()) }
    }
    fn matches(&self, v: Self::Value, search: &Py<PyAny>) -> bool {
        // (The call's argument tuple holds its own reference to `v`.)
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`); the call's argument tuple takes its own reference.
        SCHEMA || search.bind(self.0).call1((unsafe { Bound::from_borrowed_ptr(self.0, v) },)).is_ok_and(|m| !m.is_none())
    }
    fn with_text<R>(&self, v: Self::Value, f: impl FnOnce(&str) -> R) -> Option<R> {
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`); a new reference is taken.
        let s = unsafe { Bound::from_borrowed_ptr(self.0, v) };
        let r = s.cast::<PyString>().ok().and_then(|s| s.to_str().ok().map(f));
        // SAFETY: the GIL is held (`self.0`).
        unsafe { ffi::PyErr_Clear() };
        r
    }
    fn unmodelled(&self) -> bool {
        SCHEMA
    }
    fn int(&self, v: Self::Value) -> Option<Option<i64>> {
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`); an exact int (or, in the schema reading, an int subclass) is read by the
        // API.
        unsafe {
            let tp = ffi::Py_TYPE(v);
            let is_int = tp == &raw mut ffi::PyLong_Type || (SCHEMA && ffi::PyLong_Check(v) != 0 && tp != &raw mut ffi::PyBool_Type);
            if !is_int {
                return None;
            }
            let mut overflow: c_int = 0;
            let x = ffi::PyLong_AsLongLongAndOverflow(v, &mut overflow);
            let fits = overflow == 0 && (x != -1 || ffi::PyErr_Occurred().is_null());
            ffi::PyErr_Clear();
            // Beyond i64: the exact reading leaves it to the lenient path.
            if fits { Some(Some(x)) } else if SCHEMA { Some(None) } else { None }
        }
    }
    fn is_bool(&self, v: Self::Value) -> bool {
        // SAFETY: Py_True and Py_False only take the addresses of the singletons.
        unsafe { v == ffi::Py_True() || v == ffi::Py_False() }
    }
    fn is_dict(&self, v: Self::Value) -> bool {
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`); PyDict_Next reads an exact dict (checked first) that nothing changes
        // during the loop: no Python code runs in it.
        unsafe {
            if SCHEMA {
                return ffi::Py_TYPE(v) == &raw mut ffi::PyDict_Type || ffi::PyDict_Check(v) != 0;
            }
            if ffi::PyDict_CheckExact(v) == 0 {
                return false;
            }
            let (mut pos, mut k, mut val) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            while ffi::PyDict_Next(v, &mut pos, &mut k, &mut val) != 0 {
                if ffi::PyUnicode_CheckExact(k) == 0 {
                    return false;
                }
            }
            true
        }
    }
    fn is_instance(&self, v: Self::Value, classes: &[usize]) -> bool {
        // Exact classes first: a subtype check walks the MRO (a call each).
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`).
        let tp = unsafe { ffi::Py_TYPE(v) };
        classes.contains(&(tp as usize))
            // SAFETY: `tp` is the type of a live object and each `c` a class the plan holds alive.
            || (SCHEMA && classes.iter().any(|&c| unsafe { ffi::PyType_IsSubtype(tp, c as *mut ffi::PyTypeObject) } != 0))
    }
    fn seq_len(&self, v: Self::Value) -> Option<usize> {
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`); the sizes are read by the API after the type checks.
        unsafe {
            if ffi::PyList_CheckExact(v) != 0 || (SCHEMA && ffi::PyList_Check(v) != 0) {
                Some(ffi::PyList_Size(v) as usize)
            } else if SCHEMA && ffi::PyTuple_Check(v) != 0 {
                Some(ffi::PyTuple_Size(v) as usize)
            } else {
                None
            }
        }
    }
    fn item(&self, v: Self::Value, i: usize) -> Option<Self::Value> {
        // Borrowed from the array: nothing the check runs can change it.
        // SAFETY: `v` is a live object borrowed for the check (PyRead is made only in this module,
        // by `passes` and the walker's `conforms`, over values alive for the call), and the GIL is
        // held (`self.0`); a list's or tuple's items are read in place only when `self.1` holds a
        // layout whose seq reads check_seq confirmed, else by the API; an item is borrowed from the
        // array, which nothing the check runs can change.
        unsafe {
            let lay = self.1.filter(|l| l.seq());
            let it = if ffi::Py_TYPE(v) == &raw mut ffi::PyList_Type || (SCHEMA && ffi::PyList_Check(v) != 0) {
                match lay {
                    Some(lay) => lay.list_item(v, i),
                    None => Some(ffi::PyList_GetItem(v, i as ffi::Py_ssize_t)),
                }
            } else {
                match lay {
                    Some(lay) => lay.tuple_items(v).get(i).copied(),
                    None => Some(ffi::PyTuple_GetItem(v, i as ffi::Py_ssize_t)),
                }
            };
            let it = it.filter(|p| !p.is_null());
            if it.is_none() {
                ffi::PyErr_Clear();
            }
            it
        }
    }
}

/// Does `v` (borrowed, alive for the call) pass `check` as it is?
#[inline]
unsafe fn passes(py: Python<'_>, check: &Check, v: *mut ffi::PyObject) -> bool {
    agui_core::construct::check::<_, ()>(&PyRead::<false>(py, None), check, v).is_ok()
}

/// Is `v` the field's default `d` (None or a literal `str`)?
#[inline]
unsafe fn at_default(v: *mut ffi::PyObject, d: &Py<PyAny>) -> bool {
    let d = d.as_ptr();
    // SAFETY: the contract: `v` a live object, `d` a live default the plan holds.
    v == d || unsafe { ffi::PyUnicode_CheckExact(d) != 0 && ffi::PyUnicode_CheckExact(v) != 0 && str_eq(v, d) }
}

/// Route the keywords `(name, value)` (borrowed, alive for the call) by the core's
/// decision (`agui_core::construct`): here each keyword is matched to its field (pointers
/// first: call-site keywords and the plan's names are interned) and its value checked.
unsafe fn route(
    py: Python<'_>,
    plan: &Plan,
    pairs: impl Iterator<Item = (*mut ffi::PyObject, *mut ffi::PyObject)>,
    given: &mut u64,
) -> Route {
    let is_tag = |k: *mut ffi::PyObject, exact: bool| match &plan.tag {
        // SAFETY: the contract: `k` is a live keyword name of the call.
        Some((field, _, _)) => field.as_ptr() == k || (!exact && unsafe { str_eq(k, field.as_ptr()) }),
        None => false,
    };
    let keywords = pairs.map(|(k, v)| {
        let found = plan.names.iter().position(|n| n.as_ptr() == k);
        let found = if found.is_none() && !is_tag(k, true) {
            // SAFETY: the contract: `k` is a live keyword name of the call; the plan's names are
            // live.
            plan.names.iter().position(|n| unsafe { str_eq(k, n.as_ptr()) })
        } else {
            found
        };
        let kw = match found {
            Some(i) => Keyword::Field(i),
            None if is_tag(k, false) => Keyword::Tag,
            None => Keyword::Unknown,
        };
        (kw, v)
    });
    // SAFETY: the contract: `v` is a live keyword value of the call.
    let passes = |i: usize, v: &*mut ffi::PyObject| unsafe { passes(py, &plan.checks[i], *v) };
    // SAFETY: the contract: `v` is a live keyword value of the call.
    let at_default = |i: usize, v: &*mut ffi::PyObject| plan.defaults[i].as_ref().is_some_and(|d| unsafe { at_default(*v, d) });
    // the class's own tag object (an EventType member) or an equal str
    let tag_ok = |v: &*mut ffi::PyObject| match &plan.tag {
        Some((_, tag, member)) => {
            // SAFETY: the contract: `v` is a live keyword value of the call; the plan's tag is a
            // live str.
            *v == member.as_ptr() || (unsafe { ffi::PyUnicode_Check(*v) } != 0 && unsafe { str_eq(*v, tag.as_ptr()) })
        }
        None => false,
    };
    plan.fields.route(keywords, passes, at_default, tag_ok, given)
}

/// The items of a keyword dict (the call's own: nothing else changes it meanwhile).
struct DictPairs(*mut ffi::PyObject, ffi::Py_ssize_t);
impl Iterator for DictPairs {
    type Item = (*mut ffi::PyObject, *mut ffi::PyObject);
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_null() {
            return None;
        }
        let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: `self.0` is the call's own keyword dict (live, or NULL: no items), which nothing
        // changes while it is read (DictPairs is used only by `call`).
        (unsafe { ffi::PyDict_Next(self.0, &mut self.1, &mut k, &mut v) } != 0).then_some((k, v))
    }
}

pub(crate) fn meta(py: Python<'_>) -> PyResult<&Meta> {
    META.get(py).ok_or_else(|| PyTypeError::new_err("agui_fast: struct_meta was not set up"))
}


/// After a fast-path build: record the fields given at their default and the tag, if any.
fn recorded(py: Python<'_>, meta: &Meta, plan: &Plan, obj: PyResult<Py<PyAny>>, given: u64, tag: bool) -> PyResult<Py<PyAny>> {
    let obj = obj?;
    if given != 0 || tag {
        record(py, meta, plan, obj.as_ptr(), given, tag)?;
    }
    Ok(obj)
}

/// Make the (empty) `__dict__` of `obj` (a live Struct instance, borrowed) a record of the
/// fields in `given` and, with `tag`, of the tag: the class's shared record of those names
/// (`core._given.Shared`, one per combination: no allocation per instance), or a record of
/// its own past `SHARED_RECORDS` combinations.
fn record(py: Python<'_>, meta: &Meta, plan: &Plan, obj: *mut ffi::PyObject, given: u64, tag: bool) -> PyResult<()> {
    // SAFETY: `obj` is a live Struct instance with a `__dict__` slot (dict=True) and `rec`
    // a dict (subclass), both alive for the call (the slot takes its own reference; the
    // empty slot it replaces runs no Python code).
    let set = |rec: *mut ffi::PyObject| match unsafe { ffi::PyObject_GenericSetDict(obj, rec, std::ptr::null_mut()) } {
        0 => Ok(()),
        _ => Err(PyErr::fetch(py)),
    };
    if let Some((_, _, rec)) = plan.records.borrow().iter().find(|(g, t, _)| *g == given && *t == tag) {
        return set(rec.as_ptr());
    }
    let keep = plan.records.borrow().len() < SHARED_RECORDS;
    let names: Vec<Bound<'_, PyString>> = plan
        .tag
        .as_ref()
        .filter(|_| tag)
        .map(|(field, _, _)| field.bind(py).clone())
        .into_iter()
        .chain(plan.fields.given(given).map(|i| plan.names[i].bind(py).clone()))
        .collect();
    let rec = with_given(py, meta, if keep { &meta.shared } else { &meta.extras }, PyTuple::new(py, names)?.as_any())?;
    if keep {
        plan.records.borrow_mut().push((given, tag, rec.clone().unbind()));
    }
    set(rec.as_ptr())
}

/// A new, empty record of class `ty` (`Extras` or `Shared`) holding `names`.
pub(crate) fn with_given<'py>(py: Python<'py>, meta: &Meta, ty: &Py<PyType>, names: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `extras_new` is the `tp_new` of `Extras` (a dict subclass; `Shared` derives
    // from it, so `ty` is one of its types), called as `type.__call__` would with an empty
    // tuple; `given` is `Extras`' own member descriptor and its `__set__`, given an
    // instance of the class and a tuple alive for the call (the slot takes its own
    // reference). Each returns a new reference / 0, or NULL / -1 with an exception set.
    unsafe {
        let rec = (meta.extras_new)(ty.as_ptr() as *mut ffi::PyTypeObject, meta.no_args.as_ptr(), std::ptr::null_mut());
        let rec = Bound::from_owned_ptr_or_err(py, rec)?;
        let (descr, set) = &meta.given;
        if set(descr.as_ptr(), rec.as_ptr(), names.as_ptr()) != 0 {
            return Err(PyErr::fetch(py));
        }
        Ok(rec)
    }
}

/// `obj.__dict__` as the default attribute gives it (made empty when there is none),
/// whatever class-level `__dict__` the type has.
pub(crate) fn get_dict<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `obj` is alive for the call; the API returns a new reference (making the dict
    // if there is none) or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(obj.py(), ffi::PyObject_GenericGetDict(obj.as_ptr(), std::ptr::null_mut())) }
}

/// `obj.__dict__ = value` as the default attribute does it (the API checks `value`).
pub(crate) fn set_dict(obj: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: both alive for the call; the API takes its own reference to `value`.
    match unsafe { ffi::PyObject_GenericSetDict(obj.as_ptr(), value.as_ptr(), std::ptr::null_mut()) } {
        0 => Ok(()),
        _ => Err(PyErr::fetch(obj.py())),
    }
}

/// `construct::record_given`: the walk of `obj` (built by msgspec from `input`) and the
/// data beside it.
pub(crate) fn record_given(py: Python<'_>, meta: &Meta, obj: &Bound<'_, PyAny>, input: &Bound<'_, PyAny>) -> PyResult<bool> {
    // SAFETY: both objects are alive for the call, and the walk only reads them: nothing it
    // calls runs Python code (slot reads, hashes of str keys, the records' dicts), so the
    // borrowed items and values it holds stay alive.
    unsafe { record_value(py, meta, obj.as_ptr(), input.as_ptr()) }
}

/// `record_given` of one value `v`, built from `input`, both borrowed and alive.
unsafe fn record_value(py: Python<'_>, meta: &Meta, v: *mut ffi::PyObject, input: *mut ffi::PyObject) -> PyResult<bool> {
    // SAFETY: the contract: `v` and `input` are live objects; items and values are read
    // borrowed from containers nothing changes during the walk (no Python code runs).
    unsafe {
        if ffi::PyList_CheckExact(v) != 0 {
            // msgspec makes a list of a list or a tuple of the same length
            let n = ffi::PyList_Size(v);
            let item: unsafe fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject = if ffi::PyList_CheckExact(input) != 0 {
                |l, i| ffi::PyList_GetItem(l, i)
            } else if ffi::PyTuple_CheckExact(input) != 0 {
                |t, i| ffi::PyTuple_GetItem(t, i)
            } else {
                return Ok(true);
            };
            if ffi::PyObject_Size(input) != n {
                ffi::PyErr_Clear();
                return Ok(true);
            }
            for i in 0..n {
                if !record_value(py, meta, ffi::PyList_GetItem(v, i), item(input, i))? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if ffi::PyDict_CheckExact(input) == 0 {
            return Ok(true); // an instance given as it is
        }
        let tp = ffi::Py_TYPE(v);
        if ffi::PyType_IsSubtype(ffi::Py_TYPE(tp as *mut ffi::PyObject), meta.ty.as_ptr() as *mut ffi::PyTypeObject) == 0 {
            return Ok(true);
        }
        let cls = Bound::from_borrowed_ptr(py, tp as *mut ffi::PyObject).cast_into_unchecked::<PyType>();
        let plan = plan_for(py, meta, &cls)?;
        if plan.names.len() > 64 {
            return Ok(false);
        }
        let (mut given, mut tag) = (0u64, false);
        // The members the data gave (msgspec took them all: each is the tag or a field's
        // wire name, a str whose hash is cached), matched by hash first.
        let (mut pos, mut k, mut val) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        while ffi::PyDict_Next(input, &mut pos, &mut k, &mut val) != 0 {
            let h = ffi::PyObject_Hash(k);
            if h == plan.tag_hash && plan.tag.as_ref().is_some_and(|(field, _, _)| str_eq(k, field.as_ptr())) {
                tag = true;
                continue;
            }
            let Some(i) = (0..plan.wires.len()).find(|&i| plan.wire_hashes[i] == h && str_eq(k, plan.wires[i].as_ptr())) else {
                continue;
            };
            // The data's value is at the default exactly when the converted one is (None,
            // or a literal `str`).
            if plan.defaults[i].as_ref().is_some_and(|d0| at_default(val, d0)) {
                given |= 1u64 << i;
            }
            if plan.nested[i] {
                let value = Bound::from_owned_ptr_or_err(py, ffi::PyObject_GetAttr(v, plan.names[i].as_ptr()))?;
                if !record_value(py, meta, value.as_ptr(), val)? {
                    return Ok(false);
                }
            }
        }
        if given != 0 || tag {
            record(py, meta, &plan, v, given, tag)?;
        }
        Ok(true)
    }
}

/// `construct::record_given_json`: the walk of `obj` (decoded by msgspec from `text`) and
/// the text beside it, as `record_given` walks the data; the text must end where the
/// walk does.
pub(crate) fn record_given_json(py: Python<'_>, meta: &Meta, obj: &Bound<'_, PyAny>, text: &str) -> PyResult<bool> {
    let mut reader = JsonReader::new(text);
    // SAFETY: `obj` is alive for the call and only read (slot reads, the records' dicts:
    // no Python code runs), so the borrowed items it holds stay alive.
    Ok(unsafe { record_json(py, meta, obj.as_ptr(), &mut reader)? } && reader.at_end())
}

/// `record_given_json` of one value `v` (borrowed, alive) and the JSON value it was decoded
/// from, at the reader.
unsafe fn record_json(py: Python<'_>, meta: &Meta, v: *mut ffi::PyObject, r: &mut JsonReader<'_>) -> PyResult<bool> {
    // SAFETY: the contract: `v` is a live object; items are read borrowed from containers
    // nothing changes during the walk (no Python code runs).
    unsafe {
        if ffi::PyList_CheckExact(v) != 0 {
            if !r.begin(b'[') {
                return Ok(false);
            }
            let mut first = true;
            for i in 0..ffi::PyList_Size(v) {
                if r.item(&mut first) != Some(true) || !record_json(py, meta, ffi::PyList_GetItem(v, i), r)? {
                    return Ok(false);
                }
            }
            return Ok(r.item(&mut first) == Some(false));
        }
        let tp = ffi::Py_TYPE(v);
        if ffi::PyType_IsSubtype(ffi::Py_TYPE(tp as *mut ffi::PyObject), meta.ty.as_ptr() as *mut ffi::PyTypeObject) == 0 {
            return Ok(r.skip().is_some()); // a value of no Struct: nothing to record in it
        }
        if !r.begin(b'{') {
            return Ok(false);
        }
        let cls = Bound::from_borrowed_ptr(py, tp as *mut ffi::PyObject).cast_into_unchecked::<PyType>();
        let plan = plan_for(py, meta, &cls)?;
        if plan.names.len() > 64 {
            return Ok(false);
        }
        let (mut given, mut tag, mut first) = (0u64, false, true);
        loop {
            let key = match r.key(&mut first) {
                None => return Ok(false),
                Some(None) => break,
                Some(Some(key)) => key,
            };
            if plan.tag_text.as_deref() == Some(&*key) {
                tag = true;
                if r.skip().is_none() {
                    return Ok(false);
                }
                continue;
            }
            let Some(i) = plan.wire_texts.iter().position(|w| *w == *key) else {
                return Ok(false); // msgspec took no other member: the text is not what it decoded
            };
            // The text's value is at the default exactly when the decoded one is (None, or a
            // literal `str`).
            match (r.value(), &plan.json_defaults[i]) {
                (None, _) => return Ok(false),
                (Some(JsonValue::Null), JsonDefault::Null) => given |= 1u64 << i,
                (Some(JsonValue::Str(s)), JsonDefault::Str(d)) if *s == **d => given |= 1u64 << i,
                (Some(JsonValue::Nested), _) => {
                    if plan.nested[i] {
                        let value = Bound::from_owned_ptr_or_err(py, ffi::PyObject_GetAttr(v, plan.names[i].as_ptr()))?;
                        if !record_json(py, meta, value.as_ptr(), r)? {
                            return Ok(false);
                        }
                    } else if r.skip().is_none() {
                        return Ok(false);
                    }
                }
                _ => {}
            }
        }
        if given != 0 || tag {
            record(py, meta, &plan, v, given, tag)?;
        }
        Ok(true)
    }
}


/// `cls(**kwargs)` through `tp_call` (a tuple and a dict; the first call of each class, or
/// every call when vectorcall could not be set up).
///
/// # Safety
/// As CPython calls `tp_call`: the GIL held, `cls` an instance of the metaclass (a Struct
/// class), `args` a tuple and `kwargs` a dict or NULL, all borrowed for the call.
unsafe fn call(py: Python<'_>, cls: *mut ffi::PyObject, args: *mut ffi::PyObject, kwargs: *mut ffi::PyObject) -> PyResult<Py<PyAny>> {
    let meta = meta(py)?;
    let base = meta.base_call;
    // SAFETY: the contract: `cls` is a live Struct class; a new reference is taken.
    let cls_b = unsafe { Bound::from_borrowed_ptr(py, cls) }.cast_into::<PyType>()?;
    // SAFETY: the contract: `args` is a tuple.
    let nargs = unsafe { ffi::PyTuple_Size(args) };
    if nargs != 0 {
        return Err(positional(&cls_b, nargs as usize));
    }
    let plan = plan_for(py, meta, &cls_b)?;
    if let Some((_, offset)) = meta.vectorcall {
        // From now on this class is called through `meta_vectorcall` (no tuple, no dict),
        // this call included (CPython's PyObject_Call takes the vectorcall slot now set).
        // SAFETY: `offset` is our own pointer-sized field at the end of every instance of
        // the metaclass, and `cls` is one (this tp_call is only reached through one).
        unsafe {
            let slot = (cls as *mut u8).add(offset) as *mut Option<ffi::vectorcallfunc>;
            *slot = Some(meta_vectorcall);
            return Bound::from_owned_ptr_or_err(py, ffi::PyObject_Call(cls, args, kwargs)).map(Bound::unbind);
        }
    }
    let mut given = 0u64;
    // SAFETY: the contract: the call's keyword dict, alive for the call.
    match unsafe { route(py, &plan, DictPairs(kwargs, 0), &mut given) } {
        Route::Direct => {
            // SAFETY: `base` is msgspec's StructMeta tp_call, called as CPython would with this
            // call's arguments; it returns a new reference or NULL with an exception set.
            let obj = unsafe { Bound::from_owned_ptr_or_err(py, base(cls, args, kwargs)).map(Bound::unbind) };
            recorded(py, meta, &plan, obj, given, false)
        }
        Route::WithoutTag => {
            // SAFETY: the contract: `kwargs` is non-NULL here (a route other than Lenient needs a
            // keyword).
            let kw = unsafe { Bound::from_borrowed_ptr(py, kwargs) }.cast_into::<PyDict>()?.copy()?;
            if let Some((field, _, _)) = &plan.tag {
                kw.del_item(field.bind(py))?;
            }
            // SAFETY: as for the direct route, with a copy of the keywords without the tag.
            let obj = unsafe { Bound::from_owned_ptr_or_err(py, base(cls, args, kw.as_ptr())).map(Bound::unbind) };
            recorded(py, meta, &plan, obj, given, true)
        }
        Route::Lenient => {
            let kw = if kwargs.is_null() {
                PyDict::new(py)
            } else {
                // SAFETY: the contract: `kwargs` is a live dict when not NULL.
                unsafe { Bound::from_borrowed_ptr(py, kwargs) }.cast_into::<PyDict>()?
            };
            lenient(py, meta, &cls_b, kw)
        }
    }
}

/// `Py_TPFLAGS_HAVE_VECTORCALL` (the same bit since 3.8; the abi3-py310 headers omit it).
const HAVE_VECTORCALL: std::os::raw::c_ulong = 1 << 11;
/// Positional arguments are a wrong call, not bad data: the Structs are keyword-only.
fn positional(cls: &Bound<'_, PyType>, n: usize) -> PyErr {
    let name = cls.name().map(|n| n.to_string()).unwrap_or_default();
    PyTypeError::new_err(format!("{name}() takes keyword arguments only ({n} positional given)"))
}

const VECTORCALL_ARGUMENTS_OFFSET: usize = 1 << (usize::BITS - 1);

/// `call` in vectorcall form: the keywords are checked in place and, on the direct route,
/// handed to msgspec's `Struct_vectorcall` as they are.
///
/// # Safety
/// As CPython calls a vectorcall slot: the GIL held, `cls` an instance of the metaclass,
/// `args` the positional then keyword values (`nargsf` less the offset flag of them
/// positional, one per name of `kwnames`, a tuple or NULL), all borrowed for the call.
unsafe fn vcall(
    py: Python<'_>,
    cls: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> PyResult<Py<PyAny>> {
    let meta = meta(py)?;
    let Some((struct_vectorcall, _)) = meta.vectorcall else {
        return Err(PyTypeError::new_err("agui_fast: vectorcall construction is not set up"));
    };
    let nargs = nargsf & !VECTORCALL_ARGUMENTS_OFFSET;
    // SAFETY: the contract: `kwnames` is a tuple when not NULL.
    let nkw = if kwnames.is_null() { 0 } else { (unsafe { ffi::PyTuple_Size(kwnames) }) as usize };
    // SAFETY: the contract: `cls` is a live Struct class; a new reference is taken.
    let cls_b = unsafe { Bound::from_borrowed_ptr(py, cls) }.cast_into::<PyType>()?;
    if nargs != 0 {
        return Err(positional(&cls_b, nargs));
    }
    let plan = plan_for(py, meta, &cls_b)?;
    // SAFETY: CPython passes the `nkw` keyword values right after the (no) positional ones.
    let values: &[*mut ffi::PyObject] = if nkw == 0 { &[] } else { unsafe { std::slice::from_raw_parts(args, nkw) } };
    // SAFETY: the contract: `kwnames` holds `nkw` live names; only indices below `nkw` are asked.
    let name = |i: usize| unsafe { ffi::PyTuple_GetItem(kwnames, i as ffi::Py_ssize_t) };
    let mut given = 0u64;
    // SAFETY: the contract: names and values alive for the call.
    match unsafe { route(py, &plan, (0..nkw).map(|i| (name(i), values[i])), &mut given) } {
        Route::Direct => {
            // SAFETY: `struct_vectorcall` is msgspec's Struct_vectorcall (read by
            // layout::struct_vectorcall), called with this call's own arguments; it returns a new
            // reference or NULL with an exception set.
            let obj = unsafe { Bound::from_owned_ptr_or_err(py, struct_vectorcall(cls, args, nargsf, kwnames)).map(Bound::unbind) };
            recorded(py, meta, &plan, obj, given, false)
        }
        Route::WithoutTag => {
            let mut own = None;
            // SAFETY: the contract: `kwnames` is the call's tuple of `nkw` names.
            let (names, at) = unsafe { without_tag(py, &plan, kwnames, nkw, &mut own)? };
            // The values but the tag's, on the stack for the common few keywords.
            let mut stack = [std::ptr::null_mut(); 16];
            let mut heap = Vec::new();
            let vals: &mut [*mut ffi::PyObject] = if nkw <= stack.len() {
                &mut stack[..nkw - 1]
            } else {
                heap.resize(nkw - 1, std::ptr::null_mut());
                &mut heap
            };
            vals[..at].copy_from_slice(&values[..at]);
            vals[at..].copy_from_slice(&values[at + 1..]);
            // SAFETY: as for the direct route, with the values of the kept keywords (borrowed
            // from this call's arguments) and their names (a tuple the plan's memo or `own`
            // keeps alive for the call).
            let obj = unsafe { Bound::from_owned_ptr_or_err(py, struct_vectorcall(cls, vals.as_ptr(), 0, names)).map(Bound::unbind) };
            recorded(py, meta, &plan, obj, given, true)
        }
        Route::Lenient => {
            let kw = PyDict::new(py);
            for (i, v) in values.iter().enumerate() {
                // SAFETY: the contract: names and values alive for the call; new references are
                // taken.
                unsafe { kw.set_item(Bound::from_borrowed_ptr(py, name(i)), Bound::from_borrowed_ptr(py, *v))? };
            }
            lenient(py, meta, &cls_b, kw)
        }
    }
}

/// A call's keyword names without the tag (borrowed from the plan's memo of call sites,
/// which only grows while the plan lives; else built and owned by `own`), and the tag's
/// position among the keywords (the route found exactly one tag keyword).
///
/// # Safety
/// `kwnames` is the call's tuple of `nkw` live str objects, borrowed for the call.
unsafe fn without_tag(py: Python<'_>, plan: &Plan, kwnames: *mut ffi::PyObject, nkw: usize, own: &mut Option<Py<PyTuple>>) -> PyResult<(*mut ffi::PyObject, usize)> {
    if let Some((_, names, at)) = plan.without_tag.borrow().iter().find(|(k, _, _)| k.as_ptr() == kwnames) {
        return Ok((names.as_ptr(), *at));
    }
    let Some((tag_field, _, _)) = &plan.tag else { unreachable!("WithoutTag needs a tag") };
    // SAFETY: the contract: a live tuple; a new reference is taken.
    let all = unsafe { Bound::from_borrowed_ptr(py, kwnames) }.cast_into::<PyTuple>()?;
    // SAFETY: the contract: live str names; the plan's tag name is a live str.
    let at = (0..nkw).find(|&i| all.get_item(i).is_ok_and(|n| unsafe { str_eq(n.as_ptr(), tag_field.as_ptr()) }));
    let Some(at) = at else { unreachable!("WithoutTag needs the tag among the keywords") };
    let kept: Vec<Bound<'_, PyAny>> = all.iter().enumerate().filter(|(i, _)| *i != at).map(|(_, n)| n).collect();
    let names = PyTuple::new(py, kept)?;
    let ptr = names.as_ptr();
    let mut memo = plan.without_tag.borrow_mut();
    if memo.len() < WITHOUT_TAG_SITES {
        memo.push((all.unbind(), names.unbind(), at));
    } else {
        *own = Some(names.unbind());
    }
    Ok((ptr, at))
}

unsafe extern "C" fn meta_call(
    cls: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_call with the GIL held and the arguments borrowed for the
    // duration of the call; nothing derived from the token outlives this frame.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: this is the tp_call slot, called by CPython as `call` requires.
    crate::ffi::entry::run(py, "agui_fast Struct construction", || unsafe { call(py, cls, args, kwargs) }.map(|o| o.into_bound(py)))
}

unsafe extern "C" fn meta_vectorcall(
    cls: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: as for tp_call: the GIL is held, the arguments are borrowed for the call.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: this is the vectorcall slot, called by CPython as `vcall` requires.
    crate::ffi::entry::run(py, "agui_fast Struct construction", || unsafe { vcall(py, cls, args, nargsf, kwnames) }.map(|o| o.into_bound(py)))
}

/// Create the metaclass type from a spec; `vectorcall_at`: the offset of our per-class
/// vectorcall slot, appended to `StructMeta`'s layout.
fn new_meta<'py>(py: Python<'py>, base: &Bound<'py, PyType>, vectorcall_at: Option<usize>) -> PyResult<Bound<'py, PyType>> {
    // The spec is read by CPython while creating the type (the name, a C literal, is
    // static); the slot and member tables are leaked, once, so they stay valid regardless.
    let members = Box::leak(Box::new([
        ffi::PyMemberDef {
            name: c"__vectorcalloffset__".as_ptr(),
            type_code: ffi::Py_T_PYSSIZET,
            offset: vectorcall_at.unwrap_or(0) as ffi::Py_ssize_t,
            flags: ffi::Py_READONLY,
            doc: std::ptr::null(),
        },
        ffi::PyMemberDef { name: std::ptr::null(), type_code: 0, offset: 0, flags: 0, doc: std::ptr::null() },
    ]));
    let mut slots = vec![ffi::PyType_Slot { slot: ffi::Py_tp_call, pfunc: meta_call as *mut c_void }];
    let mut flags = ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_BASETYPE;
    let mut basicsize = 0; // inherited: StructMeta's layout, items included
    if let Some(at) = vectorcall_at {
        slots.push(ffi::PyType_Slot { slot: ffi::Py_tp_members, pfunc: members.as_mut_ptr() as *mut c_void });
        flags |= HAVE_VECTORCALL;
        basicsize = (at + std::mem::size_of::<usize>()) as c_int;
    }
    slots.push(ffi::PyType_Slot { slot: 0, pfunc: std::ptr::null_mut() });
    let slots = Box::leak(slots.into_boxed_slice());
    let spec = Box::leak(Box::new(ffi::PyType_Spec {
        name: c"agui_fast.core._base._AguiMeta".as_ptr(),
        basicsize,
        itemsize: 0,
        flags: flags as c_uint,
        slots: slots.as_mut_ptr(),
    }));
    let bases = PyTuple::new(py, [base])?;
    // SAFETY: `spec` and its slot and member tables are leaked (valid for ever), its name a static
    // C literal; `bases` is a live tuple; the call returns a new reference or NULL with an
    // exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpecWithBases(spec, bases.as_ptr()))? }
        .cast_into::<PyType>()
        .map_err(Into::into)
}

/// Create (once) the metaclass of the Structs: a subclass of `base` (msgspec's `StructMeta`)
/// whose instances (the Struct classes) construct through this module. `probe` is a plain
/// msgspec Struct class (see `layout::struct_vectorcall`).
pub(crate) fn init_meta<'py>(
    py: Python<'py>,
    base: &Bound<'py, PyType>,
    probe: &Bound<'py, PyType>,
    plan_of: &Bound<'py, PyAny>,
    lenient: &Bound<'py, PyAny>,
    extras: &Bound<'py, PyType>,
    shared: &Bound<'py, PyType>,
) -> PyResult<&'py Meta> {
    META.get_or_try_init(py, || -> PyResult<Meta> {
        // SAFETY: `base` is a live type object, the GIL is held; the call only reads a slot.
        let call = unsafe { ffi::PyType_GetSlot(base.as_ptr() as *mut ffi::PyTypeObject, ffi::Py_tp_call) };
        if call.is_null() {
            return Err(PyTypeError::new_err("struct_meta: the base metaclass is not callable"));
        }
        // SAFETY: the `Py_tp_call` slot of a type holds a `ternaryfunc` (checked non-NULL).
        let base_call: ffi::ternaryfunc = unsafe { std::mem::transmute::<*mut c_void, ffi::ternaryfunc>(call) };
        let basic: usize = base.getattr("__basicsize__")?.extract()?;
        let vc = crate::ffi::layout::struct_vectorcall(base, probe).filter(|_| basic.is_multiple_of(std::mem::size_of::<usize>()));
        let (ty, vectorcall) = match vc.map(|f| (f, new_meta(py, base, Some(basic)))) {
            Some((f, Ok(ty))) => (ty, Some((f, basic))),
            // a layout this interpreter refuses: the tp_call path
            Some((_, Err(_))) | None => (new_meta(py, base, None)?, None),
        };
        // SAFETY: slots read through the API (heap and static types alike since 3.10), the
        // GIL held.
        let new = unsafe { ffi::PyType_GetSlot(extras.as_ptr() as *mut ffi::PyTypeObject, ffi::Py_tp_new) };
        let descr = extras.getattr("__dict__")?.get_item("given")?;
        // SAFETY: as above.
        let set = unsafe { ffi::PyType_GetSlot(descr.get_type().as_ptr() as *mut ffi::PyTypeObject, ffi::Py_tp_descr_set) };
        if new.is_null() || set.is_null() || !shared.is_subclass(extras)? {
            return Err(PyTypeError::new_err("struct_meta: extras must be a dict subclass with a `given` slot, shared a subclass of it"));
        }
        Ok(Meta {
            plan_of: plan_of.clone().unbind(),
            lenient: lenient.clone().unbind(),
            extras: extras.clone().unbind(),
            shared: shared.clone().unbind(),
            // SAFETY: a type's `Py_tp_new` slot holds a `newfunc` (checked non-NULL).
            extras_new: unsafe { std::mem::transmute::<*mut c_void, ffi::newfunc>(new) },
            no_args: PyTuple::empty(py).unbind(),
            // SAFETY: a type's `Py_tp_descr_set` slot holds a `descrsetfunc` (checked non-NULL).
            given: (descr.unbind(), unsafe { std::mem::transmute::<*mut c_void, ffi::descrsetfunc>(set) }),
            ty: ty.unbind(),
            base_call,
            vectorcall,
        })
    })
}

/// Whether construction goes through vectorcall on this interpreter.
pub(crate) fn has_vectorcall(py: Python<'_>) -> bool {
    META.get(py).is_some_and(|m| m.vectorcall.is_some())
}

/// Does `v` pass `check` as it is (the exact reading of construction's fast path)?
pub(crate) fn passes_value(py: Python<'_>, check: &Check, v: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `v` is a live object held by the caller for the call.
    unsafe { passes(py, check, v.as_ptr()) }
}

/// `cls(**dict(zip(names, values)))` for field indices `fields` of `plan` (the plan of
/// `cls`; `names`: their names, the tuple msgspec's constructor takes, which a caller
/// building many instances of one class keeps) when construction's fast path would hand these keywords to msgspec's constructor
/// as they are and record nothing: each value plainly valid for its field, none at its
/// default, no tag, every required field given. The instance is then what `msgspec.convert`
/// makes of the same members (msgspec's constructor; no record for `model_fields_set`).
/// `None`: not so (the caller converts the plain values instead).
pub(crate) fn build_exact<'py>(
    py: Python<'py>,
    cls: &Bound<'py, PyType>,
    plan: &Plan,
    fields: &[usize],
    names: &Bound<'py, PyTuple>,
    values: &[Bound<'py, PyAny>],
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let meta = meta(py)?;
    let mut given = 0u64;
    let keywords = fields.iter().zip(values).map(|(&i, v)| (Keyword::Field(i), v.as_ptr()));
    // SAFETY: the values are live objects the caller holds for the call.
    let passes = |i: usize, v: &*mut ffi::PyObject| unsafe { passes(py, &plan.checks[i], *v) };
    // SAFETY: as above; the plan's defaults are live.
    let at_default = |i: usize, v: &*mut ffi::PyObject| plan.defaults[i].as_ref().is_some_and(|d| unsafe { at_default(*v, d) });
    if !matches!(plan.fields.route(keywords, passes, at_default, |_| false, &mut given), Route::Direct) || given != 0 {
        return Ok(None);
    }
    debug_assert!(names.len() == fields.len() && names.iter().zip(fields).all(|(n, &i)| n.is(plan.names[i].bind(py))));
    let obj = match meta.vectorcall {
        Some((struct_vectorcall, _)) => {
            // (on the stack: a Struct has a few fields)
            let mut stack = [std::ptr::null_mut(); 16];
            let heap: Vec<*mut ffi::PyObject>;
            let args: &[*mut ffi::PyObject] = if values.len() <= stack.len() {
                for (slot, v) in stack.iter_mut().zip(values) {
                    *slot = v.as_ptr();
                }
                &stack[..values.len()]
            } else {
                heap = values.iter().map(Bound::as_ptr).collect();
                &heap
            };
            // SAFETY: msgspec's Struct_vectorcall (read by layout::struct_vectorcall) called as
            // the metaclass's direct route calls it: a Struct class, no positional arguments,
            // one live value per name of the live tuple `names`; a new reference or NULL with
            // an exception set.
            unsafe { Bound::from_owned_ptr_or_err(py, struct_vectorcall(cls.as_ptr(), args.as_ptr(), 0, names.as_ptr())) }?
        }
        None => {
            let kw = PyDict::new(py);
            for (n, v) in names.iter().zip(values) {
                kw.set_item(n, v)?;
            }
            cls.call((), Some(&kw))?
        }
    };
    Ok(Some(obj))
}
