//! RFC 6902 JSON Patch and RFC 6901 JSON Pointer: one engine for every document type.
//!
//! # API (core)
//!
//! ```ignore
//! let ops = parse_patch(&patch_json)?;                       // Vec<Operation>, validated
//! apply_patch(&mut doc, &ops, &Options::default())?;         // atomic; clones op values
//! apply_patch_owned(&mut doc, ops, &opts)?;                  // moves op values instead
//! apply_json_patch(&mut doc, &patch_json, &opts)?;           // parse + apply_patch_owned
//! let v = parse_json(bytes, opts.max_depth)?;                // JSON text -> Value, depth-checked
//! // the reference client (fast-json-patch 3.1.1, applyPatch(doc, patch, true, false)):
//! let opts = Options { dialect: Dialect::FastJsonPatch, ..Options::default() };
//! ```
//!
//! Every function is atomic: on `Err(PatchError)` the document is exactly as before
//! (member order included). [`PatchError`] has `kind` (the Python class), `index`, `op`,
//! `path` and a `reason`; `Display` gives `patch operation 1 (replace /a/c): member "c" not
//! found`. [`Options::max_depth`] (default [`crate::limits::DEFAULT_MAX_DEPTH`]) bounds the
//! nesting of the patched document and of every value the engine walks.
//!
//! # Structure
//! - [`engine`]: the engine, generic over a [`engine::Document`] (dispatch, `move`/`copy`,
//!   pointer resolution, JSON equality, depth limit, undo log and rollback, dialects);
//! - `value`: the document implementation for `serde_json::Value`; the `agui-py` binding
//!   implements the same trait for Python dicts and lists;
//! - [`read`]: the one reader of an operation's members (JSON objects here, Python dicts
//!   and objects in the binding); `tokens`: the one pointer tokenizer ([`split_pointer`]);
//! - [`build`]: a value builder applying the rules of JSON text (`rules`), over the
//!   binding's factory of Python values; [`owned`]: the containers a copy-on-write
//!   document may write in place;
//! - this module: errors, pointers, operations, the `Value` entry points.
//!
//! Semantics decisions (documented in `docs/patch.md`):
//! - array indices are canonical decimal: `0` or no leading zero; `-` means "after the
//!   last element" and is accepted only as the target of `add` (and `move`/`copy` targets);
//! - `test` compares as JSON: a bool never equals a number, numbers compare by exact
//!   mathematical value (`1 == 1.0`, `2**53 + 1 != 2.0**53`), objects ignore member order;
//! - a patch is atomic: on failure every mutation already done is rolled back through an
//!   undo log (cheap on success, and member order is restored exactly);
//! - removing the whole document (`remove` with path `""`) is an error.
//!
//! [`Dialect::FastJsonPatch`] applies patches as fast-json-patch 3.1.1 does when called
//! like the reference client's reducer (`applyPatch(doc, patch, true, false)`): array
//! indices may have leading zeros (`01` is 1, an empty token is 0), its internal `_get`
//! operation is accepted (the location must exist), `__proto__` and
//! `constructor/prototype` in a pointer are refused, numbers compare as doubles, and
//! `remove` of the whole document leaves `null`. Moving a value into its own child fails
//! in both (fast-json-patch with a `TypeError`).

pub mod build;
pub mod cache;
pub mod engine;
mod plain;
pub mod owned;
pub mod read;
mod rules;
mod tokens;
pub mod tree;
mod value;

pub use rules::{container_rule, float_rule, int_rule};
pub use plain::{read_plain_patch, scan_plain_ops, PlainOps};
pub use tokens::{split_pointer, Tokens};
pub(crate) use plain::Text;

use serde_json::{Map, Value};
use std::fmt;
use std::sync::Arc;

use crate::limits::{DEFAULT_MAX_DEPTH, DEFAULT_MAX_PATCH_BYTES};
pub use value::{num_eq, num_of, number_eq, Members, Num, OwnedJson};

/// Which rules the engine follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// RFC 6902 / RFC 6901 as the official test suite requires.
    #[default]
    Rfc6902,
    /// fast-json-patch 3.1.1 as the reference TypeScript client calls it.
    FastJsonPatch,
}

