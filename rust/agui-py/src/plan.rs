//! Per-class plans of the object walker (`walk.rs`): which members an object has, in
//! which order, under which wire keys, how each is read, and when it is left out.
//!
//! Sources, in order of authority:
//! * msgspec's own metadata (`__struct_fields__`, `__struct_encode_fields__`,
//!   `__struct_defaults__`, `__struct_config__`'s tag and `omit_defaults`), so a user
//!   subclass that adds a field (`class MyEvent(TextMessageContentEvent): trace: str`)
//!   encodes it, like `msgspec.json.encode` does;
//! * `__agui_fields__` (generated for our Structs, or on any class): an override giving the
//!   reference's member order (a tag may sit between fields), wire keys and the omission
//!   flag; msgspec fields it does not list follow it, in msgspec's order;
//! * pydantic models: `model_fields` (alias, serialization alias, exclude, default), extras
//!   from `__pydantic_extra__`, computed fields, `RootModel`. A model that customises its
//!   JSON (field/model serializers, `ser_json_*` config) other than ag_ui's own base is
//!   written by pydantic itself (`Kind::Foreign`).
//!
//! Plans are built once per class and cached by type object in a GIL cell
//! (`crate::gil`), shared through `Rc` (see gil.rs for why that is sound).

use std::collections::HashMap;
use std::rc::Rc;

use agui_core::patch::cache::FastBuild;
use agui_core::sink::{PreStr, Scalar};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use crate::construct::Check;
use crate::errors::make_error;
use crate::ffi::api::DataDescr;
use crate::ffi::layout::Layout;
use crate::ffi::gil::GilCell;

/// How a field value is read from an instance.
pub(crate) enum Getter {
    /// `getattr(obj, attr)`.
    GetAttr,
    /// A data descriptor found on the class (e.g. a msgspec/slots member): call its
    /// `tp_descr_get` directly (same result as getattr, since an instance `__dict__`
    /// cannot shadow a data descriptor), skipping the MRO lookup.
    Descr(DataDescr),
    /// A `__slots__` member (how msgspec stores Struct fields): the value pointer lives
    /// at `offset` in the instance, read directly as msgspec's own encoder does (the
    /// offset comes from the member descriptor; see `slot_offset`). A NULL slot (unset
    /// attribute) goes through the descriptor, which raises the AttributeError.
    Slot(usize, DataDescr),
    /// A class-level constant (a msgspec tag) with a scalar value, pre-encoded.
    ConstScalar(Scalar),
    /// A class-level constant of another kind, walked as a value.
    Const(Py<PyAny>),
}

impl Getter {
    /// The field's value through the getter (a new reference), or the error getattr
    /// would raise. (`ConstScalar` is written from its plan, never read.)
    #[inline]
    pub(crate) fn read<'py>(&self, obj: &Bound<'py, PyAny>, attr: &Py<PyString>) -> PyResult<Bound<'py, PyAny>> {
        let py = obj.py();
        match self {
            Getter::Descr(d) | Getter::Slot(_, d) => d.get(obj),
            Getter::GetAttr | Getter::ConstScalar(_) => obj.getattr(attr.bind(py)),
            Getter::Const(v) => Ok(v.bind(py).clone()),
        }
    }
}

pub(crate) struct Field {
    /// attribute name (Struct) / `__dict__` key (pydantic: the very key object of
    /// `__pydantic_fields__`, which is also the key object in instance `__dict__`s).
    pub(crate) attr: Py<PyString>,
    /// the wire key, with its JSON spelling
    pub(crate) key: PreStr,
    pub(crate) omit_if_none: bool,
    pub(crate) getter: Getter,
    /// This field's check in the plan's `schema` (None: any value).
    pub(crate) check: Option<FieldCheck>,
}

/// A field's schema check, with the common valid cases decided without a call: `None`
/// where the field is optional, an instance of exactly `exact` (a type address, 0: none).
#[derive(Clone, Copy)]
pub(crate) struct FieldCheck {
    pub(crate) index: usize,
    pub(crate) none_ok: bool,
    pub(crate) exact: usize,
}

