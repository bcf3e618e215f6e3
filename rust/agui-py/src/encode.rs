//! The JSON writer for Python objects: `dumps`, `encode_sse`, `encode_sse_bytes`,
//! `encode_sse_many` (all `(obj, /, *, pydantic_fallback=False)`), `clear_encode_cache`.
//!
//! Walks a Python object graph and writes the JSON text that the Python reference
//! (`ag_ui` models dumped with `model_dump_json(by_alias=True)`, i.e. pydantic-core's
//! serializer) produces, byte for byte, without calling pydantic. The JSON text
//! details (float and string formats) live in `agui_core::json`.
//!
//! Values:
//! * exact `str`, `int` (any size), `float` (NaN/±inf → `null`), `bool`, `None`,
//!   `dict` (str keys only), `list`, `tuple`: fast paths on the exact type;
//! * `enum.Enum` members → their value (pre-encoded per class); subclasses of
//!   str/int/float/dict/list/tuple → as their base type;
//! * objects whose class has `__agui_fields__` (our msgspec Structs): a tuple of
//!   `(attr_name, wire_key, omit_if_none)` in emission order, then the instance
//!   `__dict__` items (extras) in insertion order; a field holding `msgspec.UNSET` is
//!   left out;
//! * pydantic models (class has `__pydantic_fields__`; the omission rule below only
//!   for ag_ui's models, recognised by their `_omittable_keys`): fields in declared order under
//!   `serialization_alias or alias or name`, values from the instance `__dict__`,
//!   then `__pydantic_extra__` items, then computed fields; `RootModel` → its root;
//! * anything else → `EncodeError` naming the type, or with `pydantic_fallback=True`
//!   `pydantic_core.to_json(x, by_alias=True, inf_nan_mode="null")` (which is what the
//!   reference writes for datetimes, UUIDs, sets, bytes, ...); likewise a dict with a
//!   non-str key is an `EncodeError`, or is written whole by pydantic with the fallback.
//!
//! Omission (the ag_ui base model's rule, reproduced for both kinds of objects): a
//! field marked omittable (ag_ui pydantic model: not required and default `None`) is left out
//! when its value is `None` — or a non-finite float, since the reference's wrap
//! serializer sees those already turned into `None`. An extra whose key equals the
//! name or wire key of an omittable field is left out on the same condition
//! (the reference filters the serialized dict by key). Every other `None` is `null`.
//!
//! Plans (per class) are built once and cached by type object (strong reference kept),
//! in a GIL-guarded global (see `GilCell`). Nesting deeper than `MAX_DEPTH` arrays /
//! objects is an `EncodeError` (recursive structures included) rather than a crash.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::rc::Rc;

use crate::gil::{GilBound, GilCell};
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

/// How a field value is read from an instance.
pub(crate) enum Getter {
    /// `getattr(obj, attr)`.
    GetAttr,
    /// A data descriptor found on the class (e.g. a msgspec/slots member): call its
    /// `tp_descr_get` directly (same result as getattr, since an instance `__dict__`
    /// cannot shadow a data descriptor), skipping the MRO lookup.
    Descr(Py<PyAny>, ffi::descrgetfunc),
    /// A `__slots__` member (how msgspec stores Struct fields): the value pointer lives
    /// at `offset` in the instance, read directly as msgspec's own encoder does (the
    /// offset comes from the member descriptor; see `slot_offset`). A NULL slot (unset
    /// attribute) goes through the descriptor, which raises the AttributeError.
    Slot(usize, Py<PyAny>, ffi::descrgetfunc),
    /// The tag value pre-encoded as JSON (a `Const` whose text never changes).
    ConstJson(Box<[u8]>),
    /// The msgspec tag of a tagged Struct (`event.type`, `message.role`): a class
    /// attribute, the same for every instance, so it is read once when the plan is built.
    Const(Py<PyAny>),
}

impl Getter {
    /// A field read in place, borrowed from the instance (kept alive by the caller), or
    /// None when it must go through `read`: not a slot, or an unset slot (its descriptor
    /// raises the AttributeError).
    ///
    /// # Safety
    /// `obj` must be a live instance of the class this getter's plan was built for.
    #[inline]
    pub(crate) unsafe fn in_place(&self, obj: *mut ffi::PyObject) -> Option<*mut ffi::PyObject> {
        match self {
            Getter::Slot(offset, ..) => {
                let v = unsafe { *((obj as *const u8).add(*offset) as *const *mut ffi::PyObject) };
                (!v.is_null()).then_some(v)
            }
            _ => None,
        }
    }