/// Options of one apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub dialect: Dialect,
    /// Maximum nesting of the document and of the values walked (a scalar is depth 0).
    pub max_depth: usize,
    /// Most memory one patch application may build: the values it adds and copies, counted
    /// as they are built ([`engine::Budget`]); past it the patch fails
    /// ([`ErrorKind::Limit`]) and the document is unchanged.
    pub max_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { dialect: Dialect::Rfc6902, max_depth: DEFAULT_MAX_DEPTH, max_bytes: DEFAULT_MAX_PATCH_BYTES }
    }
}

impl Options {
    /// The reference client's options (fast-json-patch) with these limits.
    pub fn fast_json_patch(max_depth: usize, max_bytes: usize) -> Self {
        Options { dialect: Dialect::FastJsonPatch, max_depth, max_bytes }
    }
}

/// A value nested deeper than the limit (or a cycle, which never ends).
pub fn too_deep(max_depth: usize) -> PatchError {
    invalid(format!("value nested deeper than {max_depth} levels (or cyclic)"))
}

/// What went wrong with a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Malformed patch or operation, or an operation that cannot apply.
    Invalid,
    /// A pointer is malformed or does not resolve.
    Pointer,
    /// A `test` operation did not match.
    TestFailed,
    /// The patch would build more than its memory budget.
    Limit,
}

impl From<ErrorKind> for crate::kind::Kind {
    fn from(k: ErrorKind) -> Self {
        use crate::kind::Kind;
        match k {
            ErrorKind::Invalid => Kind::Patch,
            ErrorKind::Pointer => Kind::Pointer,
            ErrorKind::TestFailed => Kind::PatchTestFailed,
            ErrorKind::Limit => Kind::PatchLimit,
        }
    }
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
    /// The error of operation `index` (its `op` and `path` when they were read).
    pub fn located(mut self, index: usize, op: Option<&str>, path: Option<&str>) -> Self {
        self.index = Some(index);
        self.op = op.map(str::to_string);
        self.path = path.map(str::to_string);
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

pub(crate) fn ptr_err(reason: impl Into<String>) -> PatchError {
    PatchError::new(ErrorKind::Pointer, reason)
}

/// An [`ErrorKind::Invalid`] error.
pub fn invalid(reason: impl Into<String>) -> PatchError {
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
    split_pointer(pointer, str::to_string)
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

/// Parse an array index token: canonical decimal (no sign, no leading zero), or in the
/// fast-json-patch dialect any run of ASCII digits (`01` is 1, `""` is 0). `-` is not
/// handled here (callers decide whether "past the end" is allowed).
pub fn parse_index(token: &str, dialect: Dialect) -> Result<usize, PatchError> {
    let b = token.as_bytes();
    let digits = b.iter().all(u8::is_ascii_digit);
    let ok = match dialect {
        Dialect::Rfc6902 => digits && !b.is_empty() && (b.len() == 1 || b[0] != b'0'),
        Dialect::FastJsonPatch => digits,
    };
    if !ok {
        return Err(ptr_err(format!("invalid array index {token:?}")));
    }
    if b.is_empty() {
        return Ok(0);
    }
    token.parse::<usize>().map_err(|_| ptr_err(format!("array index {token} out of range")))
}

/// Index of an existing element (`-` and `len` are out of range).
pub fn existing_index(token: &str, len: usize, dialect: Dialect) -> Result<usize, PatchError> {
    if token == "-" {
        return Err(ptr_err("'-' refers to the nonexistent element after the last array element"));
    }
    let i = parse_index(token, dialect)?;
    if i >= len {
        return Err(ptr_err(format!("array index {i} out of range (array length {len})")));
    }
    Ok(i)
}

/// Insertion index for `add`: `0..=len`, `-` meaning `len`.
pub fn insert_index(token: &str, len: usize, dialect: Dialect) -> Result<usize, PatchError> {
    if token == "-" {
        return Ok(len);
    }
    let i = parse_index(token, dialect)?;
    if i > len {
        return Err(ptr_err(format!("array index {i} out of range (array length {len})")));
    }
    Ok(i)
}

/// Name of a JSON type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    engine::Node::kind(&v).name().unwrap_or("object")
}

/// Why stepping into a scalar fails (shared wording with the Python applier).
pub fn scalar_step_reason(token: &str, type_name: &str) -> String {
    format!("cannot resolve {:?} inside a {type_name}", token)
}

/// Why a missing object member fails.
pub fn missing_member_reason(token: &str) -> String {
    format!("member {token:?} not found")
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
    /// fast-json-patch's internal read operation (an unknown op in RFC 6902).
    Get,
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
            "_get" => OpKind::Get,
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
            OpKind::Get => "_get",
        }
    }
    pub fn needs_value(self) -> bool {
        matches!(self, OpKind::Add | OpKind::Replace | OpKind::Test)
    }
    pub fn needs_from(self) -> bool {
        matches!(self, OpKind::Move | OpKind::Copy)
    }
}

