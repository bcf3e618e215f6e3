//! RFC 6902 JSON Patch and RFC 6901 JSON Pointer over `serde_json::Value`.
//!
//! Used by the Python binding's `StateDocument` (a Rust-held document that replays many
//! patches without round-tripping to Python) and tested here against the official suite.
//! The Python-object applier (`agui_fast.patch.apply_patch`) lives in the binding crate but
//! follows exactly the same rules and error wording, which are defined here.
//!
//! Semantics decisions (documented in `docs/patch.md`):
//! - array indices are canonical decimal: `0` or no leading zero; `-` means "after the
//!   last element" and is accepted only as the target of `add` (and `move`/`copy` targets);
//! - `test` compares as JSON: a bool never equals a number, numbers compare by
//!   mathematical value (`1 == 1.0`), objects ignore member order;
//! - a patch is atomic: on failure every mutation already done is rolled back through an
//!   undo log (cheap on success, and member order is restored exactly);
//! - removing the whole document (`remove` with path `""`) is an error.

use serde_json::{Map, Number, Value};
use std::fmt;

/// Which Python exception class an error maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Malformed patch or operation, or an operation that cannot apply (`JsonPatchError`).
    Invalid,
    /// A pointer is malformed or does not resolve (`JsonPointerError`).
    Pointer,
    /// A `test` operation did not match (`JsonPatchTestFailed`).
    TestFailed,
}

/// Why a patch failed and where. `index`/`op`/`path` are `None` when unknown (e.g. the
/// patch itself is not an array, or the operation has no readable `op`).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchError {
    pub kind: ErrorKind,
    pub index: Option<usize>,
    pub op: Option<String>,
    pub path: Option<String>,
    pub reason: String,
}

impl PatchError {
    pub fn new(kind: ErrorKind, reason: impl Into<String>) -> Self {
        PatchError { kind, index: None, op: None, path: None, reason: reason.into() }
    }
    fn at(mut self, index: usize, op: &str, path: &str) -> Self {
        self.index = Some(index);
        self.op = Some(op.to_string());
        self.path = Some(path.to_string());
        self
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.index, &self.op, &self.path) {
            (Some(i), Some(op), Some(path)) => {
                write!(f, "patch operation {i} ({op} {path}): {}", self.reason)
            }
            (Some(i), _, _) => write!(f, "patch operation {i}: {}", self.reason),
            _ => write!(f, "{}", self.reason),
        }
    }
}

impl std::error::Error for PatchError {}

fn ptr_err(reason: impl Into<String>) -> PatchError {
    PatchError::new(ErrorKind::Pointer, reason)
}

fn invalid(reason: impl Into<String>) -> PatchError {
    PatchError::new(ErrorKind::Invalid, reason)
}

// ---------------------------------------------------------------------------------------
// RFC 6901 pointers
// ---------------------------------------------------------------------------------------

/// Escape one reference token (`~` -> `~0`, `/` -> `~1`).
pub fn escape(token: &str) -> String {
    if !token.contains(['~', '/']) {
        return token.to_string();
    }
    token.replace('~', "~0").replace('/', "~1")
}

/// Unescape one reference token; `~` must be followed by `0` or `1`.
pub fn unescape(token: &str) -> Result<String, PatchError> {
    if !token.contains('~') {
        return Ok(token.to_string());
    }
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                Some(other) => {
                    return Err(ptr_err(format!("invalid escape '~{other}' in JSON pointer")))
                }
                None => return Err(ptr_err("invalid escape '~' at the end of a JSON pointer token")),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Split a pointer into unescaped reference tokens. `""` is the whole document.
pub fn parse_pointer(pointer: &str) -> Result<Vec<String>, PatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(ptr_err(format!("invalid JSON pointer {pointer:?}: must be empty or start with '/'")));
    };
    rest.split('/').map(unescape).collect()
}

/// Build a pointer from unescaped tokens.
pub fn format_pointer<S: AsRef<str>>(tokens: &[S]) -> String {
    let mut out = String::new();
    for t in tokens {
        out.push('/');
        out.push_str(&escape(t.as_ref()));
    }
    out
}

