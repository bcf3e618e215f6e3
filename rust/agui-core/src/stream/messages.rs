//! The reducer's messages: a list in the reference's order, with the lookups the reducer
//! makes in logarithmic time at most, whatever the stream does. The reference searches
//! the list for every event (fine for a chat, quadratic for a log); a plain index from
//! id to position goes stale as soon as a tool result is inserted before later messages.
//!
//! Each message has a key that never changes (its place in `slab`, the order it was
//! added in); the list order is an implicit treap over the keys ([`Order`]), which also
//! counts the tool messages, so "the first message after this one that is not a tool
//! message" (where a tool result goes) is one descent. Lookups by id give the first
//! message in list order with that id (ids never change; a message inserted before the
//! one indexed takes its place); lookups by tool call id give the first message carrying
//! the call, and the first assistant one, each with the call's place in `toolCalls`
//! (messages gain calls only at the end of the messages that carry them, in list order,
//! and lose them only when replaced, which marks them).

use super::js::{id_ref, strict_eq, IdRef, Ids};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::VecDeque;

/// A message as the reducer holds it: a JSON value (given: initial messages, snapshots,
/// run input; or one the reducer changed in a way it only does on objects), or one the
/// reducer built from events ([`Fields`]: its members under the names the reducer gives,
/// in the order the reference's object would have them, no map or key strings between
/// them). Both read, compare, print and serialize as the same JSON value.
#[derive(Clone)]
pub enum Message {
    Json(Value),
    Built(Fields),
}

