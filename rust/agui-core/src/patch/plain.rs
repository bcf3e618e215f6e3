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
        if let Some(v) = &value {
            super::check_numbers(v).map_err(|_| A::Error::custom("a number out of range"))?;
        }
        let kind = OpKind::parse(&op.0).ok_or_else(|| A::Error::custom("unknown op"))?;
        let path = self.1.get(&path.0).map_err(|_| A::Error::custom("bad path"))?;
        let from = match from {
            Some(f) if kind.needs_from() => Some(self.1.get(&f.0).map_err(|_| A::Error::custom("bad from"))?),
            _ => None,
        };
        Operation::from_parts(self.0, kind, path, from, value).map_err(|_| A::Error::custom("incomplete"))
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
