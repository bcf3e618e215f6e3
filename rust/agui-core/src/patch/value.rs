//! The engine's document implementation for `serde_json::Value`.

use std::borrow::Cow;
use std::convert::Infallible;

use serde_json::{Number, Value};

use super::engine::{self, At, Cursor, Document, Fail, Kind, MemberEq, Node, PatchOp, Shape, R};
use super::{existing_index, missing_member_reason, ptr_err, scalar_step_reason, too_deep, type_name, Dialect, Operation, Options};

impl Node for &Value {
    type Key = str;
    type Error = Infallible;

    fn kind(&self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }
    fn type_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(type_name(self))
    }
    fn len(&self) -> usize {
        match self {
            Value::Array(a) => a.len(),
            Value::Object(m) => m.len(),
            _ => 0,
        }
    }
    fn member(&self, key: &str) -> R<Option<Self>, Infallible> {
        Ok(match self {
            Value::Object(m) => m.get(key),
            _ => None,
        })
    }
    fn element(&self, index: usize) -> R<Self, Infallible> {
        match self {
            Value::Array(a) if index < a.len() => Ok(&a[index]),
            _ => Err(ptr_err("array index out of range").into()),
        }
    }
    fn scalar_eq(&self, other: &Self, dialect: Dialect) -> R<bool, Infallible> {
        Ok(match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Number(x), Value::Number(y)) => number_eq(x, y, dialect),
            (Value::String(x), Value::String(y)) => x == y,
            _ => false,
        })
    }
    fn members_in(&self, other: &Self, eq: &mut MemberEq<'_, Self>) -> R<bool, Infallible> {
        let (Value::Object(x), Value::Object(y)) = (self, other) else { return Ok(false) };
        if std::ptr::eq(x, y) {
            // The same object (a walk over its members, e.g. `deeper_than`): no lookups.
            for v in x.values() {
                if !eq(&v, &v)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        for (k, v) in x {
            match y.get(k) {
                Some(w) if eq(&v, &w)? => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }
}

fn integer_text(n: &Number) -> Option<Cow<'_, str>> {
    if n.is_i64() || n.is_u64() {
        return None;
    }
    let s = n.as_str();
    let digits = s.strip_prefix('-').unwrap_or(s);
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| {
        // "-0" and leading zeros cannot come from JSON text except "-0"; normalise it.
        if digits.bytes().all(|b| b == b'0') {
            Cow::Borrowed("0")
        } else {
            Cow::Borrowed(s)
        }
    })
}

/// An integer (i64, u64 or arbitrary size) as exact decimal text.
fn int_decimal(n: &Number) -> Option<Cow<'_, str>> {
    if let Some(i) = n.as_i64() {
        return Some(Cow::Owned(i.to_string()));
    }
    if let Some(u) = n.as_u64() {
        return Some(Cow::Owned(u.to_string()));
    }
    integer_text(n)
}

/// Numbers are equal when mathematically equal (`1 == 1.0`; `2**53 + 1 != 2.0**53`;
/// big integers exactly), as Python's `==` on `int`/`float`. In the fast-json-patch
/// dialect they compare as JavaScript does, as doubles.
pub fn number_eq(a: &Number, b: &Number, dialect: Dialect) -> bool {
    if dialect == Dialect::FastJsonPatch {
        return matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y);
    }
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x == y;
    }
    match (int_decimal(a), int_decimal(b)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if x == y),
        (Some(int), None) => float_equals_int(b, &int),
        (None, Some(int)) => float_equals_int(a, &int),
    }
}

/// Exact comparison of a float with an integer given as decimal text: the float must be
/// integral, and its exact decimal expansion equal to the integer's.
fn float_equals_int(f: &Number, int: &str) -> bool {
    let Some(x) = f.as_f64() else { return false };
    if !x.is_finite() || x.fract() != 0.0 {
        return false;
    }
    let exact = format!("{x:.0}"); // Rust prints the exact value of a double
    let exact = if exact == "-0" { "0".to_string() } else { exact };
    exact == int
}

impl PatchOp for Operation {
    type Token = String;
    fn kind(&self) -> super::OpKind {
        self.kind
    }
    fn path(&self) -> &[String] {
        &self.path.tokens
    }
    fn from(&self) -> &[String] {
        self.from.as_ref().map_or(&[], |p| &p.tokens)
    }
    fn path_text(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.path.text)
    }
}

fn step_mut<'a>(v: &'a mut Value, token: &str, dialect: Dialect) -> Result<&'a mut Value, super::PatchError> {
    match v {
        Value::Object(m) => m.get_mut(token).ok_or_else(|| ptr_err(missing_member_reason(token))),
        Value::Array(a) => {
            let i = existing_index(token, a.len(), dialect)?;
            Ok(&mut a[i])
        }
        other => Err(ptr_err(scalar_step_reason(token, type_name(other)))),
    }
}

fn resolve_mut<'a>(doc: &'a mut Value, tokens: &[String], dialect: Dialect) -> Result<&'a mut Value, super::PatchError> {
    tokens.iter().try_fold(doc, |v, t| step_mut(v, t, dialect))
}