/// Parse an array index token: canonical decimal (no sign, no leading zero). `-` is not
/// handled here (callers decide whether "past the end" is allowed).
pub fn parse_index(token: &str) -> Result<usize, PatchError> {
    let b = token.as_bytes();
    let canonical = !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b.len() == 1 || b[0] != b'0');
    if !canonical {
        return Err(ptr_err(format!("invalid array index {token:?}")));
    }
    token.parse::<usize>().map_err(|_| ptr_err(format!("array index {token} out of range")))
}

/// Index of an existing element (`-` and `len` are out of range).
pub fn existing_index(token: &str, len: usize) -> Result<usize, PatchError> {
    if token == "-" {
        return Err(ptr_err("'-' refers to the nonexistent element after the last array element"));
    }
    let i = parse_index(token)?;
    if i >= len {
        return Err(ptr_err(format!("array index {i} out of range (array length {len})")));
    }
    Ok(i)
}

/// Insertion index for `add`: `0..=len`, `-` meaning `len`.
pub fn insert_index(token: &str, len: usize) -> Result<usize, PatchError> {
    if token == "-" {
        return Ok(len);
    }
    let i = parse_index(token)?;
    if i > len {
        return Err(ptr_err(format!("array index {i} out of range (array length {len})")));
    }
    Ok(i)
}

/// Name of a JSON type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Why stepping into a scalar fails (shared wording with the Python applier).
pub fn scalar_step_reason(token: &str, type_name: &str) -> String {
    format!("cannot resolve {:?} inside a {type_name}", token)
}

/// Why a missing object member fails.
pub fn missing_member_reason(token: &str) -> String {
    format!("member {token:?} not found")
}

fn step<'a>(v: &'a Value, token: &str) -> Result<&'a Value, PatchError> {
    match v {
        Value::Object(m) => m.get(token).ok_or_else(|| ptr_err(missing_member_reason(token))),
        Value::Array(a) => Ok(&a[existing_index(token, a.len())?]),
        other => Err(ptr_err(scalar_step_reason(token, type_name(other)))),
    }
}

fn step_mut<'a>(v: &'a mut Value, token: &str) -> Result<&'a mut Value, PatchError> {
    match v {
        Value::Object(m) => m.get_mut(token).ok_or_else(|| ptr_err(missing_member_reason(token))),
        Value::Array(a) => {
            let i = existing_index(token, a.len())?;
            Ok(&mut a[i])
        }
        other => Err(ptr_err(scalar_step_reason(token, type_name(other)))),
    }
}

/// Resolve a pointer (already split into tokens) to a value.
pub fn resolve<'a, S: AsRef<str>>(doc: &'a Value, tokens: &[S]) -> Result<&'a Value, PatchError> {
    tokens.iter().try_fold(doc, |v, t| step(v, t.as_ref()))
}

fn resolve_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Result<&'a mut Value, PatchError> {
    tokens.iter().try_fold(doc, |v, t| step_mut(v, t))
}

// ---------------------------------------------------------------------------------------
// JSON equality
// ---------------------------------------------------------------------------------------

fn is_integer_text(s: &str) -> bool {
    let s = s.strip_prefix('-').unwrap_or(s);
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Numbers are equal when mathematically equal: `1 == 1.0`, and big integers compare
/// exactly (arbitrary precision keeps their text).
pub fn number_eq(a: &Number, b: &Number) -> bool {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x == y;
    }
    let (sa, sb) = (a.to_string(), b.to_string());
    if is_integer_text(&sa) && is_integer_text(&sb) {
        return sa == sb;
    }
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// JSON equality (RFC 6902 section 4.6): member order does not matter, a bool is never a
/// number, numbers compare by value.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => number_eq(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Add,
    Remove,
    Replace,
    Move,
    Copy,
    Test,
}

impl OpKind {
    pub fn parse(name: &str) -> Option<OpKind> {
        Some(match name {
            "add" => OpKind::Add,
            "remove" => OpKind::Remove,
            "replace" => OpKind::Replace,
            "move" => OpKind::Move,
            "copy" => OpKind::Copy,
            "test" => OpKind::Test,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Add => "add",
            OpKind::Remove => "remove",
            OpKind::Replace => "replace",
            OpKind::Move => "move",
            OpKind::Copy => "copy",
            OpKind::Test => "test",
        }
    }
    pub fn needs_value(self) -> bool {
        matches!(self, OpKind::Add | OpKind::Replace | OpKind::Test)
    }
    pub fn needs_from(self) -> bool {
        matches!(self, OpKind::Move | OpKind::Copy)
    }
}

/// One validated operation: pointers already split, members checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub kind: OpKind,
    pub path: String,
    pub path_tokens: Vec<String>,
    pub from: Option<String>,
    pub from_tokens: Vec<String>,
    pub value: Value,
}

