//! Minimal MessagePack writer (the decoder's second output format, read by msgspec).

#[inline]
pub fn int(out: &mut Vec<u8>, v: i64) {
    if (0..=0x7f).contains(&v) {
        out.push(v as u8);
    } else if (-32..0).contains(&v) {
        out.push(v as i8 as u8);
    } else {
        out.push(0xd3);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

#[inline]
pub fn float(out: &mut Vec<u8>, v: f64) {
    out.push(0xcb);
    out.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub fn str(out: &mut Vec<u8>, s: &str) {
    str_bytes(out, s.as_bytes())
}

/// A MessagePack str from bytes the caller knows to be UTF-8.
#[inline]
pub fn str_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let n = s.len();
    out.reserve(n + 5);
    if n < 32 {
        out.push(0xa0 | n as u8);
    } else if n <= u8::MAX as usize {
        out.extend_from_slice(&[0xd9, n as u8]);
    } else if n <= u16::MAX as usize {
        out.push(0xda);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

#[inline]
pub fn array_header(out: &mut Vec<u8>, n: usize) {
    if n < 16 {
        out.push(0x90 | n as u8);
    } else if n <= u16::MAX as usize {
        out.push(0xdc);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdd);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

#[inline]
pub fn map_header(out: &mut Vec<u8>, n: usize) {
    if n < 16 {
        out.push(0x80 | n as u8);
    } else if n <= u16::MAX as usize {
        out.push(0xde);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(0xdf);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// A 32-bit array/map header whose count is filled in later ([`patch_count`]).
pub fn placeholder(out: &mut Vec<u8>, map: bool) -> usize {
    out.push(if map { 0xdf } else { 0xdd });
    let at = out.len();
    out.extend_from_slice(&[0, 0, 0, 0]);
    at
}

pub fn patch_count(out: &mut [u8], at: usize, n: usize) {
    out[at..at + 4].copy_from_slice(&(n as u32).to_be_bytes());
}

/// A serde_json value (the decoder's slow path for merged Values) as MessagePack.
pub fn json_value(out: &mut Vec<u8>, v: &serde_json::Value) {
    use serde_json::Value as J;
    match v {
        J::Null => out.push(0xc0),
        J::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        J::Number(n) => match n.as_i64() {
            Some(i) => int(out, i),
            None => float(out, super::wkt::number_f64(n)),
        },
        J::String(s) => str(out, s),
        J::Array(a) => {
            array_header(out, a.len());
            for e in a {
                json_value(out, e);
            }
        }
        J::Object(m) => {
            map_header(out, m.len());
            for (k, e) in m {
                str(out, k);
                json_value(out, e);
            }
        }
    }
}
