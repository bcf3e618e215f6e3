//! The JSON writer for Python objects: `dumps`, `encode_sse`, `encode_sse_bytes`,
//! `encode_sse_many`.
//!
//! Walks a Python object graph and writes the JSON text that the Python reference
//! (`ag_ui` models dumped with `model_dump_json(by_alias=True)`, i.e. pydantic-core's
//! serializer) produces, byte for byte, without calling pydantic. The JSON text
//! details (float and string formats) live in `agui_core::json`.
//!
//! Values:
//! * exact `str`, `int` (any size), `float` (NaN/±inf → `null`), `bool`, `None`,
//!   `dict` (str keys only), `list`, `tuple`: fast paths on the exact type;
//! * `enum.Enum` members → their `.value`; subclasses of str/int/float/dict/list/tuple
//!   → as their base type;
//! * objects whose class has `__agui_fields__` (our msgspec Structs): a tuple of
//!   `(attr_name, wire_key, omit_if_none)` in emission order, then the instance
//!   `__dict__` items (extras) in insertion order;
//! * pydantic models (class has `__pydantic_fields__`): fields in declared order under
//!   `serialization_alias or alias or name`, values from the instance `__dict__`,
//!   then `__pydantic_extra__` items;
//! * anything else → `EncodeError` naming the type.
//!
//! Omission (the ag_ui base model's rule, reproduced for both kinds of objects): a
//! field marked omittable (pydantic: not required and default `None`) is left out
//! when its value is `None` — or a non-finite float, since the reference's wrap
//! serializer sees those already turned into `None`. An extra whose key equals the
//! name or wire key of an omittable field is left out on the same condition
//! (the reference filters the serialized dict by key). Every other `None` is `null`.
//!
//! Plans (per class) are built once and cached by type object (strong reference kept).

use std::cell::Cell;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::{Arc, Mutex};

use agui_core::json;
use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple, PyType};

use crate::errors::make_error;

/// Maximum nesting depth of arrays/objects (and enum values) before `EncodeError`.
pub const MAX_DEPTH: u32 = 1024;

// ---------------------------------------------------------------------------
// Plans and the type cache
// ---------------------------------------------------------------------------

struct Field {
    /// attribute name (msgspec) / `__dict__` key (pydantic), interned.
    attr: Py<PyString>,
    /// pre-encoded `"wireKey":`
    key: Box<[u8]>,
    omit_if_none: bool,
}

enum PlanKind {
    /// `__agui_fields__` object; `has_dict`: the type has instance `__dict__` (extras).
    Struct { has_dict: bool },
    /// pydantic model.
    Pydantic,
}

struct Plan {
    kind: PlanKind,
    fields: Vec<Field>,
    /// Names and wire keys of the omittable fields (extras with these keys are
    /// dropped when their value has no value).
    omit_keys: Vec<String>,
}

#[derive(Clone)]
enum Kind {
    Plan(Arc<Plan>),
    Enum,
    StrSub,
    IntSub,
    FloatSub,
    DictSub,
    ListSub,
    TupleSub,
    Unknown,
}

struct CacheEntry {
    _ty: Py<PyType>,
    kind: Kind,
}

/// Hasher for type-object addresses (already unique; just mix the bits).
#[derive(Default)]
struct PtrHasher(u64);

