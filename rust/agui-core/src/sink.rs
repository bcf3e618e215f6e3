//! The output side of every walk over JSON-shaped data: one trait, several sinks.
//!
//! A walker (the binding's walk over Python objects, the protobuf decoder's walk over
//! `google.protobuf.Value` bodies in `proto::wkt`, [`json_value`] over `serde_json`
//! values) calls a [`Sink`] in document order; the sink decides the output:
//! * [`crate::json::JsonSink`]: JSON text exactly as pydantic writes it;
//! * [`crate::proto::msgpack::MsgpackSink`]: MessagePack (what msgspec decodes fastest);
//! * [`crate::proto::node::TreeBuilder`]: the borrowed JSON tree the protobuf encoder maps.
//!
//! The walker owns the decisions (what a value is, which members an object has, their
//! order, omission); a sink only spells them. So the rules exist once, whatever the output.
//!
//! Strings: `str`/`key` take a transient borrow (the sink copies what it keeps); the
//! `*_ref` variants take a borrow that lives for `'a`, which a tree can keep without copying
//! ([`Sink::BORROWS`] tells the walker whether keeping its strings alive matters).

/// A string known when a plan is built (a field's wire key, a tag value): its text and
/// its JSON spelling (with quotes), so JSON sinks copy it without escaping again.
#[derive(Debug, Clone, PartialEq)]
pub struct PreStr {
    pub text: Box<str>,
    pub json: Box<[u8]>,
    /// `,"text":` (a key's JSON after the comma that separates it from the previous
    /// member), zero-padded (at least 16 bytes past the key) so that JSON sinks copy short keys
    /// with one fixed-size copy: bytes `1..=key_len` are the key alone, `0..=key_len` the
    /// key with its comma.
    pub key_padded: Box<[u8]>,
    pub key_len: usize,
}

impl PreStr {
    pub fn new(text: &str) -> PreStr {
        let mut json = Vec::with_capacity(text.len() + 2);
        crate::text::write_str(&mut json, text);
        let mut key = vec![b','];
        key.extend_from_slice(&json);
        key.push(b':');
        let key_len = key.len() - 1;
        // (16 more bytes: a 16-byte block can be read from offset 1)
        key.resize(key.len().div_ceil(16) * 16 + 16, 0);
        PreStr { text: text.into(), json: json.into_boxed_slice(), key_padded: key.into_boxed_slice(), key_len }
    }
}

/// A scalar known when a plan is built (an enum member's value, a Struct's tag).
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer beyond i64, as its exact decimal text.
    BigInt(Box<str>),
    Float(f64),
    Str(PreStr),
}

