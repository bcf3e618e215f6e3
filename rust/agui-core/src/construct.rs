//! The Structs' field checks and the decision of their validating construction (the
//! binding's `construct.rs` is the metaclass call slot around it).
//!
//! * [`Check`]: what a field's value must be, compiled once per class from the Python
//!   spec; [`check`] is its one interpreter, generic over how values are read
//!   ([`Access`]). The binding reads it two ways: construction's fast path (exact types,
//!   patterns run) and the encoder's schema (subclasses and tuples accepted, patterns
//!   not re-run), so both agree on the tree by construction.
//! * [`Fields::route`]: given a call's keywords, matched to the class's fields by the
//!   binding, whether msgspec's own constructor takes them as they are, takes them
//!   without the tag keyword, or the lenient (Python) path must convert them. Only the
//!   common valid case is recognised here; the lenient path decides every error.
//!
//! A field given its default value explicitly is recorded (pydantic's
//! `model_fields_set` counts it) in a 64-bit set; a field past the 64th given its default
//! takes the lenient path, which records any field.

/// What a field's value must be. `L`: a literal string as the binding keeps it (for
/// pointer comparison); `P`: a compiled pattern; classes are type addresses.
#[derive(Clone, Debug, PartialEq)]
pub enum Check<L, P> {
    Any,
    /// a string
    Str,
    /// an integer (not a bool) within bounds; `(i64::MIN, i64::MAX)`: any integer
    Int(i64, i64),
    /// `True` / `False`
    Bool,
    /// a string equal to one of these
    Literal(Vec<L>),
    /// an object with string keys (values unchecked: `Dict[str, Any]`)
    Dict,
    /// an instance of one of these classes
    Structs(Vec<usize>),
    /// an array of at least `min` items, each passing the check
    List(Box<Check<L, P>>, usize),
    /// a string the pattern matches
    Pattern(P),
    /// a string that is an RFC 6901 JSON Pointer (the patch engine's own parser)
    JsonPointer,
    Optional(Box<Check<L, P>>),
    Union(Vec<Check<L, P>>),
    /// never on the fast path (a type the plan builder does not model); no constraint as
    /// a schema
    Never,
}

/// How [`check`] reads values: each method answers for one kind, by the access's own
/// rule of what counts (exact types, or subclasses too). No method may change a value.
pub trait Access {
    type Value: Copy;
    type Lit;
    type Pattern;
    /// Is this value the "no value" (None)?
    fn is_none(&self, v: Self::Value) -> bool;
    /// A string value (of the kind the access accepts)?
    fn is_str(&self, v: Self::Value) -> bool;
    /// For a string (`is_str`): equal to this literal?
    fn str_is(&self, v: Self::Value, lit: &Self::Lit) -> bool;
    /// For a string (`is_str`): does the pattern match? An access may trust it (the
    /// encoder does: a regex call per string would cost more than the encode).
    fn matches(&self, v: Self::Value, pattern: &Self::Pattern) -> bool;
    /// For a string (`is_str`): its text passed to `f` (None when it has no UTF-8 text).
    fn with_text<R>(&self, v: Self::Value, f: impl FnOnce(&str) -> R) -> Option<R>;
    /// Does a value pass where the plan builder models no type (`Check::Never`)? A
    /// schema reading has no constraint there; an exact reading (construction's fast
    /// path, whose constructor checks nothing itself) must leave it to the lenient path.
    fn unmodelled(&self) -> bool;
    /// An integer: None when not one, `Some(None)` when beyond `i64` (an access that
    /// takes only `i64` answers None there).
    fn int(&self, v: Self::Value) -> Option<Option<i64>>;
    fn is_bool(&self, v: Self::Value) -> bool;
    fn is_dict(&self, v: Self::Value) -> bool;
    fn is_instance(&self, v: Self::Value, classes: &[usize]) -> bool;
    /// The length of an array (None: not one).
    fn seq_len(&self, v: Self::Value) -> Option<usize>;
    /// Item `i` of an array of at least `i + 1` items (None: it is no longer there).
    fn item(&self, v: Self::Value, i: usize) -> Option<Self::Value>;
}

