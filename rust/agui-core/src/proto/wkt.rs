//! `google.protobuf.Value` / `Struct` as thin wrappers around `serde_json` values.
//!
//! Why not `prost-types`: its `Struct` is a `BTreeMap`, so entries would be written in
//! sorted order, while the reference writes them in JavaScript key order (byte-exact
//! frames need that), and decoding must keep wire order with "first position, last
//! value" for duplicated keys. Wrapping `serde_json` (built with `preserve_order`) also
//! saves a conversion step in both directions: JSON goes straight to the wire and back.
//!
//! Reference behaviour reproduced here (wire-schema §5.1.13, §5.3):
//! * every number is a double (`number_value`), integers included; `-0.0` keeps its sign;
//! * map entries in JS key order: canonical array-index keys ("0".."4294967294") first,
//!   ascending, then the rest in insertion order; `__proto__` is never written;
//! * an entry whose key is `""` is written without its key field (proto3 default);
//! * on decode a `Value` without a kind is "absent": a dropped Struct entry, a `null`
//!   list element, an absent field;
//! * integral doubles decode as JSON integers (like JS prints them), `-0.0` stays `-0.0`,
//!   NaN/±Infinity (no JSON form) decode as `null`.

use prost::bytes::{Buf, BufMut};
use prost::encoding::{
    decode_varint, encode_varint, encoded_len_varint, skip_field, DecodeContext, WireType,
};
use prost::DecodeError;
use super::node::{Node, Obj};
use serde_json::{Map, Number, Value as J};

/// `google.protobuf.Value`, held as its encoded message body. The encoder writes the JSON
/// straight to that body ([`Value::from_node`]: no deep copy of opaque payloads into the
/// message tree); the decoder appends the fields it reads (which is exactly protobuf's
/// merge of repeated occurrences) and renders JSON or MessagePack from it at output time.
/// Keeping it a plain `Vec` also keeps every generated message small (cheap moves).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Value(pub Vec<u8>);

/// `google.protobuf.Struct` (a JSON object), held as its encoded body like [`Value`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Struct(pub Vec<u8>);

impl Value {
    /// A Value for the JSON node `v`, encoded now (the encoder's path).
    pub fn from_node(v: &Node<'_>) -> Value {
        let mut sizes = Vec::new();
        let mut body = Vec::with_capacity(record_value(v, &mut sizes));
        write_value(v, &mut &sizes[..], &mut body);
        Value(body)
    }

    /// A Value for `v`, encoded now.
    pub fn from_json(v: &J) -> Value {
        let mut body = Vec::with_capacity(value_body_len(v));
        encode_value_body(v, &mut body);
        Value(body)
    }
}

impl Struct {
    /// A Struct for the JSON object `m`, encoded now (the encoder's path).
    pub fn from_obj(m: &Obj<'_>) -> Struct {
        let mut sizes = Vec::new();
        let mut body = Vec::with_capacity(record_struct(m, &mut sizes));
        write_struct(m, &mut &sizes[..], &mut body);
        Struct(body)
    }

    /// A Struct for the object `m`, encoded now.
    pub fn from_map(m: &Map<String, J>) -> Struct {
        let mut body = Vec::with_capacity(struct_body_len(m));
        encode_struct_body(m, &mut body);
        Struct(body)
    }
}

/// Deepest Value/Struct/ListValue nesting accepted on decode, counted once per array or
/// object as for every JSON value (`agui_core::limits`).
const MAX_DEPTH: usize = crate::limits::DEFAULT_MAX_DEPTH;

// ---------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------

#[inline]
fn ld(n: usize) -> usize {
    encoded_len_varint(n as u64) + n
}

pub use crate::sink::number_f64;

/// Is `k` a canonical JS array index ("0", or no leading zero, value <= 2^32 - 2)?
#[inline]
fn array_index(k: &str) -> Option<u32> {
    let b = k.as_bytes();
    if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b.len() > 1 && b[0] == b'0' {
        return None;
    }
    let v: u64 = k.parse().ok()?;
    if v <= 4_294_967_294 {
        Some(v as u32)
    } else {
        None
    }
}

/// Entries of an object in JavaScript enumeration order (without `__proto__`).
fn js_entries(m: &Map<String, J>) -> Vec<(&String, &J)> {
    let mut idx: Vec<(u32, &String, &J)> = Vec::new();
    let mut rest: Vec<(&String, &J)> = Vec::with_capacity(m.len());
    for (k, v) in m {
        if k == "__proto__" {
            continue;
        }
        match array_index(k) {
            Some(i) => idx.push((i, k, v)),
            None => rest.push((k, v)),
        }
    }
    if idx.is_empty() {
        return rest;
    }
    idx.sort_by_key(|e| e.0);
    let mut out: Vec<(&String, &J)> = idx.into_iter().map(|(_, k, v)| (k, v)).collect();
    out.extend(rest);
    out
}

