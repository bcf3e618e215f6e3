//! A borrowed JSON tree for the encoder: strings without escapes point into the input,
//! objects are vectors of entries (no hashing), numbers keep their text.
//!
//! Semantics match what the encoder needs from JavaScript's `JSON.parse`: a duplicated
//! key keeps its first position and takes the last value.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// The key serde_json uses to hand over numbers when `arbitrary_precision` is on.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    /// The number's JSON text (exact), or a value taken from a native number.
    Number(Num<'a>),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    Object(Obj<'a>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Num<'a> {
    Text(Cow<'a, str>),
    I(i64),
    U(u64),
    F(f64),
}

impl Num<'_> {
    /// The double the number travels as (JS parsing: nearest double, overflow → ±inf).
    pub fn f64(&self) -> f64 {
        match self {
            Num::Text(t) => t.parse::<f64>().unwrap_or(f64::NAN),
            Num::I(i) => *i as f64,
            Num::U(u) => *u as f64,
            Num::F(f) => *f,
        }
    }

    /// Exact integer value when the text is an integer literal that fits.
    pub fn i64(&self) -> Option<i64> {
        match self {
            Num::Text(t) => t.parse::<i64>().ok(),
            Num::I(i) => Some(*i),
            Num::U(u) => i64::try_from(*u).ok(),
            Num::F(_) => None,
        }
    }

    /// The text JS `String(number)` would give, near enough for best-effort string fields.
    /// A float is spelled as the JSON writer (`crate::json::write_f64`) spells it, so a
    /// tree built straight from Python floats reads like one parsed from that writer's text.
    pub fn text(&self) -> String {
        match self {
            Num::Text(t) => t.to_string(),
            Num::I(i) => i.to_string(),
            Num::U(u) => u.to_string(),
            Num::F(f) => {
                let mut b = Vec::new();
                crate::json::write_f64(&mut b, *f);
                String::from_utf8(b).unwrap_or_default()
            }
        }
    }
}

/// A JSON object: entries in first-seen order, keys unique.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Obj<'a>(pub Vec<(Cow<'a, str>, Node<'a>)>);

impl<'a> Obj<'a> {
    #[inline]
    pub fn get(&self, k: &str) -> Option<&Node<'a>> {
        self.0.iter().find(|(key, _)| key == k).map(|(_, v)| v)
    }

    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&Cow<'a, str>, &Node<'a>)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn keys(&self) -> impl Iterator<Item = &Cow<'a, str>> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl<'a> Node<'a> {
    #[inline]
    pub fn as_object(&self) -> Option<&Obj<'a>> {
        match self {
            Node::Object(o) => Some(o),
            _ => None,
        }
    }

    #[inline]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }
}

/// Parse JSON text into a borrowed tree.
pub fn parse(text: &[u8]) -> serde_json::Result<Node<'_>> {
    serde_json::from_slice(text)
}

// ---------------------------------------------------------------------------------
// serde glue
// ---------------------------------------------------------------------------------

struct CowStr<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::I(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::U(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::F(v)))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(e) = seq.next_element::<Node<'de>>()? {
            out.push(e);
        }
        Ok(Node::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let Some(CowStr(first)) = map.next_key::<CowStr<'de>>()? else {
            return Ok(Node::Object(Obj::default()));
        };
        if first == NUMBER_TOKEN {
            // arbitrary_precision: the number's text as the value of a magic key.
            let CowStr(text) = map.next_value::<CowStr<'de>>()?;
            return Ok(Node::Number(Num::Text(text)));
        }
        let mut entries: Vec<(Cow<'de, str>, Node<'de>)> = Vec::new();
        let mut index: Option<HashMap<String, usize>> = None;
        let mut key = Some(first);
        while let Some(k) = key {
            let v = map.next_value::<Node<'de>>()?;
            // Duplicated key: first position, last value (JSON.parse semantics).
            let existing = match &mut index {
                Some(ix) => ix.get(k.as_ref()).copied(),
                None => entries.iter().position(|(e, _)| *e == k),
            };
            match existing {
                Some(i) => entries[i].1 = v,
                None => {
                    if let Some(ix) = &mut index {
                        ix.insert(k.to_string(), entries.len());
                    }
                    entries.push((k, v));
                    if index.is_none() && entries.len() > 32 {
                        index = Some(entries.iter().enumerate().map(|(i, (e, _))| (e.to_string(), i)).collect());
                    }
                }
            }
            key = map.next_key::<CowStr<'de>>()?.map(|c| c.0);
        }
        Ok(Node::Object(Obj(entries)))
    }
}