/// Why a value fails its check: what was expected, rendered only when reported.
#[derive(Clone, Copy, Debug)]
pub enum Expected<'c, L, P> {
    /// A value of the check's kind.
    Kind(&'c Check<L, P>),
    /// An array of at least this many items.
    MinItems(usize),
    /// An array that changed while it was checked.
    Changed,
}

/// A value that fails its check: where below the checked value (`[3]` steps, outermost
/// first), what was expected, and the value found there.
#[derive(Debug)]
pub struct Mismatch<'c, V, L, P> {
    pub at: Vec<usize>,
    pub expected: Expected<'c, L, P>,
    pub got: V,
}

impl<'c, V, L, P> Mismatch<'c, V, L, P> {
    /// The path below the checked value: `[3][0]`.
    pub fn path(&self) -> String {
        self.at.iter().map(|i| format!("[{i}]")).collect()
    }

    /// What was expected, in words; `lit` spells a literal, `class` names a class.
    pub fn expected(&self, lit: &impl Fn(&L) -> String, class: &impl Fn(usize) -> String) -> String {
        match self.expected {
            Expected::Kind(c) => describe(c, lit, class),
            Expected::MinItems(min) => format!("an array of at least {min} items"),
            Expected::Changed => "an array that does not change while it is encoded".into(),
        }
    }
}

/// A check's kind in words ("a string", "an integer in [0, 9]", "A or B").
pub fn describe<L, P>(c: &Check<L, P>, lit: &impl Fn(&L) -> String, class: &impl Fn(usize) -> String) -> String {
    match c {
        Check::Any | Check::Never => "any value".into(),
        Check::Str | Check::Pattern(_) => "a string".into(),
        Check::JsonPointer => "a JSON Pointer string".into(),
        Check::Int(i64::MIN, i64::MAX) => "an integer".into(),
        Check::Int(lo, hi) => format!("an integer in [{lo}, {hi}]"),
        Check::Bool => "a boolean".into(),
        Check::Literal(values) => {
            let names: Vec<String> = values.iter().map(|v| format!("{:?}", lit(v))).collect();
            format!("one of {}", names.join(", "))
        }
        Check::Dict => "an object (dict)".into(),
        Check::Structs(classes) => classes.iter().map(|&c| class(c)).collect::<Vec<_>>().join(" or "),
        Check::List(..) => "an array (list)".into(),
        Check::Optional(inner) => describe(inner, lit, class),
        Check::Union(checks) => checks.iter().map(|c| describe(c, lit, class)).collect::<Vec<_>>().join(" or "),
    }
}

/// What a failed check reports: nothing (`()`: a yes or no, construction's fast path,
/// which pays for no diagnostics) or a [`Mismatch`] (the encoder's errors).
pub trait Report<'c, V, L, P> {
    fn new(expected: Expected<'c, L, P>, got: V) -> Self;
    /// The failure one step into an array, at item `i`.
    fn within(self, i: usize) -> Self;
    /// Did the value fail below itself (in an item), its kind having matched?
    fn inside(&self) -> bool;
}

impl<'c, V, L, P> Report<'c, V, L, P> for () {
    #[inline(always)]
    fn new(_: Expected<'c, L, P>, _: V) -> Self {}
    #[inline(always)]
    fn within(self, _: usize) -> Self {}
    #[inline(always)]
    fn inside(&self) -> bool {
        false
    }
}

impl<'c, V, L, P> Report<'c, V, L, P> for Mismatch<'c, V, L, P> {
    fn new(expected: Expected<'c, L, P>, got: V) -> Self {
        Mismatch { at: Vec::new(), expected, got }
    }
    fn within(mut self, i: usize) -> Self {
        self.at.insert(0, i);
        self
    }
    fn inside(&self) -> bool {
        !self.at.is_empty()
    }
}

