//! The one RFC 6902 engine, generic over the document it patches.
//!
//! A document type says how to read a value ([`Node`]), how to open a container for
//! writing ([`Document::open`], [`Cursor`]) and how to find a container again when undoing
//! ([`Document::reopen`]); everything else is here, once: operation dispatch, `move`/`copy`
//! composition, pointer and index rules ([`resolve`]), JSON equality ([`json_eq`]), the
//! depth limit, the undo log and its order-exact rollback, error annotation, dialects.
//!
//! Implementations: `serde_json::Value` (`super::value`) and Python dicts/lists (in the
//! `agui-py` binding, with copy-on-write structural sharing in copy mode).

use std::borrow::Cow;

use super::{
    existing_index, insert_index, invalid, parse_index, missing_member_reason, ptr_err, scalar_step_reason, too_deep, Dialect,
    ErrorKind, OpKind, Options, PatchError,
};

/// Why applying failed: a patch error, or an error of the document itself (for Python
/// objects: an exception raised by user code, passed through unchanged).
#[derive(Debug)]
pub enum Fail<E> {
    Patch(PatchError),
    Doc(E),
}

impl<E> From<PatchError> for Fail<E> {
    fn from(e: PatchError) -> Self {
        Fail::Patch(e)
    }
}

impl<E> Fail<E> {
    /// The patch error changed by `f` (a document's own error passes unchanged).
    pub fn map_patch(self, f: impl FnOnce(PatchError) -> PatchError) -> Self {
        match self {
            Fail::Patch(e) => Fail::Patch(f(e)),
            other => other,
        }
    }
}

pub type R<T, E> = Result<T, Fail<E>>;

/// What one value counts in a [`Budget`], besides the bytes of a string it copies: about
/// what a JSON value (or a container's slot and object) takes in memory.
pub const VALUE_COST: usize = 32;

/// The memory a patch application may still build, counted as it is built (a copy, a
/// value deep-copied or built from a patch): each value and each object member counts
/// [`VALUE_COST`], a string it copies also its length. Charging past the limit fails the
/// patch ([`ErrorKind::Limit`]); nothing was built beyond the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    left: usize,
    max: usize,
}

impl Budget {
    pub fn new(max: usize) -> Self {
        Budget { left: max, max }
    }
    /// What has been charged so far.
    pub fn used(&self) -> usize {
        self.max - self.left
    }
    /// What may still be charged.
    pub fn left(&self) -> usize {
        self.left
    }
    pub fn max(&self) -> usize {
        self.max
    }
    /// Count `n` bytes.
    #[inline]
    pub fn charge(&mut self, n: usize) -> Result<(), PatchError> {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.left = 0;
                Err(over_budget(self.max))
            }
        }
    }
    /// Count one value (a container, a member's slot, a scalar).
    #[inline]
    pub fn value(&mut self) -> Result<(), PatchError> {
        self.charge(VALUE_COST)
    }
    /// Count one string copied (a value, or an object member's key).
    #[inline]
    pub fn string(&mut self, len: usize) -> Result<(), PatchError> {
        self.charge(VALUE_COST.saturating_add(len))
    }
}

/// The error of a patch that would build more than `max` bytes.
pub fn over_budget(max: usize) -> PatchError {
    PatchError::new(ErrorKind::Limit, format!("the values one patch builds exceed the limit of {max} bytes (max_patch_bytes)"))
}

