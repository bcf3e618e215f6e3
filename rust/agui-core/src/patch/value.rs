//! The engine's document implementation for owned JSON trees patched in place:
//! `serde_json::Value` and the core's [`Tree`](super::tree::Tree), through one trait
//! ([`OwnedJson`]) so that both share the same member-order bookkeeping, number equality
//! and limits.

use std::borrow::Cow;
use std::convert::Infallible;

use serde_json::{Number, Value};

use super::engine::{self, At, Budget, Cursor, Document, Fail, Kind, MemberEq, Node, PatchOp, Shape, R};
use super::{existing_index, missing_member_reason, ptr_err, scalar_step_reason, too_deep, Dialect, OpKind, Operation, Options};

/// A JSON number as the engine compares it: an integer within `i64`, any other integer as
/// its exact decimal text (`-?[1-9][0-9]*`), or another number as the double it spells
/// (past `f64`'s range, e.g. `1e400`, an infinity, as Python's `float` and JavaScript
/// read it).
#[derive(Debug, Clone, Copy)]
pub enum Num<'a> {
    Int(i64),
    Big(&'a str),
    Float(f64),
}

impl Num<'_> {
    /// The number as JavaScript holds it: the nearest double, an infinity past the range.
    pub fn js(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            // (`-?[1-9][0-9]*` always parses; an integer past the range is an infinity)
            Num::Big(t) => t.parse::<f64>().unwrap_or(f64::NAN),
            Num::Float(f) => f,
        }
    }
    /// An integer as exact decimal text.
    fn int_decimal(self) -> Option<Cow<'static, str>> {
        match self {
            Num::Int(i) => Some(Cow::Owned(i.to_string())),
            _ => None,
        }
    }
}

/// A `serde_json::Number` as the engine compares it.
pub fn num_of(n: &Number) -> Num<'_> {
    if let Some(i) = n.as_i64() {
        return Num::Int(i);
    }
    let s = n.as_str();
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        // (JSON text has no leading zeros; "-0" is an i64)
        return Num::Big(s);
    }
    // (JSON number text always parses; `as_f64` gives `None` past the range)
    Num::Float(s.parse::<f64>().unwrap_or(f64::NAN))
}

/// Numbers are equal when mathematically equal (`1 == 1.0`; `2**53 + 1 != 2.0**53`;
/// big integers exactly; an infinity only to an infinity of its sign), as Python's `==`
/// on `int`/`float`. In the fast-json-patch dialect they compare as JavaScript's `===`
/// does, as the doubles it reads them as (`10**400`, `10**401` and `1e400` are all
/// `Infinity`). The one rule for every document, the binding's Python values included.
pub fn number_eq(a: &Number, b: &Number, dialect: Dialect) -> bool {
    num_eq(num_of(a), num_of(b), dialect)
}

/// [`number_eq`] of numbers in the engine's form.
pub fn num_eq(a: Num<'_>, b: Num<'_>, dialect: Dialect) -> bool {
    if dialect == Dialect::FastJsonPatch {
        return a.js() == b.js();
    }
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x == y,
        (Num::Big(x), Num::Big(y)) => x == y,
        (Num::Int(_), Num::Big(_)) | (Num::Big(_), Num::Int(_)) => false,
        (Num::Float(x), Num::Float(y)) => x == y,
        (Num::Float(f), Num::Big(int)) | (Num::Big(int), Num::Float(f)) => float_equals_int(f, int),
        (Num::Float(f), i @ Num::Int(_)) | (i @ Num::Int(_), Num::Float(f)) => i.int_decimal().is_some_and(|int| float_equals_int(f, &int)),
    }
}

/// Exact comparison of a float with an integer given as decimal text: the float must be
/// integral, and its exact decimal expansion equal to the integer's.
fn float_equals_int(x: f64, int: &str) -> bool {
    if !x.is_finite() || x.fract() != 0.0 {
        return false;
    }
    let exact = format!("{x:.0}"); // Rust prints the exact value of a double
    let exact = if exact == "-0" { "0".to_string() } else { exact };
    exact == int
}

/// An object's members as the engine writes them (an insertion-ordered hash map).
pub trait Members<V>: Default {
    /// The map's own key type (moved back in when members are reordered).
    type Key;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn get(&self, k: &str) -> Option<&V>;
    fn get_mut(&mut self, k: &str) -> Option<&mut V>;
    fn contains_key(&self, k: &str) -> bool {
        self.get(k).is_some()
    }
    /// Set `k` (a new member goes last, an existing one keeps its place).
    fn insert(&mut self, k: &str, v: V) -> Option<V>;
    fn insert_entry(&mut self, k: Self::Key, v: V);
    fn shift_remove(&mut self, k: &str) -> Option<V>;
    fn swap_remove(&mut self, k: &str) -> Option<V>;
    fn swap_remove_entry(&mut self, k: &str) -> Option<(Self::Key, V)>;
    fn shift_insert(&mut self, pos: usize, k: &str, v: V);
    fn position(&self, k: &str) -> Option<usize>;
    fn last_key_is(&self, k: &str) -> bool;
    fn key_list(&self) -> Vec<String>;
    fn each<'s>(&'s self) -> impl Iterator<Item = (&'s str, &'s V)>
    where
        V: 's;
    fn into_entries(self) -> impl Iterator<Item = (Self::Key, V)>;
}

