//! A [`Sink`] that builds a document value: what a walker over a foreign value (the
//! binding's walk over Python objects) produces for the patch engine, with the rules of
//! JSON text read by [`super::parse_json`]: nesting up to `max_depth`, integers of at most
//! [`super::MAX_INT_DIGITS`] digits, finite doubles.
//!
//! Sink methods cannot fail: the first broken rule is recorded and reported by
//! [`ValueBuilder::finish`] (the walk goes on, bounded by the walker's own depth guard).
//!
//! [`PatchBuilder`] reads a whole patch the same way, building the engine's operations.

use serde_json::{Map, Number, Value};

use super::{invalid, too_deep, PatchError, MAX_INT_DIGITS};
use crate::sink::Sink;

// The rules of the values a document holds (those of JSON text, `super::parse_json`),
// for every builder: this one and the binding's builder of Python values.

/// A container opened at nesting `depth` (0: the value itself is one).
pub fn container_rule(depth: usize, max_depth: usize) -> Result<(), PatchError> {
    if depth >= max_depth { Err(too_deep(max_depth)) } else { Ok(()) }
}

fn too_large_int() -> PatchError {
    invalid(format!("integer is too large (limit {MAX_INT_DIGITS} digits)"))
}

/// An integer given as exact decimal text: at most [`MAX_INT_DIGITS`] digits.
pub fn int_rule(decimal: &str) -> Result<(), PatchError> {
    let digits = decimal.strip_prefix('-').unwrap_or(decimal);
    if digits.len() <= MAX_INT_DIGITS { Ok(()) } else { Err(too_large_int()) }
}

/// Any other number: a finite double.
pub fn float_rule(v: f64) -> Result<(), PatchError> {
    if v.is_finite() { Ok(()) } else { Err(invalid(format!("{v} is not a JSON number"))) }
}

enum Open {
    Array(Vec<Value>),
    Object(Map<String, Value>, String),
}

/// Builds one `serde_json::Value` from a walk.
pub struct ValueBuilder {
    open: Vec<Open>,
    root: Option<Value>,
    max_depth: usize,
    error: Option<PatchError>,
}

impl Default for ValueBuilder {
    fn default() -> Self {
        ValueBuilder::new(crate::limits::DEFAULT_MAX_DEPTH)
    }
}

impl ValueBuilder {
    pub fn new(max_depth: usize) -> Self {
        ValueBuilder { open: Vec::new(), root: None, max_depth, error: None }
    }

    /// The value built, or the first rule it broke.
    pub fn finish(self) -> Result<Value, PatchError> {
        match (self.error, self.root) {
            (Some(e), _) => Err(e),
            (None, Some(v)) if self.open.is_empty() => Ok(v),
            _ => Err(invalid("incomplete value")),
        }
    }

    /// The first rule broken so far.
    pub fn error(&self) -> Option<&PatchError> {
        self.error.as_ref()
    }

    fn fail(&mut self, e: PatchError) {
        self.error.get_or_insert(e);
    }

    fn push(&mut self, v: Value) {
        match self.open.last_mut() {
            None => self.root = Some(v),
            Some(Open::Array(a)) => a.push(v),
            Some(Open::Object(m, key)) => {
                // Repeated keys merge as a Python dict does: first position, last value.
                m.insert(std::mem::take(key), v);
            }
        }
    }

    fn begin(&mut self, open: Open) {
        if let Err(e) = container_rule(self.open.len(), self.max_depth) {
            self.fail(e);
        }
        self.open.push(open);
    }

    fn end(&mut self) {
        let v = match self.open.pop() {
            Some(Open::Array(a)) => Value::Array(a),
            Some(Open::Object(m, _)) => Value::Object(m),
            None => return self.fail(invalid("unbalanced value")),
        };
        self.push(v);
    }
}

impl<'a> Sink<'a> for ValueBuilder {
    fn null(&mut self) {
        self.push(Value::Null)
    }
    fn bool(&mut self, v: bool) {
        self.push(Value::Bool(v))
    }
    fn i64(&mut self, v: i64) {
        self.push(Value::Number(v.into()))
    }
    fn big_int(&mut self, decimal: &str) {
        match int_rule(decimal).and_then(|()| decimal.parse::<Number>().map_err(|_| too_large_int())) {
            Ok(n) => self.push(Value::Number(n)),
            Err(e) => {
                self.fail(e);
                self.push(Value::Null)
            }
        }
    }
    fn f64(&mut self, v: f64) {
        match float_rule(v).map(|()| Number::from_f64(v)) {
            Ok(Some(n)) => self.push(Value::Number(n)),
            Ok(None) | Err(_) => {
                self.fail(invalid(format!("{v} is not a JSON number")));
                self.push(Value::Null)
            }
        }
    }
    fn str(&mut self, s: &str) {
        self.push(Value::String(s.to_owned()))
    }
    fn begin_array(&mut self) {
        self.begin(Open::Array(Vec::new()))
    }
    fn end_array(&mut self) {
        self.end()
    }
    fn begin_object(&mut self) {
        self.begin(Open::Object(Map::new(), String::new()))
    }
    fn key(&mut self, k: &str) {
        if let Some(Open::Object(_, key)) = self.open.last_mut() {
            k.clone_into(key);
        }
    }
    fn end_object(&mut self, _distinct_keys: bool) {
        self.end()
    }
    fn object_mark(&self) -> usize {
        match self.open.last() {
            Some(Open::Object(m, _)) => m.len(),
            _ => 0,
        }
    }
    fn rewind_object(&mut self, mark: usize) {
        if let Some(Open::Object(m, _)) = self.open.last_mut() {
            if m.len() > mark {
                *m = std::mem::take(m).into_iter().take(mark).collect();
            }
        }
    }
}

