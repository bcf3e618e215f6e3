//! JSON text output matching the Python reference (pydantic-core's JSON serializer)
//! byte for byte: the JSON sink, and the pure pieces (no Python) that the `agui-py` walker
//! uses; the spelling of each value is `crate::text`'s (re-exported here: `write_str`,
//! `write_f64`, `F64Text`, ...).
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
//! The expected strings in the tests below were produced by `pydantic_core.to_json`
//! (pydantic-core 2.46.4).

use std::borrow::BorrowMut;

pub use crate::text::*;

/// The JSON text sink (see [`crate::sink`]): pydantic's spelling of every value, commas
/// placed from the document structure. Writes into a caller's buffer (`O`: `&mut Vec<u8>`),
/// so a value can be written in the middle of other text (the decoder writes members, then
/// a value), or into a buffer it owns (`O`: `Vec<u8>`, [`JsonSink::owning`]): the buffer's
/// length then lives in the sink itself, which the compiler can keep in a register across
/// the bytes written, where a borrowed one is loaded and stored again around each write.
/// `F`: where finite doubles' text is written ([`F64Text`]).
pub struct JsonSink<O: BorrowMut<Vec<u8>> = Vec<u8>, F: F64Text = CopiedF64> {
    pub out: O,
    /// A value was written at this level: the next one needs a comma.
    comma: bool,
    _f64: std::marker::PhantomData<F>,
}

impl<'b> JsonSink<&'b mut Vec<u8>> {
    pub fn new(out: &'b mut Vec<u8>) -> Self {
        JsonSink { out, comma: false, _f64: std::marker::PhantomData }
    }
}

impl<F: F64Text> JsonSink<Vec<u8>, F> {
    /// A sink that owns its buffer (`out`, taken back when done) and writes finite
    /// doubles with `F`.
    pub fn owning(out: Vec<u8>) -> Self {
        JsonSink { out, comma: false, _f64: std::marker::PhantomData }
    }
}

impl<O: BorrowMut<Vec<u8>>, F: F64Text> JsonSink<O, F> {
    #[inline(always)]
    fn buf(&mut self) -> &mut Vec<u8> {
        self.out.borrow_mut()
    }

    /// The next value starts a new document (after text the caller wrote itself).
    #[inline]
    pub fn restart(&mut self) {
        self.comma = false;
    }

    #[inline(always)]
    fn sep(&mut self) {
        if self.comma {
            self.buf().push(b',');
        }
    }

    /// A literal value (`t` with its leading comma): one copy, the comma included when due.
    #[inline(always)]
    fn token<const N: usize>(&mut self, t: &[u8; N]) {
        // Two fixed-size copies (a select of lengths would be a memcpy call).
        if self.comma {
            self.buf().extend_from_slice(t);
        } else {
            self.buf().extend_from_slice(&t[1..]);
        }
        self.comma = true;
    }

    /// Write one complete value (after a comma when one is due).
    #[inline(always)]
    fn value(&mut self, write: impl FnOnce(&mut Vec<u8>)) {
        self.sep();
        write(self.out.borrow_mut());
        self.comma = true;
    }
}

impl<O: BorrowMut<Vec<u8>>, F: F64Text> JsonSink<O, F> {
    /// Where the next member of the open object starts, for [`JsonSink::drop_null_member`].
    #[inline(always)]
    pub fn member_mark(&self) -> (usize, bool) {
        (self.out.borrow().len(), self.comma)
    }

    /// Forget the member written since `mark` when its value was written as `null`
    /// (pydantic's `exclude_none` of JSON-mode data). A member ends with `:null` exactly
    /// when its value is the literal: any other value ends with a quote, a digit, a
    /// letter of `true`/`false`, `]` or `}`.
    #[inline(always)]
    pub fn drop_null_member(&mut self, mark: (usize, bool)) {
        let out = self.out.borrow();
        if out.len() > mark.0 && out[mark.0..].ends_with(b":null") {
            self.buf().truncate(mark.0);
            self.comma = mark.1;
        }
    }
}

