//! Validating construction of the `agui_fast.core` Structs: the native call slot of their
//! metaclass (`struct_meta`).
//!
//! `_AguiMeta` (core/_base.py) is created here as a subclass of msgspec's `StructMeta`
//! whose `tp_call` is `meta_call`, so `TextMessageContentEvent(message_id=..., delta=...)`
//! runs no Python frame (a Python-level `__call__` was ~1 µs of the old 1.5 µs). Per class,
//! a plan compiled once from the Python spec `plan_of(cls)` (core/_construct.py) checks
//! every keyword against its field's type exactly. When every keyword is a declared field
//! holding a plainly valid value (plus, optionally, the right tag), the keywords go to
//! msgspec's own constructor (the `StructMeta` call slot) unchanged. Anything else —
//! camelCase names, unknown keywords (extras), dicts for nested models, values that need
//! coercion, a missing field, an invalid value — goes to `lenient(cls, kwargs)` in Python,
//! which converts like decoding does and raises the project's `ValidationError`. The
//! native side only recognises the common valid case; it never decides an error.
//! A fast-path call that gives a field its default value, or passes the tag, records those
//! names as `core/_given.py` does (its `mark`, specialised to a new instance: an `Extras`
//! holding them becomes the empty `__dict__`): pydantic's `model_fields_set` counts them;
//! any other value given is told apart from the default by the value itself.
//! msgspec's decoders do not call the class, so decoding pays nothing for this.

use std::collections::HashMap;
use std::os::raw::{c_int, c_uint, c_void};
use std::rc::Rc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use agui_core::construct::{Fields, Keyword, Route};

use crate::gil::{GilBound, GilCell};
use crate::layout::Layout;

/// What a keyword's value must be for the fast path (anything else goes to `lenient`);
/// the encoder reads the same checks as each field's schema (`plan::conforms`). Literals
/// are interned strings (compared by pointer first), patterns bound `re.Pattern.search`.
pub(crate) type Check = agui_core::construct::Check<Py<PyString>, Py<PyAny>>;

pub(crate) struct Plan {
    /// The class itself: keeps the pointer key of the cache valid.
    _cls: Py<PyType>,
    /// Classes named by `Check::Structs` (their pointers are compared).
    _classes: Vec<Py<PyAny>>,
    pub(crate) names: Vec<Py<PyString>>,
    /// Each field's wire name (interned) and its hash, and whether its value may hold
    /// Structs; the tag field's hash.
    wires: Vec<Py<PyString>>,
    wire_hashes: Vec<ffi::Py_hash_t>,
    nested: Vec<bool>,
    tag_hash: ffi::Py_hash_t,
    /// Which fields are required, which record a default given explicitly (routing).
    fields: Fields,
    pub(crate) checks: Vec<Check>,
    /// Per field: the default (None or a literal `str`) that, given explicitly, is recorded
    /// for `model_fields_set`; None for a required field.
    defaults: Vec<Option<Py<PyAny>>>,
    /// `(tag field name, tag value, the class's tag attribute)` of a tagged Struct.
    tag: Option<(Py<PyString>, Py<PyString>, Py<PyAny>)>,
    /// The keyword names of calls that passed the tag, each with the same names without
    /// it (what msgspec's constructor is given) and the tag's position: a call site passes
    /// the same constant tuple every time, so it is rebuilt once, not per call.
    without_tag: std::cell::RefCell<Vec<CallSite>>,
    /// The shared records (`core._given.Shared`) made so far, by what they record: the
    /// fields given at their default (a bit set) and the tag.
    records: std::cell::RefCell<Vec<(u64, bool, Py<PyAny>)>>,
}

/// Shared records kept per class (a further combination of names gets its own record).
const SHARED_RECORDS: usize = 8;

/// A call site's keyword names, the same without the tag, and the tag's position.
type CallSite = (Py<PyTuple>, Py<PyTuple>, usize);

/// Call sites remembered per class in `Plan::without_tag` (further ones build their names).
const WITHOUT_TAG_SITES: usize = 8;