/// Which member of an operation the next value is.
#[derive(Clone, Copy, PartialEq)]
enum Member {
    Op,
    Path,
    From,
    Value,
    Other,
}

/// A [`Sink`] that reads a patch (an array of operation objects) as it is walked, into
/// the engine's operations: pointers through a small cache (a recurring path costs a
/// lookup, not a parse), each `value` through a [`ValueBuilder`]. It takes only plainly
/// well-formed patches: anything else (a member of the wrong type, a missing one, an
/// unknown op, a value that breaks a rule) makes [`PatchBuilder::finish`] return `None`,
/// and the caller reads that patch the exact way, which names the error.
#[derive(Default)]
pub struct PatchBuilder {
    pointers: super::cache::PointerCache,
    max_depth: usize,
    /// Open containers (1: in the patch array, 2: in an operation).
    depth: usize,
    ops: Vec<super::Operation>,
    kind: Option<super::OpKind>,
    path: Option<super::Pointer>,
    from: Option<super::Pointer>,
    value: Option<Value>,
    member: Option<Member>,
    /// The container value being built (`value`) or skipped (another member), while
    /// `depth > 2`.
    inner: Option<ValueBuilder>,
    bad: bool,
}

impl PatchBuilder {
    /// Start reading a patch whose values nest at most `max_depth` levels (the pointer
    /// cache is kept from patch to patch).
    pub fn start(&mut self, max_depth: usize) {
        self.max_depth = max_depth;
        self.depth = 0;
        self.ops = Vec::new();
        self.clear_op();
        self.bad = false;
    }

    /// The operations read, or `None` when the patch is not plainly well formed.
    pub fn finish(&mut self) -> Option<Vec<super::Operation>> {
        let ops = std::mem::take(&mut self.ops);
        (!self.bad && self.depth == 0).then_some(ops)
    }

    fn clear_op(&mut self) {
        self.kind = None;
        self.path = None;
        self.from = None;
        self.value = None;
        self.member = None;
        self.inner = None;
    }

    fn pointer(&mut self, text: &str) -> Option<super::Pointer> {
        self.pointers.get(text).ok()
    }

    /// A scalar: into the value being built, as an operation's member, or a misfit.
    fn scalar(&mut self, f: impl FnOnce(&mut ValueBuilder)) {
        if let Some(b) = &mut self.inner {
            return f(b);
        }
        match (self.depth, self.member) {
            (2, Some(Member::Value)) => {
                let mut b = ValueBuilder::new(self.max_depth);
                f(&mut b);
                self.take_value(b);
            }
            (2, Some(Member::Other)) => {}
            _ => self.bad = true,
        }
    }

    fn take_value(&mut self, b: ValueBuilder) {
        match b.finish() {
            Ok(v) => self.value = Some(v),
            Err(_) => self.bad = true,
        }
    }

    fn begin(&mut self, array: bool) {
        self.depth += 1;
        match self.depth {
            1 if array => {}
            2 if !array => self.clear_op(),
            3 => match self.member {
                Some(Member::Value | Member::Other) => {
                    let mut b = ValueBuilder::new(self.max_depth);
                    if array { b.begin_array() } else { b.begin_object() }
                    self.inner = Some(b);
                }
                _ => self.bad = true,
            },
            _ => match &mut self.inner {
                Some(b) if array => b.begin_array(),
                Some(b) => b.begin_object(),
                None => self.bad = true,
            },
        }
    }

    fn end(&mut self, array: bool) {
        if self.depth > 2 {
            if let Some(b) = &mut self.inner {
                if array { b.end_array() } else { b.end_object(true) }
            }
            if self.depth == 3 {
                if let Some(b) = self.inner.take() {
                    if self.member == Some(Member::Value) {
                        self.take_value(b);
                    }
                }
            }
        } else if self.depth == 2 {
            self.end_op();
        }
        self.depth = self.depth.saturating_sub(1);
    }

    fn end_op(&mut self) {
        let (Some(kind), Some(path)) = (self.kind, self.path.take()) else {
            self.bad = true;
            return;
        };
        match super::Operation::from_parts(self.ops.len(), kind, path, self.from.take(), self.value.take()) {
            Ok(op) => self.ops.push(op),
            Err(_) => self.bad = true,
        }
    }
}