/// An owned JSON tree the engine patches in place (`serde_json::Value`, the core's
/// [`Tree`](super::tree::Tree)). Operations carry `serde_json::Value`s: a tree takes
/// them over with [`from_json`](Self::from_json).
pub trait OwnedJson: Sized + Default + Clone {
    type Map: Members<Self>;
    /// An operation as this tree's document reads it.
    type Op: PatchOp<Token = String>;
    fn kind(&self) -> Kind;
    fn type_name(&self) -> &'static str;
    fn map(&self) -> Option<&Self::Map>;
    fn map_mut(&mut self) -> Option<&mut Self::Map>;
    fn array(&self) -> Option<&Vec<Self>>;
    fn array_mut(&mut self) -> Option<&mut Vec<Self>>;
    fn bool(&self) -> Option<bool>;
    fn str(&self) -> Option<&str>;
    fn num(&self) -> Option<Num<'_>>;
    /// The bytes of the strings the value itself holds (a string's text, an object's keys).
    fn own_bytes(&self) -> usize {
        match self.kind() {
            Kind::String => self.str().map_or(0, str::len),
            Kind::Object => self.map().map_or(0, |m| m.each().map(|(k, _)| k.len()).sum()),
            _ => 0,
        }
    }
    /// A parsed JSON value as this tree.
    fn from_json(v: Value) -> Self;
    /// The operations of a patch as this tree's document reads them.
    fn ops(ops: Vec<Operation>) -> Vec<Self::Op>;
    fn operation(op: &Self::Op) -> &Operation;
    fn operation_mut(op: &mut Self::Op) -> &mut Operation;
    /// The value of a `test` operation.
    fn test_value(op: &Self::Op) -> &Self;
}

impl Members<Value> for serde_json::Map<String, Value> {
    type Key = String;
    fn len(&self) -> usize {
        serde_json::Map::len(self)
    }
    fn get(&self, k: &str) -> Option<&Value> {
        serde_json::Map::get(self, k)
    }
    fn get_mut(&mut self, k: &str) -> Option<&mut Value> {
        serde_json::Map::get_mut(self, k)
    }
    fn contains_key(&self, k: &str) -> bool {
        serde_json::Map::contains_key(self, k)
    }
    fn insert(&mut self, k: &str, v: Value) -> Option<Value> {
        serde_json::Map::insert(self, k.to_string(), v)
    }
    fn insert_entry(&mut self, k: String, v: Value) {
        serde_json::Map::insert(self, k, v);
    }
    fn shift_remove(&mut self, k: &str) -> Option<Value> {
        serde_json::Map::shift_remove(self, k)
    }
    fn swap_remove(&mut self, k: &str) -> Option<Value> {
        serde_json::Map::swap_remove(self, k)
    }
    fn swap_remove_entry(&mut self, k: &str) -> Option<(String, Value)> {
        serde_json::Map::swap_remove_entry(self, k)
    }
    fn shift_insert(&mut self, pos: usize, k: &str, v: Value) {
        serde_json::Map::shift_insert(self, pos, k.to_string(), v);
    }
    fn position(&self, k: &str) -> Option<usize> {
        self.keys().position(|x| x == k)
    }
    fn last_key_is(&self, k: &str) -> bool {
        self.keys().next_back().is_some_and(|x| x == k)
    }
    fn key_list(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
    fn each<'s>(&'s self) -> impl Iterator<Item = (&'s str, &'s Value)>
    where
        Value: 's,
    {
        self.iter().map(|(k, v)| (k.as_str(), v))
    }
    fn into_entries(self) -> impl Iterator<Item = (String, Value)> {
        self.into_iter()
    }
}

impl OwnedJson for Value {
    type Map = serde_json::Map<String, Value>;
    type Op = Operation;
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
    fn type_name(&self) -> &'static str {
        super::type_name(self)
    }
    fn map(&self) -> Option<&Self::Map> {
        self.as_object()
    }
    fn map_mut(&mut self) -> Option<&mut Self::Map> {
        self.as_object_mut()
    }
    fn array(&self) -> Option<&Vec<Value>> {
        self.as_array()
    }
    fn array_mut(&mut self) -> Option<&mut Vec<Value>> {
        self.as_array_mut()
    }
    fn bool(&self) -> Option<bool> {
        self.as_bool()
    }
    fn str(&self) -> Option<&str> {
        self.as_str()
    }
    fn num(&self) -> Option<Num<'_>> {
        match self {
            Value::Number(n) => Some(num_of(n)),
            _ => None,
        }
    }
    fn from_json(v: Value) -> Self {
        v
    }
    fn ops(ops: Vec<Operation>) -> Vec<Operation> {
        ops
    }
    fn operation(op: &Operation) -> &Operation {
        op
    }
    fn operation_mut(op: &mut Operation) -> &mut Operation {
        op
    }
    fn test_value(op: &Operation) -> &Value {
        &op.value
    }
}

impl<V: OwnedJson> Node for &V {
    type Key = str;
    type Error = Infallible;

