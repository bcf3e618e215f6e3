//! Python event objects → the protobuf encoder's JSON tree (`agui_core::proto::node::Node`),
//! without JSON text in between.
//!
//! The protobuf encoder maps camelCase JSON to protobuf (`agui_core::proto::encode`, the one
//! place of the mapping rules). It used to get that JSON as text from the JSON writer
//! (`encode::dumps`) and parse it back; here the same tree is built by walking the objects
//! with the writer's per-class plans (`encode::kind_of`), so both routes see the same
//! members in the same order under the same rules (omission, `UNSET`, extras, enums,
//! subclasses, pydantic models). Strings are borrowed from the `str` objects (their cached
//! UTF-8), which are kept alive by strong references until the tree is dropped.
//!
//! The tree must equal what parsing `dumps(obj)` gives:
//! * numbers: ints as `Num::I` (beyond i64: their decimal text), floats as `Num::F`
//!   (`Num::text` spells them like the writer), NaN/±inf as `null`;
//! * duplicated keys (extras shadowing a field, enum keys equal to a str key): first
//!   position, last value, as `JSON.parse` and `node::parse` do.
//!
//! Anything this walk does not reproduce exactly makes it give up (`None`): unpaired
//! surrogates, errors of any kind, nesting deeper than [`MAX_NESTING`], escaped wire keys.
//! The caller then takes the JSON-text route, which yields the very same bytes or error.

use std::borrow::Cow;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::rc::Rc;

use agui_core::proto::node::{Node, Num, Obj};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::encode::{is_absent, kind_of, EnumInfo, Field, Getter, Kind, Plan, PlanKind};

/// Nesting (arrays, objects, enum values) beyond which the walk gives up. Well below the
/// JSON route's limits (the parser's 128, the writer's 1024), whose errors it then reports.
pub const MAX_NESTING: u32 = 100;

/// The walk cannot reproduce the JSON route for this object: take that route.
pub struct GiveUp;

type R<T> = Result<T, GiveUp>;

type Entry<'a> = (Cow<'a, str>, Node<'a>);

/// Build the tree of `obj` and hand it to `f`. `None`: take the JSON-text route.
pub fn with_node<'py, T>(py: Python<'py>, obj: &Bound<'py, PyAny>, f: impl for<'a> FnOnce(&Node<'a>) -> T) -> Option<T> {
    let mut b = Builder::new(py);
    b.with_node(obj, f)
}

/// The tree builder. Reusable across objects (`with_node` clears it after each one).
pub struct Builder<'py> {
    py: Python<'py>,
    depth: u32,
    /// Strong references to the `str` objects whose UTF-8 the tree borrows.
    keep: Vec<*mut ffi::PyObject>,
    /// Plans and enum tables whose bytes the tree borrows (wire keys, enum values).
    kinds: Vec<Kind>,
}

/// The vectors of a finished builder (empty, capacity kept), for the next one: most calls
/// then allocate nothing but the tree itself.
struct Spare {
    keep: Vec<*mut ffi::PyObject>,
    kinds: Vec<Kind>,
}

thread_local! {
    static SPARE: std::cell::Cell<Option<Spare>> = const { std::cell::Cell::new(None) };
}

impl Drop for Builder<'_> {
    fn drop(&mut self) {
        self.release();
        let spare = Spare { keep: std::mem::take(&mut self.keep), kinds: std::mem::take(&mut self.kinds) };
        if spare.keep.capacity() <= 4096 && spare.kinds.capacity() <= 4096 {
            SPARE.with(|c| c.set(Some(spare)));
        }
    }
}

impl<'py> Builder<'py> {
    pub fn new(py: Python<'py>) -> Self {
        // A re-entrant call (Python code run by the walk) simply finds no spare.
        match SPARE.with(|c| c.take()) {
            Some(Spare { keep, kinds }) => Builder { py, depth: 0, keep, kinds },
            None => Builder { py, depth: 0, keep: Vec::with_capacity(16), kinds: Vec::with_capacity(4) },
        }
    }

    fn release(&mut self) {
        for p in self.keep.drain(..) {
            unsafe { ffi::Py_DECREF(p) };
        }
        self.kinds.clear();
    }

