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
//! names as `core/_given.py` does (its `mark`, specialised to a new instance: the class's
//! shared record of those names, a `Shared` `Extras`, becomes the empty `__dict__`; the
//! `__dict__` property, `instance_dict`, gives an instance a record of its own before any
//! code sees it): pydantic's `model_fields_set` counts them; any other value given is
//! told apart from the default by the value itself. `record_given` makes the same records
//! after msgspec converted plain data (`model_validate`, pydantic's validation).
//! msgspec's decoders do not call the class, so decoding pays nothing for this.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use agui_core::construct::Fields;

use crate::ffi::gil::GilCell;
use crate::ffi::construct::{init_meta, meta, Meta};

/// What a keyword's value must be for the fast path (anything else goes to `lenient`);
/// the encoder reads the same checks as each field's schema (`plan::conforms`). Literals
/// are interned strings (compared by pointer first), patterns bound `re.Pattern.search`.
pub(crate) type Check = agui_core::construct::Check<Py<PyString>, Py<PyAny>>;

pub(crate) struct Plan {
    /// The class itself: keeps the pointer key of the cache valid.
    _cls: Py<PyType>,
    /// Classes named by `Check::Structs` (their pointers are compared).
    pub(crate) classes: Vec<Py<PyAny>>,
    pub(crate) names: Vec<Py<PyString>>,
    /// Each field's wire name (interned) and its hash, and whether its value may hold
    /// Structs; the tag field's hash (what `record_given` matches the data's keys by).
    pub(crate) wires: Vec<Py<PyString>>,
    pub(crate) wire_hashes: Vec<isize>,
    pub(crate) nested: Vec<bool>,
    pub(crate) tag_hash: isize,
    /// Which fields are required, which record a default given explicitly (routing).
    pub(crate) fields: Fields,
    pub(crate) checks: Vec<Check>,
    /// Per field: the default (None or a literal `str`) that, given explicitly, is recorded
    /// for `model_fields_set`; None for a required field.
    pub(crate) defaults: Vec<Option<Py<PyAny>>>,
    /// `(tag field name, tag value, the class's tag attribute)` of a tagged Struct.
    pub(crate) tag: Option<(Py<PyString>, Py<PyString>, Py<PyAny>)>,
    /// The keyword names of calls that passed the tag, each with the same names without
    /// it (what msgspec's constructor is given) and the tag's position: a call site passes
    /// the same constant tuple every time, so it is rebuilt once, not per call.
    pub(crate) without_tag: RefCell<Vec<CallSite>>,
    /// The shared records (`core._given.Shared`) made so far, by what they record: the
    /// fields given at their default (a bit set) and the tag.
    pub(crate) records: RefCell<Vec<(u64, bool, Py<PyAny>)>>,
    /// The wire names and the tag field as text, and each field's default as JSON spells
    /// it (what `record_given_json` compares the text's members with).
    pub(crate) wire_texts: Vec<String>,
    pub(crate) tag_text: Option<String>,
    pub(crate) json_defaults: Vec<JsonDefault>,
}

/// A field's default as a member of JSON text gives it: `null`, a string, or nothing to
/// record (a required field).
pub(crate) enum JsonDefault {
    Required,
    Null,
    Str(String),
}

/// A call site's keyword names, the same without the tag, and the tag's position.
pub(crate) type CallSite = (Py<PyTuple>, Py<PyTuple>, usize);

/// Call sites remembered per class in `Plan::without_tag` (further ones build their names).
pub(crate) const WITHOUT_TAG_SITES: usize = 8;

/// Shared records kept per class (a further combination of names gets its own record).
pub(crate) const SHARED_RECORDS: usize = 8;

