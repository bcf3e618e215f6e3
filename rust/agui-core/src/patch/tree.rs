//! [`Tree`]: an owned JSON document built for replaying a stream's state: objects are
//! insertion-ordered, a few members as a vector searched in order (no hash table per small
//! item), more as a map hashed with foldhash (no SipHash); numbers are held parsed (an
//! `i64`, an `f64`, and only an integer beyond 64 bits as its decimal text), keys and
//! strings as [`Text`] (up to 24 bytes inline: no allocation for a state's many short keys
//! and values). It is built straight from JSON text ([`Tree::from_text`], through
//! [`crate::sink::json_text`]) or from a `serde_json::Value`, patched by the one engine (the
//! same document implementation as `Value`'s: `super::value`), and walked into any
//! [`Sink`] ([`Tree::walk`]) — what a `Value` holding the same JSON gives, number for number
//! (`sink::json_value`'s forms), member order included.

use std::borrow::Cow;

use serde_json::Value;

use super::engine::Kind;
use super::value::{Members, Num, OwnedJson};
use super::{OpKind, Operation};
use crate::sink::Sink;

/// Objects of up to this many members keep them in a vector searched in order: a state's
/// many small items then cost one allocation each, not a hash table. A larger object
/// (or one grown past it) is hashed.
const FEW: usize = 8;

/// A key or a string of the tree: up to 24 bytes held inline, longer ones on the heap.
pub type Text = compact_str::CompactString;

type Index = indexmap::IndexMap<Text, Tree, foldhash::fast::RandomState>;

/// The members of a [`Tree`] object, in insertion order.
#[derive(Debug, Clone)]
pub struct TreeMap(Repr);

#[derive(Debug, Clone)]
enum Repr {
    Few(Vec<(Text, Tree)>),
    Many(Box<Index>),
}

impl Default for TreeMap {
    fn default() -> Self {
        TreeMap(Repr::Few(Vec::new()))
    }
}

impl TreeMap {
    /// Room for `n` members.
    pub fn with_capacity(n: usize) -> Self {
        TreeMap(if n <= FEW { Repr::Few(Vec::with_capacity(n)) } else { Repr::Many(Box::new(Index::with_capacity_and_hasher(n, Default::default()))) })
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Few(e) => e.len(),
            Repr::Many(m) => m.len(),
        }
    }

    /// No members?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn find(few: &[(Text, Tree)], k: &str) -> Option<usize> {
        few.iter().position(|(x, _)| x.as_str() == k)
    }

    /// The members, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(match &self.0 {
            Repr::Few(v) => Ok(v.iter()),
            Repr::Many(m) => Err(m.iter()),
        })
    }

    /// Add a member known to be new (last; at `pos` when given), hashing the members from
    /// here on when they become more than a few.
    fn add_new(&mut self, pos: Option<usize>, k: Text, v: Tree) {
        match &mut self.0 {
            Repr::Few(e) if e.len() < FEW => match pos {
                Some(i) => e.insert(i, (k, v)),
                None => e.push((k, v)),
            },
            Repr::Few(e) => {
                let mut m = Index::with_capacity_and_hasher(2 * FEW, Default::default());
                m.extend(e.drain(..));
                match pos {
                    Some(i) => m.shift_insert(i, k, v),
                    None => m.insert(k, v),
                };
                self.0 = Repr::Many(Box::new(m));
            }
            Repr::Many(m) => {
                match pos {
                    Some(i) => m.shift_insert(i, k, v),
                    None => m.insert(k, v),
                };
            }
        }
    }

    /// Set `k` to `v` (a new member goes last, an existing one keeps its place and its key).
    fn set(&mut self, k: Text, v: Tree) -> Option<Tree> {
        match &mut self.0 {
            Repr::Few(e) => {
                if let Some(i) = Self::find(e, &k) {
                    return Some(std::mem::replace(&mut e[i].1, v));
                }
            }
            Repr::Many(m) => return m.insert(k, v),
        }
        self.add_new(None, k, v);
        None
    }

    /// Every object of the tree hashed, whatever its size (tests run the engine on both forms).
    #[cfg(test)]
    pub(crate) fn hash_all(t: &mut Tree) {
        match t {
            Tree::Array(a) => a.iter_mut().for_each(TreeMap::hash_all),
            Tree::Object(m) => {
                if let Repr::Few(e) = &mut m.0 {
                    let mut i = Index::with_capacity_and_hasher(e.len(), Default::default());
                    i.extend(e.drain(..));
                    m.0 = Repr::Many(Box::new(i));
                }
                if let Repr::Many(i) = &mut m.0 {
                    i.values_mut().for_each(TreeMap::hash_all);
                }
            }
            _ => {}
        }
    }
}