/// Fast check: does the object need reordering or filtering?
#[inline]
fn plain_order(m: &Map<String, J>) -> bool {
    m.keys().all(|k| {
        let b = k.as_bytes();
        !(matches!(b.first(), Some(c) if c.is_ascii_digit()) || k == "__proto__")
    })
}

/// Length of a Value message body for `v`.
pub fn value_body_len(v: &J) -> usize {
    match v {
        J::Null | J::Bool(_) => 2,
        J::Number(_) => 9,
        J::String(s) => 1 + ld(s.len()),
        J::Array(a) => 1 + ld(list_body_len(a)),
        J::Object(m) => 1 + ld(struct_body_len(m)),
    }
}

fn list_body_len(a: &[J]) -> usize {
    a.iter().map(|e| 1 + ld(value_body_len(e))).sum()
}

#[inline]
fn entry_body_len(k: &str, v: &J) -> usize {
    let key = if k.is_empty() { 0 } else { 1 + ld(k.len()) };
    key + 1 + ld(value_body_len(v))
}

/// Length of a Struct message body for `m`.
pub fn struct_body_len(m: &Map<String, J>) -> usize {
    if plain_order(m) {
        m.iter().map(|(k, v)| 1 + ld(entry_body_len(k, v))).sum()
    } else {
        js_entries(m).into_iter().map(|(k, v)| 1 + ld(entry_body_len(k, v))).sum()
    }
}

#[inline]
fn put_str(tag_byte: u8, s: &str, buf: &mut impl BufMut) {
    buf.put_u8(tag_byte);
    encode_varint(s.len() as u64, buf);
    buf.put_slice(s.as_bytes());
}

/// Write a Value message body.
pub fn encode_value_body(v: &J, buf: &mut impl BufMut) {
    match v {
        J::Null => buf.put_slice(&[0x08, 0x00]),
        J::Bool(b) => buf.put_slice(&[0x20, *b as u8]),
        J::Number(n) => {
            buf.put_u8(0x11);
            buf.put_f64_le(number_f64(n));
        }
        J::String(s) => put_str(0x1A, s, buf),
        J::Array(a) => {
            buf.put_u8(0x32);
            encode_varint(list_body_len(a) as u64, buf);
            for e in a {
                buf.put_u8(0x0A);
                encode_varint(value_body_len(e) as u64, buf);
                encode_value_body(e, buf);
            }
        }
        J::Object(m) => {
            buf.put_u8(0x2A);
            encode_varint(struct_body_len(m) as u64, buf);
            encode_struct_body(m, buf);
        }
    }
}

fn encode_entry(k: &str, v: &J, buf: &mut impl BufMut) {
    buf.put_u8(0x0A);
    encode_varint(entry_body_len(k, v) as u64, buf);
    if !k.is_empty() {
        put_str(0x0A, k, buf);
    }
    buf.put_u8(0x12);
    encode_varint(value_body_len(v) as u64, buf);
    encode_value_body(v, buf);
}

/// Write a Struct message body.
pub fn encode_struct_body(m: &Map<String, J>, buf: &mut impl BufMut) {
    if plain_order(m) {
        for (k, v) in m {
            encode_entry(k, v, buf);
        }
    } else {
        for (k, v) in js_entries(m) {
            encode_entry(k, v, buf);
        }
    }
}

// ---------------------------------------------------------------------------------
// Encoding from the encoder's borrowed JSON tree (same rules as above)
// ---------------------------------------------------------------------------------