/// Does `v` pass `check`, read through `a`? Else the first failure, as `E` reports it.
/// A union whose member's kind matched but failed inside fails with that member's
/// report; else it fails with all its members' kinds. (A yes-or-no report cannot tell
/// and tries every member: the answer is the same, a union never lists two members that
/// match one value in kind.)
pub fn check<'c, A: Access, E: Report<'c, A::Value, A::Lit, A::Pattern>>(a: &A, c: &'c Check<A::Lit, A::Pattern>, v: A::Value) -> Result<(), E> {
    let ok = match c {
        Check::Any => true,
        Check::Never => a.unmodelled(),
        Check::Str => a.is_str(v),
        Check::Pattern(p) => a.is_str(v) && a.matches(v, p),
        Check::JsonPointer => a.is_str(v) && a.with_text(v, |s| crate::patch::split_pointer::<(), ()>(s, |_| ()).is_ok()).unwrap_or(false),
        Check::Int(lo, hi) => match a.int(v) {
            Some(Some(x)) => *lo <= x && x <= *hi,
            Some(None) => (*lo, *hi) == (i64::MIN, i64::MAX),
            None => false,
        },
        Check::Bool => a.is_bool(v),
        Check::Literal(values) => a.is_str(v) && values.iter().any(|l| a.str_is(v, l)),
        Check::Dict => a.is_dict(v),
        Check::Structs(classes) => a.is_instance(v, classes),
        Check::List(item, min) => {
            let Some(n) = a.seq_len(v) else { return Err(E::new(Expected::Kind(c), v)) };
            if n < *min {
                return Err(E::new(Expected::MinItems(*min), v));
            }
            for i in 0..n {
                let Some(it) = a.item(v, i) else { return Err(E::new(Expected::Changed, v)) };
                check::<A, E>(a, item, it).map_err(|e| e.within(i))?;
            }
            true
        }
        Check::Optional(inner) => return if a.is_none(v) { Ok(()) } else { check(a, inner, v) },
        Check::Union(checks) => {
            for member in checks {
                match check::<A, E>(a, member, v) {
                    Ok(()) => return Ok(()),
                    Err(e) if e.inside() => return Err(e),
                    Err(_) => {}
                }
            }
            false
        }
    };
    if ok {
        Ok(())
    } else {
        Err(E::new(Expected::Kind(c), v))
    }
}

/// Where a call goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Every keyword is a declared field holding a plainly valid value, and every
    /// required field is given: msgspec's constructor as called.
    Direct,
    /// The same, plus the class's own tag, which msgspec does not accept as a keyword.
    WithoutTag,
    /// Everything else: the Python path.
    Lenient,
}

/// What a call's keyword names, as the binding matched it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyword {
    /// Field `i` of the plan.
    Field(usize),
    /// The tag field (`type`, `role`, ...) of a tagged Struct.
    Tag,
    /// Anything else (a camelCase name, an extra).
    Unknown,
}

/// The fields of a class as routing sees them.
#[derive(Clone, Debug)]
pub struct Fields {
    required: Vec<bool>,
    n_required: usize,
    /// Per field: has a default that is recorded when given explicitly.
    recorded: Vec<bool>,
}

impl Fields {
    /// Per field: whether it is required, and whether it has a default recorded when
    /// given explicitly (both lists as long as the class has fields).
    pub fn new(required: Vec<bool>, recorded: Vec<bool>) -> Self {
        debug_assert_eq!(required.len(), recorded.len());
        let n_required = required.iter().filter(|r| **r).count();
        Fields { required, n_required, recorded }
    }

    pub fn len(&self) -> usize {
        self.required.len()
    }

    pub fn is_empty(&self) -> bool {
        self.required.is_empty()
    }

    /// Route a call's keywords (each matched to what it names, with its value).
    /// `passes(i, v)`: `v` is plainly valid for field `i`; `at_default(i, v)`: `v` is
    /// field `i`'s default; `tag_ok(v)`: `v` is the class's own tag. `given` gets bit `i`
    /// for each field given its default.
    pub fn route<V>(
        &self,
        keywords: impl Iterator<Item = (Keyword, V)>,
        mut passes: impl FnMut(usize, &V) -> bool,
        mut at_default: impl FnMut(usize, &V) -> bool,
        mut tag_ok: impl FnMut(&V) -> bool,
        given: &mut u64,
    ) -> Route {
        let (mut required, mut tag_seen) = (0usize, false);
        for (k, v) in keywords {
            match k {
                Keyword::Field(i) => {
                    if !passes(i, &v) {
                        return Route::Lenient;
                    }
                    if self.required[i] {
                        required += 1;
                    } else if self.recorded[i] && at_default(i, &v) {
                        if i >= 64 {
                            return Route::Lenient;
                        }
                        *given |= 1u64 << i;
                    }
                }
                Keyword::Tag if tag_ok(&v) => tag_seen = true,
                Keyword::Tag | Keyword::Unknown => return Route::Lenient,
            }
        }
        if required != self.n_required {
            Route::Lenient
        } else if tag_seen {
            Route::WithoutTag
        } else {
            Route::Direct
        }
    }

