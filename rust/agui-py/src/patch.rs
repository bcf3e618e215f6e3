//! JSON Patch on Python objects (`apply_patch`) and a document for long replays (`StateDocument`).
//!
//! The engine is the core crate's (`agui_core::patch::engine`); this module implements
//! its `Document` trait for Python dicts and lists, reads operations from Python, and is
//! the PyO3 surface.
//!
//! - `apply_patch` works directly on dicts and lists: converting the document to
//!   serde_json would cost O(document size) and defeat structural sharing. Copy mode:
//!   containers along each written path are shallow-copied once per patch (a "fresh" set
//!   remembers which containers are ours), everything else is shared with the input, and a
//!   failed patch is simply dropped. In place: the engine's undo log holds the containers
//!   themselves, and dict member order is restored in one pass per dict after a rollback.
//! - Values taken from the patch (`add`/`replace`) and sources of `copy` are deep-copied
//!   (dicts and lists; tuples become lists) so the result never aliases the patch or
//!   itself.
//! - `StateDocument` holds Python values it owns, patched in place by the same engine
//!   (owned mode: copy-on-write for what it handed out); values enter by the core's value
//!   rules (`plain_copy`, else the object walker into the core's `Builder` of Python values).

use crate::ffi::gil::GilCell;
use std::borrow::Cow;
use std::collections::HashMap;

use agui_core::limits::{deep as nest_for, nest, DEFAULT_MAX_DEPTH};
use agui_core::copy::same_short;
use agui_core::patch::cache::{FastBuild, Lookup, SlotCache};
use agui_core::patch::engine::{self, At, Budget, Cursor, Document, Fail, Kind, MemberEq, Node, PatchOp, Patcher, Shape, Token, VALUE_COST};
use agui_core::stream::PatchLimits;
use agui_core::patch::build::{Builder, Factory};
use agui_core::patch::owned::Owned;
use agui_core::patch::read::OpSource;
use agui_core::patch::{self as core, invalid, too_deep, Dialect, OpKind, Operation, Options, PatchError};
use pyo3::exceptions::{PyAttributeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;

use crate::errors::{check_max_depth, error_class, kind_error};
use crate::ffi::api::{container, type_flags, Container, DictFill, Typed};
use crate::ffi::walk::{Opts, Walker};

pub fn to_py_err(py: Python<'_>, e: &PatchError) -> PyErr {
    let kwargs = PyDict::new(py);
    let _ = kwargs.set_item("index", e.index);
    let _ = kwargs.set_item("op", e.op.as_deref());
    let _ = kwargs.set_item("path", e.path.as_deref());
    kind_error(py, e.kind.into(), e.to_string(), Some(&kwargs))
}

/// A patch error, or a Python exception raised by user code (e.g. an `__eq__`), passed
/// through unchanged.
type R<T> = Result<T, Fail<PyErr>>;

/// No limit on what is built (values the caller gives the document itself, not a patch).
fn unlimited() -> Budget {
    Budget::new(usize::MAX)
}

fn py_fail(e: PyErr) -> Fail<PyErr> {
    Fail::Doc(e)
}

fn raise(py: Python<'_>, f: Fail<PyErr>) -> PyErr {
    match f {
        Fail::Patch(e) => to_py_err(py, &e),
        Fail::Doc(e) => e,
    }
}

fn options(max_depth: usize, max_bytes: Option<&Bound<'_, PyAny>>) -> PyResult<Options> {
    Ok(Options { dialect: Dialect::Rfc6902, max_depth: check_max_depth(max_depth)?, max_bytes: max_patch_bytes(max_bytes)? })
}

/// A `max_patch_bytes=` argument: a size limit (`crate::args`: beyond the machine's sizes,
/// no limit); None: `agui_core::limits::DEFAULT_MAX_PATCH_BYTES`.
pub(crate) fn max_patch_bytes(v: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    match v.filter(|v| !v.is_none()) {
        None => Ok(agui_core::limits::DEFAULT_MAX_PATCH_BYTES),
        Some(v) => crate::args::size_limit(v, "max_patch_bytes"),
    }
}

/// A pointer token: a (cached) Python string, used directly as a dict key.
#[derive(Clone)]
#[repr(transparent)]
struct Tok<'py>(Bound<'py, PyString>);

impl<'py> Token for Tok<'py> {
    type Key = Bound<'py, PyAny>;
    fn key(&self) -> &Bound<'py, PyAny> {
        self.0.as_any()
    }
    fn text(&self) -> Cow<'_, str> {
        // Tokens are made from Rust strings: always valid UTF-8.
        self.0.to_cow().unwrap_or(Cow::Borrowed(""))
    }
}

// ---------------------------------------------------------------------------------------
// Reading a patch (list of dicts, or objects with op/path/value/from_ attributes)
// ---------------------------------------------------------------------------------------

pub(crate) type CacheCell<V> = GilCell<Option<SlotCache<V>>>;

/// Look `key` up in a GIL-held cache; `read` turns a hit into the caller's form. A cell
/// already borrowed (a re-entrant call) is a miss with nowhere to store.
fn cache_get<V, T>(cell: &CacheCell<V>, py: Python<'_>, n_slots: usize, key: &str, read: impl FnOnce(&V) -> T) -> Lookup<T> {
    cell.with(py, |cache| cache.get_or_insert_with(|| SlotCache::new(n_slots)).get(key, read)).unwrap_or(Lookup::Miss(None))
}

fn cache_put<V>(cell: &CacheCell<V>, py: Python<'_>, slot: usize, key: &str, v: V) {
    let old = cell.with(py, |cache| cache.as_mut().and_then(|c| c.put(slot, key, v))).flatten();
    drop(old); // the replaced entry is dropped after the borrow ends
}

/// Python strings for pointer tokens, reused across calls: creating and hashing
/// a fresh `str` per token per call was the largest cost of small patches.
const TOKEN_SLOTS: usize = 1024;
const TOKEN_CACHE_MAX_LEN: usize = 64;

static TOKENS: CacheCell<Py<PyString>> = GilCell::new(None);

fn token<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    if s.len() > TOKEN_CACHE_MAX_LEN {
        return PyString::new(py, s);
    }
    let store = match cache_get(&TOKENS, py, TOKEN_SLOTS, s, |v| v.bind(py).clone()) {
        Lookup::Hit(v) => return v,
        Lookup::Miss(store) => store,
    };
    // Not interned: on some CPython versions interned strings are immortal, and keys can
    // be unbounded (ids); the cached object keeps its hash after the first lookup anyway.
    let v = PyString::new(py, s);
    if let Some(slot) = store {
        cache_put(&TOKENS, py, slot, s, v.clone().unbind());
    }
    v
}

/// The tokens of a pointer (up to three inline).
type Toks<'py> = core::Tokens<Tok<'py>>;

/// Whole pointers already split into Python key strings, reused across calls (one hash
/// and compare per pointer instead of one per token).
const POINTER_SLOTS: usize = 512;
const POINTER_CACHE_MAX_LEN: usize = 128;

static POINTERS: CacheCell<Box<[Py<PyString>]>> = GilCell::new(None);

/// Split an RFC 6901 pointer (the core's tokenizer) into cached key strings.
fn py_tokens<'py>(py: Python<'py>, pointer: &str) -> Result<Toks<'py>, PatchError> {
    let mut store = None;
    if !pointer.is_empty() && pointer.len() <= POINTER_CACHE_MAX_LEN {
        match cache_get(&POINTERS, py, POINTER_SLOTS, pointer, |toks| Toks::from_fn(toks.len(), |i| Tok(toks[i].bind(py).clone()))) {
            Lookup::Hit(toks) => return Ok(toks),
            Lookup::Miss(slot) => store = slot,
        }
    }
    let out: Toks<'py> = core::split_pointer(pointer, |t| Tok(token(py, t)))?;
    if let Some(slot) = store {
        cache_put(&POINTERS, py, slot, pointer, out.iter().map(|t| t.0.clone().unbind()).collect());
    }
    Ok(out)
}