/// Receives one JSON-shaped document in order. Containers nest: `begin_*` ... `end_*`;
/// inside an object, each member is `key*` followed by exactly one value.
pub trait Sink<'a> {
    /// True when the sink keeps the `&'a str` given to `*_ref` methods (a tree): the
    /// walker must then keep their owners alive for `'a`.
    const BORROWS: bool = false;

    fn null(&mut self);
    fn bool(&mut self, v: bool);
    fn i64(&mut self, v: i64);
    /// An integer beyond i64, as its exact decimal text (`-?[0-9]+`).
    fn big_int(&mut self, decimal: &str);
    /// Any double; each sink spells the non-finite ones its format's way.
    fn f64(&mut self, v: f64);
    fn str(&mut self, s: &str);
    fn begin_array(&mut self);
    fn end_array(&mut self);
    fn begin_object(&mut self);
    fn key(&mut self, k: &str);
    /// Closes an object. `distinct_keys`: the walker knows no key repeated (a sink that
    /// must merge repeated keys can skip its check).
    fn end_object(&mut self, distinct_keys: bool);
    /// A mark taken right after `begin_object`, to [`Sink::rewind_object`] to.
    fn object_mark(&self) -> usize;
    /// Forget the members of the innermost open object written since `mark` (the walker
    /// restarts an object whose keys turn out to need merging).
    fn rewind_object(&mut self, mark: usize);
    /// True once the sink takes nothing more (a builder past its budget or a rule): a
    /// walker stops at the next container instead of walking the rest for nothing (a
    /// value that shares its parts can be exponentially larger walked than held).
    #[inline]
    fn full(&self) -> bool {
        false
    }

    #[inline]
    fn str_ref(&mut self, s: &'a str) {
        self.str(s)
    }
    #[inline]
    fn key_ref(&mut self, k: &'a str) {
        self.key(k)
    }
    #[inline]
    fn key_pre(&mut self, k: &'a PreStr) {
        self.key_ref(&k.text)
    }
    #[inline]
    fn scalar(&mut self, v: &'a Scalar) {
        match v {
            Scalar::Null => self.null(),
            Scalar::Bool(b) => self.bool(*b),
            Scalar::Int(i) => self.i64(*i),
            Scalar::BigInt(t) => self.big_int(t),
            Scalar::Float(f) => self.f64(*f),
            Scalar::Str(s) => self.str_ref(&s.text),
        }
    }
    /// One whole value given as JSON text (a foreign serializer's output). The default
    /// parses it and walks the result; a JSON sink splices it.
    fn raw_json(&mut self, text: &[u8]) -> Result<(), String> {
        let v: serde_json::Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
        json_value(&v, self);
        Ok(())
    }
}

/// Walk a `serde_json` value into a sink (numbers: integers exactly, others as doubles).
pub fn json_value<'a, S: Sink<'a> + ?Sized>(v: &serde_json::Value, s: &mut S) {
    use serde_json::Value as J;
    match v {
        J::Null => s.null(),
        J::Bool(b) => s.bool(*b),
        J::Number(n) => number(n.as_str(), s),
        J::String(t) => s.str(t),
        J::Array(a) => crate::limits::nest(|| {
            s.begin_array();
            for e in a {
                json_value(e, s);
            }
            s.end_array();
        }),
        J::Object(m) => crate::limits::nest(|| {
            s.begin_object();
            for (k, e) in m {
                s.key(k);
                json_value(e, s);
            }
            s.end_object(true);
        }),
    }
}

/// The double a JSON number travels as (integers beyond 2^53 round as JS parsing rounds
/// them): its `f64` value, or for a spelling out of `f64`'s range
/// (`1e400`: `arbitrary_precision` keeps the text) what JavaScript and Rust's float parser
/// make of it, ±Infinity.
pub fn number_f64(n: &serde_json::Number) -> f64 {
    if let Some(f) = n.as_f64() {
        return f;
    }
    n.to_string().parse::<f64>().unwrap_or(f64::NAN)
}

/// A JSON number's text into a sink: an integer within `i64` exactly, a longer one as its
/// decimal text, any other as the double it spells (`1e400`: infinity, as JavaScript reads it).
pub(crate) fn number<'a, S: Sink<'a> + ?Sized>(text: &str, s: &mut S) {
    // (a fraction or an exponent: no integer parse can take it)
    if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        s.f64(text.parse::<f64>().unwrap_or(f64::NAN))
    } else if let Ok(i) = text.parse::<i64>() {
        s.i64(i)
    } else if is_integer_text(text) {
        s.big_int(text)
    } else {
        s.f64(text.parse::<f64>().unwrap_or(f64::NAN))
    }
}

/// Walk JSON text into a sink, nesting at most `max_depth` levels: what
/// [`crate::limits::parse_value`] then [`json_value`] give, without the `serde_json::Value`
/// between them (the same parser and number rules; a repeated key is given again, each
/// sink keeping its first place and its last value as `Value`'s map does; an object whose
/// first key is serde_json's number token reads as that number, as `Value` reads it). On an
/// error the sink holds part of the value.
pub fn json_text<'a, S: Sink<'a> + ?Sized>(text: &str, max_depth: usize, s: &mut S) -> Result<(), crate::limits::ParseError> {
    let mut deeper = false;
    let walk = Walk { sink: s, depth: max_depth, deeper: &mut deeper, _a: std::marker::PhantomData };
    match crate::limits::parse_seed(serde_json::Deserializer::from_str(text), walk, max_depth) {
        Err(_) if deeper => Err(crate::limits::ParseError::TooDeep(max_depth)),
        other => other,
    }
}