impl<'a, O: BorrowMut<Vec<u8>>, F: F64Text> crate::sink::Sink<'a> for JsonSink<O, F> {
    #[inline(always)]
    fn null(&mut self) {
        self.token(b",null")
    }
    #[inline(always)]
    fn bool(&mut self, v: bool) {
        if v {
            self.token(b",true")
        } else {
            self.token(b",false")
        }
    }
    #[inline(always)]
    fn i64(&mut self, v: i64) {
        self.value(|o| write_i64(o, v))
    }
    #[inline(always)]
    fn big_int(&mut self, decimal: &str) {
        self.value(|o| o.extend_from_slice(decimal.as_bytes()))
    }
    #[inline(always)]
    fn f64(&mut self, v: f64) {
        self.value(|o| write_f64_with::<F>(o, v))
    }
    #[inline(always)]
    fn str(&mut self, s: &str) {
        // Comma, string and quotes in one copy when it is short and plain. (Not through
        // `value`'s closure: the compiler kept that out of line, a call per string.)
        let comma = self.comma;
        if !put_plain_short(self.buf(), s.as_bytes(), comma, false) {
            self.sep();
            write_str_escaped(self.out.borrow_mut(), s);
        }
        self.comma = true;
    }
    // Inline at the walker's call sites (the defaults' extra call was ~9% of a nested state).
    #[inline(always)]
    fn str_ref(&mut self, s: &'a str) {
        self.str(s)
    }
    #[inline(always)]
    fn key_ref(&mut self, k: &'a str) {
        self.key(k)
    }
    #[inline(always)]
    fn begin_array(&mut self) {
        self.sep();
        self.buf().push(b'[');
        self.comma = false;
    }
    #[inline(always)]
    fn end_array(&mut self) {
        self.buf().push(b']');
        self.comma = true;
    }
    #[inline(always)]
    fn begin_object(&mut self) {
        self.sep();
        self.buf().push(b'{');
        self.comma = false;
    }
    #[inline(always)]
    fn key(&mut self, k: &str) {
        // Comma, key, quotes and colon in one copy when it is short and plain.
        let comma = self.comma;
        if !put_plain_short(self.buf(), k.as_bytes(), comma, true) {
            self.sep();
            write_str_escaped(self.out.borrow_mut(), k);
            self.buf().push(b':');
        }
        self.comma = false;
    }
    fn object_mark(&self) -> usize {
        self.out.borrow().len()
    }
    fn rewind_object(&mut self, mark: usize) {
        self.buf().truncate(mark);
        self.comma = false;
    }
    #[inline(always)]
    fn end_object(&mut self, _distinct_keys: bool) {
        self.buf().push(b'}');
        self.comma = true;
    }
    #[inline(always)]
    fn key_pre(&mut self, k: &'a crate::sink::PreStr) {
        // The comma and the key in one copy: one fixed-size (vector) copy for short keys,
        // the padding then cut off.
        let (from, n) = if self.comma { (0, k.key_len + 1) } else { (1, k.key_len) };
        if n <= 16 {
            let at = self.out.borrow().len();
            let block: &[u8; 16] = k.key_padded[from..from + 16].try_into().unwrap();
            self.buf().extend_from_slice(block);
            self.buf().truncate(at + n);
        } else {
            self.buf().extend_from_slice(&k.key_padded[from..from + n]);
        }
        self.comma = false;
    }
    #[inline(always)]
    fn scalar(&mut self, v: &'a crate::sink::Scalar) {
        match v {
            crate::sink::Scalar::Str(s) => self.value(|o| o.extend_from_slice(&s.json)),
            crate::sink::Scalar::Null => self.null(),
            crate::sink::Scalar::Bool(b) => self.bool(*b),
            crate::sink::Scalar::Int(i) => self.i64(*i),
            crate::sink::Scalar::BigInt(t) => self.big_int(t),
            crate::sink::Scalar::Float(f) => self.f64(*f),
        }
    }
    #[inline(always)]
    fn raw_json(&mut self, text: &[u8]) -> Result<(), String> {
        self.value(|o| o.extend_from_slice(text));
        Ok(())
    }
}

/// UTF-8 for a string given as WTF-8 (UTF-8 that may hold surrogate code points, e.g.
/// Python's `encode("utf-8", "surrogatepass")`), the way JavaScript's UTF-8 encoders treat
/// a JS string: a high surrogate followed by a low one is the character they form; any
/// other surrogate becomes U+FFFD.
pub fn wtf8_to_utf8_lossy(b: &[u8]) -> String {
    // A surrogate is ED A0..BF xx (high: A0..AF, low: B0..BF); everything else is UTF-8.
    let sur = |i: usize| -> Option<u32> {
        (i + 2 < b.len() && b[i] == 0xED && (0xA0..=0xBF).contains(&b[i + 1]))
            .then(|| 0xD000 | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F))
    };
    let mut out = String::with_capacity(b.len());
    let (mut i, mut start) = (0, 0);
    while i < b.len() {
        let Some(hi) = sur(i) else {
            i += 1;
            continue;
        };
        out.push_str(&String::from_utf8_lossy(&b[start..i]));
        match sur(i + 3) {
            Some(lo) if hi < 0xDC00 && lo >= 0xDC00 => {
                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                out.push(char::from_u32(c).unwrap_or('\u{FFFD}'));
                i += 6;
            }
            _ => {
                out.push('\u{FFFD}');
                i += 3;
            }
        }
        start = i;
    }
    out.push_str(&String::from_utf8_lossy(&b[start..]));
    out
}