/// A parsed pointer: its text and its unescaped tokens, both shared, so that an
/// operation built from a cached pointer allocates nothing for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    pub text: Arc<str>,
    pub tokens: Arc<[String]>,
}

impl Pointer {
    pub fn parse(text: &str) -> Result<Pointer, PatchError> {
        // Up to three tokens go straight into their shared slice (no vector between).
        let tokens: Arc<[String]> = match split_pointer(text, str::to_string)? {
            Tokens::Empty => Arc::new([]),
            Tokens::One(a) => Arc::new(a),
            Tokens::Two(a) => Arc::new(a),
            Tokens::Three(a) => Arc::new(a),
            Tokens::Heap(v) => v.into(),
        };
        Ok(Pointer { tokens, text: text.into() })
    }
}

/// One validated operation: pointers already split, members checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub kind: OpKind,
    pub path: Pointer,
    /// `move`/`copy` only.
    pub from: Option<Pointer>,
    /// `add`/`replace`/`test` only (`null` otherwise).
    pub value: Value,
}

impl Operation {
    /// Build an operation from parsed members (checks that `from`/`value` are there when
    /// the operation needs them).
    pub fn from_parts(index: usize, kind: OpKind, path: Pointer, from: Option<Pointer>, value: Option<Value>) -> Result<Operation, PatchError> {
        let at = |e: PatchError| e.located(index, Some(kind.name()), Some(&path.text));
        if kind.needs_from() && from.is_none() {
            return Err(at(invalid("missing member 'from'")));
        }
        let value = match (kind.needs_value(), value) {
            (true, None) => return Err(at(invalid("missing member 'value'"))),
            (true, Some(v)) => v,
            (false, _) => Value::Null,
        };
        Ok(Operation { kind, path, from: if kind.needs_from() { from } else { None }, value })
    }
}

/// Validate a patch given as JSON (an array of operation objects). Unknown members are
/// ignored (RFC 6902 section 4).
pub fn parse_patch(patch: &Value) -> Result<Vec<Operation>, PatchError> {
    parse_patch_owned(patch.clone())
}

/// [`parse_patch`] of a patch the caller gives away: values are moved, not cloned.
pub fn parse_patch_owned(patch: Value) -> Result<Vec<Operation>, PatchError> {
    let Value::Array(items) = patch else {
        return Err(invalid(format!("a JSON Patch must be an array, not {}", type_name(&patch))));
    };
    let mut ops = Vec::with_capacity(items.len());
    for (i, mut item) in items.into_iter().enumerate() {
        let value = item.get_mut("value").map(Value::take);
        ops.push(read_operation(i, &item, value)?);
    }
    Ok(ops)
}

/// An operation object of a patch, its `value` member taken out beforehand.
struct JsonOp<'a>(&'a Map<String, Value>, Option<Value>);