impl std::hash::Hasher for PtrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = ((n as u64) >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type TypeMap = HashMap<usize, CacheEntry, std::hash::BuildHasherDefault<PtrHasher>>;

static CACHE: PyOnceLock<Mutex<TypeMap>> = PyOnceLock::new();
static ENUM_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn cache(py: Python<'_>) -> &'static Mutex<TypeMap> {
    CACHE.get_or_init(py, || Mutex::new(TypeMap::default()))
}

fn encode_error(py: Python<'_>, msg: String) -> PyErr {
    make_error(py, "EncodeError", msg, None)
}

fn type_name(ty: &Bound<'_, PyType>) -> String {
    match ty.fully_qualified_name() {
        Ok(n) => n.to_string(),
        Err(_) => "?".to_string(),
    }
}

fn kind_of<'py>(py: Python<'py>, tp: *mut ffi::PyTypeObject) -> PyResult<Kind> {
    let key = tp as usize;
    {
        let guard = cache(py).lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = guard.get(&key) {
            return Ok(e.kind.clone());
        }
    }
    // Build without holding the lock (this calls Python code).
    let ty: Bound<'py, PyType> =
        unsafe { Bound::from_borrowed_ptr(py, tp as *mut ffi::PyObject).cast_into_unchecked() };
    let kind = classify(py, &ty)?;
    let mut guard = cache(py).lock().unwrap_or_else(|e| e.into_inner());
    let entry = guard.entry(key).or_insert(CacheEntry { _ty: ty.unbind(), kind });
    Ok(entry.kind.clone())
}

fn is_subtype(tp: &Bound<'_, PyType>, base: *mut ffi::PyTypeObject) -> bool {
    unsafe { ffi::PyType_IsSubtype(tp.as_ptr() as *mut ffi::PyTypeObject, base) != 0 }
}

fn classify<'py>(py: Python<'py>, ty: &Bound<'py, PyType>) -> PyResult<Kind> {
    if let Some(fields) = lookup_class_attr(ty, intern!(py, "__agui_fields__"))? {
        return Ok(Kind::Plan(Arc::new(struct_plan(py, ty, &fields)?)));
    }
    if let Some(fields) = lookup_class_attr(ty, intern!(py, "__pydantic_fields__"))? {
        if let Ok(d) = fields.cast::<PyDict>() {
            return Ok(Kind::Plan(Arc::new(pydantic_plan(py, ty, d)?)));
        }
    }
    let enum_ty = ENUM_TYPE.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        Ok(py.import("enum")?.getattr("Enum")?.cast_into::<PyType>()?.unbind())
    })?;
    if ty.is_subclass(enum_ty.bind(py))? {
        return Ok(Kind::Enum);
    }
    {
        if is_subtype(ty, &raw mut ffi::PyUnicode_Type) {
            return Ok(Kind::StrSub);
        }
        if is_subtype(ty, &raw mut ffi::PyLong_Type) {
            return Ok(Kind::IntSub);
        }
        if is_subtype(ty, &raw mut ffi::PyFloat_Type) {
            return Ok(Kind::FloatSub);
        }
        if is_subtype(ty, &raw mut ffi::PyDict_Type) {
            return Ok(Kind::DictSub);
        }
        if is_subtype(ty, &raw mut ffi::PyList_Type) {
            return Ok(Kind::ListSub);
        }
        if is_subtype(ty, &raw mut ffi::PyTuple_Type) {
            return Ok(Kind::TupleSub);
        }
    }
    Ok(Kind::Unknown)
}

/// `getattr(cls, name)` or None when missing (other errors propagate).
fn lookup_class_attr<'py>(
    ty: &Bound<'py, PyType>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match ty.getattr(name) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(ty.py()) => Ok(None),
        Err(e) => Err(e),
    }
}

fn struct_plan<'py>(
    py: Python<'py>,
    ty: &Bound<'py, PyType>,
    spec: &Bound<'py, PyAny>,
) -> PyResult<Plan> {
    let bad = || {
        encode_error(
            py,
            format!(
                "{}.__agui_fields__ must be a tuple of (attr_name: str, wire_key: str, omit_if_none: bool)",
                type_name(ty)
            ),
        )
    };
    let mut fields = Vec::new();
    let mut omit_keys = Vec::new();
    for item in spec.try_iter().map_err(|_| bad())? {
        let item = item?;
        let t = item.cast::<PyTuple>().map_err(|_| bad())?;
        if t.len() != 3 {
            return Err(bad());
        }
        let attr = t.get_item(0)?.cast_into::<PyString>().map_err(|_| bad())?;
        let wire = t.get_item(1)?.cast_into::<PyString>().map_err(|_| bad())?;
        let omit = t.get_item(2)?.is_truthy()?;
        let attr_s = attr.to_str().map_err(|_| bad())?.to_owned();
        let wire_s = wire.to_str().map_err(|_| bad())?.to_owned();
        if omit {
            omit_keys.push(attr_s.clone());
            omit_keys.push(wire_s.clone());
        }
        fields.push(Field {
            attr: PyString::intern(py, &attr_s).unbind(),
            key: json::encoded_key(&wire_s).into_boxed_slice(),
            omit_if_none: omit,
        });
    }
    let has_dict = match lookup_class_attr(ty, intern!(py, "__dictoffset__"))? {
        Some(v) => v.extract::<isize>().unwrap_or(0) != 0,
        None => false,
    };
    Ok(Plan { kind: PlanKind::Struct { has_dict }, fields, omit_keys })
}