/// Entries of an object in JavaScript enumeration order (without `__proto__`).
fn js_node_entries<'o, 'a>(m: &'o Obj<'a>) -> Vec<(&'o str, &'o Node<'a>)> {
    let mut idx: Vec<(u32, &'o str, &'o Node<'a>)> = Vec::new();
    let mut rest: Vec<(&'o str, &'o Node<'a>)> = Vec::with_capacity(m.len());
    for (k, v) in m.iter() {
        if k == "__proto__" {
            continue;
        }
        match array_index(k) {
            Some(i) => idx.push((i, k.as_ref(), v)),
            None => rest.push((k.as_ref(), v)),
        }
    }
    if idx.is_empty() {
        return rest;
    }
    idx.sort_by_key(|e| e.0);
    let mut out: Vec<(&'o str, &'o Node<'a>)> = idx.into_iter().map(|(_, k, v)| (k, v)).collect();
    out.extend(rest);
    out
}

#[inline]
fn plain_node_order(m: &Obj<'_>) -> bool {
    m.keys().all(|k| {
        let b = k.as_bytes();
        !(matches!(b.first(), Some(c) if c.is_ascii_digit()) || k == "__proto__")
    })
}

// Every nested message is length-prefixed, so a naive encoder recomputes the sizes of a
// subtree at each level above it (quadratic in the depth). Instead one pass records the
// body size of every array and object in pre-order (`sizes`), and the writing pass, which
// visits them in the same order, reads them back.

/// Body size of a Value for a leaf (`None` for an array or object, whose size is recorded).
#[inline]
fn leaf_len(v: &Node<'_>) -> Option<usize> {
    match v {
        Node::Null | Node::Bool(_) => Some(2),
        Node::Number(_) => Some(9),
        Node::String(s) => Some(1 + ld(s.len())),
        Node::Array(_) | Node::Object(_) => None,
    }
}

/// Value body size of `v`, recording the sizes of its arrays and objects in `sizes`.
fn record_value(v: &Node<'_>, sizes: &mut Vec<usize>) -> usize {
    match v {
        Node::Array(a) => crate::limits::nest(|| {
            let slot = sizes.len();
            sizes.push(0);
            let n = a.iter().map(|e| 1 + ld(record_value(e, sizes))).sum();
            sizes[slot] = n;
            1 + ld(n)
        }),
        Node::Object(m) => crate::limits::nest(|| {
            let slot = sizes.len();
            sizes.push(0);
            let n = record_struct(m, sizes);
            sizes[slot] = n;
            1 + ld(n)
        }),
        leaf => leaf_len(leaf).unwrap_or(0),
    }
}

#[inline]
fn entry_len(k: &str, value_len: usize) -> usize {
    let key = if k.is_empty() { 0 } else { 1 + ld(k.len()) };
    key + 1 + ld(value_len)
}

/// Struct body size of `m` (its own size is not recorded: the caller knows it).
fn record_struct(m: &Obj<'_>, sizes: &mut Vec<usize>) -> usize {
    if plain_node_order(m) {
        m.iter().map(|(k, v)| 1 + ld(entry_len(k, record_value(v, sizes)))).sum()
    } else {
        js_node_entries(m).into_iter().map(|(k, v)| 1 + ld(entry_len(k, record_value(v, sizes)))).sum()
    }
}

/// Value body size of `v`, the next recorded size being at `sizes[0]` if it is a container.
#[inline]
fn recorded_len(v: &Node<'_>, sizes: &[usize]) -> usize {
    leaf_len(v).unwrap_or_else(|| 1 + ld(sizes[0]))
}

fn write_value(v: &Node<'_>, sizes: &mut &[usize], buf: &mut impl BufMut) {
    match v {
        Node::Null => buf.put_slice(&[0x08, 0x00]),
        Node::Bool(b) => buf.put_slice(&[0x20, *b as u8]),
        Node::Number(n) => {
            buf.put_u8(0x11);
            buf.put_f64_le(n.f64());
        }
        Node::String(s) => put_str(0x1A, s, buf),
        Node::Array(a) => crate::limits::nest(|| {
            buf.put_u8(0x32);
            encode_varint(sizes[0] as u64, buf);
            *sizes = &sizes[1..];
            for e in a {
                buf.put_u8(0x0A);
                encode_varint(recorded_len(e, sizes) as u64, buf);
                write_value(e, sizes, buf);
            }
        }),
        Node::Object(m) => crate::limits::nest(|| {
            buf.put_u8(0x2A);
            encode_varint(sizes[0] as u64, buf);
            *sizes = &sizes[1..];
            write_struct(m, sizes, buf);
        }),
    }
}

#[inline]
fn write_entry(k: &str, v: &Node<'_>, sizes: &mut &[usize], buf: &mut impl BufMut) {
    let vlen = recorded_len(v, sizes);
    buf.put_u8(0x0A);
    encode_varint(entry_len(k, vlen) as u64, buf);
    if !k.is_empty() {
        put_str(0x0A, k, buf);
    }
    buf.put_u8(0x12);
    encode_varint(vlen as u64, buf);
    write_value(v, sizes, buf);
}

fn write_struct(m: &Obj<'_>, sizes: &mut &[usize], buf: &mut impl BufMut) {
    if plain_node_order(m) {
        for (k, v) in m.iter() {
            write_entry(k, v, sizes, buf);
        }
    } else {
        for (k, v) in js_node_entries(m) {
            write_entry(k, v, sizes, buf);
        }
    }
}

/// Length of a Value message body for `v`.
pub fn node_value_len(v: &Node<'_>) -> usize {
    record_value(v, &mut Vec::new())
}

/// Length of a Struct message body for `m`.
pub fn node_struct_len(m: &Obj<'_>) -> usize {
    record_struct(m, &mut Vec::new())
}

/// Write a Value message body.
pub fn encode_node_value(v: &Node<'_>, buf: &mut impl BufMut) {
    let mut sizes = Vec::new();
    record_value(v, &mut sizes);
    write_value(v, &mut &sizes[..], buf);
}

/// Write a Struct message body.
pub fn encode_node_struct(m: &Obj<'_>, buf: &mut impl BufMut) {
    let mut sizes = Vec::new();
    record_struct(m, &mut sizes);
    write_struct(m, &mut &sizes[..], buf);
}

// ---------------------------------------------------------------------------------
// Decoding (from a byte slice; the prost glue below hands us the payload)
// ---------------------------------------------------------------------------------

#[allow(deprecated)] // prost has no other public constructor for a custom message
fn err(msg: &'static str) -> DecodeError {
    DecodeError::new(msg)
}

/// Read a varint from the front of `b`.
#[inline]
fn varint(b: &mut &[u8]) -> Result<u64, DecodeError> {
    decode_varint(b)
}

fn take<'a>(b: &mut &'a [u8], n: u64) -> Result<&'a [u8], DecodeError> {
    if n > b.len() as u64 {
        return Err(err("length runs past the end of the buffer"));
    }
    let (head, tail) = b.split_at(n as usize);
    *b = tail;
    Ok(head)
}

/// `decode_key`, with the one-byte keys of every Value/Struct field read inline (prost's
/// function, not inlined, was ~8% of a nested log's `to_arrow`); anything else, errors
/// included, is prost's.
#[inline]
pub(super) fn key(b: &mut &[u8]) -> Result<(u32, WireType), DecodeError> {
    if let Some(&k) = b.first() {
        let wt = match k & 7 {
            0 => WireType::Varint,
            1 => WireType::SixtyFourBit,
            2 => WireType::LengthDelimited,
            5 => WireType::ThirtyTwoBit,
            _ => return long_key(b),
        };
        if (8..0x80).contains(&k) {
            *b = &b[1..];
            return Ok(((k >> 3) as u32, wt));
        }
    }
    long_key(b)
}

/// The rest of [`key`], out of line so that its inline part stays small.
#[cold]
#[inline(never)]
fn long_key(b: &mut &[u8]) -> Result<(u32, WireType), DecodeError> {
    prost::encoding::decode_key(b)
}

/// `skip_field`, with the fields that fit read inline (a one-byte varint or length, a
/// fixed-width number); anything else, errors and groups included, is prost's.
#[inline]
fn skip(wt: WireType, tag: u32, b: &mut &[u8]) -> Result<(), DecodeError> {
    let n = match (wt, b.first()) {
        (WireType::Varint, Some(&x)) if x < 0x80 => 1,
        (WireType::LengthDelimited, Some(&x)) if x < 0x80 => 1 + x as usize,
        (WireType::SixtyFourBit, _) => 8,
        (WireType::ThirtyTwoBit, _) => 4,
        _ => 0,
    };
    if n > 0 && n <= b.len() {
        *b = &b[n..];
        return Ok(());
    }
    skip_field(wt, tag, b, DecodeContext::default())
}

/// JSON number for a decoded double. Integral values are written as integers (as
/// JavaScript prints them, and as a Python int would have been sent): the exact value
/// of the double, so nothing is added or lost. `-0.0` keeps its sign.
pub fn f64_to_json(x: f64) -> J {
    if !x.is_finite() {
        return J::Null;
    }
    if x == x.trunc() && x.abs() < 9.223_372_036_854_775e18 && !(x == 0.0 && x.is_sign_negative()) {
        return J::Number(Number::from(x as i64));
    }
    Number::from_f64(x).map(J::Number).unwrap_or(J::Null)
}

/// Merge one Value field (tag/wire type already read) into `cur`.
fn merge_value_field(
    cur: &mut Option<J>,
    tag: u32,
    wt: WireType,
    b: &mut &[u8],
    depth: usize,
) -> Result<(), DecodeError> {
    match (tag, wt) {
        (1, WireType::Varint) => {
            varint(b)?;
            *cur = Some(J::Null);
        }
        (2, WireType::SixtyFourBit) => {
            let raw = take(b, 8)?;
            let x = f64::from_le_bytes(raw.try_into().unwrap());
            *cur = Some(f64_to_json(x));
        }
        (4, WireType::Varint) => {
            *cur = Some(J::Bool(varint(b)? != 0));
        }
        (3 | 5 | 6, WireType::LengthDelimited) => {
            let n = varint(b)?;
            let payload = take(b, n)?;
            merge_value_len(cur, tag, payload, depth)?;
        }
        // Unknown fields and known fields with the wrong wire type are skipped.
        _ => skip(wt, tag, b)?,
    }
    Ok(())
}

/// Merge a LEN-typed Value field (string, struct or list kind) given its payload.
fn merge_value_len(cur: &mut Option<J>, tag: u32, payload: &[u8], depth: usize) -> Result<(), DecodeError> {
    match tag {
        3 => {
            // Like the reference's TextDecoder: malformed UTF-8 becomes U+FFFD.
            *cur = Some(J::String(String::from_utf8_lossy(payload).into_owned()));
        }
        5 => {
            if !matches!(cur, Some(J::Object(_))) {
                *cur = Some(J::Object(Map::new()));
            }
            if let Some(J::Object(m)) = cur {
                merge_struct(m, payload, depth + 1)?;
            }
        }
        _ => {
            if !matches!(cur, Some(J::Array(_))) {
                *cur = Some(J::Array(Vec::new()));
            }
            if let Some(J::Array(a)) = cur {
                merge_list(a, payload, depth + 1)?;
            }
        }
    }
    Ok(())
}

/// Decode a whole Value body.
pub fn decode_value(b: &[u8], depth: usize) -> Result<Option<J>, DecodeError> {
    merge_value_body(None, b, depth)
}

fn merge_list(a: &mut Vec<J>, mut b: &[u8], depth: usize) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(err("Value nesting too deep"));
    }
    while !b.is_empty() {
        let (tag, wt) = key(&mut b)?;
        if tag == 1 && wt == WireType::LengthDelimited {
            let n = varint(&mut b)?;
            let payload = take(&mut b, n)?;
            // A kind-less element is JS `undefined` in an array: JSON null.
            a.push(decode_value(payload, depth)?.unwrap_or(J::Null));
        } else {
            skip(wt, tag, &mut b)?;
        }
    }
    Ok(())
}