impl<'a> read::OpSource for JsonOp<'a> {
    type Str = &'a str;
    type Value = Value;
    type Error = std::convert::Infallible;
    fn string(&mut self, name: &'static str) -> Result<Option<Result<&'a str, String>>, Self::Error> {
        Ok(self.0.get(name).map(|v| v.as_str().ok_or_else(|| type_name(v).to_string())))
    }
    fn text<'s>(&self, s: &'s &'a str) -> Option<std::borrow::Cow<'s, str>> {
        Some(std::borrow::Cow::Borrowed(s))
    }
    fn value(&mut self) -> Result<Option<Value>, Self::Error> {
        Ok(self.1.take())
    }
}

/// One operation object of a patch (its `value` member taken out beforehand).
fn read_operation(i: usize, item: &Value, value: Option<Value>) -> Result<Operation, PatchError> {
    let Value::Object(m) = item else {
        let mut e = invalid(format!("operation must be an object, not {}", type_name(item)));
        e.index = Some(i);
        return Err(e);
    };
    let op = read::read_op(i, &mut JsonOp(m, value), None, Pointer::parse).map_err(no_doc_error)?;
    Ok(Operation { kind: op.kind, path: op.path, from: op.from, value: op.value.unwrap_or(Value::Null) })
}

// ---------------------------------------------------------------------------------------
// The `serde_json::Value` entry points
// ---------------------------------------------------------------------------------------

fn no_doc_error(f: engine::Fail<std::convert::Infallible>) -> PatchError {
    match f {
        engine::Fail::Patch(e) => e,
        engine::Fail::Doc(never) => match never {},
    }
}

/// Apply a patch in place, atomically: on error `doc` is exactly as before. Values are
/// cloned out of `ops` (see [`apply_patch_owned`] to move them).
pub fn apply_patch(doc: &mut Value, ops: &[Operation], opts: &Options) -> Result<(), PatchError> {
    let mut d = value::ValueDoc::new(doc, None);
    engine::apply_all(&mut d, ops, *opts).map_err(no_doc_error)
}

/// [`apply_patch`], moving the `add`/`replace` values out of `ops` instead of cloning.
pub fn apply_patch_owned(doc: &mut Value, ops: Vec<Operation>, opts: &Options) -> Result<(), PatchError> {
    Replayer::new(doc, opts).apply_owned(ops)
}

/// Read a patch given as JSON text: a plain patch straight into operations (pointers
/// through `pointers`), anything else through a `Value` (nesting checked against
/// `max_depth` plus the two levels of the patch array and the operation object), which
/// names the error.
pub fn read_patch_text(text: &[u8], max_depth: usize, pointers: &mut cache::PointerCache) -> Result<Vec<Operation>, PatchError> {
    if let Some(ops) = read_plain_patch(text, max_depth, pointers) {
        return Ok(ops);
    }
    let v = parse_json(text, max_depth, 2).map_err(|mut e| {
        e.reason = format!("patch is {}", e.reason);
        e
    })?;
    parse_patch_owned(v)
}

/// Applies patches to one document (a `Value`, or any [`OwnedJson`] tree such as a
/// [`tree::Tree`]) in turn, each atomically, reusing its buffers.
pub struct Replayer<'d, V: OwnedJson = Value> {
    doc: value::ValueDoc<'d, V>,
    patcher: engine::Patcher<value::ValueDoc<'d, V>>,
}

impl<'d, V: OwnedJson> Replayer<'d, V> {
    pub fn new(doc: &'d mut V, opts: &Options) -> Self {
        Replayer { doc: value::ValueDoc::new(doc, Some(Vec::new())), patcher: engine::Patcher::new(*opts) }
    }

    /// A replayer whose `copy` operations copy at most `copies` bytes in all, left of an
    /// allowance of `of` ([`engine::Patcher::with_copy_allowance`]).
    pub fn with_copy_allowance(doc: &'d mut V, opts: &Options, copies: usize, of: usize) -> Self {
        Replayer { doc: value::ValueDoc::new(doc, Some(Vec::new())), patcher: engine::Patcher::new(*opts).with_copy_allowance(copies, of) }
    }

    /// What copies may still copy ([`engine::Patcher::copy_allowance`]).
    pub fn copy_allowance(&self) -> usize {
        self.patcher.copy_allowance()
    }

    /// Apply one patch, moving the `add`/`replace` values out of `ops`.
    pub fn apply_owned(&mut self, ops: Vec<Operation>) -> Result<(), PatchError> {
        value::run_owned(&mut self.doc, &mut self.patcher, ops).map_err(no_doc_error)
    }

    /// The document.
    pub fn doc(&self) -> &V {
        self.doc.root
    }
}

/// Parse and apply a patch given as JSON.
pub fn apply_json_patch(doc: &mut Value, patch: &Value, opts: &Options) -> Result<(), PatchError> {
    apply_patch_owned(doc, parse_patch(patch)?, opts)
}

/// [`apply_json_patch`] of a patch the caller gives away (its values are moved).
pub fn apply_json_patch_owned(doc: &mut Value, patch: Value, opts: &Options) -> Result<(), PatchError> {
    apply_patch_owned(doc, parse_patch_owned(patch)?, opts)
}

/// Resolve a pointer (already split into tokens) to a value.
pub fn resolve<'a>(doc: &'a Value, tokens: &[String]) -> Result<&'a Value, PatchError> {
    engine::resolve(doc, tokens, Dialect::Rfc6902).map_err(|f| match f {
        engine::Fail::Patch(e) => e,
        engine::Fail::Doc(never) => match never {},
    })
}