/// The members of an object the reducer built, in insertion order (a member set again
/// keeps its place, as a JSON object's does).
#[derive(Clone, Default)]
pub struct Fields(Vec<(&'static str, Member)>);

/// A member of a built object.
#[derive(Clone)]
pub enum Member {
    Value(Value),
    /// A string the reducer writes as is (a tool call's `type`).
    Static(&'static str),
    Object(Fields),
    /// A list of built objects (`toolCalls`).
    Objects(Vec<Fields>),
}

impl Fields {
    pub(super) fn with_capacity(n: usize) -> Self {
        Fields(Vec::with_capacity(n))
    }

    /// Add `key`, not present yet, last (building a new object).
    #[inline]
    pub(super) fn push(&mut self, key: &'static str, m: Member) {
        debug_assert!(!self.contains(key));
        self.0.push((key, m));
    }

    /// Set `key` (in its place when present, else last), as a JSON object's insert does.
    pub(super) fn insert(&mut self, key: &'static str, m: Member) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = m,
            None => self.0.push((key, m)),
        }
    }

    #[inline]
    pub(super) fn get(&self, key: &str) -> Option<&Member> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, m)| m)
    }

    #[inline]
    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut Member> {
        self.0.iter_mut().find(|(k, _)| *k == key).map(|(_, m)| m)
    }

    /// The JSON value of `key` when it is one.
    #[inline]
    pub(super) fn value(&self, key: &str) -> Option<&Value> {
        match self.get(key)? {
            Member::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The string `key` holds, when it holds a JSON string.
    #[inline]
    pub(super) fn string_mut(&mut self, key: &str) -> Option<&mut String> {
        match self.get_mut(key)? {
            Member::Value(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// The members, in order.
    pub fn members(&self) -> impl Iterator<Item = (&'static str, &Member)> {
        self.0.iter().map(|(k, m)| (*k, m))
    }

    pub(super) fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The object as a JSON value.
    pub fn to_value(&self) -> Value {
        let mut m = Map::with_capacity(self.0.len());
        for (k, v) in &self.0 {
            m.insert((*k).to_string(), v.to_value());
        }
        Value::Object(m)
    }

    fn into_value(self) -> Value {
        let mut m = Map::with_capacity(self.0.len());
        for (k, v) in self.0 {
            m.insert(k.to_string(), v.into_value());
        }
        Value::Object(m)
    }

    /// Walk the object into a sink, as [`crate::sink::json_value`] walks its JSON value.
    pub fn walk<'a, S: crate::sink::Sink<'a> + ?Sized>(&self, s: &mut S) {
        s.begin_object();
        for (k, v) in &self.0 {
            s.key(k);
            match v {
                Member::Value(v) => crate::sink::json_value(v, s),
                Member::Static(t) => s.str(t),
                Member::Object(f) => f.walk(s),
                Member::Objects(list) => {
                    s.begin_array();
                    for f in list {
                        f.walk(s);
                    }
                    s.end_array();
                }
            }
        }
        s.end_object(true);
    }
}

impl Member {
    fn to_value(&self) -> Value {
        match self {
            Member::Value(v) => v.clone(),
            Member::Static(t) => Value::String((*t).to_string()),
            Member::Object(f) => f.to_value(),
            Member::Objects(list) => Value::Array(list.iter().map(Fields::to_value).collect()),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Member::Value(v) => v,
            Member::Static(t) => Value::String(t.to_string()),
            Member::Object(f) => f.into_value(),
            Member::Objects(list) => Value::Array(list.into_iter().map(Fields::into_value).collect()),
        }
    }
}

impl Message {
    /// The message as a JSON value.
    pub fn to_value(&self) -> Cow<'_, Value> {
        match self {
            Message::Json(v) => Cow::Borrowed(v),
            Message::Built(f) => Cow::Owned(f.to_value()),
        }
    }

    pub fn into_value(self) -> Value {
        match self {
            Message::Json(v) => v,
            Message::Built(f) => f.into_value(),
        }
    }

    /// The message as a JSON value the reducer may change in place (a built one becomes
    /// its JSON value).
    pub(super) fn value_mut(&mut self) -> &mut Value {
        if let Message::Built(f) = self {
            *self = Message::Json(std::mem::take(f).into_value());
        }
        match self {
            Message::Json(v) => v,
            Message::Built(_) => unreachable!("made a JSON value above"),
        }
    }

    /// Member `key`, when it is a JSON value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Message::Json(v) => v.get(key),
            Message::Built(f) => f.value(key),
        }
    }

    pub(super) fn is_object(&self) -> bool {
        match self {
            Message::Json(v) => v.is_object(),
            Message::Built(_) => true,
        }
    }

    pub fn role(&self) -> Option<&str> {
        self.get("role").and_then(Value::as_str)
    }

    /// Each tool call of the message that is an object: its place and id.
    fn each_call(&self, mut f: impl FnMut(usize, Option<&Value>)) {
        match self {
            Message::Json(m) => {
                if let Some(Value::Array(a)) = m.get("toolCalls") {
                    for (i, tc) in a.iter().enumerate() {
                        if tc.is_object() {
                            f(i, tc.get("id"));
                        }
                    }
                }
            }
            Message::Built(m) => {
                if let Some(Member::Objects(a)) = m.get("toolCalls") {
                    for (i, tc) in a.iter().enumerate() {
                        f(i, tc.value("id"));
                    }
                }
            }
        }
    }

    /// Walk the message into a sink, as [`crate::sink::json_value`] walks its JSON value.
    pub fn walk<'a, S: crate::sink::Sink<'a> + ?Sized>(&self, s: &mut S) {
        match self {
            Message::Json(v) => crate::sink::json_value(v, s),
            Message::Built(f) => f.walk(s),
        }
    }
}

impl From<Value> for Message {
    fn from(v: Value) -> Self {
        Message::Json(v)
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_value().fmt(f)
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for Message {
    fn eq(&self, other: &Value) -> bool {
        *self.to_value() == *other
    }
}

impl serde::Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Json(v) => v.serialize(s),
            Message::Built(f) => f.serialize(s),
        }
    }
}

impl serde::Serialize for Fields {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Calls<'a>(&'a [Fields]);
        impl serde::Serialize for Calls<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for f in self.0 {
                    seq.serialize_element(f)?;
                }
                seq.end()
            }
        }
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            match v {
                Member::Value(v) => map.serialize_entry(k, v)?,
                Member::Static(t) => map.serialize_entry(k, t)?,
                Member::Object(f) => map.serialize_entry(k, f)?,
                Member::Objects(list) => map.serialize_entry(k, &Calls(list))?,
            }
        }
        map.end()
    }
}

/// A message's key.
pub(super) type Key = usize;