// Class pointers are already well spread: no SipHash (the walker's hasher for type addresses).
type Plans = HashMap<usize, GilBound<Rc<Plan>>, agui_core::patch::cache::FastBuild>;
static PLANS: GilCell<Option<Plans>> = GilCell::new(None);

/// `plan_of(cls)`, `lenient(cls, kwargs)`, the metaclass, and msgspec's call slot.
struct Meta {
    plan_of: Py<PyAny>,
    lenient: Py<PyAny>,
    /// `core._given.Extras`: an instance `__dict__` that records fields given at their
    /// default (and the tag) in its `given` slot.
    extras: Py<PyType>,
    /// `core._given.Shared`: the `Extras` subclass of the records that the instances
    /// built with the same names share (`Plan::records`) until one needs a `__dict__` of
    /// its own (`instance_dict`).
    shared: Py<PyType>,
    /// How a record is made without a call through the type: `Extras`' `tp_new` (dict's,
    /// which an `Extras` needs no `__init__` after), the empty arguments it is given, and
    /// the `given` slot's member descriptor with its `__set__` (`Shared` inherits both).
    extras_new: ffi::newfunc,
    no_args: Py<PyTuple>,
    given: (Py<PyAny>, ffi::descrsetfunc),
    ty: Py<PyType>,
    base_call: ffi::ternaryfunc,
    /// msgspec's `Struct_vectorcall` and the offset, in each class object, of our own
    /// vectorcall slot (see `struct_meta`); None: calls take `tp_call` (tuple + dict).
    vectorcall: Option<(ffi::vectorcallfunc, usize)>,
}
static META: PyOnceLock<Meta> = PyOnceLock::new();

fn compile(spec: &Bound<'_, PyAny>, classes: &mut Vec<Py<PyAny>>) -> PyResult<Check> {
    let t = spec.cast::<PyTuple>()?;
    let kind: String = t.get_item(0)?.extract()?;
    Ok(match kind.as_str() {
        "any" => Check::Any,
        "str" => Check::Str,
        "int" => Check::Int(t.get_item(1)?.extract()?, t.get_item(2)?.extract()?),
        "bool" => Check::Bool,
        "literal" => Check::Literal(
            t.get_item(1)?.cast::<PyTuple>()?.iter().map(|v| v.cast_into::<PyString>().map(|s| s.unbind())).collect::<Result<_, _>>()?,
        ),
        "dict" => Check::Dict,
        "structs" => {
            let mut ptrs = Vec::new();
            for c in t.get_item(1)?.cast::<PyTuple>()?.iter() {
                ptrs.push(c.as_ptr() as usize);
                classes.push(c.unbind());
            }
            Check::Structs(ptrs)
        }
        "list" => Check::List(Box::new(compile(&t.get_item(1)?, classes)?), t.get_item(2)?.extract()?),
        "pattern" => Check::Pattern(t.get_item(1)?.unbind()),
        "json_pointer" => Check::JsonPointer,
        "optional" => Check::Optional(Box::new(compile(&t.get_item(1)?, classes)?)),
        "union" => Check::Union(
            t.get_item(1)?.cast::<PyTuple>()?.iter().map(|c| compile(&c, classes)).collect::<PyResult<_>>()?,
        ),
        "never" => Check::Never,
        other => return Err(PyTypeError::new_err(format!("unknown construction check {other:?}"))),
    })
}