fn attr<'py>(o: &Bound<'py, PyAny>, name: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match o.getattr(name) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<PyAttributeError>(o.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Where an operation's members come from: a Python dict, an object with attributes
/// (`from_` or `from`), or the members of one already read (`Given`: None when absent;
/// our operation Structs, whose class fixes the op, read through their class's plan by
/// `stream::plain_op`).
enum PyOpSource<'a, 'py> {
    Dict(&'a Bound<'py, PyDict>),
    Object(&'a Bound<'py, PyAny>),
    Given { path: Option<Bound<'py, PyAny>>, from: Option<Bound<'py, PyAny>>, value: Option<Bound<'py, PyAny>> },
}

impl<'py> OpSource for PyOpSource<'_, 'py> {
    type Str = Bound<'py, PyString>;
    type Value = Bound<'py, PyAny>;
    type Error = PyErr;
    fn string(&mut self, name: &'static str) -> PyResult<Option<Result<Bound<'py, PyString>, String>>> {
        let v = match self {
            PyOpSource::Dict(d) => {
                let py = d.py();
                d.get_item(match name {
                    "op" => intern!(py, "op"),
                    "path" => intern!(py, "path"),
                    _ => intern!(py, "from"),
                })?
            }
            PyOpSource::Object(o) => {
                let py = o.py();
                match name {
                    "op" => attr(o, intern!(py, "op"))?,
                    "path" => attr(o, intern!(py, "path"))?,
                    _ => match attr(o, intern!(py, "from_"))? {
                        Some(v) => Some(v),
                        None => attr(o, intern!(py, "from"))?,
                    },
                }
            }
            // (`op` is never asked: the reader is given the kind)
            PyOpSource::Given { path, from, .. } => if name == "path" { path.take() } else { from.take() },
        };
        Ok(v.map(|v| v.cast_into::<PyString>().map_err(|e| py_type_name(e.into_inner().as_any()))))
    }
    fn text<'s>(&self, s: &'s Bound<'py, PyString>) -> Option<Cow<'s, str>> {
        s.to_cow().ok()
    }
    fn value(&mut self) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self {
            PyOpSource::Dict(d) => d.get_item(intern!(d.py(), "value")),
            PyOpSource::Object(o) => attr(o, intern!(o.py(), "value")),
            PyOpSource::Given { value, .. } => Ok(value.take()),
        }
    }
}

fn read_op<'py>(index: usize, item: &Bound<'py, PyAny>) -> R<PyOp<'py>> {
    let mut src = match item.cast::<PyDict>() {
        Ok(d) => PyOpSource::Dict(d),
        Err(_) if item.is_instance_of::<PyList>() || item.is_instance_of::<PyString>() || item.is_instance_of::<PyTuple>() => {
            return Err(invalid(format!("operation must be an object, not {}", py_type_name(item))).located(index, None, None).into());
        }
        Err(_) => PyOpSource::Object(item),
    };
    py_op(item.py(), index, &mut src, None)
}

/// Operation `index` read from `src` by the core's one reader (`known`: its op, when its
/// class fixes it), its pointers split into cached key strings.
fn py_op<'py, S>(py: Python<'py>, index: usize, src: &mut S, known: Option<OpKind>) -> R<PyOp<'py>>
where
    S: OpSource<Str = Bound<'py, PyString>, Value = Bound<'py, PyAny>, Error = PyErr>,
{
    let op = core::read::read_op(index, src, known, |p| py_tokens(py, p))?;
    let from_toks = op.from.unwrap_or_default();
    Ok(PyOp { kind: op.kind, path: op.path_str, path_toks: op.path, from_toks, value: op.value, json: None })
}

/// An operation given to [`StateDocument::try_apply_objects`]: an object to read (a dict),
/// or the members of one already read, its op fixed by its class (`PyOpSource::Given`).
pub(crate) enum GivenOp<'py> {
    Read,
    Members { kind: OpKind, path: Option<Bound<'py, PyAny>>, from: Option<Bound<'py, PyAny>>, value: Option<Bound<'py, PyAny>> },
}

fn patch_items<'py>(patch: &Bound<'py, PyAny>) -> R<Vec<Bound<'py, PyAny>>> {
    if let Ok(l) = patch.cast::<PyList>() {
        return Ok(l.iter().collect());
    }
    if let Ok(t) = patch.cast::<PyTuple>() {
        return Ok(t.iter().collect());
    }
    if patch.is_instance_of::<PyDict>() || patch.is_instance_of::<PyString>() || patch.is_none() {
        return Err(invalid(format!("a JSON Patch must be a list of operations, not {}", py_type_name(patch))).into());
    }
    match patch.try_iter() {
        Ok(it) => it.collect::<PyResult<Vec<_>>>().map_err(py_fail),
        Err(_) => Err(invalid(format!("a JSON Patch must be a list of operations, not {}", py_type_name(patch))).into()),
    }
}



// ---------------------------------------------------------------------------------------
// Python value helpers
// ---------------------------------------------------------------------------------------

/// The JSON kind of a Python value (a tuple is an array; `Other`: not JSON).
fn py_kind(t: &Typed<'_>) -> Kind {
    let (v, flags) = (t.value(), t.flags());
    match t.container() {
        Container::Dict(_) => Kind::Object,
        Container::List(_) => Kind::Array,
        Container::Other if v.is_none() => Kind::Null,
        Container::Other if v.is_instance_of::<PyBool>() => Kind::Bool,
        Container::Other if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() => Kind::Number,
        Container::Other if v.is_instance_of::<PyString>() => Kind::String,
        Container::Other if flags & pyo3::ffi::Py_TPFLAGS_TUPLE_SUBCLASS != 0 => Kind::Array,
        Container::Other => Kind::Other,
    }
}

/// A value's JSON type name for messages; its class name for a tuple or a foreign object.
fn py_type_name(v: &Bound<'_, PyAny>) -> String {
    let t = Typed::new(v.clone());
    let flags = t.flags();
    match py_kind(&t).name() {
        Some(n) if flags & pyo3::ffi::Py_TPFLAGS_TUPLE_SUBCLASS == 0 => n.into(),
        _ => v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into()),
    }
}

/// Deep-copy dicts and lists (tuples become lists) for a value placed at nesting depth
/// `depth`; everything else is shared (immutable JSON scalars, or foreign objects the
/// patch does not look into).
fn deep_copy<'py>(v: &Bound<'py, PyAny>, depth: usize, max_depth: usize, budget: &mut Budget) -> R<Bound<'py, PyAny>> {
    let py = v.py();
    let flags = type_flags(v);
    // A container and a slot per item (scalars are shared, not copied).
    let mut check = |len: usize| {
        if depth >= max_depth {
            return Err(Fail::from(too_deep(max_depth)));
        }
        Ok(budget.charge(VALUE_COST.saturating_add(len.saturating_mul(VALUE_COST)))?)
    };
    match container(v) {
        Container::Dict(d) => {
            check(d.len())?;
            // Copy the dict in C, then replace its containers: no user code runs while the
            // (private) copy is iterated, so nothing can change it meanwhile.
            let out = d.copy().map_err(py_fail)?;
            let inner: Vec<_> = out.iter().filter(|(_, x)| is_copied(x)).collect();
            for (k, x) in inner {
                out.set_item(k, nest(|| deep_copy(&x, depth + 1, max_depth, budget))?).map_err(py_fail)?;
            }
            Ok(out.into_any())
        }
        Container::List(l) => {
            check(l.len())?;
            let mut nested = |x: Bound<'py, PyAny>| if is_copied(&x) { nest(|| deep_copy(&x, depth + 1, max_depth, budget)) } else { Ok(x) };
            let items = l.iter().map(&mut nested).collect::<R<Vec<_>>>()?;
            Ok(PyList::new(py, items).map_err(py_fail)?.into_any())
        }
        Container::Other if flags & pyo3::ffi::Py_TPFLAGS_TUPLE_SUBCLASS != 0 => {
            check(v.len().map_err(py_fail)?)?;
            let mut nested = |x: Bound<'py, PyAny>| if is_copied(&x) { nest(|| deep_copy(&x, depth + 1, max_depth, budget)) } else { Ok(x) };
            let items = v.try_iter().map_err(py_fail)?.map(|x| x.map_err(py_fail).and_then(&mut nested)).collect::<R<Vec<_>>>()?;
            Ok(PyList::new(py, items).map_err(py_fail)?.into_any())
        }
        Container::Other => Ok(v.clone()), // scalars and foreign objects are shared
    }
}

/// The fast path of `py_value` for plain data (`dict` with `str` keys, `list`, `str`,
/// `int` within 64 bits, `float`, `bool`, `None`, exact types): copied as `deep_copy`
/// copies (immutable scalars shared), checking the document's value rules on the way.
/// `None` as soon as anything else is met (a tuple, a subclass, a big int, a string the
/// walker must judge): the walker then converts the whole value, by the same rules.
/// `as_text`: the value stands for its JSON text, so a dict with the key serde_json reads
/// as a number's (`sink::NUMBER_TOKEN`) is left to that read (`None`).
fn plain_copy<'py>(v: &Bound<'py, PyAny>, depth: usize, max_depth: usize, stream: bool, as_text: bool, budget: &mut Budget) -> R<Option<Bound<'py, PyAny>>> {
    let py = v.py();
    // Exact types: pointer compares of the type.
    if v.is_none() || v.is_exact_instance_of::<PyBool>() {
        return Ok(Some(v.clone()));
    }
    if v.is_exact_instance_of::<PyInt>() {
        return Ok(v.extract::<i64>().is_ok().then(|| v.clone()));
    }
    if let Ok(x) = v.cast_exact::<PyFloat>() {
        if !stream {
            core::float_rule(x.value())?;
        }
        return Ok(Some(v.clone()));
    }
    if let Ok(s) = v.cast_exact::<PyString>() {
        return Ok(s.to_str().is_ok().then(|| v.clone()));
    }
    let (dict, list) = (v.cast_exact::<PyDict>().ok(), v.cast_exact::<PyList>().ok());
    if dict.is_none() && list.is_none() {
        return Ok(None);
    }
    core::container_rule(depth, max_depth)?;
    // A container and a slot per item, as `deep_copy` counts (scalars are shared).
    budget.charge(VALUE_COST.saturating_add(v.len().map_err(py_fail)?.saturating_mul(VALUE_COST)))?;
    nest(|| plain_items(py, dict, list, depth, max_depth, stream, as_text, budget))
}

