//! JSON Patch on Python objects (`apply_patch`) and a Rust-held document (`StateDocument`).
//!
//! `apply_patch` works directly on dicts and lists: converting the document to serde_json
//! would cost O(document size) and defeat structural sharing. The rules (pointer syntax,
//! index rules, equality, error wording) are the core crate's (`agui_core::patch`).
//!
//! - Copy mode: containers along each written path are shallow-copied once per patch (a
//!   "fresh" set remembers which containers are ours), everything else is shared with the
//!   input. Atomicity is free: on failure the new tree is dropped.
//! - In-place mode: mutations are recorded in an undo log and rolled back on failure
//!   (member order included).
//! - Values taken from the patch (`add`/`replace`) and sources of `copy` are deep-copied
//!   (dicts and lists; tuples become lists) so the result never aliases the patch or
//!   itself.

use crate::gil::GilCell;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use agui_core::patch::{self as core, ErrorKind, OpKind, Operation, PatchError};
use pyo3::exceptions::PyAttributeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::errors::make_error;

/// Nesting limit for the recursive walks (deep copy, equality, conversions): guards
/// against cyclic Python structures and stack exhaustion.
const MAX_DEPTH: usize = 512;

fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Invalid => "JsonPatchError",
        ErrorKind::Pointer => "JsonPointerError",
        ErrorKind::TestFailed => "JsonPatchTestFailed",
    }
}

pub fn to_py_err(py: Python<'_>, e: &PatchError) -> PyErr {
    let kwargs = PyDict::new(py);
    let _ = kwargs.set_item("index", e.index);
    let _ = kwargs.set_item("op", e.op.as_deref());
    let _ = kwargs.set_item("path", e.path.as_deref());
    make_error(py, class_name(e.kind), e.to_string(), Some(&kwargs))
}

fn invalid(reason: impl Into<String>) -> PatchError {
    PatchError::new(ErrorKind::Invalid, reason)
}

fn with_index(mut e: PatchError, index: usize, op: Option<&str>, path: Option<&str>) -> PatchError {
    e.index = Some(index);
    e.op = op.map(str::to_string);
    e.path = path.map(str::to_string);
    e
}

/// Either a patch error (becomes one of our exception classes) or a Python exception
/// raised by user code (e.g. an `__eq__`), passed through unchanged.
enum Fail {
    Patch(PatchError),
    Py(PyErr),
}

impl From<PatchError> for Fail {
    fn from(e: PatchError) -> Self {
        Fail::Patch(e)
    }
}
impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Self {
        Fail::Py(e)
    }
}

type R<T> = Result<T, Fail>;

// ---------------------------------------------------------------------------------------
// Reading a patch (list of dicts, or objects with op/path/value/from_ attributes)
// ---------------------------------------------------------------------------------------

/// FxHash-style hasher for pointer-sized keys and short tokens: the default SipHash is
/// a visible share of a one-operation patch.
#[derive(Default)]
struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        let mut w = [0u8; 8];
        let rest = chunks.remainder();
        w[..rest.len()].copy_from_slice(rest);
        self.write_u64(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FastBuild = BuildHasherDefault<FastHasher>;

/// Python strings for pointer tokens, reused across calls: creating and hashing
/// a fresh `str` per token per call was the largest cost of small patches. A small
/// direct-mapped table, so memory stays bounded (admission: see `seen`).
const TOKEN_SLOTS: usize = 1024;
const TOKEN_CACHE_MAX_LEN: usize = 64;

struct TokenCache {
    slots: Vec<Option<(Box<str>, Py<PyString>)>>,
    /// Hash of the last miss per slot: an entry is stored only when its key misses twice
    /// in a row, so one-off keys (ids) cost no allocation and evict nothing useful.
    seen: Vec<u64>,
}

static TOKENS: GilCell<Option<TokenCache>> = GilCell::new(None);

fn token<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    if s.len() > TOKEN_CACHE_MAX_LEN {
        return PyString::new(py, s);
    }
    let mut h = FastHasher::default();
    h.write(s.as_bytes());
    let hash = h.finish();
    let slot = (hash >> 7) as usize % TOKEN_SLOTS;
    // The borrow ends before any call into Python (see `GilCell`).
    let hit = TOKENS.with(py, |cache| {
        let cache = cache.get_or_insert_with(|| TokenCache {
            slots: (0..TOKEN_SLOTS).map(|_| None).collect(),
            seen: vec![0; TOKEN_SLOTS],
        });
        if let Some((k, v)) = &cache.slots[slot] {
            if **k == *s {
                return Ok(v.clone_ref(py));
            }
        }
        let again = cache.seen[slot] == hash;
        cache.seen[slot] = hash;
        Err(again)
    });
    let store = match hit {
        Ok(v) => return v.into_bound(py),
        Err(again) => again,
    };
    // Not interned: on some CPython versions interned strings are immortal, and keys can
    // be unbounded (ids); the cached object keeps its hash after the first lookup anyway.
    let v = PyString::new(py, s);
    if store {
        // The replaced entry is dropped after the borrow ends.
        let entry = (s.into(), v.clone().unbind());
        let old = TOKENS.with(py, |cache| cache.as_mut().and_then(|c| c.slots[slot].replace(entry)));
        drop(old);
    }
    v
}