    fn kind(&self) -> Kind {
        OwnedJson::kind(*self)
    }
    fn type_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(OwnedJson::type_name(*self))
    }
    fn len(&self) -> usize {
        match (self.array(), self.map()) {
            (Some(a), _) => a.len(),
            (_, Some(m)) => m.len(),
            _ => 0,
        }
    }
    fn member(&self, key: &str) -> R<Option<Self>, Infallible> {
        Ok(self.map().and_then(|m| m.get(key)))
    }
    fn element(&self, index: usize) -> R<Self, Infallible> {
        match self.array() {
            Some(a) if index < a.len() => Ok(&a[index]),
            _ => Err(ptr_err("array index out of range").into()),
        }
    }
    fn scalar_eq(&self, other: &Self, dialect: Dialect) -> R<bool, Infallible> {
        Ok(match (OwnedJson::kind(*self), OwnedJson::kind(*other)) {
            (Kind::Null, Kind::Null) => true,
            (Kind::Bool, Kind::Bool) => self.bool() == other.bool(),
            (Kind::Number, Kind::Number) => match (self.num(), other.num()) {
                (Some(x), Some(y)) => num_eq(x, y, dialect),
                _ => false,
            },
            (Kind::String, Kind::String) => self.str() == other.str(),
            _ => false,
        })
    }
    fn members_in(&self, other: &Self, eq: &mut MemberEq<'_, Self>) -> R<bool, Infallible> {
        let (Some(x), Some(y)) = (self.map(), other.map()) else { return Ok(false) };
        if std::ptr::eq(x, y) {
            // The same object (a walk over its members, e.g. `deeper_than`): no lookups.
            for (_, v) in x.each() {
                if !eq(&v, &v)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        for (k, v) in x.each() {
            match y.get(k) {
                Some(w) if eq(&v, &w)? => {}
                _ => return Ok(false),
            }
        }
        Ok(true)
    }
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

fn step_mut<'a, V: OwnedJson>(v: &'a mut V, token: &str, dialect: Dialect) -> Result<&'a mut V, super::PatchError> {
    if v.map().is_some() {
        let m = v.map_mut().expect("an object");
        return m.get_mut(token).ok_or_else(|| ptr_err(missing_member_reason(token)));
    }
    let name = OwnedJson::type_name(v);
    match v.array_mut() {
        Some(a) => {
            let i = existing_index(token, a.len(), dialect)?;
            Ok(&mut a[i])
        }
        None => Err(ptr_err(scalar_step_reason(token, name))),
    }
}

/// Resolve `tokens`; with `canon`, also write the path in canonical form (array indices in
/// decimal), so that two spellings of one location (`01` and `1` in the fast-json-patch
/// dialect) name one order record.
fn resolve_mut<'a, V: OwnedJson>(doc: &'a mut V, tokens: &[String], dialect: Dialect, mut canon: Option<&mut Vec<String>>) -> Result<&'a mut V, super::PatchError> {
    tokens.iter().try_fold(doc, |v, t| {
        if let Some(c) = canon.as_deref_mut() {
            match v.array() {
                Some(a) => c.push(existing_index(t, a.len(), dialect)?.to_string()),
                None => c.push(t.clone()),
            }
        }
        step_mut(v, t, dialect)
    })
}

/// Check that `v` placed at depth `depth` stays within `opts.max_depth`.
pub(super) fn check_depth<V: OwnedJson>(v: &V, depth: usize, opts: &Options) -> Result<(), super::PatchError> {
    let budget = opts.max_depth.checked_sub(depth).ok_or_else(|| too_deep(opts.max_depth))?;
    match engine::deeper_than(&v, budget) {
        Ok(false) => Ok(()),
        Ok(true) => Err(too_deep(opts.max_depth)),
        Err(Fail::Patch(e)) => Err(e),
        Err(Fail::Doc(never)) => match never {},
    }
}

/// Charge `v`, placed at depth `depth`, to `budget` (strings and keys by their length: an
/// owned tree copies them), checking its nesting in the same walk.
fn charged<V: OwnedJson>(v: &V, depth: usize, opts: &Options, budget: &mut Budget) -> Result<(), super::PatchError> {
    let left = opts.max_depth.checked_sub(depth).ok_or_else(|| too_deep(opts.max_depth))?;
    match engine::charge_value(&v, left, opts.max_depth, budget, &|v: &&V| v.own_bytes()) {
        Ok(()) => Ok(()),
        Err(Fail::Patch(e)) => Err(e),
        Err(Fail::Doc(never)) => match never {},
    }
}

/// Entries `shift_remove` may move in one patch before removes switch to `swap_remove`
/// with an order record: small patches keep the exact, cheapest path; a patch with many
/// removes on a large object stays linear (tests/test_props_linear.py).
const SHIFT_BUDGET: usize = 1 << 16;

/// Order records active at once: each tracked operation scans them, so past this the
/// oldest closes (its reorder costs no more than the snapshot that opened it).
const MAX_ACTIVE: usize = 16;

/// Marks a removal position that is an order-record token: `TOKEN | record << 1 | first`.
const TOKEN: usize = 1 << (usize::BITS - 1);

/// The member order of one object whose members were removed with `swap_remove` (which
/// moves the last member into the hole): the keys in order when the first was removed,
/// and the keys set since (a new member goes last).
struct Record {
    /// Canonical path of the object while the record is active.
    path: Vec<String>,
    snapshot: Vec<String>,
    added: Vec<String>,
}