/// The members of a [`TreeMap`], in order ([`TreeMap::iter`]): one match a member (a
/// chain of the two forms' iterators cost several times that a member).
pub struct Iter<'a>(Result<std::slice::Iter<'a, (Text, Tree)>, indexmap::map::Iter<'a, Text, Tree>>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a Tree);
    #[inline]
    fn next(&mut self) -> Option<(&'a str, &'a Tree)> {
        match &mut self.0 {
            Ok(few) => few.next().map(|(k, v)| (k.as_str(), v)),
            Err(many) => many.next().map(|(k, v)| (k.as_str(), v)),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Ok(few) => few.size_hint(),
            Err(many) => many.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// An owned JSON value (see the module documentation).
#[derive(Debug, Clone, Default)]
pub enum Tree {
    #[default]
    Null,
    Bool(bool),
    /// An integer within `i64`.
    Int(i64),
    /// An integer beyond `i64`, as its exact decimal text.
    BigInt(Box<str>),
    /// Any other number, as the double it spells (`1e400`: infinity).
    Float(f64),
    Str(Text),
    Array(Vec<Tree>),
    Object(TreeMap),
}

impl Tree {
    /// An empty object.
    pub fn object() -> Tree {
        Tree::Object(TreeMap::default())
    }

    /// JSON text nesting at most `max_depth` levels, read as `limits::parse_value` then
    /// `sink::json_value` read it (the same parser, number forms and repeated-key rule:
    /// first place, last value). `None` on any error of that parse, and for an integer of
    /// more than [`super::MAX_INT_DIGITS`] digits (the caller's own parse then names it).
    pub fn from_text(text: &str, max_depth: usize) -> Option<Tree> {
        // The plain text of most snapshots by the scanner's byte loop, anything else by
        // jiter, and what jiter declines by serde_json (which names the error).
        let mut b = Builder::default();
        match crate::stream::event::walk_value(text, max_depth, &mut b) {
            Some(end) if end == text.len() => {}
            // One whole value and more text: no parser reads that as one value (a reader
            // may hand over an event's text to its end without scanning the value first).
            Some(_) => return None,
            None => {
                b = Builder::default();
                if crate::sink::json_text_fast(text, max_depth, &mut b).is_none() {
                    b = Builder::default();
                    crate::sink::json_text(text, max_depth, &mut b).ok()?;
                }
            }
        }
        b.finish()
    }

    /// Walk the value into a sink, as `sink::json_value` walks the `Value` it stands for.
    pub fn walk<'a, S: Sink<'a> + ?Sized>(&self, s: &mut S) {
        match self {
            Tree::Null => s.null(),
            Tree::Bool(b) => s.bool(*b),
            Tree::Int(i) => s.i64(*i),
            Tree::BigInt(t) => s.big_int(t),
            Tree::Float(f) => s.f64(*f),
            Tree::Str(t) => s.str(t),
            Tree::Array(a) => {
                s.begin_array();
                for e in a {
                    e.walk(s);
                }
                s.end_array();
            }
            Tree::Object(m) => {
                s.begin_object();
                match &m.0 {
                    Repr::Few(few) => few.iter().for_each(|(k, e)| {
                        s.key(k);
                        e.walk(s);
                    }),
                    Repr::Many(many) => many.iter().for_each(|(k, e)| {
                        s.key(k);
                        e.walk(s);
                    }),
                }
                s.end_object(true);
            }
        }
    }
}

impl From<Value> for Tree {
    /// A parsed value taken over (its strings and keys moved, its numbers parsed).
    fn from(v: Value) -> Tree {
        match v {
            Value::Null => Tree::Null,
            Value::Bool(b) => Tree::Bool(b),
            Value::Number(n) => number(n.as_str()),
            Value::String(s) => Tree::Str(s.into()),
            Value::Array(a) => Tree::Array(a.into_iter().map(Tree::from).collect()),
            Value::Object(m) => {
                let mut t = TreeMap::with_capacity(m.len());
                for (k, v) in m {
                    t.set(k.into(), Tree::from(v));
                }
                Tree::Object(t)
            }
        }
    }
}

impl From<&Value> for Tree {
    fn from(v: &Value) -> Tree {
        match v {
            Value::Null => Tree::Null,
            Value::Bool(b) => Tree::Bool(*b),
            Value::Number(n) => number(n.as_str()),
            Value::String(s) => Tree::Str(Text::new(s)),
            Value::Array(a) => Tree::Array(a.iter().map(Tree::from).collect()),
            Value::Object(m) => {
                let mut t = TreeMap::with_capacity(m.len());
                for (k, v) in m {
                    t.set(Text::new(k), Tree::from(v));
                }
                Tree::Object(t)
            }
        }
    }
}

/// A number's text in the tree's form (the forms `sink::json_value` gives).
fn number(text: &str) -> Tree {
    // (what `sink::number` gives any text an `i64` parse takes, without a builder)
    if let Ok(i) = text.parse::<i64>() {
        return Tree::Int(i);
    }
    let mut b = Builder::default();
    crate::sink::number(text, &mut b);
    b.values.pop().unwrap_or_default()
}

/// A [`Sink`] building a [`Tree`]: containers' members gather on two stacks and become a
/// vector or a map of the exact size when the container closes.
#[derive(Default)]
struct Builder {
    values: Vec<Tree>,
    keys: Vec<Text>,
    /// Open containers: where their values (and an object's keys) start.
    open: Vec<(usize, usize)>,
    /// An integer past the digit limit was read.
    too_long: bool,
}

impl Builder {
    fn finish(mut self) -> Option<Tree> {
        if self.too_long || !self.open.is_empty() || self.values.len() != 1 {
            return None;
        }
        self.values.pop()
    }
}

/// A few keys, none repeated (a longer list is not looked at: it is hashed anyway).
fn distinct(keys: &[Text]) -> bool {
    keys.len() <= FEW && keys.iter().enumerate().all(|(i, k)| keys[..i].iter().all(|x| x.as_str() != k.as_str()))
}

impl Sink<'_> for Builder {
    fn null(&mut self) {
        self.values.push(Tree::Null);
    }
    fn bool(&mut self, v: bool) {
        self.values.push(Tree::Bool(v));
    }
    fn i64(&mut self, v: i64) {
        self.values.push(Tree::Int(v));
    }
    fn big_int(&mut self, decimal: &str) {
        if decimal.len() > super::MAX_INT_DIGITS && super::int_rule(decimal).is_err() {
            self.too_long = true;
        }
        self.values.push(Tree::BigInt(decimal.into()));
    }
    fn f64(&mut self, v: f64) {
        self.values.push(Tree::Float(v));
    }
    fn str(&mut self, s: &str) {
        self.values.push(Tree::Str(Text::new(s)));
    }
    fn begin_array(&mut self) {
        self.open.push((self.values.len(), self.keys.len()));
    }
    fn end_array(&mut self) {
        let Some((start, _)) = self.open.pop() else { return };
        let a = self.values.split_off(start);
        self.values.push(Tree::Array(a));
    }
    fn begin_object(&mut self) {
        self.open.push((self.values.len(), self.keys.len()));
    }
    fn key(&mut self, k: &str) {
        self.keys.push(Text::new(k));
    }
    fn end_object(&mut self, distinct_keys: bool) {
        let Some((start, kstart)) = self.open.pop() else { return };
        let few = distinct_keys || distinct(&self.keys[kstart..]);
        let members = self.keys.drain(kstart..).zip(self.values.drain(start..));
        let m = if few && members.len() <= FEW {
            TreeMap(Repr::Few(members.collect()))
        } else {
            let mut m = TreeMap::with_capacity(members.len());
            // A repeated key keeps its first place and takes its last value (as `Value`'s map).
            for (k, v) in members {
                m.set(k, v);
            }
            m
        };
        self.values.push(Tree::Object(m));
    }
    fn object_mark(&self) -> usize {
        self.keys.len()
    }
    fn rewind_object(&mut self, mark: usize) {
        let Some(&(start, kstart)) = self.open.last() else { return };
        self.values.truncate(start + (mark - kstart));
        self.keys.truncate(mark);
    }
}

impl Members<Tree> for TreeMap {
    type Key = Text;
    fn len(&self) -> usize {
        TreeMap::len(self)
    }
    fn get(&self, k: &str) -> Option<&Tree> {
        match &self.0 {
            Repr::Few(e) => e.iter().find(|(x, _)| x.as_str() == k).map(|(_, v)| v),
            Repr::Many(m) => m.get(k),
        }
    }
    fn get_mut(&mut self, k: &str) -> Option<&mut Tree> {
        match &mut self.0 {
            Repr::Few(e) => e.iter_mut().find(|(x, _)| x.as_str() == k).map(|(_, v)| v),
            Repr::Many(m) => m.get_mut(k),
        }
    }
    fn insert(&mut self, k: &str, v: Tree) -> Option<Tree> {
        // An existing key allocates nothing.
        match Members::get_mut(self, k) {
            Some(slot) => Some(std::mem::replace(slot, v)),
            None => {
                self.add_new(None, Text::new(k), v);
                None
            }
        }
    }
    fn insert_entry(&mut self, k: Text, v: Tree) {
        self.set(k, v);
    }
    fn shift_remove(&mut self, k: &str) -> Option<Tree> {
        match &mut self.0 {
            Repr::Few(e) => Self::find(e, k).map(|i| e.remove(i).1),
            Repr::Many(m) => m.shift_remove(k),
        }
    }
    fn swap_remove(&mut self, k: &str) -> Option<Tree> {
        self.swap_remove_entry(k).map(|(_, v)| v)
    }
    fn swap_remove_entry(&mut self, k: &str) -> Option<(Text, Tree)> {
        match &mut self.0 {
            Repr::Few(e) => Self::find(e, k).map(|i| e.swap_remove(i)),
            Repr::Many(m) => m.swap_remove_entry(k),
        }
    }
    /// As `IndexMap::shift_insert`: an existing key keeps its key, takes the value and moves
    /// to `pos`.
    fn shift_insert(&mut self, pos: usize, k: &str, v: Tree) {
        match &mut self.0 {
            Repr::Few(e) => match Self::find(e, k) {
                Some(i) => {
                    let (key, _) = e.remove(i);
                    e.insert(pos, (key, v));
                }
                None => self.add_new(Some(pos), Text::new(k), v),
            },
            Repr::Many(m) => {
                m.shift_insert(pos, Text::new(k), v);
            }
        }
    }
    fn position(&self, k: &str) -> Option<usize> {
        match &self.0 {
            Repr::Few(e) => Self::find(e, k),
            Repr::Many(m) => m.get_index_of(k),
        }
    }
    fn last_key_is(&self, k: &str) -> bool {
        match &self.0 {
            Repr::Few(e) => e.last().is_some_and(|(x, _)| x.as_str() == k),
            Repr::Many(m) => m.last().is_some_and(|(x, _)| x.as_str() == k),
        }
    }
    fn key_list(&self) -> Vec<String> {
        self.iter().map(|(k, _)| k.to_string()).collect()
    }
    fn each<'s>(&'s self) -> impl Iterator<Item = (&'s str, &'s Tree)>
    where
        Tree: 's,
    {
        self.iter()
    }
    fn into_entries(self) -> impl Iterator<Item = (Text, Tree)> {
        let (few, many) = match self.0 {
            Repr::Few(v) => (v, None),
            Repr::Many(m) => (Vec::new(), Some(*m)),
        };
        few.into_iter().chain(many.into_iter().flatten())
    }
}