/// The messages carrying one tool call id, in list order, each with the call's place in
/// its `toolCalls` (messages replaced since are dropped when met).
#[derive(Debug, Default)]
struct Holders {
    any: VecDeque<(Key, usize)>,
    assistant: VecDeque<(Key, usize)>,
}

fn is_tool(m: &Message) -> bool {
    m.role() == Some("tool")
}

#[derive(Debug, Default)]
pub(super) struct Messages {
    slab: Vec<Message>,
    order: Order,
    /// The first message with each id (objects only).
    by_id: Ids<Key>,
    calls: Ids<Holders>,
    /// Replaced messages: their tool calls are gone.
    replaced: Vec<bool>,
}

impl Messages {
    pub(super) fn new(list: Vec<Value>) -> Self {
        let list: Vec<Message> = list.into_iter().map(Message::Json).collect();
        let order = Order::identity(list.iter().map(is_tool).collect());
        let mut m = Messages { replaced: vec![false; list.len()], slab: list, order, ..Default::default() };
        for k in 0..m.slab.len() {
            m.index(k, true);
        }
        m
    }

    /// Index message `k`'s id (`first`: no message with it comes before `k`... unless
    /// one is indexed already) and tool calls (which go last among their holders).
    fn index(&mut self, k: Key, appended: bool) {
        let Messages { slab, by_id, calls, order, .. } = self;
        let m = &slab[k];
        if !m.is_object() {
            return;
        }
        if let Some(id) = id_ref(m.get("id")) {
            match by_id.get_mut(&id) {
                None => {
                    *by_id.entry(&id) = k;
                }
                Some(first) if !appended && order.rank(k) < order.rank(*first) => *first = k,
                Some(_) => {}
            }
        }
        let assistant = m.role() == Some("assistant");
        m.each_call(|i, id| {
            let Some(id) = id_ref(id) else { return };
            let h = calls.entry(&id);
            // (the first of a message's calls with this id is the one found)
            let seen = if appended { h.any.back().is_some_and(|&(o, _)| o == k) } else { h.any.iter().any(|&(o, _)| o == k) };
            if seen {
                return;
            }
            let add = |q: &mut VecDeque<(Key, usize)>| {
                // In list order: appended messages go last; another (rare) by position.
                let at = if appended { q.len() } else { q.partition_point(|&(o, _)| order.rank(o) < order.rank(k)) };
                q.insert(at, (k, i));
            };
            add(&mut h.any);
            if assistant {
                add(&mut h.assistant);
            }
        });
    }

    pub(super) fn len(&self) -> usize {
        self.slab.len()
    }

    pub(super) fn get(&self, k: Key) -> &Message {
        &self.slab[k]
    }

    /// Message `k` as a JSON value to change (a built one becomes its JSON value).
    pub(super) fn get_mut(&mut self, k: Key) -> &mut Value {
        self.slab[k].value_mut()
    }

    /// Message `k`'s members, when the reducer built it and it is still in that form.
    pub(super) fn built_mut(&mut self, k: Key) -> Option<&mut Fields> {
        match &mut self.slab[k] {
            Message::Built(f) => Some(f),
            Message::Json(_) => None,
        }
    }

    /// The position of message `k` in the list.
    pub(super) fn position(&self, k: Key) -> usize {
        self.order.rank(k)
    }

    /// The message at `position`.
    pub(super) fn at(&self, position: usize) -> Option<&Message> {
        (position < self.slab.len()).then(|| &self.slab[self.order.select(position)])
    }

    /// The first message whose id is `id` (`===`; `None` is an absent id).
    pub(super) fn find(&self, id: Option<&Value>) -> Option<Key> {
        self.by_id.get(&id_ref(id)?).copied()
    }

    pub(super) fn find_str(&self, id: &str) -> Option<Key> {
        self.by_id.strs.get(id).copied()
    }

    /// The first message carrying tool call `id` and the call's place, of any role or
    /// (`assistant`) an assistant one.
    pub(super) fn find_tool(&mut self, id: Option<&Value>, assistant: bool) -> Option<(Key, usize)> {
        self.find_tool_in(&id_ref(id)?, assistant)
    }