/// Decode one map entry and merge it into `m`.
fn merge_entry(m: &mut Map<String, J>, mut b: &[u8], depth: usize) -> Result<(), DecodeError> {
    let mut k = String::new();
    let mut val: Option<J> = None;
    while !b.is_empty() {
        let (tag, wt) = key(&mut b)?;
        match (tag, wt) {
            (1, WireType::LengthDelimited) => {
                let n = varint(&mut b)?;
                k = String::from_utf8_lossy(take(&mut b, n)?).into_owned();
            }
            (2, WireType::LengthDelimited) => {
                let n = varint(&mut b)?;
                let payload = take(&mut b, n)?;
                val = merge_value_body(val.take(), payload, depth)?;
            }
            _ => skip(wt, tag, &mut b)?,
        }
    }
    // Entries with no value (or a kind-less one) are dropped, like the reference.
    if let Some(v) = val {
        // IndexMap insert: a duplicated key keeps its first position, takes the last value.
        m.insert(k, v);
    }
    Ok(())
}

/// Merge a Value body into an existing value (a repeated occurrence merges).
fn merge_value_body(cur: Option<J>, mut b: &[u8], depth: usize) -> Result<Option<J>, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(err("Value nesting too deep"));
    }
    let mut cur = cur;
    while !b.is_empty() {
        let (tag, wt) = key(&mut b)?;
        merge_value_field(&mut cur, tag, wt, &mut b, depth)?;
    }
    Ok(cur)
}