/// The tokens of a pointer. Most pointers have at most three tokens: those are kept
/// inline (a heap vector per operation was a visible cost of one-operation patches).
enum Toks<'py> {
    Empty,
    One([Bound<'py, PyString>; 1]),
    Two([Bound<'py, PyString>; 2]),
    Three([Bound<'py, PyString>; 3]),
    Heap(Vec<Bound<'py, PyString>>),
}

impl<'py> Toks<'py> {
    fn push(&mut self, t: Bound<'py, PyString>) {
        *self = match std::mem::replace(self, Toks::Empty) {
            Toks::Empty => Toks::One([t]),
            Toks::One([a]) => Toks::Two([a, t]),
            Toks::Two([a, b]) => Toks::Three([a, b, t]),
            Toks::Three([a, b, c]) => Toks::Heap(vec![a, b, c, t]),
            Toks::Heap(mut v) => {
                v.push(t);
                Toks::Heap(v)
            }
        };
    }
}

impl<'py> std::ops::Deref for Toks<'py> {
    type Target = [Bound<'py, PyString>];
    fn deref(&self) -> &Self::Target {
        match self {
            Toks::Empty => &[],
            Toks::One(a) => a,
            Toks::Two(a) => a,
            Toks::Three(a) => a,
            Toks::Heap(v) => v,
        }
    }
}

/// Whole pointers already split, reused across calls (one hash and compare per pointer
/// instead of one per token). Direct-mapped and bounded like the token table.
const POINTER_SLOTS: usize = 512;
const POINTER_CACHE_MAX_LEN: usize = 128;

/// Entries, and per slot the hash of the last miss (stored on the second miss in a row,
/// as for tokens).
type PointerSlots = (Vec<Option<(Box<str>, Box<[Py<PyString>]>)>>, Vec<u64>);

static POINTERS: GilCell<Option<PointerSlots>> = GilCell::new(None);

fn cached_toks<'py>(py: Python<'py>, toks: &[Py<PyString>]) -> Toks<'py> {
    let b = |i: usize| toks[i].bind(py).clone();
    match toks.len() {
        0 => Toks::Empty,
        1 => Toks::One([b(0)]),
        2 => Toks::Two([b(0), b(1)]),
        3 => Toks::Three([b(0), b(1), b(2)]),
        _ => Toks::Heap(toks.iter().map(|t| t.bind(py).clone()).collect()),
    }
}

/// Split an RFC 6901 pointer into (unescaped) key strings.
fn py_tokens<'py>(py: Python<'py>, pointer: &str) -> Result<Toks<'py>, PatchError> {
    if pointer.is_empty() {
        return Ok(Toks::Empty);
    }
    let mut slot = None;
    if pointer.len() <= POINTER_CACHE_MAX_LEN {
        let mut h = FastHasher::default();
        h.write(pointer.as_bytes());
        let hash = h.finish();
        let i = (hash >> 7) as usize % POINTER_SLOTS;
        let hit = POINTERS.with(py, |cache| {
            let (entries, seen) = cache.get_or_insert_with(|| {
                ((0..POINTER_SLOTS).map(|_| None).collect(), vec![0; POINTER_SLOTS])
            });
            if let Some((k, toks)) = &entries[i] {
                if **k == *pointer {
                    return Some(cached_toks(py, toks));
                }
            }
            if seen[i] == hash {
                slot = Some(i);
            }
            seen[i] = hash;
            None
        });
        if let Some(toks) = hit {
            return Ok(toks);
        }
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return core::parse_pointer(pointer).map(|_| Toks::Empty); // yields the precise error
    };
    let mut out = Toks::Empty;
    for raw in rest.split('/') {
        out.push(if raw.contains('~') { token(py, &core::unescape(raw)?) } else { token(py, raw) });
    }
    if let Some(slot) = slot {
        let entry = (pointer.into(), out.iter().map(|t| t.clone().unbind()).collect());
        // The replaced entry is dropped after the borrow ends.
        let old = POINTERS.with(py, |cache| cache.as_mut().and_then(|(entries, _)| entries[slot].replace(entry)));
        drop(old);
    }
    Ok(out)
}

fn tok_str<'a>(t: &'a Bound<'_, PyString>) -> PyResult<std::borrow::Cow<'a, str>> {
    t.to_cow()
}

fn toks_eq(a: &[Bound<'_, PyString>], b: &[Bound<'_, PyString>]) -> PyResult<bool> {
    if a.len() != b.len() {
        return Ok(false);
    }
    for (x, y) in a.iter().zip(b) {
        if !(x.is(y) || x.to_cow()? == y.to_cow()?) {
            return Ok(false);
        }
    }
    Ok(true)
}

fn is_proper_prefix(from: &[Bound<'_, PyString>], path: &[Bound<'_, PyString>]) -> PyResult<bool> {
    Ok(from.len() < path.len() && toks_eq(from, &path[..from.len()])?)
}

fn member<'py>(item: &Bound<'py, PyAny>, dict: Option<&Bound<'py, PyDict>>, name: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Some(d) = dict {
        return d.get_item(name);
    }
    match item.getattr(name) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<PyAttributeError>(item.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

fn string_member<'py>(v: Option<Bound<'py, PyAny>>, name: &str) -> Result<Option<Bound<'py, PyString>>, PatchError> {
    match v {
        None => Ok(None),
        Some(v) => match v.cast_into::<PyString>() {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(invalid(format!("member '{name}' must be a string, not {}", py_type_name(e.into_inner().as_any())))),
        },
    }
}

fn as_str<'a>(s: &'a Bound<'_, PyString>, name: &str) -> Result<std::borrow::Cow<'a, str>, PatchError> {
    s.to_cow().map_err(|_| invalid(format!("member '{name}' is not valid UTF-8")))
}

/// One operation read from Python, pointers split into (cached) key strings.
struct PyOp<'py> {
    kind: OpKind,
    path: Bound<'py, PyString>,
    path_toks: Toks<'py>,
    from_toks: Toks<'py>,
    value: Option<Bound<'py, PyAny>>,
}

