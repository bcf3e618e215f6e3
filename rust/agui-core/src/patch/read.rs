//! The one reader of a patch operation's members, generic over where they come from (a
//! JSON object here; in the binding, a Python dict or an object with attributes), so
//! every source checks them in the same order and fails with the same errors.

use std::borrow::Cow;

use super::engine::Fail;
use super::{invalid, OpKind, PatchError};

/// An operation object's members.
pub trait OpSource {
    /// A member's string.
    type Str;
    type Value;
    type Error;
    /// The string member `name` (`op`, `path`, `from`): None when absent, `Err(type)`
    /// (the JSON type name of what is there) when it is not a string.
    fn string(&mut self, name: &'static str) -> Result<Option<Result<Self::Str, String>>, Self::Error>;
    /// A member string's text (None: not valid UTF-8).
    fn text<'s>(&self, s: &'s Self::Str) -> Option<Cow<'s, str>>;
    /// The `value` member.
    fn value(&mut self) -> Result<Option<Self::Value>, Self::Error>;
}

/// One operation's members, checked, its pointers parsed (`P`).
pub struct OpMembers<S, P, V> {
    pub kind: OpKind,
    /// The `path` member as the source holds it.
    pub path_str: S,
    pub path: P,
    /// `move`/`copy` only.
    pub from: Option<P>,
    /// `add`/`replace`/`test` only.
    pub value: Option<V>,
}

/// What [`read_op`] gives: the members, or the first error.
pub type Read<S, P> = Result<OpMembers<<S as OpSource>::Str, P, <S as OpSource>::Value>, Fail<<S as OpSource>::Error>>;

/// Read operation `index` from `src`: `known` is its op when the caller knows it (an
/// operation class that fixes it); `pointer` parses a pointer text. Members that the op
/// does not use are not read. Errors name the operation's index, op and path as far as
/// they were read.
pub fn read_op<S: OpSource, P>(
    index: usize,
    src: &mut S,
    known: Option<OpKind>,
    mut pointer: impl FnMut(&str) -> Result<P, PatchError>,
) -> Read<S, P> {
    let not_string = |name: &str, t: String| invalid(format!("member '{name}' must be a string, not {t}"));
    let not_utf8 = |name: &str| invalid(format!("member '{name}' is not valid UTF-8"));
    let op_str;
    let op: Cow<'_, str> = match known {
        Some(k) => Cow::Borrowed(k.name()),
        None => {
            op_str = match src.string("op").map_err(Fail::Doc)? {
                None => return Err(invalid("missing member 'op'").located(index, None, None).into()),
                Some(Err(t)) => return Err(not_string("op", t).located(index, None, None).into()),
                Some(Ok(s)) => s,
            };
            src.text(&op_str).ok_or_else(|| not_utf8("op").located(index, None, None))?
        }
    };
    let kind = OpKind::parse(&op);
    let path_str = match src.string("path").map_err(Fail::Doc)? {
        None => return Err(invalid("missing member 'path'").located(index, Some(&op), None).into()),
        Some(Err(t)) => return Err(not_string("path", t).located(index, Some(&op), None).into()),
        Some(Ok(s)) => s,
    };
    let from = match kind.is_some_and(OpKind::needs_from) {
        true => match src.string("from").map_err(Fail::Doc)? {
            Some(Err(t)) => {
                let path = src.text(&path_str);
                return Err(not_string("from", t).located(index, Some(&op), path.as_deref()).into());
            }
            from => from.and_then(Result::ok),
        },
        false => None,
    };
    let value = if kind.is_some_and(OpKind::needs_value) { src.value().map_err(Fail::Doc)? } else { None };
    let path = src.text(&path_str).ok_or_else(|| not_utf8("path").located(index, Some(&op), None))?;
    let at = |e: PatchError| e.located(index, Some(&op), Some(&path));
    let Some(kind) = kind else {
        return Err(at(invalid(format!("unknown op {op:?}"))).into());
    };
    let path_ptr = pointer(&path).map_err(at)?;
    let from = match from {
        Some(f) => {
            let f = src.text(&f).ok_or_else(|| at(not_utf8("from")))?;
            Some(pointer(&f).map_err(|mut e| {
                e.reason = format!("from: {}", e.reason);
                at(e)
            })?)
        }
        None if kind.needs_from() => return Err(at(invalid("missing member 'from'")).into()),
        None => None,
    };
    if kind.needs_value() && value.is_none() {
        return Err(at(invalid("missing member 'value'")).into());
    }
    drop(path);
    Ok(OpMembers { kind, path_str, path: path_ptr, from, value })
}

#[cfg(test)]
mod tests {
    use crate::patch::{parse_patch, PatchError};
    use serde_json::json;

    fn err(op: serde_json::Value) -> PatchError {
        parse_patch(&json!([{"op": "test", "path": "", "value": 1}, op])).unwrap_err()
    }

    /// Each member checked in order; the error says how far the operation was read.
    #[test]
    fn errors_name_what_was_read() {
        let e = err(json!({"path": "/a"}));
        assert_eq!((e.index, e.op.as_deref(), e.reason.as_str()), (Some(1), None, "missing member 'op'"));
        assert_eq!(err(json!({"op": 1, "path": "/a"})).reason, "member 'op' must be a string, not number");
        let e = err(json!({"op": "add", "path": ["x"], "value": 1}));
        assert_eq!((e.op.as_deref(), e.path, e.reason.as_str()), (Some("add"), None, "member 'path' must be a string, not array"));
        let e = err(json!({"op": "move", "path": "/a", "from": null}));
        assert_eq!((e.path.as_deref(), e.reason.as_str()), (Some("/a"), "member 'from' must be a string, not null"));
        assert_eq!(err(json!({"op": "nope", "path": "/a"})).reason, "unknown op \"nope\"");
        assert!(err(json!({"op": "add", "path": "a", "value": 1})).reason.contains("must be empty or start with '/'"));
        assert!(err(json!({"op": "copy", "path": "/a", "from": "b"})).reason.starts_with("from: "));
        assert_eq!(err(json!({"op": "copy", "path": "/a"})).reason, "missing member 'from'");
        assert_eq!(err(json!({"op": "replace", "path": "/a"})).reason, "missing member 'value'");
        // Members an op does not use are not read.
        let ops = parse_patch(&json!([{"op": "remove", "path": "/a", "from": 3, "value": 1}])).unwrap();
        assert_eq!((ops[0].from.is_none(), ops[0].value.is_null()), (true, true));
    }
}