fn build_plan(py: Python<'_>, meta: &Meta, cls: &Bound<'_, PyType>) -> PyResult<Rc<Plan>> {
    let spec = meta.plan_of.bind(py).call1((cls,))?;
    let spec = spec.cast::<PyTuple>()?;
    let tag = spec.get_item(0)?;
    let tag = if tag.is_none() {
        None
    } else {
        let t = tag.cast::<PyTuple>()?;
        let field = t.get_item(0)?.cast_into::<PyString>()?;
        let field = PyString::intern(py, field.to_str()?);
        let member = cls.getattr(&field)?.unbind();
        Some((field.unbind(), t.get_item(1)?.cast_into::<PyString>()?.unbind(), member))
    };
    let mut classes = Vec::new();
    let (mut names, mut required, mut checks, mut defaults, mut wires) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for f in spec.get_item(1)?.cast::<PyTuple>()?.iter() {
        let f = f.cast::<PyTuple>()?;
        // Interned, so the keyword names of ordinary calls match by pointer.
        let name = f.get_item(0)?.cast_into::<PyString>()?;
        names.push(PyString::intern(py, name.to_str()?).unbind());
        let req = f.get_item(1)?.extract::<bool>()?;
        required.push(req);
        checks.push(compile(&f.get_item(2)?, &mut classes)?);
        defaults.push((!req).then(|| f.get_item(3).map(|d| d.unbind())).transpose()?);
        wires.push(PyString::intern(py, f.get_item(4)?.cast_into::<PyString>()?.to_str()?).unbind());
    }
    let nested = checks.iter().map(holds_structs).collect();
    let wire_hashes = wires.iter().map(|w| w.bind(py).hash()).collect::<PyResult<_>>()?;
    let tag_hash = tag.as_ref().map_or(Ok(-1), |(field, _, _)| field.bind(py).hash())?;
    let fields = Fields::new(required, defaults.iter().map(Option::is_some).collect());
    let without_tag = Default::default();
    Ok(Rc::new(Plan {
        _cls: cls.clone().unbind(),
        _classes: classes,
        names,
        wires,
        wire_hashes,
        nested,
        tag_hash,
        fields,
        checks,
        defaults,
        tag,
        without_tag,
        records: Default::default(),
    }))
}

/// May a value passing `check` hold Structs (itself, or in its items)?
fn holds_structs(check: &Check) -> bool {
    match check {
        Check::Structs(_) => true,
        Check::List(item, _) | Check::Optional(item) => holds_structs(item),
        Check::Union(members) => members.iter().any(holds_structs),
        _ => false,
    }
}

fn plan_for(py: Python<'_>, meta: &Meta, cls: &Bound<'_, PyType>) -> PyResult<Rc<Plan>> {
    let key = cls.as_ptr() as usize;
    let hit = PLANS.with(py, |p| p.get_or_insert_with(Plans::default).get(&key).map(|b| b.0.clone()));
    if let Some(plan) = hit {
        return Ok(plan);
    }
    let plan = build_plan(py, meta, cls)?;
    // `plan_of` ran Python: another thread may have cached this class meanwhile; keep the
    // first (nothing is dropped inside the cell, where a decref could run Python).
    Ok(PLANS.with(py, |p| p.get_or_insert_with(Plans::default).entry(key).or_insert_with(|| GilBound(plan.clone())).0.clone()))
}

/// The construction plan of `cls` when its metaclass is ours (the field checks that the
/// encoder also holds each value to); None for any other class.
pub(crate) fn schema_plan(py: Python<'_>, cls: &Bound<'_, PyType>) -> PyResult<Option<Rc<Plan>>> {
    let Some(meta) = META.get(py) else { return Ok(None) };
    let own = unsafe {
        ffi::PyType_IsSubtype(ffi::Py_TYPE(cls.as_ptr()), meta.ty.as_ptr() as *mut ffi::PyTypeObject) != 0
    };
    if !own {
        return Ok(None);
    }
    plan_for(py, meta, cls).map(Some)
}

/// `a == b` for two `str` objects (pointer first: keywords and field names are interned).
#[inline]
pub(crate) unsafe fn str_eq(a: *mut ffi::PyObject, b: *mut ffi::PyObject) -> bool {
    if a == b {
        return true;
    }
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
pub(crate) struct PyRead<'py, const SCHEMA: bool>(pub(crate) Python<'py>, pub(crate) Option<Layout>);