// Class pointers are already well spread: no SipHash (the walker's hasher for type addresses).
pub(crate) type Plans = HashMap<usize, Rc<Plan>, agui_core::patch::cache::FastBuild>;
static PLANS: GilCell<Option<Plans>> = GilCell::new(None);

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
    let fields = Fields::new(required, defaults.iter().map(Option::is_some).collect());
    let nested = checks.iter().map(holds_structs).collect();
    let wire_hashes = wires.iter().map(|w| w.bind(py).hash()).collect::<PyResult<_>>()?;
    let tag_hash = tag.as_ref().map_or(Ok(-1), |(field, _, _)| field.bind(py).hash())?;
    let wire_texts = wires.iter().map(|w| w.bind(py).to_str().map(str::to_owned)).collect::<PyResult<_>>()?;
    let tag_text = tag.as_ref().map(|(field, _, _)| field.bind(py).to_str().map(str::to_owned)).transpose()?;
    let json_defaults = defaults
        .iter()
        .map(|d| match d {
            None => Ok(JsonDefault::Required),
            Some(d) if d.is_none(py) => Ok(JsonDefault::Null),
            Some(d) => Ok(d.bind(py).cast::<PyString>().map_or(JsonDefault::Required, |s| JsonDefault::Str(s.to_string()))),
        })
        .collect::<PyResult<_>>()?;
    Ok(Rc::new(Plan {
        _cls: cls.clone().unbind(),
        classes,
        names,
        wires,
        wire_hashes,
        nested,
        tag_hash,
        fields,
        checks,
        defaults,
        tag,
        without_tag: RefCell::default(),
        records: RefCell::default(),
        wire_texts,
        tag_text,
        json_defaults,
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

pub(crate) fn plan_for(py: Python<'_>, meta: &Meta, cls: &Bound<'_, PyType>) -> PyResult<Rc<Plan>> {
    let key = cls.as_ptr() as usize;
    let hit = PLANS.with(py, |p| p.get_or_insert_with(Plans::default).get(&key).cloned()).flatten();
    if let Some(plan) = hit {
        return Ok(plan);
    }
    let plan = build_plan(py, meta, cls)?;
    // `plan_of` ran Python: another thread may have cached this class meanwhile; keep the
    // first (nothing is dropped inside the cell). A borrow declined (re-entrant) caches
    // nothing.
    Ok(PLANS.with(py, |p| p.get_or_insert_with(Plans::default).entry(key).or_insert_with(|| plan.clone()).clone()).unwrap_or(plan))
}

/// The construction plan of `cls` when its metaclass is ours (the field checks that the
/// encoder also holds each value to); None for any other class.
pub(crate) fn schema_plan(py: Python<'_>, cls: &Bound<'_, PyType>) -> PyResult<Option<Rc<Plan>>> {
    let Ok(meta) = meta(py) else { return Ok(None) };
    if !cls.get_type().is_subclass(meta.ty.bind(py))? {
        return Ok(None);
    }
    plan_for(py, meta, cls).map(Some)
}

pub(crate) fn lenient<'py>(py: Python<'py>, meta: &Meta, cls: &Bound<'py, PyType>, kw: Bound<'py, PyDict>) -> PyResult<Py<PyAny>> {
    Ok(meta.lenient.bind(py).call1((cls, kw))?.unbind())
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
    Ok(init_meta(py, base, probe, plan_of, lenient, extras, shared)?.ty.bind(py).clone())
}

/// After msgspec converted plain data `input` into `obj` (an instance of one of our Structs,
/// with no `__dict__` anywhere yet): record, at every level, what the instances cannot
/// show by their values, as the exact path (`core._convert`) records it: a tag the data
/// gave, a member given at its default. The schema's Struct positions are followed (never
/// `Any` values). False when a record is needed that this walk does not make (a class of
/// more than 64 fields): the caller takes the exact path.
#[pyfunction]
fn record_given(py: Python<'_>, obj: &Bound<'_, PyAny>, input: &Bound<'_, PyAny>) -> PyResult<bool> {
    crate::ffi::construct::record_given(py, meta(py)?, obj, input)
}

/// `record_given` for `obj` decoded by a typed msgspec decoder from the JSON text `data`
/// (`bytes` or `str`): the text is read beside the object (no Python values built for
/// it), members given `null` or a literal default and the tags recorded at every level.
/// False when the text does not walk with the object (not UTF-8, a shape the walk does not
/// follow) or a record is needed that it does not make: the caller takes the exact path.
#[pyfunction]
fn record_given_json(py: Python<'_>, obj: &Bound<'_, PyAny>, data: &Bound<'_, PyAny>) -> PyResult<bool> {
    let text = if let Ok(b) = data.cast::<pyo3::types::PyBytes>() {
        match std::str::from_utf8(b.as_bytes()) {
            Ok(t) => t,
            Err(_) => return Ok(false),
        }
    } else if let Ok(s) = data.cast::<PyString>() {
        match s.to_str() {
            Ok(t) => t,
            Err(_) => return Ok(false),
        }
    } else {
        return Err(PyTypeError::new_err("record_given_json: data must be bytes or str"));
    };
    crate::ffi::construct::record_given_json(py, meta(py)?, obj, text)
}

/// `__dict__` of the Structs (a property of `core._base._Model`): the instance's own dict
/// (made empty when it has none, as the default attribute does), never a shared record:
/// one is first replaced by a record of its own holding the same names, so that what is
/// done to the dict is done to this instance alone.
#[pyfunction]
fn instance_dict<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let meta = meta(py)?;
    let d = crate::ffi::construct::get_dict(obj)?;
    if !d.get_type().is(meta.shared.bind(py)) {
        return Ok(d);
    }
    let own = crate::ffi::construct::with_given(py, meta, &meta.extras, &d.getattr(pyo3::intern!(py, "given"))?)?;
    crate::ffi::construct::set_dict(obj, &own)?;
    Ok(own)
}

/// `obj.__dict__ = value` (the setter of `instance_dict`'s property).
#[pyfunction]
fn set_instance_dict(obj: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    crate::ffi::construct::set_dict(obj, value)
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
        if !crate::ffi::construct::passes_value(py, check, &v) {
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
    crate::ffi::construct::has_vectorcall(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(struct_meta, m)?)?;
    m.add_function(wrap_pyfunction!(struct_meta_vectorcall, m)?)?;
    m.add_function(wrap_pyfunction!(check_pointers, m)?)?;
    m.add_function(wrap_pyfunction!(record_given, m)?)?;
    m.add_function(wrap_pyfunction!(record_given_json, m)?)?;
    m.add_function(wrap_pyfunction!(instance_dict, m)?)?;
    m.add_function(wrap_pyfunction!(set_instance_dict, m)?)?;
    Ok(())
}