/// Merge a Struct body into `m`.
pub fn merge_struct(m: &mut Map<String, J>, mut b: &[u8], depth: usize) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(err("Value nesting too deep"));
    }
    while !b.is_empty() {
        let (tag, wt) = key(&mut b)?;
        if tag == 1 && wt == WireType::LengthDelimited {
            let n = varint(&mut b)?;
            let payload = take(&mut b, n)?;
            merge_entry(m, payload, depth)?;
        } else {
            skip(wt, tag, &mut b)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// prost glue
// ---------------------------------------------------------------------------------

/// Read a LEN payload from a generic `Buf` and run `f` on it (zero-copy for slices).
fn with_len_payload<B: Buf, R>(
    buf: &mut B,
    f: impl FnOnce(&[u8]) -> Result<R, DecodeError>,
) -> Result<R, DecodeError> {
    let n = decode_varint(buf)?;
    if n > buf.remaining() as u64 {
        return Err(err("length runs past the end of the buffer"));
    }
    let n = n as usize;
    let chunk = buf.chunk();
    if chunk.len() >= n {
        let r = f(&chunk[..n])?;
        buf.advance(n);
        Ok(r)
    } else {
        let bytes = buf.copy_to_bytes(n);
        f(&bytes)
    }
}

/// Append one raw field (key + payload) to a body buffer: the decoder keeps bodies as
/// protobuf and converts them to JSON text at output time.
fn append_field<B: Buf>(body: &mut Vec<u8>, tag: u32, wire_type: WireType, buf: &mut B, ctx: DecodeContext) -> Result<(), DecodeError> {
    prost::encoding::encode_key(tag, wire_type, body);
    match wire_type {
        WireType::Varint => encode_varint(decode_varint(buf)?, body),
        WireType::SixtyFourBit | WireType::ThirtyTwoBit => {
            let n = if wire_type == WireType::SixtyFourBit { 8 } else { 4 };
            if buf.remaining() < n {
                return Err(err("length runs past the end of the buffer"));
            }
            for _ in 0..n {
                body.push(buf.get_u8());
            }
        }
        WireType::LengthDelimited => {
            with_len_payload(buf, |p| {
                encode_varint(p.len() as u64, body);
                body.extend_from_slice(p);
                Ok(())
            })?;
        }
        _ => {
            // Groups: not part of Value/Struct; validate and drop.
            body.truncate(body.len() - prost::encoding::key_len(tag));
            skip_field(wire_type, tag, buf, ctx)?;
        }
    }
    Ok(())
}

/// Both well-known types hold their encoded bytes verbatim (see above): one impl shape.
macro_rules! raw_bytes_message {
    ($ty:ident) => {
        impl prost::Message for $ty {
            fn encode_raw(&self, buf: &mut impl BufMut) {
                buf.put_slice(&self.0);
            }

            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                append_field(&mut self.0, tag, wire_type, buf, ctx)
            }

            fn encoded_len(&self) -> usize {
                self.0.len()
            }

            fn clear(&mut self) {
                self.0.clear();
            }
        }
    };
}

raw_bytes_message!(Value);
raw_bytes_message!(Struct);

impl Value {
    /// JSON text of the Value; `None` when it has no kind.
    pub fn to_json_text(&self) -> Result<Option<Vec<u8>>, DecodeError> {
        let mut out = Vec::with_capacity(self.0.len() + 8);
        Ok(value_body(&self.0, &mut JsonSink::new(&mut out), 0)?.then_some(out))
    }
}

impl Struct {
    /// JSON text of the Struct.
    pub fn to_json_text(&self) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::with_capacity(self.0.len() + 8);
        struct_body(&self.0, &mut JsonSink::new(&mut out), 0)?;
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------
// Decoding: one walk over the bodies, into any sink (JSON text, MessagePack, a tree)
// ---------------------------------------------------------------------------------
//
// Decoded Value/Struct fields keep their protobuf body (`.0`, appended field by field,
// which is exactly protobuf's merge of repeated occurrences). The body is walked once into
// the output sink; the rare shapes that need merge semantics (a Value with several kinds,
// a map entry with several values, duplicated keys) are merged into a `serde_json` value
// first (the tree path above) and that is walked into the sink.

use crate::json::JsonSink;
use crate::sink::{json_value, Sink};

/// `String::from_utf8_lossy`, with the common valid case checked by the faster
/// `str::from_utf8` first (the lossy scan walks the bytes chunk by chunk).
#[inline]
fn utf8_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// A decoded string: borrowed from the body when it is valid UTF-8 (like the reference's
/// TextDecoder, malformed UTF-8 becomes U+FFFD).
#[inline]
fn sink_str<'b, S: Sink<'b>>(s: &mut S, bytes: &'b [u8], key: bool) {
    match (utf8_lossy(bytes), key) {
        (std::borrow::Cow::Borrowed(t), false) => s.str_ref(t),
        (std::borrow::Cow::Borrowed(t), true) => s.key_ref(t),
        (std::borrow::Cow::Owned(t), false) => s.str(&t),
        (std::borrow::Cow::Owned(t), true) => s.key(&t),
    }
}

/// The value of a decoded double, as [`f64_to_json`] reads it.
#[inline]
fn put_f64<'b, S: Sink<'b>>(s: &mut S, x: f64) {
    if !x.is_finite() {
        s.null();
    } else if x == x.trunc() && x.abs() < 9.223_372_036_854_775e18 && !(x == 0.0 && x.is_sign_negative()) {
        s.i64(x as i64);
    } else {
        s.f64(x);
    }
}

/// Walk a Value body into `s`; `Ok(false)` (nothing written) when it has no kind.
pub fn value_body<'b, S: Sink<'b>>(b: &'b [u8], s: &mut S, depth: usize) -> Result<bool, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(err("Value nesting too deep"));
    }
    if b.is_empty() {
        return Ok(false);
    }
    let mut r = b;
    let (tag, wt) = key(&mut r)?;
    match (tag, wt) {
        (1, WireType::Varint) => {
            varint(&mut r)?;
            if r.is_empty() {
                s.null();
                return Ok(true);
            }
        }
        (4, WireType::Varint) => {
            let v = varint(&mut r)?;
            if r.is_empty() {
                s.bool(v != 0);
                return Ok(true);
            }
        }
        (2, WireType::SixtyFourBit) => {
            let raw = take(&mut r, 8)?;
            if r.is_empty() {
                put_f64(s, f64::from_le_bytes(raw.try_into().unwrap()));
                return Ok(true);
            }
        }
        (3 | 5 | 6, WireType::LengthDelimited) => {
            let n = varint(&mut r)?;
            let payload = take(&mut r, n)?;
            if r.is_empty() {
                match tag {
                    3 => sink_str(s, payload, false),
                    5 => struct_body(payload, s, depth + 1)?,
                    _ => list_body(payload, s, depth + 1)?,
                }
                return Ok(true);
            }
        }
        _ => {}
    }
    // Several fields (merge: last kind wins, structs/lists merge) or unknown ones.
    match decode_value(b, depth)? {
        Some(j) => {
            json_value(&j, s);
            Ok(true)
        }
        None => Ok(false),
    }
}

fn list_body<'b, S: Sink<'b>>(mut b: &'b [u8], s: &mut S, depth: usize) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(err("Value nesting too deep"));
    }
    s.begin_array();
    while !b.is_empty() {
        let (tag, wt) = key(&mut b)?;
        if tag == 1 && wt == WireType::LengthDelimited {
            let n = varint(&mut b)?;
            let payload = take(&mut b, n)?;
            // A kind-less element is JS `undefined` in an array: JSON null.
            if !value_body(payload, s, depth)? {
                s.null();
            }
        } else {
            skip(wt, tag, &mut b)?;
        }
    }
    s.end_array();
    Ok(())
}