impl<const SCHEMA: bool> agui_core::construct::Access for PyRead<'_, SCHEMA> {
    type Value = *mut ffi::PyObject;
    type Lit = Py<PyString>;
    type Pattern = Py<PyAny>;
    // SAFETY (every method): `v` is a live object borrowed for the check. Exact types by
    // pointer first: the flag checks are calls under the limited API.
    fn is_none(&self, v: Self::Value) -> bool {
        v == unsafe { ffi::Py_None() }
    }
    fn is_str(&self, v: Self::Value) -> bool {
        unsafe { ffi::PyUnicode_CheckExact(v) != 0 || (SCHEMA && ffi::PyUnicode_Check(v) != 0) }
    }
    fn str_is(&self, v: Self::Value, lit: &Py<PyString>) -> bool {
        unsafe { str_eq(v, lit.as_ptr()) }
    }
    fn matches(&self, v: Self::Value, search: &Py<PyAny>) -> bool {
        // (The call's argument tuple holds its own reference to `v`.)
        SCHEMA || search.bind(self.0).call1((unsafe { Bound::from_borrowed_ptr(self.0, v) },)).is_ok_and(|m| !m.is_none())
    }
    fn with_text<R>(&self, v: Self::Value, f: impl FnOnce(&str) -> R) -> Option<R> {
        let s = unsafe { Bound::from_borrowed_ptr(self.0, v) };
        let r = s.cast::<PyString>().ok().and_then(|s| s.to_str().ok().map(f));
        unsafe { ffi::PyErr_Clear() };
        r
    }
    fn unmodelled(&self) -> bool {
        SCHEMA
    }
    fn int(&self, v: Self::Value) -> Option<Option<i64>> {
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
        unsafe { v == ffi::Py_True() || v == ffi::Py_False() }
    }
    fn is_dict(&self, v: Self::Value) -> bool {
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
        let tp = unsafe { ffi::Py_TYPE(v) };
        classes.contains(&(tp as usize))
            || (SCHEMA && classes.iter().any(|&c| unsafe { ffi::PyType_IsSubtype(tp, c as *mut ffi::PyTypeObject) } != 0))
    }
    fn seq_len(&self, v: Self::Value) -> Option<usize> {
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
        Some((field, _, _)) => field.as_ptr() == k || (!exact && unsafe { str_eq(k, field.as_ptr()) }),
        None => false,
    };
    let keywords = pairs.map(|(k, v)| {
        let found = plan.names.iter().position(|n| n.as_ptr() == k);
        let found = if found.is_none() && !is_tag(k, true) {
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
    let passes = |i: usize, v: &*mut ffi::PyObject| unsafe { passes(py, &plan.checks[i], *v) };
    let at_default = |i: usize, v: &*mut ffi::PyObject| plan.defaults[i].as_ref().is_some_and(|d| unsafe { at_default(*v, d) });
    // the class's own tag object (an EventType member) or an equal str
    let tag_ok = |v: &*mut ffi::PyObject| match &plan.tag {
        Some((_, tag, member)) => {
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
        (unsafe { ffi::PyDict_Next(self.0, &mut self.1, &mut k, &mut v) } != 0).then_some((k, v))
    }
}

fn meta(py: Python<'_>) -> PyResult<&Meta> {
    META.get(py).ok_or_else(|| PyTypeError::new_err("agui_fast: struct_meta was not set up"))
}

fn lenient<'py>(py: Python<'py>, meta: &Meta, cls: &Bound<'py, PyType>, kw: Bound<'py, PyDict>) -> PyResult<Py<PyAny>> {
    Ok(meta.lenient.bind(py).call1((cls, kw))?.unbind())
}

/// After a fast-path build: record the fields given at their default and the tag, if any.
fn recorded(py: Python<'_>, meta: &Meta, plan: &Plan, obj: PyResult<Py<PyAny>>, given: u64, tag: bool) -> PyResult<Py<PyAny>> {
    let obj = obj?;
    if given != 0 || tag {
        record(py, meta, plan, obj.bind(py), given, tag)?;
    }
    Ok(obj)
}

/// Make `obj`'s (empty) `__dict__` a record of the fields in `given` and, with `tag`, of
/// the tag: the class's shared record of those names (`core._given.Shared`, one per
/// combination: no allocation per instance), or a record of its own past
/// `SHARED_RECORDS` combinations.
fn record(py: Python<'_>, meta: &Meta, plan: &Plan, obj: &Bound<'_, PyAny>, given: u64, tag: bool) -> PyResult<()> {
    // SAFETY: `obj` is a live Struct instance with a `__dict__` slot (dict=True) and `rec`
    // a dict (subclass); both are alive for the call (the slot takes its own reference;
    // the empty slot it replaces runs no Python code).
    let set = |rec: *mut ffi::PyObject| match unsafe { ffi::PyObject_GenericSetDict(obj.as_ptr(), rec, std::ptr::null_mut()) } {
        0 => Ok(()),
        _ => Err(PyErr::fetch(py)),
    };
    if let Some((_, _, rec)) = plan.records.borrow().iter().find(|(g, t, _)| *g == given && *t == tag) {
        return set(rec.as_ptr());
    }
    let keep = plan.records.borrow().len() < SHARED_RECORDS;
    let rec = new_record(py, meta, plan, given, tag, if keep { &meta.shared } else { &meta.extras })?;
    if keep {
        plan.records.borrow_mut().push((given, tag, rec.clone().unbind()));
    }
    set(rec.as_ptr())
}

/// A new, empty record (of class `ty`: `Extras` or `Shared`) of the fields in `given` and,
/// with `tag`, of the tag.
fn new_record<'py>(py: Python<'py>, meta: &Meta, plan: &Plan, given: u64, tag: bool, ty: &Py<PyType>) -> PyResult<Bound<'py, PyAny>> {
    let tag = plan.tag.as_ref().filter(|_| tag).map(|(field, _, _)| field.bind(py).clone());
    let fields = plan.fields.given(given).map(|i| plan.names[i].bind(py).clone());
    let names = PyTuple::new(py, tag.into_iter().chain(fields).collect::<Vec<Bound<'_, PyString>>>())?;
    with_given(py, meta, ty, names.as_any())
}

/// A new, empty record of class `ty` (`Extras` or `Shared`) holding `names`.
fn with_given<'py>(py: Python<'py>, meta: &Meta, ty: &Py<PyType>, names: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `extras_new` is the `tp_new` of `Extras` (a dict subclass; `Shared` derives
    // from it), called with such a type and an empty tuple as `type.__call__` would;
    // `given` is `Extras`' own member descriptor and its `__set__`, given an instance of
    // it and a tuple alive for the call (the slot takes its own reference).
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

/// `__dict__` of the Structs (a property of `core._base._Model`): the instance's own dict
/// (made empty when it has none, as the default attribute does), never a shared record:
/// one is first replaced by a record of its own holding the same names, so that what is
/// done to the dict is done to this instance alone.
#[pyfunction]
fn instance_dict<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let meta = meta(py)?;
    // SAFETY: `obj` is alive for the call; the API makes the dict if there is none.
    let d = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyObject_GenericGetDict(obj.as_ptr(), std::ptr::null_mut()))? };
    if !d.get_type().is(meta.shared.bind(py)) {
        return Ok(d);
    }
    let own = with_given(py, meta, &meta.extras, &d.getattr(pyo3::intern!(py, "given"))?)?;
    set_instance_dict(obj, &own)?;
    Ok(own)
}