/// [`json_text`] read by jiter (pydantic's JSON parser) instead of serde_json, which under
/// `arbitrary_precision` hands every number over as an owned string through a one-entry map.
/// Every text both parsers take is walked exactly as `json_text` walks it (number forms
/// through the same [`number`], repeated keys given again, the same depth rule); `None` for
/// a text jiter refuses, valid or not, and for one holding serde_json's number token as a
/// key (which `json_text` reads as a number). The sink then holds part of a value: the
/// caller starts again with [`json_text`], whose error names the problem.
pub fn json_text_fast<'a, S: Sink<'a> + ?Sized>(text: &str, max_depth: usize, s: &mut S) -> Option<()> {
    let mut r = FastRead { j: jiter::Jiter::new(text.as_bytes()), text };
    let peek = r.j.peek().ok()?;
    fast_value(&mut r, peek, max_depth, s)?;
    r.j.finish().ok()
}

/// The parser of [`json_text_fast`] and the text it reads (a number's text is sliced from
/// it: no second UTF-8 check of its bytes).
struct FastRead<'t> {
    j: jiter::Jiter<'t>,
    text: &'t str,
}

/// One value of [`json_text_fast`], `depth` levels left for containers.
fn fast_value<'a, S: Sink<'a> + ?Sized>(r: &mut FastRead<'_>, peek: jiter::Peek, depth: usize, s: &mut S) -> Option<()> {
    use jiter::Peek;
    let j = &mut r.j;
    match peek {
        Peek::Null => {
            j.known_null().ok()?;
            s.null();
        }
        Peek::True | Peek::False => {
            let b = j.known_bool(peek).ok()?;
            s.bool(b);
        }
        Peek::String => s.str(j.known_str().ok()?),
        Peek::Array => crate::limits::nest(|| {
            let inner = depth.checked_sub(1)?;
            s.begin_array();
            let mut next = r.j.known_array().ok()?;
            while let Some(p) = next {
                fast_value(r, p, inner, s)?;
                next = r.j.array_step().ok()?;
            }
            s.end_array();
            Some(())
        })?,
        Peek::Object => crate::limits::nest(|| {
            let inner = depth.checked_sub(1)?;
            s.begin_object();
            let mut key = r.j.known_object().ok()?;
            while let Some(k) = key {
                if k == NUMBER_TOKEN {
                    return None;
                }
                s.key(k);
                let p = r.j.peek().ok()?;
                fast_value(r, p, inner, s)?;
                key = r.j.next_key().ok()?;
            }
            s.end_object(false);
            Some(())
        })?,
        _ if peek.is_num() => {
            let len = j.known_number_bytes(peek).ok()?.len();
            let end = j.current_index();
            number(r.text.get(end.checked_sub(len)?..end)?, s);
        }
        _ => return None,
    }
    Some(())
}

/// serde_json's key for a number's text when `arbitrary_precision` is on (JSON text
/// `{"$serde_json::private::Number":"12"}` reads as the number 12).
pub const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// [`json_text`]'s visitor: one value into the sink, `depth` levels left for containers.
struct Walk<'s, 'a, S: ?Sized> {
    sink: &'s mut S,
    depth: usize,
    deeper: &'s mut bool,
    _a: std::marker::PhantomData<&'a ()>,
}

impl<'a, S: Sink<'a> + ?Sized> Walk<'_, 'a, S> {
    fn inner(&mut self) -> Walk<'_, 'a, S> {
        Walk { sink: &mut *self.sink, depth: self.depth - 1, deeper: &mut *self.deeper, _a: std::marker::PhantomData }
    }

