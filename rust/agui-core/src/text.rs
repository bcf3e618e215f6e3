//! JSON text spelled as the Python reference (pydantic-core's JSON serializer) spells it,
//! byte for byte: strings, keys, numbers, `null`, `true`/`false`, appended to a `Vec<u8>`.
//! The pieces every JSON writer of the crate shares (the JSON sink, `sink::PreStr`'s
//! spellings, the protobuf tree's float keys, the protobuf decoder's text output); no other
//! module of the crate is needed here.
//!
//! * strings: compact escaping — `"` and `\` escaped, the control characters
//!   `\b \t \n \f \r` in their short forms, every other C0 control character as
//!   `\u00XX` with lowercase hex; DEL (0x7F), `/`, non-ASCII (including U+2028 and
//!   U+2029) written raw as UTF-8;
//! * floats: shortest round-trip digits; decimal form with `.0` for integral values
//!   when the decimal exponent is in `-5..=15` (`1.0`, `0.00001`, `1000000000000000.0`),
//!   otherwise exponent form with an explicit sign and no padding (`1e-7`, `1e+16`,
//!   `1.5e-7`, `5e-324`, `1.7976931348623157e+308`); `-0.0` keeps its sign;
//!   NaN and ±infinity written as `null` (the ag_ui models' `ser_json_inf_nan='null'`);
//! * integers: exact decimal.
//!
//! The expected strings of the tests (`json.rs`) were produced by `pydantic_core.to_json`
//! (pydantic-core 2.46.4).

/// Escape class of each byte: 0 = written raw; `b'u'` = `\u00XX`; otherwise the
/// character after the backslash. (The reference spelling the tests hold the SIMD escaper to.)
#[cfg(test)]
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0A] = b'n';
    t[0x0C] = b'f';
    t[0x0D] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Reference implementation (byte by byte), for tests.
#[cfg(test)]
pub(crate) fn write_str_body_simple(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in s.as_bytes() {
        match ESCAPE[b as usize] {
            0 => buf.push(b),
            b'u' => buf.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(b >> 4) as usize], HEX[(b & 0xF) as usize]]),
            esc => buf.extend_from_slice(&[b'\\', esc]),
        }
    }
}

/// The four hex digits at the start of `b` (a `\u` escape's), or `None`; strictly hex
/// digits (`from_str_radix` would also take a sign). The one reader of them: the event
/// scanner and [`rewrite_lone_surrogates`].
#[inline]
pub(crate) fn hex4(b: &[u8]) -> Option<u16> {
    b.get(..4)?.iter().try_fold(0u16, |n, &c| Some(n << 4 | (c as char).to_digit(16)? as u16))
}

/// JSON text with each `\uXXXX` escape of a lone UTF-16 surrogate (one not in a valid
/// high-low pair) rewritten by `write(surrogate, out)`; `None` when there is none. JSON
/// from JavaScript may hold them; serde_json refuses them. The one reader of them: the
/// protobuf mapping writes U+FFFD, `stream::js` a kept form it can restore.
pub(crate) fn rewrite_lone_surrogates(text: &[u8], write: impl FnMut(u16, &mut Vec<u8>)) -> Option<Vec<u8>> {
    rewrite_surrogates(text, |_| false, write)
}

/// JSON text with each escaped lone surrogate as `\ufffd` (`None`: there is none): what
/// `@ag-ui/proto`'s UTF-8 encoder writes for one, and what a UTF-8 column can hold.
pub fn replace_lone_surrogates(text: &[u8]) -> Option<Vec<u8>> {
    rewrite_lone_surrogates(text, |_, out| out.extend_from_slice(b"\\ufffd"))
}

