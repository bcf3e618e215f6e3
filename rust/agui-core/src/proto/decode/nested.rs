//! Common nested events straight from the wire (RUN_STARTED/FINISHED/ERROR, STATE_SNAPSHOT/
//! DELTA, MESSAGES_SNAPSHOT, RAW, CUSTOM, TOOL_CALL_RESULT, ACTIVITY_SNAPSHOT/DELTA).
//!
//! What [`write_flat`](super::write_flat) does for flat events, for the events a flat log
//! still has a few of per run: the prost path's cost for them is mostly its own (the guard's
//! scan, a merge into the envelope with a `String` per field and a copy of every Value
//! body, then a walk of that tree). Only the plain case is taken: one envelope field, every
//! field of a known number with its schema wire type, a singular one at most once, valid
//! UTF-8 strings, a Value/Struct body without a group at its top (prost's recursion
//! limit counts from the envelope, the `wkt` walk's from the body), and no field whose
//! checks or shape this path leaves to prost (a run's input, interrupts, pending tool
//! calls, content parts). Value and Struct bodies are walked from the wire by the same
//! `wkt` writer (the prost path walks a copy of the same fields), and the objects are
//! written by the prost path's writers where they have one (`write_usage_entry`,
//! `write_op`, `write_base`, `write_message_of` with `content_form`'s role rules,
//! `write_tool_call_of`). Any failure while writing rolls back what was written and
//! returns `false`: the prost path then gives the exact result or error.

use super::{
    arm_number_to_enum, arm_number_to_type, content_form, len_field, write_base, write_message_of, write_op, write_tool_call_of,
    write_usage_entry, Content, Form, Format, Members, MessageFields, Open, Outcome, W,
};
use crate::proto::events::{count_strings, event_table, field_of, strings, wire_masks, Kind, Member};
use crate::proto::wkt;
use prost::encoding::{decode_key, decode_varint, WireType};

/// A message body's fields by number (below `N`): length-delimited payloads and varints.
struct Fields<'a, const N: usize> {
    len: [Option<&'a [u8]>; N],
    int: [Option<u64>; N],
}

/// Bit of field number `f` in the masks of [`fields`].
const fn bits(fs: &[u32]) -> u16 {
    let mut m = 0;
    let mut i = 0;
    while i < fs.len() {
        m |= 1 << fs[i];
        i += 1;
    }
    m
}

/// `b`'s fields: those in `len` length-delimited, those in `int` varints (masks of
/// [`bits`]), each once, except the length-delimited ones in `rep` (repeated: the slot
/// keeps the first, [`each`] walks them all). None for anything else (an unknown field, a
/// wrong wire type, a singular field twice, malformed bytes). Inlined (returned from a
/// call, the slots were copied out) and its one-byte keys read inline ([`wkt::key`]).
#[inline(always)]
fn fields<const N: usize>(b: &[u8], len: u16, int: u16, rep: u16) -> Option<Fields<'_, N>> {
    let mut f = Fields::EMPTY;
    fill(&mut f, b, len, int, rep)?;
    Some(f)
}

impl<const N: usize> Fields<'_, N> {
    const EMPTY: Self = Fields { len: [None; N], int: [None; N] };
}