/// The items of a container of `plain_copy`, copied.
#[allow(clippy::too_many_arguments)]
fn plain_items<'py>(
    py: Python<'py>,
    dict: Option<&Bound<'py, PyDict>>,
    list: Option<&Bound<'py, PyList>>,
    depth: usize,
    max_depth: usize,
    stream: bool,
    as_text: bool,
    budget: &mut Budget,
) -> R<Option<Bound<'py, PyAny>>> {
    if let Some(d) = dict {
        let out = PyDict::new(py);
        for (k, x) in d.iter() {
            let key_ok = k.cast_exact::<PyString>().is_ok_and(|k| k.to_str().is_ok_and(|k| !(as_text && k == agui_core::sink::NUMBER_TOKEN)));
            let Some(x) = (if key_ok { plain_copy(&x, depth + 1, max_depth, stream, as_text, budget)? } else { None }) else { return Ok(None) };
            out.set_item(k, x).map_err(py_fail)?;
        }
        return Ok(Some(out.into_any()));
    }
    let Some(l) = list else { return Ok(None) };
    let mut items = Vec::with_capacity(l.len());
    for x in l.iter() {
        let Some(x) = plain_copy(&x, depth + 1, max_depth, stream, as_text, budget)? else { return Ok(None) };
        items.push(x);
    }
    Ok(Some(PyList::new(py, items).map_err(py_fail)?.into_any()))
}

/// Dicts, lists and tuples (the values `deep_copy` copies).
fn is_copied(v: &Bound<'_, PyAny>) -> bool {
    use pyo3::ffi::{Py_TPFLAGS_DICT_SUBCLASS, Py_TPFLAGS_LIST_SUBCLASS, Py_TPFLAGS_TUPLE_SUBCLASS};
    type_flags(v) & (Py_TPFLAGS_DICT_SUBCLASS | Py_TPFLAGS_LIST_SUBCLASS | Py_TPFLAGS_TUPLE_SUBCLASS) != 0
}

// ---------------------------------------------------------------------------------------
// Python values as engine nodes
// ---------------------------------------------------------------------------------------

/// A Python value read by the engine (its type flags read once).
#[derive(Clone)]
struct PyNode<'py>(Typed<'py>);

impl<'py> PyNode<'py> {
    fn new(v: Bound<'py, PyAny>) -> Self {
        PyNode(Typed::new(v))
    }
    fn container(&self) -> Container<'_, 'py> {
        self.0.container()
    }
    fn v(&self) -> &Bound<'py, PyAny> {
        self.0.value()
    }
}

/// The document changed under the engine (user code run by a comparison mutated it).
fn changed() -> Fail<PyErr> {
    invalid("the document changed during the operation").into()
}

/// A Python `int` or `float` (not a `bool`) as the core's number: an integer past `i64`
/// as its decimal text, written into `text`. `None`: not a number, or an integer too long
/// for its text (past `sys.get_int_max_str_digits()`, which no JSON value of this library
/// reaches), which Python's `==` compares: the RFC rule itself; JavaScript reads one as an
/// infinity.
fn py_num<'t>(v: &Bound<'_, PyAny>, text: &'t mut String, dialect: Dialect) -> R<Option<core::Num<'t>>> {
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(Some(core::Num::Float(f.value())));
    }
    if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
        return Ok(None);
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Some(core::Num::Int(i)));
    }
    // (`__index__`: an `int` subclass's value as a plain `int`, whose `str` is its digits)
    match v.call_method0(intern!(v.py(), "__index__")).and_then(|i| i.str()) {
        Ok(digits) => {
            *text = digits.to_string();
            Ok(Some(core::Num::Big(text)))
        }
        Err(_) if dialect == Dialect::FastJsonPatch => {
            let positive = v.gt(0).map_err(py_fail)?;
            Ok(Some(core::Num::Float(if positive { f64::INFINITY } else { f64::NEG_INFINITY })))
        }
        Err(_) => Ok(None),
    }
}

impl<'py> Node for PyNode<'py> {
    type Key = Bound<'py, PyAny>;
    type Error = PyErr;

    fn kind(&self) -> Kind {
        py_kind(&self.0)
    }
    fn type_name(&self) -> Cow<'static, str> {
        Cow::Owned(py_type_name(self.v()))
    }
    fn len(&self) -> usize {
        self.v().len().unwrap_or(0)
    }
    fn member(&self, key: &Bound<'py, PyAny>) -> R<Option<Self>> {
        match self.container() {
            Container::Dict(d) => Ok(d.get_item(key).map_err(py_fail)?.map(PyNode::new)),
            _ => Ok(None),
        }
    }
    fn element(&self, index: usize) -> R<Self> {
        let v = self.v();
        if index >= v.len().map_err(py_fail)? {
            return Err(changed());
        }
        let item = match self.container() {
            Container::List(l) => l.get_item(index),
            _ => v.get_item(index),
        };
        item.map(PyNode::new).map_err(py_fail)
    }
    fn scalar_eq(&self, other: &Self, dialect: Dialect) -> R<bool> {
        let (a, b) = (self.v(), other.v());
        if a.is_none() {
            return Ok(b.is_none());
        }
        if a.is_instance_of::<PyBool>() {
            return Ok(a.is_truthy().map_err(py_fail)? == b.is_truthy().map_err(py_fail)?);
        }
        // Numbers by the core's one rule (`patch::num_eq`: exact in RFC 6902, as
        // JavaScript's doubles in the fast-json-patch dialect); strings compare exactly;
        // foreign objects use their own equality.
        let (mut x, mut y) = (String::new(), String::new());
        if let (Some(x), Some(y)) = (py_num(a, &mut x, dialect)?, py_num(b, &mut y, dialect)?) {
            return Ok(core::num_eq(x, y, dialect));
        }
        a.eq(b).map_err(py_fail)
    }
    fn members_in(&self, other: &Self, eq: &mut MemberEq<'_, Self>) -> R<bool> {
        let (Container::Dict(x), Container::Dict(y)) = (self.container(), other.container()) else {
            return Ok(false);
        };
        // A snapshot of the items: `eq` may run user code that mutates either dict.
        for item in x.items().iter() {
            let (k, v) = item.extract::<(Bound<'py, PyAny>, Bound<'py, PyAny>)>().map_err(py_fail)?;
            let Some(w) = y.get_item(&k).map_err(py_fail)? else { return Ok(false) };
            if !eq(&PyNode::new(v), &PyNode::new(w))? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

// ---------------------------------------------------------------------------------------
// Python dicts and lists as an engine document
// ---------------------------------------------------------------------------------------

/// One operation read from Python, pointers split into (cached) key strings.
struct PyOp<'py> {
    kind: OpKind,
    path: Bound<'py, PyString>,
    path_toks: Toks<'py>,
    from_toks: Toks<'py>,
    value: Option<Bound<'py, PyAny>>,
    /// The `add`/`replace` value of a patch read from JSON text (a `StateDocument`'s):
    /// built into Python values only when the operation applies.
    json: Option<Value>,
}

impl<'py> PatchOp for PyOp<'py> {
    type Token = Tok<'py>;
    fn kind(&self) -> OpKind {
        self.kind
    }
    fn path(&self) -> &[Tok<'py>] {
        &self.path_toks
    }
    fn from(&self) -> &[Tok<'py>] {
        &self.from_toks
    }
    fn path_text(&self) -> Cow<'_, str> {
        self.path.to_cow().unwrap_or_default()
    }
}

type FastMap<V> = HashMap<usize, V, FastBuild>;

/// How a `PyDoc` writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `apply_patch`: containers along each written path are copied once per patch, the
    /// input is never touched, a failed patch is dropped.
    Copy,
    /// `apply_patch(in_place=True)`: everything is written in place, with undo.
    InPlace,
    /// A `StateDocument`: in place (with undo) in the containers it owns, copy-on-write
    /// in the others (shared with what `to_python` handed out: never written again);
    /// values enter by the document's value rules (`PyBuilder`).
    Owned,
}

struct PyDoc<'py> {
    root: Bound<'py, PyAny>,
    mode: Mode,
    /// Containers that are ours to mutate: created during this apply (copy mode), or
    /// owned by a `StateDocument` (from patch to patch).
    owned: Owned<Py<PyAny>>,
    /// In place: the key order of each dict a member was removed from, taken at its first
    /// logged removal, so a rollback restores member order in one pass per dict (finding
    /// a key's position per removal, and re-inserting at a position, are O(n) each).
    orders: FastMap<(Bound<'py, PyDict>, Bound<'py, PyList>)>,
    /// A stream's document (`StateDocument::stream`): values read from the stream's JSON
    /// keep its lone surrogates, and numbers beyond a double (`1e400`) are infinities, as
    /// JavaScript and Python read them (also in the values given as Python objects).
    surrogates: bool,
}