impl FieldCheck {
    /// The check of field `index` (None when it accepts anything).
    fn new(index: usize, check: &Check) -> Option<FieldCheck> {
        let (none_ok, inner) = match check {
            Check::Optional(inner) => (true, &**inner),
            c => (false, c),
        };
        let exact = match inner {
            Check::Any | Check::Never => return None,
            Check::Union(members) => members.iter().map(Self::exact_type).find(|&t| t != 0).unwrap_or(0),
            c => Self::exact_type(c),
        };
        Some(FieldCheck { index, none_ok, exact })
    }

    /// A type whose every exact instance passes `check` (0: none).
    fn exact_type(check: &Check) -> usize {
        match check {
            Check::Str | Check::Pattern(_) => &raw mut ffi::PyUnicode_Type as usize,
            // An int of any size is an integer; narrower bounds need the value.
            Check::Int(i64::MIN, i64::MAX) => &raw mut ffi::PyLong_Type as usize,
            Check::Dict => &raw mut ffi::PyDict_Type as usize,
            Check::Bool => &raw mut ffi::PyBool_Type as usize,
            Check::Structs(classes) if classes.len() == 1 => classes[0],
            _ => 0,
        }
    }

}

pub(crate) enum PlanKind {
    /// msgspec Struct / `__agui_fields__` object; `has_dict`: instance `__dict__` (extras);
    /// `managed`: that dict is read in place (`Layout::managed_class`, decided per class).
    Struct { has_dict: bool, managed: bool },
    /// pydantic model; `extra`: how to read `__pydantic_extra__`.
    Pydantic { extra: Getter },
    /// pydantic `RootModel`: written as its `root` value.
    PydanticRoot,
}

pub(crate) struct Plan {
    /// The address of the class the plan was built for (its instances' fields are read
    /// in place only when the class is exactly this one, `ffi::walk::field`).
    pub(crate) class: usize,
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
    /// The field checks of our own Structs (their construction plan, `construct.rs`):
    /// the encoder never writes a value that construction would refuse in kind.
    pub(crate) schema: Option<Rc<crate::construct::Plan>>,
    /// How the stream reads the class's instances as plain events (`stream::PlainShape`),
    /// made at the first such read.
    pub(crate) plain: std::cell::OnceCell<Option<crate::stream::PlainShape>>,
    /// How `model_dump` and the JSON of attribute names read the class's instances
    /// ([`dump_plan`]), made at the first such read.
    pub(crate) dump: std::cell::OnceCell<DumpPlan>,
}

/// What `model_dump`'s Python mode makes of a class with a Struct plan (the rules of
/// `core/_dump.py`'s loop, which stays the reference for what is not `Native`).
#[derive(PartialEq, Eq, Clone, Copy)]
pub(crate) enum DumpMode {
    /// One of our Structs (a msgspec Struct with `__agui_fields__` and an instance dict):
    /// a dict of its fields in plan order, then its extras.
    Native,
    /// Not a msgspec Struct (a class with `__agui_fields__` only): kept as it is.
    Pass,
    /// Another msgspec Struct: left to the Python loop.
    Other,
}

pub(crate) struct DumpPlan {
    pub(crate) mode: DumpMode,
    /// Beside the plan's fields (`Native` only).
    pub(crate) fields: Vec<DumpField>,
}

pub(crate) struct DumpField {
    /// The key by attribute name (`from_` is `from`, a Python keyword).
    pub(crate) name: Py<PyString>,
    /// The key by alias (the wire key).
    pub(crate) wire: Py<PyString>,
    /// `name` as JSON (the JSON text of attribute names).
    pub(crate) name_json: PreStr,
    /// The class's value of a class-level field (a tag): what `getattr` reads.
    pub(crate) konst: Option<Py<PyAny>>,
}

static MSGSPEC_STRUCT: PyOnceLock<Option<Py<PyType>>> = PyOnceLock::new();

/// The [`DumpPlan`] of `plan`, the plan of class `ty`.
pub(crate) fn dump_plan<'p>(py: Python<'_>, ty: &Bound<'_, PyType>, plan: &'p Plan) -> PyResult<&'p DumpPlan> {
    if let Some(d) = plan.dump.get() {
        return Ok(d);
    }
    let made = make_dump_plan(py, ty, plan)?;
    // (made again by a re-entrant call meanwhile: the first one stays)
    let _ = plan.dump.set(made);
    Ok(plan.dump.get().expect("set just above"))
}