    /// Entering a container: the depth left, or the error that ends the parse.
    fn enter<E: serde::de::Error>(&mut self) -> Result<(), E> {
        if self.depth == 0 {
            *self.deeper = true;
            return Err(E::custom("nested too deep"));
        }
        Ok(())
    }
}

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::DeserializeSeed<'de> for Walk<'_, 'a, S> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::Visitor<'de> for Walk<'_, 'a, S> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.sink.null();
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.sink.bool(v);
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.sink.i64(v);
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        number(&v.to_string(), self.sink);
        Ok(())
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.sink.f64(v);
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.sink.str(v);
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.enter()?;
        self.sink.begin_array();
        while seq.next_element_seed(self.inner())?.is_some() {}
        self.sink.end_array();
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        match map.next_key_seed(FirstKey(&mut self))? {
            None => {
                self.enter()?;
                self.sink.begin_object();
                self.sink.end_object(true);
                return Ok(());
            }
            Some(false) => map.next_value_seed(self.inner())?,
            Some(true) => {
                let room = self.depth > 0;
                return map.next_value_seed(NumberText { sink: self.sink, room, deeper: self.deeper, _a: std::marker::PhantomData });
            }
        }
        while map.next_key_seed(Key(&mut *self.sink, std::marker::PhantomData))?.is_some() {
            map.next_value_seed(self.inner())?;
        }
        self.sink.end_object(false);
        Ok(())
    }
}

/// An object's first key: serde_json's number token (`true`), or the key of a member,
/// the object begun in the sink (`false`).
struct FirstKey<'w, 's, 'a, S: ?Sized>(&'w mut Walk<'s, 'a, S>);

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::DeserializeSeed<'de> for FirstKey<'_, '_, 'a, S> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::Visitor<'de> for FirstKey<'_, '_, 'a, S> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<bool, E> {
        if k == NUMBER_TOKEN {
            return Ok(true);
        }
        self.0.enter()?;
        self.0.sink.begin_object();
        self.0.sink.key(k);
        Ok(false)
    }
}

/// A member's key, given to the sink.
struct Key<'s, 'a, S: ?Sized>(&'s mut S, std::marker::PhantomData<&'a ()>);

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::DeserializeSeed<'de> for Key<'_, 'a, S> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::Visitor<'de> for Key<'_, 'a, S> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.key(v);
        Ok(())
    }
}

/// The text of a number, after [`NUMBER_TOKEN`]. The parser hands its own numbers over as
/// an owned `String` (`visit_string`); a JSON object that spells the token as its first
/// key gives a string instead, read as `Value` reads it (a number, if the string is one;
/// the object's level counted: `room`).
struct NumberText<'s, 'a, S: ?Sized> {
    sink: &'s mut S,
    room: bool,
    deeper: &'s mut bool,
    _a: std::marker::PhantomData<&'a ()>,
}

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::DeserializeSeed<'de> for NumberText<'_, 'a, S> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'a, S: Sink<'a> + ?Sized> serde::de::Visitor<'de> for NumberText<'_, 'a, S> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("string containing a number")
    }
    fn visit_string<E>(self, v: String) -> Result<(), E> {
        number(&v, self.sink);
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        if !self.room {
            *self.deeper = true;
            return Err(E::custom("nested too deep"));
        }
        let n: serde_json::Number = v.parse().map_err(E::custom)?;
        number(n.as_str(), self.sink);
        Ok(())
    }
}