    /// The field's value through the getter (a new reference), or the error getattr
    /// would raise.
    #[inline]
    pub(crate) fn read<'py>(&self, obj: &Bound<'py, PyAny>, attr: &Py<PyString>) -> PyResult<Bound<'py, PyAny>> {
        let py = obj.py();
        match self {
            Getter::Descr(descr, get) | Getter::Slot(_, descr, get) => unsafe {
                let tp = ffi::Py_TYPE(obj.as_ptr()) as *mut ffi::PyObject;
                Bound::from_owned_ptr_or_err(py, get(descr.as_ptr(), obj.as_ptr(), tp))
            },
            Getter::GetAttr => obj.getattr(attr.bind(py)),
            Getter::Const(v) => Ok(v.bind(py).clone()),
            // Written from its text by the walkers; never read as a value.
            Getter::ConstJson(_) => Err(encode_error(py, "internal: pre-encoded field read as a value".into())),
        }
    }
}

pub(crate) struct Field {
    /// attribute name (Struct) / `__dict__` key (pydantic: the very key object of
    /// `__pydantic_fields__`, which is also the key object in instance `__dict__`s).
    pub(crate) attr: Py<PyString>,
    /// pre-encoded `"wireKey":`
    pub(crate) key: Box<[u8]>,
    pub(crate) omit_if_none: bool,
    pub(crate) getter: Getter,
}

pub(crate) enum PlanKind {
    /// `__agui_fields__` object; `has_dict`: the type has instance `__dict__` (extras).
    Struct { has_dict: bool },
    /// pydantic model; `extra`: how to read `__pydantic_extra__`.
    Pydantic { extra: Getter },
    /// pydantic `RootModel`: written as its `root` value.
    PydanticRoot,
}

pub(crate) struct Plan {
    pub(crate) kind: PlanKind,
    pub(crate) fields: Vec<Field>,
    /// Names and wire keys of the omittable fields (extras with these keys are
    /// dropped when their value has no value).
    pub(crate) omit_keys: Vec<String>,
    /// pydantic computed fields (written after the extras, read with getattr).
    pub(crate) computed: Vec<Field>,
    /// Address of `msgspec.UNSET` (Struct plans; 0 if msgspec is unavailable): a field
    /// holding it is left out, as msgspec does.
    pub(crate) unset: usize,
}

/// Enum members of one class with a scalar value, their value pre-encoded as JSON.
pub(crate) struct EnumInfo {
    /// member object address -> (JSON of the value, value is a str)
    pub(crate) members: HashMap<usize, (Box<[u8]>, bool), std::hash::BuildHasherDefault<PtrHasher>>,
}

