//! Building a document's values from a walk (any [`Sink`] input: the binding's object
//! walker over Python objects, or [`crate::sink::json_value`] over a parsed patch), by the
//! rules of JSON text ([`super::rules`]), for a value placed at nesting `base`. What the
//! values are made of is the [`Factory`]'s business (the binding's: Python objects).
//!
//! Sink methods cannot fail: the first broken rule (or factory error, or the budget
//! spent) is recorded and reported by [`Builder::finish`]; the walk goes on, bounded by
//! the walker's own depth guard, building nothing more.
//!
//! What it builds is charged to a [`Budget`] as it goes (each value [`VALUE_COST`], each
//! member's key too, strings and keys also their length): a patch's values count against
//! the patch's budget.

use super::engine::{Budget, Fail, VALUE_COST};
use super::rules::{container_rule, float_rule, int_rule};
use super::invalid;
use crate::sink::Sink;

/// Makes a document's values.
pub trait Factory {
    type Value;
    /// An object being built.
    type Object;
    type Key;
    type Error;
    fn null(&mut self) -> Self::Value;
    fn bool(&mut self, v: bool) -> Self::Value;
    fn int(&mut self, v: i64) -> Self::Value;
    /// An integer beyond `i64` (decimal text within the rules).
    fn big_int(&mut self, decimal: &str) -> Result<Self::Value, Self::Error>;
    fn float(&mut self, v: f64) -> Self::Value;
    fn str(&mut self, s: &str) -> Result<Self::Value, Self::Error>;
    fn key(&mut self, k: &str) -> Self::Key;
    fn array(&mut self, items: Vec<Self::Value>) -> Result<Self::Value, Self::Error>;
    fn object(&mut self) -> Self::Object;
    /// Set a member: a repeated key keeps its first position and takes the last value.
    fn set(&mut self, o: &mut Self::Object, k: Self::Key, v: Self::Value) -> Result<(), Self::Error>;
    fn object_len(&self, o: &Self::Object) -> usize;
    /// Keep only the first `len` members.
    fn truncate(&mut self, o: &mut Self::Object, len: usize) -> Result<(), Self::Error>;
    fn object_value(&mut self, o: Self::Object) -> Self::Value;
}

enum Open<F: Factory> {
    Array(Vec<F::Value>),
    Object(F::Object, Option<F::Key>),
}

/// A [`Sink`] building one value through a [`Factory`].
pub struct Builder<F: Factory> {
    pub factory: F,
    open: Vec<Open<F>>,
    root: Option<F::Value>,
    base: usize,
    max_depth: usize,
    error: Option<Fail<F::Error>>,
    budget: Budget,
    non_finite: bool,
}

impl<F: Factory> Builder<F> {
    pub fn new(factory: F, base: usize, max_depth: usize) -> Self {
        Builder { factory, open: Vec::new(), root: None, base, max_depth, error: None, budget: Budget::new(usize::MAX), non_finite: false }
    }

    /// Charge what is built to `budget` (unlimited by default).
    pub fn with_budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// Take non-finite doubles (a stream's `1e400`, read as infinity as JavaScript and
    /// Python read it) instead of refusing them.
    pub fn with_non_finite(mut self, allowed: bool) -> Self {
        self.non_finite = allowed;
        self
    }

    /// The budget with what was built charged.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Charge `n` bytes; false (the error recorded) when the budget is spent or a rule
    /// was already broken: nothing more is built.
    fn charge(&mut self, n: usize) -> bool {
        if self.error.is_some() {
            return false;
        }
        match self.budget.charge(n) {
            Ok(()) => true,
            Err(e) => {
                self.fail(e.into());
                false
            }
        }
    }

    /// Has a rule been broken (or the factory failed)?
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// The value built, or the first error.
    pub fn finish(self) -> Result<F::Value, Fail<F::Error>> {
        match (self.error, self.root) {
            (Some(e), _) => Err(e),
            (None, Some(v)) if self.open.is_empty() => Ok(v),
            _ => Err(invalid("incomplete value").into()),
        }
    }

    fn fail(&mut self, f: Fail<F::Error>) {
        self.error.get_or_insert(f);
    }