/// Format a float into a new `String` (convenience for tests and callers).
pub fn f64_to_string(x: f64) -> String {
    let mut v = Vec::new();
    write_f64(&mut v, x);
    String::from_utf8(v).expect("ascii")
}

/// Escape a string into a new `String` (with quotes).
pub fn str_to_json(s: &str) -> String {
    let mut v = Vec::new();
    write_str(&mut v, s);
    String::from_utf8(v).expect("valid utf-8 in, valid utf-8 out")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_match_pydantic() {
        // (value, pydantic_core.to_json(value)) pairs.
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (-1.0, "-1.0"),
            (100.0, "100.0"),
            (0.1, "0.1"),
            (0.5, "0.5"),
            (1.5, "1.5"),
            (3.14158, "3.14158"), // not 3.14159: clippy takes that for PI
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (-1.7976931348623157e308, "-1.7976931348623157e+308"),
            (2.2250738585072014e-308, "2.2250738585072014e-308"),
            (1e16, "1e+16"),
            (-1e16, "-1e+16"),
            (1e15, "1000000000000000.0"),
            (9999999999999998.0, "9999999999999998.0"),
            (1.2345678901234568e17, "1.2345678901234568e+17"),
            (1e20, "1e+20"),
            (1e21, "1e+21"),
            (1e22, "1e+22"),
            (1e100, "1e+100"),
            (1.5e300, "1.5e+300"),
            (1e-5, "0.00001"),
            (1.2345e-5, "0.000012345"),
            (1e-4, "0.0001"),
            (1e-6, "1e-6"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (2.5e-300, "2.5e-300"),
            (123456.789, "123456.789"),
            (0.30000000000000004, "0.30000000000000004"),
            (1700000000000.5, "1700000000000.5"),
            (9007199254740993.0, "9007199254740992.0"),
        ];
        for &(x, want) in cases {
            assert_eq!(f64_to_string(x), want, "float {x:e}");
        }
    }

    #[test]
    fn non_finite_floats_are_null() {
        assert_eq!(f64_to_string(f64::NAN), "null");
        assert_eq!(f64_to_string(f64::INFINITY), "null");
        assert_eq!(f64_to_string(f64::NEG_INFINITY), "null");
    }

    #[test]
    fn control_characters_match_pydantic() {
        let all: String = (0u8..0x20).map(|b| b as char).collect();
        assert_eq!(
            str_to_json(&all),
            concat!(
                r#""\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r"#,
                r#"\u000e\u000f\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019"#,
                r#"\u001a\u001b\u001c\u001d\u001e\u001f""#
            )
        );
    }

    #[test]
    fn specials_and_non_ascii_match_pydantic() {
        // pydantic_core.to_json('\x7f/"\\\u2028\u2029é😀')
        assert_eq!(
            str_to_json("\u{7f}/\"\\\u{2028}\u{2029}é😀"),
            "\"\u{7f}/\\\"\\\\\u{2028}\u{2029}é😀\""
        );
        assert_eq!(str_to_json(""), "\"\"");
        assert_eq!(str_to_json("hello"), "\"hello\"");
        assert_eq!(str_to_json("a\"b"), r#""a\"b""#);
        assert_eq!(str_to_json("</script>"), "\"</script>\"");
    }

    #[test]
    fn fast_escaping_equals_simple_escaping() {
        // Deterministic pseudo-random strings over an alphabet rich in escapes.
        let alphabet: Vec<char> = vec![
            'a', 'b', 'Z', '0', ' ', '"', '\\', '/', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}',
            '\u{80}', 'é', '\u{2028}', '😀', '!', '~', '\u{8}', '\u{c}', '\u{1b}',
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = (next() % 140) as usize;
            let plain = next() % 3 == 0;
            let s: String = (0..len)
                .map(|_| {
                    if plain && next() % 8 != 0 {
                        'x'
                    } else {
                        alphabet[(next() % alphabet.len() as u64) as usize]
                    }
                })
                .collect();
            let (mut q, mut want) = (b"x".to_vec(), b"x\"".to_vec());
            write_str(&mut q, &s);
            write_str_body_simple(&mut want, &s);
            want.push(b'"');
            assert_eq!(q, want, "{s:?}");
            // serde_json's escapes too (the protobuf mapping's JSON text used to be written by it)
            assert_eq!(q[1..], serde_json::to_vec(&s).unwrap(), "{s:?}");
        }
        // every byte value at every offset of a string spanning three 32-byte blocks
        for byte in 0u8..0x80 {
            for pos in 0..70 {
                let mut s = "y".repeat(70);
                s.replace_range(pos..pos + 1, &(byte as char).to_string());
                let (mut a, mut b) = (Vec::new(), b"\"".to_vec());
                write_str(&mut a, &s);
                write_str_body_simple(&mut b, &s);
                b.push(b'"');
                assert_eq!(a, b);
            }
        }
    }

    /// `write_str` against the byte-by-byte reference, with its quotes; and the same
    /// through the JSON sink as a key and as a value, after a comma and not.
    fn assert_escapes_like_reference(s: &str) {
        let (mut fast, mut want) = (b"x".to_vec(), b"x\"".to_vec());
        write_str(&mut fast, s);
        write_str_body_simple(&mut want, s);
        want.push(b'"');
        assert_eq!(fast, want, "{s:?}");
        // A member's key, after a comma or not.
        for comma in [false, true] {
            let mut k = b"x".to_vec();
            write_member_key(&mut k, s, comma);
            let mut want = b"x".to_vec();
            if comma {
                want.push(b',');
            }
            write_key(&mut want, s);
            assert_eq!(k, want, "{s:?}");
        }
        let mut key = Vec::new();
        let mut sink = JsonSink::new(&mut key);
        use crate::sink::Sink;
        sink.begin_object();
        sink.key("k");
        sink.null();
        sink.key(s);
        sink.str(s);
        sink.key("a");
        sink.begin_array();
        sink.str(s);
        sink.str(s);
        sink.end_array();
        sink.end_object(true);
        let body = &want[1..];
        let want_key = [b"{\"k\":null,".as_slice(), body, b":", body, b",\"a\":[", body, b",", body, b"]}"].concat();
        assert_eq!(key, want_key, "{s:?}");
    }

    #[test]
    fn escaping_at_every_length_and_position() {
        // Every length across the kernels' blocks (16, 32 bytes; AVX2's 128-byte chunks,
        // `LONG_STR`), each kind of character at each position of a plain run: the
        // block loops, the tail and the escape loop's exits all meet each case.
        // (and the neighbours of each escaped byte value: the word test's boundaries)
        let specials = [
            "\"", "\\", "\n", "\u{0}", "\u{1f}", "\u{7f}", "é", "\u{2028}", "😀", "/", " ", "!", "#", "[", "]", "\u{80}", "\u{ff}",
        ];
        for len in (0..=140).chain(250..=260) {
            assert_escapes_like_reference(&"a".repeat(len));
            for sp in specials {
                for pos in 0..=len {
                    let mut t = "a".repeat(len);
                    t.insert_str(pos, sp);
                    assert_escapes_like_reference(&t);
                }
                // a run of escapes that crosses block boundaries
                assert_escapes_like_reference(&sp.repeat(len));
            }
        }
        // strings ending at a page boundary (the tail's read-ahead must not cross it)
        let page = 4096;
        let big: String = (0..4 * page).map(|i| if i % 37 == 0 { '"' } else { 'k' }).collect();
        let start = big.as_ptr() as usize;
        let boundary = (start / page + 2) * page - start;
        for len in 0..70 {
            assert_escapes_like_reference(&big[boundary - len..boundary]);
        }
    }

    #[test]
    fn lone_surrogate_escapes_and_nothing_else_are_rewritten() {
        let mark = |t: &str| rewrite_lone_surrogates(t.as_bytes(), |u, out| out.extend_from_slice(format!("<{u:x}>").as_bytes())).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(mark(r#""\ud800""#).as_deref(), Some(r#""<d800>""#));
        assert_eq!(mark(r#""\uDC00x""#).as_deref(), Some(r#""<dc00>x""#));
        // High then low is a pair; high then a non-low escape is lone; low then high: both lone.
        assert_eq!(mark(r#""\ud83d\ude00""#), None);
        assert_eq!(mark(r#""\ud83d\u0041""#).as_deref(), Some(r#""<d83d>\u0041""#));
        assert_eq!(mark(r#""\udc00\ud800""#).as_deref(), Some(r#""<dc00><d800>""#));
        // An escaped backslash is not the start of an escape; bad or cut escapes stay.
        assert_eq!(mark(r#""\\ud800""#), None);
        assert_eq!(mark(r#""\\\ud800""#).as_deref(), Some(r#""\\<d800>""#));
        assert_eq!(mark(r#""\ud8zz" "\ud8"#), None);
        assert_eq!(mark("\\"), None);
        assert_eq!(mark(r#""\u00e9\n""#), None);
    }

    #[test]
    fn wtf8_surrogates_like_javascript() {
        // "a" + lone high + "b" + pair(U+1F600) + lone low
        let b = b"a\xed\xa0\x80b\xed\xa0\xbd\xed\xb8\x80\xed\xb0\x80";
        assert_eq!(wtf8_to_utf8_lossy(b), "a\u{FFFD}b\u{1F600}\u{FFFD}");
        assert_eq!(wtf8_to_utf8_lossy("é😀".as_bytes()), "é😀");
    }

    #[test]
    fn ints_at_every_digit_count() {
        let mut want = String::new();
        let mut v = Vec::new();
        for d in 0..19u32 {
            let p = 10i64.pow(d);
            for x in [p - 1, p, p + 1, -(p - 1), -p, -(p + 1)] {
                write_i64(&mut v, x);
                v.push(b',');
                want.push_str(&format!("{x},"));
            }
        }
        for x in [i64::MAX, i64::MIN] {
            write_i64(&mut v, x);
            want.push_str(&x.to_string());
        }
        assert_eq!(String::from_utf8(v).unwrap(), want);
    }

    #[test]
    fn keys_and_ints() {
        assert_eq!(encoded_key("messageId"), b"\"messageId\":");
        let mut v = Vec::new();
        write_i64(&mut v, i64::MIN);
        v.push(b',');
        write_u64(&mut v, u64::MAX);
        v.push(b',');
        write_bool(&mut v, true);
        v.push(b',');
        write_null(&mut v);
        assert_eq!(v, b"-9223372036854775808,18446744073709551615,true,null");
    }
}

/// How pydantic spells a datetime, date or time given Python's `isoformat()` text.
#[derive(Debug, PartialEq, Eq)]
pub enum IsoTime {
    /// The `isoformat()` text as it is.
    AsIs,
    /// The text with its zero offset (`+00:00`) written `Z`.
    Zulu(String),
    /// An offset with seconds (rare): pydantic spells it its own way (ask it).
    Other,
}

/// The pydantic spelling of `iso` (`isoformat()` of a datetime, time or date), whose text
/// before any fraction and offset is `base` bytes long (19, 8, 10).
pub fn iso_time(iso: &str, base: usize) -> IsoTime {
    let b = iso.as_bytes();
    let mut end = base.min(b.len());
    if b.get(end) == Some(&b'.') {
        end += 7; // microseconds: `.ffffff`
    }
    match b.len().checked_sub(end) {
        Some(0) => IsoTime::AsIs,
        Some(6) if &b[end..] == b"+00:00" => IsoTime::Zulu(format!("{}Z", &iso[..end])),
        Some(6) => IsoTime::AsIs,
        _ => IsoTime::Other,
    }
}

#[cfg(test)]
mod iso_time_tests {
    use super::{iso_time, IsoTime};

    #[test]
    fn pydantic_spellings() {
        assert_eq!(iso_time("2024-01-02T03:04:05", 19), IsoTime::AsIs);
        assert_eq!(iso_time("2024-01-02T03:04:05.000001+00:00", 19), IsoTime::Zulu("2024-01-02T03:04:05.000001Z".into()));
        assert_eq!(iso_time("2024-01-02T03:04:05+00:00", 19), IsoTime::Zulu("2024-01-02T03:04:05Z".into()));
        assert_eq!(iso_time("2024-01-02T03:04:05-05:30", 19), IsoTime::AsIs);
        assert_eq!(iso_time("2024-01-02T03:04:05+05:30:15", 19), IsoTime::Other);
        assert_eq!(iso_time("03:04:05.123456", 8), IsoTime::AsIs);
        assert_eq!(iso_time("03:04:05+00:00", 8), IsoTime::Zulu("03:04:05Z".into()));
        assert_eq!(iso_time("2024-01-02", 10), IsoTime::AsIs);
    }
}