fn pydantic_plan<'py>(
    py: Python<'py>,
    ty: &Bound<'py, PyType>,
    model_fields: &Bound<'py, PyDict>,
) -> PyResult<Plan> {
    let mut fields = Vec::new();
    let mut omit_keys = Vec::new();
    for (name, info) in model_fields.iter() {
        let name_s: String = name.extract().map_err(|_| {
            encode_error(py, format!("{}: field name is not a str", type_name(ty)))
        })?;
        if let Ok(ex) = info.getattr(intern!(py, "exclude")) {
            if ex.is_truthy()? {
                continue;
            }
        }
        let ser_alias: Option<String> = info.getattr(intern!(py, "serialization_alias"))?.extract()?;
        let alias: Option<String> = info.getattr(intern!(py, "alias"))?.extract()?;
        let required = info.call_method0(intern!(py, "is_required"))?.is_truthy()?;
        let default_none = info.getattr(intern!(py, "default"))?.is_none();
        let omit = !required && default_none;
        if omit {
            omit_keys.push(name_s.clone());
            if let Some(a) = &alias {
                omit_keys.push(a.clone());
            }
            if let Some(a) = &ser_alias {
                omit_keys.push(a.clone());
            }
        }
        let wire = ser_alias.or(alias).unwrap_or_else(|| name_s.clone());
        fields.push(Field {
            attr: PyString::intern(py, &name_s).unbind(),
            key: json::encoded_key(&wire).into_boxed_slice(),
            omit_if_none: omit,
        });
    }
    Ok(Plan { kind: PlanKind::Pydantic, fields, omit_keys })
}

// ---------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------

struct Writer<'py> {
    py: Python<'py>,
    buf: Vec<u8>,
    depth: u32,
}

/// True when the value "has no value" for the omission rule: None or a non-finite float.
#[inline]
unsafe fn is_absent(ptr: *mut ffi::PyObject) -> bool {
    if ptr == ffi::Py_None() {
        return true;
    }
    if ffi::Py_TYPE(ptr) == &raw mut ffi::PyFloat_Type {
        return !ffi::PyFloat_AsDouble(ptr).is_finite();
    }
    false
}