/// The members of one operation, validated but not parsed into tokens.
struct RawOp<'py> {
    kind: Option<OpKind>,
    op: Bound<'py, PyString>,
    path: Bound<'py, PyString>,
    from: Option<Bound<'py, PyString>>,
    value: Option<Bound<'py, PyAny>>,
}

fn read_raw<'py>(index: usize, item: &Bound<'py, PyAny>) -> R<RawOp<'py>> {
    let py = item.py();
    let dict = item.cast::<PyDict>().ok();
    if dict.is_none() && (item.is_instance_of::<PyList>() || item.is_instance_of::<PyString>() || item.is_instance_of::<PyTuple>()) {
        return Err(with_index(invalid(format!("operation must be an object, not {}", py_type_name(item))), index, None, None).into());
    }
    let op = string_member(member(item, dict, intern!(py, "op"))?, "op").map_err(|e| with_index(e, index, None, None))?;
    let Some(op) = op else {
        return Err(with_index(invalid("missing member 'op'"), index, None, None).into());
    };
    let op_str = as_str(&op, "op").map_err(|e| with_index(e, index, None, None))?;
    let kind = OpKind::parse(&op_str);
    let path = string_member(member(item, dict, intern!(py, "path"))?, "path").map_err(|e| with_index(e, index, Some(&op_str), None))?;
    let Some(path) = path else {
        return Err(with_index(invalid("missing member 'path'"), index, Some(&op_str), None).into());
    };
    // `from` only matters for move/copy; elsewhere it is an ignored extra member.
    let from = if kind.is_some_and(OpKind::needs_from) {
        let v = match dict {
            Some(d) => d.get_item(intern!(py, "from"))?,
            None => match member(item, None, intern!(py, "from_"))? {
                Some(v) => Some(v),
                None => member(item, None, intern!(py, "from"))?,
            },
        };
        string_member(v, "from").map_err(|e| with_index(e, index, Some(&op_str), path.to_str().ok()))?
    } else {
        None
    };
    let value = if kind.is_some_and(OpKind::needs_value) { member(item, dict, intern!(py, "value"))? } else { None };
    drop(op_str);
    Ok(RawOp { kind, op, path, from, value })
}

fn read_op<'py>(index: usize, item: &Bound<'py, PyAny>) -> R<PyOp<'py>> {
    let py = item.py();
    let raw = read_raw(index, item)?;
    // The op name as text is only needed for error messages.
    let op_name = || raw.op.to_cow().map(|c| c.into_owned()).unwrap_or_default();
    let path = as_str(&raw.path, "path").map_err(|e| with_index(e, index, Some(&op_name()), None))?;
    let at = |e: PatchError| with_index(e, index, Some(&op_name()), Some(&path));
    let Some(kind) = raw.kind else {
        return Err(at(invalid(format!("unknown op {:?}", op_name()))).into());
    };
    let path_toks = py_tokens(py, &path).map_err(at)?;
    let from_toks = match (&raw.from, kind.needs_from()) {
        (Some(f), _) => {
            let f = as_str(f, "from").map_err(at)?;
            py_tokens(py, &f).map_err(|mut e| {
                e.reason = format!("from: {}", e.reason);
                at(e)
            })?
        }
        (None, true) => return Err(at(invalid("missing member 'from'")).into()),
        (None, false) => Toks::Empty,
    };
    if kind.needs_value() && raw.value.is_none() {
        return Err(at(invalid("missing member 'value'")).into());
    }
    drop(path);
    Ok(PyOp { kind, path: raw.path, path_toks, from_toks, value: raw.value })
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
        Ok(it) => Ok(it.collect::<PyResult<Vec<_>>>()?),
        Err(_) => Err(invalid(format!("a JSON Patch must be a list of operations, not {}", py_type_name(patch))).into()),
    }
}


// ---------------------------------------------------------------------------------------
// Python value helpers
// ---------------------------------------------------------------------------------------

/// A value seen as a container: one type-flags read instead of one call per `cast`
/// attempt (under abi3 every type check is a function call into CPython).
enum Container<'a, 'py> {
    Dict(&'a Bound<'py, PyDict>),
    List(&'a Bound<'py, PyList>),
    Other,
}

fn container<'a, 'py>(v: &'a Bound<'py, PyAny>) -> Container<'a, 'py> {
    // SAFETY: `v` is a live object; its type pointer is valid while we hold the GIL.
    let flags = unsafe { pyo3::ffi::PyType_GetFlags(pyo3::ffi::Py_TYPE(v.as_ptr())) };
    if flags & pyo3::ffi::Py_TPFLAGS_DICT_SUBCLASS != 0 {
        // SAFETY: the flag says it is a dict (or subclass).
        Container::Dict(unsafe { v.cast_unchecked::<PyDict>() })
    } else if flags & pyo3::ffi::Py_TPFLAGS_LIST_SUBCLASS != 0 {
        // SAFETY: the flag says it is a list (or subclass).
        Container::List(unsafe { v.cast_unchecked::<PyList>() })
    } else {
        Container::Other
    }
}