/// [`rewrite_lone_surrogates`], also rewriting the characters `split(code point)` picks,
/// escaped as a pair or written as they are, as their two surrogates (`write` each).
pub(crate) fn rewrite_surrogates(text: &[u8], split: impl Fn(u32) -> bool, mut write: impl FnMut(u16, &mut Vec<u8>)) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() + 16);
    let (mut i, mut changed) = (0, false);
    while i < text.len() {
        if text[i] >= 0xF0 {
            // A character of four bytes (outside strings JSON text is ASCII).
            let c = text.get(i..i + 4).and_then(|b| std::str::from_utf8(b).ok()).and_then(|s| s.chars().next());
            if let Some(cp) = c.map(u32::from).filter(|&cp| split(cp)) {
                write((0xD800 + ((cp - 0x10000) >> 10)) as u16, &mut out);
                write((0xDC00 + ((cp - 0x10000) & 0x3FF)) as u16, &mut out);
                changed = true;
                i += 4;
                continue;
            }
        }
        if text[i] != b'\\' || i + 1 >= text.len() {
            out.push(text[i]);
            i += 1;
            continue;
        }
        // Any other escape (`\\` included) is copied whole, so its second byte is never
        // read as the start of one.
        let Some(u) = (text[i + 1] == b'u').then(|| hex4(&text[i + 2..])).flatten() else {
            out.extend_from_slice(&text[i..i + 2]);
            i += 2;
            continue;
        };
        let low = if (0xD800..0xDC00).contains(&u) && text.get(i + 6..i + 8) == Some(b"\\u") {
            hex4(&text[i + 8..]).filter(|l| (0xDC00..0xE000).contains(l))
        } else {
            None
        };
        match low {
            Some(l) if split(0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(l) - 0xDC00)) => {
                write(u, &mut out);
                write(l, &mut out);
                changed = true;
                i += 12;
            }
            Some(_) => {
                out.extend_from_slice(&text[i..i + 12]);
                i += 12;
            }
            None if (0xD800..0xE000).contains(&u) => {
                write(u, &mut out);
                changed = true;
                i += 6;
            }
            None => {
                out.extend_from_slice(&text[i..i + 6]);
                i += 6;
            }
        }
    }
    changed.then_some(out)
}

/// Strings of at least this many bytes are escaped by the kernel chosen at run time.
pub const LONG_STR: usize = 128;