/// Walk a Struct body into `s` (an object).
pub fn struct_body<'b, S: Sink<'b>>(b: &'b [u8], s: &mut S, depth: usize) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(err("Value nesting too deep"));
    }
    // The entries are read once: kept on the stack when there are few (most objects).
    let mut keys = SeenKeys::default();
    let mut values: [&[u8]; SMALL] = [&[]; SMALL];
    if !plain_struct(b, &mut keys, &mut values)? {
        // First position, last value, merged fields: the map path does that.
        let mut m = Map::new();
        merge_struct(&mut m, b, depth)?;
        json_value(&J::Object(m), s);
        return Ok(());
    }
    let entry = |s: &mut S, k: &'b [u8], v: &'b [u8]| -> Result<(), DecodeError> {
        // A kind-less value drops the entry, as the reference does.
        if value_has_kind(v)? {
            sink_str(s, k, true);
            value_body(v, s, depth)?;
        }
        Ok(())
    };
    s.begin_object();
    if keys.index.is_none() {
        for (k, v) in keys.small[..keys.n_small].iter().zip(values) {
            entry(s, k, v)?;
        }
    } else {
        let mut r = b;
        while let Some(FastEntry::Pair(k, v)) = next_entry(&mut r)? {
            entry(s, k, v)?;
        }
    }
    s.end_object(true);
    Ok(())
}