/// A container opened for writing (its type flags read once).
struct PyCursor<'a, 'py> {
    c: Typed<'py>,
    orders: &'a mut FastMap<(Bound<'py, PyDict>, Bound<'py, PyList>)>,
}

impl<'py> PyDoc<'py> {
    fn new(root: Bound<'py, PyAny>, mode: Mode) -> Self {
        PyDoc { root, mode, owned: Owned::default(), orders: FastMap::default(), surrogates: false }
    }

    fn mark_fresh(&mut self, v: &Bound<'py, PyAny>) {
        if self.mode != Mode::InPlace && !matches!(container(v), Container::Other) {
            self.owned.insert(v.as_ptr() as usize, v.clone().unbind());
        }
    }

    fn is_fresh(&self, v: &Bound<'py, PyAny>) -> bool {
        self.owned.contains(v.as_ptr() as usize)
    }

    /// In copy mode, the container itself if we created it, else a shallow copy of it.
    fn writable(&mut self, v: Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, bool)> {
        if self.mode == Mode::InPlace || self.is_fresh(&v) {
            return Ok((v, false));
        }
        let copy = match container(&v) {
            Container::Dict(d) => d.copy()?.into_any(),
            Container::List(l) => l.get_slice(0, l.len()).into_any(),
            Container::Other => return Ok((v, false)), // scalars are never written into
        };
        self.mark_fresh(&copy);
        Ok((copy, true))
    }

    fn cursor(&mut self, c: Bound<'py, PyAny>) -> PyCursor<'_, 'py> {
        PyCursor { c: Typed::new(c), orders: &mut self.orders }
    }

    fn cursor_of(&mut self, n: PyNode<'py>) -> PyCursor<'_, 'py> {
        PyCursor { c: n.0, orders: &mut self.orders }
    }
}

impl<'py> Document for PyDoc<'py> {
    type Token = Tok<'py>;
    type Value = Bound<'py, PyAny>;
    type Error = PyErr;
    type Op = PyOp<'py>;
    type Anchor = (Bound<'py, PyAny>, Tok<'py>);
    type Node<'a>
        = PyNode<'py>
    where
        Self: 'a;
    type Cursor<'a>
        = PyCursor<'a, 'py>
    where
        Self: 'a;

    fn root(&self) -> PyNode<'py> {
        PyNode::new(self.root.clone())
    }

    fn open(&mut self, path: &[Tok<'py>], opts: &Options) -> R<PyCursor<'_, 'py>> {
        if self.mode == Mode::InPlace {
            let c = engine::resolve(self.root(), path, opts.dialect)?;
            return Ok(self.cursor_of(c)); // in place: everything is writable
        }
        // Copy the containers along the path that are not ours into the new tree. (Owned
        // mode: linking a copy, equal to what it replaces, needs no undo entry either; a
        // rollback undoes the writes into the copies themselves.)
        let (mut cur, _) = self.writable(self.root.clone()).map_err(py_fail)?;
        self.root = cur.clone();
        for t in path {
            let child = engine::step(&PyNode::new(cur.clone()), t, opts.dialect)?.0.into_value();
            let (w, copied) = self.writable(child).map_err(py_fail)?;
            if copied {
                // `cur` is fresh, so linking the copy into it needs no undo entry.
                match container(&cur) {
                    Container::Dict(d) => d.set_item(&t.0, &w).map_err(py_fail)?,
                    Container::List(l) => {
                        let i = core::existing_index(&t.text(), l.len(), opts.dialect)?;
                        l.set_item(i, &w).map_err(py_fail)?
                    }
                    Container::Other => {}
                }
            }
            cur = w;
        }
        Ok(self.cursor(cur))
    }

    fn reopen<'a>(&'a mut self, anchor: &Self::Anchor, _ops: &[PyOp<'py>], _opts: &Options) -> Option<(PyCursor<'a, 'py>, Tok<'py>)> {
        // The anchor is the container itself (Python objects keep their identity), so the
        // driver may roll back without keeping its operations.
        let key = anchor.1.clone();
        Some((self.cursor(anchor.0.clone()), key))
    }

    fn set_root(&mut self, v: Bound<'py, PyAny>) -> Bound<'py, PyAny> {
        std::mem::replace(&mut self.root, v)
    }

    fn null(&self) -> Bound<'py, PyAny> {
        self.root.py().None().into_bound(self.root.py())
    }

    fn needs_undo(&self) -> bool {
        self.mode != Mode::Copy
    }

    fn op_value(&mut self, _i: usize, op: &PyOp<'py>, depth: usize, opts: &Options, budget: &mut Budget) -> R<Bound<'py, PyAny>> {
        if self.mode == Mode::Owned {
            // Built new, so never shared; not remembered as owned (a later write into it
            // copies it once) so that the owned set grows only with the paths written.
            return match (&op.json, &op.value) {
                (Some(j), _) => json_to_py(self.root.py(), j, depth, opts.max_depth, self.surrogates, budget),
                // A value given as a Python object is held to JSON's rules even in a stream's
                // document: a non-finite float fails here, so that a stream's event given as
                // objects is declined to its JSON text, which writes it as null.
                (None, Some(v)) => py_value(v, depth, opts.max_depth, false, budget),
                (None, None) => Err(invalid("missing member 'value'").into()),
            };
        }
        let v = op.value.as_ref().ok_or_else(|| invalid("missing member 'value'"))?;
        let c = deep_copy(v, depth, opts.max_depth, budget)?;
        self.mark_fresh(&c);
        Ok(c)
    }

    fn op_node(op: &PyOp<'py>) -> Option<PyNode<'py>> {
        op.value.clone().map(PyNode::new)
    }

    fn copy_of(&mut self, from: &[Tok<'py>], depth: usize, opts: &Options, budget: &mut Budget) -> R<Bound<'py, PyAny>> {
        let src = engine::resolve(self.root(), from, opts.dialect)?;
        let c = deep_copy(src.v(), depth, opts.max_depth, budget)?;
        self.mark_fresh(&c);
        Ok(c)
    }

    fn check_depth(&self, v: &Bound<'py, PyAny>, depth: usize, opts: &Options) -> R<()> {
        if self.mode != Mode::Owned {
            // `apply_patch` documents are never walked unboundedly here: every recursive
            // walk (deep copy, equality, conversion) carries its own depth limit.
            return Ok(());
        }
        // A `StateDocument` never nests deeper than its limit, whatever a `move` does.
        let budget = opts.max_depth.checked_sub(depth).ok_or_else(|| too_deep(opts.max_depth))?;
        if engine::deeper_than(&PyNode::new(v.clone()), budget)? {
            return Err(too_deep(opts.max_depth).into());
        }
        Ok(())
    }

    fn finish_rollback(&mut self) {
        for (_, (d, order)) in self.orders.drain() {
            let _ = restore_order(&d, &order);
        }
    }
}

/// Put a dict's members back in `order`: its keys when the first member was removed, a
/// superset of the keys it had before the patch (the rollback removed the ones the patch
/// added). O(len), once per dict.
fn restore_order(d: &Bound<'_, PyDict>, order: &Bound<'_, PyList>) -> PyResult<()> {
    if d.keys().eq(order)? {
        return Ok(());
    }
    let mut items = Vec::with_capacity(order.len());
    for k in order.iter() {
        if let Some(v) = d.get_item(&k)? {
            items.push((k, v));
        }
    }
    if items.len() != d.len() {
        // Not the member set of before the patch (user code changed the dict meanwhile):
        // leave it as it is rather than lose members.
        return Ok(());
    }
    d.clear();
    for (k, v) in items {
        d.set_item(k, v)?;
    }
    Ok(())
}

impl<'a, 'py> Cursor for PyCursor<'a, 'py> {
    type Token = Tok<'py>;
    type Value = Bound<'py, PyAny>;
    type Error = PyErr;
    type Anchor = (Bound<'py, PyAny>, Tok<'py>);

    fn shape(&self) -> Shape {
        match self.c.container() {
            Container::Dict(_) => Shape::Object,
            Container::List(l) => Shape::Array(l.len()),
            Container::Other => Shape::Scalar,
        }
    }
    fn type_name(&self) -> Cow<'static, str> {
        Cow::Owned(py_type_name(self.c.value()))
    }
    fn anchor(&self, _at: At, key: &Tok<'py>) -> Self::Anchor {
        (self.c.value().clone(), key.clone())
    }
    fn obj_set(&mut self, key: &Tok<'py>, v: Bound<'py, PyAny>, want_old: bool) -> R<Option<Bound<'py, PyAny>>> {
        let Container::Dict(d) = self.c.container() else { return Ok(None) };
        // The previous value only matters to the undo log.
        let old = if want_old { d.get_item(&key.0).map_err(py_fail)? } else { None };
        d.set_item(&key.0, v).map_err(py_fail)?;
        Ok(old)
    }
    fn obj_replace(&mut self, key: &Tok<'py>, v: Bound<'py, PyAny>) -> R<Option<Bound<'py, PyAny>>> {
        let Container::Dict(d) = self.c.container() else { return Ok(None) };
        let Some(old) = d.get_item(&key.0).map_err(py_fail)? else { return Ok(None) };
        d.set_item(&key.0, v).map_err(py_fail)?;
        Ok(Some(old))
    }
    fn obj_remove(&mut self, key: &Tok<'py>, want_pos: bool) -> R<Option<(Bound<'py, PyAny>, usize)>> {
        let Container::Dict(d) = self.c.container() else { return Ok(None) };
        let Some(old) = d.get_item(&key.0).map_err(py_fail)? else { return Ok(None) };
        if want_pos {
            let id = d.as_ptr() as usize;
            self.orders.entry(id).or_insert_with(|| (d.clone(), d.keys()));
        }
        d.del_item(&key.0).map_err(py_fail)?;
        Ok(Some((old, 0)))
    }
    fn obj_reinsert(&mut self, key: &Tok<'py>, _pos: usize, v: Bound<'py, PyAny>) -> R<()> {
        // Appended here; `finish_rollback` restores the order.
        match self.c.container() {
            Container::Dict(d) => d.set_item(&key.0, v).map_err(py_fail),
            _ => Ok(()),
        }
    }
    fn arr_insert(&mut self, index: usize, v: Bound<'py, PyAny>) -> R<()> {
        let Container::List(l) = self.c.container() else { return Ok(()) };
        if index == l.len() { l.append(v) } else { l.insert(index, v) }.map_err(py_fail)
    }
    fn arr_remove(&mut self, index: usize) -> R<Bound<'py, PyAny>> {
        let Container::List(l) = self.c.container() else { return Err(changed()) };
        let old = l.get_item(index).map_err(py_fail)?;
        l.del_item(index).map_err(py_fail)?;
        Ok(old)
    }
    fn arr_replace(&mut self, index: usize, v: Bound<'py, PyAny>, want_old: bool) -> R<Option<Bound<'py, PyAny>>> {
        let Container::List(l) = self.c.container() else { return Ok(None) };
        let old = if want_old { Some(l.get_item(index).map_err(py_fail)?) } else { None };
        l.set_item(index, v).map_err(py_fail)?;
        Ok(old)
    }
}

/// Read and apply a patch's operations one by one (no intermediate vectors): a malformed
/// operation is reported when reached, after rolling back the ones before it. The undo
/// log holds containers, not operations, so each is dropped once applied. Atomic: on
/// error the document is as before (copy mode: the input was never touched).
fn run_patch<'py>(
    patcher: &mut Patcher<PyDoc<'py>>,
    doc: &mut PyDoc<'py>,
    patch: &Bound<'py, PyAny>,
    read: impl Fn(usize, &Bound<'py, PyAny>) -> R<PyOp<'py>>,
) -> R<()> {
    let mut step = |i: usize, item: &Bound<'py, PyAny>, last: bool| -> R<()> {
        let op = read(i, item)?;
        patcher.apply(doc, std::slice::from_ref(&op), 0, i, last)
    };
    // A list is read in place: a vector of its items was a measurable part of a small patch.
    let result = match patch.cast::<PyList>() {
        Ok(list) => list.iter().enumerate().try_for_each(|(i, item)| step(i, &item, i + 1 == list.len())),
        Err(_) => patch_items(patch).and_then(|items| items.iter().enumerate().try_for_each(|(i, item)| step(i, item, i + 1 == items.len()))),
    };
    match result {
        Ok(()) => patcher.commit(doc),
        Err(_) => patcher.rollback(doc, &[]),
    }
    result
}