#[derive(Clone)]
pub(crate) enum Kind {
    Plan(Rc<Plan>),
    Enum(Rc<EnumInfo>),
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
pub(crate) struct PtrHasher(u64);

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

// Entries hold `Rc` plans: `GilBound` (see crate::gil) lets them live in a `GilCell`.
type TypeMap = HashMap<usize, GilBound<CacheEntry>, std::hash::BuildHasherDefault<PtrHasher>>;

/// Per-class plans (keeps the type objects alive).
static CACHE: GilCell<Option<TypeMap>> = GilCell::new(None);
static ENUM_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TO_JSON: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static UNSET: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();

#[inline]
pub(crate) fn kind_of(py: Python<'_>, tp: *mut ffi::PyTypeObject) -> PyResult<Kind> {
    let key = tp as usize;
    let hit = CACHE.with(py, |c| c.as_ref().and_then(|m| m.get(&key)).map(|e| e.0.kind.clone()));
    match hit {
        Some(k) => Ok(k),
        None => kind_of_slow(py, tp),
    }
}

#[cold]
fn kind_of_slow(py: Python<'_>, tp: *mut ffi::PyTypeObject) -> PyResult<Kind> {
    let key = tp as usize;
    // Build outside of the cell (this calls Python code).
    let ty: Bound<'_, PyType> =
        unsafe { Bound::from_borrowed_ptr(py, tp as *mut ffi::PyObject).cast_into_unchecked() };
    let kind = classify(py, &ty)?;
    let ty = ty.unbind();
    let (kind, unused) = CACHE.with(py, |c| {
        let m = c.get_or_insert_with(TypeMap::default);
        if let Some(e) = m.get(&key) {
            // Another call (re-entrant or another thread while the GIL was released)
            // got there first: keep its entry.
            (e.0.kind.clone(), Some(ty))
        } else {
            m.insert(key, GilBound(CacheEntry { _ty: ty, kind: kind.clone() }));
            (kind, None)
        }
    });
    drop(unused); // decref outside of the cell
    Ok(kind)
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

fn is_subtype(tp: &Bound<'_, PyType>, base: *mut ffi::PyTypeObject) -> bool {
    unsafe { ffi::PyType_IsSubtype(tp.as_ptr() as *mut ffi::PyTypeObject, base) != 0 }
}

fn classify<'py>(py: Python<'py>, ty: &Bound<'py, PyType>) -> PyResult<Kind> {
    if let Some(fields) = lookup_class_attr(ty, intern!(py, "__agui_fields__"))? {
        return Ok(Kind::Plan(Rc::new(struct_plan(py, ty, &fields)?)));
    }
    if let Some(fields) = lookup_class_attr(ty, intern!(py, "__pydantic_fields__"))? {
        if let Ok(d) = fields.cast::<PyDict>() {
            return Ok(Kind::Plan(Rc::new(pydantic_plan(py, ty, d)?)));
        }
    }
    let enum_ty = ENUM_TYPE.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        Ok(py.import("enum")?.getattr("Enum")?.cast_into::<PyType>()?.unbind())
    })?;
    if ty.is_subclass(enum_ty.bind(py))? {
        return Ok(Kind::Enum(Rc::new(enum_info(py, ty))));
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

/// Pre-encode the scalar values of an Enum class's members (best effort: members not
/// found here are encoded through their `_value_` at run time).
fn enum_info(py: Python<'_>, ty: &Bound<'_, PyType>) -> EnumInfo {
    let mut members = HashMap::default();
    let Ok(Some(all)) = lookup_class_attr(ty, intern!(py, "__members__")) else {
        return EnumInfo { members };
    };
    let Ok(values) = all.call_method0(intern!(py, "values")) else {
        return EnumInfo { members };
    };
    let Ok(iter) = values.try_iter() else {
        return EnumInfo { members };
    };
    for member in iter.flatten() {
        let Ok(value) = member.getattr(intern!(py, "_value_")) else { continue };
        let scalar = value.is_none()
            || value.is_exact_instance_of::<PyString>()
            || value.is_exact_instance_of::<pyo3::types::PyInt>()
            || value.is_exact_instance_of::<pyo3::types::PyFloat>()
            || value.is_exact_instance_of::<pyo3::types::PyBool>();
        if !scalar {
            continue;
        }
        let mut w = Writer { py, buf: Vec::new(), depth: 0, fallback: false, bad_key_seen: false };
        if w.write_value(value.as_ptr()).is_ok() {
            let is_str = value.is_exact_instance_of::<PyString>();
            // The class (kept alive by the cache) keeps its members alive.
            members.insert(member.as_ptr() as usize, (w.buf.into_boxed_slice(), is_str));
        }
    }
    EnumInfo { members }
}

/// A data descriptor named `name` on the class (first in the MRO), with its getter.
fn data_descriptor(py: Python<'_>, ty: &Bound<'_, PyType>, name: &Bound<'_, PyString>) -> Getter {
    let Ok(mro) = ty.getattr(intern!(py, "__mro__")) else { return Getter::GetAttr };
    let Ok(mro) = mro.try_iter() else { return Getter::GetAttr };
    for klass in mro.flatten() {
        let Ok(d) = klass.getattr(intern!(py, "__dict__")) else { continue };
        let Ok(found) = d.get_item(name) else { continue };
        let dtp = unsafe { ffi::Py_TYPE(found.as_ptr()) };
        let (get, set) = unsafe {
            (
                ffi::PyType_GetSlot(dtp, ffi::Py_tp_descr_get),
                ffi::PyType_GetSlot(dtp, ffi::Py_tp_descr_set),
            )
        };
        // Python 3.10's PyType_GetSlot on a static type may raise: treat as "no".
        unsafe { ffi::PyErr_Clear() };
        if get.is_null() || set.is_null() {
            return Getter::GetAttr;
        }
        let get: ffi::descrgetfunc = unsafe { std::mem::transmute(get) };
        if let Some(offset) = slot_offset(py, ty, name, &found) {
            return Getter::Slot(offset, found.unbind(), get);
        }
        return Getter::Descr(found.unbind(), get);
    }
    Getter::GetAttr
}

/// The layout of CPython's `PyMemberDescrObject` (descrobject.h; unchanged from 3.3 to
/// 3.14): `PyDescr_COMMON` then the `PyMemberDef` pointer. Not part of the limited API,
/// so every use is checked (see `slot_offset`).
#[repr(C)]
struct MemberDescr {
    ob_base: ffi::PyObject,
    d_type: *mut ffi::PyTypeObject,
    d_name: *mut ffi::PyObject,
    d_qualname: *mut ffi::PyObject,
    d_member: *mut ffi::PyMemberDef,
}

static MEMBER_DESCR_TYPE: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();

/// Offset of an object slot in instances of `ty` when `descr` is a plain `__slots__`
/// member (`types.MemberDescriptorType`, `T_OBJECT_EX`) named `name`, defined on a base
/// of `ty`, lying inside the instance; None otherwise (the caller then calls the
/// descriptor). Reading the slot directly skips a C call and an incref/decref pair
/// per field: msgspec reads its Struct fields the same way.
fn slot_offset(py: Python<'_>, ty: &Bound<'_, PyType>, name: &Bound<'_, PyString>, descr: &Bound<'_, PyAny>) -> Option<usize> {
    let mdt = MEMBER_DESCR_TYPE
        .get_or_init(py, || {
            py.import("types").and_then(|m| m.getattr("MemberDescriptorType")).map(|t| t.unbind()).ok()
        })
        .as_ref()?;
    if unsafe { ffi::Py_TYPE(descr.as_ptr()) } as *mut ffi::PyObject != mdt.as_ptr() {
        return None;
    }
    let basic: usize = ty.getattr(intern!(py, "__basicsize__")).ok()?.extract().ok()?;
    let d = descr.as_ptr() as *const MemberDescr;
    unsafe {
        let def = (*d).d_member;
        if def.is_null() || (*def).type_code != ffi::Py_T_OBJECT_EX || (*def).flags & ffi::Py_RELATIVE_OFFSET != 0 {
            return None;
        }
        // The descriptor's own name and owner confirm the layout assumption.
        if (*d).d_name.is_null() || ffi::PyUnicode_Compare((*d).d_name, name.as_ptr()) != 0 {
            ffi::PyErr_Clear();
            return None;
        }
        if (*d).d_type.is_null() || ffi::PyType_IsSubtype(ty.as_ptr() as *mut ffi::PyTypeObject, (*d).d_type) == 0 {
            return None;
        }
        let off = (*def).offset;
        let min = std::mem::size_of::<ffi::PyObject>() as isize;
        let ptr = std::mem::size_of::<*mut ffi::PyObject>() as isize;
        if off < min || off + ptr > basic as isize || off % ptr != 0 {
            return None;
        }
        Some(off as usize)
    }
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
    // The msgspec tag field, if any (``__struct_config__.tag_field``).
    let tag_field: Option<String> = lookup_class_attr(ty, intern!(py, "__struct_config__"))?
        .and_then(|c| c.getattr(intern!(py, "tag_field")).ok())
        .and_then(|t| t.extract().ok());
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
        let attr = PyString::intern(py, &attr_s);
        let mut getter = data_descriptor(py, ty, &attr);
        if matches!(getter, Getter::GetAttr) && tag_field.as_deref() == Some(attr_s.as_str()) {
            let tag = ty.getattr(&attr)?;
            getter = match const_json(py, &tag, omit) {
                Some(text) => Getter::ConstJson(text),
                None => Getter::Const(tag.unbind()),
            };
        }
        fields.push(Field {
            attr: attr.unbind(),
            key: json::encoded_key(&wire_s).into_boxed_slice(),
            omit_if_none: omit,
            getter,
        });
    }
    let has_dict = match lookup_class_attr(ty, intern!(py, "__dictoffset__"))? {
        Some(v) => v.extract::<isize>().unwrap_or(0) != 0,
        None => false,
    };
    let unset = UNSET
        .get_or_init(py, || {
            py.import("msgspec").and_then(|m| m.getattr("UNSET")).map(|u| u.unbind()).ok()
        })
        .as_ref()
        .map_or(0, |u| u.as_ptr() as usize);
    Ok(Plan { kind: PlanKind::Struct { has_dict }, fields, omit_keys, computed: Vec::new(), unset })
}