/// Check that `v` placed at depth `depth` stays within `opts.max_depth`.
pub(super) fn check_depth(v: &Value, depth: usize, opts: &Options) -> Result<(), super::PatchError> {
    let budget = opts.max_depth.checked_sub(depth).ok_or_else(|| too_deep(opts.max_depth))?;
    match engine::deeper_than(&v, budget) {
        Ok(false) => Ok(()),
        Ok(true) => Err(too_deep(opts.max_depth)),
        Err(Fail::Patch(e)) => Err(e),
        Err(Fail::Doc(never)) => match never {},
    }
}

/// A `serde_json::Value` being patched; `values` holds the operations' values when they
/// are moved out instead of cloned.
pub(super) struct ValueDoc<'d> {
    pub root: &'d mut Value,
    pub values: Option<Vec<Value>>,
}

impl<'d> Document for ValueDoc<'d> {
    type Token = String;
    type Value = Value;
    type Error = Infallible;
    type Op = Operation;
    type Anchor = At;
    type Node<'a>
        = &'a Value
    where
        Self: 'a;
    type Cursor<'a>
        = &'a mut Value
    where
        Self: 'a;

    fn root(&self) -> &Value {
        self.root
    }
    fn open(&mut self, path: &[String], opts: &Options) -> R<&mut Value, Infallible> {
        Ok(resolve_mut(self.root, path, opts.dialect)?)
    }
    fn reopen<'a>(&'a mut self, at: &At, ops: &[Operation], opts: &Options) -> Option<(&'a mut Value, String)> {
        let op = ops.get(at.op)?;
        let tokens = if at.from { op.from() } else { op.path() };
        let (last, parent) = tokens.split_last()?;
        resolve_mut(self.root, parent, opts.dialect).ok().map(|c| (c, last.clone()))
    }
    fn set_root(&mut self, v: Value) -> Value {
        std::mem::replace(self.root, v)
    }
    fn null(&self) -> Value {
        Value::Null
    }
    fn needs_undo(&self) -> bool {
        true
    }
    fn op_value(&mut self, i: usize, op: &Operation, depth: usize, opts: &Options) -> R<Value, Infallible> {
        let v = match &mut self.values {
            Some(values) => std::mem::take(&mut values[i]),
            None => op.value.clone(),
        };
        check_depth(&v, depth, opts)?;
        Ok(v)
    }
    fn op_node(op: &Operation) -> Option<&Value> {
        Some(&op.value)
    }
    fn copy_of(&mut self, from: &[String], depth: usize, opts: &Options) -> R<Value, Infallible> {
        let v = engine::resolve(&*self.root, from, opts.dialect)?;
        check_depth(v, depth, opts)?;
        Ok(v.clone())
    }
    fn check_depth(&self, v: &Value, depth: usize, opts: &Options) -> R<(), Infallible> {
        Ok(check_depth(v, depth, opts)?)
    }
}

impl Cursor for &mut Value {
    type Token = String;
    type Value = Value;
    type Error = Infallible;
    type Anchor = At;

    fn shape(&self) -> Shape {
        match &**self {
            Value::Object(_) => Shape::Object,
            Value::Array(a) => Shape::Array(a.len()),
            _ => Shape::Scalar,
        }
    }
    fn type_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(type_name(self))
    }
    fn anchor(&self, at: At, _key: &String) -> At {
        at
    }
    fn obj_set(&mut self, key: &String, v: Value, _want_old: bool) -> R<Option<Value>, Infallible> {
        // An existing member keeps its position.
        Ok(match &mut **self {
            Value::Object(m) => m.insert(key.clone(), v),
            _ => None,
        })
    }
    fn obj_replace(&mut self, key: &String, v: Value) -> R<Option<Value>, Infallible> {
        Ok(match &mut **self {
            Value::Object(m) => m.get_mut(key.as_str()).map(|slot| std::mem::replace(slot, v)),
            _ => None,
        })
    }
    fn obj_remove(&mut self, key: &String, want_pos: bool) -> R<Option<(Value, usize)>, Infallible> {
        let Value::Object(m) = &mut **self else { return Ok(None) };
        // The position restores member order on rollback (serde_json's map does not give
        // it; the scan costs no more than the shift that `shift_remove` does anyway).
        let pos = if want_pos { m.keys().position(|k| k == key) } else { Some(0) };
        Ok(pos.and_then(|pos| m.shift_remove(key.as_str()).map(|v| (v, pos))))
    }
    fn obj_reinsert(&mut self, key: &String, pos: usize, v: Value) -> R<(), Infallible> {
        if let Value::Object(m) = &mut **self {
            m.shift_insert(pos.min(m.len()), key.clone(), v);
        }
        Ok(())
    }
    fn arr_insert(&mut self, index: usize, v: Value) -> R<(), Infallible> {
        if let Value::Array(a) = &mut **self {
            a.insert(index, v);
        }
        Ok(())
    }
    fn arr_remove(&mut self, index: usize) -> R<Value, Infallible> {
        match &mut **self {
            Value::Array(a) => Ok(a.remove(index)),
            _ => Ok(Value::Null),
        }
    }
    fn arr_replace(&mut self, index: usize, v: Value, _want_old: bool) -> R<Option<Value>, Infallible> {
        Ok(match &mut **self {
            Value::Array(a) => Some(std::mem::replace(&mut a[index], v)),
            _ => None,
        })
    }
}