/// Apply an RFC 6902 patch to a JSON-like Python document (dicts, lists, scalars).
#[pyfunction]
#[pyo3(signature = (doc, patch, *, in_place = false, max_depth = DEFAULT_MAX_DEPTH, max_patch_bytes = None))]
pub fn apply_patch<'py>(
    doc: Bound<'py, PyAny>,
    patch: &Bound<'py, PyAny>,
    in_place: bool,
    #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
    max_patch_bytes: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = doc.py();
    let opts = options(max_depth, max_patch_bytes)?;
    let mut doc = PyDoc::new(doc, if in_place { Mode::InPlace } else { Mode::Copy });
    let mut patcher = Patcher::new(opts);
    match nest_for(max_depth, || run_patch(&mut patcher, &mut doc, patch, read_op)) {
        Ok(()) => Ok(doc.root),
        Err(f) => Err(raise(py, f)),
    }
}

// ---------------------------------------------------------------------------------------
// StateDocument: a document of Python values, owned and copy-on-write
// ---------------------------------------------------------------------------------------

/// Python values for a document (`core::build::Builder` applies the rules of its values).
pub(crate) struct PyValues<'py> {
    py: Python<'py>,
    /// Strings holding the stream's kept lone surrogates (`agui_core::stream::kept_surrogate`)
    /// become Python strings with those surrogates, as the stream's JSON text has them.
    surrogates: bool,
}

impl<'py> PyValues<'py> {
    /// A key as [`Factory::key`] makes it, without the key cache.
    fn fresh_key(&self, k: &str) -> Bound<'py, PyString> {
        match self.surrogates {
            true => stream_text(self.py, k),
            false => PyString::new(self.py, k),
        }
    }
}

pub(crate) type PyBuilder<'py> = Builder<PyValues<'py>>;

fn py_builder(py: Python<'_>, base: usize, max_depth: usize, surrogates: bool) -> PyBuilder<'_> {
    Builder::new(PyValues { py, surrogates }, base, max_depth).with_non_finite(surrogates)
}

impl<'py> Factory for PyValues<'py> {
    type Value = Bound<'py, PyAny>;
    type Object = Bound<'py, PyDict>;
    type Key = Bound<'py, PyString>;
    type Error = PyErr;
    fn null(&mut self) -> Bound<'py, PyAny> {
        self.py.None().into_bound(self.py)
    }
    fn bool(&mut self, v: bool) -> Bound<'py, PyAny> {
        PyBool::new(self.py, v).to_owned().into_any()
    }
    fn int(&mut self, v: i64) -> Bound<'py, PyAny> {
        match v.into_pyobject(self.py) {
            Ok(i) => i.into_any(),
            Err(never) => match never {},
        }
    }
    fn big_int(&mut self, decimal: &str) -> PyResult<Bound<'py, PyAny>> {
        self.py.get_type::<PyInt>().call1((decimal,))
    }
    fn float(&mut self, v: f64) -> Bound<'py, PyAny> {
        PyFloat::new(self.py, v).into_any()
    }
    fn str(&mut self, s: &str) -> PyResult<Bound<'py, PyAny>> {
        if self.surrogates && agui_core::stream::has_kept_surrogate(s.as_bytes()) {
            return with_surrogates(self.py, s);
        }
        Ok(PyString::new(self.py, s).into_any())
    }
    fn key(&mut self, k: &str) -> Bound<'py, PyString> {
        if self.surrogates {
            return key_with_surrogates(self.py, k);
        }
        token(self.py, k) // state keys recur: their strings (and hashes) are reused
    }
    fn array(&mut self, items: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(self.py, items).map(Bound::into_any)
    }
    fn object(&mut self) -> Bound<'py, PyDict> {
        PyDict::new(self.py)
    }
    fn set(&mut self, o: &mut Bound<'py, PyDict>, k: Bound<'py, PyString>, v: Bound<'py, PyAny>) -> PyResult<()> {
        o.set_item(k, v)
    }
    fn object_len(&self, o: &Bound<'py, PyDict>) -> usize {
        o.len()
    }
    fn truncate(&mut self, o: &mut Bound<'py, PyDict>, len: usize) -> PyResult<()> {
        o.keys().iter().skip(len).try_for_each(|k| o.del_item(k))
    }
    fn object_value(&mut self, o: Bound<'py, PyDict>) -> Bound<'py, PyAny> {
        o.into_any()
    }
}