/// True when no entry of a Struct body needs merge semantics (no repeated key or value
/// field in an entry, no key seen twice): the one-pass walk then writes it as it is.
/// The keys are recorded in `keys`, and while they fit its small array, the values in
/// `values` (same positions).
fn plain_struct<'a>(mut b: &'a [u8], keys: &mut SeenKeys<'a>, values: &mut [&'a [u8]; SMALL]) -> Result<bool, DecodeError> {
    while let Some(entry) = next_entry(&mut b)? {
        match entry {
            FastEntry::Pair(k, v) if !keys.seen(k) => {
                if let Some(slot) = values.get_mut(keys.n_small.wrapping_sub(1)).filter(|_| keys.index.is_none()) {
                    *slot = v;
                }
            }
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// One `fields` entry of a Struct body, as the one-pass walk sees it.
enum FastEntry<'a> {
    /// Key (empty when absent) and Value body.
    Pair(&'a [u8], &'a [u8]),
    /// A repeated key or value field: protobuf merge semantics, the slow path's job.
    NeedsMerge,
}

/// The next entry of a Struct body that has a value (entries without one are dropped, as
/// the reference does; other fields are skipped), or None at the end.
fn next_entry<'a>(b: &mut &'a [u8]) -> Result<Option<FastEntry<'a>>, DecodeError> {
    while !b.is_empty() {
        let (tag, wt) = key(b)?;
        if !(tag == 1 && wt == WireType::LengthDelimited) {
            skip(wt, tag, b)?;
            continue;
        }
        let n = varint(b)?;
        let mut e = take(b, n)?;
        let mut k: Option<&[u8]> = None;
        let mut v: Option<&[u8]> = None;
        while !e.is_empty() {
            let (t, w) = key(&mut e)?;
            match (t, w) {
                (1, WireType::LengthDelimited) | (2, WireType::LengthDelimited) => {
                    let n = varint(&mut e)?;
                    let p = take(&mut e, n)?;
                    let slot = if t == 1 { &mut k } else { &mut v };
                    if slot.is_some() {
                        return Ok(Some(FastEntry::NeedsMerge));
                    }
                    *slot = Some(p);
                }
                _ => skip(w, t, &mut e)?,
            }
        }
        if let Some(v) = v {
            return Ok(Some(FastEntry::Pair(k.unwrap_or(b""), v)));
        }
    }
    Ok(None)
}

const SMALL: usize = 16;

/// The keys of a Struct body seen so far, for the duplicate check: on the stack for
/// small structs, a hash set beyond.
#[derive(Default)]
struct SeenKeys<'a> {
    small: [&'a [u8]; SMALL],
    n_small: usize,
    index: Option<std::collections::HashSet<&'a [u8]>>,
}

