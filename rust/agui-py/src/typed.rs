//! A whole-log replay's messages handed to Python as the `Message` Structs themselves,
//! built from the reducer's messages without plain values and msgspec's conversion of
//! them between. Only what that conversion would keep exactly as it is gets built here:
//! every member a declared field (by its wire name) whose value passes construction's own
//! check of the field as it is (a member at its default left to it), nested objects only
//! where the field holds one Struct class (`toolCalls`, `function`). Anything else (extras,
//! a union of part classes, an invalid value, an unknown role) makes the whole list plain values
//! again, which `stream.py` converts as before, so results and errors are the same either
//! way.

use agui_core::limits::MAX_DEPTH_CAP;
use agui_core::stream::{Fields, Member, Message};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyString, PyTuple, PyType};
use serde_json::{Map, Value};

use std::rc::Rc;

use crate::construct::{schema_plan, Check, Plan};

/// The message classes by their role (`stream.py` sets them once at import).
static MESSAGE_TYPES: PyOnceLock<Vec<(String, Py<PyType>)>> = PyOnceLock::new();

/// set_message_types(classes): the members of the `Message` union, each a tagged Struct
/// of ours. Set once; later calls are ignored.
#[pyfunction]
fn set_message_types(py: Python<'_>, classes: Vec<Bound<'_, PyType>>) -> PyResult<()> {
    let mut types = Vec::with_capacity(classes.len());
    for cls in classes {
        let plan = schema_plan(py, &cls)?.ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("set_message_types: not a Struct of agui_fast.core"))?;
        let Some((_, tag, _)) = &plan.tag else {
            return Err(pyo3::exceptions::PyTypeError::new_err("set_message_types: not a tagged Struct"));
        };
        types.push((tag.bind(py).to_str()?.to_owned(), cls.unbind()));
    }
    let _ = MESSAGE_TYPES.set(py, types);
    Ok(())
}

/// An object to build: one the reducer built, or a JSON object.
#[derive(Clone, Copy)]
enum Node<'a> {
    Built(&'a Fields),
    Json(&'a Map<String, Value>),
}

/// A member's value, as either kind of object holds it.
enum Item<'a> {
    Value(&'a Value),
    Static(&'static str),
    Object(&'a Fields),
    Objects(&'a [Fields]),
}

impl<'a> Node<'a> {
    fn each(self, mut f: impl FnMut(&'a str, Item<'a>) -> Option<()>) -> Option<()> {
        match self {
            Node::Built(fields) => fields.members().try_for_each(|(k, m)| {
                f(
                    k,
                    match m {
                        Member::Value(v) => Item::Value(v),
                        Member::Static(s) => Item::Static(s),
                        Member::Object(o) => Item::Object(o),
                        Member::Objects(list) => Item::Objects(list),
                    },
                )
            }),
            Node::Json(map) => map.iter().try_for_each(|(k, v)| f(k, Item::Value(v))),
        }
    }
}

/// The messages as a list of Structs; `None`: not all of them could be built so (see
/// the module's docs), or the types are not set.
pub(crate) fn typed_messages<'py>(py: Python<'py>, messages: &[Message]) -> Option<Bound<'py, PyList>> {
    let types = MESSAGE_TYPES.get(py)?;
    let mut plans = Plans(Vec::new(), Vec::new());
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        let node = match m {
            Message::Built(f) => Node::Built(f),
            Message::Json(Value::Object(map)) => Node::Json(map),
            Message::Json(_) => return None,
        };
        let role = match node {
            Node::Built(f) => match f.members().find(|(k, _)| *k == "role")?.1 {
                Member::Value(Value::String(s)) => s.as_str(),
                _ => return None,
            },
            Node::Json(map) => map.get("role")?.as_str()?,
        };
        let cls = types.iter().find(|(tag, _)| tag == role)?.1.bind(py);
        out.push(build(py, &mut plans, cls, node, 0)?);
    }
    PyList::new(py, out).ok()
}

/// Nesting of built objects past which the plain path decides (messages nest two).
const MAX_NEST: usize = 8;

/// The construction plans of the classes met so far in one hand-over (a few), and the
/// keyword names of the instances built (a tuple for msgspec's constructor, kept by class
/// and fields: most messages of a log have the same members).
struct Plans(Vec<(usize, Rc<Plan>)>, Vec<(usize, Vec<usize>, Py<PyTuple>)>);

impl Plans {
    /// The names of fields `fields` of `cls` (`plan`) as a tuple.
    fn names<'py>(&mut self, cls: &Bound<'py, PyType>, plan: &Plan, fields: &[usize]) -> PyResult<Bound<'py, PyTuple>> {
        let (py, key) = (cls.py(), cls.as_ptr() as usize);
        if let Some((.., names)) = self.1.iter().find(|(k, f, _)| *k == key && f[..] == *fields) {
            return Ok(names.bind(py).clone());
        }
        let names = PyTuple::new(py, fields.iter().map(|&i| plan.names[i].bind(py)))?;
        // (a few shapes a class: more are made each time)
        if self.1.len() < 64 {
            self.1.push((key, fields.to_vec(), names.clone().unbind()));
        }
        Ok(names)
    }

    fn of(&mut self, cls: &Bound<'_, PyType>) -> Option<Rc<Plan>> {
        let key = cls.as_ptr() as usize;
        if let Some((_, plan)) = self.0.iter().find(|(k, _)| *k == key) {
            return Some(plan.clone());
        }
        let plan = schema_plan(cls.py(), cls).ok()??;
        self.0.push((key, plan.clone()));
        Some(plan)
    }
}

