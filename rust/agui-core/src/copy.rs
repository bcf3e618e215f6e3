//! The one short copy: appending a piece of a few bytes (an id, a key, a delta, a
//! number's digits) with the copy inlined for its length. A variable-length copy is a
//! `memcpy` call, ~20 instructions for a few bytes; here each length up to 16 bytes is
//! a `match` arm whose copy has a constant size, so the compiler writes it as a move or
//! two. Generic over the destination: bytes into a `Vec<u8>`, or a `&str` into a
//! `String` (which takes no bytes without `unsafe`).

/// A piece of text or bytes that can be cut to its first `n` bytes.
pub trait Piece {
    fn len(&self) -> usize;
    /// The first `n` bytes (`n` is the piece's length: a `str` is cut on its end).
    fn head(&self, n: usize) -> &Self;
}

impl Piece for [u8] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }
    #[inline(always)]
    fn head(&self, n: usize) -> &[u8] {
        &self[..n]
    }
}

impl Piece for str {
    #[inline(always)]
    fn len(&self) -> usize {
        str::len(self)
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
    macro_rules! by_length {
        ($($n:literal)*) => {
            match piece.len() {
                $($n => out.put(piece.head($n)),)*
                _ => out.put(piece),
            }
        };
    }
    by_length!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
}

#[cfg(test)]
mod tests {
    use super::push_short;

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
                // From inside a longer piece: only its own bytes.
                let mut v = start.as_bytes().to_vec();
                push_short(&mut v, &text.as_bytes()[1..end.max(1)]);
                assert_eq!(v, [start.as_bytes(), &text.as_bytes()[1..end.max(1)]].concat());
            }
        }
    }
}