impl<'a> Sink<'a> for PatchBuilder {
    fn null(&mut self) {
        self.scalar(|b| b.null())
    }
    fn bool(&mut self, v: bool) {
        self.scalar(|b| b.bool(v))
    }
    fn i64(&mut self, v: i64) {
        self.scalar(|b| b.i64(v))
    }
    fn big_int(&mut self, decimal: &str) {
        self.scalar(|b| b.big_int(decimal))
    }
    fn f64(&mut self, v: f64) {
        self.scalar(|b| b.f64(v))
    }
    fn str(&mut self, s: &str) {
        if self.inner.is_some() || self.depth != 2 {
            return self.scalar(|b| b.str(s));
        }
        match self.member {
            Some(Member::Op) => match super::OpKind::parse(s) {
                Some(k) => self.kind = Some(k),
                None => self.bad = true,
            },
            Some(Member::Path) => match self.pointer(s) {
                Some(p) => self.path = Some(p),
                None => self.bad = true,
            },
            Some(Member::From) => match self.pointer(s) {
                Some(p) => self.from = Some(p),
                None => self.bad = true,
            },
            Some(Member::Value) => self.value = Some(Value::String(s.to_owned())),
            Some(Member::Other) => {}
            None => self.bad = true,
        }
    }
    fn begin_array(&mut self) {
        self.begin(true)
    }
    fn end_array(&mut self) {
        self.end(true)
    }
    fn begin_object(&mut self) {
        self.begin(false)
    }
    fn key(&mut self, k: &str) {
        if let Some(b) = &mut self.inner {
            return b.key(k);
        }
        if self.depth != 2 {
            self.bad = true;
            return;
        }
        self.member = Some(match k {
            "op" => Member::Op,
            "path" => Member::Path,
            "from" => Member::From,
            "value" => Member::Value,
            _ => Member::Other,
        });
    }
    fn end_object(&mut self, _distinct_keys: bool) {
        self.end(false)
    }
    fn object_mark(&self) -> usize {
        0
    }
    fn rewind_object(&mut self, _mark: usize) {
        // Keys that are not plain strings: not a plainly well-formed patch.
        self.bad = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::json_value;

    fn build(text: &str, max_depth: usize) -> Result<Value, PatchError> {
        let v: Value = serde_json::from_str(text).unwrap();
        let mut b = ValueBuilder::new(max_depth);
        json_value(&v, &mut b);
        b.finish()
    }

    #[test]
    fn builds_what_it_is_walked() {
        let text = r#"{"a":[1,-2,1.5,"s",null,true,{}],"b":{"c":[]},"big":123456789012345678901234567890}"#;
        assert_eq!(serde_json::to_string(&build(text, 512).unwrap()).unwrap(), text);
    }

    #[test]
    fn rules_of_json_text() {
        let nest = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert!(build(&nest(3), 3).is_ok());
        assert!(build(&nest(4), 3).unwrap_err().reason.contains("deeper than 3"));
        let mut b = ValueBuilder::new(512);
        b.f64(f64::NAN);
        assert!(b.finish().unwrap_err().reason.contains("not a JSON number"));
        let mut b = ValueBuilder::new(512);
        b.big_int(&"9".repeat(MAX_INT_DIGITS + 1));
        assert!(b.finish().unwrap_err().reason.contains("too large"));
    }

    fn read_patch(text: &str) -> Option<Vec<crate::patch::Operation>> {
        let v: Value = serde_json::from_str(text).unwrap();
        let mut b = PatchBuilder::default();
        b.start(512);
        json_value(&v, &mut b);
        b.finish()
    }

    #[test]
    fn patch_builder_reads_what_parse_patch_reads() {
        let text = r#"[{"op":"add","path":"/a/b","value":{"x":[1,{"y":null}]},"extra":{"z":[1]}},
            {"op":"move","from":"/a","path":"/c"},{"path":"/n","op":"replace","value":2},{"op":"remove","path":"/c"},
            {"op":"test","path":"/n","value":"s"},{"op":"copy","from":"/n","path":"/m"}]"#;
        let want = crate::patch::parse_patch(&serde_json::from_str(text).unwrap()).unwrap();
        assert_eq!(read_patch(text).unwrap(), want);
        // the cache gives the same pointers
        let mut b = PatchBuilder::default();
        for _ in 0..3 {
            b.start(512);
            json_value(&serde_json::from_str(text).unwrap(), &mut b);
            assert_eq!(b.finish().unwrap(), want);
        }
    }

    #[test]
    fn patch_builder_refuses_what_is_not_plainly_a_patch() {
        for bad in crate::patch::plain::tests::NOT_PLAIN {
            let v: Value = serde_json::from_str(bad).unwrap();
            let mut b = PatchBuilder::default();
            b.start(3);
            json_value(&v, &mut b);
            assert!(b.finish().is_none(), "{bad}");
        }
    }

    #[test]
    fn repeated_keys_and_rewind() {
        let mut b = ValueBuilder::new(512);
        b.begin_object();
        let mark = b.object_mark();
        b.key("x");
        b.i64(1);
        b.rewind_object(mark);
        b.key("a");
        b.i64(1);
        b.key("b");
        b.i64(2);
        b.key("a");
        b.i64(3);
        b.end_object(false);
        assert_eq!(serde_json::to_string(&b.finish().unwrap()).unwrap(), r#"{"a":3,"b":2}"#);
    }
}