/// JSON equality (RFC 6902 section 4.6) of two values (nesting up to the default limit;
/// deeper values compare unequal).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    matches!(engine::json_eq(&a, &b, &Options::default(), 0), Ok(true))
}

/// An empty JSON object (handy default for state documents).
pub fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Largest integer accepted in documents (decimal digits): CPython's default
/// `int_max_str_digits`, so that every accepted document converts to Python.
pub const MAX_INT_DIGITS: usize = 4300;

/// Check a number read from JSON text: integers of at most [`MAX_INT_DIGITS`] digits,
/// other numbers finite doubles (`1e400` is an error, not infinity or NaN).
pub fn check_number(n: &serde_json::Number) -> Result<(), PatchError> {
    if n.is_i64() || n.is_u64() {
        return Ok(());
    }
    let s = n.as_str();
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        return int_rule(s);
    }
    float_rule(n.as_f64().unwrap_or(f64::INFINITY)).map_err(|_| invalid(format!("number {s} is out of range for a double")))
}

fn check_numbers(v: &Value) -> Result<(), PatchError> {
    match v {
        Value::Number(n) => check_number(n),
        Value::Array(a) => a.iter().try_for_each(check_numbers),
        Value::Object(m) => m.values().try_for_each(check_numbers),
        _ => Ok(()),
    }
}