    /// Build the tree of `obj`, run `f` on it, drop the tree, then the references it borrowed.
    pub fn with_node<T>(&mut self, obj: &Bound<'py, PyAny>, f: impl for<'a> FnOnce(&Node<'a>) -> T) -> Option<T> {
        self.depth = 0;
        let out = match self.value(obj.as_ptr()) {
            Ok(node) => Some(f(&node)),
            Err(GiveUp) => {
                // The JSON route raises whatever error there is again, with its own message.
                unsafe { ffi::PyErr_Clear() };
                None
            }
        };
        self.release();
        out
    }

    #[inline]
    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(GiveUp);
        }
        Ok(())
    }

    /// The UTF-8 of a str object (exact or subclass), kept alive until `release`.
    #[inline]
    fn pystr(&mut self, ptr: *mut ffi::PyObject) -> R<&'py str> {
        let mut size: ffi::Py_ssize_t = 0;
        let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(ptr, &mut size) };
        if data.is_null() {
            return Err(GiveUp); // unpaired surrogate: the JSON route has a fallback for it
        }
        unsafe { ffi::Py_INCREF(ptr) };
        self.keep.push(ptr);
        // SAFETY: the UTF-8 buffer is cached on the str object, alive while `keep` holds it,
        // and every tree is dropped before `release`.
        Ok(unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(data as *const u8, size as usize)) })
    }

    fn int(&mut self, ptr: *mut ffi::PyObject) -> R<Node<'py>> {
        let mut overflow: c_int = 0;
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(ptr, &mut overflow) };
        if overflow == 0 {
            if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
                return Err(GiveUp);
            }
            return Ok(Node::Number(Num::I(v)));
        }
        // Beyond i64: the exact decimal, as the writer prints it (int's own repr).
        let py = self.py;
        let b = unsafe { Bound::from_borrowed_ptr(py, ptr) };
        let text = if unsafe { ffi::Py_TYPE(ptr) } == &raw mut ffi::PyLong_Type {
            b.repr()
        } else {
            py.get_type::<pyo3::types::PyInt>().call1((b,)).and_then(|i| i.repr())
        };
        let text = text.map_err(|_| GiveUp)?;
        Ok(Node::Number(Num::Text(Cow::Owned(text.to_str().map_err(|_| GiveUp)?.to_owned()))))
    }

    #[inline]
    fn float(&mut self, ptr: *mut ffi::PyObject) -> R<Node<'py>> {
        let v = unsafe { ffi::PyFloat_AsDouble(ptr) };
        if v == -1.0 && unsafe { !ffi::PyErr_Occurred().is_null() } {
            return Err(GiveUp);
        }
        Ok(if v.is_finite() { Node::Number(Num::F(v)) } else { Node::Null })
    }

    /// Any value; `ptr` is kept alive by the caller.
    fn value(&mut self, ptr: *mut ffi::PyObject) -> R<Node<'py>> {
        unsafe {
            let tp = ffi::Py_TYPE(ptr);
            if tp == &raw mut ffi::PyUnicode_Type {
                return Ok(Node::String(Cow::Borrowed(self.pystr(ptr)?)));
            }
            if ptr == ffi::Py_None() {
                return Ok(Node::Null);
            }
            if tp == &raw mut ffi::PyBool_Type {
                return Ok(Node::Bool(ptr == ffi::Py_True()));
            }
            if tp == &raw mut ffi::PyLong_Type {
                return self.int(ptr);
            }
            if tp == &raw mut ffi::PyFloat_Type {
                return self.float(ptr);
            }
            // Containers and objects may come as borrowed references (from a dict or a
            // list) and walking them can run Python code: hold them meanwhile.
            let _hold = Bound::from_borrowed_ptr(self.py, ptr);
            if tp == &raw mut ffi::PyDict_Type {
                return self.dict(ptr);
            }
            if tp == &raw mut ffi::PyList_Type {
                return self.list(ptr);
            }
            if tp == &raw mut ffi::PyTuple_Type {
                return self.tuple(ptr);
            }
            self.other(ptr, tp)
        }
    }

    fn other(&mut self, ptr: *mut ffi::PyObject, tp: *mut ffi::PyTypeObject) -> R<Node<'py>> {
        match kind_of(self.py, tp).map_err(|_| GiveUp)? {
            Kind::Plan(plan) => {
                let p: *const Plan = Rc::as_ptr(&plan);
                self.kinds.push(Kind::Plan(plan));
                // SAFETY: `kinds` keeps it alive until `release`.
                self.object(ptr, unsafe { &*p })
            }
            Kind::Enum(info) => self.enum_member(ptr, info),
            Kind::StrSub => Ok(Node::String(Cow::Borrowed(self.pystr(ptr)?))),
            Kind::IntSub => self.int(ptr),
            Kind::FloatSub => self.float(ptr),
            Kind::DictSub => self.dict(ptr),
            Kind::ListSub => self.list(ptr),
            Kind::TupleSub => self.tuple(ptr),
            Kind::Unknown => Err(GiveUp),
        }
    }

    /// An Enum member: its value (pre-encoded by the writer for scalar values).
    fn enum_member(&mut self, ptr: *mut ffi::PyObject, info: Rc<EnumInfo>) -> R<Node<'py>> {
        if let Some((json, _)) = info.members.get(&(ptr as usize)) {
            // SAFETY: `kinds` keeps the table alive until `release`.
            let json: &'py [u8] = unsafe { std::slice::from_raw_parts(json.as_ptr(), json.len()) };
            self.kinds.push(Kind::Enum(info));
            return scalar_json_node(json);
        }
        self.enter()?;
        let value = self.enum_value(ptr)?;
        let n = self.value(value.as_ptr())?;
        self.depth -= 1;
        Ok(n)
    }

    /// `_value_`, else `.value` (the writer's rule).
    fn enum_value(&self, ptr: *mut ffi::PyObject) -> R<Bound<'py, PyAny>> {
        let obj = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        match obj.getattr(intern!(self.py, "_value_")) {
            Ok(v) => Ok(v),
            Err(_) => obj.getattr(intern!(self.py, "value")).map_err(|_| GiveUp),
        }
    }

    /// A dict key: str, str subclass, or Enum member with a str value (the writer's rule).
    fn key(&mut self, key: *mut ffi::PyObject) -> R<&'py str> {
        let tp = unsafe { ffi::Py_TYPE(key) };
        if tp == &raw mut ffi::PyUnicode_Type {
            return self.pystr(key);
        }
        let _hold = unsafe { Bound::from_borrowed_ptr(self.py, key) };
        match kind_of(self.py, tp).map_err(|_| GiveUp)? {
            Kind::StrSub => self.pystr(key),
            Kind::Enum(info) => {
                if let Some((_, is_str)) = info.members.get(&(key as usize)) {
                    if !is_str {
                        return Err(GiveUp);
                    }
                }
                let value = self.enum_value(key)?;
                if !value.is_instance_of::<PyString>() {
                    return Err(GiveUp);
                }
                self.pystr(value.as_ptr())
            }
            _ => Err(GiveUp),
        }
    }

    fn dict(&mut self, ptr: *mut ffi::PyObject) -> R<Node<'py>> {
        self.enter()?;
        let mut entries: Vec<Entry<'py>> = Vec::with_capacity(unsafe { ffi::PyDict_Size(ptr) }.max(0) as usize);
        let mut exact_keys = true;
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        while unsafe { ffi::PyDict_Next(ptr, &mut pos, &mut k, &mut v) } != 0 {
            exact_keys &= unsafe { ffi::Py_TYPE(k) } == &raw mut ffi::PyUnicode_Type;
            self.entry(k, v, &mut entries)?;
        }
        self.depth -= 1;
        // Exact str keys of one dict are distinct; other keys may spell the same text.
        if !exact_keys {
            dedup(&mut entries);
        }
        Ok(Node::Object(Obj(entries)))
    }

    /// One `key: value` from borrowed references of a dict entry.
    #[inline]
    fn entry(&mut self, k: *mut ffi::PyObject, v: *mut ffi::PyObject, out: &mut Vec<Entry<'py>>) -> R<()> {
        if unsafe { ffi::Py_TYPE(k) } == &raw mut ffi::PyUnicode_Type {
            let key = self.pystr(k)?;
            out.push((Cow::Borrowed(key), self.value(v)?));
            return Ok(());
        }
        // Reading other keys can run Python code: hold both first.
        let _hold = unsafe { (Bound::from_borrowed_ptr(self.py, k), Bound::from_borrowed_ptr(self.py, v)) };
        let key = self.key(k)?;
        out.push((Cow::Borrowed(key), self.value(v)?));
        Ok(())
    }

    fn list(&mut self, ptr: *mut ffi::PyObject) -> R<Node<'py>> {
        self.enter()?;
        let mut out = Vec::with_capacity(unsafe { ffi::PyList_Size(ptr) }.max(0) as usize);
        let mut i: ffi::Py_ssize_t = 0;
        // The size is read again each time: walking an item may run Python code.
        while i < unsafe { ffi::PyList_Size(ptr) } {
            let item = unsafe { ffi::PyList_GetItem(ptr, i) };
            if item.is_null() {
                return Err(GiveUp);
            }
            out.push(self.value(item)?);
            i += 1;
        }
        self.depth -= 1;
        Ok(Node::Array(out))
    }

    fn tuple(&mut self, ptr: *mut ffi::PyObject) -> R<Node<'py>> {
        self.enter()?;
        let n = unsafe { ffi::PyTuple_Size(ptr) };
        let mut out = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            let item = unsafe { ffi::PyTuple_GetItem(ptr, i) };
            if item.is_null() {
                return Err(GiveUp);
            }
            out.push(self.value(item)?);
        }
        self.depth -= 1;
        Ok(Node::Array(out))
    }

    /// A field (or `__pydantic_extra__`) through its getter: a new reference.
    #[inline]
    fn get(&self, obj: &Bound<'py, PyAny>, attr: &Py<PyString>, getter: &Getter) -> R<Bound<'py, PyAny>> {
        getter.read(obj, attr).map_err(|_| GiveUp)
    }

    /// A declared field's entry, unless the omission rule leaves it out.
    #[inline]
    fn field(&mut self, f: &'py Field, v: *mut ffi::PyObject, out: &mut Vec<Entry<'py>>) -> R<()> {
        if f.omit_if_none && unsafe { is_absent(v) } {
            return Ok(());
        }
        out.push((Cow::Borrowed(wire_key(f)?), self.value(v)?));
        Ok(())
    }

    fn object(&mut self, ptr: *mut ffi::PyObject, plan: &'py Plan) -> R<Node<'py>> {
        self.enter()?;
        let py = self.py;
        let obj = unsafe { Bound::from_borrowed_ptr(py, ptr) };
        let mut entries: Vec<Entry<'py>> = Vec::with_capacity(plan.fields.len());
        match &plan.kind {
            PlanKind::PydanticRoot => {
                let root = obj.getattr(plan.fields[0].attr.bind(py)).map_err(|_| GiveUp)?;
                let n = self.value(root.as_ptr())?;
                self.depth -= 1;
                return Ok(n);
            }
            PlanKind::Pydantic { extra } => {
                let d = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyObject_GenericGetDict(ptr, std::ptr::null_mut())) }
                    .map_err(|_| GiveUp)?;
                if !d.is_exact_instance_of::<PyDict>() {
                    return Err(GiveUp);
                }
                let dp = d.as_ptr();
                // As the writer: the instance dict holds the fields in declared order under
                // the plan's key objects; lookups only once the order differs.
                let mut pos: ffi::Py_ssize_t = 0;
                let mut in_order = true;
                for f in &plan.fields {
                    let mut v: *mut ffi::PyObject = std::ptr::null_mut();
                    if in_order {
                        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
                        let mut pv: *mut ffi::PyObject = std::ptr::null_mut();
                        if unsafe { ffi::PyDict_Next(dp, &mut pos, &mut k, &mut pv) } != 0 && k == f.attr.as_ptr() {
                            v = pv;
                        } else {
                            in_order = false;
                        }
                    }
                    if v.is_null() {
                        v = unsafe { ffi::PyDict_GetItemWithError(dp, f.attr.as_ptr()) };
                        if v.is_null() {
                            if unsafe { !ffi::PyErr_Occurred().is_null() } {
                                return Err(GiveUp);
                            }
                            continue; // not set (model_construct): pydantic skips it
                        }
                    }
                    self.field(f, v, &mut entries)?;
                }
                let ex = self.get(&obj, intern!(py, "__pydantic_extra__").as_unbound(), extra)?;
                if !ex.is_none() {
                    self.extras(&ex, plan, &mut entries)?;
                }
                for f in &plan.computed {
                    let v = obj.getattr(f.attr.bind(py)).map_err(|_| GiveUp)?;
                    self.field(f, v.as_ptr(), &mut entries)?;
                }
            }
            PlanKind::Struct { has_dict } => {
                for f in &plan.fields {
                    // The tag, pre-encoded by the writer (the plan outlives the tree).
                    if let Getter::ConstJson(json) = &f.getter {
                        entries.push((Cow::Borrowed(wire_key(f)?), scalar_json_node(json)?));
                        continue;
                    }
                    // A slot read in place, as the writer does; `value` holds what it keeps.
                    if let Some(v) = unsafe { f.getter.in_place(ptr) } {
                        if v as usize != plan.unset {
                            self.field(f, v, &mut entries)?;
                        }
                        continue;
                    }
                    let v = self.get(&obj, &f.attr, &f.getter)?;
                    if v.as_ptr() as usize == plan.unset {
                        continue;
                    }
                    self.field(f, v.as_ptr(), &mut entries)?;
                }
                if *has_dict {
                    let ex = unsafe {
                        Bound::from_owned_ptr_or_err(py, ffi::PyObject_GenericGetDict(ptr, std::ptr::null_mut()))
                    }
                    .map_err(|_| GiveUp)?;
                    self.extras(&ex, plan, &mut entries)?;
                }
            }
        }
        self.depth -= 1;
        // Extras may repeat a field's key, and aliases may collide: JSON.parse's rule.
        dedup(&mut entries);
        Ok(Node::Object(Obj(entries)))
    }

    /// Extra members (after the declared fields), in insertion order, with the writer's
    /// omission rule for keys of omittable fields.
    fn extras(&mut self, extra: &Bound<'py, PyAny>, plan: &Plan, out: &mut Vec<Entry<'py>>) -> R<()> {
        let d = extra.cast::<PyDict>().map_err(|_| GiveUp)?;
        if d.is_empty() {
            return Ok(());
        }
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        while unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
            if !plan.omit_keys.is_empty() && unsafe { is_absent(v) } {
                let key = unsafe { Bound::from_borrowed_ptr(self.py, k) };
                if let Ok(ks) = key.cast::<PyString>() {
                    if let Ok(s) = ks.to_str() {
                        if plan.omit_keys.iter().any(|o| o == s) {
                            continue;
                        }
                    }
                }
                unsafe { ffi::PyErr_Clear() };
            }
            self.entry(k, v, out)?;
        }
        Ok(())
    }
}