fn is_integer_text(t: &str) -> bool {
    let d = t.strip_prefix('-').unwrap_or(t);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::json::JsonSink;
    use crate::proto::msgpack::MsgpackSink;
    use crate::proto::node::{Node, Num, TreeBuilder};
    use crate::proto::wkt;

    /// The same value walked through every sink: from a tree (the encoder's input), encoded
    /// as a protobuf `Value`, then walked back out of that body by the decoder's one walk
    /// into JSON text, MessagePack and a tree again.
    #[test]
    fn one_value_through_every_sink() {
        let text = br#"{"s":"a\"b\n\u0001\u2028","n":null,"t":true,"i":-3,"f":1.5,"big":1e16,"a":[1,[],{}],"o":{"k":"v","":0}}"#;
        let tree = crate::proto::node::parse(text).unwrap();
        let body = wkt::Value::from_node(&tree);

        let mut json = Vec::new();
        assert!(wkt::value_body(&body.0, &mut JsonSink::new(&mut json), 0).unwrap());
        let want = concat!(
            r#"{"s":"a\"b\n\u0001"#,
            "\u{2028}",
            r#"","n":null,"t":true,"i":-3,"f":1.5,"big":10000000000000000,"a":[1,[],{}],"o":{"k":"v","":0}}"#
        );
        assert_eq!(std::str::from_utf8(&json).unwrap(), want);

        let mut mp = Vec::new();
        assert!(wkt::value_body(&body.0, &mut MsgpackSink::new(&mut mp), 0).unwrap());
        // MessagePack of the same JSON value, written through serde_json's walk.
        let mut want = Vec::new();
        let j: serde_json::Value = serde_json::from_slice(&json).unwrap();
        json_value(&j, &mut MsgpackSink::new(&mut want));
        assert_eq!(mp, want);

        let mut tb = TreeBuilder::new();
        assert!(wkt::value_body(&body.0, &mut tb, 0).unwrap());
        let back = tb.finish().unwrap();
        assert_eq!(wkt::Value::from_node(&back), body);
        let o = back.as_object().unwrap();
        assert_eq!(o.get("big"), Some(&Node::Number(Num::I(10_000_000_000_000_000))));
        assert_eq!(o.get("s").and_then(Node::as_str), Some("a\"b\n\u{1}\u{2028}"));

        // raw_json: a JSON sink splices, the others parse and walk.
        let mut spliced = Vec::new();
        let mut js = JsonSink::new(&mut spliced);
        js.begin_array();
        js.raw_json(b"{\"x\":[1,2]}").unwrap();
        js.i64(3);
        js.end_array();
        assert_eq!(spliced, b"[{\"x\":[1,2]},3]");
        let mut tb = TreeBuilder::new();
        tb.begin_array();
        tb.raw_json(b"{\"x\":[1,2]}").unwrap();
        tb.i64(3);
        tb.end_array();
        let (a, b) = (tb.finish().unwrap(), crate::proto::node::parse(b"[{\"x\":[1,2]},3]").unwrap().into_owned());
        assert_eq!(wkt::Value::from_node(&a), wkt::Value::from_node(&b));
    }

    #[test]
    fn pre_encoded_keys_and_strings() {
        for k in ["", "id", "messageId", "fourteen_chars", "fifteen_chars__", "a_much_longer_wire_key", "q\"é\n"] {
            let p = PreStr::new(k);
            let mut out = Vec::new();
            let mut s = JsonSink::new(&mut out);
            s.begin_object();
            s.key_pre(&p);
            s.scalar(&Scalar::Str(p.clone()));
            // a second member: the key after its comma
            s.key_pre(&p);
            s.null();
            s.end_object(true);
            let (kj, vj) = (crate::json::str_to_json(k), crate::json::str_to_json(k));
            let want = format!("{{{kj}:{vj},{kj}:null}}");
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    #[test]
    fn non_finite_doubles_per_sink() {
        let mut json = Vec::new();
        let mut s = JsonSink::new(&mut json);
        s.begin_array();
        s.f64(f64::INFINITY);
        s.f64(f64::NAN);
        s.end_array();
        assert_eq!(json, b"[null,null]");
        // The protobuf tree keeps infinity: @ag-ui/proto writes number_value inf.
        let mut tb = TreeBuilder::new();
        tb.f64(f64::INFINITY);
        assert_eq!(tb.finish().unwrap(), Node::Number(Num::F(f64::INFINITY)));
    }

    /// JSON texts of every number form, repeated keys, escapes, serde_json's number token,
    /// nesting at the limits, and errors (the walkers over JSON text are checked on them).
    pub(crate) fn sample_texts() -> Vec<String> {
        let token = NUMBER_TOKEN;
        let mut texts: Vec<String> = [
            r#"{"a":1,"b":-0,"c":1.0,"d":1e400,"e":-1e400,"f":12345678901234567890,"g":-9223372036854775809,"h":1E2,"i":-0.0,"j":1e-400,"k":0.1}"#,
            r#"{"a":1,"b":2,"a":{"x":[1,{"y":1,"y":2}]}}"#,
            r#"{"a\u0041":"\ud83d\ude00 \n\t\u0000\"\\\/","é日本":[true,false,null]}"#,
            "[]", "{}", "[[],{},[{}]]", "0", "\"s\"", " [ 1 , 2 ] ",
            r#"{"s":"\ud800"}"#, r#"{"a":}"#, "[1,]", r#"{"a":1}x"#, r#"{"a":01}"#, "[1.]", "[NaN]", "",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        for inner in [r#""12""#, r#""-1.5e3""#, r#""abc""#, "12", r#""12","y":1"#] {
            texts.push(format!(r#"{{"x":{{"{token}":{inner}}}}}"#));
            texts.push(format!(r#"[{{"\u0024{}":{inner}}}]"#, &token[1..]));
        }
        texts.push(format!("[{}]", "9".repeat(5000)));
        for n in 0..5 {
            texts.push(format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n)));
            texts.push(format!("{}{}", "[".repeat(n), "]".repeat(n)));
            texts.push(format!("{}{{\"{token}\":\"1\"}}{}", "[".repeat(n), "]".repeat(n)));
        }
        texts
    }

    /// Text read by jiter gives what `json_text` gives wherever it takes the text; it takes
    /// every text `json_text` takes at every depth, but those holding serde_json's number
    /// token as a key or a run of more than 4,300 digits (jiter's limit, Python's). Mutated
    /// texts (bytes cut, doubled, replaced) probe the grammar's edges.
    #[test]
    fn json_text_fast_walks_as_json_text() {
        use crate::patch::tree::tests::Trace;
        let mut texts = sample_texts();
        texts.extend(
            [
                r#"{"item_0001":{"id":1,"status":"pending","score":0.123456789,"tags":["a","b"]},"x":[-0,-0.0,1e5,1E-5,2.5e+3,-12345678901234567890]}"#,
                " \t\r\n{ \"a\" : [ 1 , { } , [ ] , \"\" , true , false , null ] } \n",
                r#"{"a":1,"a":2,"b":{"a":[3]},"a":4}"#,
                "[1e400,-1e400,1e-400,0.1,100,1.0,18446744073709551615,9223372036854775808]",
                r#"["\udc00","\ud800\u0041","\ud800x","\uD83D\uDE00","\u00e9\/\b\f\r","tab\there"]"#,
                r#"{"k\"ey":{"\\":"v"},"\u0000":[],"\ud83d\ude00":1}"#,
            ]
            .map(String::from),
        );
        // past the scanner's 64 levels, and at them
        for n in [63, 64, 65, 70] {
            texts.push(format!("{}1{}", "[".repeat(n), "]".repeat(n)));
            texts.push(format!("{}{{}}{}", "[".repeat(n - 1), "]".repeat(n - 1)));
        }
        let mut rng = crate::test_rng::Rng(0x005e_ed0f_7e47);
        let base = texts.clone();
        for _ in 0..3000 {
            let t = base[rng.below(base.len())].as_bytes().to_vec();
            if t.is_empty() {
                continue;
            }
            let mut t = t;
            let at = rng.below(t.len());
            match rng.below(3) {
                0 => {
                    t.truncate(at);
                }
                1 => {
                    let c = t[at];
                    t.insert(at, c);
                }
                _ => {
                    let bytes = b"{}[]\",:-+.eE0129 \"\\tfnuxdD\t\n\x01";
                    t[at] = bytes[rng.below(bytes.len())];
                }
            }
            if let Ok(t) = String::from_utf8(t) {
                texts.push(t);
            }
        }
        let (mut taken, mut plain_taken) = (0, 0);
        for text in &texts {
            for max_depth in [0, 1, 2, 3, 512] {
                let (mut fast, mut walked) = (Trace::default(), Trace::default());
                let got = json_text_fast(text, max_depth, &mut fast);
                let want = json_text(text, max_depth, &mut walked);
                // The scanner's walk of plain text: what it takes, it takes as both do.
                let mut plain = Trace::default();
                if crate::stream::event::walk_nested(text, max_depth, &mut plain).is_some() {
                    plain_taken += 1;
                    assert!(want.is_ok(), "{text:?} at {max_depth}");
                    assert_eq!(plain.0, walked.0, "{text:?} at {max_depth}");
                }
                if got.is_some() {
                    taken += 1;
                    assert!(want.is_ok(), "{text:?} at {max_depth}");
                    assert_eq!(fast.0, walked.0, "{text:?} at {max_depth}");
                } else if want.is_ok()
                    && !text.contains(&NUMBER_TOKEN[1..])
                    && !text.split(|c: char| !c.is_ascii_digit()).any(|run| run.len() > 4300)
                {
                    panic!("text declined: {text:?} at {max_depth}");
                }
            }
        }
        assert!(taken > 1000, "{taken}");
        assert!(plain_taken > 500, "{plain_taken}");
    }

    /// JSON text walked straight into a sink gives what its parsed `Value` walked gives:
    /// numbers of every form, repeated keys, escapes, serde_json's number token as a key,
    /// the depth limit at its boundary, and an error wherever the parse fails.
    #[test]
    fn json_text_walks_as_its_value_does() {
        let texts = sample_texts();
        for text in &texts {
            for max_depth in [0, 1, 2, 3, 4, 512] {
                // (a tree: repeated keys merged as `Value`'s map merges them)
                let (mut walked, mut parsed) = (TreeBuilder::new(), TreeBuilder::new());
                let got = json_text(text, max_depth, &mut walked).map_err(|e| matches!(e, crate::limits::ParseError::TooDeep(_)));
                let want = crate::limits::parse_value(text.as_bytes(), max_depth).map(|v| json_value(&v, &mut parsed));
                match want {
                    Ok(()) => {
                        assert_eq!(got, Ok(()), "{text} at {max_depth}");
                        assert_eq!(walked.finish().unwrap(), parsed.finish().unwrap(), "{text} at {max_depth}");
                    }
                    // An error either way: too deep where that is the text's only fault.
                    Err(e) => {
                        let only_deep = matches!(e, crate::limits::ParseError::TooDeep(_)) && crate::limits::parse_value(text.as_bytes(), 512).is_ok();
                        assert!(got.is_err_and(|deep| deep || !only_deep), "{text} at {max_depth}: {e}");
                    }
                }
            }
        }
    }

    #[test]
    fn tree_merges_repeated_keys_like_json_parse() {
        let mut tb = TreeBuilder::new();
        tb.begin_object();
        tb.key("a");
        tb.i64(1);
        tb.key("b");
        tb.i64(2);
        tb.key("a");
        tb.i64(3);
        tb.end_object(false);
        let want = Node::Object(crate::proto::node::Obj(vec![("a".into(), Node::Number(Num::I(3))), ("b".into(), Node::Number(Num::I(2)))]));
        assert_eq!(tb.finish().unwrap(), want);
    }
}