impl<'py> Writer<'py> {
    #[inline]
    fn enter(&mut self) -> PyResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(encode_error(
                self.py,
                format!("maximum nesting depth exceeded ({MAX_DEPTH}): is the object recursive?"),
            ));
        }
        Ok(())
    }

    /// Write a str object (exact or subclass).
    #[inline]
    fn write_pystr(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        let s = self.str_slice(ptr)?;
        json::write_str(&mut self.buf, s);
        Ok(())
    }

    #[inline]
    fn str_slice(&self, ptr: *mut ffi::PyObject) -> PyResult<&'py str> {
        let mut size: ffi::Py_ssize_t = 0;
        let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(ptr, &mut size) };
        if data.is_null() {
            return Err(self.str_error());
        }
        // The UTF-8 buffer is cached on the str object, which outlives this call.
        Ok(unsafe {
            std::str::from_utf8_unchecked(std::slice::from_raw_parts(data as *const u8, size as usize))
        })
    }

    #[cold]
    fn str_error(&self) -> PyErr {
        let err = PyErr::fetch(self.py);
        if err.is_instance_of::<PyUnicodeEncodeError>(self.py) {
            encode_error(
                self.py,
                format!("string contains an unpaired surrogate (surrogates not allowed): {err}"),
            )
        } else {
            err
        }
    }

    fn write_int(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        let mut overflow: c_int = 0;
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(ptr, &mut overflow) };
        if overflow == 0 {
            if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
                return Err(PyErr::fetch(self.py));
            }
            json::write_i64(&mut self.buf, v);
            return Ok(());
        }
        self.write_big_int(ptr)
    }

    #[cold]
    fn write_big_int(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        // Exact decimal of an int beyond i64 (int.__repr__, never a subclass's __str__).
        let s = unsafe {
            Bound::from_owned_ptr_or_err(self.py, ffi::PyObject_Repr(ptr)).map_err(|e| {
                encode_error(self.py, format!("cannot write integer: {e}"))
            })?
        };
        // A subclass could override __repr__: go through int's own repr instead.
        let s = if unsafe { ffi::Py_TYPE(ptr) } == &raw mut ffi::PyLong_Type {
            s
        } else {
            let int_ty = self.py.get_type::<pyo3::types::PyInt>();
            let b = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
            int_ty.call1((b,))?.repr()?.into_any()
        };
        let s = s.cast_into::<PyString>()?;
        self.buf.extend_from_slice(s.to_str()?.as_bytes());
        Ok(())
    }

    #[inline]
    fn write_float(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        let v = unsafe { ffi::PyFloat_AsDouble(ptr) };
        if v == -1.0 && unsafe { !ffi::PyErr_Occurred().is_null() } {
            return Err(PyErr::fetch(self.py));
        }
        json::write_f64(&mut self.buf, v);
        Ok(())
    }

    /// Write any value. `ptr` must be a valid reference kept alive by the caller.
    fn write_value(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        unsafe {
            let tp = ffi::Py_TYPE(ptr);
            if tp == &raw mut ffi::PyUnicode_Type {
                return self.write_pystr(ptr);
            }
            if ptr == ffi::Py_None() {
                self.buf.extend_from_slice(b"null");
                return Ok(());
            }
            if tp == &raw mut ffi::PyBool_Type {
                json::write_bool(&mut self.buf, ptr == ffi::Py_True());
                return Ok(());
            }
            if tp == &raw mut ffi::PyLong_Type {
                return self.write_int(ptr);
            }
            if tp == &raw mut ffi::PyFloat_Type {
                return self.write_float(ptr);
            }
            if tp == &raw mut ffi::PyDict_Type {
                return self.write_dict(ptr);
            }
            if tp == &raw mut ffi::PyList_Type {
                return self.write_list(ptr);
            }
            if tp == &raw mut ffi::PyTuple_Type {
                return self.write_tuple(ptr);
            }
            self.write_other(ptr, tp)
        }
    }

    fn write_other(&mut self, ptr: *mut ffi::PyObject, tp: *mut ffi::PyTypeObject) -> PyResult<()> {
        match kind_of(self.py, tp)? {
            Kind::Plan(plan) => self.write_object(ptr, &plan),
            Kind::Enum => {
                self.enter()?;
                let value = self.enum_value(ptr)?;
                self.write_value(value.as_ptr())?;
                self.depth -= 1;
                Ok(())
            }
            Kind::StrSub => self.write_pystr(ptr),
            Kind::IntSub => self.write_int(ptr),
            Kind::FloatSub => self.write_float(ptr),
            Kind::DictSub => self.write_dict(ptr),
            Kind::ListSub => self.write_list(ptr),
            Kind::TupleSub => self.write_tuple(ptr),
            Kind::Unknown => {
                let ty: Bound<'py, PyType> = unsafe {
                    Bound::from_borrowed_ptr(self.py, tp as *mut ffi::PyObject).cast_into_unchecked()
                };
                Err(encode_error(
                    self.py,
                    format!("Unable to serialize unknown type: {}", type_name(&ty)),
                ))
            }
        }
    }

    /// The value of an Enum member: its `_value_` instance attribute (a plain
    /// attribute read, where `.value` runs a Python-level property), else `.value`.
    #[inline]
    fn enum_value(&self, ptr: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
        let obj = unsafe { Bound::from_borrowed_ptr(self.py, ptr) };
        match obj.getattr(intern!(self.py, "_value_")) {
            Ok(v) => Ok(v),
            Err(_) => obj.getattr(intern!(self.py, "value")),
        }
    }

    /// Write a dict key (str, str subclass, or Enum with a str value).
    fn write_dict_key(&mut self, key: *mut ffi::PyObject) -> PyResult<()> {
        let tp = unsafe { ffi::Py_TYPE(key) };
        if tp == &raw mut ffi::PyUnicode_Type {
            return self.write_pystr(key);
        }
        match kind_of(self.py, tp)? {
            Kind::StrSub => self.write_pystr(key),
            Kind::Enum => {
                let value = self.enum_value(key)?;
                if value.is_instance_of::<PyString>() {
                    self.write_pystr(value.as_ptr())
                } else {
                    Err(self.bad_key(key))
                }
            }
            _ => Err(self.bad_key(key)),
        }
    }

    #[cold]
    fn bad_key(&self, key: *mut ffi::PyObject) -> PyErr {
        let k = unsafe { Bound::from_borrowed_ptr(self.py, key) };
        let repr = k.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        encode_error(
            self.py,
            format!("dict keys must be str, got {} key {}", type_name(&k.get_type()), repr),
        )
    }

    fn write_dict(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        self.enter()?;
        self.buf.push(b'{');
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        let mut first = true;
        while unsafe { ffi::PyDict_Next(ptr, &mut pos, &mut k, &mut v) } != 0 {
            // Hold strong references while writing (writing may run Python code).
            let key = unsafe { Bound::from_borrowed_ptr(self.py, k) };
            let value = unsafe { Bound::from_borrowed_ptr(self.py, v) };
            if !first {
                self.buf.push(b',');
            }
            first = false;
            self.write_dict_key(key.as_ptr())?;
            self.buf.push(b':');
            self.write_value(value.as_ptr())?;
        }
        self.buf.push(b'}');
        self.depth -= 1;
        Ok(())
    }

    fn write_list(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        self.enter()?;
        self.buf.push(b'[');
        let mut i: ffi::Py_ssize_t = 0;
        while i < unsafe { ffi::PyList_Size(ptr) } {
            let item = unsafe { ffi::PyList_GetItem(ptr, i) };
            if item.is_null() {
                return Err(PyErr::fetch(self.py));
            }
            let item = unsafe { Bound::from_borrowed_ptr(self.py, item) };
            if i > 0 {
                self.buf.push(b',');
            }
            self.write_value(item.as_ptr())?;
            i += 1;
        }
        self.buf.push(b']');
        self.depth -= 1;
        Ok(())
    }

    fn write_tuple(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        self.enter()?;
        self.buf.push(b'[');
        let n = unsafe { ffi::PyTuple_Size(ptr) };
        for i in 0..n {
            // Tuples are immutable: the borrowed item lives as long as the tuple.
            let item = unsafe { ffi::PyTuple_GetItem(ptr, i) };
            if item.is_null() {
                return Err(PyErr::fetch(self.py));
            }
            if i > 0 {
                self.buf.push(b',');
            }
            self.write_value(item)?;
        }
        self.buf.push(b']');
        self.depth -= 1;
        Ok(())
    }

    fn write_object(&mut self, ptr: *mut ffi::PyObject, plan: &Plan) -> PyResult<()> {
        self.enter()?;
        let py = self.py;
        let obj = unsafe { Bound::from_borrowed_ptr(py, ptr) };
        self.buf.push(b'{');
        let mut first = true;
        match plan.kind {
            PlanKind::Pydantic => {
                let d = obj.getattr(intern!(py, "__dict__"))?;
                let d = d.cast_into::<PyDict>().map_err(|_| {
                    encode_error(py, format!("{}: __dict__ is not a dict", type_name(&obj.get_type())))
                })?;
                for f in &plan.fields {
                    let v = unsafe { ffi::PyDict_GetItemWithError(d.as_ptr(), f.attr.as_ptr()) };
                    if v.is_null() {
                        if unsafe { !ffi::PyErr_Occurred().is_null() } {
                            return Err(PyErr::fetch(py));
                        }
                        continue; // field not set (e.g. model_construct): pydantic skips it
                    }
                    if f.omit_if_none && unsafe { is_absent(v) } {
                        continue;
                    }
                    let v = unsafe { Bound::from_borrowed_ptr(py, v) };
                    if !first {
                        self.buf.push(b',');
                    }
                    first = false;
                    self.buf.extend_from_slice(&f.key);
                    self.write_value(v.as_ptr())?;
                }
                let extra = obj.getattr(intern!(py, "__pydantic_extra__"))?;
                if !extra.is_none() {
                    self.write_extras(&extra, plan, first)?;
                }
            }
            PlanKind::Struct { has_dict } => {
                for f in &plan.fields {
                    let v = obj.getattr(f.attr.bind(py))?;
                    if f.omit_if_none && unsafe { is_absent(v.as_ptr()) } {
                        continue;
                    }
                    if !first {
                        self.buf.push(b',');
                    }
                    first = false;
                    self.buf.extend_from_slice(&f.key);
                    self.write_value(v.as_ptr())?;
                }
                if has_dict {
                    let extra = obj.getattr(intern!(py, "__dict__"))?;
                    self.write_extras(&extra, plan, first)?;
                }
            }
        }
        self.buf.push(b'}');
        self.depth -= 1;
        Ok(())
    }

    /// Write extra members (after declared fields) from a dict, in insertion order.
    fn write_extras(&mut self, extra: &Bound<'py, PyAny>, plan: &Plan, mut first: bool) -> PyResult<()> {
        let py = self.py;
        let d = extra
            .cast::<PyDict>()
            .map_err(|_| encode_error(py, "extra fields must be a dict".to_string()))?;
        if d.is_empty() {
            return Ok(());
        }
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        while unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
            let key = unsafe { Bound::from_borrowed_ptr(py, k) };
            let value = unsafe { Bound::from_borrowed_ptr(py, v) };
            if !plan.omit_keys.is_empty() && unsafe { is_absent(v) } {
                if let Ok(ks) = key.cast::<PyString>() {
                    if let Ok(s) = ks.to_str() {
                        if plan.omit_keys.iter().any(|o| o == s) {
                            continue;
                        }
                    }
                }
            }
            if !first {
                self.buf.push(b',');
            }
            first = false;
            self.write_dict_key(key.as_ptr())?;
            self.buf.push(b':');
            self.write_value(value.as_ptr())?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Buffer reuse and the Python API
// ---------------------------------------------------------------------------

const KEEP_CAPACITY: usize = 1 << 20;

thread_local! {
    static BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

fn with_writer<'py, R>(
    py: Python<'py>,
    f: impl FnOnce(&mut Writer<'py>) -> PyResult<()>,
    finish: impl FnOnce(Python<'py>, &[u8]) -> R,
) -> PyResult<R> {
    let mut buf = BUF.with(|b| b.take());
    buf.clear();
    let mut w = Writer { py, buf, depth: 0 };
    let res = f(&mut w);
    let out = res.map(|()| finish(py, &w.buf));
    let mut buf = w.buf;
    if buf.capacity() <= KEEP_CAPACITY {
        buf.clear();
        BUF.with(|b| b.set(buf));
    }
    out
}

fn bytes_out<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

fn str_out<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyString> {
    // Only valid UTF-8 is ever written (str data from Python and ASCII).
    PyString::new(py, unsafe { std::str::from_utf8_unchecked(b) })
}

/// dumps(obj) -> bytes: the JSON text of `obj`, as pydantic writes it for ag_ui models.
#[pyfunction]
pub fn dumps<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_writer(py, |w| w.write_value(obj.as_ptr()), bytes_out)
}

fn frame(w: &mut Writer<'_>, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    w.buf.extend_from_slice(b"data: ");
    w.write_value(obj.as_ptr())?;
    w.buf.extend_from_slice(b"\n\n");
    Ok(())
}

/// encode_sse(obj) -> str: `"data: " + dumps(obj) + "\n\n"` (ag_ui EventEncoder.encode).
#[pyfunction]
pub fn encode_sse<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    with_writer(py, |w| frame(w, obj), str_out)
}

/// encode_sse_bytes(obj) -> bytes: as encode_sse, UTF-8 bytes.
#[pyfunction]
pub fn encode_sse_bytes<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_writer(py, |w| frame(w, obj), bytes_out)
}

/// encode_sse_many(events: Iterable) -> bytes: every event framed, concatenated.
#[pyfunction]
pub fn encode_sse_many<'py>(py: Python<'py>, events: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    with_writer(
        py,
        |w| {
            for ev in events.try_iter()? {
                let ev = ev?;
                frame(w, &ev)?;
            }
            Ok(())
        },
        bytes_out,
    )
}

/// Drop every cached per-class plan (for tests, or after redefining classes).
#[pyfunction]
pub fn clear_encode_cache(py: Python<'_>) {
    let old = {
        let mut guard = cache(py).lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *guard)
    };
    drop(old);
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dumps, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_many, m)?)?;
    m.add_function(wrap_pyfunction!(clear_encode_cache, m)?)?;
    m.add("ENCODE_MAX_DEPTH", MAX_DEPTH)?;
    Ok(())
}