    fn find_tool_in(&mut self, id: &IdRef<'_>, assistant: bool) -> Option<(Key, usize)> {
        let h = self.calls.get_mut(id)?;
        let q = if assistant { &mut h.assistant } else { &mut h.any };
        while let Some(&(k, i)) = q.front() {
            if !self.replaced[k] {
                return Some((k, i));
            }
            q.pop_front();
        }
        None
    }

    pub(super) fn find_tool_str(&mut self, id: &str) -> Option<(Key, usize)> {
        self.find_tool_in(&IdRef::Str(id), false)
    }

    /// Append a message.
    pub(super) fn push(&mut self, m: Message) -> Key {
        let k = self.slab.len();
        self.order.push(is_tool(&m));
        self.slab.push(m);
        self.replaced.push(false);
        self.index(k, true);
        k
    }

    /// Insert a message at `position` (`len` appends).
    pub(super) fn insert(&mut self, position: usize, m: Message) -> Key {
        if position >= self.slab.len() {
            return self.push(m);
        }
        let k = self.slab.len();
        self.order.insert(position, is_tool(&m));
        self.slab.push(m);
        self.replaced.push(false);
        self.index(k, false);
        k
    }

    /// The position after message `k` and the tool messages right after it (where the
    /// reference inserts a tool result).
    pub(super) fn after_tool_run(&mut self, k: Key) -> usize {
        self.order.next_non_tool(self.order.rank(k))
    }

    /// Replace message `k` by one with the same id (its tool calls are gone).
    pub(super) fn replace(&mut self, k: Key, m: Value) {
        debug_assert!(strict_eq(self.slab[k].get("id"), m.get("id")) || id_ref(m.get("id")).is_none());
        let m = Message::Json(m);
        self.order.set_tool(k, is_tool(&m));
        self.replaced[k] = true;
        self.slab[k] = m;
    }

    /// A tool call was appended to message `k`'s `toolCalls` at `call`.
    pub(super) fn tool_call_added(&mut self, k: Key, id: Option<&Value>, call: usize) {
        let Some(id) = id_ref(id) else { return };
        let assistant = self.slab[k].role() == Some("assistant");
        let Messages { calls, replaced, .. } = self;
        let h = calls.entry(&id);
        // (the reducer adds a call only when no message carries it: the only holder)
        if h.any.iter().all(|&(o, _)| replaced[o]) {
            h.any.clear();
            h.any.push_back((k, call));
        }
        if assistant && h.assistant.iter().all(|&(o, _)| replaced[o]) {
            h.assistant.clear();
            h.assistant.push_back((k, call));
        }
    }

    /// The messages in list order.
    pub(super) fn iter(&self) -> impl ExactSizeIterator<Item = &Message> + '_ {
        self.order.keys().map(move |k| &self.slab[k])
    }

    /// Every message made its JSON value (the reducer's general path, for tests).
    #[cfg(test)]
    pub(super) fn promote_all(&mut self) {
        for m in &mut self.slab {
            m.value_mut();
        }
    }

    /// The messages in list order, taken out.
    pub(super) fn take(&mut self) -> Vec<Message> {
        let keys: Vec<Key> = self.order.keys().collect();
        let mut slab: Vec<Option<Message>> = std::mem::take(&mut self.slab).into_iter().map(Some).collect();
        *self = Messages::default();
        keys.into_iter().map(|k| slab[k].take().expect("each key once")).collect()
    }
}

// ---------------------------------------------------------------------------------------
// The list order: an implicit treap over message keys, counting non-tool messages
// ---------------------------------------------------------------------------------------

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    left: u32,
    right: u32,
    parent: u32,
    prio: u32,
    /// Nodes in the subtree.
    size: u32,
    /// Nodes in the subtree that are not tool messages.
    others: u32,
    tool: bool,
}

/// Keys in list order: insert at a position, a key's position, the key at a position,
/// the next non-tool message after a position, in O(log n) expected.
///
/// While the keys are in the order they were added (messages appended only, as most
/// streams do) the order is that list itself (`flat`: each key's tool flag) and every
/// query is immediate; the first insert before the end (or a search for the next non-tool
/// message past a long run of tool messages) builds the treap, balanced, once.
#[derive(Debug)]
struct Order {
    nodes: Vec<Node>,
    root: u32,
    rng: u64,
    flat: Option<Vec<bool>>,
}