/// Strings of at most this many bytes that need no escaping are copied a word at a time
/// by [`put_plain_short`] (keys, ids, short values).
pub const SHORT_STR: usize = 48;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that a JSON string must escape (`"`, `\`, a control
/// character); zero when none does. Exact as to whether any byte does (a borrow can only
/// mark bytes above one that is marked already); bytes of 0x80 and up (UTF-8 past ASCII)
/// never count.
#[inline(always)]
fn escape_mask(w: u64) -> u64 {
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    (w.wrapping_sub(ONES * 0x20) & !w & HIGH) | zero(w ^ (ONES * b'"' as u64)) | zero(w ^ (ONES * b'\\' as u64))
}

/// Whether any of 16 bytes must be escaped in a JSON string (`"`, `\\`, a control
/// character). Branch-free over the bytes, which the compiler makes SSE2 compares and one
/// mask (baseline x86-64; NEON on aarch64).
#[inline(always)]
fn escapes16(b: &[u8; 16]) -> bool {
    b.iter().fold(false, |e, &c| e | (c < 0x20) | (c == b'"') | (c == b'\\'))
}

/// Append `"s"` when `s` is 1 to [`SHORT_STR`] bytes long and needs no escaping (true),
/// else write nothing (false); with a comma before it (`comma`) and a colon after it
/// (`colon`, a key), in the same copy. The string is read as overlapping words or 16-byte
/// blocks and tested at once: no call and no loop (the keys and values of agent state are
/// short, and the escaper's call, set-up and tail were most of their cost). It is written
/// into a fixed-size block appended at once and then cut to length: each `Vec` write
/// updates the length in memory, and a chain of them (one per word) cost more than the test.
///
/// The block is appended before the string is read and tested (and taken back when it
/// needs escaping): a growth of the buffer is a call, and the words, the length and the
/// comma read before it were kept across it on the stack, five stores and loads per key
/// in the walker's loops (callgrind). Strings of up to 16 bytes (most keys)
/// append a 24-byte block, longer ones a 56-byte one: the zeroing is stores per string.
#[inline(always)]
pub(crate) fn put_plain_short(buf: &mut Vec<u8>, s: &[u8], comma: bool, colon: bool) -> bool {
    let n = s.len();
    if n == 0 || n > SHORT_STR {
        return false;
    }
    if n <= 16 {
        return put_plain_16(buf, s, comma, colon);
    }
    let at = buf.len();
    buf.extend_from_slice(&[0u8; SHORT_STR + 8]);
    const BLOCKS: usize = SHORT_STR / 16;
    let chunk = |i: usize| -> &[u8; 16] { s[i..i + 16].try_into().unwrap() };
    // Always all the 16-byte blocks a longest string has, at offsets clamped to the last
    // block's: no branch on the length (a loop to it mispredicted its exit).
    let mut escape = false;
    for i in 0..BLOCKS {
        escape |= escapes16(chunk((16 * i).min(n - 16)));
    }
    if escape {
        buf.truncate(at);
        return false;
    }
    let block: &mut [u8; SHORT_STR + 8] = (&mut buf[at..at + SHORT_STR + 8]).try_into().unwrap();
    block[0] = b',';
    // The string's opening quote, after the comma when there is one.
    let out: &mut [u8; SHORT_STR + 7] = (&mut block[comma as usize..comma as usize + SHORT_STR + 7]).try_into().unwrap();
    out[0] = b'"';
    for i in 0..BLOCKS {
        let at = (16 * i).min(n - 16);
        out[1 + at..17 + at].copy_from_slice(chunk(at));
    }
    out[n + 1] = b'"';
    out[n + 2] = b':';
    buf.truncate(at + comma as usize + n + 2 + colon as usize);
    true
}

/// [`put_plain_short`] of 1 to 16 bytes, tested by the word test [`escape_mask`]: 8 to 16
/// bytes as their first and last words, 4 to 7 as one word of their first and last four
/// bytes (two 4-byte words were ~30 of a 7-byte key's ~100 instructions, callgrind),
/// 1 to 3 as one word of the first, middle and last byte, padded with bytes
/// that need no escaping.
#[inline(always)]
fn put_plain_16(buf: &mut Vec<u8>, s: &[u8], comma: bool, colon: bool) -> bool {
    let n = s.len();
    let at = buf.len();
    // comma, quotes, colon and the 16 bytes: 20
    buf.extend_from_slice(&[0u8; 24]);
    const PAD3: u64 = 0x4141_4141_4100_0000;
    let word = |i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap());
    let quad = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
    // The tested words, kept for the copy below.
    let (first, last) = match n {
        8.. => {
            // (Two word tests: the two words as one 16-byte block for `escapes16` were
            // tested byte by byte with a branch each, +127 instructions per small event.)
            let (a, b) = (word(0), word(n - 8));
            if escape_mask(a) | escape_mask(b) != 0 {
                buf.truncate(at);
                return false;
            }
            (a, b)
        }
        4..=7 => {
            let (a, b) = (quad(0), quad(n - 4));
            if escape_mask(a as u64 | (b as u64) << 32) != 0 {
                buf.truncate(at);
                return false;
            }
            (a as u64, b as u64)
        }
        _ => {
            if escape_mask(s[0] as u64 | (s[n / 2] as u64) << 8 | (s[n - 1] as u64) << 16 | PAD3) != 0 {
                buf.truncate(at);
                return false;
            }
            (0, 0)
        }
    };
    let block: &mut [u8; 24] = (&mut buf[at..at + 24]).try_into().unwrap();
    block[0] = b',';
    let out: &mut [u8; 23] = (&mut block[comma as usize..comma as usize + 23]).try_into().unwrap();
    out[0] = b'"';
    match n {
        8.. => {
            out[1..9].copy_from_slice(&first.to_le_bytes());
            out[n - 7..n + 1].copy_from_slice(&last.to_le_bytes());
        }
        4..=7 => {
            out[1..5].copy_from_slice(&(first as u32).to_le_bytes());
            out[n - 3..n + 1].copy_from_slice(&(last as u32).to_le_bytes());
        }
        _ => {
            out[1] = s[0];
            out[1 + n / 2] = s[n / 2];
            out[n] = s[n - 1];
        }
    }
    out[n + 1] = b'"';
    out[n + 2] = b':';
    buf.truncate(at + comma as usize + n + 2 + colon as usize);
    true
}

/// Append `s` as a JSON string (with quotes), every escape spelled as pydantic does (the
/// tests below hold every path to the byte-by-byte reference, at every length across the
/// thresholds and the kernels' blocks).
///
/// * Up to [`SHORT_STR`] bytes with nothing to escape (most keys, many values):
///   [`put_plain_short`], inline at the call site.
/// * Otherwise one out-of-line call ([`write_str_escaped`]), to a SIMD escaper that copies
///   whole blocks first and checks them after, so runs between escapes cost no copy call.
#[inline(always)]
pub fn write_str(buf: &mut Vec<u8>, s: &str) {
    if !put_plain_short(buf, s.as_bytes(), false, false) {
        write_str_escaped(buf, s)
    }
}

/// [`write_str`] of the bytes of a `str` (UTF-8 checked by the caller): a plain short
/// one (most) needs no `str`; the others are made one again to be escaped.
#[inline(always)]
pub fn write_utf8(buf: &mut Vec<u8>, s: &[u8]) {
    if !put_plain_short(buf, s, false, false) {
        // (Never lossy for the bytes of a `str`.)
        write_str_escaped(buf, &String::from_utf8_lossy(s))
    }
}