fn py_type_name(v: &Bound<'_, PyAny>) -> String {
    if v.is_none() {
        "null".into()
    } else if v.is_instance_of::<PyBool>() {
        "boolean".into()
    } else if v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>() {
        "number".into()
    } else if v.is_instance_of::<PyString>() {
        "string".into()
    } else if v.is_instance_of::<PyList>() {
        "array".into()
    } else if v.is_instance_of::<PyDict>() {
        "object".into()
    } else {
        v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "object".into())
    }
}

fn too_deep() -> PatchError {
    invalid(format!("value nested deeper than {MAX_DEPTH} levels (or cyclic)"))
}

/// Deep-copy dicts and lists (tuples become lists); everything else is shared (immutable
/// JSON scalars, or foreign objects the patch does not look into).
fn deep_copy<'py>(v: &Bound<'py, PyAny>, depth: usize) -> R<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH {
        return Err(too_deep().into());
    }
    let py = v.py();
    match container(v) {
        Container::Dict(d) => {
            let out = PyDict::new(py);
            for (k, x) in d.iter() {
                out.set_item(k, deep_copy(&x, depth + 1)?)?;
            }
            Ok(out.into_any())
        }
        Container::List(l) => {
            let items = l.iter().map(|x| deep_copy(&x, depth + 1)).collect::<R<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any())
        }
        Container::Other => match v.cast::<PyTuple>() {
            Ok(t) => {
                let items = t.iter().map(|x| deep_copy(&x, depth + 1)).collect::<R<Vec<_>>>()?;
                Ok(PyList::new(py, items)?.into_any())
            }
            Err(_) => Ok(v.clone()), // scalars and foreign objects are shared
        },
    }
}

fn is_number(v: &Bound<'_, PyAny>) -> bool {
    (v.is_instance_of::<PyInt>() || v.is_instance_of::<PyFloat>()) && !v.is_instance_of::<PyBool>()
}