    /// The fields in `given` (see [`Fields::route`]), in field order.
    pub fn given(&self, given: u64) -> impl Iterator<Item = usize> {
        (0..self.len().min(64)).filter(move |&i| given & (1u64 << i) != 0)
    }
}

/// A reader of JSON text a typed decoder has already accepted (valid JSON), for walking it
/// beside the object decoded from it: which members each object gave, and which of them
/// were `null` or a given string. `None` from any step: the text is not as expected
/// there (the caller gives up and takes a path that does not need it).
pub struct JsonReader<'a> {
    text: &'a str,
    pos: usize,
}

/// A member's value as [`JsonReader::value`] classifies it.
#[derive(Debug, PartialEq)]
pub enum JsonValue<'a> {
    Null,
    Str(std::borrow::Cow<'a, str>),
    /// an array or object, not yet read (the reader stands at its opening bracket)
    Nested,
    /// a number, `true` or `false` (read)
    Other,
}

impl<'a> JsonReader<'a> {
    pub fn new(text: &'a str) -> Self {
        JsonReader { text, pos: 0 }
    }

    fn peek(&mut self) -> Option<u8> {
        let b = self.text.as_bytes();
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(self.pos) {
            self.pos += 1;
        }
        b.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.pos += usize::from(hit);
        hit
    }

    /// Consume the opening bracket `open` (`{` or `[`); false (nothing consumed) when the
    /// next value is something else.
    pub fn begin(&mut self, open: u8) -> bool {
        self.eat(open)
    }