/// Per-patch order bookkeeping of a [`ValueDoc`]. Invariant: an active record's object
/// is at its `path`; whatever could move it (a mutation of an ancestor's member on its
/// way, an array shift on its way is re-keyed) closes the record first, putting the
/// object in its order. The order is restored at the end of a patch, before a `copy` reads
/// it, and on rollback when the record's first removal is undone (the object then holds
/// exactly the snapshot's members, so reordering by the snapshot gives the exact order
/// of before the patch).
pub(super) struct Order {
    /// Entries moved by `shift_remove` in this patch.
    work: usize,
    pub(super) budget: usize,
    pub(super) max_active: usize,
    records: Vec<Record>,
    active: Vec<usize>,
    rolling_back: bool,
}

impl Default for Order {
    fn default() -> Self {
        Order { work: 0, budget: SHIFT_BUDGET, max_active: MAX_ACTIVE, records: Vec::new(), active: Vec::new(), rolling_back: false }
    }
}

impl Order {
    fn tracking(&self) -> bool {
        !self.rolling_back && (self.work > self.budget || !self.active.is_empty())
    }
    fn reset(&mut self) {
        self.work = 0;
        self.records.clear();
        self.active.clear();
        self.rolling_back = false;
    }
    /// Put the active records' objects in order and forget the records.
    fn finish<V: OwnedJson>(&mut self, root: &mut V) {
        self.settle(root, &[], true);
        self.reset();
    }
    /// Records whose object is `base` (at canonical path `under`) or inside it: in order,
    /// and (when `close`) no longer active.
    fn settle<V: OwnedJson>(&mut self, base: &mut V, under: &[String], close: bool) {
        let records = &self.records;
        self.active.retain(|&r| {
            let rec = &records[r];
            if !rec.path.starts_with(under) {
                return true;
            }
            if let Ok(v) = resolve_mut(base, &rec.path[under.len()..], Dialect::Rfc6902, None) {
                reorder(v, &rec.snapshot, &rec.added);
            }
            !close
        });
    }
}

/// Rebuild an object's member order: the members of `first` in its order, then those of
/// `late` in its order (a key listed twice goes where it was listed last; a key in `late`
/// is not placed by `first`). O(members + keys).
fn reorder<V: OwnedJson>(v: &mut V, first: &[String], late: &[String]) {
    let Some(m) = v.map_mut() else { return };
    let mut old = std::mem::take(m);
    let last: std::collections::HashMap<&str, usize> = late.iter().enumerate().map(|(i, k)| (k.as_str(), i)).collect();
    for k in first.iter().filter(|k| !last.contains_key(k.as_str())) {
        if let Some((k, v)) = old.swap_remove_entry(k) {
            m.insert_entry(k, v);
        }
    }
    for (i, k) in late.iter().enumerate() {
        if last[k.as_str()] == i {
            if let Some((k, v)) = old.swap_remove_entry(k) {
                m.insert_entry(k, v);
            }
        }
    }
    // Nothing is left unless the bookkeeping is wrong; then keep the members anyway.
    for (k, v) in old.into_entries() {
        m.insert_entry(k, v);
    }
}

/// An owned tree being patched; `values` holds the operations' values when they are
/// moved out instead of cloned.
pub struct ValueDoc<'d, V = Value> {
    pub root: &'d mut V,
    pub values: Option<Vec<Value>>,
    pub(super) order: Order,
}

impl<'d, V: OwnedJson> ValueDoc<'d, V> {
    pub fn new(root: &'d mut V, values: Option<Vec<Value>>) -> Self {
        ValueDoc { root, values, order: Order::default() }
    }
}

impl<'d, V: OwnedJson> Document for ValueDoc<'d, V> {
    type Token = String;
    type Value = V;
    type Error = Infallible;
    type Op = V::Op;
    type Anchor = At;
    type Node<'a>
        = &'a V
    where
        Self: 'a;
    type Cursor<'a>
        = ValueCursor<'a, V>
    where
        Self: 'a;