/// [`fields`] into `f`, which is [`Fields::EMPTY`].
#[inline(always)]
fn fill<'a, const N: usize>(f: &mut Fields<'a, N>, mut b: &'a [u8], len: u16, int: u16, rep: u16) -> Option<()> {
    while !b.is_empty() {
        let (tag, wt) = wkt::key(&mut b).ok()?;
        let bit = 1u16.checked_shl(tag).filter(|_| (tag as usize) < N)?;
        match wt {
            WireType::LengthDelimited if len & bit != 0 => {
                let n = decode_varint(&mut b).ok()?;
                if n > b.len() as u64 {
                    return None;
                }
                let (p, rest) = b.split_at(n as usize);
                b = rest;
                let slot = &mut f.len[tag as usize];
                if slot.is_some() && rep & bit == 0 {
                    return None;
                }
                slot.get_or_insert(p);
            }
            WireType::Varint if int & bit != 0 => {
                let v = decode_varint(&mut b).ok()?;
                if f.int[tag as usize].replace(v).is_some() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(())
}

/// The payloads of field `tag` in a body [`fields`] accepted, in wire order.
fn each(mut b: &[u8], tag: u32) -> impl Iterator<Item = &[u8]> {
    std::iter::from_fn(move || {
        while !b.is_empty() {
            let (t, wt) = decode_key(&mut b).ok()?;
            let p = match wt {
                WireType::LengthDelimited => {
                    let n = decode_varint(&mut b).ok()? as usize;
                    let (p, rest) = b.split_at_checked(n)?;
                    b = rest;
                    p
                }
                _ => {
                    decode_varint(&mut b).ok()?;
                    continue;
                }
            };
            if t == tag {
                return Some(p);
            }
        }
        None
    })
}

/// The counts of a `Usage` entry (fields 3..=8, varints) its text was written from,
/// so of the shape [`usage`] takes: read with no check of its own.
fn counts(mut u: &[u8]) -> [Option<i64>; 6] {
    let mut c = [None; 6];
    while !u.is_empty() {
        let Ok((tag, wt)) = wkt::key(&mut u) else { break };
        let Ok(v) = decode_varint(&mut u) else { break };
        match wt {
            WireType::Varint => {
                if let Some(slot) = (tag as usize).checked_sub(3).and_then(|i| c.get_mut(i)) {
                    *slot = Some(v as i64);
                }
            }
            _ => match u.get(v as usize..) {
                Some(rest) => u = rest,
                None => break,
            },
        }
    }
    c
}

/// No group at the top of a Value/Struct body (see the module's doc).
fn no_group(mut b: &[u8]) -> bool {
    while !b.is_empty() {
        let Ok((_, wt)) = decode_key(&mut b) else { return false };
        let ok = match wt {
            WireType::Varint => decode_varint(&mut b).is_ok(),
            WireType::SixtyFourBit => b.split_at_checked(8).map(|(_, r)| b = r).is_some(),
            WireType::ThirtyTwoBit => b.split_at_checked(4).map(|(_, r)| b = r).is_some(),
            WireType::LengthDelimited => match decode_varint(&mut b) {
                Ok(n) => usize::try_from(n).ok().and_then(|n| b.split_at_checked(n)).map(|(_, r)| b = r).is_some(),
                Err(_) => false,
            },
            WireType::StartGroup | WireType::EndGroup => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// A string field (UTF-8 checked as prost does).
#[inline]
fn text(p: Option<&[u8]>) -> Option<Option<&str>> {
    match p {
        None => Some(None),
        Some(p) => std::str::from_utf8(p).ok().map(Some),
    }
}

/// A Value or Struct field the wire path may walk (see [`no_group`]).
#[inline]
fn wkt_body(p: Option<&[u8]>) -> Option<Option<&[u8]>> {
    match p {
        Some(p) if !no_group(p) => None,
        p => Some(p),
    }
}

/// Write a nested event from its wire bytes; `false` (nothing written) when not plain.
pub(super) fn write_nested(msg: &[u8], out: &mut Vec<u8>, fmt: Format, members: Option<&mut Members>) -> bool {
    Nested::read(msg).is_some_and(|n| n.write(out, fmt, members))
}

/// A nested event in the plain case as far as its envelope, its arm's fields and its base
/// event tell (one envelope field, known fields of their wire types, a singular one
/// once): what [`write_nested`] writes, and what a reader of its few members (agui-arrow's
/// rows) takes straight from the wire ([`Nested::members`], [`Nested::usage`]) beside
/// its text written once ([`Nested::write_json`]). The rest of the plain case (UTF-8,
/// no group, safe integers, a matching type) is known only once its text is written.
pub struct Nested<'m> {
    arm: u32,
    body: &'m [u8],
    f: Fields<'m, 9>,
    base: Fields<'m, 5>,
}

/// `match $value` over the rows of the event table the wire path takes, each arm
/// `$then!(arm number, [(field number, JSON key, kind) ...])`, the others `$otherwise`
/// (`nested_rows!` given to `event_table!` with those three).
macro_rules! nested_rows {
    (($value:expr, $then:ident, $otherwise:expr) $( $arm:literal $en:literal $ty:literal $v:ident($msg:ident) $path:ident {
        $( $n:literal $f:ident $k:literal $kind:ident ),* $(,)?
    } )*) => {
        match $value {
            $( $arm => nested_pick!($path, $then, $arm, [$( ($n, $k, $kind) )*], $otherwise), )*
            _ => $otherwise,
        }
    };
}

macro_rules! nested_pick {
    (nested, $then:ident, $arm:literal, $m:tt, $otherwise:expr) => {
        $then!($arm, $m)
    };
    ($path:ident, $then:ident, $arm:literal, $m:tt, $otherwise:expr) => {
        $otherwise
    };
}

/// A row's members as the const helpers of the event table read them.
macro_rules! members {
    ([$( ($n:literal, $k:literal, $kind:ident) )*]) => {
        &[$( ($n, $k, Kind::$kind) ),*]
    };
}

/// Per nested arm: its top-level string members as [`Nested::write`] writes them, in
/// output order: (field number, JSON key, proto3 `optional`: written only when present;
/// the others `""` when absent), from the event table. A test holds them to the members
/// of the text written.
fn string_members(arm: u32) -> &'static [(u32, &'static str, bool)] {
    macro_rules! strings {
        ($arm:literal, $m:tt) => {{
            const M: &[Member] = members!($m);
            const S: [(u32, &str, bool); count_strings(M)] = strings::<{ count_strings(M) }>(M);
            &S
        }};
    }
    event_table!(nested_rows arm, strings, &[])
}

impl<'m> Nested<'m> {
    /// `msg` as a nested event the wire path may take; `None` for anything else (the
    /// prost path decodes it to the exact result or error).
    #[inline]
    pub fn read(msg: &'m [u8]) -> Option<Nested<'m>> {
        let mut b = msg;
        let (arm, body) = len_field(&mut b)?;
        if !b.is_empty() {
            return None;
        }
        // Per arm: its length-delimited fields, varint fields and repeated fields (field 1,
        // the base event, is everyone's).
        macro_rules! masks {
            ($arm:literal, $m:tt) => {
                const { wire_masks(members!($m)) }
            };
        }
        let (len, int, rep) = event_table!(nested_rows arm, masks, return None);
        // (Filled in place: each `Fields` returned and moved was a `memcpy` call.)
        let mut n = Nested { arm, body, f: Fields::EMPTY, base: Fields::EMPTY };
        fill(&mut n.f, body, len, int, rep)?;
        let base = n.f.len[1]?;
        fill(&mut n.base, base, bits(&[3, 4]), bits(&[1, 2]), 0)?;
        Some(n)
    }

    /// The position of its `type` in [`EVENT_TYPES`](crate::proto::EVENT_TYPES).
    #[inline]
    pub fn type_index(&self) -> usize {
        arm_number_to_enum(self.arm) as usize
    }

    /// Its `timestamp` (as written: valid once its text is).
    #[inline]
    pub fn timestamp(&self) -> Option<i64> {
        self.base.int[2].map(|v| v as i64)
    }

    /// The JSON keys of its top-level string members, in writing order (what the `k` of
    /// [`Nested::members`] counts), the same for every event of the type.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> {
        string_members(self.arm).iter().map(|m| m.1)
    }

    /// Its top-level string members as written: (`k`, the key's place in
    /// [`Nested::keys`], value); checked UTF-8 once its text is written (not before).
    #[inline]
    pub fn members(&self) -> impl Iterator<Item = (usize, &'m [u8])> + '_ {
        string_members(self.arm).iter().enumerate().filter_map(|(k, &(f, _, optional))| match self.f.len[f as usize] {
            Some(t) => Some((k, t)),
            None if !optional => Some((k, &b""[..])),
            None => None,
        })
    }

    /// The counts of each entry of its `usage` list, in field order (`inputTokens` ...
    /// `cacheWriteInputTokens`), when it has one (as written: valid once its text is).
    pub fn usage(&self) -> Option<impl Iterator<Item = [Option<i64>; 6]> + 'm> {
        macro_rules! usage_field {
            ($arm:literal, $m:tt) => {
                const { field_of(members!($m), Kind::Usage) }
            };
        }
        let tag = event_table!(nested_rows self.arm, usage_field, None)?;
        self.f.len[tag as usize]?;
        Some(each(self.body, tag).map(counts))
    }

    /// Its JSON text appended to `out`; `false` (`out` as it was) when it is not plain
    /// after all, or fails: the prost path then gives the exact result or error.
    pub fn write_json(&self, out: &mut Vec<u8>) -> bool {
        self.write(out, Format::Json, None)
    }

    pub(super) fn write(&self, out: &mut Vec<u8>, fmt: Format, members: Option<&mut Members>) -> bool {
        let start = out.len();
        let spans = members.as_ref().map_or(0, |m| m.spans.len());
        let mut w = W { out, fmt, top: start, members, deferred: None };
        let ok = self.event(&mut w).is_some() && w.deferred.is_none();
        if !ok {
            w.out.truncate(start);
            if let Some(m) = w.members {
                m.spans.truncate(spans);
            }
        }
        ok
    }

    fn event(&self, w: &mut W) -> Option<()> {
        let Nested { arm, body, ref f, ref base } = *self;
        let s = |i: usize| text(f.len[i]);
        let arm_type = arm_number_to_type(arm);
        let mut o = w.obj();
        w.put_str(&mut o, "type", arm_type);
        let mut outcome = None;
        // Each member as its kind is written (the event table's order).
        macro_rules! put {
            (Str, $n:literal, $k:literal) => {
                put_req(w, &mut o, $k, s($n)?)
            };
            (Opt, $n:literal, $k:literal) => {
                put_opt(w, &mut o, $k, s($n)?)
            };
            (Value, $n:literal, $k:literal) => {
                put_value(w, &mut o, $k, f.len[$n])?
            };
            (Keep, $n:literal, $k:literal) => {
                put_value(w, &mut o, $k, f.len[$n])?
            };
            (ActivityContent, $n:literal, $k:literal) => {
                w.put_struct_body(&mut o, $k, wkt_body(f.len[$n])?)
            };
            (Bool, $n:literal, $k:literal) => {
                if let Some(r) = f.int[$n] {
                    w.key(&mut o, $k);
                    w.bool(r != 0);
                }
            };
            (Patch, $n:literal, $k:literal) => {{
                w.key(&mut o, $k);
                patch(w, body, $n)?;
            }};
            (Messages, $n:literal, $k:literal) => {{
                w.key(&mut o, $k);
                let mut a = w.arr();
                for m in each(body, $n) {
                    w.elem(&mut a);
                    message(w, m)?;
                }
                w.end_arr(a);
            }};
            // (Declined by the masks: left to prost.)
            (Input, $n:literal, $k:literal) => {};
            (Usage, $n:literal, $k:literal) => {
                if f.len[$n].is_some() {
                    w.key(&mut o, $k);
                    usage(w, body, $n)?;
                }
            };
            (ToolContent, $n:literal, $k:literal) => {
                match s($n)? {
                    Some(c) => w.put_str(&mut o, $k, c),
                    // No parts (left to prost): an empty list.
                    None => {
                        w.key(&mut o, $k);
                        let a = w.arr();
                        w.end_arr(a);
                    }
                }
            };
            // Without interrupts or pending tool calls (left to prost): an outcome is
            // written after the base event, an interrupt one with its empty list.
            (RunOutcome, $n:literal, $k:literal) => {{
                let ty = s($n)?.unwrap_or("");
                if !ty.is_empty() {
                    let interrupts = (ty == "interrupt").then_some(&[][..]);
                    outcome = Some(Outcome::Run { ty, interrupts, pending: None });
                }
            }};
        }
        macro_rules! event {
            ($arm:literal, [$( ($n:literal, $k:literal, $kind:ident) )*]) => {{
                $( put!($kind, $n, $k); )*
            }};
        }
        event_table!(nested_rows arm, event, return None);
        // prost reads an enum as the low 32 bits of the varint, an int64 as all 64.
        let ty = base.int[1].unwrap_or(0) as i32;
        let ts = base.int[2].map(|v| v as i64);
        write_base(w, o, arm_type, ty, ts, wkt_body(base.len[3])?, wkt_body(base.len[4])?, outcome).ok()
    }
}

#[inline]
fn put_req(w: &mut W, o: &mut Open, k: &'static str, v: Option<&str>) {
    w.put_str(o, k, v.unwrap_or(""));
}

#[inline]
fn put_opt(w: &mut W, o: &mut Open, k: &'static str, v: Option<&str>) {
    if let Some(v) = v {
        w.put_str(o, k, v);
    }
}

#[inline]
fn put_value(w: &mut W, o: &mut Open, k: &'static str, v: Option<&[u8]>) -> Option<()> {
    w.put_value_body(o, k, wkt_body(v)?).ok()
}

/// The `Usage` list in field `tag` of `body`.
fn usage(w: &mut W, body: &[u8], tag: u32) -> Option<()> {
    let mut a = w.arr();
    for u in each(body, tag) {
        w.elem(&mut a);
        let u = fields::<9>(u, bits(&[1, 2]), bits(&[3, 4, 5, 6, 7, 8]), 0)?;
        let ints = std::array::from_fn(|i| u.int[3 + i].map(|v| v as i64));
        write_usage_entry(w, text(u.len[1])?, text(u.len[2])?, ints).ok()?;
    }
    w.end_arr(a);
    Some(())
}

/// One message of MESSAGES_SNAPSHOT (content parts are left to prost).
fn message(w: &mut W, m: &[u8]) -> Option<()> {
    let f = fields::<14>(m, bits(&[1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13]), 0, bits(&[5]))?;
    let role = text(f.len[2])?.unwrap_or("");
    let content = text(f.len[3])?;
    let activity = wkt_body(f.len[13])?;
    let content = match content_form(role, content.is_some(), false, activity.is_some()).ok()? {
        Form::Absent => Content::Absent,
        Form::Str => Content::Str(content.unwrap_or_default()),
        Form::Parts => Content::Parts(&[]),
        Form::Struct => Content::Struct(activity.unwrap_or_default()),
    };
    let mf = MessageFields {
        id: text(f.len[1])?.unwrap_or(""),
        role,
        name: text(f.len[4])?,
        tool_call_id: text(f.len[6])?,
        error: text(f.len[7])?,
        metadata: wkt_body(f.len[9])?,
        subagent_run_id: text(f.len[10])?,
        encrypted_value: text(f.len[11])?,
        activity_type: text(f.len[12])?,
    };
    let tool_calls = |w: &mut W, o: &mut Open| {
        if f.len[5].is_some() {
            w.key(o, "toolCalls");
            let mut a = w.arr();
            for t in each(m, 5) {
                w.elem(&mut a);
                tool_call(w, t)?;
            }
            w.end_arr(a);
        }
        Some(())
    };
    write_message_of(w, &mf, content, tool_calls, &mut Vec::new()).ok()
}

fn tool_call(w: &mut W, t: &[u8]) -> Option<()> {
    let t = fields::<6>(t, bits(&[1, 2, 3, 4, 5]), 0, 0)?;
    let function = match t.len[3] {
        Some(p) => {
            let f = fields::<3>(p, bits(&[1, 2]), 0, 0)?;
            Some((text(f.len[1])?.unwrap_or(""), text(f.len[2])?.unwrap_or("")))
        }
        None => None,
    };
    let (id, ty) = (text(t.len[1])?.unwrap_or(""), text(t.len[2])?.unwrap_or(""));
    write_tool_call_of(w, id, ty, function, wkt_body(t.len[4])?, text(t.len[5])?);
    Some(())
}

/// The JSON Patch operations in field `tag` of `body`.
fn patch(w: &mut W, body: &[u8], tag: u32) -> Option<()> {
    let mut a = w.arr();
    for op in each(body, tag) {
        w.elem(&mut a);
        let op = fields::<5>(op, bits(&[2, 3, 4]), bits(&[1]), 0)?;
        let path = text(op.len[2])?.unwrap_or("");
        let kind = op.int[1].unwrap_or(0) as i32;
        write_op(w, kind, path, text(op.len[3])?, wkt_body(op.len[4])?).ok()?;
    }
    w.end_arr(a);
    Some(())
}

#[cfg(test)]
mod tests {
    //! [`write_nested`] against the prost path: the same bytes whenever it takes a message
    //! (JSON and MessagePack), nothing written when it does not; over the codec vectors,
    //! mutations of them and random nested events, plain and odd (duplicated, unknown and
    //! wrongly typed fields, bad UTF-8, NaN/±inf, groups, deep nesting, truncation).
    use super::super::tests::{mutate, vector_messages};
    use super::super::{decode_message_members, decode_message_into, decode_with_prost, Members, Reuse, MAX_SAFE};
    use super::*;
    use crate::proto::{wkt, EVENT_TYPES};
    use crate::test_rng::Rng;
    use prost::encoding::encode_varint;
    use serde_json::json;

    fn key(out: &mut Vec<u8>, f: u32, wt: u64) {
        encode_varint((f as u64) << 3 | wt, out);
    }

    fn len(out: &mut Vec<u8>, f: u32, p: &[u8]) {
        key(out, f, 2);
        encode_varint(p.len() as u64, out);
        out.extend_from_slice(p);
    }

    fn int(out: &mut Vec<u8>, f: u32, v: u64) {
        key(out, f, 0);
        encode_varint(v, out);
    }

    fn string(rng: &mut Rng) -> &'static [u8] {
        let strs: [&'static [u8]; 8] =
            [b"", b"r1", b"interrupt", "h\u{e9}llo \u{1f600}".as_bytes(), b"a\"b\\c\n\x01", b"\xff\xfe", b"success", &[b'x'; 40]];
        let s = strs[rng.below(strs.len())];
        if s.starts_with(b"\xff") && rng.below(3) > 0 {
            b"ok"
        } else {
            s
        }
    }

    /// A Value body: a JSON value's, sometimes with an odd field after it or instead.
    fn value(rng: &mut Rng, depth: usize) -> Vec<u8> {
        let j = match rng.below(if depth > 3 { 5 } else { 8 }) {
            0 => json!(null),
            1 => json!(rng.below(2) == 1),
            2 => json!([1.5, -0.0, 1e300, 7.0, (rng.next_u64() >> 12) as f64 / 3.0][rng.below(5)]),
            3 => json!(String::from_utf8_lossy(string(rng))),
            4 => json!({}),
            5 => json!({"run": rng.below(9), "steps": [], "status": "thinking", "0": 1, "__proto__": 2}),
            6 => json!(["a", {"k": [null, true]}, {"": 1}]),
            _ => json!({"a": {"b": [1, 2.5, "x"]}, "s": "q\"\\"}),
        };
        let mut b = wkt::Value::from_json(&j).0;
        if rng.below(8) == 0 {
            match rng.below(9) {
                0 => int(&mut b, 9, 1),                                // unknown field
                1 => int(&mut b, 1, 0),                                // a second kind: null
                2 => {
                    key(&mut b, 2, 1); // NaN, ±inf
                    b.extend_from_slice(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY][rng.below(3)].to_le_bytes());
                }
                3 => len(&mut b, 3, b"\xff\xfe"),                      // bad UTF-8
                4 => b.extend_from_slice(&[0x3b, 0x08, 0x01, 0x3c]),   // a group
                5 => b.truncate(rng.below(b.len() + 1)),               // truncated
                6 => len(&mut b, 5, &value(rng, depth + 1)),           // a struct merged in
                7 => {
                    // Deep lists (past the depth limit sometimes).
                    let mut v = wkt::Value::from_json(&json!(1)).0;
                    for _ in 0..(60 + rng.below(80)) {
                        let mut l = Vec::new();
                        len(&mut l, 1, &v);
                        v.clear();
                        len(&mut v, 6, &l);
                    }
                    b = v;
                }
                _ => len(&mut b, 2, b""),                              // LEN with a fixed64 number
            }
        }
        b
    }

    /// A Struct body.
    fn structure(rng: &mut Rng) -> Vec<u8> {
        let mut b = Vec::new();
        for _ in 0..rng.below(4) {
            let mut e = Vec::new();
            if rng.below(6) > 0 {
                len(&mut e, 1, [&b"k"[..], b"k2", b"", b"\xff", b"7"][rng.below(5)]);
            }
            len(&mut e, 2, &value(rng, 1));
            len(&mut b, 1, &e);
        }
        if rng.below(10) == 0 {
            b.extend_from_slice(&[0x1b, 0x1c]); // a group
        }
        b
    }

    fn base(rng: &mut Rng, arm: u32) -> Vec<u8> {
        let mut b = Vec::new();
        let ty = EVENT_TYPES.iter().position(|t| *t == arm_number_to_type(arm)).unwrap() as u64;
        let ty = match rng.below(12) {
            0 => rng.below(40) as u64,
            1 => ty | (1 << 32),
            2 => u64::MAX,
            _ => ty,
        };
        int(&mut b, 1, ty);
        if rng.below(3) == 0 {
            let ts = [MAX_SAFE as u64, (MAX_SAFE + 1) as u64, (-MAX_SAFE) as u64, 1_700_000_000_000][rng.below(4)];
            int(&mut b, 2, ts);
        }
        if rng.below(6) == 0 {
            len(&mut b, 3, &value(rng, 0));
        }
        if rng.below(6) == 0 {
            len(&mut b, 4, &structure(rng));
        }
        b
    }

    fn usage(rng: &mut Rng) -> Vec<u8> {
        let mut u = Vec::new();
        for f in 1..=8 {
            if rng.below(3) == 0 {
                match f {
                    1 | 2 => len(&mut u, f, string(rng)),
                    _ => int(&mut u, f, [40, MAX_SAFE as u64 + 1, u64::MAX, 0][rng.below(4)]),
                }
            }
        }
        u
    }

    fn op(rng: &mut Rng) -> Vec<u8> {
        let mut o = Vec::new();
        if rng.below(4) > 0 {
            int(&mut o, 1, [0, 2, 5, 6, 9, u64::MAX][rng.below(6)]);
        }
        for f in [2, 3] {
            if rng.below(2) == 0 {
                len(&mut o, f, string(rng));
            }
        }
        if rng.below(4) > 0 {
            len(&mut o, 4, &value(rng, 0));
        }
        o
    }

    fn tool_call(rng: &mut Rng) -> Vec<u8> {
        let mut t = Vec::new();
        for f in [1, 2, 5] {
            if rng.below(3) > 0 {
                len(&mut t, f, string(rng));
            }
        }
        if rng.below(4) > 0 {
            let mut func = Vec::new();
            for f in [1, 2] {
                if rng.below(4) > 0 {
                    len(&mut func, f, string(rng));
                }
            }
            len(&mut t, 3, &func);
        }
        if rng.below(5) == 0 {
            len(&mut t, 4, &structure(rng));
        }
        if rng.below(25) == 0 {
            int(&mut t, 9, 1);
        }
        t
    }

    /// A message of MESSAGES_SNAPSHOT: every role, content form and optional member.
    fn message(rng: &mut Rng) -> Vec<u8> {
        const ROLES: [&[u8]; 10] =
            [b"user", b"tool", b"assistant", b"system", b"developer", b"reasoning", b"activity", b"other", b"", b"\xff"];
        let mut m = Vec::new();
        if rng.below(8) > 0 {
            len(&mut m, 1, string(rng));
        }
        if rng.below(10) > 0 {
            len(&mut m, 2, ROLES[rng.below(ROLES.len())]);
        }
        if rng.below(2) == 0 {
            len(&mut m, 3, string(rng));
        }
        for _ in 0..rng.below(3) {
            len(&mut m, 5, &tool_call(rng));
        }
        for f in [4, 6, 7, 10, 11, 12] {
            if rng.below(5) == 0 {
                len(&mut m, f, string(rng));
            }
        }
        if rng.below(5) == 0 {
            len(&mut m, 9, &structure(rng));
        }
        if rng.below(5) == 0 {
            len(&mut m, 13, &structure(rng));
        }
        if rng.below(12) == 0 {
            len(&mut m, 8, &[0x0a, 0x02, 0x12, 0x00]); // a text part
        }
        if rng.below(30) == 0 {
            len(&mut m, 3, string(rng)); // content twice
        }
        if rng.below(30) == 0 {
            int(&mut m, 20, 1);
        }
        m
    }

    /// A nested event, mostly of a shape the wire path takes.
    fn random_nested(rng: &mut Rng) -> Vec<u8> {
        const ARMS: [u32; 12] = [7, 8, 9, 10, 11, 12, 13, 14, 20, 22, 23, 24];
        let arm = ARMS[rng.below(ARMS.len())];
        let known: &[u32] = match arm {
            7 | 8 => &[2, 3],
            9 => &[2, 2],
            10 | 11 | 14 => &[2, 3, 4],
            12 => &[2, 3, 4, 6],
            13 => &[2, 3, 4, 5, 7],
            22 => &[2, 3, 4, 5, 6],
            23 | 24 => &[2, 3, 4, 5, 6],
            _ => &[2],
        };
        let mut fields: Vec<u32> = vec![1];
        for &f in known {
            if rng.below(3) > 0 {
                fields.push(f);
            }
            if rng.below(12) == 0 {
                fields.push(f); // repeated (a list, or a singular field twice)
            }
        }
        if rng.below(12) == 0 {
            fields.push(2 + rng.below(7) as u32); // a field the path leaves to prost, or unknown
        }
        if rng.below(4) == 0 {
            let i = rng.below(fields.len());
            fields.swap(0, i);
        }
        let mut body = Vec::new();
        for f in fields {
            match (arm, f) {
                (_, 1) => {
                    if rng.below(20) > 0 {
                        len(&mut body, 1, &base(rng, arm));
                    }
                }
                (9, 2) => {
                    for _ in 0..rng.below(4) {
                        len(&mut body, f, &message(rng));
                    }
                }
                (7, 2) | (10, 2) | (11, 3) | (13, 4) => len(&mut body, f, &value(rng, 0)),
                (8, 2) | (24, 5) => len(&mut body, f, &op(rng)),
                (13, 7) | (14, 4) => len(&mut body, f, &usage(rng)),
                (23, 5) => len(&mut body, f, &structure(rng)),
                (23, 6) => int(&mut body, f, rng.below(3) as u64),
                (12, 5) | (13, 6) | (22, 7) | (20, _) | (_, 8) if rng.below(2) == 0 => len(&mut body, f, b""),
                _ => len(&mut body, f, string(rng)),
            }
        }
        if rng.below(20) == 0 {
            int(&mut body, 15, 1);
        }
        if rng.below(25) == 0 {
            int(&mut body, 2 + rng.below(5) as u32, 1); // a wrong wire type
        }
        let mut msg = Vec::new();
        len(&mut msg, arm, &body);
        match rng.below(30) {
            0 => int(&mut msg, 40, 1),
            1 => msg.truncate(rng.below(msg.len())),
            _ => {}
        }
        msg
    }

    fn general(msg: &[u8], fmt: Format) -> (crate::proto::Result<Vec<u8>>, Vec<String>) {
        let mut out = b"prefix".to_vec();
        let mut w = Vec::new();
        let r = decode_with_prost(msg, &mut w, &mut out, fmt).map(|_| out[6..].to_vec());
        (r, w)
    }

    fn messages() -> Vec<Vec<u8>> {
        let vectors = vector_messages();
        let mut rng = Rng(0x51_7cc1_b727_220a);
        let mut msgs = vectors.clone();
        for m in &vectors {
            for _ in 0..4 {
                msgs.push(mutate(m, &mut rng, &vectors));
            }
        }
        for _ in 0..20_000 {
            let m = random_nested(&mut rng);
            if rng.below(10) == 0 {
                msgs.push(mutate(&m, &mut rng, &vectors));
            }
            msgs.push(m);
        }
        msgs
    }

    #[test]
    fn nested_wire_path_matches_prost_path() {
        let msgs = messages();
        let (mut taken, mut errors, mut snapshots) = (0, 0, 0);
        for msg in &msgs {
            for fmt in [Format::Json, Format::MsgPack] {
                let mut out = b"prefix".to_vec();
                let (want, warnings) = general(msg, fmt);
                errors += want.is_err() as usize;
                if write_nested(msg, &mut out, fmt, None) {
                    taken += 1;
                    snapshots += (msg[0] == 9 << 3 | 2 && msg.len() > 20) as usize;
                    assert_eq!(want.as_deref().ok(), Some(&out[6..]), "message {msg:02x?}");
                    assert!(warnings.is_empty());
                } else {
                    assert_eq!(out, b"prefix", "nothing written when not taken");
                }
            }
        }
        // Both the plain and the leftover shapes are exercised, and errors of both kinds.
        assert!(taken > 10_000 && taken < 2 * msgs.len() - 10_000, "{taken} of {}", 2 * msgs.len());
        assert!(errors > 5_000 && snapshots > 300, "{errors} errors, {snapshots} messages snapshots");
    }

    /// The members recorded on the wire path are the prost path's (and a declined
    /// message leaves none behind).
    #[test]
    fn nested_members_match() {
        let msgs = messages();
        let (mut reuse, mut members, mut checked) = (Reuse::default(), Members::default(), 0);
        for msg in msgs.iter().take(8_000) {
            let mut out = b"prefix".to_vec();
            if decode_message_members(msg, &mut Vec::new(), &mut out, &mut reuse, &mut members).is_err() {
                continue;
            }
            let mut want = Vec::new();
            decode_message_into(msg, &mut Vec::new(), &mut want).unwrap();
            assert_eq!(&out[6..], &want[..]);
            // The prost path's record of the same event.
            let (mut spans, start) = (Members::default(), b"prefix".len());
            let mut again = b"prefix".to_vec();
            let ev = {
                use prost::Message as _;
                crate::proto::pb::Event::decode(&msg[..]).unwrap()
            };
            let mut w = W { out: &mut again, fmt: Format::Json, top: start, members: Some(&mut spans), deferred: None };
            super::super::event_body(&ev, &mut Vec::new(), &mut w).unwrap();
            assert_eq!(members.spans, spans.spans, "{}", String::from_utf8_lossy(&want));
            checked += 1;
        }
        assert!(checked > 2_000, "{checked}");
    }

    /// What [`Nested`] hands a reader of its members from the wire is what its text says:
    /// its type, its timestamp, its top-level string members (each, in order, with its
    /// value: those of string fields) and its usage entries' counts; and a message it fails leaves `out` as it
    /// was.
    #[test]
    fn nested_members_are_those_of_its_text() {
        let msgs = messages();
        let (mut checked, mut usages) = (0, 0);
        for msg in &msgs {
            let Some(n) = Nested::read(msg) else {
                continue;
            };
            let (mut out, mut members) = (b"prefix".to_vec(), Members::default());
            if !n.write(&mut out, Format::Json, Some(&mut members)) {
                assert_eq!(out, b"prefix");
                assert!(!n.write_json(&mut out));
                assert_eq!(out, b"prefix");
                continue;
            }
            let text = &out[6..];
            members.len = text.len();
            let value = |r: std::ops::Range<usize>| serde_json::from_slice::<serde_json::Value>(&text[r]).unwrap();
            let mut strings = Vec::new();
            let (mut ts, mut usage, mut ty) = (None, None, None);
            for (name, r, _) in members.iter() {
                // (Only these parsed: other values may nest past serde_json's limit.)
                match name {
                    "type" => ty = value(r).as_str().map(String::from),
                    "timestamp" => ts = value(r).as_i64(),
                    "usage" => usage = Some(value(r)),
                    // (Value members may be strings too: no string field's, and no name a
                    // reader of string members takes.)
                    "snapshot" | "event" | "value" | "result" | "rawEvent" => {}
                    _ if text[r.start] == b'"' => strings.push((name, value(r).as_str().unwrap().to_string())),
                    _ => {}
                }
            }
            assert_eq!(ty.as_deref(), Some(EVENT_TYPES[n.type_index()]));
            assert_eq!(n.timestamp(), ts);
            let keys: Vec<&str> = n.keys().collect();
            let got: Vec<(&str, String)> = n.members().map(|(k, v)| (keys[k], String::from_utf8(v.to_vec()).unwrap())).collect();
            assert_eq!(got, strings, "{}", String::from_utf8_lossy(text));
            let entries = |u: &serde_json::Value| -> Vec<[Option<i64>; 6]> {
                const COUNTS: [&str; 6] =
                    ["inputTokens", "outputTokens", "totalTokens", "reasoningTokens", "cachedInputTokens", "cacheWriteInputTokens"];
                u.as_array().unwrap().iter().map(|e| COUNTS.map(|k| e.get(k).and_then(|v| v.as_i64()))).collect()
            };
            assert_eq!(n.usage().map(|u| u.collect::<Vec<_>>()), usage.as_ref().map(entries));
            // Written again without members: the same text.
            let mut again = Vec::new();
            assert!(n.write_json(&mut again));
            assert_eq!(again, text);
            checked += 1;
            usages += usage.is_some() as usize;
        }
        assert!(checked > 5_000 && usages > 300, "{checked} checked, {usages} with usage");
    }
}