impl Operation {
    /// Build an operation from its members; `index` is only used for error reporting.
    pub fn build(
        index: usize,
        op: &str,
        path: &str,
        from: Option<&str>,
        value: Option<Value>,
    ) -> Result<Operation, PatchError> {
        let kind = OpKind::parse(op)
            .ok_or_else(|| invalid(format!("unknown op {op:?}")).at(index, op, path))?;
        let path_tokens = parse_pointer(path).map_err(|e| e.at(index, op, path))?;
        let (from, from_tokens) = if kind.needs_from() {
            let Some(f) = from else {
                return Err(invalid("missing member 'from'").at(index, op, path));
            };
            let toks = parse_pointer(f).map_err(|mut e| {
                e.reason = format!("from: {}", e.reason);
                e.at(index, op, path)
            })?;
            (Some(f.to_string()), toks)
        } else {
            (None, Vec::new())
        };
        let value = match (kind.needs_value(), value) {
            (true, None) => return Err(invalid("missing member 'value'").at(index, op, path)),
            (true, Some(v)) => v,
            (false, _) => Value::Null,
        };
        Ok(Operation { kind, path: path.to_string(), path_tokens, from, from_tokens, value })
    }
}

/// Validate a patch given as JSON (an array of operation objects). Unknown members are
/// ignored (RFC 6902 section 4).
pub fn parse_patch(patch: &Value) -> Result<Vec<Operation>, PatchError> {
    let Value::Array(items) = patch else {
        return Err(invalid(format!("a JSON Patch must be an array, not {}", type_name(patch))));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let Value::Object(m) = item else {
                let mut e = invalid(format!("operation must be an object, not {}", type_name(item)));
                e.index = Some(i);
                return Err(e);
            };
            let op = match m.get("op") {
                Some(Value::String(s)) => s.as_str(),
                Some(_) => {
                    let mut e = invalid("member 'op' must be a string");
                    e.index = Some(i);
                    return Err(e);
                }
                None => {
                    let mut e = invalid("missing member 'op'");
                    e.index = Some(i);
                    return Err(e);
                }
            };
            let path = match m.get("path") {
                Some(Value::String(s)) => s.as_str(),
                Some(_) => {
                    let mut e = invalid("member 'path' must be a string");
                    e.index = Some(i);
                    e.op = Some(op.to_string());
                    return Err(e);
                }
                None => {
                    let mut e = invalid("missing member 'path'");
                    e.index = Some(i);
                    e.op = Some(op.to_string());
                    return Err(e);
                }
            };
            let from = match m.get("from") {
                Some(Value::String(s)) => Some(s.as_str()),
                Some(_) if OpKind::parse(op).is_some_and(OpKind::needs_from) => {
                    return Err(invalid("member 'from' must be a string").at(i, op, path))
                }
                _ => None,
            };
            Operation::build(i, op, path, from, m.get("value").cloned())
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Applying, with an undo log for atomicity
// ---------------------------------------------------------------------------------------

/// Which pointer of which operation a mutation used: undo entries address containers
/// through it (re-resolved on rollback, because mutations in between may move them in
/// memory) instead of cloning the path.
#[derive(Clone, Copy)]
struct At {
    op: usize,
    from: bool,
}

fn tokens_at(ops: &[Operation], at: At) -> &[String] {
    let op = &ops[at.op];
    if at.from {
        &op.from_tokens
    } else {
        &op.path_tokens
    }
}

/// The inverse of one primitive mutation (the member is the last token at `at`).
enum Undo {
    Root(Value),
    ObjRemoveNew { at: At },
    ObjRestore { at: At, old: Value },
    // `old: None` means "the value removed by the entry undone just before" (a `move`: the
    // moved value is taken back out of its target and carried to its source).
    ObjReinsert { at: At, index: usize, old: Option<Value> },
    ArrRemove { at: At, index: usize },
    ArrReinsert { at: At, index: usize, old: Option<Value> },
    ArrRestore { at: At, index: usize, old: Value },
}

/// The undo log. Off during the last operation of a patch unless it is a `move`: such an
/// operation fails before mutating anything or succeeds, so its entries would never be
/// used.
struct Log {
    entries: Vec<Undo>,
    on: bool,
}

impl Log {
    fn push(&mut self, make: impl FnOnce() -> Undo) {
        if self.on {
            self.entries.push(make());
        }
    }
}

fn parent_mut<'a>(doc: &'a mut Value, ops: &[Operation], at: At) -> Option<(&'a mut Value, String)> {
    let (parent, last) = split_last(tokens_at(ops, at))?;
    let key = last.to_string();
    resolve_mut(doc, parent).ok().map(|p| (p, key))
}

fn rollback(doc: &mut Value, log: Vec<Undo>, ops: &[Operation]) {
    // Each entry addresses a container that existed right after its mutation; undoing in
    // reverse order recreates exactly that state, so resolution cannot fail.
    let mut carry: Option<Value> = None;
    for u in log.into_iter().rev() {
        match u {
            Undo::Root(old) => carry = Some(std::mem::replace(doc, old)),
            Undo::ObjRemoveNew { at } => {
                if let Some((Value::Object(m), key)) = parent_mut(doc, ops, at) {
                    carry = m.shift_remove(&key);
                }
            }
            Undo::ObjRestore { at, old } => {
                if let Some((Value::Object(m), key)) = parent_mut(doc, ops, at) {
                    carry = m.insert(key, old); // existing key: keeps its position
                }
            }
            Undo::ObjReinsert { at, index, old } => {
                if let (Some((Value::Object(m), key)), Some(v)) = (parent_mut(doc, ops, at), old.or(carry.take())) {
                    m.shift_insert(index, key, v);
                }
            }
            Undo::ArrRemove { at, index } => {
                if let Some((Value::Array(a), _)) = parent_mut(doc, ops, at) {
                    if index < a.len() {
                        carry = Some(a.remove(index));
                    }
                }
            }
            Undo::ArrReinsert { at, index, old } => {
                if let (Some((Value::Array(a), _)), Some(v)) = (parent_mut(doc, ops, at), old.or(carry.take())) {
                    if index <= a.len() {
                        a.insert(index, v);
                    }
                }
            }
            Undo::ArrRestore { at, index, old } => {
                if let Some((Value::Array(a), _)) = parent_mut(doc, ops, at) {
                    if index < a.len() {
                        carry = Some(std::mem::replace(&mut a[index], old));
                    }
                }
            }
        }
    }
}

fn split_last(tokens: &[String]) -> Option<(&[String], &str)> {
    tokens.split_last().map(|(last, parent)| (parent, last.as_str()))
}

/// `value` is taken out of `slot` only once the add cannot fail any more, so a failing
/// `move` still holds the moved value and can give it back.
fn do_add(doc: &mut Value, tokens: &[String], at: At, slot: &mut Option<Value>, log: &mut Log) -> Result<(), PatchError> {
    let Some((parent_toks, last)) = split_last(tokens) else {
        let value = slot.take().unwrap_or(Value::Null);
        let old = std::mem::replace(doc, value);
        log.push(|| Undo::Root(old));
        return Ok(());
    };
    match resolve_mut(doc, parent_toks)? {
        Value::Object(m) => {
            let value = slot.take().unwrap_or(Value::Null);
            let prev = m.insert(last.to_string(), value);
            log.push(|| match prev {
                Some(old) => Undo::ObjRestore { at, old },
                None => Undo::ObjRemoveNew { at },
            });
        }
        Value::Array(a) => {
            let i = insert_index(last, a.len())?;
            a.insert(i, slot.take().unwrap_or(Value::Null));
            log.push(|| Undo::ArrRemove { at, index: i });
        }
        other => return Err(ptr_err(scalar_step_reason(last, type_name(other)))),
    }
    Ok(())
}

/// Store a removed value in the undo entry `do_remove` just pushed (it leaves `old` empty
/// so that `move` does not have to clone the moved value).
fn keep_removed(log: &mut Log, v: Value) {
    if !log.on {
        return; // nothing was pushed for this removal
    }
    match log.entries.last_mut() {
        Some(Undo::ObjReinsert { old, .. }) | Some(Undo::ArrReinsert { old, .. }) => *old = Some(v),
        _ => {}
    }
}

fn do_remove(doc: &mut Value, tokens: &[String], at: At, log: &mut Log) -> Result<Value, PatchError> {
    let Some((parent_toks, last)) = split_last(tokens) else {
        return Err(invalid("cannot remove the whole document"));
    };
    match resolve_mut(doc, parent_toks)? {
        Value::Object(m) => {
            if !m.contains_key(last) {
                return Err(ptr_err(missing_member_reason(last)));
            }
            // Position is needed to restore member order exactly on rollback (O(members),
            // only when the undo log is on).
            let index = if log.on { m.keys().position(|k| k == last).unwrap_or(0) } else { 0 };
            let old = m.shift_remove(last).unwrap_or(Value::Null);
            log.push(|| Undo::ObjReinsert { at, index, old: None });
            Ok(old)
        }
        Value::Array(a) => {
            let i = existing_index(last, a.len())?;
            let old = a.remove(i);
            log.push(|| Undo::ArrReinsert { at, index: i, old: None });
            Ok(old)
        }
        other => Err(ptr_err(scalar_step_reason(last, type_name(other)))),
    }
}

fn do_replace(doc: &mut Value, tokens: &[String], at: At, value: Value, log: &mut Log) -> Result<(), PatchError> {
    let Some((parent_toks, last)) = split_last(tokens) else {
        let old = std::mem::replace(doc, value);
        log.push(|| Undo::Root(old));
        return Ok(());
    };
    match resolve_mut(doc, parent_toks)? {
        Value::Object(m) => {
            let slot = m.get_mut(last).ok_or_else(|| ptr_err(missing_member_reason(last)))?;
            let old = std::mem::replace(slot, value);
            log.push(|| Undo::ObjRestore { at, old });
        }
        Value::Array(a) => {
            let i = existing_index(last, a.len())?;
            let old = std::mem::replace(&mut a[i], value);
            log.push(|| Undo::ArrRestore { at, index: i, old });
        }
        other => return Err(ptr_err(scalar_step_reason(last, type_name(other)))),
    }
    Ok(())
}

/// `from` is a proper prefix of `path` (moving a value into its own child).
pub fn is_proper_prefix<S: AsRef<str>, T: AsRef<str>>(from: &[S], path: &[T]) -> bool {
    from.len() < path.len() && from.iter().zip(path).all(|(a, b)| a.as_ref() == b.as_ref())
}

fn from_err(mut e: PatchError) -> PatchError {
    e.reason = format!("from: {}", e.reason);
    e
}

/// `value` is the operation's value for `add`/`replace` (moved or cloned by the caller);
/// `test` compares against `op.value` directly.
fn apply_one(doc: &mut Value, i: usize, op: &Operation, value: impl FnOnce() -> Value, log: &mut Log) -> Result<(), PatchError> {
    let path = At { op: i, from: false };
    let from = At { op: i, from: true };
    match op.kind {
        OpKind::Add => do_add(doc, &op.path_tokens, path, &mut Some(value()), log),
        OpKind::Remove => {
            let v = do_remove(doc, &op.path_tokens, path, log)?;
            keep_removed(log, v);
            Ok(())
        }
        OpKind::Replace => do_replace(doc, &op.path_tokens, path, value(), log),
        OpKind::Move => {
            if op.from_tokens == op.path_tokens {
                // Moving onto itself is a no-op, but the location must exist.
                return resolve(doc, &op.from_tokens).map(drop).map_err(from_err);
            }
            if is_proper_prefix(&op.from_tokens, &op.path_tokens) {
                return Err(invalid("cannot move a value into one of its own children"));
            }
            let v = do_remove(doc, &op.from_tokens, from, log).map_err(from_err)?;
            let mut slot = Some(v);
            let res = do_add(doc, &op.path_tokens, path, &mut slot, log);
            if let Some(v) = slot {
                keep_removed(log, v); // the add failed before taking the value
            }
            res
        }
        OpKind::Copy => {
            let v = resolve(doc, &op.from_tokens).map_err(from_err)?.clone();
            do_add(doc, &op.path_tokens, path, &mut Some(v), log)
        }
        OpKind::Test => {
            let actual = resolve(doc, &op.path_tokens)?;
            if json_eq(actual, &op.value) {
                Ok(())
            } else {
                Err(PatchError::new(ErrorKind::TestFailed, "test failed: value does not match"))
            }
        }
    }
}

fn run(doc: &mut Value, ops: &[Operation], mut value_of: impl FnMut(usize) -> Value) -> Result<(), PatchError> {
    let mut log = Log { entries: Vec::new(), on: true };
    for (i, op) in ops.iter().enumerate() {
        log.on = i + 1 < ops.len() || op.kind == OpKind::Move;
        if let Err(e) = apply_one(doc, i, op, || value_of(i), &mut log) {
            rollback(doc, log.entries, ops);
            return Err(e.at(i, op.kind.name(), &op.path));
        }
    }
    Ok(())
}

/// Apply a patch in place, atomically: on error `doc` is exactly as before. Values are
/// cloned out of `ops` (see [`apply_patch_owned`] to move them).
pub fn apply_patch(doc: &mut Value, ops: &[Operation]) -> Result<(), PatchError> {
    run(doc, ops, |i| ops[i].value.clone())
}

/// [`apply_patch`], moving the `add`/`replace` values out of `ops` instead of cloning.
pub fn apply_patch_owned(doc: &mut Value, mut ops: Vec<Operation>) -> Result<(), PatchError> {
    let mut values: Vec<Value> = ops
        .iter_mut()
        .map(|o| match o.kind {
            OpKind::Add | OpKind::Replace => std::mem::take(&mut o.value),
            _ => Value::Null,
        })
        .collect();
    run(doc, &ops, |i| std::mem::take(&mut values[i]))
}

/// Parse and apply a JSON patch (convenience for tests and tools).
pub fn apply_json_patch(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    apply_patch_owned(doc, parse_patch(patch)?)
}

/// An empty JSON object (handy default for state documents).
pub fn empty_object() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vectors_dir() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/client/json-patch")
    }

    fn run_suite(file: &str) -> (usize, usize) {
        let text = std::fs::read_to_string(vectors_dir().join(file)).expect("suite file");
        let cases: Value = serde_json::from_str(&text).expect("suite json");
        let (mut run, mut skipped) = (0, 0);
        for (i, case) in cases.as_array().expect("array").iter().enumerate() {
            let Some(patch) = case.get("patch") else { continue };
            let two_ops = case.get("error").and_then(Value::as_str).is_some_and(|e| e.contains("two 'op'"));
            if case.get("disabled") == Some(&Value::Bool(true)) && two_ops {
                skipped += 1; // an object with two "op" members is not expressible after parsing
                continue;
            }
            let mut doc = case["doc"].clone();
            let before = doc.clone();
            let res = apply_json_patch(&mut doc, patch);
            if let Some(expected) = case.get("expected") {
                assert!(res.is_ok(), "{file}#{i} {}: {:?}", case["comment"], res);
                assert!(json_eq(&doc, expected), "{file}#{i}: got {doc} want {expected}");
            } else if case.get("error").is_some() {
                assert!(res.is_err(), "{file}#{i} {} should fail, got {doc}", case["comment"]);
                assert_eq!(doc, before, "{file}#{i}: not atomic");
            } else {
                assert!(res.is_ok(), "{file}#{i}: {:?}", res);
            }
            run += 1;
        }
        (run, skipped)
    }

    #[test]
    fn official_suite() {
        let (run, skipped) = run_suite("tests.json");
        assert_eq!((run, skipped), (94, 1)); // skipped: "duplicate ops"
        let (run, skipped) = run_suite("spec_tests.json");
        assert_eq!((run, skipped), (16, 1)); // skipped: "A.13 Invalid JSON Patch Document"
    }

    #[test]
    fn pointers() {
        assert_eq!(parse_pointer("").unwrap(), Vec::<String>::new());
        assert_eq!(parse_pointer("/").unwrap(), vec![""]);
        assert_eq!(parse_pointer("/a~1b/c~0d/~01").unwrap(), vec!["a/b", "c~d", "~1"]);
        assert!(parse_pointer("a").is_err());
        assert!(parse_pointer("/a~2").is_err());
        assert!(parse_pointer("/a~").is_err());
        assert_eq!(format_pointer(&["a/b", "c~d"]), "/a~1b/c~0d");
        assert_eq!(escape("~/"), "~0~1");
        assert!(parse_index("01").is_err());
        assert!(parse_index("-1").is_err());
        assert!(parse_index("1e0").is_err());
        assert!(parse_index("+1").is_err());
        assert_eq!(parse_index("0").unwrap(), 0);
        assert!(parse_index("99999999999999999999999").is_err());
    }

    #[test]
    fn equality() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(!json_eq(&json!(true), &json!(1)));
        assert!(!json_eq(&json!(0), &json!(false)));
        assert!(json_eq(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})));
        assert!(!json_eq(&json!([1, 2]), &json!([2, 1])));
        let big: Value = serde_json::from_str("123456789012345678901234567890").unwrap();
        let big2: Value = serde_json::from_str("123456789012345678901234567891").unwrap();
        assert!(json_eq(&big, &big.clone()));
        assert!(!json_eq(&big, &big2));
    }

    #[test]
    fn atomic_with_order() {
        let mut doc = json!({"a": 1, "b": {"c": [1, 2, 3]}, "d": 4});
        let before = serde_json::to_string(&doc).unwrap();
        let patch = json!([
            {"op": "remove", "path": "/a"},
            {"op": "add", "path": "/b/c/0", "value": 0},
            {"op": "move", "from": "/d", "path": "/b/d"},
            {"op": "replace", "path": "/b/c/1", "value": "x"},
            {"op": "copy", "from": "/b", "path": "/e"},
            {"op": "add", "path": "/b/c/-", "value": 9},
            {"op": "replace", "path": "", "value": {"z": 1}},
            {"op": "test", "path": "/z", "value": 2}
        ]);
        let err = apply_json_patch(&mut doc, &patch).unwrap_err();
        assert_eq!(err.kind, ErrorKind::TestFailed);
        assert_eq!(err.index, Some(7));
        assert_eq!(serde_json::to_string(&doc).unwrap(), before);
        assert_eq!(err.to_string(), "patch operation 7 (test /z): test failed: value does not match");
    }

    #[test]
    fn errors() {
        let mut doc = json!({"a": {"b": 1}, "l": [1]});
        let e = apply_json_patch(&mut doc, &json!([{"op": "move", "from": "/a", "path": "/a/b/c"}])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        let e = apply_json_patch(&mut doc, &json!([{"op": "replace", "path": "/l/-", "value": 1}])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Pointer);
        let e = apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/l/01", "value": 1}])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Pointer);
        let e = apply_json_patch(&mut doc, &json!([{"op": "frob", "path": "/l"}])).unwrap_err();
        assert_eq!(e.to_string(), "patch operation 0 (frob /l): unknown op \"frob\"");
        let e = apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/x"}])).unwrap_err();
        assert!(e.reason.contains("value"));
        let e = apply_json_patch(&mut doc, &json!([{"op": "remove", "path": ""}])).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        let e = apply_json_patch(&mut doc, &json!({"op": "remove"})).unwrap_err();
        assert_eq!(e.index, None);
        // moving onto itself is a no-op; from == path prefix edge: "/a" into "/ab" is fine
        apply_json_patch(&mut doc, &json!([{"op": "move", "from": "/a", "path": "/a"}])).unwrap();
        apply_json_patch(&mut doc, &json!([{"op": "move", "from": "/a", "path": "/ab"}])).unwrap();
        assert_eq!(doc, json!({"l": [1], "ab": {"b": 1}}));
    }

    #[test]
    fn state_deltas_vectors() {
        // The reference library's recorded results; we agree except where the RFC says
        // otherwise (leading-zero indices, move into own child reported as TypeError).
        let text = std::fs::read_to_string(vectors_dir().join("state_deltas.jsonl")).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let case: Value = serde_json::from_str(line).unwrap();
            let name = case["name"].as_str().unwrap();
            let mut doc = case["doc"].clone();
            let res = apply_json_patch(&mut doc, &case["patch"]);
            if name.starts_with("leading_zero_index") {
                assert!(res.is_err(), "{name}");
                continue;
            }
            if case["fjp_error"].is_null() {
                assert!(res.is_ok(), "{name}: {res:?}");
                assert!(json_eq(&doc, &case["fjp_result"]), "{name}");
            } else {
                assert!(res.is_err(), "{name}");
                assert_eq!(doc, case["doc"], "{name}");
                if let Some(i) = case["fjp_error_index"].as_u64() {
                    assert_eq!(res.unwrap_err().index, Some(i as usize), "{name}");
                }
            }
        }
    }
}