fn make_dump_plan(py: Python<'_>, ty: &Bound<'_, PyType>, plan: &Plan) -> PyResult<DumpPlan> {
    let other = DumpPlan { mode: DumpMode::Other, fields: Vec::new() };
    let PlanKind::Struct { has_dict, .. } = plan.kind else {
        return Ok(DumpPlan { mode: DumpMode::Pass, fields: Vec::new() });
    };
    let base = MSGSPEC_STRUCT.get_or_init(py, || {
        py.import("msgspec").and_then(|m| m.getattr("Struct")).and_then(|s| Ok(s.cast_into::<PyType>()?.unbind())).ok()
    });
    let Some(base) = base else { return Ok(other) };
    if !ty.is_subclass(base.bind(py))? {
        return Ok(DumpPlan { mode: DumpMode::Pass, fields: Vec::new() });
    }
    if !has_dict || lookup_class_attr(ty, intern!(py, "__agui_fields__"))?.is_none() {
        return Ok(other);
    }
    let mut fields = Vec::with_capacity(plan.fields.len());
    for f in &plan.fields {
        let attr = f.attr.bind(py);
        let name = if attr.to_str()? == "from_" { PyString::intern(py, &f.key.text) } else { attr.clone() };
        let konst = match &f.getter {
            Getter::ConstScalar(_) | Getter::Const(_) => match ty.getattr(attr) {
                Ok(v) => Some(v.unbind()),
                Err(_) => return Ok(other),
            },
            _ => None,
        };
        let name_json = PreStr::new(name.to_str()?);
        fields.push(DumpField { name: name.unbind(), wire: PyString::intern(py, &f.key.text).unbind(), name_json, konst });
    }
    Ok(DumpPlan { mode: DumpMode::Native, fields })
}

/// Enum members of one class with a scalar value, pre-encoded.
pub(crate) struct EnumInfo {
    /// member object address -> its value
    pub(crate) members: HashMap<usize, Scalar, FastBuild>,
}

#[derive(Clone)]
pub(crate) enum Kind {
    Plan(Rc<Plan>),
    Enum(Rc<EnumInfo>),
    /// A class whose JSON only pydantic knows (customised pydantic models).
    Foreign,
    StrSub,
    IntSub,
    FloatSub,
    DictSub,
    ListSub,
    TupleSub,
    /// set / frozenset (and subclasses): an array in iteration order, as pydantic writes.
    Set,
    /// exact `datetime.datetime` / `datetime.time`, `datetime.date`: their ISO text
    /// (pydantic's spelling, see `walk.rs`); the `usize` is the length of the text before
    /// any fraction and offset (19, 8, 10).
    IsoTime(usize),
    /// exact `uuid.UUID`, `decimal.Decimal`: `str(value)` is pydantic's JSON string.
    Text,
    Unknown,
}

pub(crate) struct CacheEntry {
    _ty: Py<PyType>,
    kind: Kind,
    /// The class's version tag when the plan was built (`Layout::type_version`; 0: none).
    version: u32,
}

// Entries hold `Rc` plans (`ffi::gil::GilShare` lets them live in a `GilCell`).
pub(crate) type TypeMap = HashMap<usize, CacheEntry, FastBuild>;

/// Per-class plans (keeps the type objects alive).
pub(crate) static CACHE: GilCell<Option<TypeMap>> = GilCell::new(None);
static ENUM_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UNSET: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();
static STDLIB_TYPES: PyOnceLock<[(Py<PyAny>, usize); 5]> = PyOnceLock::new();

/// The cached kind of a class, valid while the class's version tag is the one it was built
/// under (a class changed since, e.g. a field replaced by a property, is planned anew, as
/// the interpreter gives it a new tag). Where the tag is not read (`Layout::type_version`
/// off) or the class has none (0: the interpreter ran out of tags for it), the cached
/// kind is kept: its changes cannot be told there.
#[inline(always)]
pub(crate) fn kind_of(py: Python<'_>, lay: Layout, ty: &Bound<'_, PyType>) -> PyResult<Kind> {
    let key = ty.as_ptr() as usize;
    let now = lay.version_of(ty);
    let hit = CACHE.with(py, |c| {
        let e = c.as_ref().and_then(|m| m.get(&key))?;
        now.is_none_or(|v| v == e.version).then(|| e.kind.clone())
    }).flatten();
    match hit {
        Some(k) => Ok(k),
        None => kind_of_slow(py, lay, ty),
    }
}

