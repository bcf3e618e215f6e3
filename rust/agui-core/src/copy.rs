//! The one short copy: appending a piece of a few bytes (an id, a key, a delta, a
//! number's digits) with the copy inlined for its length. A variable-length copy is a
//! `memcpy` call, ~20 instructions for a few bytes; here each length up to 16 bytes is
//! a `match` arm whose copy has a constant size, so the compiler writes it as a move or
//! two. Generic over the destination: bytes into a `Vec<u8>`, or a `&str` into a
//! `String` (which takes no bytes without `unsafe`). And the one short compare
//! ([`same_short`]), for the same reason.

/// A piece of text or bytes that can be cut to its first `n` bytes.
pub trait Piece {
    /// Its length in bytes.
    fn size(&self) -> usize;
    /// The first `n` bytes (`n` is the piece's length: a `str` is cut on its end).
    fn head(&self, n: usize) -> &Self;
}

impl Piece for [u8] {
    #[inline(always)]
    fn size(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn head(&self, n: usize) -> &[u8] {
        &self[..n]
    }
}

impl Piece for str {
    #[inline(always)]
    fn size(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn head(&self, n: usize) -> &str {
        // (`n` is the length: the boundary check folds away.)
        &self[..n]
    }
}

/// A destination that grows by pieces `P`.
pub trait Grow<P: ?Sized> {
    fn put(&mut self, piece: &P);
}

impl Grow<[u8]> for Vec<u8> {
    #[inline(always)]
    fn put(&mut self, piece: &[u8]) {
        self.extend_from_slice(piece)
    }
}

impl Grow<str> for String {
    #[inline(always)]
    fn put(&mut self, piece: &str) {
        self.push_str(piece)
    }
}

/// `out.put(piece)`, with the copy of a piece of up to 16 bytes inlined for its length
/// (longer ones: one `memcpy` call).
#[inline(always)]
pub fn push_short<P: Piece + ?Sized, D: Grow<P>>(out: &mut D, piece: &P) {
    push_upto::<16, P, D>(out, piece)
}

/// [`push_short`] inlining the copies of up to `N` bytes (16 to 32), for a caller whose
/// pieces are known to be at most `N` long (the arms past 16 are not free: a caller of
/// pieces up to 16 bytes took more instructions with them, and with all 32 the compiler
/// merged the arms back into one `memcpy` call; callgrind).
#[inline(always)]
pub fn push_upto<const N: usize, P: Piece + ?Sized, D: Grow<P>>(out: &mut D, piece: &P) {
    macro_rules! by_length {
        ($($n:literal)*; $($m:literal)*) => {
            match piece.size() {
                $($n => out.put(piece.head($n)),)*
                // (A constant guard: the arms past `N` are dropped at compile time.)
                $($m if $m <= N => out.put(piece.head($m)),)*
                _ => out.put(piece),
            }
        };
    }
    by_length!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32)
}

/// `a == b`, with the compare of up to 32 bytes inlined (an id or a key checked against
/// the one a reader holds, once an event; the patch caches' keys; the state hand-over's
/// memo of keys and short strings): two to four loads a side that overlap to cover the
/// length, where the slices' `==` is a `memcmp` call (~20 instructions for a few bytes).
#[inline(always)]
pub fn same_short(a: &[u8], b: &[u8]) -> bool {
    #[inline(always)]
    fn u32_at(s: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(s[at..at + 4].try_into().expect("4 bytes"))
    }
    #[inline(always)]
    fn u64_at(s: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"))
    }
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        // (first, middle and last: every byte of 1 to 3)
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=8 => u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4),
        9..=16 => u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8),
        17..=32 => {
            u64_at(a, 0) == u64_at(b, 0) && u64_at(a, 8) == u64_at(b, 8) && u64_at(a, n - 16) == u64_at(b, n - 16) && u64_at(a, n - 8) == u64_at(b, n - 8)
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::{push_short, push_upto, same_short};

    #[test]
    fn same_short_is_equality_at_every_length() {
        // Every length across the arms and past them; equal, and differing in each one
        // byte (by one bit, and by another byte), and in length.
        let a: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
        for n in 0..=a.len() {
            let x = &a[..n];
            // (an equal copy elsewhere)
            let copy: Vec<u8> = (0..n).map(|i| a[i]).collect();
            assert!(same_short(x, &copy));
            for at in 0..n {
                for flip in [1u8, 0x80, 0x20] {
                    let mut y = x.to_vec();
                    y[at] ^= flip;
                    assert!(!same_short(x, &y), "{n} {at} {flip}");
                    assert!(!same_short(&y, x), "{n} {at} {flip}");
                }
            }
            if n > 0 {
                assert!(!same_short(x, &x[..n - 1]));
                assert!(!same_short(&x[1..], &x[..n - 1]) || x[1..] == x[..n - 1]);
            }
        }
    }

    #[test]
    fn equals_the_plain_append_at_every_length() {
        // Every length across the arms and past them, onto empty and non-empty
        // destinations, in ASCII and in multi-byte chars (a `str` piece ends on a char).
        let text: String = (0..48).map(|i| if i % 5 == 3 { 'é' } else { char::from(b'a' + i as u8 % 26) }).collect();
        for start in ["", "x", "0123456789abcdefg"] {
            for end in (0..=text.len()).filter(|&e| text.is_char_boundary(e)) {
                let piece = &text[..end];
                let mut s = String::from(start);
                push_short(&mut s, piece);
                assert_eq!(s, format!("{start}{piece}"));
                let mut v = start.as_bytes().to_vec();
                push_short(&mut v, piece.as_bytes());
                assert_eq!(v, format!("{start}{piece}").into_bytes());
                // The arms past 16, some of them and all.
                let mut s = String::from(start);
                push_upto::<23, _, _>(&mut s, piece);
                assert_eq!(s, format!("{start}{piece}"));
                let mut v = start.as_bytes().to_vec();
                push_upto::<32, _, _>(&mut v, piece.as_bytes());
                assert_eq!(v, format!("{start}{piece}").into_bytes());
                // From inside a longer piece: only its own bytes.
                let mut v = start.as_bytes().to_vec();
                push_short(&mut v, &text.as_bytes()[1..end.max(1)]);
                assert_eq!(v, [start.as_bytes(), &text.as_bytes()[1..end.max(1)]].concat());
            }
        }
    }
}