/// One object as an instance of `cls`, or `None` (see the module's docs).
fn build<'py>(py: Python<'py>, plans: &mut Plans, cls: &Bound<'py, PyType>, node: Node<'_>, depth: usize) -> Option<Bound<'py, PyAny>> {
    if depth > MAX_NEST {
        return None;
    }
    let plan = plans.of(cls)?;
    let tag = plan.tag.as_ref().zip(plan.tag_text.as_deref());
    let (mut fields, mut values) = (Vec::with_capacity(8), Vec::with_capacity(8));
    node.each(|key, item| {
        if let Some(((_, tag, _), tag_field)) = tag {
            if key == tag_field {
                // (the class was chosen by this very member)
                return match item {
                    Item::Value(Value::String(s)) if tag.bind(py).to_str().ok()? == s => Some(()),
                    _ => None,
                };
            }
        }
        let i = plan.wire_texts.iter().position(|w| w == key)?;
        let value = match item {
            Item::Value(v) => match (one_class(py, &plan, i), v) {
                (Some(Shape::One(c)), Value::Object(map)) => build(py, plans, &c, Node::Json(map), depth + 1)?,
                (Some(Shape::List(c)), Value::Array(items)) => {
                    let built = items.iter().map(|v| match v {
                        Value::Object(map) => build(py, plans, &c, Node::Json(map), depth + 1),
                        _ => None,
                    });
                    PyList::new(py, built.collect::<Option<Vec<_>>>()?).ok()?.into_any()
                }
                // (a union of classes, or a value no Struct field takes: the plain path's)
                (_, Value::Object(_) | Value::Array(_)) if plan.nested[i] => return None,
                (_, Value::String(s)) => crate::patch::stream_str(py, s).ok()?,
                (_, v) => crate::patch::stream_value(py, v, MAX_DEPTH_CAP).ok()?,
            },
            // (a literal at its default, `"function"`, is left to it: see below)
            Item::Static(s) if plan.defaults[i].as_ref().and_then(|d| d.bind(py).cast::<PyString>().ok()?.to_str().ok().map(|d| d == s)) == Some(true) => {
                return Some(());
            }
            Item::Static(s) => PyString::new(py, s).into_any(),
            Item::Object(f) => match one_class(py, &plan, i)? {
                Shape::One(c) => build(py, plans, &c, Node::Built(f), depth + 1)?,
                Shape::List(_) => return None,
            },
            Item::Objects(list) => match one_class(py, &plan, i)? {
                Shape::List(c) => {
                    let built = list.iter().map(|f| build(py, plans, &c, Node::Built(f), depth + 1));
                    PyList::new(py, built.collect::<Option<Vec<_>>>()?).ok()?.into_any()
                }
                Shape::One(_) => return None,
            },
        };
        // A member at its default is left to it: `msgspec.convert` records no member, so
        // the instance is the same (a `null` where the field has no default is refused
        // by the check below).
        if !at_default(&plan, i, &value) {
            fields.push(i);
            values.push(value);
        }
        Some(())
    })?;
    let names = plans.names(cls, &plan, &fields).ok()?;
    crate::ffi::construct::build_exact(py, cls, &plan, &fields, &names, &values).ok()?
}

/// Where field `i` holds instances of one Struct class: one, or a list of them.
enum Shape<'py> {
    One(Bound<'py, PyType>),
    List(Bound<'py, PyType>),
}

fn one_class<'py>(py: Python<'py>, plan: &Plan, i: usize) -> Option<Shape<'py>> {
    let class = |c: &Check| match c {
        Check::Structs(classes) if classes.len() == 1 => {
            let c = plan.classes.iter().find(|k| k.as_ptr() as usize == classes[0])?;
            c.bind(py).clone().cast_into::<PyType>().ok()
        }
        _ => None,
    };
    let check = match &plan.checks[i] {
        Check::Optional(inner) => &**inner,
        c => c,
    };
    match check {
        Check::List(item, _) => class(item).map(Shape::List),
        c => class(c).map(Shape::One),
    }
}

/// Is `value` field `i`'s default (None, or a literal str)?
fn at_default(plan: &Plan, i: usize, value: &Bound<'_, PyAny>) -> bool {
    let Some(d) = &plan.defaults[i] else { return false };
    let d = d.bind(value.py());
    value.is(d) || (d.is_exact_instance_of::<PyString>() && value.is_exact_instance_of::<PyString>() && value.eq(d).unwrap_or(false))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_message_types, m)?)
}