impl Default for Order {
    fn default() -> Self {
        Order { nodes: Vec::new(), root: NIL, rng: 0x9E37_79B9_7F4A_7C15, flat: Some(Vec::new()) }
    }
}

/// The most tool flags [`Order::next_non_tool`] walks in a flat order (beyond, the treap
/// answers in logarithmic time: a walk each time would be quadratic).
const FLAT_WALK: usize = 32;

impl Order {
    /// Keys `0..n` in that order (`tool[k]`: message `k` is a tool message).
    fn identity(tool: Vec<bool>) -> Self {
        Order { flat: Some(tool), ..Order::default() }
    }

    /// The keys as a treap from here on (balanced, in the flat order).
    fn unflatten(&mut self) {
        let Some(tool) = self.flat.take() else { return };
        self.nodes = tool.iter().map(|&t| Node { left: NIL, right: NIL, parent: NIL, prio: 0, size: 1, others: u32::from(!t), tool: t }).collect();
        self.root = self.build(0, self.nodes.len(), 0);
    }

    /// The number of keys.
    fn len(&self) -> usize {
        match &self.flat {
            Some(tool) => tool.len(),
            None => self.nodes.len(),
        }
    }

    /// The subtree of keys `lo..hi`, its priorities decreasing with depth (a heap).
    fn build(&mut self, lo: usize, hi: usize, depth: u32) -> u32 {
        if lo >= hi {
            return NIL;
        }
        let mid = (lo + hi) / 2;
        let (l, r) = (self.build(lo, mid, depth + 1), self.build(mid + 1, hi, depth + 1));
        let n = mid as u32;
        self.nodes[mid].prio = u32::MAX - depth;
        self.set_left(n, l);
        self.set_right(n, r);
        self.update(n);
        n
    }

    fn size(&self, t: u32) -> u32 {
        if t == NIL { 0 } else { self.nodes[t as usize].size }
    }

    fn others(&self, t: u32) -> u32 {
        if t == NIL { 0 } else { self.nodes[t as usize].others }
    }

    fn update(&mut self, t: u32) {
        let n = self.nodes[t as usize];
        let size = 1 + self.size(n.left) + self.size(n.right);
        let others = u32::from(!n.tool) + self.others(n.left) + self.others(n.right);
        let node = &mut self.nodes[t as usize];
        node.size = size;
        node.others = others;
    }

    fn set_left(&mut self, t: u32, c: u32) {
        self.nodes[t as usize].left = c;
        if c != NIL {
            self.nodes[c as usize].parent = t;
        }
    }

    fn set_right(&mut self, t: u32, c: u32) {
        self.nodes[t as usize].right = c;
        if c != NIL {
            self.nodes[c as usize].parent = t;
        }
    }

    /// The first `k` nodes of `t`, and the rest.
    fn split(&mut self, t: u32, k: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let left = self.nodes[t as usize].left;
        let ls = self.size(left);
        if k <= ls {
            let (a, b) = self.split(left, k);
            self.set_left(t, b);
            self.update(t);
            if a != NIL {
                self.nodes[a as usize].parent = NIL;
            }
            (a, t)
        } else {
            let right = self.nodes[t as usize].right;
            let (a, b) = self.split(right, k - ls - 1);
            self.set_right(t, a);
            self.update(t);
            if b != NIL {
                self.nodes[b as usize].parent = NIL;
            }
            (t, b)
        }
    }