#[cold]
fn kind_of_slow(py: Python<'_>, lay: Layout, ty: &Bound<'_, PyType>) -> PyResult<Kind> {
    let key = ty.as_ptr() as usize;
    // Build outside of the cell (this calls Python code).
    let kind = classify(py, ty)?;
    // Read after `classify`, whose lookups on the class gave it a tag if it had none.
    let version = lay.version_of(ty).unwrap_or(0);
    let entry = CacheEntry { _ty: ty.clone().unbind(), kind: kind.clone(), version };
    let stored = CACHE.with(py, |c| {
        let m = c.get_or_insert_with(TypeMap::default);
        match m.get(&key) {
            // Another call (re-entrant, or another thread while the GIL was released)
            // built it under the same tag first: keep its entry.
            Some(e) if e.version == version => (e.kind.clone(), Some(entry)),
            // (a stale entry is replaced)
            _ => (kind.clone(), m.insert(key, entry)),
        }
    });
    // (Decrefs outside of the cell. A borrow declined, re-entrant, caches nothing.)
    Ok(stored.map_or(kind, |(kind, unused)| {
        drop(unused);
        kind
    }))
}

/// The plan of a class that describes it now, for reading instances' fields in place
/// (`ffi::walk::field`) without asking the class ([`kind_of`]). None when the class's
/// changes cannot be told (the tag read is off, or the interpreter gave the class no
/// tag): the caller then reads through the class.
pub(crate) fn current_kind(py: Python<'_>, ty: &Bound<'_, PyType>) -> PyResult<Option<Kind>> {
    let lay = crate::ffi::layout::get(py);
    if lay.version_of(ty).is_none() {
        return Ok(None);
    }
    let kind = kind_of(py, lay, ty)?;
    let built = CACHE.with(py, |c| c.as_ref().and_then(|m| m.get(&(ty.as_ptr() as usize))).map(|e| e.version)).flatten();
    let now = lay.version_of(ty);
    Ok((built.is_some_and(|b| b != 0 && Some(b) == now)).then_some(kind))
}

/// [`current_kind`] of the class of `obj`; the common case (a plan built under the class's
/// current tag) in one lookup, without a reference to the class.
#[inline]
pub(crate) fn current_kind_of(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Option<Kind>> {
    let key = obj.get_type_ptr() as usize;
    let now = crate::ffi::layout::get(py).version_of_class(obj);
    let hit = now.and_then(|now| CACHE.with(py, |c| c.as_ref().and_then(|m| m.get(&key)).filter(|e| now != 0 && e.version == now).map(|e| e.kind.clone())));
    match hit {
        Some(Some(kind)) => Ok(Some(kind)),
        _ => current_kind(py, &obj.get_type()),
    }
}

/// Drop every cached plan (decrefs happen outside of the cell).
pub(crate) fn clear_cache(py: Python<'_>) {
    let old = CACHE.with(py, |c| c.take()).flatten();
    drop(old);
}

pub(crate) fn encode_error(py: Python<'_>, msg: String) -> PyErr {
    make_error(py, "EncodeError", msg, None)
}

pub(crate) fn type_name(ty: &Bound<'_, PyType>) -> String {
    match ty.fully_qualified_name() {
        Ok(n) => n.to_string(),
        Err(_) => "?".to_string(),
    }
}


fn enum_type(py: Python<'_>) -> PyResult<&Py<PyType>> {
    ENUM_TYPE.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        Ok(py.import("enum")?.getattr("Enum")?.cast_into::<PyType>()?.unbind())
    })
}

