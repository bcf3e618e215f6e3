//! Patches read straight from JSON text into the engine's operations, without a
//! `serde_json::Value` for the patch array and each operation object (their members are
//! borrowed from the text when they have no escapes). Only the plain form is taken:
//! operation objects with nothing but `op`, `path`, `from`, `value`; anything else (other
//! members, wrong types, an unknown op, a bad pointer) is `None`, and the caller reads the
//! patch the general way ([`super::parse_patch`]), which names the error.

use std::borrow::Cow;

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::cache::PointerCache;
use super::{OpKind, Operation};

/// A string borrowed from the text when it has no escapes (the plain readers' string,
/// shared with `stream::event`).
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The operations of a plain patch (a `DeserializeSeed` for the array, so that a caller
/// reading a larger document, such as a `STATE_DELTA` event, reads its `delta` with it),
/// pointers through the caller's cache.
pub struct PlainOps<'c>(pub &'c mut PointerCache);

impl<'de> DeserializeSeed<'de> for PlainOps<'_> {
    type Value = Vec<Operation>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Operation>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PlainOps<'_> {
    type Value = Vec<Operation>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON Patch")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Operation>, A::Error> {
        let mut ops = Vec::with_capacity(seq.size_hint().unwrap_or(2));
        while let Some(op) = seq.next_element_seed(PlainOp(ops.len(), &mut *self.0))? {
            ops.push(op);
        }
        Ok(ops)
    }
}

struct PlainOp<'c>(usize, &'c mut PointerCache);

impl<'de> DeserializeSeed<'de> for PlainOp<'_> {
    type Value = Operation;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Operation, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PlainOp<'_> {
    type Value = Operation;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an operation")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Operation, A::Error> {
        let (mut op, mut path, mut from, mut value) = (None, None, None, None);
        while let Some(key) = map.next_key::<Text<'de>>()? {
            let dup = match &*key.0 {
                "op" => op.replace(map.next_value::<Text<'de>>()?).is_some(),
                "path" => path.replace(map.next_value::<Text<'de>>()?).is_some(),
                "from" => from.replace(map.next_value::<Text<'de>>()?).is_some(),
                "value" => value.replace(map.next_value::<Value>()?).is_some(),
                _ => return Err(A::Error::custom("another member")),
            };
            if dup {
                return Err(A::Error::custom("a repeated member"));
            }
        }
        let (Some(op), Some(path)) = (op, path) else { return Err(A::Error::custom("a missing member")) };
        operation(self.0, &op.0, &path.0, from.as_ref().map(|f| &*f.0), value, self.1).map_err(A::Error::custom)
    }
}

/// The operation at `index` of a plain patch from its members as the text gave them, or
/// what makes it not plain.
fn operation(index: usize, op: &str, path: &str, from: Option<&str>, value: Option<Value>, pointers: &mut PointerCache) -> Result<Operation, &'static str> {
    if let Some(v) = &value {
        super::check_numbers(v).map_err(|_| "a number out of range")?;
    }
    let kind = OpKind::parse(op).ok_or("unknown op")?;
    let path = pointers.get(path).map_err(|_| "bad path")?;
    let from = match from {
        Some(f) if kind.needs_from() => Some(pointers.get(f).map_err(|_| "bad from")?),
        _ => None,
    };
    Operation::from_parts(index, kind, path, from, value).map_err(|_| "incomplete")
}

