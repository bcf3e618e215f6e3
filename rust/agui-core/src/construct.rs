//! The decision of the Structs' validating construction (the binding's `construct.rs` is
//! the metaclass call slot around it): given a call's keywords, matched to the class's
//! fields by the binding, whether msgspec's own constructor takes them as they are, takes
//! them without the tag keyword, or the lenient (Python) path must convert them. Only
//! the common valid case is recognised here; the lenient path decides every error.
//!
//! A field given its default value explicitly is recorded (pydantic's
//! `model_fields_set` counts it) in a 64-bit set; a field past the 64th given its default
//! takes the lenient path, which records any field.

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

    #[test]
    fn defaults_past_the_64th_field_are_lenient() {
        let f = Fields::new(vec![false; 70], vec![true; 70]);
        assert_eq!(route(&f, &[(Keyword::Field(63), 2)]), (Route::Direct, 1u64 << 63));
        assert_eq!(route(&f, &[(Keyword::Field(64), 2)]).0, Route::Lenient);
        assert_eq!(route(&f, &[(Keyword::Field(64), 1)]), (Route::Direct, 0), "not at its default: nothing to record");
        assert_eq!(f.given(u64::MAX).count(), 64);
    }
}