fn classify<'py>(py: Python<'py>, ty: &Bound<'py, PyType>) -> PyResult<Kind> {
    let agui = lookup_class_attr(ty, intern!(py, "__agui_fields__"))?;
    let msgspec_fields = lookup_class_attr(ty, intern!(py, "__struct_fields__"))?;
    if agui.is_some() || msgspec_fields.is_some() {
        return Ok(Kind::Plan(Rc::new(struct_plan(py, ty, agui.as_ref(), msgspec_fields.as_ref())?)));
    }
    if let Some(fields) = lookup_class_attr(ty, intern!(py, "__pydantic_fields__"))? {
        if let Ok(d) = fields.cast::<PyDict>() {
            if customises_json(py, ty)? {
                return Ok(Kind::Foreign);
            }
            return Ok(Kind::Plan(Rc::new(pydantic_plan(py, ty, d)?)));
        }
    }
    if ty.is_subclass(enum_type(py)?.bind(py))? {
        return Ok(Kind::Enum(Rc::new(enum_info(py, ty))));
    }
    // (type, ISO text length before fraction and offset; 0: `str()` is the JSON string)
    let stdlib = STDLIB_TYPES.get_or_try_init(py, || -> PyResult<[(Py<PyAny>, usize); 5]> {
        let dt = py.import("datetime")?;
        Ok([
            (dt.getattr("datetime")?.unbind(), 19),
            (dt.getattr("date")?.unbind(), 10),
            (dt.getattr("time")?.unbind(), 8),
            (py.import("uuid")?.getattr("UUID")?.unbind(), 0),
            (py.import("decimal")?.getattr("Decimal")?.unbind(), 0),
        ])
    })?;
    // Exact types only: a subclass may format itself differently (pydantic's fallback).
    for (t, base) in stdlib {
        if t.as_ptr() == ty.as_ptr() {
            return Ok(if *base == 0 { Kind::Text } else { Kind::IsoTime(*base) });
        }
    }
    use pyo3::types::{PyFloat, PyFrozenSet, PyInt, PyList, PySet};
    let subs = [
        (py.get_type::<PyString>(), Kind::StrSub),
        (py.get_type::<PyInt>(), Kind::IntSub),
        (py.get_type::<PyFloat>(), Kind::FloatSub),
        (py.get_type::<PyDict>(), Kind::DictSub),
        (py.get_type::<PyList>(), Kind::ListSub),
        (py.get_type::<PyTuple>(), Kind::TupleSub),
        (py.get_type::<PySet>(), Kind::Set),
        (py.get_type::<PyFrozenSet>(), Kind::Set),
    ];
    for (base, kind) in subs {
        if ty.is_subclass(&base)? {
            return Ok(kind);
        }
    }
    Ok(Kind::Unknown)
}