/// The plain patch array starting at byte `start` of `text` and the end of it (past its
/// `]`), read by the event scanner's byte loop where its members are what logs mostly
/// send (`op`, `path` and `from` strings without escapes; a value a string without
/// escapes, a literal, or a number or container parsed by serde_json alone): the
/// operations [`PlainOps`] reads there. `None` for anything else (then read by
/// [`PlainOps`], which decides it). serde_json's walk of the members was most of a small
/// `STATE_DELTA`'s reading (callgrind: ~4,000 instructions a patch of the bench log).
/// `json` is text (checked once by the caller, often with the whole log): its strings
/// are sliced, not checked again one by one.
pub fn scan_plain_ops(json: &str, start: usize, pointers: &mut PointerCache) -> Option<(Vec<Operation>, usize)> {
    use crate::stream::event::{int_end, nested_end, number_end, plain_end, skip_ws};
    let text = json.as_bytes();
    // A string without escapes at `i` (its quote): the text and the byte after it (the
    // quotes are ASCII: char boundaries).
    #[inline(always)]
    fn string(json: &str, i: usize) -> Option<(&str, usize)> {
        if json.as_bytes().get(i) != Some(&b'"') {
            return None;
        }
        let end = plain_end(json.as_bytes(), i + 1)?;
        Some((&json[i + 1..end], end + 1))
    }
    let string = |i: usize| string(json, i);
    if text.get(start) != Some(&b'[') {
        return None;
    }
    let mut ops = Vec::with_capacity(2);
    let mut i = skip_ws(text, start + 1);
    if text.get(i) == Some(&b']') {
        return Some((ops, i + 1));
    }
    loop {
        if text.get(i) != Some(&b'{') {
            return None;
        }
        let (mut op, mut path, mut from, mut value) = (None, None, None, None);
        i = skip_ws(text, i + 1);
        if text.get(i) != Some(&b'}') {
            loop {
                let (key, after) = string(i)?;
                i = skip_ws(text, after);
                if text.get(i) != Some(&b':') {
                    return None;
                }
                i = skip_ws(text, i + 1);
                let dup = match key {
                    "op" | "path" | "from" => {
                        let (v, after) = string(i)?;
                        i = after;
                        match key {
                            "op" => op.replace(v),
                            "path" => path.replace(v),
                            _ => from.replace(v),
                        }
                        .is_some()
                    }
                    "value" => {
                        let (v, after) = match *text.get(i)? {
                            b'"' => string(i).map(|(s, after)| (Value::String(s.to_owned()), after))?,
                            b't' if text.get(i..i + 4) == Some(b"true") => (Value::Bool(true), i + 4),
                            b'f' if text.get(i..i + 5) == Some(b"false") => (Value::Bool(false), i + 5),
                            b'n' if text.get(i..i + 4) == Some(b"null") => (Value::Null, i + 4),
                            b'-' | b'0'..=b'9' => {
                                let end = number_end(text, i)?;
                                let number = &text[i..end];
                                // An integer of i64 spelled as its value spells it (not `-0`):
                                // the number serde_json reads, without its parse.
                                let int = (int_end(text, i) == Some(end) && number != b"-0")
                                    .then(|| json[i..end].parse::<i64>().ok())
                                    .flatten();
                                (int.map_or_else(|| serde_json::from_slice(number).ok(), |n| Some(Value::from(n)))?, end)
                            }
                            b'[' | b'{' => {
                                let end = nested_end(&json[i..], 0)? + i;
                                (serde_json::from_slice(&text[i..end]).ok()?, end)
                            }
                            _ => return None,
                        };
                        i = after;
                        value.replace(v).is_some()
                    }
                    _ => return None,
                };
                if dup {
                    return None;
                }
                i = skip_ws(text, i);
                match text.get(i)? {
                    b',' => i = skip_ws(text, i + 1),
                    b'}' => break,
                    _ => return None,
                }
            }
        }
        ops.push(operation(ops.len(), op?, path?, from, value, pointers).ok()?);
        i = skip_ws(text, i + 1);
        match text.get(i)? {
            b',' => i = skip_ws(text, i + 1),
            b']' => return Some((ops, i + 1)),
            _ => return None,
        }
    }
}