/// The escaping path of [`write_str`]:
/// * shorter than [`LONG_STR`]: sonic-rs's escaper (SSE2 on any x86-64, NEON on aarch64:
///   chosen at compile time, and a baseline x86-64 build, the abi3 wheel, has SSE2 only);
/// * longer (prose): `json-escape-simd`, which picks its kernel at run time (AVX2 where
///   the CPU has it) and processes 128-byte chunks. Being chosen at run time, that kernel
///   is a call (two, through the crate's entry) that cost more than the wider registers
///   save on short strings (measured: a 7-byte key 5.3 -> 6.1 ns, a 60-byte value 11.9 ->
///   12.8 ns; the 300-message snapshot, whose contents are 250-byte prose, 7% faster),
///   hence the threshold at the chunk size.
#[inline(never)]
pub(crate) fn write_str_escaped(buf: &mut Vec<u8>, s: &str) {
    if s.len() < LONG_STR {
        use sonic_rs::format::Formatter;
        // Writing into a Vec cannot fail (it only reserves).
        let _ = sonic_rs::format::CompactFormatter.write_string_fast(buf, s, true);
    } else {
        write_long_str(buf, s)
    }
}

/// The long-string path of [`write_str_escaped`], kept out of line and marked cold.
#[cold]
#[inline(never)]
fn write_long_str(buf: &mut Vec<u8>, s: &str) {
    json_escape_simd::escape_into(s, buf)
}

/// Append `"key":` (the escaped key followed by the colon).
#[inline(always)]
pub fn write_key(buf: &mut Vec<u8>, key: &str) {
    write_str(buf, key);
    buf.push(b':');
}

/// Append `"key":` after a comma when `comma`: [`write_key`] of an object's next member,
/// the comma, quotes, name and colon in one block copy when the name is short and plain
/// (a schema name: the protobuf decoder's keys).
#[inline(always)]
pub fn write_member_key(buf: &mut Vec<u8>, key: &str, comma: bool) {
    if !put_plain_short(buf, key.as_bytes(), comma, true) {
        if comma {
            buf.push(b',');
        }
        write_str_escaped(buf, key);
        buf.push(b':');
    }
}

/// Pre-encode `"key":` once (used for field plans).
pub fn encoded_key(key: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(key.len() + 3);
    write_key(&mut v, key);
    v
}

/// How a finite double's text lands in the output. The text is always zmij's shortest
/// round-trip form, which is pydantic's spelling (`1.0`, `1e+16`, `1e-7`, tested below);
/// an implementation only chooses where zmij writes it. [`CopiedF64`] is the core's (safe:
/// zmij's own buffer, then copied); the binding has zmij write straight into the output's
/// spare capacity, as orjson does, which needs `unsafe`: copying the digits back out of
/// zmij's buffer right after zmij's narrower stores wrote them stalls the load, and the
/// length-dependent copy mispredicts, together about as long as the formatting itself.
pub trait F64Text {
    /// Append the text of `x`, which is finite.
    fn finite(out: &mut Vec<u8>, x: f64);
}

/// zmij into its own buffer, then copied ([`F64Text`]).
pub struct CopiedF64;

impl F64Text for CopiedF64 {
    #[inline(always)]
    fn finite(out: &mut Vec<u8>, x: f64) {
        let mut b = zmij::Buffer::new();
        crate::copy::push_short(out, b.format_finite(x).as_bytes());
    }
}

/// Append a float as pydantic writes it; NaN and ±infinity become `null`.
#[inline]
pub fn write_f64(buf: &mut Vec<u8>, x: f64) {
    write_f64_with::<CopiedF64>(buf, x)
}

#[inline(always)]
pub(crate) fn write_f64_with<F: F64Text>(buf: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        F::finite(buf, x)
    } else {
        buf.extend_from_slice(b"null");
    }
}

/// Append a signed 64-bit integer (written in place: no digit buffer to copy from).
#[inline]
pub fn write_i64(buf: &mut Vec<u8>, x: i64) {
    itoap::write_to_vec(buf, x)
}

/// Append an unsigned 64-bit integer.
#[inline]
pub fn write_u64(buf: &mut Vec<u8>, x: u64) {
    itoap::write_to_vec(buf, x)
}

/// Append `true` / `false`.
#[inline]
pub fn write_bool(buf: &mut Vec<u8>, x: bool) {
    buf.extend_from_slice(if x { b"true" } else { b"false" });
}

/// Append `null`.
#[inline]
pub fn write_null(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"null");
}