/// Does a pydantic model class write JSON its own way (field or model serializers,
/// `ser_json_*` / `use_enum_values` config)? ag_ui's models are recognised by their
/// `_omittable_keys` and keep the walker's plan: their one model serializer is the
/// omission rule the plan reproduces. Nested models of other classes are checked when
/// the walker meets them.
fn customises_json(py: Python<'_>, ty: &Bound<'_, PyType>) -> PyResult<bool> {
    if lookup_class_attr(ty, intern!(py, "_omittable_keys"))?.is_some() {
        return Ok(false);
    }
    if let Some(dec) = lookup_class_attr(ty, intern!(py, "__pydantic_decorators__"))? {
        for attr in ["field_serializers", "model_serializers"] {
            if let Ok(d) = dec.getattr(attr) {
                if d.is_truthy()? {
                    return Ok(true);
                }
            }
        }
    }
    if let Some(cfg) = lookup_class_attr(ty, intern!(py, "model_config"))? {
        if let Ok(cfg) = cfg.cast::<PyDict>() {
            for (k, v) in cfg.iter() {
                let k: String = k.extract().unwrap_or_default();
                if (k.starts_with("ser_json_") || k == "use_enum_values") && v.is_truthy()? {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// A Python scalar (None, bool, int, float, str) as a pre-encoded [`Scalar`].
pub(crate) fn scalar_of(v: &Bound<'_, PyAny>) -> Option<Scalar> {
    use pyo3::types::{PyBool, PyFloat, PyInt};
    if v.is_none() {
        return Some(Scalar::Null);
    }
    if v.is_exact_instance_of::<PyBool>() {
        return Some(Scalar::Bool(v.is_truthy().ok()?));
    }
    if v.is_exact_instance_of::<PyInt>() {
        return Some(match v.extract::<i64>() {
            Ok(i) => Scalar::Int(i),
            Err(_) => Scalar::BigInt(v.repr().ok()?.to_str().ok()?.into()),
        });
    }
    if v.is_exact_instance_of::<PyFloat>() {
        return Some(Scalar::Float(v.extract().ok()?));
    }
    if v.is_exact_instance_of::<PyString>() {
        return Some(Scalar::Str(PreStr::new(v.cast::<PyString>().ok()?.to_str().ok()?)));
    }
    None
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
        if let Some(s) = scalar_of(&value) {
            // The class (kept alive by the cache) keeps its members alive.
            members.insert(member.as_ptr() as usize, s);
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
        let Some(descr) = DataDescr::of(&found) else { return Getter::GetAttr };
        if let Some(offset) = slot_offset(py, ty, name, &found) {
            return Getter::Slot(offset, descr);
        }
        return Getter::Descr(descr);
    }
    Getter::GetAttr
}

static MEMBER_DESCR_TYPE: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();

/// Offset of an object slot in instances of `ty` when `descr` is a plain `__slots__`
/// member named `name` (see `layout::Layout::member_offset`, which reads the descriptor
/// only on the CPython versions whose layout it knows); None otherwise (the caller then
/// calls the descriptor). Reading the slot directly skips a C call and an incref/decref
/// pair per field: msgspec reads its Struct fields the same way.
fn slot_offset(py: Python<'_>, ty: &Bound<'_, PyType>, name: &Bound<'_, PyString>, descr: &Bound<'_, PyAny>) -> Option<usize> {
    let mdt = MEMBER_DESCR_TYPE
        .get_or_init(py, || py.import("types").and_then(|m| m.getattr("MemberDescriptorType")).map(|t| t.unbind()).ok())
        .as_ref()?;
    let basic: usize = ty.getattr(intern!(py, "__basicsize__")).ok()?.extract().ok()?;
    crate::ffi::layout::get(py).member_offset(ty, name, descr, mdt.bind(py), basic)
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

/// One member of a Struct plan before its getter is found.
struct Member {
    attr: String,
    wire: String,
    omit: bool,
}

fn struct_plan<'py>(
    py: Python<'py>,
    ty: &Bound<'py, PyType>,
    agui: Option<&Bound<'py, PyAny>>,
    msgspec_fields: Option<&Bound<'py, PyAny>>,
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
    let config = lookup_class_attr(ty, intern!(py, "__struct_config__"))?;
    let cfg = |name: &str| config.as_ref().and_then(|c| c.getattr(name).ok()).filter(|v| !v.is_none());
    let tag_field: Option<String> = cfg("tag_field").and_then(|t| t.extract().ok());
    let mut members: Vec<Member> = Vec::new();
    if let Some(spec) = agui {
        for item in spec.try_iter().map_err(|_| bad())? {
            let item = item?;
            let t = item.cast::<PyTuple>().map_err(|_| bad())?;
            if t.len() != 3 {
                return Err(bad());
            }
            let attr: String = t.get_item(0)?.cast_into::<PyString>().map_err(|_| bad())?.to_str().map_err(|_| bad())?.into();
            let wire: String = t.get_item(1)?.cast_into::<PyString>().map_err(|_| bad())?.to_str().map_err(|_| bad())?.into();
            members.push(Member { attr, wire, omit: t.get_item(2)?.is_truthy()? });
        }
    } else if let Some(tag) = &tag_field {
        // msgspec writes the tag first.
        members.push(Member { attr: tag.clone(), wire: tag.clone(), omit: false });
    }
    // msgspec's own fields that the override does not list (a subclass's additions).
    if let Some(names) = msgspec_fields {
        let names: Vec<String> = names.extract()?;
        let wires: Vec<String> = match lookup_class_attr(ty, intern!(py, "__struct_encode_fields__"))? {
            Some(w) => w.extract()?,
            None => names.clone(),
        };
        let defaults: Vec<Bound<'py, PyAny>> = match lookup_class_attr(ty, intern!(py, "__struct_defaults__"))? {
            Some(d) => d.extract()?,
            None => Vec::new(),
        };
        let omit_defaults = cfg("omit_defaults").map(|v| v.is_truthy()).transpose()?.unwrap_or(false);
        let first_default = names.len().saturating_sub(defaults.len());
        for (i, name) in names.iter().enumerate() {
            if members.iter().any(|m| &m.attr == name) {
                continue;
            }
            // Left out when None only where the reference would: an optional field
            // whose default is None (omit_defaults Structs, like ag_ui's rule).
            let default_none = i >= first_default && defaults[i - first_default].is_none();
            let wire = wires.get(i).cloned().unwrap_or_else(|| name.clone());
            members.push(Member { attr: name.clone(), wire, omit: omit_defaults && default_none });
        }
    }
    let schema = crate::construct::schema_plan(py, ty)?;
    let mut fields = Vec::with_capacity(members.len());
    let mut omit_keys = Vec::new();
    for m in members {
        if m.omit {
            omit_keys.push(m.attr.clone());
            omit_keys.push(m.wire.clone());
        }
        let attr = PyString::intern(py, &m.attr);
        let mut getter = data_descriptor(py, ty, &attr);
        if matches!(getter, Getter::GetAttr) && tag_field.as_deref() == Some(m.attr.as_str()) {
            // The tag: a class attribute (or the configured tag value), the same for
            // every instance, so it is read once here.
            let tag = match ty.getattr(&attr) {
                Ok(v) => v,
                Err(e) => cfg("tag").ok_or(e)?,
            };
            let absent = m.omit && crate::ffi::api::is_absent(&tag);
            // An Enum member (our tags are `EventType` members) is written as its value.
            let is_enum = tag.is_instance(enum_type(py)?.bind(py))?;
            let value = if is_enum { tag.getattr(intern!(py, "_value_")).unwrap_or_else(|_| tag.clone()) } else { tag.clone() };
            getter = match scalar_of(&value) {
                Some(s) if !absent => Getter::ConstScalar(s),
                _ => Getter::Const(tag.unbind()),
            };
        }
        let check = schema.as_ref().and_then(|p| {
            let i = p.names.iter().position(|n| n.bind(py).to_str().ok() == Some(m.attr.as_str()))?;
            FieldCheck::new(i, &p.checks[i])
        });
        fields.push(Field { attr: attr.unbind(), key: PreStr::new(&m.wire), omit_if_none: m.omit, getter, check });
    }
    let has_dict = match lookup_class_attr(ty, intern!(py, "__dictoffset__"))? {
        Some(v) => v.extract::<isize>().unwrap_or(0) != 0,
        None => false,
    };
    // SAFETY: a live type object, under the GIL (the token).
    let managed = has_dict && crate::ffi::layout::get(py).managed_class(ty);
    let unset = UNSET
        .get_or_init(py, || {
            py.import("msgspec").and_then(|m| m.getattr("UNSET")).map(|u| u.unbind()).ok()
        })
        .as_ref()
        .map_or(0, |u| u.as_ptr() as usize);
    Ok(Plan { class: ty.as_ptr() as usize, kind: PlanKind::Struct { has_dict, managed }, fields, omit_keys, computed: Vec::new(), unset, schema, plain: Default::default(), dump: Default::default() })
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
            key: PreStr::new(&wire),
            omit_if_none: omit,
            getter: Getter::GetAttr,
            check: None,
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
                    key: PreStr::new(&wire),
                    omit_if_none: false,
                    getter: Getter::GetAttr,
                    check: None,
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
        let field = Field { attr: root, key: PreStr::new("root"), omit_if_none: false, getter: Getter::GetAttr, check: None };
        return Ok(Plan { class: ty.as_ptr() as usize, kind: PlanKind::PydanticRoot, fields: vec![field], omit_keys, computed, unset: 0, schema: None, plain: Default::default(), dump: Default::default() });
    }
    let extra = data_descriptor(py, ty, intern!(py, "__pydantic_extra__"));
    Ok(Plan { class: ty.as_ptr() as usize, kind: PlanKind::Pydantic { extra }, fields, omit_keys, computed, unset: 0, schema: None, plain: Default::default(), dump: Default::default() })
}