    fn root(&self) -> &V {
        self.root
    }
    fn open(&mut self, path: &[String], opts: &Options) -> R<ValueCursor<'_, V>, Infallible> {
        let order = &mut self.order;
        if !order.tracking() {
            let v = resolve_mut(self.root, path, opts.dialect, None)?;
            return Ok(ValueCursor { v, order, path: None, rec: None });
        }
        let mut canon = Vec::with_capacity(path.len());
        resolve_mut(self.root, path, opts.dialect, Some(&mut canon))?;
        let rec = order.active.iter().copied().find(|&r| order.records[r].path == canon);
        if rec.is_none() && order.active.len() >= order.max_active {
            // This operation may open a record: close the oldest first.
            let old = &order.records[order.active.remove(0)];
            if let Ok(obj) = resolve_mut(self.root, &old.path, Dialect::Rfc6902, None) {
                reorder(obj, &old.snapshot, &old.added);
            }
        }
        let v = resolve_mut(self.root, path, opts.dialect, None)?;
        Ok(ValueCursor { v, order, path: Some(canon), rec })
    }
    fn reopen<'a>(&'a mut self, at: &At, ops: &[V::Op], opts: &Options) -> Option<(ValueCursor<'a, V>, String)> {
        // Rollback: objects are put back in order by their records' snapshots.
        self.order.rolling_back = true;
        self.order.active.clear();
        let op = ops.get(at.op)?;
        let tokens = if at.from { op.from() } else { op.path() };
        let (last, parent) = tokens.split_last()?;
        let v = resolve_mut(self.root, parent, opts.dialect, None).ok()?;
        Some((ValueCursor { v, order: &mut self.order, path: None, rec: None }, last.clone()))
    }
    fn set_root(&mut self, v: V) -> V {
        // The old root leaves the document (for the undo log): its records close.
        self.order.active.clear();
        std::mem::replace(self.root, v)
    }
    fn null(&self) -> V {
        V::default()
    }
    fn needs_undo(&self) -> bool {
        true
    }
    fn op_value(&mut self, i: usize, op: &V::Op, depth: usize, opts: &Options, budget: &mut Budget) -> R<V, Infallible> {
        let v = match &mut self.values {
            Some(values) => &mut values[i],
            None => {
                let value = &V::operation(op).value;
                charged(value, depth, opts, budget)?;
                return Ok(V::from_json(value.clone()));
            }
        };
        charged(v, depth, opts, budget)?;
        Ok(V::from_json(std::mem::take(v)))
    }
    fn op_node(op: &V::Op) -> Option<&V> {
        Some(V::test_value(op))
    }
    fn copy_of(&mut self, from: &[String], depth: usize, opts: &Options, budget: &mut Budget) -> R<V, Infallible> {
        if !self.order.active.is_empty() {
            // The copy reads member order: put the objects it holds in order first.
            let mut canon = Vec::with_capacity(from.len());
            let base = resolve_mut(self.root, from, opts.dialect, Some(&mut canon))?;
            self.order.settle(base, &canon, false);
        }
        let v = engine::resolve(&*self.root, from, opts.dialect)?;
        charged(v, depth, opts, budget)?;
        Ok(v.clone())
    }
    fn check_depth(&self, v: &V, depth: usize, opts: &Options) -> R<(), Infallible> {
        Ok(check_depth(v, depth, opts)?)
    }
    fn finish_patch(&mut self) {
        self.order.finish(self.root);
    }
    fn finish_rollback(&mut self) {
        self.order.reset();
    }
}

/// A container opened for writing, with the patch's order bookkeeping; `path` (canonical)
/// is known while records may be created or are active, `rec` is this object's record.
pub struct ValueCursor<'a, V> {
    v: &'a mut V,
    order: &'a mut Order,
    path: Option<Vec<String>>,
    rec: Option<usize>,
}

impl<V: OwnedJson> ValueCursor<'_, V> {
    /// Member `key` is about to be replaced or taken out: the records of objects inside it
    /// close (in order, as a `move` carries the value elsewhere).
    fn guard_key(&mut self, key: &str) {
        let Some(p) = &self.path else { return };
        let n = p.len();
        let Some(m) = self.v.map_mut() else { return };
        let Order { records, active, .. } = &mut *self.order;
        active.retain(|&r| {
            let rec = &records[r];
            if rec.path.len() <= n || rec.path[n] != key || !rec.path.starts_with(p) {
                return true;
            }
            if let Some(v) = m.get_mut(key).and_then(|c| resolve_mut(c, &rec.path[n + 1..], Dialect::Rfc6902, None).ok()) {
                reorder(v, &rec.snapshot, &rec.added);
            }
            false
        });
    }

    /// Element `index` is about to be inserted (`delta` 1), removed (-1) or replaced (0):
    /// records below the elements after it follow their shift; those inside a removed or
    /// replaced element close.
    fn guard_index(&mut self, index: usize, delta: isize) {
        let Some(p) = &self.path else { return };
        let n = p.len();
        let Some(a) = self.v.array_mut() else { return };
        let Order { records, active, .. } = &mut *self.order;
        active.retain(|&r| {
            let rec = &mut records[r];
            if rec.path.len() <= n || !rec.path.starts_with(p) {
                return true;
            }
            let Ok(i) = rec.path[n].parse::<usize>() else { return true };
            if i == index && delta <= 0 {
                if let Some(v) = a.get_mut(i).and_then(|c| resolve_mut(c, &rec.path[n + 1..], Dialect::Rfc6902, None).ok()) {
                    reorder(v, &rec.snapshot, &rec.added);
                }
                return false;
            }
            if i >= index && delta != 0 {
                rec.path[n] = (i as isize + delta).to_string();
            }
            true
        });
    }
}