    /// The next key of the object being read (after its colon), or `Some(None)` at its end
    /// (the closing brace consumed). `first`: no member has been read yet.
    pub fn key(&mut self, first: &mut bool) -> Option<Option<std::borrow::Cow<'a, str>>> {
        if self.eat(b'}') {
            return Some(None);
        }
        if !std::mem::take(first) && !self.eat(b',') {
            return None;
        }
        if self.peek() != Some(b'"') {
            return None;
        }
        let key = self.string()?;
        self.eat(b':').then_some(Some(key))
    }

    /// Whether an item of the array being read follows (its comma consumed); false at the
    /// array's end (the closing bracket consumed).
    pub fn item(&mut self, first: &mut bool) -> Option<bool> {
        if self.eat(b']') {
            return Some(false);
        }
        (std::mem::take(first) || self.eat(b',')).then_some(true)
    }

    /// The string at the reader (its opening quote), escapes decoded.
    fn string(&mut self) -> Option<std::borrow::Cow<'a, str>> {
        let start = self.pos + 1;
        let (end, escaped) = crate::stream::event::string_end(self.text.as_bytes(), start)?;
        self.pos = end + 1;
        let raw = &self.text[start..end];
        if !escaped {
            return Some(std::borrow::Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        crate::stream::event::unescape_into(raw, &mut out)?;
        Some(std::borrow::Cow::Owned(out))
    }

    /// The next value: `null` and strings read, numbers and literals skipped, arrays and
    /// objects left at their opening bracket.
    pub fn value(&mut self) -> Option<JsonValue<'a>> {
        Some(match self.peek()? {
            b'"' => JsonValue::Str(self.string()?),
            b'[' | b'{' => JsonValue::Nested,
            b'n' => {
                self.text.get(self.pos..self.pos + 4).filter(|t| *t == "null")?;
                self.pos += 4;
                JsonValue::Null
            }
            _ => {
                let b = self.text.as_bytes();
                let n = b[self.pos..].iter().take_while(|c| !matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\t' | b'\r')).count();
                if n == 0 {
                    return None;
                }
                self.pos += n;
                JsonValue::Other
            }
        })
    }

    /// Skip the next value, whatever it is.
    pub fn skip(&mut self) -> Option<()> {
        if self.value()? == JsonValue::Nested {
            self.pos = crate::stream::event::nested_end(self.text, self.pos)?;
        }
        Some(())
    }

    /// Nothing but whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields: 0 required, 1 optional with a recorded default, 2 optional without.
    fn fields() -> Fields {
        Fields::new(vec![true, false, false], vec![false, true, false])
    }

    /// Values: `0` invalid, `1` valid, `2` valid and at its default; `9` the tag, `8` a
    /// wrong tag.
    fn route(f: &Fields, kw: &[(Keyword, u8)]) -> (Route, u64) {
        let mut given = 0;
        let r = f.route(kw.iter().copied(), |_, v| *v != 0, |_, v| *v == 2, |v| *v == 9, &mut given);
        (r, given)
    }

    #[test]
    fn routes() {
        use Keyword::*;
        let f = fields();
        assert_eq!(route(&f, &[(Field(0), 1)]), (Route::Direct, 0));
        assert_eq!(route(&f, &[(Field(0), 1), (Field(1), 2)]), (Route::Direct, 0b10));
        assert_eq!(route(&f, &[(Field(0), 2), (Field(2), 2)]), (Route::Direct, 0), "no default to record");
        assert_eq!(route(&f, &[(Tag, 9), (Field(0), 1)]), (Route::WithoutTag, 0));
        assert_eq!(route(&f, &[(Tag, 8), (Field(0), 1)]).0, Route::Lenient, "a wrong tag");
        assert_eq!(route(&f, &[(Field(1), 1)]).0, Route::Lenient, "a required field missing");
        assert_eq!(route(&f, &[(Field(0), 0)]).0, Route::Lenient, "an invalid value");
        assert_eq!(route(&f, &[(Field(0), 1), (Unknown, 1)]).0, Route::Lenient, "an extra");
        assert_eq!(route(&Fields::new(vec![], vec![]), &[]), (Route::Direct, 0));
        assert_eq!(f.given(0b110).collect::<Vec<_>>(), [1, 2]);
    }

    /// A toy value model, read both ways the binding reads Python values: exact (the
    /// fast path) and as a schema (subclasses, tuples, big ints; patterns trusted).
    #[derive(Clone, Debug, PartialEq)]
    enum V {
        None,
        Bool,
        Int(Option<i64>),
        Str(&'static str),
        /// a `str` subclass
        SubStr(&'static str),
        Dict,
        Obj(usize),
        List(Vec<V>),
        Tuple(Vec<V>),
    }

    struct Toy<'t> {
        exact: bool,
        _values: std::marker::PhantomData<&'t V>,
    }

    fn toy<'t>(exact: bool) -> Toy<'t> {
        Toy { exact, _values: std::marker::PhantomData }
    }

    impl<'t> Access for Toy<'t> {
        type Value = &'t V;
        type Lit = &'static str;
        type Pattern = fn(&str) -> bool;
        fn is_none(&self, v: &V) -> bool {
            matches!(v, V::None)
        }
        fn is_str(&self, v: &V) -> bool {
            matches!(v, V::Str(_)) || (!self.exact && matches!(v, V::SubStr(_)))
        }
        fn str_is(&self, v: &V, lit: &&'static str) -> bool {
            self.with_text(v, |s| s == *lit).unwrap_or(false)
        }
        fn matches(&self, v: &V, p: &fn(&str) -> bool) -> bool {
            !self.exact || self.with_text(v, p).unwrap_or(false)
        }
        fn with_text<R>(&self, v: &V, f: impl FnOnce(&str) -> R) -> Option<R> {
            match v {
                V::Str(s) | V::SubStr(s) => Some(f(s)),
                _ => None,
            }
        }
        fn unmodelled(&self) -> bool {
            !self.exact
        }
        fn int(&self, v: &V) -> Option<Option<i64>> {
            match v {
                V::Int(None) if self.exact => None,
                V::Int(x) => Some(*x),
                _ => None,
            }
        }
        fn is_bool(&self, v: &V) -> bool {
            matches!(v, V::Bool)
        }
        fn is_dict(&self, v: &V) -> bool {
            matches!(v, V::Dict)
        }
        fn is_instance(&self, v: &V, classes: &[usize]) -> bool {
            matches!(v, V::Obj(c) if classes.contains(c))
        }
        fn seq_len(&self, v: &V) -> Option<usize> {
            match v {
                V::List(items) => Some(items.len()),
                V::Tuple(items) if !self.exact => Some(items.len()),
                _ => None,
            }
        }
        fn item(&self, v: &'t V, i: usize) -> Option<&'t V> {
            match v {
                V::List(items) | V::Tuple(items) => items.get(i),
                _ => None,
            }
        }
    }

    type C = Check<&'static str, fn(&str) -> bool>;

    fn is_upper(s: &str) -> bool {
        s.chars().all(|c| c.is_ascii_uppercase())
    }

    fn passes(exact: bool, c: &C, v: &V) -> bool {
        let yes_no = check::<_, ()>(&toy(exact), c, v).is_ok();
        assert_eq!(yes_no, check::<_, Mismatch<_, _, _>>(&toy(exact), c, v).is_ok(), "both reports agree: {c:?} {v:?}");
        yes_no
    }

    /// What each check takes, exactly and as a schema.
    #[test]
    fn checks_read_exactly_and_as_a_schema() {
        let cases: Vec<(C, V, bool, bool)> = vec![
            (Check::Str, V::Str("a"), true, true),
            (Check::Str, V::SubStr("a"), false, true),
            (Check::Str, V::Int(Some(1)), false, false),
            (Check::Int(0, 9), V::Int(Some(9)), true, true),
            (Check::Int(0, 9), V::Int(Some(10)), false, false),
            (Check::Int(0, 9), V::Int(None), false, false),
            (Check::Int(i64::MIN, i64::MAX), V::Int(None), false, true),
            (Check::Int(i64::MIN, i64::MAX), V::Bool, false, false),
            (Check::Bool, V::Bool, true, true),
            (Check::Literal(vec!["x", "y"]), V::Str("y"), true, true),
            (Check::Literal(vec!["x", "y"]), V::SubStr("y"), false, true),
            (Check::Literal(vec!["x", "y"]), V::Str("z"), false, false),
            (Check::Dict, V::Dict, true, true),
            (Check::Structs(vec![1, 2]), V::Obj(2), true, true),
            (Check::Structs(vec![1, 2]), V::Obj(3), false, false),
            (Check::Pattern(is_upper), V::Str("AB"), true, true),
            (Check::Pattern(is_upper), V::Str("ab"), false, true),
            (Check::JsonPointer, V::Str("/a/~1b"), true, true),
            (Check::JsonPointer, V::Str("a"), false, false),
            (Check::JsonPointer, V::Str("/~2"), false, false),
            (Check::Optional(Box::new(Check::Str)), V::None, true, true),
            (Check::Str, V::None, false, false),
            (Check::Union(vec![Check::Bool, Check::Str]), V::Str("a"), true, true),
            (Check::Union(vec![Check::Bool, Check::Str]), V::Dict, false, false),
            (Check::List(Box::new(Check::Str), 1), V::List(vec![V::Str("a")]), true, true),
            (Check::List(Box::new(Check::Str), 1), V::Tuple(vec![V::Str("a")]), false, true),
            (Check::List(Box::new(Check::Str), 1), V::List(vec![]), false, false),
            (Check::List(Box::new(Check::Str), 0), V::List(vec![V::Bool]), false, false),
            (Check::Any, V::Dict, true, true),
            (Check::Never, V::Dict, false, true),
        ];
        for (c, v, exact, schema) in &cases {
            assert_eq!(passes(true, c, v), *exact, "exact: {c:?} {v:?}");
            assert_eq!(passes(false, c, v), *schema, "schema: {c:?} {v:?}");
        }
    }

    fn report(c: &C, v: &V) -> (String, String) {
        let m: Mismatch<_, _, _> = check(&toy(false), c, v).expect_err("a mismatch");
        (m.path(), m.expected(&|l: &&str| l.to_string(), &|c| format!("C{c}")))
    }

    /// Where and what a mismatch reports: the path into arrays, the member of a union
    /// that failed inside, else every member's kind.
    #[test]
    fn mismatches_say_where_and_what() {
        let items: C = Check::List(Box::new(Check::Structs(vec![7])), 0);
        let v = V::List(vec![V::Obj(7), V::List(vec![]), V::Obj(7)]);
        assert_eq!(report(&items, &v), ("[1]".into(), "C7".into()));
        let nested: C = Check::List(Box::new(Check::List(Box::new(Check::Int(0, 3)), 0)), 0);
        let v = V::List(vec![V::List(vec![]), V::List(vec![V::Int(Some(1)), V::Int(Some(5))])]);
        assert_eq!(report(&nested, &v), ("[1][1]".into(), "an integer in [0, 3]".into()));
        let union: C = Check::Union(vec![Check::Literal(vec!["a", "b"]), items.clone()]);
        assert_eq!(report(&union, &V::Dict), ("".into(), "one of \"a\", \"b\" or an array (list)".into()));
        let v = V::List(vec![V::Bool]);
        assert_eq!(report(&union, &v), ("[0]".into(), "C7".into()), "the member whose kind matched");
        let min: C = Check::List(Box::new(Check::Any), 2);
        assert_eq!(report(&min, &V::List(vec![V::Bool])).1, "an array of at least 2 items");
        let opt: C = Check::Optional(Box::new(Check::Int(i64::MIN, i64::MAX)));
        assert_eq!(report(&opt, &V::Str("1")).1, "an integer");
        assert_eq!(report(&Check::JsonPointer, &V::Str("x")).1, "a JSON Pointer string");
    }

    #[test]
    fn the_json_reader_walks_members_and_classifies_values() {
        let mut r = JsonReader::new(r#" {"a" : null, "b\u0041":"x\"y", "c":[1, {"d":2}], "e": -1.5e3, "f":true} "#);
        assert!(r.begin(b'{'));
        let mut first = true;
        let mut seen = Vec::new();
        while let Some(key) = r.key(&mut first).expect("a well-formed object") {
            let v = r.value().expect("a value");
            if v == JsonValue::Nested {
                assert!(r.begin(b'['));
                let mut first = true;
                let mut n = 0;
                while r.item(&mut first).expect("an item") {
                    r.skip().expect("skipped");
                    n += 1;
                }
                assert_eq!(n, 2);
            }
            seen.push((key.into_owned(), format!("{v:?}")));
        }
        assert!(r.at_end());
        let keys: Vec<&str> = seen.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "bA", "c", "e", "f"]);
        assert_eq!(seen[0].1, "Null");
        assert_eq!(seen[1].1, r#"Str("x\"y")"#);
        assert_eq!(seen[3].1, "Other");
        // Not what was expected: None, never a panic.
        assert_eq!(JsonReader::new("{").key(&mut false), None);
        assert_eq!(JsonReader::new("nul").value(), None);
        assert_eq!(JsonReader::new(r#"{"a" 1}"#).key(&mut true).map(|_| ()), None);
        let mut r = JsonReader::new("[1 2]");
        assert!(r.begin(b'['));
        let mut first = true;
        assert_eq!(r.item(&mut first), Some(true));
        r.skip().expect("1");
        assert_eq!(r.item(&mut first), None);
    }

    #[test]
    fn defaults_past_the_64th_field_are_lenient() {
        let f = Fields::new(vec![false; 70], vec![true; 70]);
        assert_eq!(route(&f, &[(Keyword::Field(63), 2)]), (Route::Direct, 1u64 << 63));
        assert_eq!(route(&f, &[(Keyword::Field(64), 2)]).0, Route::Lenient);
        assert_eq!(route(&f, &[(Keyword::Field(64), 1)]), (Route::Direct, 0), "not at its default: nothing to record");
        assert_eq!(f.given(u64::MAX).count(), 64);
    }
}