/// A Python value as a document value placed at nesting `base`: the one object walker
/// (`walk.rs`, strict JSON: no pydantic fallback) into a `PyBuilder`. What the walker
/// refuses (non-str keys, other types, lone surrogates) is a `JsonPatchError` too; other
/// exceptions pass.
fn py_value<'py>(v: &Bound<'py, PyAny>, base: usize, max_depth: usize, stream: bool, budget: &mut Budget) -> R<Bound<'py, PyAny>> {
    let py = v.py();
    let levels = max_depth.checked_sub(base).ok_or_else(|| too_deep(max_depth))?;
    let before = *budget;
    match plain_copy(v, base, max_depth, stream, false, budget) {
        Ok(Some(c)) => return Ok(c),
        Ok(None) => *budget = before, // the walker builds it all again
        Err(e) => return Err(e),
    }
    // One level more for the walker: the builder names the limit first.
    let opts = Opts { pydantic: false, lossy_surrogates: false, max_depth: levels as u32 + 1 };
    let mut w = Walker::new(py, py_builder(py, base, max_depth, false).with_non_finite(stream).with_budget(*budget), opts);
    let walked = w.walk(v);
    let builder = std::mem::replace(&mut w.sink, py_builder(py, base, max_depth, false));
    drop(w);
    *budget = builder.budget();
    if builder.failed() {
        return builder.finish(); // the builder names a limit before the walker's guard
    }
    match walked {
        Ok(()) => builder.finish(),
        Err(e) if e.is_instance_of::<PyValueError>(py) => {
            let msg = e.value(py).to_string();
            let refused = error_class(py, "EncodeError").is_ok_and(|c| e.is_instance(py, c.as_any()));
            // Python's own ValueError in a strict walk of plain data: an int beyond
            // `sys.get_int_max_str_digits()`, which cannot be written as decimal text.
            Err(invalid(if refused { msg } else { format!("integer is too large ({msg})") }).into())
        }
        Err(e) => Err(py_fail(e)),
    }
}

/// A key of a stream's document: its kept lone surrogates restored (the cached key
/// string when it has none).
fn key_with_surrogates<'py>(py: Python<'py>, k: &str) -> Bound<'py, PyString> {
    restored(py, k).unwrap_or_else(|| token(py, k))
}

/// A stream's text (a warning's or an error's message, an id, a path) as a Python string,
/// its kept lone surrogates restored: the ids it quotes read as the messages' own.
pub(crate) fn stream_text<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    restored(py, s).unwrap_or_else(|| PyString::new(py, s))
}

/// `s` with its kept lone surrogates restored, if it holds any.
fn restored<'py>(py: Python<'py>, s: &str) -> Option<Bound<'py, PyString>> {
    // (the bytes are valid WTF-8: the decode and the cast hold)
    agui_core::stream::has_kept_surrogate(s.as_bytes())
        .then(|| with_surrogates(py, s).and_then(|s| Ok(s.cast_into::<PyString>()?)).ok())
        .flatten()
}

/// A Python string of `s` with its kept lone surrogates restored. Rare: only split
/// characters.
fn with_surrogates<'py>(py: Python<'py>, s: &str) -> PyResult<Bound<'py, PyAny>> {
    let wtf8 = agui_core::stream::wtf8_with_surrogates(s);
    PyBytes::new(py, &wtf8).call_method1(intern!(py, "decode"), ("utf-8", "surrogatepass"))
}

/// A parsed JSON value (a patch read from text) as a document value placed at `base`;
/// `surrogates`: the value comes from a stream and may hold kept lone surrogates.
fn json_to_py<'py>(py: Python<'py>, v: &Value, base: usize, max_depth: usize, surrogates: bool, budget: &mut Budget) -> R<Bound<'py, PyAny>> {
    if base > max_depth {
        return Err(too_deep(max_depth).into());
    }
    let mut b = py_builder(py, base, max_depth, surrogates).with_budget(*budget);
    agui_core::sink::json_value(v, &mut b);
    *budget = b.budget();
    b.finish()
}

/// An operation read from JSON text, as the engine reads Python operations.
fn text_op<'py>(py: Python<'py>, i: usize, op: Operation, max_depth: usize, max_bytes: usize, surrogates: bool) -> R<PyOp<'py>> {
    let at = |e: PatchError| e.located(i, Some(op.kind.name()), Some(&op.path.text));
    let tokens = |p: &str| match surrogates && agui_core::stream::has_kept_surrogate(p.as_bytes()) {
        // Keys of a stream's document hold its lone surrogates: so do its pointers.
        true => core::split_pointer(p, |t| Tok(key_with_surrogates(py, t))),
        false => py_tokens(py, p),
    };
    let path_toks = tokens(&op.path.text).map_err(at)?;
    let from_toks = match &op.from {
        Some(f) => tokens(&f.text).map_err(at)?,
        None => Toks::Empty,
    };
    let (value, json) = match op.kind {
        OpKind::Test => (Some(json_to_py(py, &op.value, 0, max_depth, surrogates, &mut Budget::new(max_bytes)).map_err(|f| f.map_patch(at))?), None),
        OpKind::Add | OpKind::Replace => (None, Some(op.value)),
        _ => (None, None),
    };
    Ok(PyOp { kind: op.kind, path: PyString::new(py, &op.path.text), path_toks, from_toks, value, json })
}

/// A JSON document for replaying many patches: Python values owned by the document and
/// patched in place by the one engine (no conversion per patch, none at the end), with
/// copy-on-write after `to_python` hands the document out. Threads sharing one take turns
/// (`crate::shared`).
#[pyclass(module = "agui_fast._native", name = "StateDocument")]
pub struct StateDocument {
    inner: crate::shared::Shared<Doc>,
}

/// The document of a [`StateDocument`], and the state of a stream replay of Python
/// objects ([`Doc::stream`]).
pub(crate) struct Doc {
    root: Py<PyAny>,
    opts: Options,
    /// The containers the document may write in place (`PyDoc::owned`): copies it made
    /// of shared ones. Everything else is shared with a value handed out (or built on
    /// entry and not yet written: copying it once on first write is cheap).
    owned: Owned<Py<PyAny>>,
    /// Pointers of patches read from JSON text, from patch to patch.
    pointers: agui_core::patch::cache::PointerCache,
    /// The state of a stream replay (`StateDocument::stream`): values from the stream's
    /// JSON keep its lone surrogates and take infinities (`PyDoc::surrogates`).
    surrogates: bool,
}

impl Doc {
    fn with_root(root: Bound<'_, PyAny>, opts: Options, surrogates: bool) -> Self {
        Doc { root: root.unbind(), opts, owned: Owned::default(), pointers: Default::default(), surrogates }
    }

    /// Run `f` on the document as the engine patches it (owned mode), keeping what it owns.
    fn patched<'py>(&mut self, py: Python<'py>, f: impl FnOnce(&mut PyDoc<'py>) -> R<()>) -> R<()> {
        let mut d = PyDoc::new(self.root.bind(py).clone(), Mode::Owned);
        d.owned = std::mem::take(&mut self.owned);
        d.surrogates = self.surrogates;
        let r = f(&mut d);
        self.root = d.root.unbind();
        self.owned = d.owned;
        r
    }

    /// Hand the document out: nothing is ours to write in place any more.
    fn share(&mut self) {
        self.owned.clear();
    }

    /// Forget owned containers no longer in the document (the set alone holds them).
    fn prune(&mut self, py: Python<'_>) {
        self.owned.prune(|k| crate::ffi::api::refcount(k.bind(py)) > 1);
    }

    /// Apply one patch (operations, or JSON text parsed with the GIL released) atomically.
    fn apply_one<'py>(&mut self, patcher: &mut Patcher<PyDoc<'py>>, patch: &Bound<'py, PyAny>) -> R<()> {
        let py = patch.py();
        let (max_depth, max_bytes) = (self.opts.max_depth, self.opts.max_bytes);
        let text = match patch.cast::<PyString>() {
            Ok(s) => Some(s.to_str().map_err(|_| invalid("patch text is not valid UTF-8"))?.as_bytes()),
            Err(_) => patch.cast::<PyBytes>().ok().map(|b| b.as_bytes()),
        };
        let Some(text) = text else {
            return self.patched(py, |doc| run_patch(patcher, doc, patch, |i, item| state_op(i, read_op(i, item)?, max_depth, max_bytes)));
        };
        let pointers = &mut self.pointers;
        let ops = py.detach(|| core::read_patch_text(text, max_depth, pointers))?;
        let ops = ops.into_iter().enumerate().map(|(i, op)| text_op(py, i, op, max_depth, max_bytes, false)).collect::<R<Vec<_>>>()?;
        self.patched(py, |doc| patcher.run(doc, &ops))
    }
}

/// An operation of a `StateDocument` patch: a `test` value follows the document's value
/// rules, as one to add does (and what it builds is bounded as the patch's values are).
fn state_op<'py>(i: usize, mut op: PyOp<'py>, max_depth: usize, max_bytes: usize) -> R<PyOp<'py>> {
    if let (OpKind::Test, Some(v)) = (op.kind, &op.value) {
        let at = |e: PatchError| e.located(i, Some("test"), Some(&op.path_text()));
        let v = py_value(v, 0, max_depth, false, &mut Budget::new(max_bytes)).map_err(|f| f.map_patch(at))?;
        op.value = Some(v);
    }
    Ok(op)
}