/// The JSON text of a constant field value (a Struct's tag), when it is always written
/// (not an omittable "no value").
fn const_json(py: Python<'_>, v: &Bound<'_, PyAny>, omit_if_none: bool) -> Option<Box<[u8]>> {
    if omit_if_none && unsafe { is_absent(v.as_ptr()) } {
        return None;
    }
    let mut w = Writer { py, buf: Vec::new(), depth: 0, fallback: false, bad_key_seen: false };
    match w.write_value(v.as_ptr()) {
        Ok(()) => Some(w.buf.into_boxed_slice()),
        Err(_) => None, // written (and failing) at encode time instead
    }
}

fn pydantic_plan<'py>(
    py: Python<'py>,
    ty: &Bound<'py, PyType>,
    model_fields: &Bound<'py, PyDict>,
) -> PyResult<Plan> {
    // The omission rule belongs to ag_ui's base model (its wrap serializer, recognised
    // by its `_omittable_keys` classmethod); other pydantic models write every field.
    let omits_none = lookup_class_attr(ty, intern!(py, "_omittable_keys"))?.is_some();
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
        let omit = omits_none && !required && default_none;
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
        let attr = match name.cast_into::<PyString>() {
            Ok(n) => n,
            Err(_) => PyString::new(py, &name_s),
        };
        fields.push(Field {
            attr: attr.unbind(),
            key: json::encoded_key(&wire).into_boxed_slice(),
            omit_if_none: omit,
            getter: Getter::GetAttr,
        });
    }
    let mut computed = Vec::new();
    if let Some(cf) = lookup_class_attr(ty, intern!(py, "__pydantic_computed_fields__"))? {
        if let Ok(cf) = cf.cast::<PyDict>() {
            for (name, info) in cf.iter() {
                let name = name.cast_into::<PyString>()?;
                let alias: Option<String> = info.getattr(intern!(py, "alias"))?.extract()?;
                let wire = match alias {
                    Some(a) => a,
                    None => name.to_str()?.to_owned(),
                };
                computed.push(Field {
                    attr: name.unbind(),
                    key: json::encoded_key(&wire).into_boxed_slice(),
                    omit_if_none: false,
                    getter: Getter::GetAttr,
                });
            }
        }
    }
    let is_root = match lookup_class_attr(ty, intern!(py, "__pydantic_root_model__"))? {
        Some(v) => v.is_truthy()?,
        None => false,
    };
    if is_root {
        let root = PyString::intern(py, "root").unbind();
        let field = Field { attr: root, key: Box::new([]), omit_if_none: false, getter: Getter::GetAttr };
        return Ok(Plan { kind: PlanKind::PydanticRoot, fields: vec![field], omit_keys, computed, unset: 0 });
    }
    let extra = data_descriptor(py, ty, intern!(py, "__pydantic_extra__"));
    Ok(Plan { kind: PlanKind::Pydantic { extra }, fields, omit_keys, computed, unset: 0 })
}