    /// `a` then `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.set_right(a, m);
            self.update(a);
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.set_left(b, m);
            self.update(b);
            b
        }
    }

    fn new_node(&mut self, tool: bool) -> u32 {
        // xorshift64*: priorities only need to be independent of the input.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let prio = (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32;
        let k = u32::try_from(self.nodes.len()).expect("fewer than 2^32 messages");
        self.nodes.push(Node { left: NIL, right: NIL, parent: NIL, prio, size: 1, others: u32::from(!tool), tool });
        k
    }

    fn push(&mut self, tool: bool) {
        if let Some(flat) = &mut self.flat {
            flat.push(tool);
            return;
        }
        let n = self.new_node(tool);
        self.root = self.merge(self.root, n);
        self.nodes[self.root as usize].parent = NIL;
    }

    fn insert(&mut self, position: usize, tool: bool) {
        if position >= self.len() {
            return self.push(tool);
        }
        self.unflatten();
        let n = self.new_node(tool);
        let (a, b) = self.split(self.root, position as u32);
        let a = self.merge(a, n);
        self.root = self.merge(a, b);
        self.nodes[self.root as usize].parent = NIL;
    }

    /// The position of key `k`.
    fn rank(&self, k: Key) -> usize {
        if self.flat.is_some() {
            return k;
        }
        let mut t = k as u32;
        let mut r = self.size(self.nodes[k].left);
        loop {
            let p = self.nodes[t as usize].parent;
            if p == NIL {
                return r as usize;
            }
            if self.nodes[p as usize].right == t {
                r += self.size(self.nodes[p as usize].left) + 1;
            }
            t = p;
        }
    }

    /// The key at `position` (< the number of keys).
    fn select(&self, position: usize) -> Key {
        if self.flat.is_some() {
            return position;
        }
        let mut t = self.root;
        let mut i = position as u32;
        loop {
            let n = &self.nodes[t as usize];
            let ls = self.size(n.left);
            if i < ls {
                t = n.left;
            } else if i == ls {
                return t as usize;
            } else {
                i -= ls + 1;
                t = n.right;
            }
        }
    }

    /// The smallest position after `position` holding a non-tool message, or the number
    /// of keys.
    fn next_non_tool(&mut self, position: usize) -> usize {
        if let Some(tool) = &self.flat {
            let after = tool.get(position + 1..).unwrap_or_default();
            match after.iter().take(FLAT_WALK).position(|&t| !t) {
                Some(i) => return position + 1 + i,
                None if after.len() <= FLAT_WALK => return tool.len(),
                None => self.unflatten(),
            }
        }
        // Non-tool messages at positions 0..=position, then the next one's position.
        let mut before = 0;
        let (mut t, mut i) = (self.root, position as u32 + 1);
        while t != NIL && i > 0 {
            let n = &self.nodes[t as usize];
            let ls = self.size(n.left);
            if i <= ls {
                t = n.left;
            } else {
                before += self.others(n.left) + u32::from(!n.tool);
                i -= ls + 1;
                t = n.right;
            }
        }
        if before >= self.others(self.root) {
            return self.nodes.len();
        }
        // The (before + 1)-th non-tool message.
        let (mut t, mut j, mut pos) = (self.root, before, 0);
        loop {
            let n = &self.nodes[t as usize];
            let lo = self.others(n.left);
            if j < lo {
                t = n.left;
            } else if j == lo && !n.tool {
                return (pos + self.size(n.left)) as usize;
            } else {
                j -= lo + u32::from(!n.tool);
                pos += self.size(n.left) + 1;
                t = n.right;
            }
        }
    }

    /// Whether key `k` is a tool message (its counts updated up to the root).
    fn set_tool(&mut self, k: Key, tool: bool) {
        if let Some(flat) = &mut self.flat {
            flat[k] = tool;
            return;
        }
        if self.nodes[k].tool == tool {
            return;
        }
        self.nodes[k].tool = tool;
        let mut t = k as u32;
        while t != NIL {
            self.update(t);
            t = self.nodes[t as usize].parent;
        }
    }

    /// The keys in order.
    fn keys(&self) -> impl ExactSizeIterator<Item = Key> + '_ {
        if let Some(tool) = &self.flat {
            return (0..tool.len()).collect::<Vec<_>>().into_iter();
        }
        let mut stack = Vec::new();
        let mut t = self.root;
        let mut out = Vec::with_capacity(self.nodes.len());
        loop {
            while t != NIL {
                stack.push(t);
                t = self.nodes[t as usize].left;
            }
            let Some(n) = stack.pop() else { break };
            out.push(n as usize);
            t = self.nodes[n as usize].right;
        }
        out.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// The order against a plain vector: inserts anywhere (the treap), at the end only (the
    /// flat order), or at the end among long runs of tool messages (flat, then the treap
    /// built by a search past a run); roles changed; every query.
    #[test]
    fn the_order_agrees_with_a_vector() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let mut built_by_search = 0;
        for round in 0..240 {
            let (anywhere, tools) = match round % 3 {
                0 => (true, 2),
                1 => (false, 2),
                _ => (false, 40),
            };
            let start = rng.below(20);
            let mut model: Vec<(Key, bool)> = (0..start).map(|k| (k, rng.below(3) == 0)).collect();
            let mut o = Order::identity(model.iter().map(|&(_, t)| t).collect());
            for _ in 0..(50 + round) {
                let tool = |rng: &mut Rng| rng.below(tools) != 0;
                match rng.below(4) {
                    0 => {
                        let t = tool(&mut rng);
                        o.push(t);
                        model.push((model.len(), t));
                    }
                    1 | 2 => {
                        let at = if anywhere { rng.below(model.len() + 1) } else { model.len() };
                        let t = tool(&mut rng);
                        o.insert(at, t);
                        model.insert(at, (o.len() - 1, t));
                    }
                    _ if !model.is_empty() => {
                        let k = rng.below(model.len());
                        let t = tool(&mut rng);
                        o.set_tool(k, t);
                        model.iter_mut().find(|(key, _)| *key == k).unwrap().1 = t;
                    }
                    _ => {}
                }
                assert_eq!(o.keys().collect::<Vec<_>>(), model.iter().map(|&(k, _)| k).collect::<Vec<_>>());
                assert_eq!(o.len(), model.len());
                let flat = o.flat.is_some();
                // (the next non-tool message after each position, from the back)
                let mut next = vec![model.len(); model.len()];
                for pos in (1..model.len()).rev() {
                    next[pos - 1] = if model[pos].1 { next[pos] } else { pos };
                }
                for (pos, &(k, _)) in model.iter().enumerate() {
                    assert_eq!(o.rank(k), pos);
                    assert_eq!(o.select(pos), k);
                    assert_eq!(o.next_non_tool(pos), next[pos], "{model:?} after {pos}");
                }
                built_by_search += usize::from(flat && o.flat.is_none());
            }
            // (appended only, short tool runs: the order stays the list itself)
            if round % 3 == 1 {
                assert!(o.flat.is_some(), "round {round}");
            }
        }
        assert!(built_by_search > 10, "{built_by_search}");
    }

    #[test]
    fn ids_as_strict_equality_sees_them() {
        use serde_json::json;
        let list = vec![
            json!({"id": 1, "role": "user"}),
            json!({"id": "1", "role": "user"}),
            json!({"role": "user"}),
            json!({"id": null, "role": "user"}),
            json!({"id": [1], "role": "user"}),
            json!("not a message"),
            json!({"id": 1.0, "role": "user"}),
            json!({"id": -0.0, "role": "user"}),
        ];
        let m = Messages::new(list);
        let f = |v: Option<Value>| m.find(v.as_ref());
        assert_eq!(f(Some(json!(1.0))), Some(0));
        assert_eq!(f(Some(json!("1"))), Some(1));
        assert_eq!(f(None), Some(2));
        assert_eq!(f(Some(json!(null))), Some(3));
        assert_eq!(f(Some(json!([1]))), None);
        assert_eq!(f(Some(json!(0))), Some(7));
        assert_eq!(f(Some(json!(false))), None);
    }

    #[test]
    fn a_message_inserted_before_the_first_of_its_id_is_found() {
        use serde_json::json;
        let mut m = Messages::new(vec![json!({"id": "a", "role": "assistant"}), json!({"id": "x", "role": "user"})]);
        assert_eq!(m.find_str("x"), Some(1));
        let k = m.insert(1, json!({"id": "x", "role": "tool"}).into());
        assert_eq!(m.find_str("x"), Some(k));
        assert_eq!(m.position(k), 1);
        assert_eq!(m.after_tool_run(0), 2);
        let pushed = m.push(json!({"id": "x", "role": "tool"}).into());
        assert_eq!(m.find_str("x"), Some(k));
        assert_eq!(m.position(pushed), 3);
        let all: Vec<_> = m.iter().map(|v| v.role().unwrap().to_string()).collect();
        assert_eq!(all, ["assistant", "tool", "user", "tool"]);
        assert_eq!(m.take().len(), 4);
    }
}