/// Count a value about to be built from `v` (copied, or moved into the document) and
/// check that, placed `depth_left` levels above the limit, it does not nest too deep, in
/// one walk that stops at the first broken limit (so a copy never starts beyond it).
/// `bytes(node)`: the bytes of the strings a node itself holds that the document would
/// copy (a string's text, an object's keys; 0 for a document that shares strings).
pub fn charge_value<N: Node>(v: &N, depth_left: usize, max_depth: usize, budget: &mut Budget, bytes: &impl Fn(&N) -> usize) -> R<(), N::Error> {
    match v.kind() {
        Kind::Array | Kind::Object if depth_left == 0 => Err(too_deep(max_depth).into()),
        Kind::Array => {
            budget.value()?;
            for i in 0..v.len() {
                charge_value(&v.element(i)?, depth_left - 1, max_depth, budget, bytes)?;
            }
            Ok(())
        }
        Kind::Object => {
            // The object, its keys, and a slot for each member.
            budget.charge(VALUE_COST.saturating_add(bytes(v)).saturating_add(v.len().saturating_mul(VALUE_COST)))?;
            v.members_in(v, &mut |x, _| {
                charge_value(x, depth_left - 1, max_depth, budget, bytes)?;
                Ok(true)
            })?;
            Ok(())
        }
        _ => Ok(budget.charge(VALUE_COST.saturating_add(bytes(v)))?),
    }
}

/// One reference token of a pointer, in the form a document looks members up with.
pub trait Token {
    type Key: ?Sized;
    fn key(&self) -> &Self::Key;
    fn text(&self) -> Cow<'_, str>;
}

impl Token for String {
    type Key = str;
    fn key(&self) -> &str {
        self
    }
    fn text(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

/// JSON type of a value; `Other` is a value that is not JSON (a foreign Python object),
/// compared by its own equality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
    Other,
}

impl Kind {
    /// The JSON type's name for error messages (`None` for `Other`).
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Kind::Null => "null",
            Kind::Bool => "boolean",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
            Kind::Other => return None,
        })
    }
}

/// The comparison [`Node::members_in`] applies to each pair of member values.
pub type MemberEq<'f, N> = dyn FnMut(&N, &N) -> R<bool, <N as Node>::Error> + 'f;

/// A read-only view of one value of a document (cheap to copy or clone).
pub trait Node: Sized {
    type Key: ?Sized;
    type Error;
    fn kind(&self) -> Kind;
    /// Name for error messages (`object`, `number`, a Python class name...).
    fn type_name(&self) -> Cow<'static, str>;
    /// Number of elements or members (containers only).
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn member(&self, key: &Self::Key) -> R<Option<Self>, Self::Error>;
    fn element(&self, index: usize) -> R<Self, Self::Error>;
    /// Equality of two values of the same non-container kind (`Other` included).
    fn scalar_eq(&self, other: &Self, dialect: Dialect) -> R<bool, Self::Error>;
    /// Whether every member of `self` is in `other` with a value `eq` accepts (the
    /// caller has checked that both are objects of the same length).
    fn members_in(&self, other: &Self, eq: &mut MemberEq<'_, Self>) -> R<bool, Self::Error>;
}

/// Where a container is, for the caller of [`Cursor`] methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Object,
    Array(usize),
    Scalar,
}

/// Which pointer of which operation a mutation used (documents that cannot hold on to a
/// container, like `serde_json::Value`, find it again through it on rollback).
#[derive(Debug, Clone, Copy)]
pub struct At {
    pub op: usize,
    pub from: bool,
}

/// A container opened for writing.
pub trait Cursor {
    type Token;
    type Value;
    type Error;
    type Anchor;
    fn shape(&self) -> Shape;
    fn type_name(&self) -> Cow<'static, str>;
    /// How the undo log finds this container (and the member `key`) again.
    fn anchor(&self, at: At, key: &Self::Token) -> Self::Anchor;
    /// Set member `key`; the previous value is returned when `want_old`.
    fn obj_set(&mut self, key: &Self::Token, v: Self::Value, want_old: bool) -> R<Option<Self::Value>, Self::Error>;
    /// Replace an existing member: `None` (and nothing changed) when it is missing.
    fn obj_replace(&mut self, key: &Self::Token, v: Self::Value) -> R<Option<Self::Value>, Self::Error>;
    /// Remove a member: the value and, when `want_pos`, its position (if the document
    /// restores member order that way); `None` when it is missing.
    fn obj_remove(&mut self, key: &Self::Token, want_pos: bool) -> R<Option<(Self::Value, usize)>, Self::Error>;
    /// Put a removed member back at `pos` (rollback only).
    fn obj_reinsert(&mut self, key: &Self::Token, pos: usize, v: Self::Value) -> R<(), Self::Error>;
    fn arr_insert(&mut self, index: usize, v: Self::Value) -> R<(), Self::Error>;
    fn arr_remove(&mut self, index: usize) -> R<Self::Value, Self::Error>;
    fn arr_replace(&mut self, index: usize, v: Self::Value, want_old: bool) -> R<Option<Self::Value>, Self::Error>;
}

