//! The few JavaScript value semantics the reference's behaviour depends on: strict
//! equality of ids, truthiness, string conversion in template literals, object spread.

use serde_json::{Map, Value};
use std::collections::HashMap;

/// `a === b` for two possibly-absent values (`None` is `undefined`). Objects and arrays
/// are compared by identity in JavaScript, so two of them are never equal here.
pub fn strict_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(Value::Null), Some(Value::Null)) => true,
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x == y,
        (Some(Value::String(x)), Some(Value::String(y))) => x == y,
        (Some(Value::Number(x)), Some(Value::Number(y))) => crate::patch::number_eq(x, y, crate::patch::Dialect::FastJsonPatch),
        _ => false,
    }
}

/// `a == null` (absent or null).
pub fn is_nullish(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// `v ?? undefined`: a null becomes absent.
pub fn defined(v: Option<&Value>) -> Option<&Value> {
    match v {
        Some(Value::Null) | None => None,
        some => some,
    }
}

/// JavaScript truthiness.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => {
            // (`1e400` is `Infinity` there: truthy)
            let f = crate::patch::num_of(n).js();
            f != 0.0 && !f.is_nan()
        }
        Some(_) => true,
    }
}

/// `String(v)` as a template literal writes it (`${v}`).
pub fn push_display(out: &mut String, v: Option<&Value>) {
    match v {
        None => out.push_str("undefined"),
        Some(Value::String(s)) => append(out, s),
        Some(v) => display_inner(out, v, true),
    }
}

fn display_inner(out: &mut String, v: &Value, top: bool) {
    match v {
        Value::Null => {
            if top {
                out.push_str("null")
            }
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => push_number(out, n),
        Value::String(s) => append(out, s),
        // Array.prototype.toString joins with "," and writes null/undefined as "".
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                display_inner(out, item, false);
            }
        }
        Value::Object(_) => out.push_str("[object Object]"),
    }
}

/// `Number.prototype.toString`: shortest round-trip digits, exponent form outside
/// [1e-6, 1e21), `-0` written as `0`.
fn push_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        itoap::write_to_string(out, i);
        return;
    }
    let Some(f) = n.as_f64() else {
        out.push_str(&n.to_string());
        return;
    };
    let a = f.abs();
    if f == 0.0 {
        out.push('0');
    } else if !(1e-6..1e21).contains(&a) {
        let e = format!("{f:e}");
        match e.split_once('e') {
            Some((m, x)) if !x.starts_with('-') => out.push_str(&format!("{m}e+{x}")),
            _ => out.push_str(&e),
        }
    } else {
        out.push_str(&format!("{f}"));
    }
}

/// `[...].join("")` of the items' `delta`s: null/undefined are written as "".
pub fn push_joined(out: &mut String, v: Option<&Value>) {
    match v {
        None | Some(Value::Null) => {}
        Some(v) => display_inner(out, v, false),
    }
}

/// `{...target, ...v}`: spread `v`'s own enumerable members into `target` (strings and
/// arrays spread their indices; other scalars spread nothing).
pub fn spread_into(target: &mut Map<String, Value>, v: &Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                target.insert(k.clone(), x.clone());
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                target.insert(i.to_string(), x.clone());
            }
        }
        Value::String(s) => {
            for (i, c) in s.chars().enumerate() {
                target.insert(i.to_string(), Value::String(c.to_string()));
            }
        }
        _ => {}
    }
}

/// `mergeMetadata(existing, incoming)` of `@ag-ui/core`: `incoming === undefined` keeps
/// `existing`; otherwise `{...existing, ...incoming}`.
pub fn merge_metadata(existing: Option<&Value>, incoming: Option<&Value>) -> Option<Value> {
    let incoming = match incoming {
        None => return existing.cloned(),
        Some(v) => v,
    };
    let mut out = Map::new();
    if let Some(e) = existing {
        spread_into(&mut out, e);
    }
    spread_into(&mut out, incoming);
    Some(Value::Object(out))
}

/// A hashable key for an id as JavaScript `Map`/`Set` would see it: strings by value,
/// `undefined` and other scalars as distinct keys.
pub fn key(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        None => "\u{0}undefined".to_string(),
        Some(other) => format!("\u{0}{other}"),
    }
}