impl<'a> SeenKeys<'a> {
    /// Record `k`; true if it was seen before.
    fn seen(&mut self, k: &'a [u8]) -> bool {
        match &mut self.index {
            Some(set) => !set.insert(k),
            None if self.n_small < self.small.len() => {
                let d = self.small[..self.n_small].contains(&k);
                self.small[self.n_small] = k;
                self.n_small += 1;
                d
            }
            None => {
                let mut set: std::collections::HashSet<&[u8]> = self.small.iter().copied().collect();
                let d = !set.insert(k);
                self.index = Some(set);
                d
            }
        }
    }
}

/// Does a Value body have a kind (would it produce a JSON value)?
pub fn value_has_kind(mut b: &[u8]) -> Result<bool, DecodeError> {
    let mut kind = false;
    while !b.is_empty() {
        let (tag, wt) = key(&mut b)?;
        kind |= matches!(
            (tag, wt),
            (1 | 4, WireType::Varint) | (2, WireType::SixtyFourBit) | (3 | 5 | 6, WireType::LengthDelimited)
        );
        skip(wt, tag, &mut b)?;
    }
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::msgpack::MsgpackSink;

    /// The one-pass Struct walk (entries kept on the stack up to 16, read again beyond; its
    /// inline key and skip readers) writes what the map path (merge semantics) writes, and
    /// fails where it fails: struct bodies of 0 to 40 entries with duplicated, absent and
    /// empty keys, entries without a value, unknown fields (two-byte keys and varints),
    /// groups and truncations.
    #[test]
    fn struct_walk_matches_the_map_path() {
        use crate::test_rng::Rng;
        let mut rng = Rng(0x2545_f491);
        let (mut ok, mut failed) = (0, 0);
        for _ in 0..4_000 {
            let mut body = Vec::new();
            for i in 0..rng.below(41) {
                let mut e = Vec::new();
                if rng.below(8) > 0 {
                    let range = if rng.below(2) == 0 { 60 } else { 1_000 };
                    let k = format!("k{}", rng.below(range));
                    put_str(0x0A, if rng.below(20) == 0 { "" } else { &k }, &mut e);
                }
                match rng.below(12) {
                    0 => {}
                    1 => e.extend_from_slice(&[0xA0, 0x01, 0xAC, 0x02]), // field 20, varint 300
                    2 => e.extend_from_slice(&[0x1B, 0x1C]),             // a group
                    _ => {
                        let v = Value::from_json(&serde_json::json!([i, "x", {"a": i}])[rng.below(3)]);
                        e.push(0x12);
                        encode_varint(v.0.len() as u64, &mut e);
                        e.extend_from_slice(&v.0);
                    }
                }
                if rng.below(15) == 0 {
                    body.extend_from_slice(&[0x10, 0xFF, 0x01]); // field 2, a two-byte varint
                }
                body.push(0x0A);
                encode_varint(e.len() as u64, &mut body);
                body.extend_from_slice(&e);
            }
            if rng.below(10) == 0 {
                body.truncate(rng.below(body.len() + 1));
            }
            let mut walked = Vec::new();
            let r = struct_body(&body, &mut JsonSink::new(&mut walked), 0);
            let mut m = Map::new();
            let want = merge_struct(&mut m, &body, 0).map(|_| {
                let mut t = Vec::new();
                json_value(&J::Object(m), &mut JsonSink::new(&mut t));
                t
            });
            match (r, want) {
                (Ok(()), Ok(t)) => {
                    assert_eq!(String::from_utf8_lossy(&walked), String::from_utf8_lossy(&t));
                    ok += 1;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_string(), b.to_string());
                    failed += 1;
                }
                (a, b) => panic!("{a:?} vs {:?}", b.map(|t| String::from_utf8_lossy(&t).into_owned())),
            }
        }
        assert!(ok > 2_000 && failed > 100, "{ok} ok, {failed} failed");
    }

    /// A decoded double reads the same in every sink as its JSON number ([`f64_to_json`]).
    #[test]
    fn doubles_read_like_their_json_number() {
        let mut xs = vec![0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 0.1, 1e-300, 5e-324, f64::MAX, f64::MIN, f64::EPSILON];
        xs.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 9.007_199_254_740_993e15, 1e19, -1e19]);
        xs.extend([9.223_372_036_854_775e18, -9.223_372_036_854_775e18, 9.223_372_036_854_774e18, 123456789.0, 1e15 + 0.5]);
        for x in xs {
            let (mut direct, mut via_json) = (Vec::new(), Vec::new());
            put_f64(&mut MsgpackSink::new(&mut direct), x);
            json_value(&f64_to_json(x), &mut MsgpackSink::new(&mut via_json));
            assert_eq!(direct, via_json, "{x}");
        }
    }
}