/// An operation on a [`Tree`]: a `test` operation's value read as a tree.
#[derive(Debug)]
pub struct TreeOp {
    op: Operation,
    test: Tree,
}

impl super::engine::PatchOp for TreeOp {
    type Token = String;
    fn kind(&self) -> OpKind {
        self.op.kind
    }
    fn path(&self) -> &[String] {
        self.op.path()
    }
    fn from(&self) -> &[String] {
        super::engine::PatchOp::from(&self.op)
    }
    fn path_text(&self) -> Cow<'_, str> {
        self.op.path_text()
    }
}

impl OwnedJson for Tree {
    type Map = TreeMap;
    type Op = TreeOp;
    fn kind(&self) -> Kind {
        match self {
            Tree::Null => Kind::Null,
            Tree::Bool(_) => Kind::Bool,
            Tree::Int(_) | Tree::BigInt(_) | Tree::Float(_) => Kind::Number,
            Tree::Str(_) => Kind::String,
            Tree::Array(_) => Kind::Array,
            Tree::Object(_) => Kind::Object,
        }
    }
    fn type_name(&self) -> &'static str {
        OwnedJson::kind(self).name().unwrap_or("object")
    }
    fn map(&self) -> Option<&TreeMap> {
        match self {
            Tree::Object(m) => Some(m),
            _ => None,
        }
    }
    fn map_mut(&mut self) -> Option<&mut TreeMap> {
        match self {
            Tree::Object(m) => Some(m),
            _ => None,
        }
    }
    fn array(&self) -> Option<&Vec<Tree>> {
        match self {
            Tree::Array(a) => Some(a),
            _ => None,
        }
    }
    fn array_mut(&mut self) -> Option<&mut Vec<Tree>> {
        match self {
            Tree::Array(a) => Some(a),
            _ => None,
        }
    }
    fn bool(&self) -> Option<bool> {
        match self {
            Tree::Bool(b) => Some(*b),
            _ => None,
        }
    }
    fn str(&self) -> Option<&str> {
        match self {
            Tree::Str(s) => Some(s),
            _ => None,
        }
    }
    fn num(&self) -> Option<Num<'_>> {
        match self {
            Tree::Int(i) => Some(Num::Int(*i)),
            Tree::BigInt(t) => Some(Num::Big(t)),
            Tree::Float(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }
    fn from_json(v: Value) -> Tree {
        Tree::from(v)
    }
    fn ops(ops: Vec<Operation>) -> Vec<TreeOp> {
        ops.into_iter()
            .map(|op| {
                let test = if op.kind == OpKind::Test { Tree::from(&op.value) } else { Tree::Null };
                TreeOp { op, test }
            })
            .collect()
    }
    fn operation(op: &TreeOp) -> &Operation {
        &op.op
    }
    fn operation_mut(op: &mut TreeOp) -> &mut Operation {
        &mut op.op
    }
    fn test_value(op: &TreeOp) -> &Tree {
        &op.test
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::patch::{parse_patch, Dialect, Options, PatchError, Replayer};
    use serde_json::json;

    /// What a sink receives, event by event (doubles by their bits: `-0.0` is not `0.0`).
    #[derive(Default)]
    pub(crate) struct Trace(pub Vec<String>);

    impl Sink<'_> for Trace {
        fn null(&mut self) {
            self.0.push("null".into());
        }
        fn bool(&mut self, v: bool) {
            self.0.push(format!("{v}"));
        }
        fn i64(&mut self, v: i64) {
            self.0.push(format!("i{v}"));
        }
        fn big_int(&mut self, decimal: &str) {
            self.0.push(format!("b{decimal}"));
        }
        fn f64(&mut self, v: f64) {
            self.0.push(format!("f{v:?}/{:x}", v.to_bits()));
        }
        fn str(&mut self, s: &str) {
            self.0.push(format!("s{s:?}"));
        }
        fn begin_array(&mut self) {
            self.0.push("[".into());
        }
        fn end_array(&mut self) {
            self.0.push("]".into());
        }
        fn begin_object(&mut self) {
            self.0.push("{".into());
        }
        fn key(&mut self, k: &str) {
            self.0.push(format!("k{k:?}"));
        }
        fn end_object(&mut self, _distinct_keys: bool) {
            self.0.push("}".into());
        }
        fn object_mark(&self) -> usize {
            self.0.len()
        }
        fn rewind_object(&mut self, mark: usize) {
            self.0.truncate(mark);
        }
    }

    /// A `Value` as the hand-over sees it.
    pub(crate) fn trace_value(v: &Value) -> Vec<String> {
        let mut t = Trace::default();
        crate::sink::json_value(v, &mut t);
        t.0
    }

    pub(crate) fn trace_tree(v: &Tree) -> Vec<String> {
        let mut t = Trace::default();
        v.walk(&mut t);
        t.0
    }

    /// Snapshot texts read into a tree give what their parse gives walked, or are declined
    /// exactly where that parse (with its digit check) fails.
    #[test]
    fn from_text_reads_as_the_parse_reads() {
        let mut texts = crate::sink::tests::sample_texts();
        texts.extend(["{\"l\":1.50,\"b\":3,\"l\":2}", "18446744073709551615", "9223372036854775807", "-9223372036854775808"].map(String::from));
        // one whole value and more text (an event's text handed over to its end)
        texts.extend(["{\"a\":1},\"b\":2", "{\"a\":1}}", "[1] [2]", "1 2", "{} ,", "[\"\\n\"],{}", " {\"a\":[1,2]} ]"].map(String::from));
        texts.push(format!("[{}]", "9".repeat(crate::patch::MAX_INT_DIGITS)));
        texts.push(format!("[{}]", "9".repeat(crate::patch::MAX_INT_DIGITS + 1)));
        texts.push(format!("[-{}]", "9".repeat(crate::patch::MAX_INT_DIGITS + 1)));
        // objects around the few members kept as a vector, a key repeated first and last
        for n in [FEW - 1, FEW, FEW + 1, 2 * FEW + 1] {
            let members: Vec<String> = (0..n).map(|i| format!("\"k{}\":{i}", i % (n - 1))).collect();
            texts.push(format!("{{{}}}", members.join(",")));
            let members: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{{\"v\":{i}}}")).collect();
            texts.push(format!("{{{}}}", members.join(",")));
        }
        for n in 0..5 {
            texts.push(format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n)));
            texts.push(format!("{}{}", "[".repeat(n), "]".repeat(n)));
        }
        for text in &texts {
            for max_depth in [0, 1, 2, 3, 4, 512] {
                let want = crate::stream::event::nested_text_value(text, max_depth);
                let got = Tree::from_text(text, max_depth);
                match (&want, &got) {
                    (Some(v), Some(t)) => assert_eq!(trace_tree(t), trace_value(v), "{text} at {max_depth}"),
                    (None, None) => {}
                    _ => panic!("{text} at {max_depth}: {want:?} vs {got:?}"),
                }
                if let Some(v) = want {
                    assert_eq!(trace_tree(&Tree::from(&v)), trace_value(&v));
                    assert_eq!(trace_tree(&Tree::from(v.clone())), trace_value(&v));
                }
            }
        }
    }

    /// Apply a patch to a `Value` and to the tree of the same JSON: the same outcome
    /// (error included), the same document walked, the document unchanged on error.
    pub(crate) fn differential(doc: &Value, patch: &Value, opts: &Options) -> Result<(), PatchError> {
        let mut v = doc.clone();
        let ops = parse_patch(patch)?;
        let want = Replayer::new(&mut v, opts).apply_owned(ops.clone());
        // Objects as vectors (hashed past a few members), and all hashed.
        for hashed in [false, true] {
            let mut t = Tree::from(doc);
            if hashed {
                TreeMap::hash_all(&mut t);
            }
            let got = Replayer::new(&mut t, opts).apply_owned(ops.clone());
            assert_eq!(got, want, "{doc} {patch}");
            assert_eq!(trace_tree(&t), trace_value(&v), "{doc} {patch}");
            if want.is_err() {
                assert_eq!(trace_tree(&t), trace_value(doc), "{doc} {patch}: not atomic");
            }
        }
        want
    }

    #[test]
    fn official_suite_as_value_does() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/client/json-patch");
        let mut n = 0;
        for file in ["tests.json", "spec_tests.json"] {
            let cases: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
            for case in cases.as_array().unwrap() {
                let Some(patch) = case.get("patch") else { continue };
                for dialect in [Dialect::Rfc6902, Dialect::FastJsonPatch] {
                    for max_bytes in [usize::MAX, 200] {
                        let _ = differential(&case["doc"], patch, &Options { dialect, max_bytes, ..Options::default() });
                        n += 1;
                    }
                }
            }
        }
        assert!(n > 400, "{n}");
    }

    #[test]
    fn numbers_compare_and_come_back_as_in_value() {
        let doc = json!({"i": 1, "f": 1.5, "big": 123456789012345678901234567890u128, "u": 18446744073709551615u64, "n": -0.0, "e": 100});
        let values = [json!(1), json!(1.0), json!(1.5), json!(2), json!(-0.0), json!(0), json!(100.0), json!(18446744073709551615u64), json!(18446744073709551615.0)];
        let mut values = values.to_vec();
        values.push(serde_json::from_str("123456789012345678901234567890").unwrap());
        values.push(serde_json::from_str("1.234567890123456789012345678900e29").unwrap());
        values.push(serde_json::from_str("1e400").unwrap());
        values.push(serde_json::from_str("1E2").unwrap());
        for dialect in [Dialect::Rfc6902, Dialect::FastJsonPatch] {
            let opts = Options { dialect, ..Options::default() };
            for path in ["/i", "/f", "/big", "/u", "/n", "/e"] {
                for v in &values {
                    let _ = differential(&doc, &json!([{"op": "test", "path": path, "value": v}]), &opts);
                    differential(&doc, &json!([{"op": "replace", "path": path, "value": v}, {"op": "copy", "from": path, "path": "/c"}]), &opts).unwrap();
                }
            }
        }
    }

    /// Growing past a few members and shrinking back keeps order and finds every member.
    #[test]
    fn objects_grow_past_a_few_members_in_order() {
        let doc = json!({"k0": 0});
        let mut ops: Vec<Value> = (1..=2 * FEW).map(|i| json!({"op": "add", "path": format!("/k{i}"), "value": i})).collect();
        ops.push(json!({"op": "move", "from": "/k3", "path": "/k3"}));
        ops.push(json!({"op": "move", "from": "/k1", "path": "/z"}));
        ops.extend((4..2 * FEW).step_by(2).map(|i| json!({"op": "remove", "path": format!("/k{i}")})));
        ops.push(json!({"op": "replace", "path": "/k0", "value": "x"}));
        ops.push(json!({"op": "test", "path": "/k5", "value": 5}));
        let opts = Options::default();
        differential(&doc, &Value::Array(ops.clone()), &opts).unwrap();
        ops.push(json!({"op": "test", "path": "/k4", "value": 4})); // removed: rolls all back
        assert!(differential(&doc, &Value::Array(ops), &opts).is_err());
        assert!(std::mem::size_of::<Tree>() <= 32);
    }

    #[test]
    fn limits_as_in_value() {
        let doc = json!({"a": {"b": [1, 2, {"c": "xxxxxxxxxx"}]}, "s": "yyyyyyyyyyyyyyyyyyyy"});
        for max_bytes in [0, 31, 32, 64, 100, 150, 200, 400, 1000] {
            for max_depth in [0, 1, 2, 3, 4, 5] {
                let opts = Options { max_bytes, max_depth, ..Options::default() };
                for patch in [
                    json!([{"op": "copy", "from": "/a", "path": "/d"}]),
                    json!([{"op": "add", "path": "/d", "value": {"x": [[1]], "y": "zzzz"}}]),
                    json!([{"op": "move", "from": "/s", "path": "/a/b/2/s"}]),
                    json!([{"op": "move", "from": "/a/b", "path": "/a/b2"}, {"op": "copy", "from": "/s", "path": "/a/b2/0"}]),
                    json!([{"op": "test", "path": "/a", "value": {"b": [1, 2, {"c": "xxxxxxxxxx"}]}}]),
                ] {
                    let _ = differential(&doc, &patch, &opts);
                }
            }
        }
    }
}