/// `obj.__dict__ = value` (the setter of `instance_dict`'s property).
#[pyfunction]
fn set_instance_dict(obj: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: both alive for the call; the API checks that `value` is a dict.
    if unsafe { ffi::PyObject_GenericSetDict(obj.as_ptr(), value.as_ptr(), std::ptr::null_mut()) } != 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    Ok(())
}

/// After msgspec converted plain data `input` into `obj` (an instance of one of our Structs,
/// with no `__dict__` anywhere yet): record, at every level, what the instances cannot
/// show by their values, as the exact path (`core._convert`) records it: a tag the data
/// gave, a member given at its default. The schema's Struct positions are followed (never
/// `Any` values). False when a record is needed that this walk does not make (a class of
/// more than 64 fields): the caller takes the exact path.
#[pyfunction]
fn record_given(py: Python<'_>, obj: &Bound<'_, PyAny>, input: &Bound<'_, PyAny>) -> PyResult<bool> {
    // SAFETY: both objects are alive for the call, and the walk reads only: nothing it
    // calls runs Python code (slot reads, hashes of str keys, the records' dicts), so the
    // borrowed items and values it holds stay alive.
    unsafe { record_value(py, meta(py)?, obj.as_ptr(), input.as_ptr()) }
}

/// `record_given` on one value (`v`, built from `input`), both borrowed.
unsafe fn record_value(py: Python<'_>, meta: &Meta, v: *mut ffi::PyObject, input: *mut ffi::PyObject) -> PyResult<bool> {
    unsafe {
        if ffi::PyList_CheckExact(v) != 0 {
            // msgspec makes a list of a list or a tuple of the same length
            let n = ffi::PyList_Size(v);
            let item: fn(*mut ffi::PyObject, ffi::Py_ssize_t) -> *mut ffi::PyObject = if ffi::PyList_CheckExact(input) != 0 {
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
            record(py, meta, &plan, Bound::from_borrowed_ptr(py, v).as_any(), given, tag)?;
        }
        Ok(true)
    }
}

/// `cls(**kwargs)` through `tp_call` (a tuple and a dict; the first call of each class, or
/// every call when vectorcall could not be set up).
fn call(py: Python<'_>, cls: *mut ffi::PyObject, args: *mut ffi::PyObject, kwargs: *mut ffi::PyObject) -> PyResult<Py<PyAny>> {
    let meta = meta(py)?;
    let base = meta.base_call;
    let cls_b = unsafe { Bound::from_borrowed_ptr(py, cls) }.cast_into::<PyType>()?;
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
            return Py::from_owned_ptr_or_err(py, ffi::PyObject_Call(cls, args, kwargs));
        }
    }
    let mut given = 0u64;
    match unsafe { route(py, &plan, DictPairs(kwargs, 0), &mut given) } {
        Route::Direct => {
            let obj = unsafe { Py::from_owned_ptr_or_err(py, base(cls, args, kwargs)) };
            recorded(py, meta, &plan, obj, given, false)
        }
        Route::WithoutTag => {
            let kw = unsafe { Bound::from_borrowed_ptr(py, kwargs) }.cast_into::<PyDict>()?.copy()?;
            if let Some((field, _, _)) = &plan.tag {
                kw.del_item(field.bind(py))?;
            }
            let obj = unsafe { Py::from_owned_ptr_or_err(py, base(cls, args, kw.as_ptr())) };
            recorded(py, meta, &plan, obj, given, true)
        }
        Route::Lenient => {
            let kw = if kwargs.is_null() {
                PyDict::new(py)
            } else {
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
fn vcall(
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
    let nkw = if kwnames.is_null() { 0 } else { (unsafe { ffi::PyTuple_Size(kwnames) }) as usize };
    let cls_b = unsafe { Bound::from_borrowed_ptr(py, cls) }.cast_into::<PyType>()?;
    if nargs != 0 {
        return Err(positional(&cls_b, nargs));
    }
    let plan = plan_for(py, meta, &cls_b)?;
    // SAFETY: CPython passes the `nkw` keyword values right after the (no) positional ones.
    let values: &[*mut ffi::PyObject] = if nkw == 0 { &[] } else { unsafe { std::slice::from_raw_parts(args, nkw) } };
    let name = |i: usize| unsafe { ffi::PyTuple_GetItem(kwnames, i as ffi::Py_ssize_t) };
    let mut given = 0u64;
    match unsafe { route(py, &plan, (0..nkw).map(|i| (name(i), values[i])), &mut given) } {
        Route::Direct => {
            let obj = unsafe { Py::from_owned_ptr_or_err(py, struct_vectorcall(cls, args, nargsf, kwnames)) };
            recorded(py, meta, &plan, obj, given, false)
        }
        Route::WithoutTag => {
            let mut own = None;
            let (names, at) = without_tag(py, &plan, kwnames, nkw, &mut own)?;
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
            let obj = unsafe { Py::from_owned_ptr_or_err(py, struct_vectorcall(cls, vals.as_ptr(), 0, names)) };
            recorded(py, meta, &plan, obj, given, true)
        }
        Route::Lenient => {
            let kw = PyDict::new(py);
            for (i, v) in values.iter().enumerate() {
                unsafe { kw.set_item(Bound::from_borrowed_ptr(py, name(i)), Bound::from_borrowed_ptr(py, *v))? };
            }
            lenient(py, meta, &cls_b, kw)
        }
    }
}

/// A call's keyword names without the tag (borrowed from the plan's memo of call sites,
/// which only grows while the plan lives; else built and owned by `own`), and the tag's
/// position among the keywords (the route found exactly one tag keyword). A call site
/// passes the same constant tuple every time: it is rebuilt once, not per call.
fn without_tag(py: Python<'_>, plan: &Plan, kwnames: *mut ffi::PyObject, nkw: usize, own: &mut Option<Py<PyTuple>>) -> PyResult<(*mut ffi::PyObject, usize)> {
    if let Some((_, names, at)) = plan.without_tag.borrow().iter().find(|(k, _, _)| k.as_ptr() == kwnames) {
        return Ok((names.as_ptr(), *at));
    }
    let Some((tag_field, _, _)) = &plan.tag else { unreachable!("WithoutTag needs a tag") };
    // SAFETY: `kwnames` is the call's tuple of `nkw` str objects, borrowed for the call.
    let all = unsafe { Bound::from_borrowed_ptr(py, kwnames) }.cast_into::<PyTuple>()?;
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

fn finish(py: Python<'_>, r: std::thread::Result<PyResult<Py<PyAny>>>) -> *mut ffi::PyObject {
    let result = r.unwrap_or_else(|_| Err(pyo3::panic::PanicException::new_err("panic in agui_fast Struct construction")));
    match result {
        Ok(obj) => obj.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn meta_call(
    cls: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls tp_call with the GIL held and the arguments borrowed for the
    // duration of the call; nothing derived from the token outlives this frame.
    let py = unsafe { Python::assume_attached() };
    finish(py, std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(py, cls, args, kwargs))))
}

unsafe extern "C" fn meta_vectorcall(
    cls: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: as for tp_call: the GIL is held, the arguments are borrowed for the call.
    let py = unsafe { Python::assume_attached() };
    finish(py, std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| vcall(py, cls, args, nargsf, kwnames))))
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
    unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyType_FromSpecWithBases(spec, bases.as_ptr()))? }
        .cast_into::<PyType>()
        .map_err(Into::into)
}