impl<V: OwnedJson> Cursor for ValueCursor<'_, V> {
    type Token = String;
    type Value = V;
    type Error = Infallible;
    type Anchor = At;

    fn shape(&self) -> Shape {
        match (self.v.map(), self.v.array()) {
            (Some(_), _) => Shape::Object,
            (_, Some(a)) => Shape::Array(a.len()),
            _ => Shape::Scalar,
        }
    }
    fn type_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(OwnedJson::type_name(&*self.v))
    }
    fn anchor(&self, at: At, _key: &String) -> At {
        at
    }
    fn obj_set(&mut self, key: &String, v: V, _want_old: bool) -> R<Option<V>, Infallible> {
        self.guard_key(key);
        let Some(m) = self.v.map_mut() else { return Ok(None) };
        // An existing member keeps its position; a new one goes last.
        let old = m.insert(key, v);
        if let (None, Some(r)) = (&old, self.rec) {
            self.order.records[r].added.push(key.clone());
        }
        Ok(old)
    }
    fn obj_replace(&mut self, key: &String, v: V) -> R<Option<V>, Infallible> {
        self.guard_key(key);
        Ok(self.v.map_mut().and_then(|m| m.get_mut(key)).map(|slot| std::mem::replace(slot, v)))
    }
    fn obj_remove(&mut self, key: &String, want_pos: bool) -> R<Option<(V, usize)>, Infallible> {
        self.guard_key(key);
        let Some(m) = self.v.map_mut() else { return Ok(None) };
        if self.order.rolling_back {
            // Undoing an add: the member is last, unless the object is out of order, and
            // then its record's snapshot puts it back in order later in the rollback.
            let v = if m.last_key_is(key) { m.shift_remove(key) } else { m.swap_remove(key) };
            return Ok(v.map(|v| (v, 0)));
        }
        if let Some(r) = self.rec {
            return Ok(m.swap_remove(key).map(|v| (v, TOKEN | r << 1)));
        }
        if self.order.work > self.order.budget {
            if let Some(path) = &self.path {
                if !m.contains_key(key) {
                    return Ok(None);
                }
                let r = self.order.records.len();
                let snapshot = m.key_list();
                self.order.records.push(Record { path: path.clone(), snapshot, added: Vec::new() });
                self.order.active.push(r);
                self.rec = Some(r);
                return Ok(m.swap_remove(key).map(|v| (v, TOKEN | r << 1 | 1)));
            }
        }
        // The position restores member order on rollback (the map does not give it; the
        // scan costs no more than the shift that `shift_remove` does anyway).
        self.order.work += m.len();
        let pos = if want_pos { m.position(key) } else { Some(0) };
        Ok(pos.and_then(|pos| m.shift_remove(key).map(|v| (v, pos))))
    }
    fn obj_reinsert(&mut self, key: &String, pos: usize, v: V) -> R<(), Infallible> {
        let Some(m) = self.v.map_mut() else { return Ok(()) };
        if pos & TOKEN == 0 {
            let pos = pos.min(m.len());
            m.shift_insert(pos, key, v);
            return Ok(());
        }
        m.insert(key, v);
        if pos & 1 == 1 {
            // The record's first removal undone: the members are the snapshot's.
            if let Some(rec) = self.order.records.get((pos & !TOKEN) >> 1) {
                reorder(self.v, &rec.snapshot, &[]);
            }
        }
        Ok(())
    }
    fn arr_insert(&mut self, index: usize, v: V) -> R<(), Infallible> {
        self.guard_index(index, 1);
        if let Some(a) = self.v.array_mut() {
            a.insert(index, v);
        }
        Ok(())
    }
    fn arr_remove(&mut self, index: usize) -> R<V, Infallible> {
        self.guard_index(index, -1);
        Ok(self.v.array_mut().map(|a| a.remove(index)).unwrap_or_default())
    }
    fn arr_replace(&mut self, index: usize, v: V, _want_old: bool) -> R<Option<V>, Infallible> {
        self.guard_index(index, 0);
        Ok(self.v.array_mut().map(|a| std::mem::replace(&mut a[index], v)))
    }
}