/// An id as `===` tells ids apart: strings by value, numbers as doubles (`-0` is `0`),
/// `null`, booleans, and `undefined` (an absent id). Objects and arrays equal nothing
/// but themselves, so they have no key (never found).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scalar {
    Undefined,
    Null,
    Bool(bool),
    Num(u64),
}

pub(crate) enum IdRef<'a> {
    Str(&'a str),
    Scalar(Scalar),
}

pub(crate) fn id_ref(v: Option<&Value>) -> Option<IdRef<'_>> {
    Some(match v {
        None => IdRef::Scalar(Scalar::Undefined),
        Some(Value::Null) => IdRef::Scalar(Scalar::Null),
        Some(Value::Bool(b)) => IdRef::Scalar(Scalar::Bool(*b)),
        Some(Value::String(s)) => IdRef::Str(s),
        // (`as_f64` is `None` for a number no double holds: it equals nothing)
        Some(Value::Number(n)) => IdRef::Scalar(Scalar::Num(n.as_f64().map(|f| if f == 0.0 { 0.0f64 } else { f }.to_bits())?)),
        Some(Value::Array(_) | Value::Object(_)) => return None,
    })
}

/// The hasher of the id maps: foldhash, seeded at random per process as std's is, a
/// fraction of SipHash's cost for the short ids of a stream (a lookup or two an event).
type IdHasher = foldhash::fast::RandomState;

/// A map keyed by ids as `===` tells them apart (strings looked up as `&str`).
#[derive(Debug)]
pub(crate) struct Ids<V> {
    pub(crate) strs: HashMap<String, V, IdHasher>,
    scalars: HashMap<Scalar, V, IdHasher>,
}

impl<V> Default for Ids<V> {
    fn default() -> Self {
        Ids { strs: HashMap::default(), scalars: HashMap::default() }
    }
}