    fn push(&mut self, v: F::Value) {
        match self.open.last_mut() {
            None => self.root = Some(v),
            Some(Open::Array(a)) => a.push(v),
            Some(Open::Object(o, key)) => {
                if let Some(k) = key.take() {
                    if let Err(e) = self.factory.set(o, k, v) {
                        self.fail(Fail::Doc(e));
                    }
                }
            }
        }
    }

    fn pushed(&mut self, v: Result<F::Value, F::Error>) {
        match v {
            Ok(v) => self.push(v),
            Err(e) => {
                self.fail(Fail::Doc(e));
                let null = self.factory.null();
                self.push(null);
            }
        }
    }

    fn begin(&mut self, open: Open<F>) {
        if let Err(e) = container_rule(self.base + self.open.len(), self.max_depth) {
            self.fail(e.into());
        }
        self.open.push(open);
    }
}

impl<'a, F: Factory> Sink<'a> for Builder<F> {
    fn null(&mut self) {
        if self.charge(VALUE_COST) {
            let v = self.factory.null();
            self.push(v)
        }
    }
    fn bool(&mut self, v: bool) {
        if self.charge(VALUE_COST) {
            let v = self.factory.bool(v);
            self.push(v)
        }
    }
    fn i64(&mut self, v: i64) {
        if self.charge(VALUE_COST) {
            let v = self.factory.int(v);
            self.push(v)
        }
    }
    fn big_int(&mut self, decimal: &str) {
        if let Err(e) = int_rule(decimal) {
            self.fail(e.into());
        }
        if self.charge(VALUE_COST.saturating_add(decimal.len())) {
            let v = self.factory.big_int(decimal);
            self.pushed(v)
        }
    }
    fn f64(&mut self, v: f64) {
        if let (false, Err(e)) = (self.non_finite, float_rule(v)) {
            self.fail(e.into());
        }
        if self.charge(VALUE_COST) {
            let v = self.factory.float(v);
            self.push(v)
        }
    }
    fn str(&mut self, s: &str) {
        if self.charge(VALUE_COST.saturating_add(s.len())) {
            let v = self.factory.str(s);
            self.pushed(v)
        }
    }
    fn begin_array(&mut self) {
        if self.charge(VALUE_COST) {
            self.begin(Open::Array(Vec::new()))
        } else {
            self.open.push(Open::Array(Vec::new())) // (keeps the walk's nesting; builds nothing)
        }
    }
    fn end_array(&mut self) {
        if let Some(Open::Array(items)) = self.open.pop() {
            if self.error.is_none() {
                let v = self.factory.array(items);
                self.pushed(v)
            }
        }
    }
    fn begin_object(&mut self) {
        if self.charge(VALUE_COST) {
            let o = self.factory.object();
            self.begin(Open::Object(o, None))
        } else {
            self.open.push(Open::Array(Vec::new()))
        }
    }
    fn key(&mut self, k: &str) {
        if self.charge(VALUE_COST.saturating_add(k.len())) {
            let k = self.factory.key(k);
            if let Some(Open::Object(_, key)) = self.open.last_mut() {
                *key = Some(k);
            }
        }
    }
    fn end_object(&mut self, _distinct_keys: bool) {
        match self.open.pop() {
            Some(Open::Object(o, _)) if self.error.is_none() => {
                let v = self.factory.object_value(o);
                self.push(v)
            }
            _ => {}
        }
    }
    fn full(&self) -> bool {
        self.error.is_some()
    }
    fn object_mark(&self) -> usize {
        match self.open.last() {
            Some(Open::Object(o, _)) => self.factory.object_len(o),
            _ => 0,
        }
    }
    fn rewind_object(&mut self, mark: usize) {
        if self.error.is_some() {
            return;
        }
        let Some(Open::Object(o, _)) = self.open.last_mut() else { return };
        if let Err(e) = self.factory.truncate(o, mark) {
            self.fail(Fail::Doc(e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::json_value;
    use serde_json::{json, Map, Value};

    /// `serde_json` values, refusing strings that say "refuse".
    struct Json;

    impl Factory for Json {
        type Value = Value;
        type Object = Map<String, Value>;
        type Key = String;
        type Error = String;
        fn null(&mut self) -> Value {
            Value::Null
        }
        fn bool(&mut self, v: bool) -> Value {
            Value::Bool(v)
        }
        fn int(&mut self, v: i64) -> Value {
            v.into()
        }
        fn big_int(&mut self, decimal: &str) -> Result<Value, String> {
            Ok(Value::String(decimal.into()))
        }
        fn float(&mut self, v: f64) -> Value {
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
        }
        fn str(&mut self, s: &str) -> Result<Value, String> {
            if s == "refuse" { Err("refused".into()) } else { Ok(s.into()) }
        }
        fn key(&mut self, k: &str) -> String {
            k.into()
        }
        fn array(&mut self, items: Vec<Value>) -> Result<Value, String> {
            Ok(Value::Array(items))
        }
        fn object(&mut self) -> Map<String, Value> {
            Map::new()
        }
        fn set(&mut self, o: &mut Map<String, Value>, k: String, v: Value) -> Result<(), String> {
            o.insert(k, v);
            Ok(())
        }
        fn object_len(&self, o: &Map<String, Value>) -> usize {
            o.len()
        }
        fn truncate(&mut self, o: &mut Map<String, Value>, len: usize) -> Result<(), String> {
            let keys: Vec<String> = o.keys().skip(len).cloned().collect();
            keys.iter().for_each(|k| {
                o.remove(k);
            });
            Ok(())
        }
        fn object_value(&mut self, o: Map<String, Value>) -> Value {
            Value::Object(o)
        }
    }

    fn build(v: &Value, base: usize, max_depth: usize) -> Result<Value, Fail<String>> {
        let mut b = Builder::new(Json, base, max_depth);
        json_value(v, &mut b);
        b.finish()
    }

    fn reason(r: Result<Value, Fail<String>>) -> String {
        match r {
            Err(Fail::Patch(e)) => e.reason,
            Err(Fail::Doc(e)) => format!("doc: {e}"),
            Ok(v) => format!("ok: {v}"),
        }
    }

    #[test]
    fn builds_what_it_walks_by_the_rules() {
        let v = json!({"a": [1, -2.5, true, null, {"b": "c"}], "d": {}});
        assert_eq!(build(&v, 0, 3).unwrap(), v);
        assert!(reason(build(&v, 0, 2)).contains("nested deeper than 2"), "depth counts from the value");
        assert!(reason(build(&v, 1, 3)).contains("nested deeper than 3"), "and from where it is placed");
        assert_eq!(reason(build(&json!(["refuse", 1]), 0, 3)), "doc: refused");
        let big = "1".repeat(super::super::MAX_INT_DIGITS + 1);
        let mut b = Builder::new(Json, 0, 3);
        b.big_int(&big);
        assert!(b.failed() && reason(b.finish()).contains("integer is too large"));
        let mut b = Builder::new(Json, 0, 3);
        b.f64(f64::NAN);
        assert!(reason(b.finish()).contains("is not a JSON number"));
        let b = Builder::new(Json, 0, 3);
        assert_eq!(reason(b.finish()), "incomplete value");
    }

    #[test]
    fn charges_what_it_builds_and_stops_at_the_budget() {
        let v = json!({"ab": ["xyz", 1, null], "c": {}});
        let mut b = Builder::new(Json, 0, 8).with_budget(Budget::new(1 << 20));
        json_value(&v, &mut b);
        // object, two keys (2 + 1 bytes), array, "xyz", 1, null, {}
        assert_eq!(b.budget().used(), 8 * VALUE_COST + 3 + 3);
        assert_eq!(b.finish().unwrap(), v);
        for max in [0, VALUE_COST, 3 * VALUE_COST, 8 * VALUE_COST + 5] {
            let mut b = Builder::new(Json, 0, 8).with_budget(Budget::new(max));
            json_value(&v, &mut b);
            assert!(b.failed());
            assert!(reason(b.finish()).contains("exceed the limit"), "{max}");
        }
    }

    #[test]
    fn rewinds_an_open_object() {
        let mut b = Builder::new(Json, 0, 3);
        b.begin_object();
        b.key("a");
        b.i64(1);
        let mark = b.object_mark();
        b.key("b");
        b.i64(2);
        b.rewind_object(mark);
        b.key("c");
        b.i64(3);
        b.end_object(true);
        assert_eq!(b.finish().unwrap(), json!({"a": 1, "c": 3}));
    }
}