/// The wire key of a field, from its pre-encoded `"key":` (no escapes: give up otherwise).
#[inline]
fn wire_key(f: &Field) -> R<&str> {
    match &f.key[..] {
        // SAFETY: pre-encoded from a `&str`; without escapes the body is that str.
        [b'"', body @ .., b'"', b':'] if !body.contains(&b'\\') => Ok(unsafe { std::str::from_utf8_unchecked(body) }),
        _ => Err(GiveUp),
    }
}

/// Merge duplicated keys as `JSON.parse` does: first position, last value.
fn dedup(entries: &mut Vec<Entry<'_>>) {
    let n = entries.len();
    let dup = if n <= 32 {
        (1..n).any(|i| entries[..i].iter().any(|(k, _)| *k == entries[i].0))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(n);
        !entries.iter().all(|(k, _)| seen.insert(k.as_ref()))
    };
    if !dup {
        return;
    }
    let mut index: HashMap<String, usize> = HashMap::with_capacity(n);
    let mut out: Vec<Entry<'_>> = Vec::with_capacity(n);
    for (k, v) in entries.drain(..) {
        match index.get(k.as_ref()) {
            Some(&i) => out[i].1 = v,
            None => {
                index.insert(k.to_string(), out.len());
                out.push((k, v));
            }
        }
    }
    *entries = out;
}

/// The node of a scalar the writer pre-encoded (an enum member's value, a Struct's tag):
/// None/bool/int/float/str JSON, read as the parser would read it.
fn scalar_json_node(json: &[u8]) -> R<Node<'_>> {
    match json {
        b"null" => Ok(Node::Null),
        b"true" => Ok(Node::Bool(true)),
        b"false" => Ok(Node::Bool(false)),
        // SAFETY (both): the writer only writes UTF-8.
        [b'"', body @ .., b'"'] if !body.contains(&b'\\') => {
            Ok(Node::String(Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(body) })))
        }
        [b'"', ..] => Err(GiveUp),
        num => Ok(Node::Number(Num::Text(Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(num) })))),
    }
}
