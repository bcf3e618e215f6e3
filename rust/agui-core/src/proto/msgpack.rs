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
    // (Most are keys and ids.)
    crate::copy::push_short(out, s);
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

/// The MessagePack sink (see [`crate::sink`]). Containers get 32-bit count headers
/// patched at their end (the count is not known when they start).
pub struct MsgpackSink<'b> {
    pub out: &'b mut Vec<u8>,
    /// Open containers: (header position, count so far, is a map).
    open: Vec<(usize, usize, bool)>,
}

impl<'b> MsgpackSink<'b> {
    pub fn new(out: &'b mut Vec<u8>) -> Self {
        MsgpackSink { out, open: Vec::new() }
    }

    /// A value starts: it counts for an enclosing array (a map counts its keys).
    #[inline(always)]
    fn item(&mut self) {
        if let Some((_, n, false)) = self.open.last_mut() {
            *n += 1;
        }
    }

    fn close(&mut self) {
        if let Some((at, n, _)) = self.open.pop() {
            patch_count(self.out, at, n);
        }
    }
}

impl<'a> crate::sink::Sink<'a> for MsgpackSink<'_> {
    fn null(&mut self) {
        self.item();
        self.out.push(0xc0);
    }
    fn bool(&mut self, v: bool) {
        self.item();
        self.out.push(if v { 0xc3 } else { 0xc2 });
    }
    fn i64(&mut self, v: i64) {
        self.item();
        int(self.out, v);
    }
    fn big_int(&mut self, decimal: &str) {
        self.item();
        // MessagePack has no integers beyond 64 bits: u64 when it fits, else the nearest
        // double (what a JavaScript peer would hold).
        match decimal.parse::<u64>() {
            Ok(u) => {
                self.out.push(0xcf);
                self.out.extend_from_slice(&u.to_be_bytes());
            }
            Err(_) => float(self.out, decimal.parse::<f64>().unwrap_or(f64::NAN)),
        }
    }
    fn f64(&mut self, v: f64) {
        self.item();
        float(self.out, v);
    }
    fn str(&mut self, s: &str) {
        self.item();
        str(self.out, s);
    }
    fn begin_array(&mut self) {
        self.item();
        let at = placeholder(self.out, false);
        self.open.push((at, 0, false));
    }
    fn end_array(&mut self) {
        self.close();
    }
    fn begin_object(&mut self) {
        self.item();
        let at = placeholder(self.out, true);
        self.open.push((at, 0, true));
    }
    fn key(&mut self, k: &str) {
        if let Some((_, n, true)) = self.open.last_mut() {
            *n += 1;
        }
        str(self.out, k);
    }
    fn end_object(&mut self, _distinct_keys: bool) {
        self.close();
    }
    fn object_mark(&self) -> usize {
        self.out.len()
    }
    fn rewind_object(&mut self, mark: usize) {
        self.out.truncate(mark);
        if let Some((_, n, _)) = self.open.last_mut() {
            *n = 0;
        }
    }
}