/// JSON equality on Python values: a bool is never a number (`True != 1`), numbers compare
/// by value (`1 == 1.0`), dicts ignore order, lists and tuples are arrays.
fn json_eq(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, depth: usize) -> R<bool> {
    if depth > MAX_DEPTH {
        return Err(too_deep().into());
    }
    let a_bool = a.is_instance_of::<PyBool>();
    let b_bool = b.is_instance_of::<PyBool>();
    if a_bool || b_bool {
        return Ok(a_bool && b_bool && a.is_truthy()? == b.is_truthy()?);
    }
    if a.is_none() || b.is_none() {
        return Ok(a.is_none() && b.is_none());
    }
    if is_number(a) || is_number(b) {
        return Ok(is_number(a) && is_number(b) && a.eq(b)?);
    }
    if a.is_instance_of::<PyString>() || b.is_instance_of::<PyString>() {
        return Ok(a.is_instance_of::<PyString>() && b.is_instance_of::<PyString>() && a.eq(b)?);
    }
    let seq = |v: &Bound<'_, PyAny>| v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>();
    if seq(a) || seq(b) {
        if !(seq(a) && seq(b)) || a.len()? != b.len()? {
            return Ok(false);
        }
        for (x, y) in a.try_iter()?.zip(b.try_iter()?) {
            if !json_eq(&x?, &y?, depth + 1)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    match (a.cast::<PyDict>(), b.cast::<PyDict>()) {
        (Ok(x), Ok(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, v) in x.iter() {
                match y.get_item(&k)? {
                    Some(w) if json_eq(&v, &w, depth + 1)? => {}
                    _ => return Ok(false),
                }
            }
            Ok(true)
        }
        (Err(_), Err(_)) => Ok(a.eq(b)?), // foreign objects: their own equality
        _ => Ok(false),
    }
}

// ---------------------------------------------------------------------------------------
// The Python-object applier
// ---------------------------------------------------------------------------------------

/// Where a child sits in its container.
enum Loc<'py> {
    Key(Bound<'py, PyString>),
    Idx(usize),
}

/// Inverse of one in-place mutation (containers are held directly: Python objects keep
/// their identity). `old: None` = the value removed by the entry undone just before.
enum Undo<'py> {
    Root(Bound<'py, PyAny>),
    DictRemoveNew(Bound<'py, PyDict>, Bound<'py, PyString>),
    DictRestore(Bound<'py, PyDict>, Bound<'py, PyString>, Bound<'py, PyAny>),
    DictReinsert(Bound<'py, PyDict>, Bound<'py, PyString>, usize, Option<Bound<'py, PyAny>>),
    ListRemove(Bound<'py, PyList>, usize),
    ListReinsert(Bound<'py, PyList>, usize, Option<Bound<'py, PyAny>>),
    ListRestore(Bound<'py, PyList>, usize, Bound<'py, PyAny>),
}

const FRESH_SCAN_MAX: usize = 32;

struct Engine<'py> {
    root: Bound<'py, PyAny>,
    copy_mode: bool,
    /// Containers created during this apply (copy mode): safe to mutate.
    /// (A vector scanned linearly while small, a hash set beyond: most patches create a
    /// handful of containers.)
    fresh: HashSet<usize, FastBuild>,
    /// The fresh containers themselves: keeps them alive so their addresses cannot be
    /// reused while remembered, and is the small-size form of `fresh`.
    keep: Vec<Bound<'py, PyAny>>,
    undo: Vec<Undo<'py>>,
    /// Whether mutations need undo entries: in place, except during the last operation
    /// of a patch when it is not a `move` (such an operation either fails before
    /// mutating anything or succeeds, so its undo entries could never be used).
    logging: bool,
}

type Tok<'py> = Bound<'py, PyString>;

fn scalar_err(tok: &Tok<'_>, v: &Bound<'_, PyAny>) -> Fail {
    match tok_str(tok) {
        Ok(t) => PatchError::new(ErrorKind::Pointer, core::scalar_step_reason(&t, &py_type_name(v))).into(),
        Err(e) => e.into(),
    }
}

fn missing(tok: &Tok<'_>) -> Fail {
    match tok_str(tok) {
        Ok(t) => PatchError::new(ErrorKind::Pointer, core::missing_member_reason(&t)).into(),
        Err(e) => e.into(),
    }
}

fn existing_index(tok: &Tok<'_>, len: usize) -> R<usize> {
    Ok(core::existing_index(&tok_str(tok)?, len)?)
}

fn insert_index(tok: &Tok<'_>, len: usize) -> R<usize> {
    Ok(core::insert_index(&tok_str(tok)?, len)?)
}

fn from_err(f: Fail) -> Fail {
    match f {
        Fail::Patch(mut e) => {
            e.reason = format!("from: {}", e.reason);
            Fail::Patch(e)
        }
        other => other,
    }
}

impl<'py> Engine<'py> {
    fn new(root: Bound<'py, PyAny>, copy_mode: bool) -> Self {
        Engine { root, copy_mode, fresh: HashSet::default(), keep: Vec::new(), undo: Vec::new(), logging: !copy_mode }
    }

    fn mark_fresh(&mut self, v: &Bound<'py, PyAny>) {
        if self.copy_mode {
            self.keep.push(v.clone());
            if self.keep.len() > FRESH_SCAN_MAX {
                if self.fresh.is_empty() {
                    self.fresh.extend(self.keep.iter().map(|k| k.as_ptr() as usize));
                } else {
                    self.fresh.insert(v.as_ptr() as usize);
                }
            }
        }
    }

    fn is_fresh(&self, v: &Bound<'py, PyAny>) -> bool {
        let p = v.as_ptr();
        if self.keep.len() > FRESH_SCAN_MAX {
            self.fresh.contains(&(p as usize))
        } else {
            self.keep.iter().any(|k| k.as_ptr() == p)
        }
    }

    /// In copy mode, the container itself if we created it, else a shallow copy of it.
    fn writable(&mut self, v: Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, bool)> {
        if !self.copy_mode || self.is_fresh(&v) {
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

    fn child(&self, parent: &Bound<'py, PyAny>, tok: &Tok<'py>) -> R<(Bound<'py, PyAny>, Loc<'py>)> {
        match container(parent) {
            Container::Dict(d) => match d.get_item(tok)? {
                Some(v) => Ok((v, Loc::Key(tok.clone()))),
                None => Err(missing(tok)),
            },
            Container::List(l) => {
                let i = existing_index(tok, l.len())?;
                Ok((l.get_item(i)?, Loc::Idx(i)))
            }
            Container::Other => Err(scalar_err(tok, parent)),
        }
    }

    fn read(&self, toks: &[Tok<'py>]) -> R<Bound<'py, PyAny>> {
        let mut cur = self.root.clone();
        for t in toks {
            cur = match container(&cur) {
                Container::Dict(d) => d.get_item(t)?.ok_or_else(|| missing(t))?,
                Container::List(l) => l.get_item(existing_index(t, l.len())?)?,
                Container::Other => return Err(scalar_err(t, &cur)),
            };
        }
        Ok(cur)
    }

    /// The container at `toks`, made writable (copy mode: path-copied into the new tree).
    fn writable_at(&mut self, toks: &[Tok<'py>]) -> R<Bound<'py, PyAny>> {
        if !self.copy_mode {
            return self.read(toks); // in place: everything is writable
        }
        let (mut cur, _) = self.writable(self.root.clone())?;
        self.root = cur.clone();
        for t in toks {
            let (c, loc) = self.child(&cur, t)?;
            let (w, copied) = self.writable(c)?;
            if copied {
                // `cur` is fresh, so linking the copy into it needs no undo entry.
                match loc {
                    Loc::Key(k) => cur.cast::<PyDict>().map_err(PyErr::from)?.set_item(k, &w)?,
                    Loc::Idx(i) => cur.cast::<PyList>().map_err(PyErr::from)?.set_item(i, &w)?,
                }
            }
            cur = w;
        }
        Ok(cur)
    }

    /// Record an undo entry (built only when logging: building it costs refcounts).
    fn log(&mut self, make: impl FnOnce() -> Undo<'py>) {
        if self.logging {
            self.undo.push(make());
        }
    }

    fn set_root(&mut self, value: Bound<'py, PyAny>) {
        let old = std::mem::replace(&mut self.root, value);
        self.log(|| Undo::Root(old));
    }

    /// `slot` is emptied only once the add cannot fail (see `move`).
    fn add(&mut self, toks: &[Tok<'py>], slot: &mut Option<Bound<'py, PyAny>>) -> R<()> {
        let Some((last, parent_toks)) = toks.split_last() else {
            if let Some(v) = slot.take() {
                self.set_root(v);
            }
            return Ok(());
        };
        let parent = self.writable_at(parent_toks)?;
        match container(&parent) {
            Container::Dict(d) => {
                // The previous value only matters to the undo log.
                let old = if self.logging { d.get_item(last)? } else { None };
                let Some(v) = slot.take() else { return Ok(()) };
                d.set_item(last, v)?;
                self.log(|| match old {
                    Some(old) => Undo::DictRestore(d.clone(), last.clone(), old),
                    None => Undo::DictRemoveNew(d.clone(), last.clone()),
                });
                Ok(())
            }
            Container::List(l) => {
                let i = insert_index(last, l.len())?;
                let Some(v) = slot.take() else { return Ok(()) };
                if i == l.len() {
                    l.append(v)?;
                } else {
                    l.insert(i, v)?;
                }
                self.log(|| Undo::ListRemove(l.clone(), i));
                Ok(())
            }
            Container::Other => Err(scalar_err(last, &parent)),
        }
    }

    fn remove(&mut self, toks: &[Tok<'py>]) -> R<Bound<'py, PyAny>> {
        let Some((last, parent_toks)) = toks.split_last() else {
            return Err(invalid("cannot remove the whole document").into());
        };
        let parent = self.writable_at(parent_toks)?;
        match container(&parent) {
            Container::Dict(d) => {
                let Some(old) = d.get_item(last)? else {
                    return Err(missing(last));
                };
                // In place, remember the member's position so a rollback restores key order.
                let index = if self.logging { dict_position(d, last)? } else { 0 };
                d.del_item(last)?;
                self.log(|| Undo::DictReinsert(d.clone(), last.clone(), index, None));
                Ok(old)
            }
            Container::List(l) => {
                let i = existing_index(last, l.len())?;
                let old = l.get_item(i)?;
                l.del_item(i)?;
                self.log(|| Undo::ListReinsert(l.clone(), i, None));
                Ok(old)
            }
            Container::Other => Err(scalar_err(last, &parent)),
        }
    }

    fn keep_removed(&mut self, v: Bound<'py, PyAny>) {
        if !self.logging {
            return; // nothing was pushed for this removal
        }
        match self.undo.last_mut() {
            Some(Undo::DictReinsert(_, _, _, old)) | Some(Undo::ListReinsert(_, _, old)) => *old = Some(v),
            _ => {}
        }
    }

    fn replace(&mut self, toks: &[Tok<'py>], value: Bound<'py, PyAny>) -> R<()> {
        let Some((last, parent_toks)) = toks.split_last() else {
            self.set_root(value);
            return Ok(());
        };
        let parent = self.writable_at(parent_toks)?;
        match container(&parent) {
            Container::Dict(d) => {
                let Some(old) = d.get_item(last)? else {
                    return Err(missing(last));
                };
                d.set_item(last, value)?;
                self.log(|| Undo::DictRestore(d.clone(), last.clone(), old));
                Ok(())
            }
            Container::List(l) => {
                let i = existing_index(last, l.len())?;
                if self.logging {
                    let old = l.get_item(i)?;
                    l.set_item(i, value)?;
                    self.log(|| Undo::ListRestore(l.clone(), i, old));
                } else {
                    l.set_item(i, value)?;
                }
                Ok(())
            }
            Container::Other => Err(scalar_err(last, &parent)),
        }
    }

    /// A value from the patch, deep-copied; in copy mode its containers are ours.
    fn owned_value(&mut self, v: &Bound<'py, PyAny>) -> R<Bound<'py, PyAny>> {
        let c = deep_copy(v, 0)?;
        if c.is_instance_of::<PyDict>() || c.is_instance_of::<PyList>() {
            self.mark_fresh(&c);
        }
        Ok(c)
    }

    fn apply_one(&mut self, op: &PyOp<'py>) -> R<()> {
        let o = op;
        let value = || op.value.clone().ok_or_else(|| Fail::from(invalid("missing member 'value'")));
        match o.kind {
            OpKind::Add => {
                let v = self.owned_value(&value()?)?;
                self.add(&o.path_toks, &mut Some(v))
            }
            OpKind::Remove => {
                let v = self.remove(&o.path_toks)?;
                self.keep_removed(v);
                Ok(())
            }
            OpKind::Replace => {
                let v = self.owned_value(&value()?)?;
                self.replace(&o.path_toks, v)
            }
            OpKind::Move => {
                if toks_eq(&o.from_toks, &o.path_toks)? {
                    return self.read(&o.from_toks).map(drop).map_err(from_err);
                }
                if is_proper_prefix(&o.from_toks, &o.path_toks)? {
                    return Err(invalid("cannot move a value into one of its own children").into());
                }
                let v = self.remove(&o.from_toks).map_err(from_err)?;
                let mut slot = Some(v);
                let res = self.add(&o.path_toks, &mut slot);
                if let Some(v) = slot {
                    self.keep_removed(v); // the add failed before taking the value
                }
                res
            }
            OpKind::Copy => {
                let src = self.read(&o.from_toks).map_err(from_err)?;
                let v = self.owned_value(&src)?;
                self.add(&o.path_toks, &mut Some(v))
            }
            OpKind::Test => {
                let actual = self.read(&o.path_toks)?;
                if json_eq(&actual, &value()?, 0)? {
                    Ok(())
                } else {
                    Err(PatchError::new(ErrorKind::TestFailed, "test failed: value does not match").into())
                }
            }
        }
    }

    fn rollback(&mut self) {
        let mut carry: Option<Bound<'py, PyAny>> = None;
        // Errors are ignored: each entry re-creates a state that existed, so the calls
        // cannot fail short of a MemoryError, and there is nothing better to do then.
        while let Some(u) = self.undo.pop() {
            match u {
                Undo::Root(old) => carry = Some(std::mem::replace(&mut self.root, old)),
                Undo::DictRemoveNew(d, k) => {
                    carry = d.get_item(&k).ok().flatten();
                    let _ = d.del_item(&k);
                }
                Undo::DictRestore(d, k, old) => {
                    carry = d.get_item(&k).ok().flatten();
                    let _ = d.set_item(&k, old);
                }
                Undo::DictReinsert(d, k, index, old) => {
                    if let Some(v) = old.or(carry.take()) {
                        let _ = dict_insert_at(&d, &k, &v, index);
                    }
                }
                Undo::ListRemove(l, i) => {
                    carry = l.get_item(i).ok();
                    let _ = l.del_item(i);
                }
                Undo::ListReinsert(l, i, old) => {
                    if let Some(v) = old.or(carry.take()) {
                        let _ = l.insert(i, v);
                    }
                }
                Undo::ListRestore(l, i, old) => {
                    carry = l.get_item(i).ok();
                    let _ = l.set_item(i, old);
                }
            }
        }
    }
}

fn dict_position(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>) -> PyResult<usize> {
    for (i, (k, _)) in d.iter().enumerate() {
        if k.is(key) || k.eq(key)? {
            return Ok(i);
        }
    }
    Ok(d.len())
}

/// Re-insert `key` at position `index` (rollback only: O(len), rebuilds the dict).
fn dict_insert_at(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>, v: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
    let items: Vec<_> = d.iter().collect();
    if index >= items.len() {
        return d.set_item(key, v);
    }
    d.clear();
    for (i, (k, x)) in items.into_iter().enumerate() {
        if i == index {
            d.set_item(key, v)?;
        }
        d.set_item(k, x)?;
    }
    Ok(())
}

/// Apply an RFC 6902 patch to a JSON-like Python document (dicts, lists, scalars).
#[pyfunction]
#[pyo3(signature = (doc, patch, *, in_place = false))]
pub fn apply_patch<'py>(doc: Bound<'py, PyAny>, patch: &Bound<'py, PyAny>, in_place: bool) -> PyResult<Bound<'py, PyAny>> {
    let py = doc.py();
    let mut engine = Engine::new(doc, !in_place);
    // Operations are read and applied one by one (no intermediate vectors): a malformed
    // operation is reported when reached, after rolling back the ones before it.
    let step = |engine: &mut Engine<'py>, i: usize, item: &Bound<'py, PyAny>, last: bool| -> R<()> {
        let op = read_op(i, item)?;
        engine.logging = !engine.copy_mode && (!last || op.kind == OpKind::Move);
        engine.apply_one(&op).map_err(|f| match f {
            Fail::Patch(e) => {
                let path = op.path.to_cow().unwrap_or_default();
                Fail::Patch(with_index(e, i, Some(op.kind.name()), Some(&path)))
            }
            other => other,
        })
    };
    let result = if let Ok(list) = patch.cast::<PyList>() {
        list.iter().enumerate().try_for_each(|(i, item)| step(&mut engine, i, &item, i + 1 == list.len()))
    } else {
        patch_items(patch).and_then(|items| {
            let n = items.len();
            items.iter().enumerate().try_for_each(|(i, item)| step(&mut engine, i, item, i + 1 == n))
        })
    };
    match result {
        Ok(()) => Ok(engine.root),
        Err(f) => {
            engine.rollback(); // no-op in copy mode: the input was never touched
            Err(raise(py, f))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Python <-> serde_json (StateDocument)
// ---------------------------------------------------------------------------------------

fn py_to_value(v: &Bound<'_, PyAny>, depth: usize) -> R<Value> {
    if depth > MAX_DEPTH {
        return Err(too_deep().into());
    }
    if v.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = v.cast::<PyInt>() {
        if let Ok(x) = i.extract::<i64>() {
            return Ok(Value::Number(x.into()));
        }
        if let Ok(x) = i.extract::<u64>() {
            return Ok(Value::Number(x.into()));
        }
        // Big integers keep their exact digits (serde_json has arbitrary_precision).
        let text = i.str()?.to_string();
        return serde_json::from_str::<Number>(&text)
            .map(Value::Number)
            .map_err(|_| invalid(format!("integer {text} is not representable")).into());
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        let x = f.value();
        return Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| invalid(format!("{x} is not a JSON number")).into());
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_string()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut m = Map::new();
        for (k, x) in d.iter() {
            let Ok(k) = k.cast::<PyString>() else {
                return Err(invalid(format!("object keys must be strings, not {}", py_type_name(&k))).into());
            };
            m.insert(k.to_str()?.to_string(), py_to_value(&x, depth + 1)?);
        }
        return Ok(Value::Object(m));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut a = Vec::with_capacity(v.len()?);
        for x in v.try_iter()? {
            a.push(py_to_value(&x?, depth + 1)?);
        }
        return Ok(Value::Array(a));
    }
    Err(invalid(format!("{} is not a JSON value", py_type_name(v))).into())
}

fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                let text = n.to_string();
                let int_like = text.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit());
                if int_like {
                    py.get_type::<PyInt>().call1((text,))?
                } else {
                    PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
                }
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a.iter().map(|x| value_to_py(py, x)).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, value_to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

fn core_patch(patch: &Bound<'_, PyAny>) -> R<Vec<Operation>> {
    let items = patch_items(patch)?;
    let mut ops = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let raw = read_raw(i, item)?;
        let op = raw.op.to_cow()?;
        let path = as_str(&raw.path, "path").map_err(|e| with_index(e, i, Some(&op), None))?;
        let from = match &raw.from {
            Some(f) => Some(as_str(f, "from").map_err(|e| with_index(e, i, Some(&op), Some(&path)))?),
            None => None,
        };
        let value = match &raw.value {
            Some(v) => Some(py_to_value(v, 0).map_err(|f| match f {
                Fail::Patch(e) => Fail::Patch(with_index(e, i, Some(&op), Some(&path))),
                other => other,
            })?),
            None => None,
        };
        ops.push(Operation::build(i, &op, &path, from.as_deref(), value)?);
    }
    Ok(ops)
}

/// A patch for the Rust-held document: operations read from Python objects, or JSON text
/// (borrowed from an immutable `str`/`bytes`, parsed with the GIL released).
enum Pending<'a> {
    Ops(Vec<Operation>),
    Json(&'a [u8]),
}

fn pending<'a>(patch: &'a Bound<'_, PyAny>) -> R<Pending<'a>> {
    if let Ok(s) = patch.cast::<PyString>() {
        let text = s.to_str().map_err(|_| invalid("patch text is not valid UTF-8"))?;
        return Ok(Pending::Json(text.as_bytes()));
    }
    if let Ok(b) = patch.cast::<PyBytes>() {
        return Ok(Pending::Json(b.as_bytes()));
    }
    Ok(Pending::Ops(core_patch(patch)?))
}

fn run_pending(doc: &mut Value, p: Pending<'_>) -> Result<(), PatchError> {
    match p {
        Pending::Ops(ops) => core::apply_patch_owned(doc, ops),
        Pending::Json(text) => {
            let v: Value = serde_json::from_slice(text).map_err(|e| invalid(format!("patch is not valid JSON: {e}")))?;
            core::apply_json_patch(doc, &v)
        }
    }
}

fn raise(py: Python<'_>, f: Fail) -> PyErr {
    match f {
        Fail::Patch(e) => to_py_err(py, &e),
        Fail::Py(e) => e,
    }
}

/// A JSON document held in Rust: replays many patches without converting back to Python,
/// materializing the Python object only when asked.
#[pyclass(module = "agui_fast._native", name = "StateDocument")]
pub struct StateDocument {
    doc: Value,
}

#[pymethods]
impl StateDocument {
    #[new]
    #[pyo3(signature = (doc = None))]
    fn new(py: Python<'_>, doc: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let doc = match doc {
            None => core::empty_object(),
            Some(d) => py_to_value(d, 0).map_err(|f| raise(py, f))?,
        };
        Ok(StateDocument { doc })
    }

    /// Apply one patch atomically (the GIL is released while applying).
    fn apply(&mut self, py: Python<'_>, patch: &Bound<'_, PyAny>) -> PyResult<()> {
        let p = pending(patch).map_err(|f| raise(py, f))?;
        let doc = &mut self.doc;
        py.detach(|| run_pending(doc, p)).map_err(|e| to_py_err(py, &e))
    }

    /// Apply patches in order, each atomically. Stops at the first failing one and raises
    /// (earlier patches stay applied; the error has `patch_index`), or with
    /// `skip_errors=True` skips failing patches (the reference reducer's behaviour).
    /// Returns the number of patches applied.
    #[pyo3(signature = (patches, *, skip_errors = false))]
    fn apply_many(&mut self, py: Python<'_>, patches: &Bound<'_, PyAny>, skip_errors: bool) -> PyResult<usize> {
        let items = patch_items(patches).map_err(|f| raise(py, f))?;
        let mut converted = Vec::with_capacity(items.len());
        for p in items.iter() {
            match pending(p) {
                Ok(ops) => converted.push(Ok(ops)),
                Err(Fail::Patch(e)) => {
                    converted.push(Err(e));
                    if !skip_errors {
                        break;
                    }
                }
                Err(Fail::Py(e)) => return Err(e),
            }
        }
        let doc = &mut self.doc;
        let (applied, failure) = py.detach(|| {
            let mut applied = 0usize;
            for (n, ops) in converted.into_iter().enumerate() {
                let res = match ops {
                    Ok(p) => run_pending(doc, p),
                    Err(e) => Err(e),
                };
                match res {
                    Ok(()) => applied += 1,
                    Err(e) if !skip_errors => return (applied, Some((n, e))),
                    Err(_) => {}
                }
            }
            (applied, None)
        });
        if let Some((n, mut e)) = failure {
            e.reason = format!("{} (in patch {n})", e.reason);
            let err = to_py_err(py, &e);
            let _ = err.value(py).setattr("patch_index", n);
            return Err(err);
        }
        Ok(applied)
    }

    /// The document as a new Python object (or the value at `path`, an RFC 6901 pointer).
    #[pyo3(signature = (path = ""))]
    fn to_python<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyAny>> {
        let tokens = core::parse_pointer(path).map_err(|e| to_py_err(py, &e))?;
        let v = core::resolve(&self.doc, &tokens).map_err(|mut e| {
            e.path = Some(path.to_string());
            to_py_err(py, &e)
        })?;
        value_to_py(py, v)
    }

    /// Replace the whole document (e.g. on a STATE_SNAPSHOT).
    fn replace(&mut self, py: Python<'_>, doc: &Bound<'_, PyAny>) -> PyResult<()> {
        self.doc = py_to_value(doc, 0).map_err(|f| raise(py, f))?;
        Ok(())
    }

    fn __repr__(&self) -> String {
        let text = serde_json::to_string(&self.doc).unwrap_or_default();
        if text.len() > 200 {
            let cut = (0..=200).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            format!("StateDocument({}...)", &text[..cut])
        } else {
            format!("StateDocument({text})")
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(apply_patch, m)?)?;
    m.add_class::<StateDocument>()?;
    Ok(())
}