#[pymethods]
impl StateDocument {
    #[new]
    #[pyo3(signature = (doc = None, *, max_depth = DEFAULT_MAX_DEPTH, max_patch_bytes = None))]
    fn new(
        py: Python<'_>,
        doc: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::args::max_depth)] max_depth: usize,
        max_patch_bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let opts = options(max_depth, max_patch_bytes)?;
        let root = match doc {
            None => PyDict::new(py).into_any(),
            Some(d) => nest_for(max_depth, || py_value(d, 0, max_depth, false, &mut unlimited())).map_err(|f| raise(py, f))?,
        };
        Ok(StateDocument { inner: crate::shared::Shared::deep(Doc::with_root(root, opts, false), max_depth) })
    }

    /// Apply one patch atomically.
    fn apply(&self, py: Python<'_>, patch: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.with(py, |d| {
            let mut patcher = Patcher::new(d.opts);
            let r = d.apply_one(&mut patcher, patch);
            d.prune(py);
            r.map_err(|f| raise(py, f))
        })
    }

    /// Apply patches in order, each atomically. Stops at the first failing one and raises
    /// (earlier patches stay applied; the error has `patch_index`), or with
    /// `skip_errors=True` skips failing patches (the reference reducer's behaviour).
    /// Returns the number of patches applied.
    #[pyo3(signature = (patches, *, skip_errors = false))]
    fn apply_many(&self, py: Python<'_>, patches: &Bound<'_, PyAny>, skip_errors: bool) -> PyResult<usize> {
        let items = patch_items(patches).map_err(|f| raise(py, f))?;
        self.inner.with(py, |d| {
            let mut patcher = Patcher::new(d.opts);
            let mut applied = 0;
            let mut failure = None;
            for (n, p) in items.iter().enumerate() {
                match d.apply_one(&mut patcher, p) {
                    Ok(()) => applied += 1,
                    Err(Fail::Patch(_)) if skip_errors => {}
                    Err(f) => {
                        failure = Some((n, f));
                        break;
                    }
                }
            }
            d.prune(py);
            match failure {
                None => Ok(applied),
                Some((n, Fail::Patch(mut e))) => {
                    e.reason = format!("{} (in patch {n})", e.reason);
                    let err = to_py_err(py, &e);
                    let _ = err.value(py).setattr("patch_index", n);
                    Err(err)
                }
                Some((_, Fail::Doc(e))) => Err(e), // raised by user code reading a patch
            }
        })
    }

    /// The document (or the value at `path`, an RFC 6901 pointer), shared: the document
    /// never writes into it again (later patches copy what they change).
    #[pyo3(signature = (path = ""))]
    #[allow(clippy::wrong_self_convention)] // handing out ends the document's ownership
    fn to_python<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyAny>> {
        let toks = py_tokens(py, path).map_err(|e| to_py_err(py, &e))?;
        self.inner.with(py, |d| {
            let node = engine::resolve(PyNode::new(d.root.bind(py).clone()), &toks, Dialect::Rfc6902).map_err(|f| {
                raise(py, f.map_patch(|e| PatchError { path: Some(path.to_string()), ..e }))
            })?;
            d.share();
            Ok(node.0.into_value())
        })
    }

    /// Replace the whole document (e.g. on a STATE_SNAPSHOT).
    fn replace(&self, py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.with(py, |d| {
            d.root = py_value(doc, 0, d.opts.max_depth, false, &mut unlimited()).map_err(|f| raise(py, f))?.unbind();
            d.share();
            Ok(())
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let root = self.inner.with(py, |d| Ok(d.root.clone_ref(py)))?;
        let bytes = crate::encode::dumps(py, root.bind(py), false, agui_core::limits::MAX_DEPTH_CAP as u32 + 1)?;
        let text = String::from_utf8_lossy(bytes.as_bytes());
        Ok(if text.len() > 200 {
            let cut = (0..=200).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            format!("StateDocument({}...)", &text[..cut])
        } else {
            format!("StateDocument({text})")
        })
    }
}

// ---------------------------------------------------------------------------------------
// The state of a stream replay of Python objects (`stream::Replayer`)
// ---------------------------------------------------------------------------------------

impl Doc {
    /// The state of a stream replay: `root` (built by `doc_value` or `stream_value`)
    /// patched in the reference client's dialect (fast-json-patch), as the core's
    /// `EventApplier` patches a JSON state.
    pub(crate) fn stream(root: Bound<'_, PyAny>, limits: &PatchLimits) -> Self {
        Doc::with_root(root, limits.options(limits.max_depth), true)
    }

    /// The whole document replaced by `root`, a value made for it alone (a `plain_value`
    /// copy), as a snapshot read from JSON replaces it.
    pub(crate) fn set_root(&mut self, root: Bound<'_, PyAny>) {
        self.root = root.unbind();
        self.share();
    }

    /// The document, shared (`to_python`), or a deep copy of it (`shared=false`: the
    /// caller may mutate it).
    pub(crate) fn value<'py>(&mut self, py: Python<'py>, shared: bool) -> PyResult<Bound<'py, PyAny>> {
        let root = self.root.bind(py).clone();
        if shared {
            self.share();
            return Ok(root);
        }
        deep_copy(&root, 0, agui_core::limits::MAX_DEPTH_CAP, &mut unlimited()).map_err(|f| raise(py, f))
    }

    /// Apply a `STATE_DELTA`'s operations given as Python objects, only if each passes
    /// `accept` and everything follows the document's rules with values nested at most
    /// `max_depth` levels (the event's own limit: see `stream::direct_delta`). False on
    /// any failure, the document unchanged: the caller then takes the general path,
    /// which decides the outcome (the reducer's warning, or an error) as it always did.
    /// `accept(op)`: None refuses it, else how to read it ([`GivenOp`]).
    pub(crate) fn try_apply_objects<'py>(
        &mut self,
        ops: &Bound<'py, PyList>,
        max_depth: usize,
        limits: &mut PatchLimits,
        accept: impl Fn(&Bound<'py, PyAny>) -> Option<GivenOp<'py>>,
    ) -> bool {
        let py = ops.py();
        let max_bytes = limits.max_bytes;
        let mut patcher = limits.patcher(max_depth);
        let r = self.patched(py, |doc| {
            run_patch(&mut patcher, doc, ops.as_any(), |i, item| {
                let op = match accept(item) {
                    None => return Err(invalid("not taken directly").into()),
                    Some(GivenOp::Read) => read_op(i, item)?,
                    Some(GivenOp::Members { kind, path, from, value }) => py_op(py, i, &mut PyOpSource::Given { path, from, value }, Some(kind))?,
                };
                state_op(i, op, max_depth, max_bytes)
            })
        });
        self.prune(py);
        // A declined patch is applied again through JSON, which spends the allowance then.
        if r.is_ok() {
            limits.copies = patcher.copy_allowance();
        }
        r.is_ok()
    }
}

/// A Python value as a document value, or None when the document's rules refuse it (the
/// caller then reads it as JSON, as every other value of a stream).
pub(crate) fn doc_value<'py>(v: &Bound<'py, PyAny>, max_depth: usize) -> Option<Bound<'py, PyAny>> {
    py_value(v, 0, max_depth, true, &mut unlimited()).ok()
}

/// A value given as plain Python data (exact `dict` with `str` keys, `list`, `str`, `int`
/// within 64 bits, finite `float`, `bool`, `None`) copied as a document value nesting at
/// most `max_depth` levels: the value its JSON text would read back as. None: anything
/// else (the caller reads it as JSON), a dict its JSON text would read as a number
/// included.
pub(crate) fn plain_value<'py>(v: &Bound<'py, PyAny>, max_depth: usize) -> Option<Bound<'py, PyAny>> {
    // (`stream: false`: a non-finite float, which JSON writes as null, refused)
    plain_copy(v, 0, max_depth, false, true, &mut unlimited()).ok().flatten()
}

/// A string read from a stream as [`stream_value`] makes it (its kept lone surrogates
/// restored).
pub(crate) fn stream_str<'py>(py: Python<'py>, s: &str) -> PyResult<Bound<'py, PyAny>> {
    PyValues { py, surrogates: true }.str(s)
}

/// A JSON value read from a stream as a document value (its kept lone surrogates restored).
pub(crate) fn stream_value<'py>(py: Python<'py>, v: &Value, max_depth: usize) -> PyResult<Bound<'py, PyAny>> {
    json_to_py(py, v, 0, max_depth, true, &mut unlimited()).map_err(|f| raise(py, f))
}

/// What `walk` gives a sink (a replay's messages, each walked as its JSON value) as a
/// document value: built as [`stream_value`] builds a value.
pub(crate) fn stream_walked<'py>(py: Python<'py>, max_depth: usize, walk: impl FnOnce(&mut PyBuilder<'py>)) -> PyResult<Bound<'py, PyAny>> {
    let mut b = py_builder(py, 0, max_depth, true).with_budget(unlimited());
    walk(&mut b);
    b.finish().map_err(|f| raise(py, f))
}

/// A replay's final state (the core's tree) as a document value (its kept lone
/// surrogates restored): the values and rules of [`stream_value`]'s builder, made straight
/// from the tree (each container built whole, no builder's stack between them).
pub(crate) fn stream_tree<'py>(py: Python<'py>, v: &agui_core::patch::tree::Tree, max_depth: usize) -> PyResult<Bound<'py, PyAny>> {
    let lay = crate::ffi::layout::get(py);
    let mut t = TreeValues {
        f: PyValues { py, surrogates: true },
        lay,
        keys: Default::default(),
        strs: Default::default(),
        items: Default::default(),
        forms: Default::default(),
        max_depth,
    };
    t.value(v, 0)
}

