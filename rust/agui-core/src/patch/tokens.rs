//! The one RFC 6901 tokenizer, generic over what a token becomes (a `String` here, a
//! Python key string in the binding), and the small inline vector that holds a pointer's
//! tokens (most pointers have at most three: a heap vector per operation was a visible
//! cost of one-operation patches).

use super::{ptr_err, unescape, PatchError};

/// Split `pointer` into its unescaped reference tokens, each made by `token` (given the
/// raw text when it holds no escape, else the unescaped text). `""` is the whole document.
pub fn split_pointer<T, C: Default + Extend<T>>(pointer: &str, mut token: impl FnMut(&str) -> T) -> Result<C, PatchError> {
    let mut out = C::default();
    if pointer.is_empty() {
        return Ok(out);
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(ptr_err(format!("invalid JSON pointer {pointer:?}: must be empty or start with '/'")));
    };
    for raw in rest.split('/') {
        out.extend(Some(if raw.contains('~') { token(&unescape(raw)?) } else { token(raw) }));
    }
    Ok(out)
}

/// A pointer's tokens: up to three inline, more on the heap.
#[derive(Clone, Debug, Default)]
pub enum Tokens<T> {
    #[default]
    Empty,
    One([T; 1]),
    Two([T; 2]),
    Three([T; 3]),
    Heap(Vec<T>),
}

impl<T> Tokens<T> {
    /// `n` tokens made by `f(0..n)`, placed directly (a cached pointer's tokens).
    pub fn from_fn(n: usize, mut f: impl FnMut(usize) -> T) -> Self {
        match n {
            0 => Tokens::Empty,
            1 => Tokens::One([f(0)]),
            2 => Tokens::Two([f(0), f(1)]),
            3 => Tokens::Three([f(0), f(1), f(2)]),
            _ => Tokens::Heap((0..n).map(f).collect()),
        }
    }

    pub fn push(&mut self, t: T) {
        *self = match std::mem::take(self) {
            Tokens::Empty => Tokens::One([t]),
            Tokens::One([a]) => Tokens::Two([a, t]),
            Tokens::Two([a, b]) => Tokens::Three([a, b, t]),
            Tokens::Three([a, b, c]) => Tokens::Heap(vec![a, b, c, t]),
            Tokens::Heap(mut v) => {
                v.push(t);
                Tokens::Heap(v)
            }
        };
    }
}

impl<T> Extend<T> for Tokens<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for t in items {
            self.push(t);
        }
    }
}

impl<T> FromIterator<T> for Tokens<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut out = Tokens::Empty;
        out.extend(items);
        out
    }
}

impl<T> std::ops::Deref for Tokens<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Tokens::Empty => &[],
            Tokens::One(a) => a,
            Tokens::Two(a) => a,
            Tokens::Three(a) => a,
            Tokens::Heap(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(p: &str) -> Result<Tokens<String>, PatchError> {
        split_pointer(p, str::to_string)
    }

    #[test]
    fn tokens_hold_any_count_in_order() {
        for n in 0..6 {
            let t: Tokens<usize> = (0..n).collect();
            assert_eq!(&*t, (0..n).collect::<Vec<_>>().as_slice());
            assert_eq!(matches!(t, Tokens::Heap(_)), n > 3);
            assert_eq!(&*Tokens::from_fn(n, |i| i), &*t);
        }
    }

    #[test]
    fn split_unescapes_and_reports_bad_pointers() {
        assert!(split("").unwrap().is_empty());
        assert_eq!(&*split("/").unwrap(), [""]);
        assert_eq!(&*split("/a~1b/c~0d/~01/e").unwrap(), ["a/b", "c~d", "~1", "e"]);
        assert!(split("a").unwrap_err().reason.contains("must be empty or start with '/'"));
        assert_eq!(split("/a~2").unwrap_err().kind, super::super::ErrorKind::Pointer);
        assert!(split("/a~").is_err());
        // The token maker sees the raw text unless it holds an escape.
        let mut seen = Vec::new();
        let _: Vec<()> = split_pointer("/x/~1y", |s| seen.push(s.to_string())).unwrap();
        assert_eq!(seen, ["x", "/y"]);
    }
}