/// Create (once) the metaclass of the Structs: a subclass of `base` (msgspec's
/// `StructMeta`) whose instances (the Struct classes) construct through this module.
/// `probe` is a plain msgspec Struct class (see `layout::struct_vectorcall`).
#[pyfunction]
fn struct_meta<'py>(
    py: Python<'py>,
    base: &Bound<'py, PyType>,
    probe: &Bound<'py, PyType>,
    plan_of: &Bound<'py, PyAny>,
    lenient: &Bound<'py, PyAny>,
    extras: &Bound<'py, PyType>,
    shared: &Bound<'py, PyType>,
) -> PyResult<Bound<'py, PyType>> {
    let meta = META.get_or_try_init(py, || -> PyResult<Meta> {
        let call = unsafe { ffi::PyType_GetSlot(base.as_ptr() as *mut ffi::PyTypeObject, ffi::Py_tp_call) };
        if call.is_null() {
            return Err(PyTypeError::new_err("struct_meta: the base metaclass is not callable"));
        }
        let base_call: ffi::ternaryfunc = unsafe { std::mem::transmute::<*mut c_void, ffi::ternaryfunc>(call) };
        let basic: usize = base.getattr("__basicsize__")?.extract()?;
        let vc = crate::layout::struct_vectorcall(base, probe).filter(|_| basic % std::mem::size_of::<usize>() == 0);
        let (ty, vectorcall) = match vc.map(|f| (f, new_meta(py, base, Some(basic)))) {
            Some((f, Ok(ty))) => (ty, Some((f, basic))),
            // a layout this interpreter refuses: the tp_call path
            Some((_, Err(_))) | None => (new_meta(py, base, None)?, None),
        };
        // SAFETY: slots read through the API (heap and static types alike since 3.10).
        let new = unsafe { ffi::PyType_GetSlot(extras.as_ptr() as *mut ffi::PyTypeObject, ffi::Py_tp_new) };
        let descr = extras.getattr("__dict__")?.get_item("given")?;
        let set = unsafe { ffi::PyType_GetSlot(descr.get_type().as_ptr() as *mut ffi::PyTypeObject, ffi::Py_tp_descr_set) };
        if new.is_null() || set.is_null() || !shared.is_subclass(extras)? {
            return Err(PyTypeError::new_err("struct_meta: extras must be a dict subclass with a `given` slot, shared a subclass of it"));
        }
        Ok(Meta {
            plan_of: plan_of.clone().unbind(),
            lenient: lenient.clone().unbind(),
            extras: extras.clone().unbind(),
            shared: shared.clone().unbind(),
            extras_new: unsafe { std::mem::transmute::<*mut c_void, ffi::newfunc>(new) },
            no_args: PyTuple::empty(py).unbind(),
            given: (descr.unbind(), unsafe { std::mem::transmute::<*mut c_void, ffi::descrsetfunc>(set) }),
            ty: ty.unbind(),
            base_call,
            vectorcall,
        })
    })?;
    Ok(meta.ty.bind(py).clone())
}