// ---------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------

struct Writer<'py> {
    py: Python<'py>,
    buf: Vec<u8>,
    depth: u32,
    /// Hand unknown values and dicts with non-str keys to `pydantic_core.to_json`.
    fallback: bool,
    /// Set when the last error was a non-str dict key (for the fallback).
    bad_key_seen: bool,
}

/// True when the value "has no value" for the omission rule: None or a non-finite float.
#[inline]
pub(crate) unsafe fn is_absent(ptr: *mut ffi::PyObject) -> bool {
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
            // Containers and objects: hold a strong reference while writing them, as
            // the caller may have a borrowed one (from a dict or list) and writing them
            // can run Python code. (Leaves above never run Python code.)
            let _keep = Bound::from_borrowed_ptr(self.py, ptr);
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
            Kind::Enum(info) => {
                if let Some((json, _)) = info.members.get(&(ptr as usize)) {
                    self.buf.extend_from_slice(json);
                    return Ok(());
                }
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
            Kind::Unknown if self.fallback => self.write_fallback(ptr),
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
            Kind::Enum(info) => {
                if let Some((json, true)) = info.members.get(&(key as usize)) {
                    self.buf.extend_from_slice(json);
                    return Ok(());
                }
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

    /// Write `obj` with `pydantic_core.to_json(obj, by_alias=True, inf_nan_mode="null")`:
    /// the reference's own serializer for what this writer does not handle itself.
    #[cold]
    fn write_fallback(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        let py = self.py;
        let obj = unsafe { Bound::from_borrowed_ptr(py, ptr) };
        let fail = |e: PyErr| {
            encode_error(
                py,
                format!("Unable to serialize unknown type: {}: {e}", type_name(&obj.get_type())),
            )
        };
        let to_json = TO_JSON
            .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                Ok(py.import("pydantic_core")?.getattr("to_json")?.unbind())
            })
            .map_err(fail)?;
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "by_alias"), true)?;
        kwargs.set_item(intern!(py, "inf_nan_mode"), intern!(py, "null"))?;
        let out = to_json.bind(py).call((&obj,), Some(&kwargs)).map_err(fail)?;
        let out = out.cast_into::<PyBytes>().map_err(|e| fail(e.into()))?;
        self.buf.extend_from_slice(out.as_bytes());
        Ok(())
    }

    #[cold]
    fn bad_key(&mut self, key: *mut ffi::PyObject) -> PyErr {
        self.bad_key_seen = true;
        let k = unsafe { Bound::from_borrowed_ptr(self.py, key) };
        let repr = k.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        encode_error(
            self.py,
            format!("dict keys must be str, got {} key {}", type_name(&k.get_type()), repr),
        )
    }

    /// Write `"key":value` from borrowed references of a dict entry.
    #[inline]
    fn write_entry(&mut self, k: *mut ffi::PyObject, v: *mut ffi::PyObject) -> PyResult<()> {
        if unsafe { ffi::Py_TYPE(k) } == &raw mut ffi::PyUnicode_Type {
            self.write_pystr(k)?;
            self.buf.push(b':');
            return self.write_value(v);
        }
        // Writing other keys can run Python code: hold both first.
        let key = unsafe { Bound::from_borrowed_ptr(self.py, k) };
        let value = unsafe { Bound::from_borrowed_ptr(self.py, v) };
        self.write_dict_key(key.as_ptr())?;
        self.buf.push(b':');
        self.write_value(value.as_ptr())
    }

    fn write_dict(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        if !self.fallback {
            return self.write_dict_inner(ptr);
        }
        let (start, depth) = (self.buf.len(), self.depth);
        self.bad_key_seen = false;
        match self.write_dict_inner(ptr) {
            Err(_) if self.bad_key_seen => {
                // A non-str key in this very dict (nested dicts handle their own):
                // let pydantic write the whole dict.
                self.bad_key_seen = false;
                self.buf.truncate(start);
                self.depth = depth;
                self.write_fallback(ptr)
            }
            r => r,
        }
    }

    fn write_dict_inner(&mut self, ptr: *mut ffi::PyObject) -> PyResult<()> {
        self.enter()?;
        self.buf.push(b'{');
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        let mut first = true;
        while unsafe { ffi::PyDict_Next(ptr, &mut pos, &mut k, &mut v) } != 0 {
            if !first {
                self.buf.push(b',');
            }
            first = false;
            self.write_entry(k, v)?;
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
            if i > 0 {
                self.buf.push(b',');
            }
            self.write_value(item)?;
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

    /// Read a field (or `__pydantic_extra__`) through its getter.
    #[inline]
    fn get(&self, obj: &Bound<'py, PyAny>, attr: &Py<PyString>, getter: &Getter) -> PyResult<Bound<'py, PyAny>> {
        getter.read(obj, attr)
    }

    #[inline]
    fn write_field(&mut self, f: &Field, v: *mut ffi::PyObject, first: &mut bool) -> PyResult<()> {
        if f.omit_if_none && unsafe { is_absent(v) } {
            return Ok(());
        }
        if !*first {
            self.buf.push(b',');
        }
        *first = false;
        self.buf.extend_from_slice(&f.key);
        self.write_value(v)
    }

    fn write_object(&mut self, ptr: *mut ffi::PyObject, plan: &Plan) -> PyResult<()> {
        self.enter()?;
        let py = self.py;
        let obj = unsafe { Bound::from_borrowed_ptr(py, ptr) };
        if let PlanKind::PydanticRoot = plan.kind {
            let root = obj.getattr(plan.fields[0].attr.bind(py))?;
            self.write_value(root.as_ptr())?;
            self.depth -= 1;
            return Ok(());
        }
        self.buf.push(b'{');
        let mut first = true;
        match &plan.kind {
            PlanKind::Pydantic { extra } => {
                let d = unsafe {
                    Bound::from_owned_ptr_or_err(py, ffi::PyObject_GenericGetDict(ptr, std::ptr::null_mut()))?
                };
                if !d.is_exact_instance_of::<PyDict>() {
                    return Err(encode_error(
                        py,
                        format!("{}: __dict__ is not a dict", type_name(&obj.get_type())),
                    ));
                }
                let dp = d.as_ptr();
                // Instance dicts hold the fields in declared order under the very key
                // objects of __pydantic_fields__: walk the dict alongside the plan and
                // only fall back to lookups once the order differs.
                let mut pos: ffi::Py_ssize_t = 0;
                let mut in_order = true;
                for f in &plan.fields {
                    let mut v: *mut ffi::PyObject = std::ptr::null_mut();
                    if in_order {
                        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
                        let mut pv: *mut ffi::PyObject = std::ptr::null_mut();
                        if unsafe { ffi::PyDict_Next(dp, &mut pos, &mut k, &mut pv) } != 0
                            && k == f.attr.as_ptr()
                        {
                            v = pv;
                        } else {
                            in_order = false;
                        }
                    }
                    if v.is_null() {
                        v = unsafe { ffi::PyDict_GetItemWithError(dp, f.attr.as_ptr()) };
                        if v.is_null() {
                            if unsafe { !ffi::PyErr_Occurred().is_null() } {
                                return Err(PyErr::fetch(py));
                            }
                            continue; // field not set (e.g. model_construct): pydantic skips it
                        }
                    }
                    self.write_field(f, v, &mut first)?;
                }
                let ex = self.get(&obj, intern!(py, "__pydantic_extra__").as_unbound(), extra)?;
                if !ex.is_none() {
                    first = self.write_extras(&ex, plan, first)?;
                }
                for f in &plan.computed {
                    let v = obj.getattr(f.attr.bind(py))?;
                    self.write_field(f, v.as_ptr(), &mut first)?;
                }
            }
            PlanKind::PydanticRoot => unreachable!(),
            PlanKind::Struct { has_dict } => {
                for f in &plan.fields {
                    if let Getter::ConstJson(text) = &f.getter {
                        if !first {
                            self.buf.push(b',');
                        }
                        first = false;
                        self.buf.extend_from_slice(&f.key);
                        self.buf.extend_from_slice(text);
                        continue;
                    }
                    // Borrowed from the instance, which `obj` keeps alive; write_value takes
                    // its own reference before anything can run Python code.
                    if let Some(v) = unsafe { f.getter.in_place(ptr) } {
                        if v as usize != plan.unset {
                            self.write_field(f, v, &mut first)?;
                        }
                        continue;
                    }
                    let v = self.get(&obj, &f.attr, &f.getter)?;
                    if v.as_ptr() as usize == plan.unset {
                        continue;
                    }
                    self.write_field(f, v.as_ptr(), &mut first)?;
                }
                if *has_dict {
                    let ex = unsafe {
                        Bound::from_owned_ptr_or_err(py, ffi::PyObject_GenericGetDict(ptr, std::ptr::null_mut()))?
                    };
                    self.write_extras(&ex, plan, first)?;
                }
            }
        }
        self.buf.push(b'}');
        self.depth -= 1;
        Ok(())
    }

    /// Write extra members (after declared fields) from a dict, in insertion order.
    /// Returns the updated `first` flag.
    fn write_extras(&mut self, extra: &Bound<'py, PyAny>, plan: &Plan, mut first: bool) -> PyResult<bool> {
        let py = self.py;
        let d = extra
            .cast::<PyDict>()
            .map_err(|_| encode_error(py, "extra fields must be a dict".to_string()))?;
        if d.is_empty() {
            return Ok(first);
        }
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        while unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
            if !plan.omit_keys.is_empty() && unsafe { is_absent(v) } {
                let key = unsafe { Bound::from_borrowed_ptr(py, k) };
                if let Ok(ks) = key.cast::<PyString>() {
                    if let Ok(s) = ks.to_str() {
                        if plan.omit_keys.iter().any(|o| o == s) {
                            continue;
                        }
                    }
                }
                unsafe { ffi::PyErr_Clear() };
            }
            if !first {
                self.buf.push(b',');
            }
            first = false;
            self.write_entry(k, v)?;
        }
        Ok(first)
    }
}

// ---------------------------------------------------------------------------
// Buffer reuse and the Python API
// ---------------------------------------------------------------------------

const KEEP_CAPACITY: usize = 1 << 20;

/// The output buffer, reused between calls (taken for the duration of a call, so a
/// re-entrant call simply starts with a fresh one).
static BUF: GilCell<Vec<u8>> = GilCell::new(Vec::new());

fn with_writer<'py, R>(
    py: Python<'py>,
    fallback: bool,
    f: impl FnOnce(&mut Writer<'py>) -> PyResult<()>,
    finish: impl FnOnce(Python<'py>, &[u8]) -> R,
) -> PyResult<R> {
    let mut buf = BUF.with(py, std::mem::take);
    buf.clear();
    let mut w = Writer { py, buf, depth: 0, fallback, bad_key_seen: false };
    let res = f(&mut w);
    let out = res.map(|()| finish(py, &w.buf));
    let mut buf = w.buf;
    if buf.capacity() <= KEEP_CAPACITY {
        buf.clear();
        BUF.with(py, |b| {
            if b.capacity() < buf.capacity() {
                *b = buf;
            }
        });
    }
    out
}

fn bytes_out<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

fn str_out<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyString> {
    // Only valid UTF-8 is ever written (str data from Python, pydantic's output, ASCII).
    PyString::new(py, unsafe { std::str::from_utf8_unchecked(b) })
}

/// dumps(obj, /, *, pydantic_fallback=False) -> bytes: the JSON text of `obj`, as
/// pydantic writes it for ag_ui models.
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = false))]
pub fn dumps<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    pydantic_fallback: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    with_writer(py, pydantic_fallback, |w| w.write_value(obj.as_ptr()), bytes_out)
}