/// Applies patches to one owned tree in turn, each atomically, reusing its buffers; the
/// operations' `add`/`replace` values move into the tree.
pub(super) fn run_owned<'d, V: OwnedJson>(doc: &mut ValueDoc<'d, V>, patcher: &mut engine::Patcher<ValueDoc<'d, V>>, ops: Vec<Operation>) -> R<(), Infallible> {
    let mut ops = V::ops(ops);
    let values = doc.values.get_or_insert_with(Vec::new);
    values.clear();
    values.extend(ops.iter_mut().map(|o| {
        let o = V::operation_mut(o);
        match o.kind {
            OpKind::Add | OpKind::Replace => std::mem::take(&mut o.value),
            _ => Value::Null,
        }
    }));
    patcher.run(doc, &ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::tree::tests::{trace_tree, trace_value};
    use crate::patch::tree::Tree;
    use crate::patch::{parse_patch, ErrorKind, PatchError};
    use crate::test_rng::Rng;
    use serde_json::json;

    /// Apply with a given shift budget: `usize::MAX` is the plain `shift_remove` path (the
    /// model), 0 puts every remove under an order record.
    fn apply(doc: &mut Value, patch: &Value, budget: usize, dialect: Dialect) -> Result<(), PatchError> {
        apply_capped(doc, patch, budget, MAX_ACTIVE, dialect)
    }

    fn apply_capped<V: OwnedJson>(doc: &mut V, patch: &Value, budget: usize, max_active: usize, dialect: Dialect) -> Result<(), PatchError> {
        let ops = V::ops(parse_patch(patch)?);
        let mut d = ValueDoc::new(doc, None);
        d.order.budget = budget;
        d.order.max_active = max_active;
        engine::apply_all(&mut d, &ops, Options { dialect, ..Options::default() }).map_err(|f| match f {
            Fail::Patch(e) => e,
            Fail::Doc(never) => match never {},
        })
    }

    fn text(v: &Value) -> String {
        serde_json::to_string(v).unwrap() // member order included
    }

    fn big(n: usize) -> Value {
        Value::Object((0..n).map(|i| (format!("k{i}"), json!(i))).collect())
    }

    #[test]
    fn removes_keep_order_and_readd_goes_last() {
        for budget in [0, usize::MAX] {
            let mut doc = json!({"o": big(8)});
            let patch = json!([
                {"op": "remove", "path": "/o/k1"},
                {"op": "remove", "path": "/o/k5"},
                {"op": "add", "path": "/o/k1", "value": "again"},
                {"op": "remove", "path": "/o/k0"},
                {"op": "add", "path": "/o/new", "value": 0},
                {"op": "replace", "path": "/o/k7", "value": 77},
                {"op": "copy", "from": "/o", "path": "/c"},
                {"op": "move", "from": "/o/k2", "path": "/o/k2b"}
            ]);
            let mut tree = Tree::from(&doc);
            apply_capped(&mut tree, &patch, budget, MAX_ACTIVE, Dialect::Rfc6902).unwrap();
            apply(&mut doc, &patch, budget, Dialect::Rfc6902).unwrap();
            assert_eq!(trace_tree(&tree), trace_value(&doc));
            let keys: Vec<_> = doc["o"].as_object().unwrap().keys().cloned().collect();
            assert_eq!(keys, ["k3", "k4", "k6", "k7", "k1", "new", "k2b"], "budget {budget}");
            let copied: Vec<_> = doc["c"].as_object().unwrap().keys().cloned().collect();
            assert_eq!(copied, ["k2", "k3", "k4", "k6", "k7", "k1", "new"], "budget {budget}");
        }
    }

    #[test]
    fn rollback_restores_order_exactly() {
        let mut doc = json!({"o": big(50), "l": [big(5), big(5)]});
        let before = text(&doc);
        let mut patch: Vec<Value> = (0..50).step_by(3).map(|i| json!({"op": "remove", "path": format!("/o/k{i}")})).collect();
        patch.push(json!({"op": "add", "path": "/o/k0", "value": 1}));
        patch.push(json!({"op": "remove", "path": "/l/1/k2"}));
        patch.push(json!({"op": "add", "path": "/l/0", "value": 1}));
        patch.push(json!({"op": "remove", "path": "/l/2/k3"}));
        patch.push(json!({"op": "move", "from": "/o", "path": "/l/1/o"}));
        patch.push(json!({"op": "remove", "path": "/l/1/o/k1"}));
        patch.push(json!({"op": "test", "path": "/o", "value": 0}));
        let patch = Value::Array(patch);
        let mut tree = Tree::from(&doc);
        let e = apply_capped(&mut tree, &patch, 0, MAX_ACTIVE, Dialect::Rfc6902).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Pointer);
        assert_eq!(trace_tree(&tree), trace_value(&doc));
        let e = apply(&mut doc, &patch, 0, Dialect::Rfc6902).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Pointer);
        assert_eq!(text(&doc), before);
    }

    fn random_path(rng: &mut Rng) -> String {
        const PARENTS: &[&str] = &["", "/a", "/a/k1", "/b/0", "/b/1", "/b/2", "/c/d", "/b", "/x"];
        const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "d", "a", "b", "c"];
        const INDICES: &[&str] = &["0", "1", "2", "-", "01", "5"];
        let parent = rng.pick(PARENTS);
        let last = if parent == "/b" || rng.below(8) == 0 { rng.pick(INDICES) } else { rng.pick(KEYS) };
        format!("{parent}/{last}")
    }

    fn random_op(rng: &mut Rng) -> Value {
        let path = random_path(rng);
        match rng.below(10) {
            0..=3 => json!({"op": "remove", "path": path}),
            4 | 5 => json!({"op": "add", "path": path, "value": {"v": rng.below(3)}}),
            6 => json!({"op": "replace", "path": path, "value": rng.below(3)}),
            7 => json!({"op": "move", "from": random_path(rng), "path": path}),
            8 => json!({"op": "copy", "from": random_path(rng), "path": path}),
            _ => json!({"op": "test", "path": path, "value": rng.below(3)}),
        }
    }

    fn random_doc(rng: &mut Rng) -> Value {
        let obj = |rng: &mut Rng| -> Value { Value::Object((0..8).filter(|_| rng.below(4) > 0).map(|i| (format!("k{i}"), json!(i))).collect()) };
        json!({"a": obj(rng), "b": [obj(rng), obj(rng), obj(rng)], "c": {"d": obj(rng)}})
    }

    /// Every op against the plain `shift_remove` model: the same result, member order
    /// included, the same errors, the document untouched on failure.
    #[test]
    fn randomized_against_the_shift_model() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut ok, mut failed) = (0, 0);
        for round in 0..20_000 {
            let dialect = if round % 3 == 0 { Dialect::FastJsonPatch } else { Dialect::Rfc6902 };
            let doc = random_doc(&mut rng);
            // Operations that apply one by one (found on a scratch copy), then maybe one
            // that may fail: long patches that succeed, and rollbacks of long patches.
            let n = 1 + rng.below(16);
            let mut scratch = doc.clone();
            let mut ops = Vec::new();
            while ops.len() < n {
                let op = random_op(&mut rng);
                if apply(&mut scratch, &json!([op.clone()]), usize::MAX, dialect).is_ok() {
                    ops.push(op);
                }
            }
            if rng.below(2) == 0 {
                ops.push(random_op(&mut rng));
            }
            let patch = Value::Array(ops);
            let (mut model, mut fast) = (doc.clone(), doc.clone());
            let want = apply(&mut model, &patch, usize::MAX, dialect);
            // a cap of 1 or 2 active records closes records in the middle of patches
            let got = apply_capped(&mut fast, &patch, 0, [1, 2, MAX_ACTIVE][round % 3], dialect);
            assert_eq!(got, want, "round {round}: {patch}");
            assert_eq!(text(&fast), text(&model), "round {round}: {doc} {patch}");
            // The core's tree through the same document implementation, under records too,
            // its objects as vectors (hashed once grown past a few members), and every
            // fourth round all hashed.
            for hashed in [false, true].into_iter().take(1 + usize::from(round % 4 == 3)) {
                let mut tree = Tree::from(&doc);
                if hashed {
                    crate::patch::tree::TreeMap::hash_all(&mut tree);
                }
                let got = apply_capped(&mut tree, &patch, [0, usize::MAX][round % 2], [1, 2, MAX_ACTIVE][round % 3], dialect);
                assert_eq!(got, want, "round {round}: {patch}");
                assert_eq!(trace_tree(&tree), trace_value(&model), "round {round} hashed {hashed}: {doc} {patch}");
            }
            if want.is_err() {
                assert_eq!(text(&fast), text(&doc), "round {round}: not atomic");
                failed += 1;
            } else {
                ok += 1;
            }
        }
        assert!(ok > 2_000 && failed > 2_000, "{ok} {failed}");
    }

    /// The budget switches modes in the middle of a patch: shift removes before, records after.
    #[test]
    fn budget_crossed_mid_patch() {
        for budget in [0, 10, 30, 60, 200] {
            let mut doc = json!({"a": big(20), "b": big(20)});
            let before = text(&doc);
            let mut patch: Vec<Value> = (0..20).map(|i| json!({"op": "remove", "path": format!("/{}/k{i}", if i % 2 == 0 { "a" } else { "b" })})).collect();
            patch.push(json!({"op": "add", "path": "/a/k0", "value": 0}));
            let mut model = doc.clone();
            apply(&mut model, &Value::Array(patch.clone()), usize::MAX, Dialect::Rfc6902).unwrap();
            let mut fast = doc.clone();
            apply(&mut fast, &Value::Array(patch.clone()), budget, Dialect::Rfc6902).unwrap();
            assert_eq!(text(&fast), text(&model));
            patch.push(json!({"op": "test", "path": "/a/k0", "value": 1}));
            assert!(apply(&mut doc, &Value::Array(patch), budget, Dialect::Rfc6902).is_err());
            assert_eq!(text(&doc), before, "budget {budget}");
        }
    }

    /// How the time of `f(n)` grows from `n` to `4n` (best of three each): about 4 when
    /// linear, 16 when quadratic. A ratio, not a wall-clock limit, so a loaded machine
    /// slows both sizes alike.
    fn growth(n: usize, f: impl Fn(usize)) -> f64 {
        let best = |n: usize| {
            (0..3)
                .map(|_| {
                    let t = std::time::Instant::now();
                    f(n);
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        best(4 * n) / best(n).max(1e-6)
    }

    /// One remove on each of many small objects: the records active at once are capped,
    /// so each operation scans a bounded list.
    #[test]
    fn removes_on_many_objects_are_linear() {
        let run = |n: usize| {
            let mut doc = json!({"l": (0..n).map(|_| json!({"a": 1, "b": 2, "c": 3})).collect::<Vec<_>>()});
            let mut patch: Vec<Value> = (0..n).map(|i| json!({"op": "remove", "path": format!("/l/{i}/a")})).collect();
            let before = text(&doc);
            patch.push(json!({"op": "test", "path": "/l/0/b", "value": 0}));
            assert!(apply(&mut doc, &Value::Array(patch.clone()), 0, Dialect::Rfc6902).is_err());
            assert_eq!(text(&doc), before);
            patch.pop();
            apply(&mut doc, &Value::Array(patch), 0, Dialect::Rfc6902).unwrap();
            assert!(doc["l"].as_array().unwrap().iter().all(|o| text(o) == r#"{"b":2,"c":3}"#));
        };
        let g = growth(5_000, run);
        assert!(g < 10.0, "4x the removes took {g:.1}x the time");
    }

    /// k removes on n members, with and without rollback: linear (the model is quadratic).
    #[test]
    fn many_removes_are_linear() {
        let run = |n: usize| {
            let mut doc = json!({"o": big(n)});
            let before = text(&doc);
            let mut patch: Vec<Value> = (0..n / 4).map(|i| json!({"op": "remove", "path": format!("/o/k{}", i * 3)})).collect();
            patch.push(json!({"op": "test", "path": "/o/k1", "value": "no"}));
            let patch = Value::Array(patch);
            assert!(apply(&mut doc, &patch, SHIFT_BUDGET, Dialect::Rfc6902).is_err());
            assert_eq!(text(&doc), before);
            let mut ok = patch.clone();
            ok.as_array_mut().unwrap().pop();
            apply(&mut doc, &ok, SHIFT_BUDGET, Dialect::Rfc6902).unwrap();
            assert_eq!(doc["o"].as_object().unwrap().len(), n - n / 4);
            assert!(doc["o"].as_object().unwrap().keys().zip(["k1", "k2", "k4"]).all(|(a, b)| a == b));
        };
        let g = growth(25_000, run);
        assert!(g < 10.0, "4x the members took {g:.1}x the time");
    }
}