/// `__post_init__` of the Structs with JSON Pointer fields (the patch operations, whose
/// `path`/`from` are `core._base.JsonPointer`): msgspec calls it after each decode,
/// conversion and construction, and each pointer field is checked by the patch engine's
/// RFC 6901 parser (the field's construction check, `Check::JsonPointer`), where a
/// `Meta(pattern=...)` would run a regex per pointer. A `ValueError` from here is
/// msgspec's `ValidationError` at the operation; its message names the field as
/// `- at `$.<wire name>``, which `core._convert.validation_error` joins to that path.
#[pyfunction]
fn check_pointers(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    let cls = obj.get_type();
    let plan = plan_for(py, meta(py)?, &cls)?;
    for (i, check) in plan.checks.iter().enumerate() {
        if !matches!(check, Check::JsonPointer) {
            continue;
        }
        let v = obj.getattr(plan.names[i].bind(py))?;
        // SAFETY: `v` is owned here for the check.
        if !unsafe { passes(py, check, v.as_ptr()) } {
            let wire = cls.getattr(pyo3::intern!(py, "__struct_encode_fields__"))?.get_item(i)?;
            return Err(PyValueError::new_err(format!("Expected `str` matching regex '{JSON_POINTER_PATTERN}' - at `$.{wire}`")));
        }
    }
    Ok(())
}

/// The reference schema's pattern of a JSON Pointer, which `check_pointers`' errors quote
/// (`core._construct.JSON_POINTER_PATTERN`; what the pattern accepts is what the parser does).
const JSON_POINTER_PATTERN: &str = "^(/([^/~]|~[01])*)*$";

/// Whether construction goes through vectorcall on this interpreter (for tests, benches).
#[pyfunction]
fn struct_meta_vectorcall(py: Python<'_>) -> bool {
    META.get(py).is_some_and(|m| m.vectorcall.is_some())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(struct_meta, m)?)?;
    m.add_function(wrap_pyfunction!(struct_meta_vectorcall, m)?)?;
    m.add_function(wrap_pyfunction!(check_pointers, m)?)?;
    m.add_function(wrap_pyfunction!(record_given, m)?)?;
    m.add_function(wrap_pyfunction!(instance_dict, m)?)?;
    m.add_function(wrap_pyfunction!(set_instance_dict, m)?)?;
    Ok(())
}