fn frame(w: &mut Writer<'_>, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    w.buf.extend_from_slice(b"data: ");
    w.write_value(obj.as_ptr())?;
    w.buf.extend_from_slice(b"\n\n");
    Ok(())
}

/// encode_sse(obj, /, *, pydantic_fallback=False) -> str:
/// `"data: " + dumps(obj) + "\n\n"` (ag_ui EventEncoder.encode).
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = false))]
pub fn encode_sse<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    pydantic_fallback: bool,
) -> PyResult<Bound<'py, PyString>> {
    with_writer(py, pydantic_fallback, |w| frame(w, obj), str_out)
}

/// encode_sse_bytes(obj, /, *, pydantic_fallback=False) -> bytes: as encode_sse, UTF-8.
#[pyfunction]
#[pyo3(signature = (obj, /, *, pydantic_fallback = false))]
pub fn encode_sse_bytes<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    pydantic_fallback: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    with_writer(py, pydantic_fallback, |w| frame(w, obj), bytes_out)
}

/// encode_sse_many(events, /, *, pydantic_fallback=False) -> bytes: every event
/// framed, concatenated.
#[pyfunction]
#[pyo3(signature = (events, /, *, pydantic_fallback = false))]
pub fn encode_sse_many<'py>(
    py: Python<'py>,
    events: &Bound<'py, PyAny>,
    pydantic_fallback: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    with_writer(
        py,
        pydantic_fallback,
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
    let old = CACHE.with(py, |c| c.take());
    drop(old); // decrefs outside of the cell
}