/// Parse JSON text for a document or a patch: nesting up to `max_depth` plus `extra`
/// levels (a patch wraps its values in two: the array and the operation), numbers
/// checked by [`check_number`].
pub fn parse_json(text: &[u8], max_depth: usize, extra: usize) -> Result<Value, PatchError> {
    let v = crate::limits::parse_value(text, max_depth + extra).map_err(|e| match e {
        crate::limits::ParseError::TooDeep(_) => too_deep(max_depth),
        crate::limits::ParseError::Json(e) => invalid(format!("not valid JSON: {e}")),
    })?;
    check_numbers(&v)?;
    Ok(v)
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
            let res = apply_json_patch(&mut doc, patch, &Options::default());
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
        assert!(parse_index("01", Dialect::Rfc6902).is_err());
        assert!(parse_index("-1", Dialect::Rfc6902).is_err());
        assert!(parse_index("1e0", Dialect::Rfc6902).is_err());
        assert!(parse_index("+1", Dialect::Rfc6902).is_err());
        assert_eq!(parse_index("0", Dialect::Rfc6902).unwrap(), 0);
        assert!(parse_index("99999999999999999999999", Dialect::Rfc6902).is_err());
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
        let err = apply_json_patch(&mut doc, &patch, &Options::default()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::TestFailed);
        assert_eq!(err.index, Some(7));
        assert_eq!(serde_json::to_string(&doc).unwrap(), before);
        assert_eq!(err.to_string(), "patch operation 7 (test /z): test failed: value does not match");
    }

    #[test]
    fn errors() {
        let mut doc = json!({"a": {"b": 1}, "l": [1]});
        let e = apply_json_patch(&mut doc, &json!([{"op": "move", "from": "/a", "path": "/a/b/c"}]), &Options::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        let e = apply_json_patch(&mut doc, &json!([{"op": "replace", "path": "/l/-", "value": 1}]), &Options::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Pointer);
        let e = apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/l/01", "value": 1}]), &Options::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Pointer);
        let e = apply_json_patch(&mut doc, &json!([{"op": "frob", "path": "/l"}]), &Options::default()).unwrap_err();
        assert_eq!(e.to_string(), "patch operation 0 (frob /l): unknown op \"frob\"");
        let e = apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/x"}]), &Options::default()).unwrap_err();
        assert!(e.reason.contains("value"));
        let e = apply_json_patch(&mut doc, &json!([{"op": "remove", "path": ""}]), &Options::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        let e = apply_json_patch(&mut doc, &json!({"op": "remove"}), &Options::default()).unwrap_err();
        assert_eq!(e.index, None);
        // moving onto itself is a no-op; from == path prefix edge: "/a" into "/ab" is fine
        apply_json_patch(&mut doc, &json!([{"op": "move", "from": "/a", "path": "/a"}]), &Options::default()).unwrap();
        apply_json_patch(&mut doc, &json!([{"op": "move", "from": "/a", "path": "/ab"}]), &Options::default()).unwrap();
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
            let res = apply_json_patch(&mut doc, &case["patch"], &Options::default());
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

    fn fjp() -> Options {
        Options { dialect: Dialect::FastJsonPatch, ..Options::default() }
    }

    /// Every recorded fast-json-patch 3.1.1 result, reproduced in its dialect: the same
    /// result (as JSON), the same failing patches and operation indices, atomicity.
    fn check_fjp_file(file: &str) -> usize {
        let text = std::fs::read_to_string(vectors_dir().join(file)).unwrap();
        let mut n = 0;
        for (line_no, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let case: Value = serde_json::from_str(line).unwrap();
            let name = format!("{file}:{line_no} {}", case.get("name").or(case.get("comment")).unwrap_or(&Value::Null));
            let mut doc = case["doc"].clone();
            let res = apply_json_patch(&mut doc, &case["patch"], &fjp());
            if case["fjp_error"].is_null() {
                assert!(res.is_ok(), "{name}: {res:?}");
                assert!(json_eq(&doc, &case["fjp_result"]), "{name}: got {doc} want {}", case["fjp_result"]);
            } else {
                let e = res.expect_err(&name);
                assert_eq!(doc, case["doc"], "{name}: not atomic");
                if let Some(i) = case["fjp_error_index"].as_u64() {
                    assert_eq!(e.index, Some(i as usize), "{name}: {e}");
                }
            }
            n += 1;
        }
        n
    }

    #[test]
    fn fast_json_patch_dialect_matches_recorded_results() {
        assert_eq!(check_fjp_file("fast-json-patch.jsonl"), 112);
        assert_eq!(check_fjp_file("state_deltas.jsonl"), 200);
    }

    #[test]
    fn fast_json_patch_dialect_details() {
        let mut doc = json!({"l": [1, 2, 3], "n": 9007199254740993u64});
        // `01` is index 1 where fast-json-patch does not check that the location exists
        // (add's last token); replace checks it first, by a property lookup, and fails
        apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/l/01", "value": 9}]), &fjp()).unwrap();
        assert_eq!(doc["l"], json!([1, 9, 2, 3]));
        assert!(apply_json_patch(&mut doc, &json!([{"op": "replace", "path": "/l/01", "value": 9}]), &fjp()).is_err());
        apply_json_patch(&mut doc, &json!([{"op": "remove", "path": "/l/1"}]), &fjp()).unwrap();
        // numbers compare as doubles: 2**53 + 1 equals 2.0**53 in JavaScript
        apply_json_patch(&mut doc, &json!([{"op": "test", "path": "/n", "value": 9007199254740992.0}]), &fjp()).unwrap();
        assert!(apply_json_patch(&mut doc, &json!([{"op": "test", "path": "/n", "value": 9007199254740992.0}]), &Options::default()).is_err());
        apply_json_patch(&mut doc, &json!([{"op": "_get", "path": "/l/0"}]), &fjp()).unwrap();
        assert!(apply_json_patch(&mut doc, &json!([{"op": "_get", "path": "/nope"}]), &fjp()).is_err());
        assert!(apply_json_patch(&mut doc, &json!([{"op": "_get", "path": "/l"}]), &Options::default()).is_err());
        let e = apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/__proto__/x", "value": 1}]), &fjp()).unwrap_err();
        assert!(e.reason.contains("banned"), "{e}");
        apply_json_patch(&mut doc, &json!([{"op": "add", "path": "/__proto__", "value": 1}]), &Options::default()).unwrap();
        let mut doc = json!({"a": 1});
        apply_json_patch(&mut doc, &json!([{"op": "remove", "path": ""}]), &fjp()).unwrap();
        assert_eq!(doc, Value::Null);
    }

    #[test]
    fn exact_number_equality() {
        let n = |s: &str| -> Value { serde_json::from_str(s).unwrap() };
        assert!(json_eq(&n("1"), &n("1.0")));
        assert!(!json_eq(&n("9007199254740993"), &n("9007199254740992.0")));
        assert!(json_eq(&n("9007199254740992"), &n("9007199254740992.0")));
        assert!(!json_eq(&n("1000000000000000000000000000000"), &n("1e30")));
        assert!(json_eq(&n("1000000000000000019884624838656"), &n("1e30")));
        assert!(json_eq(&n("0"), &n("-0.0")));
        assert!(json_eq(&n("-0"), &n("0")));
        assert!(!json_eq(&n("1.5"), &n("1")));
    }

    #[test]
    fn numbers_past_the_double_range() {
        let n = |s: &str| -> Value { serde_json::from_str(s).unwrap() };
        let big = format!("1{}", "0".repeat(400));
        let bigger = format!("1{}", "0".repeat(401));
        let fjp = |a: &str, b: &str| number_eq(n(a).as_number().unwrap(), n(b).as_number().unwrap(), Dialect::FastJsonPatch);
        let rfc = |a: &str, b: &str| number_eq(n(a).as_number().unwrap(), n(b).as_number().unwrap(), Dialect::Rfc6902);
        // fast-json-patch reads each as `Infinity` (checked against it), and `===` holds
        for (a, b) in [(&*big, &*big), (&big, &bigger), (&big, "1e400"), ("1e400", "1e999"), ("-1e400", &format!("-{big}"))] {
            assert!(fjp(a, b), "{a} {b}");
        }
        assert!(!fjp(&big, "-1e400") && !fjp(&big, "1.7976931348623157e308") && !fjp("9007199254740993", "1"));
        assert!(fjp("9007199254740993", "9007199254740992"));
        // Python's `==`: integers exactly, an infinity equal to an infinity of its sign only
        assert!(rfc(&big, &big) && !rfc(&big, &bigger) && !rfc(&big, "1e400"));
        assert!(rfc("1e400", "1e999") && !rfc("1e400", "-1e400"));
    }

    #[test]
    fn depth_limit() {
        let nested = |d: usize| -> Value { parse_json(("[".repeat(d) + &"]".repeat(d)).as_bytes(), d, 0).unwrap() };
        let deep_text = |d: usize| format!("[{{\"op\": \"add\", \"path\": \"/x\", \"value\": {}{}}}]", "[".repeat(d), "]".repeat(d));
        let mut doc = json!({});
        let ok = parse_json(deep_text(511).as_bytes(), 512, 2).unwrap();
        apply_json_patch(&mut doc, &ok, &Options::default()).unwrap();
        let too_deep = parse_json(deep_text(512).as_bytes(), 512, 2).unwrap();
        let e = apply_json_patch(&mut doc, &too_deep, &Options::default()).unwrap_err();
        assert!(e.reason.contains("deeper than 512"), "{e}");
        assert!(parse_json(deep_text(513).as_bytes(), 512, 2).is_err());
        assert!(parse_json("[".repeat(1_000_000).as_bytes(), 512, 2).is_err());
        // copying the root into its deepest node is refused once it would pass the limit
        let mut doc = json!({"a": {}});
        let mut deepest = vec!["a".to_string()];
        let mut refused = false;
        for _ in 0..20 {
            let mut path = deepest.clone();
            path.push("a".into());
            let patch = json!([{"op": "copy", "from": "", "path": format_pointer(&path)}]);
            if apply_json_patch(&mut doc, &patch, &Options::default()).is_err() {
                refused = true;
                break;
            }
            deepest = [path, deepest].concat();
        }
        assert!(refused);
        drop(doc);
        // a moved value that would end too deep is given back
        let mut doc = json!({"a": nested(511), "b": {"c": {}}});
        let before = doc.clone();
        assert!(apply_json_patch(&mut doc, &json!([{"op": "move", "from": "/a", "path": "/b/c/a"}]), &Options::default()).is_err());
        assert_eq!(doc, before);
        let opts = Options { max_depth: 3, ..Options::default() };
        assert!(apply_json_patch(&mut json!({}), &json!([{"op": "add", "path": "/a", "value": [[[]]]}]), &opts).is_err());
        apply_json_patch(&mut json!({}), &json!([{"op": "add", "path": "/a", "value": [[]]}]), &opts).unwrap();
    }

    #[test]
    fn numbers_from_text() {
        assert!(parse_json(b"1e400", 512, 0).is_err());
        assert!(parse_json(b"-1e400", 512, 0).is_err());
        assert!(parse_json("9".repeat(MAX_INT_DIGITS + 1).as_bytes(), 512, 0).is_err());
        assert!(parse_json("9".repeat(MAX_INT_DIGITS).as_bytes(), 512, 0).is_ok());
        assert!(parse_json(b"1.5e300", 512, 0).is_ok());
    }
}