/// One operation as the engine reads it.
pub trait PatchOp {
    type Token;
    fn kind(&self) -> OpKind;
    fn path(&self) -> &[Self::Token];
    fn from(&self) -> &[Self::Token];
    /// The `path` as written (error messages).
    fn path_text(&self) -> Cow<'_, str>;
}

/// A document the engine can patch.
pub trait Document {
    type Token: Token;
    type Value;
    type Error;
    type Op: PatchOp<Token = Self::Token>;
    type Anchor;
    type Node<'a>: Node<Key = <Self::Token as Token>::Key, Error = Self::Error>
    where
        Self: 'a;
    type Cursor<'a>: Cursor<Token = Self::Token, Value = Self::Value, Error = Self::Error, Anchor = Self::Anchor>
    where
        Self: 'a;

    fn root(&self) -> Self::Node<'_>;
    /// The container at `path`, ready to be written (copy mode: copied along the path).
    fn open(&mut self, path: &[Self::Token], opts: &Options) -> R<Self::Cursor<'_>, Self::Error>;
    /// The container an undo entry refers to, and the member token (rollback).
    fn reopen<'a>(&'a mut self, anchor: &Self::Anchor, ops: &[Self::Op], opts: &Options) -> Option<(Self::Cursor<'a>, Self::Token)>;
    /// Replace the whole document, returning the old one.
    fn set_root(&mut self, v: Self::Value) -> Self::Value;
    fn null(&self) -> Self::Value;
    /// Whether mutations must be logged to be undone (false when a failed patch is
    /// simply dropped, e.g. copy mode).
    fn needs_undo(&self) -> bool;
    /// The value of `add`/`replace` operation `i`, owned by the document (moved or
    /// deep-copied), to be placed at nesting depth `depth`: deeper than
    /// `opts.max_depth` in total is an error. What it builds (or moves in) is charged to
    /// `budget` as it goes.
    fn op_value(&mut self, i: usize, op: &Self::Op, depth: usize, opts: &Options, budget: &mut Budget) -> R<Self::Value, Self::Error>;
    /// The value of a `test` operation.
    fn op_node(op: &Self::Op) -> Option<Self::Node<'_>>;
    /// A deep copy of the value at `from`, to be placed at depth `depth` (`copy`), charged
    /// to `budget` as it is built.
    fn copy_of(&mut self, from: &[Self::Token], depth: usize, opts: &Options, budget: &mut Budget) -> R<Self::Value, Self::Error>;
    /// Check that a moved value fits at depth `depth`.
    fn check_depth(&self, v: &Self::Value, depth: usize, opts: &Options) -> R<(), Self::Error>;
    /// Called once after a rollback (e.g. to restore member order in one pass).
    fn finish_rollback(&mut self) {}
    /// Called once after a patch applied (e.g. to restore member order in one pass).
    fn finish_patch(&mut self) {}
}

// ---------------------------------------------------------------------------------------
// Reading: pointers and equality (generic over `Node`)
// ---------------------------------------------------------------------------------------