/// `encode_sse_event(event, /) -> str`: `encode_sse` as a plain `METH_O` C function.
///
/// `EventEncoder.encode` is the call an agent server makes once per event; for a small
/// event PyO3's generic wrapper (argument parsing for the keyword-only option, the
/// trampoline's bookkeeping) was ~10% of the whole call. This entry takes exactly one
/// positional argument and does only what is needed: attach, write, convert panics.
unsafe extern "C" fn encode_sse_event(_module: *mut ffi::PyObject, arg: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls METH_O functions with the GIL held and `arg` borrowed for
    // the duration of the call; nothing derived from the token outlives this frame.
    let py = unsafe { Python::assume_attached() };
    let run = std::panic::AssertUnwindSafe(|| {
        let obj = unsafe { Bound::from_borrowed_ptr(py, arg) };
        with_writer(py, false, |w| frame(w, &obj), str_out)
    });
    let result = match std::panic::catch_unwind(run) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic in encode_sse_event".to_string());
            Err(pyo3::panic::PanicException::new_err(msg))
        }
    };
    match result {
        Ok(s) => s.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// A method table entry that CPython reads (never writes) for the module's lifetime.
struct MethodDef(std::cell::UnsafeCell<ffi::PyMethodDef>);
// SAFETY: immutable after construction; only its address is handed to CPython.
unsafe impl Sync for MethodDef {}

static ENCODE_SSE_EVENT_DEF: MethodDef = MethodDef(std::cell::UnsafeCell::new(ffi::PyMethodDef {
    ml_name: c"encode_sse_event".as_ptr(),
    ml_meth: ffi::PyMethodDefPointer { PyCFunction: encode_sse_event },
    ml_flags: ffi::METH_O,
    ml_doc: c"encode_sse_event(event, /)\n--\n\nencode_sse(event) without options, as a METH_O function (EventEncoder.encode).".as_ptr(),
}));

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // The method table must outlive the function object: a static it is.
    let def = ENCODE_SSE_EVENT_DEF.0.get();
    let name = PyString::new(py, "agui_fast._native");
    let f = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyCFunction_NewEx(def, m.as_ptr(), name.as_ptr()))?
    };
    m.add("encode_sse_event", f)?;
    m.add_function(wrap_pyfunction!(dumps, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(encode_sse_many, m)?)?;
    m.add_function(wrap_pyfunction!(clear_encode_cache, m)?)?;
    m.add("ENCODE_MAX_DEPTH", MAX_DEPTH)?;
    Ok(())
}