impl<V> Ids<V> {
    pub(crate) fn get(&self, id: &IdRef<'_>) -> Option<&V> {
        match id {
            IdRef::Str(s) => self.strs.get(*s),
            IdRef::Scalar(k) => self.scalars.get(k),
        }
    }
    pub(crate) fn get_mut(&mut self, id: &IdRef<'_>) -> Option<&mut V> {
        match id {
            IdRef::Str(s) => self.strs.get_mut(*s),
            IdRef::Scalar(k) => self.scalars.get_mut(k),
        }
    }
    pub(crate) fn entry(&mut self, id: &IdRef<'_>) -> &mut V
    where
        V: Default,
    {
        match id {
            // (one lookup: most ids given here are new)
            IdRef::Str(s) => self.strs.entry((*s).to_owned()).or_default(),
            IdRef::Scalar(k) => self.scalars.entry(*k).or_default(),
        }
    }
}

impl<V> Ids<V> {
    pub(crate) fn remove(&mut self, id: &IdRef<'_>) -> Option<V> {
        match id {
            IdRef::Str(s) => self.strs.remove(*s),
            IdRef::Scalar(k) => self.scalars.remove(k),
        }
    }
    pub(crate) fn clear(&mut self) {
        self.strs.clear();
        self.scalars.clear();
    }
}

/// An id for error messages (`'${id}'`).
pub fn show(v: Option<&Value>) -> String {
    let mut s = String::new();
    push_display(&mut s, v);
    s
}

// ---------------------------------------------------------------------------------------
// Lone UTF-16 surrogates
// ---------------------------------------------------------------------------------------
//
// JavaScript strings are UTF-16: a producer that splits an emoji across two deltas sends
// `"\ud83d"` then `"\ude00"`, and the reference's concatenation rejoins them. A Rust
// `String` cannot hold a lone surrogate, so while parsing events each one is kept as a
// code point of the last private-use plane, U+10F800 + (surrogate - 0xD800), and
// [`append`] joins a kept high half with a kept low half into the real character. The
// characters of that range themselves (U+10F800..U+10FFFF, rare: the end of a private-use
// plane) are kept as their two surrogates, each in its kept form, so that no two strings
// of the input read alike (a kept high half then a kept low half is that character, as
// in UTF-16).

const KEPT_BASE: u32 = 0x10F800;

/// Whether `cp` is in the range of the kept forms (kept itself as two of them).
fn in_kept_range(cp: u32) -> bool {
    cp >= KEPT_BASE
}

/// The real character a kept high half and a kept low half make together.
fn pair(hi: u16, lo: u16) -> Option<char> {
    if !(0xD800..0xDC00).contains(&hi) || !(0xDC00..0xE000).contains(&lo) {
        return None;
    }
    char::from_u32(0x10000 + ((u32::from(hi) - 0xD800) << 10) + (u32::from(lo) - 0xDC00))
}

/// Whether this text may hold a character of the kept range, as written (`F4 8F A0..BF`)
/// or escaped (a pair starting `\uDBFE` / `\uDBFF`). Conservative: `true` also for such
/// an escape after an escaped backslash.
pub(crate) fn may_hold_kept_range(text: &[u8]) -> bool {
    may_hold_kept_range_within(text, usize::MAX)
}

/// Texts from this length on are searched for each lead (`0xF4`, `\u`) on its own.
const LONG_TEXT: usize = 256;

/// [`may_hold_kept_range`], `true` too past `max` `\u` escapes (a text of many of them
/// is searched faster event by event). A long text (a whole log) is searched for the
/// byte 0xF4, then for `\u` (SIMD, a fraction of an instruction a byte each): a search
/// for both lead bytes stopped at every backslash, which text and tool-call arguments
/// hold many of (quotes, line breaks), and gave up on such logs. A short text (an
/// event's) by one search for both lead bytes: the substring search costs more there.
pub(crate) fn may_hold_kept_range_within(text: &[u8], max: usize) -> bool {
    let written = |i: usize| text.get(i + 1) == Some(&0x8F) && text.get(i + 2).is_some_and(|b| (0xA0..=0xBF).contains(b));
    let escaped = |i: usize| text.get(i + 1) == Some(&b'u') && text.get(i + 2..).and_then(crate::json::hex4).is_some_and(|u| (0xDBFE..=0xDBFF).contains(&u));
    if text.len() < LONG_TEXT {
        return memchr::memchr2_iter(0xF4, b'\\', text).any(|i| if text[i] == 0xF4 { written(i) } else { escaped(i) });
    }
    if memchr::memchr_iter(0xF4, text).any(written) {
        return true;
    }
    static ESCAPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> = std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    let mut seen = 0usize;
    ESCAPE.find_iter(text).any(|i| {
        seen += 1;
        seen > max || escaped(i)
    })
}

/// Whether a decoded string holds a character of the kept range (which its reader must
/// leave to [`parse_json_limited`], the one reader of that range).
pub(crate) fn holds_kept_range(s: &str) -> bool {
    let b = s.as_bytes();
    let kept = |i: usize| b.get(i + 1) == Some(&0x8F) && b.get(i + 2).is_some_and(|c| (0xA0..=0xBF).contains(c));
    // A short string (most deltas of a token stream) by its largest byte, a loop the
    // compiler vectorises: memchr's set-up costs more there.
    if b.len() <= 32 && b.iter().copied().max().unwrap_or(0) < 0xF4 {
        return false;
    }
    memchr::memchr_iter(0xF4, b).any(kept)
}

/// The kept form of a lone surrogate, if `c` is one.
pub fn kept_surrogate(c: char) -> Option<u16> {
    let c = c as u32;
    (KEPT_BASE..KEPT_BASE + 0x800).contains(&c).then(|| (c - KEPT_BASE + 0xD800) as u16)
}

/// `s += add` with a kept high surrogate at the end of `s` joined to a kept low one at
/// the start of `add`.
pub fn append(s: &mut String, add: &str) {
    // (a kept low surrogate is a character of four bytes from 0xF4 on: most deltas start
    // otherwise and are appended as they are)
    if add.as_bytes().first() != Some(&0xF4) {
        s.push_str(add);
        return;
    }
    if let (Some(last), Some(first)) = (s.chars().next_back(), add.chars().next()) {
        if let Some(c) = kept_surrogate(last).zip(kept_surrogate(first)).and_then(|(hi, lo)| pair(hi, lo)) {
            // (a character of the kept range stays as its two kept halves)
            if !in_kept_range(c.into()) {
                s.pop();
                s.push(c);
                s.push_str(&add[first.len_utf8()..]);
                return;
            }
        }
    }
    s.push_str(add);
}

/// Parse JSON text, keeping lone surrogate escapes (see above), nesting at most
/// `limits::DEFAULT_MAX_DEPTH` levels.
pub fn parse_json(text: &[u8]) -> Result<Value, String> {
    parse_json_limited(text, crate::limits::DEFAULT_MAX_DEPTH)
}

/// [`parse_json`] nesting at most `max_depth` levels. Only text that serde rejects is
/// rewritten, so the common path is one serde call.
pub fn parse_json_limited(text: &[u8], max_depth: usize) -> Result<Value, String> {
    use crate::limits::{parse_value, ParseError};
    match parse_value(text, max_depth) {
        Ok(v) if !may_hold_kept_range(text) => Ok(v),
        Ok(v) => match keep_surrogates(text) {
            Some(fixed) => parse_value(&fixed, max_depth).map_err(|e| e.to_string()),
            None => Ok(v),
        },
        Err(ParseError::Json(e)) if memchr::memmem::find(text, b"\\u").is_some() => match keep_surrogates(text) {
            Some(fixed) => parse_value(&fixed, max_depth).map_err(|e| e.to_string()),
            None => Err(e.to_string()),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// Integers of at most [`crate::patch::MAX_INT_DIGITS`] digits: CPython's default limit of
/// its conversions of `int` from and to decimal text, so that every value a stream holds
/// can be handed to Python (and written back). The error names the limit.
pub fn check_int_digits(v: &Value) -> Result<(), String> {
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        match v {
            Value::Number(n) => {
                let s = n.as_str();
                if s.len() > crate::patch::MAX_INT_DIGITS && !s.contains(['.', 'e', 'E']) {
                    crate::patch::int_rule(s).map_err(|e| e.reason)?;
                }
            }
            Value::Array(a) => todo.extend(a),
            Value::Object(m) => todo.extend(m.values()),
            _ => {}
        }
    }
    Ok(())
}

/// The text with its lone surrogate escapes and its characters of the kept range (as
/// written or escaped) rewritten as the escaped pairs serde reads into their kept forms.
fn keep_surrogates(text: &[u8]) -> Option<Vec<u8>> {
    crate::json::rewrite_surrogates(text, in_kept_range, |u, out| {
        // The kept code point, as the escaped pair serde reads it into.
        let v = KEPT_BASE - 0x10000 + u32::from(u - 0xD800);
        let (hi, lo) = (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
        out.extend_from_slice(format!("\\u{hi:04x}\\u{lo:04x}").as_bytes());
    })
}

/// Does this UTF-8 text hold a kept surrogate? (U+10F800..U+10FFFF: `F4 8F A0..BF xx`.)
pub fn has_kept_surrogate(utf8: &[u8]) -> bool {
    // Short ASCII text (most keys and values of a result) by a word-wise check: setting up
    // the vectorised search costs more there.
    if utf8.len() < 64 && utf8.is_ascii() {
        return false;
    }
    // (A vectorised search for the lead byte, rare in text: a result's strings are checked
    // whole as they are handed over.)
    memchr::memchr_iter(0xF4, utf8).any(|i| utf8.get(i + 1) == Some(&0x8F))
}

/// JSON text of a value, with kept lone surrogates written back as the `\udXXX` escapes
/// they were read from.
pub fn json_text(v: &Value) -> Vec<u8> {
    surrogates_escaped(serde_json::to_vec(v).expect("a JSON value always serializes"))
}

/// JSON text of an array of values (as [`json_text`] writes each), in one serde pass.
pub fn json_list(items: &[Value]) -> Vec<u8> {
    surrogates_escaped(serde_json::to_vec(items).expect("JSON values always serialize"))
}

/// [`json_list`] of values given one by one (a reducer's messages, in order).
pub fn json_items<'a, T: serde::Serialize + 'a>(items: impl Iterator<Item = &'a T>) -> Vec<u8> {
    struct Seq<I>(std::cell::Cell<Option<I>>);
    impl<'a, T: serde::Serialize + 'a, I: Iterator<Item = &'a T>> serde::Serialize for Seq<I> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.take().into_iter().flatten())
        }
    }
    surrogates_escaped(serde_json::to_vec(&Seq(std::cell::Cell::new(Some(items)))).expect("JSON values always serialize"))
}

/// serde_json's text with its kept surrogates written back as escapes (a copy only when
/// there is one).
fn surrogates_escaped(text: Vec<u8>) -> Vec<u8> {
    if !has_kept_surrogate(&text) {
        return text;
    }
    let s = String::from_utf8(text).expect("serde_json writes UTF-8");
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match kept_surrogate(c) {
            Some(u) => out.push_str(&format!("\\u{u:04x}")),
            None => out.push(c),
        }
    }
    out.into_bytes()
}

/// `s` as generalized UTF-8 (WTF-8) with its kept surrogates restored as lone surrogates
/// (three bytes each, as Python's `surrogatepass` codec reads them), a kept high half
/// followed by a kept low half as the one character they make.
pub fn wtf8_with_surrogates(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let Some(u) = kept_surrogate(c) else {
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        };
        if let Some(joined) = chars.peek().copied().and_then(kept_surrogate).and_then(|lo| pair(u, lo)) {
            chars.next();
            out.extend_from_slice(joined.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        }
        out.extend_from_slice(&[0xE0 | (u >> 12) as u8, 0x80 | ((u >> 6) & 0x3F) as u8, 0x80 | (u & 0x3F) as u8]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn display(v: Value) -> String {
        let mut s = String::new();
        push_display(&mut s, Some(&v));
        s
    }

    #[test]
    fn template_literal_strings() {
        assert_eq!(display(json!("a")), "a");
        assert_eq!(display(json!(null)), "null");
        assert_eq!(display(json!(true)), "true");
        assert_eq!(display(json!(42)), "42");
        assert_eq!(display(json!(1.5)), "1.5");
        assert_eq!(display(serde_json::from_str("1.0").unwrap()), "1");
        assert_eq!(display(json!(1e21)), "1e+21");
        assert_eq!(display(json!(1e-7)), "1e-7");
        assert_eq!(display(json!(-0.0)), "0");
        assert_eq!(display(serde_json::from_str("12345678901234567890").unwrap()), "12345678901234567000");
        assert_eq!(display(json!([1, null, "a", [2, 3]])), "1,,a,2,3");
        assert_eq!(display(json!({"a": 1})), "[object Object]");
        let mut s = String::new();
        push_display(&mut s, None);
        assert_eq!(s, "undefined");
    }

    #[test]
    fn object_spread_and_metadata_merge() {
        let m = merge_metadata(Some(&json!({"a": 1, "b": 2})), Some(&json!({"b": 3, "c": 4}))).unwrap();
        assert_eq!(m, json!({"a": 1, "b": 3, "c": 4}));
        assert_eq!(merge_metadata(Some(&json!({"a": 1})), None), Some(json!({"a": 1})));
        assert_eq!(merge_metadata(None, Some(&json!(null))), Some(json!({})));
        assert_eq!(merge_metadata(None, Some(&json!("ab"))), Some(json!({"0": "a", "1": "b"})));
    }

    #[test]
    fn ids_compare_like_javascript() {
        assert!(strict_eq(Some(&json!("a")), Some(&json!("a"))));
        assert!(!strict_eq(Some(&json!(1)), Some(&json!("1"))));
        assert!(strict_eq(Some(&json!(1)), Some(&serde_json::from_str("1.0").unwrap())));
        assert!(!strict_eq(Some(&json!({})), Some(&json!({}))));
        assert!(strict_eq(None, None) && !strict_eq(None, Some(&json!(null))));
        assert_ne!(key(Some(&json!(1))), key(Some(&json!("1"))));
        assert_ne!(key(None), key(Some(&json!(null))));
    }

    #[test]
    fn surrogate_halves_round_trip() {
        let v = parse_json(br#"["\ud83d", "\ude00", "\ud83d\ude00", "x\udc00"]"#).unwrap();
        let parts: Vec<&str> = v.as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        let mut s = parts[0].to_string();
        append(&mut s, parts[1]);
        assert_eq!(s, "\u{1F600}");
        assert_eq!(parts[2], "\u{1F600}");
        assert_eq!(parts[3].chars().last().and_then(kept_surrogate), Some(0xDC00));
        // A kept low half before a kept high half is not a pair.
        let mut s = parts[1].to_string();
        append(&mut s, parts[0]);
        assert_eq!(s.chars().count(), 2);
    }

    /// The characters of the kept range are kept apart from the lone surrogates that
    /// share their kept forms, written or escaped, as values and as keys.
    #[test]
    fn the_kept_range_reads_apart_from_lone_surrogates() {
        let text = "[\"\\ud800\", \"\u{10F800}\", \"\\udbfe\\udc00\", {\"\\ud800\": 1, \"\u{10F800}\": 2}, \"a\u{10FFFF}b\"]";
        let v = parse_json(text.as_bytes()).unwrap();
        assert_ne!(v[0], v[1]);
        assert_eq!(v[1], v[2], "the same JSON string, escaped or not");
        assert_eq!(v[3].as_object().unwrap().len(), 2);
        assert_eq!(json_text(&v), br#"["\ud800","\udbfe\udc00","\udbfe\udc00",{"\ud800":1,"\udbfe\udc00":2},"a\udbff\udfffb"]"#);
        let Value::String(s) = &v[4] else { panic!() };
        assert_eq!(wtf8_with_surrogates(s), "a\u{10FFFF}b".as_bytes());
        let Value::String(s) = &v[0] else { panic!() };
        assert_eq!(wtf8_with_surrogates(s), b"\xed\xa0\x80");
        // appending the halves of one keeps the two halves
        let (Value::String(a), Value::String(b)) = (parse_json(br#""\udbfe""#).unwrap(), parse_json(br#""\udc00""#).unwrap()) else { panic!() };
        let mut joined = a.clone();
        append(&mut joined, &b);
        assert_eq!(Value::String(joined), v[1]);
        // no character of the range: one parse
        assert!(!may_hold_kept_range("[\"\\ud83d\\ude00\", \"\u{10F000}\"]".as_bytes()));
        // written or escaped (any case), after an escaped backslash too; near misses; the ends
        let cases: &[(&[u8], bool)] = &[
            (b"\xf4\x8f\xa0\x80", true),
            (b"ab\xf4\x8f\xbf\xbf", true),
            (b"\xf4\x8f\x9f\xbf", false),
            (b"\xf4\x8f", false),
            (b"\xf4", false),
            (br"\udbfe\udc00", true),
            (br"x\uDBFF\uDFFF", true),
            (br"\\udbff", true),
            (br"\udbfd\udc00", false),
            (br"\u", false),
            (br"\udbf", false),
            (br"\", false),
            (br"\\", false),
            (b"", false),
        ];
        for &(text, want) in cases {
            assert_eq!(may_hold_kept_range(text), want, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn numbers_are_truthy_as_javascript_reads_them() {
        let n = |s: &str| -> Value { serde_json::from_str(s).unwrap() };
        for t in ["1e400", "-1e400", &format!("1{}", "0".repeat(400)), "5e-324", "-1"] {
            assert!(truthy(Some(&n(t))), "{t}");
        }
        for f in ["0", "-0", "0.0", "-0.0", "1e-400"] {
            assert!(!truthy(Some(&n(f))), "{f}");
        }
    }

    /// The check of a text (a whole log, an event) is the byte-level definition it stands
    /// for, short and long texts alike, cut anywhere (a chunk of a log ends anywhere):
    /// decisive without a limit, never `false` where a character of the range is, and no
    /// string it passes decodes to one.
    #[test]
    fn may_hold_kept_range_is_its_definition() {
        fn definition(t: &[u8]) -> bool {
            (0..t.len()).any(|i| {
                (t[i..].starts_with(&[0xF4, 0x8F]) && t.get(i + 2).is_some_and(|b| (0xA0..=0xBF).contains(b)))
                    || (t[i..].starts_with(b"\\u") && t.get(i + 2..).and_then(crate::json::hex4).is_some_and(|u| (0xDBFE..=0xDBFF).contains(&u)))
            })
        }
        let plain: &[&[u8]] = &[
            b"a", b"the agent ", b"\\\"", b"\\\\", b"\\n", b"\\t", b"\\/", b"\\u00e9", b"\\u00E9", b"\\ud83d\\ude00", b"\\uD83D\\uDE00",
            b"\\\\slash", b"\\uDBFD\\uDFFF", b"\\udbf", b"\\u", b"\\", b"\xf4\x8f\x9f\xbf", b"\xf4\x80\x80\x80", b"\xf3\x8f\xa0\x80",
            b"\x8f\xa0", "é日😀\u{10F7FF}".as_bytes(), b"\"", b"{\"delta\":\"", b"udbff", b"DBFF",
        ];
        let kept: &[&[u8]] = &[b"\\uDBFF\\uDFFF", b"\\udbfe\\udc00", b"\\uDbFe\\uDc00", b"\\\\uDBFF", b"\\uDBFE", b"\xf4\x8f\xa0\x80", "\u{10FFFF}".as_bytes(), b"\xf4\x8f\xbf"];
        let mut rng = crate::test_rng::Rng(0x6b65_7074);
        let (mut long_clear, mut long_kept) = (0, 0);
        for _ in 0..6000 {
            let len = [rng.below(40), LONG_TEXT - 20 + rng.below(40), 300 + rng.below(3000)][rng.below(3)];
            let rate = [0, 30, 300, 3000][rng.below(4)];
            let mut t = Vec::new();
            while t.len() < len {
                let piece = if rate > 0 && rng.below(rate) == 0 { rng.pick(kept) } else { rng.pick(plain) };
                t.extend_from_slice(piece);
            }
            // (a kept escape or character cut at the end: a chunk's end)
            let cut = if rng.below(2) == 0 { t.len() } else { t.len() - rng.below(8.min(t.len() + 1)) };
            let t = &t[rng.below(3).min(cut)..cut];
            let want = definition(t);
            assert_eq!(may_hold_kept_range(t), want, "{:?}", String::from_utf8_lossy(t));
            if t.len() >= LONG_TEXT {
                *if want { &mut long_kept } else { &mut long_clear } += 1;
            }
            // With a limit: `true` past it, otherwise the same.
            let max = rng.below(4);
            let escapes = memchr::memmem::find_iter(t, b"\\u").count();
            let within = may_hold_kept_range_within(t, max);
            assert!(within == want || (within && t.len() >= LONG_TEXT && escapes > max), "{max} {:?}", String::from_utf8_lossy(t));
            // What it passes decodes to no character of the range.
            let mut s = String::new();
            if let Some(()) = std::str::from_utf8(t).ok().and_then(|t| crate::stream::event::unescape_into(t, &mut s)) {
                assert!(want || !holds_kept_range(&s), "{:?}", String::from_utf8_lossy(t));
            }
        }
        assert!(long_clear > 500 && long_kept > 500, "{long_clear} {long_kept}");
    }

    #[test]
    fn a_kept_surrogate_is_found_anywhere() {
        for n in [0, 1, 15, 16, 17, 31, 32, 33, 64, 100] {
            let pad = "é".repeat(n);
            for (text, kept) in [
                (format!("{pad}\u{10F800}{pad}"), true),
                (format!("{pad}\u{10FFFF}"), true),
                (format!("\u{10EFFF}{pad}\u{100000}"), false),
                (format!("{pad}x"), false),
            ] {
                let b = text.as_bytes();
                assert_eq!(has_kept_surrogate(b), kept, "{n} {text:?}");
                assert_eq!(has_kept_surrogate(b), b.windows(2).any(|w| w == [0xF4, 0x8F]));
                // (short and long strings: the loop and memchr)
                assert_eq!(holds_kept_range(&text), kept, "{n} {text:?}");
                assert_eq!(holds_kept_range(text.trim_start_matches('é')), kept, "{n} {text:?}");
            }
        }
        assert!(!has_kept_surrogate(b"\xf4"));
    }

    #[test]
    fn kept_surrogates_leave_as_they_came() {
        let v = parse_json(br#"["a\ud83d", {"k": "\ude00b"}, 1]"#).unwrap();
        assert!(has_kept_surrogate(serde_json::to_string(&v).unwrap().as_bytes()));
        assert_eq!(json_text(&v), br#"["a\ud83d",{"k":"\ude00b"},1]"#);
        assert_eq!(json_list(&[v.clone(), serde_json::json!("x")]), br#"[["a\ud83d",{"k":"\ude00b"},1],"x"]"#);
        assert_eq!(json_list(&[]), b"[]");
        assert_eq!(json_text(&serde_json::json!({"a": "é😀"})), "{\"a\":\"é😀\"}".as_bytes());
        let Value::String(s) = &v[0] else { panic!() };
        assert_eq!(wtf8_with_surrogates(s), b"a\xed\xa0\xbd");
        assert_eq!(wtf8_with_surrogates("é😀"), "é😀".as_bytes());
    }
}