/// Member positions whose last key and short string are remembered.
const SHAPE: usize = 16;
/// Strings up to this long are compared with the last one made at their position.
const SHAPE_STR_MAX: usize = 32;

/// Depths below this remember the keys of the last object made there ([`Form`]).
const FORM_DEPTHS: usize = 8;

/// The keys of the last object made at a depth and, once a second object with the same
/// keys (in the same order) follows it, a dict of those keys (all None) whose copies the
/// next ones fill in place ([`DictFill`]): a state's many records share their keys.
#[derive(Default)]
struct Form<'t, 'py> {
    len: usize,
    keys: [&'t str; SHAPE],
    dict: Option<Bound<'py, PyDict>>,
}

/// Python values made from a tree. A state's many items share their keys and often their
/// values (a status, tags): the key and the short string last made at each member position
/// (and at each position of a list) are reused when the next one has the same text there.
struct TreeValues<'t, 'py> {
    f: PyValues<'py>,
    lay: crate::ffi::layout::Layout,
    keys: [Option<(&'t str, Bound<'py, PyString>)>; SHAPE],
    strs: [Option<(&'t str, Bound<'py, PyAny>)>; SHAPE],
    items: [Option<(&'t str, Bound<'py, PyAny>)>; SHAPE],
    forms: [Form<'t, 'py>; FORM_DEPTHS],
    max_depth: usize,
}

impl<'t, 'py> TreeValues<'t, 'py> {
    /// One value (recursive: a plain loop and a small error type keep each level's stack
    /// frame as small as the walk's).
    fn value(&mut self, v: &'t agui_core::patch::tree::Tree, depth: usize) -> PyResult<Bound<'py, PyAny>> {
        use agui_core::patch::tree::Tree;
        let py = self.f.py;
        let rule = |r: Result<(), PatchError>| r.map_err(|e| to_py_err(py, &e));
        Ok(match v {
            Tree::Null => self.f.null(),
            Tree::Bool(b) => self.f.bool(*b),
            Tree::Int(i) => self.f.int(*i),
            Tree::BigInt(d) => {
                rule(core::int_rule(d))?;
                self.f.big_int(d)?
            }
            Tree::Float(x) => self.f.float(*x),
            Tree::Str(s) => self.f.str(s)?,
            Tree::Array(a) => nest(|| {
                rule(core::container_rule(depth, self.max_depth))?;
                let mut items = Vec::with_capacity(a.len());
                for (i, e) in a.iter().enumerate() {
                    items.push(self.member(i, e, depth, true)?);
                }
                self.f.array(items)
            })?,
            Tree::Object(m) => nest(|| {
                rule(core::container_rule(depth, self.max_depth))?;
                if let Some(mut o) = self.form(m, depth)? {
                    for (i, (_, e)) in m.iter().enumerate() {
                        o.put(i, self.member(i, e, depth, false)?)?;
                    }
                    return Ok(o.finish().into_any());
                }
                // (a map too large for the key cache would only evict it)
                let cached = m.len() <= TOKEN_SLOTS;
                let o = PyDict::new(py);
                for (i, (k, e)) in m.iter().enumerate() {
                    let key = if cached { self.key(i, k) } else { self.f.fresh_key(k) };
                    let e = self.member(i, e, depth, false)?;
                    crate::ffi::api::set_item_given(self.lay, &o, key, e)?;
                }
                Ok::<_, PyErr>(o.into_any())
            })?,
        })
    }

    /// The value at position `i` of a container at `depth` (`in_list`: a list's item, else
    /// an object's member): a short string is the one last made at that position when
    /// their texts are equal.
    #[inline(always)]
    fn member(&mut self, i: usize, e: &'t agui_core::patch::tree::Tree, depth: usize, in_list: bool) -> PyResult<Bound<'py, PyAny>> {
        match e {
            agui_core::patch::tree::Tree::Str(s) if i < SHAPE && s.len() <= SHAPE_STR_MAX => {
                let memo = if in_list { &mut self.items[i] } else { &mut self.strs[i] };
                Self::short_str(&mut self.f, memo, s)
            }
            e => self.value(e, depth + 1),
        }
    }

    /// A dict of `m`'s keys to fill when the last two objects made at `depth` had the same
    /// keys as `m`; else None (and `m`'s keys remembered for the next one).
    fn form(&mut self, m: &'t agui_core::patch::tree::TreeMap, depth: usize) -> PyResult<Option<DictFill<'py>>> {
        let n = m.len();
        let Some(form) = self.forms.get_mut(depth) else { return Ok(None) };
        if !(2..=SHAPE).contains(&n) || !self.lay.dicts() {
            return Ok(None);
        }
        if form.len != n || !m.iter().zip(&form.keys).all(|((k, _), last)| same_short(k.as_bytes(), last.as_bytes())) {
            form.len = n;
            form.dict = None;
            for (last, (k, _)) in form.keys.iter_mut().zip(m.iter()) {
                *last = k;
            }
            return Ok(None);
        }
        if let Some(d) = &form.dict {
            return DictFill::copy(self.lay, d, n);
        }
        let py = self.f.py;
        let d = PyDict::new(py);
        for (i, (k, _)) in m.iter().enumerate() {
            let key = self.key(i, k);
            crate::ffi::api::set_item_given(self.lay, &d, key, py.None().into_bound(py))?;
        }
        let fill = DictFill::copy(self.lay, &d, n)?;
        self.forms[depth].dict = Some(d);
        Ok(fill)
    }

    fn key(&mut self, i: usize, k: &'t str) -> Bound<'py, PyString> {
        let Some(slot) = self.keys.get_mut(i) else { return self.f.key(k) };
        match slot {
            Some((last, made)) if same_short(last.as_bytes(), k.as_bytes()) => made.clone(),
            _ => slot.insert((k, self.f.key(k))).1.clone(),
        }
    }

    fn short_str(f: &mut PyValues<'py>, slot: &mut Option<(&'t str, Bound<'py, PyAny>)>, s: &'t str) -> PyResult<Bound<'py, PyAny>> {
        Ok(match slot {
            Some((last, made)) if same_short(last.as_bytes(), s.as_bytes()) => made.clone(),
            _ => slot.insert((s, f.str(s)?)).1.clone(),
        })
    }
}

impl std::fmt::Debug for Doc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateDocument")
    }
}

/// The reducer's state held as Python values: `STATE_SNAPSHOT` / `STATE_DELTA` events
/// read from JSON (the general path) are applied here by the one engine.
impl agui_core::stream::State for Doc {
    fn set(&mut self, snapshot: &Value) -> Result<(), String> {
        Python::attach(|py| {
            let v = json_to_py(py, snapshot, 0, agui_core::limits::MAX_DEPTH_CAP, true, &mut unlimited()).map_err(|f| fail_text(py, f))?;
            self.root = v.unbind();
            self.share();
            Ok(())
        })
    }

    /// The Python values built straight from the text (the same builder and rules as
    /// [`set`](Self::set); its strings hold no kept surrogate to restore); anything the
    /// builder refuses is declined, for the event's parse to decide.
    fn set_text(&mut self, text: &str, max_depth: usize) -> bool {
        Python::attach(|py| {
            let mut b = py_builder(py, 0, agui_core::limits::MAX_DEPTH_CAP, false).with_non_finite(true);
            if agui_core::sink::json_text(text, max_depth, &mut b).is_err() {
                return false;
            }
            let Ok(v) = b.finish() else { return false };
            self.root = v.unbind();
            self.share();
            true
        })
    }

    fn patch(&mut self, ops: Vec<Operation>, limits: &mut PatchLimits) -> Result<(), PatchError> {
        Python::attach(|py| {
            let max_depth = limits.max_depth;
            let ops = ops.into_iter().enumerate().map(|(i, op)| text_op(py, i, op, max_depth, limits.max_bytes, true)).collect::<R<Vec<_>>>();
            let mut patcher = limits.patcher(max_depth);
            let r = ops.and_then(|ops| self.patched(py, |doc| patcher.run(doc, &ops)));
            limits.copies = patcher.copy_allowance();
            self.prune(py);
            r.map_err(|f| match f {
                Fail::Patch(e) => e,
                Fail::Doc(e) => invalid(e.to_string()),
            })
        })
    }
}

fn fail_text(py: Python<'_>, f: Fail<PyErr>) -> String {
    match f {
        Fail::Patch(e) => e.to_string(),
        Fail::Doc(e) => e.value(py).to_string(),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(apply_patch, m)?)?;
    m.add_class::<StateDocument>()?;
    Ok(())
}