/// One step of a pointer from `node` (existing members and elements only).
pub fn step<N: Node, T: Token<Key = N::Key>>(node: &N, t: &T, dialect: Dialect) -> R<N, N::Error> {
    match node.kind() {
        Kind::Object => match node.member(t.key())? {
            Some(v) => Ok(v),
            None => Err(ptr_err(missing_member_reason(&t.text())).into()),
        },
        Kind::Array => {
            let i = existing_index(&t.text(), node.len(), dialect)?;
            node.element(i)
        }
        _ => Err(ptr_err(scalar_step_reason(&t.text(), &node.type_name())).into()),
    }
}

/// Resolve a pointer (split into tokens) from `root`.
pub fn resolve<N: Node, T: Token<Key = N::Key>>(root: N, path: &[T], dialect: Dialect) -> R<N, N::Error> {
    let mut cur = root;
    for t in path {
        cur = step(&cur, t, dialect)?;
    }
    Ok(cur)
}

/// JSON equality (RFC 6902 section 4.6): a bool is never a number, numbers compare by
/// value, objects regardless of member order, arrays element-wise. Nesting deeper than
/// `max_depth` (or a cycle) is an error.
pub fn json_eq<N: Node>(a: &N, b: &N, opts: &Options, depth: usize) -> R<bool, N::Error> {
    if depth > opts.max_depth {
        return Err(too_deep(opts.max_depth).into());
    }
    let kind = a.kind();
    if kind != b.kind() {
        return Ok(false);
    }
    match kind {
        Kind::Array => {
            let n = a.len();
            if n != b.len() {
                return Ok(false);
            }
            for i in 0..n {
                if !json_eq(&a.element(i)?, &b.element(i)?, opts, depth + 1)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Kind::Object => {
            if a.len() != b.len() {
                return Ok(false);
            }
            a.members_in(b, &mut |x, y| json_eq(x, y, opts, depth + 1))
        }
        _ => a.scalar_eq(b, opts.dialect),
    }
}

/// Whether a value nests deeper than `budget` levels (walks at most `budget + 1`).
pub fn deeper_than<N: Node>(v: &N, budget: usize) -> R<bool, N::Error> {
    match v.kind() {
        Kind::Array | Kind::Object if budget == 0 => Ok(true),
        Kind::Array => {
            for i in 0..v.len() {
                if deeper_than(&v.element(i)?, budget - 1)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Kind::Object => {
            let mut deeper = false;
            v.members_in(v, &mut |x, _| {
                deeper = deeper_than(x, budget - 1)?;
                Ok(!deeper)
            })?;
            Ok(deeper)
        }
        _ => Ok(false),
    }
}

// ---------------------------------------------------------------------------------------
// Applying, with an undo log for atomicity
// ---------------------------------------------------------------------------------------

/// The inverse of one primitive mutation. `None` as the old value means "the value taken
/// out by the entry undone just before" (a `move`: the moved value is taken back out of
/// its target and carried to its source, never copied).
enum Undo<A, V> {
    Root(V),
    ObjAdded(A),
    ObjReplaced(A, V),
    ObjRemoved(A, usize, Option<V>),
    ArrAdded(A, usize),
    ArrRemoved(A, usize, Option<V>),
    ArrReplaced(A, usize, V),
}

/// Applies operations one at a time and undoes them all on failure.
pub struct Patcher<D: Document> {
    log: Vec<Undo<D::Anchor, D::Value>>,
    /// Whether the current operation's mutations are logged: not in a document that
    /// needs no undo, nor for the last operation of a patch unless it is a `move` (such an
    /// operation fails before mutating anything, or succeeds).
    on: bool,
    opts: Options,
    /// What the current patch may still build (`opts.max_bytes` at each patch's start).
    budget: Budget,
    /// What `copy` operations may still copy, over every patch this patcher applies
    /// ([`Patcher::with_copy_allowance`]; unlimited by default), and what it was at first.
    copies: usize,
    copies_max: usize,
}

fn banned(tokens: &[impl Token]) -> bool {
    tokens.iter().enumerate().any(|(i, t)| {
        let s = t.text();
        s == "__proto__" || (s == "prototype" && i > 0 && tokens[i - 1].text() == "constructor")
    })
}

/// Stepping into a scalar (`last` is the token that cannot be resolved in it).
fn scalar_err<C: Cursor, T: Token>(last: &T, c: &C) -> Fail<C::Error> {
    ptr_err(scalar_step_reason(&last.text(), &c.type_name())).into()
}

fn from_err<E>(f: Fail<E>) -> Fail<E> {
    f.map_patch(|mut e| {
        if e.kind != ErrorKind::Limit {
            e.reason = format!("from: {}", e.reason);
        }
        e
    })
}

/// fast-json-patch checks that a location exists by a JavaScript property lookup, before
/// it reads a token as an array index: on an array, `01` (or an empty token) is missing
/// there, though read as index 1 (0) where nothing is checked (`test`'s path, `add`'s last
/// token, `move`'s and `copy`'s path). So the locations it checks take only canonical
/// indices: `replace`, `remove` and `_get`'s path, `add`'s parent, `move`'s and `copy`'s
/// `from` (found by the differential test against the reference client).
fn strict_locations<D: Document>(doc: &D, kind: OpKind, path: &[D::Token], from: &[D::Token]) -> R<(), D::Error> {
    let (checked, is_from) = match kind {
        OpKind::Replace | OpKind::Remove | OpKind::Get => (path, false),
        OpKind::Add => (path.split_last().map_or(&path[..0], |(_, parent)| parent), false),
        OpKind::Move | OpKind::Copy => (from, true),
        OpKind::Test => (&path[..0], false),
    };
    let loose = |t: &D::Token| {
        let t = t.text();
        t.is_empty() || (t.len() > 1 && t.starts_with('0') && t.bytes().all(|b| b.is_ascii_digit()))
    };
    if !checked.iter().any(loose) {
        return Ok(());
    }
    let found = resolve(doc.root(), checked, Dialect::Rfc6902).map(drop);
    if is_from {
        found.map_err(from_err)
    } else {
        found
    }
}

impl<D: Document> Patcher<D> {
    pub fn new(opts: Options) -> Self {
        Patcher { log: Vec::new(), on: false, opts, budget: Budget::new(opts.max_bytes), copies: usize::MAX, copies_max: usize::MAX }
    }

    /// Bound what `copy` operations copy in all the patches this patcher applies (a
    /// replay's patches: a budget per patch alone lets a log of many small patches that
    /// each copy the document grow it without end): `bytes` left of an allowance of `of`.
    /// Past it a patch fails as it does past its own budget.
    pub fn with_copy_allowance(mut self, bytes: usize, of: usize) -> Self {
        self.copies = bytes;
        self.copies_max = of;
        self
    }

    /// What `copy` operations may still copy ([`Patcher::with_copy_allowance`]).
    pub fn copy_allowance(&self) -> usize {
        self.copies
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// A copy of the value at `from`, within the patch's budget and the copy allowance.
    fn copy(&mut self, doc: &mut D, from: &[D::Token], depth: usize) -> R<D::Value, D::Error> {
        let allowance_binds = self.copies < self.budget.left();
        let mut sub = Budget::new(self.budget.left().min(self.copies));
        let v = doc.copy_of(from, depth, &self.opts, &mut sub);
        let used = sub.used();
        self.copies = self.copies.saturating_sub(used);
        self.budget.charge(used.min(self.budget.left()))?;
        v.map_err(|f| {
            f.map_patch(|e| match e.kind {
                ErrorKind::Limit if allowance_binds => PatchError::new(
                    ErrorKind::Limit,
                    format!("the values copied by all the patches exceed the limit of {} bytes (max_patch_bytes)", self.copies_max),
                ),
                ErrorKind::Limit => over_budget(self.opts.max_bytes),
                _ => e,
            })
        })
    }

    /// Apply `ops[i]` (reported as operation `index`); `last` when no operation follows.
    /// On error the document may be half-changed: call [`Patcher::rollback`].
    pub fn apply(&mut self, doc: &mut D, ops: &[D::Op], i: usize, index: usize, last: bool) -> R<(), D::Error> {
        let op = &ops[i];
        self.on = doc.needs_undo() && (!last || op.kind() == OpKind::Move);
        self.apply_op(doc, ops, i).map_err(|f| {
            f.map_patch(|mut e| {
                e.index = Some(index);
                e.op = Some(op.kind().name().to_string());
                e.path = Some(op.path_text().into_owned());
                e
            })
        })
    }

    fn set_root(&mut self, doc: &mut D, v: D::Value) {
        let old = doc.set_root(v);
        self.push(|| Undo::Root(old));
    }

    fn push(&mut self, make: impl FnOnce() -> Undo<D::Anchor, D::Value>) {
        if self.on {
            self.log.push(make());
        }
    }

    fn apply_op(&mut self, doc: &mut D, ops: &[D::Op], i: usize) -> R<(), D::Error> {
        let op = &ops[i];
        let opts = self.opts;
        let (path, from) = (op.path(), op.from());
        let at = At { op: i, from: false };
        if opts.dialect == Dialect::FastJsonPatch {
            if banned(path) || banned(from) {
                return Err(invalid("modifying `__proto__` or `constructor/prototype` is banned (fast-json-patch)").into());
            }
            strict_locations(doc, op.kind(), path, from)?;
        }
        match op.kind() {
            OpKind::Add => {
                let v = doc.op_value(i, op, path.len(), &opts, &mut self.budget)?;
                self.add(doc, path, at, &mut Some(v), false)
            }
            OpKind::Replace => {
                let v = doc.op_value(i, op, path.len(), &opts, &mut self.budget)?;
                self.replace(doc, path, at, v)
            }
            OpKind::Remove => {
                if path.is_empty() && opts.dialect == Dialect::FastJsonPatch {
                    let null = doc.null(); // fast-json-patch: the document becomes null
                    self.set_root(doc, null);
                    return Ok(());
                }
                let v = self.remove(doc, path, at)?;
                self.keep_removed(v);
                Ok(())
            }
            OpKind::Move => {
                if same_tokens(from, path) {
                    // Moving onto itself is a no-op, but the location must exist.
                    return resolve(doc.root(), from, opts.dialect).map(drop).map_err(from_err);
                }
                if is_proper_prefix(from, path) {
                    return Err(invalid("cannot move a value into one of its own children").into());
                }
                let v = self.remove(doc, from, At { op: i, from: true }).map_err(from_err)?;
                // A value moved no deeper than it was fits (the document is within the
                // limit): only a move down walks it.
                if path.len() > from.len() {
                    if let Err(e) = doc.check_depth(&v, path.len(), &opts) {
                        self.keep_removed(v);
                        return Err(e);
                    }
                }
                let mut slot = Some(v);
                let res = self.add(doc, path, at, &mut slot, opts.dialect == Dialect::FastJsonPatch);
                if let Some(v) = slot {
                    self.keep_removed(v); // the add failed before taking the value
                }
                res
            }
            OpKind::Copy => {
                let v = self.copy(doc, from, path.len()).map_err(from_err)?;
                self.add(doc, path, at, &mut Some(v), opts.dialect == Dialect::FastJsonPatch)
            }
            OpKind::Test => {
                let expected = D::op_node(op).ok_or_else(|| invalid("missing member 'value'"))?;
                let actual = resolve(doc.root(), path, opts.dialect)?;
                if json_eq(&actual, &expected, &opts, 0)? {
                    Ok(())
                } else {
                    Err(PatchError::new(ErrorKind::TestFailed, "test failed: value does not match").into())
                }
            }
            OpKind::Get if opts.dialect == Dialect::FastJsonPatch => {
                resolve(doc.root(), path, opts.dialect).map(drop)
            }
            OpKind::Get => Err(invalid(format!("unknown op {:?}", OpKind::Get.name())).into()),
        }
    }

    /// `slot` is emptied only once the add cannot fail any more, so a failing `move`
    /// still holds the moved value and can give it back.
    /// `past_end`: an array index past the end appends, as fast-json-patch's `move` and
    /// `copy` do (they add without validation, and `splice` clamps the index).
    fn add(&mut self, doc: &mut D, path: &[D::Token], at: At, slot: &mut Option<D::Value>, past_end: bool) -> R<(), D::Error> {
        let Some((last, parent)) = path.split_last() else {
            if let Some(v) = slot.take() {
                self.set_root(doc, v);
            }
            return Ok(());
        };
        let dialect = self.opts.dialect;
        let on = self.on;
        let mut c = doc.open(parent, &self.opts)?;
        let entry = match c.shape() {
            Shape::Object => {
                let Some(v) = slot.take() else { return Ok(()) };
                let old = c.obj_set(last, v, on)?;
                let a = c.anchor(at, last);
                match old {
                    Some(old) => Undo::ObjReplaced(a, old),
                    None => Undo::ObjAdded(a),
                }
            }
            Shape::Array(len) => {
                let i = match insert_index(&last.text(), len, dialect) {
                    Err(_) if past_end && parse_index(&last.text(), dialect).is_ok() => len,
                    i => i?,
                };
                let Some(v) = slot.take() else { return Ok(()) };
                c.arr_insert(i, v)?;
                Undo::ArrAdded(c.anchor(at, last), i)
            }
            Shape::Scalar => return Err(scalar_err(last, &c)),
        };
        drop(c);
        self.push(|| entry);
        Ok(())
    }

    fn remove(&mut self, doc: &mut D, path: &[D::Token], at: At) -> R<D::Value, D::Error> {
        let Some((last, parent)) = path.split_last() else {
            return Err(invalid("cannot remove the whole document").into());
        };
        let dialect = self.opts.dialect;
        let on = self.on;
        let mut c = doc.open(parent, &self.opts)?;
        let (v, entry) = match c.shape() {
            Shape::Object => {
                let Some((v, pos)) = c.obj_remove(last, on)? else {
                    return Err(ptr_err(missing_member_reason(&last.text())).into());
                };
                (v, on.then(|| Undo::ObjRemoved(c.anchor(at, last), pos, None)))
            }
            Shape::Array(len) => {
                let i = existing_index(&last.text(), len, dialect)?;
                let v = c.arr_remove(i)?;
                (v, on.then(|| Undo::ArrRemoved(c.anchor(at, last), i, None)))
            }
            Shape::Scalar => return Err(scalar_err(last, &c)),
        };
        drop(c);
        if let Some(entry) = entry {
            self.log.push(entry);
        }
        Ok(v)
    }

    /// Store a removed value in the undo entry `remove` just pushed (left empty so that
    /// `move` does not have to copy the moved value).
    fn keep_removed(&mut self, v: D::Value) {
        if !self.on {
            return; // nothing was pushed for this removal
        }
        if let Some(Undo::ObjRemoved(_, _, old) | Undo::ArrRemoved(_, _, old)) = self.log.last_mut() {
            *old = Some(v);
        }
    }

    fn replace(&mut self, doc: &mut D, path: &[D::Token], at: At, v: D::Value) -> R<(), D::Error> {
        let Some((last, parent)) = path.split_last() else {
            self.set_root(doc, v);
            return Ok(());
        };
        let dialect = self.opts.dialect;
        let on = self.on;
        let mut c = doc.open(parent, &self.opts)?;
        let entry = match c.shape() {
            Shape::Object => {
                let Some(old) = c.obj_replace(last, v)? else {
                    return Err(ptr_err(missing_member_reason(&last.text())).into());
                };
                on.then(|| Undo::ObjReplaced(c.anchor(at, last), old))
            }
            Shape::Array(len) => {
                let i = existing_index(&last.text(), len, dialect)?;
                let old = c.arr_replace(i, v, on)?;
                match old {
                    Some(old) if on => Some(Undo::ArrReplaced(c.anchor(at, last), i, old)),
                    _ => None,
                }
            }
            Shape::Scalar => return Err(scalar_err(last, &c)),
        };
        drop(c);
        if let Some(entry) = entry {
            self.log.push(entry);
        }
        Ok(())
    }

    /// Undo every logged mutation, newest first. Each entry re-creates a state that
    /// existed, so its container is found again; errors (a `MemoryError` at worst) are
    /// ignored as there is nothing better to do.
    pub fn rollback(&mut self, doc: &mut D, ops: &[D::Op]) {
        let opts = self.opts;
        let mut carry: Option<D::Value> = None;
        while let Some(u) = self.log.pop() {
            match u {
                Undo::Root(old) => carry = Some(doc.set_root(old)),
                Undo::ObjAdded(a) => {
                    if let Some((mut c, key)) = doc.reopen(&a, ops, &opts) {
                        carry = c.obj_remove(&key, false).ok().flatten().map(|(v, _)| v);
                    }
                }
                Undo::ObjReplaced(a, old) => {
                    if let Some((mut c, key)) = doc.reopen(&a, ops, &opts) {
                        carry = c.obj_set(&key, old, true).ok().flatten();
                    }
                }
                Undo::ObjRemoved(a, pos, old) => {
                    if let (Some((mut c, key)), Some(v)) = (doc.reopen(&a, ops, &opts), old.or_else(|| carry.take())) {
                        let _ = c.obj_reinsert(&key, pos, v);
                    }
                }
                Undo::ArrAdded(a, i) => {
                    if let Some((mut c, _)) = doc.reopen(&a, ops, &opts) {
                        if matches!(c.shape(), Shape::Array(n) if i < n) {
                            carry = c.arr_remove(i).ok();
                        }
                    }
                }
                Undo::ArrRemoved(a, i, old) => {
                    if let (Some((mut c, _)), Some(v)) = (doc.reopen(&a, ops, &opts), old.or_else(|| carry.take())) {
                        if matches!(c.shape(), Shape::Array(n) if i <= n) {
                            let _ = c.arr_insert(i, v);
                        }
                    }
                }
                Undo::ArrReplaced(a, i, old) => {
                    if let Some((mut c, _)) = doc.reopen(&a, ops, &opts) {
                        if matches!(c.shape(), Shape::Array(n) if i < n) {
                            carry = c.arr_replace(i, old, true).ok().flatten();
                        }
                    }
                }
            }
        }
        doc.finish_rollback();
        self.budget = Budget::new(opts.max_bytes);
    }
}

fn same_tokens<T: Token>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.text() == y.text())
}

/// `from` is a proper prefix of `path` (moving a value into its own child).
pub fn is_proper_prefix<T: Token>(from: &[T], path: &[T]) -> bool {
    from.len() < path.len() && same_tokens(from, &path[..from.len()])
}

/// Apply all of `ops` atomically (the document is unchanged on error).
pub fn apply_all<D: Document>(doc: &mut D, ops: &[D::Op], opts: Options) -> R<(), D::Error> {
    Patcher::new(opts).run(doc, ops)
}

impl<D: Document> Patcher<D> {
    /// Apply all of `ops` atomically; the patcher (and its log's buffer) can be reused.
    pub fn run(&mut self, doc: &mut D, ops: &[D::Op]) -> R<(), D::Error> {
        let n = ops.len();
        for i in 0..n {
            if let Err(e) = self.apply(doc, ops, i, i, i + 1 == n) {
                self.rollback(doc, ops);
                return Err(e);
            }
        }
        self.commit(doc);
        Ok(())
    }

    /// End a patch whose operations all applied (by [`Patcher::apply`]): forget the undo
    /// log, so the patcher is ready for the next patch.
    pub fn commit(&mut self, doc: &mut D) {
        self.log.clear();
        self.budget = Budget::new(self.opts.max_bytes);
        doc.finish_patch();
    }
}
