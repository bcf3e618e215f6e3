//! A borrowed JSON tree for the encoder: strings without escapes point into the input,
//! objects are vectors of entries (no hashing), numbers keep their text.
//!
//! Semantics match what the encoder needs from JavaScript's `JSON.parse`: a duplicated
//! key keeps its first position and takes the last value.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use crate::sink::NUMBER_TOKEN;

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
    /// A float is spelled as the JSON writer (`crate::text::write_f64`) spells it, so a
    /// tree built straight from Python floats reads like one parsed from that writer's text.
    pub fn text(&self) -> String {
        match self {
            Num::Text(t) => t.to_string(),
            Num::I(i) => i.to_string(),
            Num::U(u) => u.to_string(),
            Num::F(f) => {
                let mut b = Vec::new();
                crate::text::write_f64(&mut b, *f);
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

impl Node<'_> {
    /// The same tree owning all its strings.
    pub fn into_owned(self) -> Node<'static> {
        let own = |c: Cow<'_, str>| -> Cow<'static, str> { Cow::Owned(c.into_owned()) };
        match self {
            Node::Null => Node::Null,
            Node::Bool(b) => Node::Bool(b),
            Node::Number(Num::Text(t)) => Node::Number(Num::Text(own(t))),
            Node::Number(Num::I(i)) => Node::Number(Num::I(i)),
            Node::Number(Num::U(u)) => Node::Number(Num::U(u)),
            Node::Number(Num::F(f)) => Node::Number(Num::F(f)),
            Node::String(s) => Node::String(own(s)),
            Node::Array(a) => Node::Array(a.into_iter().map(Node::into_owned).collect()),
            Node::Object(Obj(e)) => Node::Object(Obj(e.into_iter().map(|(k, v)| (own(k), v.into_owned())).collect())),
        }
    }
}

// ---------------------------------------------------------------------------------
// The tree sink
// ---------------------------------------------------------------------------------

enum Frame<'a> {
    Array(Vec<Node<'a>>),
    Object(Vec<(Cow<'a, str>, Node<'a>)>, Option<Cow<'a, str>>),
}

/// The sink that builds a [`Node`] tree (see [`crate::sink`]): the protobuf encoder's
/// input, built straight from the walked values, strings borrowed where the walker can
/// keep them alive. Repeated keys merge as `JSON.parse` does: first position, last value.
/// Doubles stay doubles, infinities included (`@ag-ui/proto` writes them as such).
#[derive(Default)]
pub struct TreeBuilder<'a> {
    stack: Vec<Frame<'a>>,
    done: Option<Node<'a>>,
}

impl<'a> TreeBuilder<'a> {
    pub fn new() -> Self {
        TreeBuilder { stack: Vec::new(), done: None }
    }

    /// The finished tree (None if no complete value was given).
    pub fn finish(&mut self) -> Option<Node<'a>> {
        self.stack.clear();
        self.done.take()
    }

    #[inline]
    fn push(&mut self, n: Node<'a>) {
        match self.stack.last_mut() {
            None => self.done = Some(n),
            Some(Frame::Array(a)) => a.push(n),
            Some(Frame::Object(e, k)) => {
                let k = k.take().unwrap_or(Cow::Borrowed(""));
                e.push((k, n));
            }
        }
    }
}

impl<'a> crate::sink::Sink<'a> for TreeBuilder<'a> {
    const BORROWS: bool = true;

    fn null(&mut self) {
        self.push(Node::Null)
    }
    fn bool(&mut self, v: bool) {
        self.push(Node::Bool(v))
    }
    fn i64(&mut self, v: i64) {
        self.push(Node::Number(Num::I(v)))
    }
    fn big_int(&mut self, decimal: &str) {
        self.push(Node::Number(Num::Text(Cow::Owned(decimal.to_owned()))))
    }
    fn f64(&mut self, v: f64) {
        self.push(Node::Number(Num::F(v)))
    }
    fn str(&mut self, s: &str) {
        self.push(Node::String(Cow::Owned(s.to_owned())))
    }
    fn str_ref(&mut self, s: &'a str) {
        self.push(Node::String(Cow::Borrowed(s)))
    }
    fn begin_array(&mut self) {
        self.stack.push(Frame::Array(Vec::new()))
    }
    fn end_array(&mut self) {
        if let Some(Frame::Array(a)) = self.stack.pop() {
            self.push(Node::Array(a));
        }
    }
    fn begin_object(&mut self) {
        self.stack.push(Frame::Object(Vec::new(), None))
    }
    fn key(&mut self, k: &str) {
        if let Some(Frame::Object(_, key)) = self.stack.last_mut() {
            *key = Some(Cow::Owned(k.to_owned()));
        }
    }
    fn key_ref(&mut self, k: &'a str) {
        if let Some(Frame::Object(_, key)) = self.stack.last_mut() {
            *key = Some(Cow::Borrowed(k));
        }
    }
    fn object_mark(&self) -> usize {
        match self.stack.last() {
            Some(Frame::Object(e, _)) => e.len(),
            _ => 0,
        }
    }
    fn rewind_object(&mut self, mark: usize) {
        if let Some(Frame::Object(e, k)) = self.stack.last_mut() {
            e.truncate(mark);
            *k = None;
        }
    }
    fn end_object(&mut self, distinct_keys: bool) {
        if let Some(Frame::Object(mut e, _)) = self.stack.pop() {
            if !distinct_keys {
                dedup(&mut e);
            }
            self.push(Node::Object(Obj(e)));
        }
    }
}

/// Merge repeated keys as `JSON.parse` does: first position, last value.
fn dedup(entries: &mut Vec<(Cow<'_, str>, Node<'_>)>) {
    let n = entries.len();
    let dup = if n <= 16 {
        (1..n).any(|i| entries[..i].iter().any(|(k, _)| *k == entries[i].0))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(n);
        !entries.iter().all(|(k, _)| seen.insert(k.as_ref()))
    };
    if !dup {
        return;
    }
    let mut index: HashMap<String, usize> = HashMap::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    for (k, v) in entries.drain(..) {
        match index.get(k.as_ref()) {
            Some(&i) => {
                let slot: &mut (Cow<'_, str>, Node<'_>) = &mut out[i];
                slot.1 = v;
            }
            None => {
                index.insert(k.to_string(), out.len());
                out.push((k, v));
            }
        }
    }
    *entries = out;
}