/// A plain patch given as JSON text, nesting at most `max_depth` levels in its values, or
/// `None` (read it the general way).
pub fn read_plain_patch(text: &[u8], max_depth: usize, pointers: &mut PointerCache) -> Option<Vec<Operation>> {
    // +2: the patch array and the operation object around each value.
    if crate::limits::exceeds_depth(text, max_depth + 2) {
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(text);
    let ops = crate::limits::deserialize_nested(&mut de, PlainOps(pointers), max_depth + 2).ok()?;
    de.end().ok()?;
    Some(ops)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn reads_what_parse_patch_reads() {
        let text = r#"[{"op":"add","path":"/a/b","value":{"x":[1,{"y":null}]}},{"op":"move","from":"/a","path":"/c"},
            {"path":"/n","op":"replace","value":2},{"op":"remove","path":"/c"},{"op":"test","path":"/n","value":"s\n"},
            {"op":"copy","from":"/n","path":"/m~1x"},{"op":"add","path":"","value":[]}]"#;
        let want = crate::patch::parse_patch(&serde_json::from_str(text).unwrap()).unwrap();
        let mut cache = PointerCache::default();
        for _ in 0..3 {
            assert_eq!(read_plain_patch(text.as_bytes(), 512, &mut cache).unwrap(), want);
        }
    }

    /// Patches that are not plainly well formed, for every plain reader (depth limit 3).
    pub(crate) const NOT_PLAIN: [&str; 9] = [
        r#"{"op":"add"}"#,
        r#"[1]"#,
        r#"[{"op":"add","path":"/a"}]"#,
        r#"[{"op":"frob","path":"/a"}]"#,
        r#"[{"op":"add","path":"a","value":1}]"#,
        r#"[{"op":1,"path":"/a","value":1}]"#,
        r#"[{"path":"/a","value":1}]"#,
        r#"[{"op":"move","path":"/a"}]"#,
        r#"[{"op":"add","path":"/a","value":[[[[]]]]}]"#,
    ];

    /// What the scanner's loop takes (patches of every op, value and spacing, and mutations
    /// of them), `PlainOps` reads as the same operations; a `STATE_DELTA` event of the
    /// compact form is read as its patch is.
    #[test]
    fn the_scan_reads_what_plain_ops_reads() {
        let mut texts: Vec<String> = [
            r#"[{"op":"replace","path":"/item_0042/status","value":"done"}]"#,
            r#"[{"op":"test","path":"/counter","value":3},{"op":"replace","path":"/counter","value":4}]"#,
            r#"[{"op":"add","path":"/plan/steps/-","value":{"title":"a b c","done":false}}]"#,
            r#"[{"op":"copy","from":"/item_0001/score","path":"/log/-"},{"op":"remove","path":"/plan/steps/0"}]"#,
            r#"[{"path":"/a","from":"/b","op":"move"},{"value":[1,[2,{"x":null}]],"op":"add","path":""}]"#,
            r#"[{"op":"add","path":"/n","value":-0},{"op":"add","path":"/n","value":1.50},{"op":"add","path":"/n","value":1E2}]"#,
            r#"[{"op":"test","path":"/n","value":-12},{"op":"add","path":"/n","value":0},{"op":"add","path":"/n","value":9223372036854775807},{"op":"add","path":"/n","value":-9223372036854775809}]"#,
            r#"[{"op":"add","path":"/b","value":true},{"op":"add","path":"/b","value":false},{"op":"test","path":"/b","value":null}]"#,
            r#"[{"op":"add","path":"/é~1x~0","value":"日本 😀"},{"op":"remove","path":"/a","value":1,"from":"/c"}]"#,
            r#"[{"op":"add","path":"/s","value":"a\nb"},{"op":"add","path":"/\u0061","value":1}]"#,
            r#"[{"op":"add","path":"/n","value":123456789012345678901234567890},{"op":"add","path":"/n","value":1e400}]"#,
            r#"[{"op":"add","path":"/a","value":[1,{"k":"\ud800"}]},{"op":"add","path":"/a","value":{"a":1,"a":2}}]"#,
            " [ { \"op\" : \"add\" , \"path\" : \"/a\" , \"value\" : [ 1 , 2 ] } , {\"op\":\"remove\",\"path\":\"/a\"} ] ",
            "[]",
            "[ ]",
            "[{}]",
            r#"[{"op":"add","path":"/a","value":01}]"#,
        ]
        .map(String::from)
        .to_vec();
        texts.extend(NOT_PLAIN.map(String::from));
        let mut rng = crate::test_rng::Rng(0x0b5_7a7e);
        let base = texts.clone();
        for _ in 0..4000 {
            let mut t = base[rng.below(base.len())].as_bytes().to_vec();
            let at = rng.below(t.len());
            match rng.below(3) {
                0 => t.truncate(at),
                1 => t.insert(at, t[at]),
                _ => {
                    let bytes = b"{}[]\",:-+.eE019 \\tfnux/~";
                    t[at] = bytes[rng.below(bytes.len())];
                }
            }
            if let Ok(t) = String::from_utf8(t) {
                texts.push(t);
            }
        }
        let (mut scanned, mut cache, mut again) = (0, PointerCache::default(), PointerCache::default());
        let start = |t: &str| crate::stream::event::skip_ws(t.as_bytes(), 0);
        for text in &texts {
            if let Some((ops, end)) = scan_plain_ops(text, start(text), &mut cache) {
                scanned += 1;
                assert_eq!(read_plain_patch(&text.as_bytes()[..end], 512, &mut again).as_ref(), Some(&ops), "{text}");
            }
            if !text.contains('\\') {
                let event = format!(r#"{{"type":"STATE_DELTA","delta":{text}}}"#);
                let want = read_plain_patch(text.as_bytes(), 509, &mut again);
                assert_eq!(crate::stream::event::plain_state_delta(event.as_bytes(), 512, &mut cache), want, "{event}");
            }
        }
        assert!(scanned > 150, "{scanned}");
        // (every plain one of the patches above)
        for text in base.iter().take(9).chain(&base[12..15]) {
            assert!(scan_plain_ops(text, start(text), &mut cache).is_some(), "{text}");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_general_reader() {
        let text_only = [
            r#"[{"op":"add","path":"/a","value":1,"extra":0}]"#,
            r#"[{"op":"add","op":"add","path":"/a","value":1}]"#,
            r#"[{"op":"add","path":"/a","value":1}] x"#,
            r#"[{"op":"add","path":"/a","value":"\ud800"}]"#,
            r#"[{"op":"add","path":"/a","value":1e400}]"#,
        ];
        for bad in NOT_PLAIN.iter().chain(&text_only) {
            assert!(read_plain_patch(bad.as_bytes(), 3, &mut PointerCache::default()).is_none(), "{bad}");
        }
    }
}
