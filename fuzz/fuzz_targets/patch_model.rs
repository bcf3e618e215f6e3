//! Differential: the engine on `serde_json::Value` against a straightforward model (clone
//! the document, apply each operation with plain recursive code, keep the clone only if
//! every operation succeeded). Input `[doc, patch]` as JSON text. Both must agree on the
//! result (byte for byte, member order included) or on the index of the failing operation.
#![no_main]
mod budget; // the allocation budget (the global allocator)
use agui_core::patch::{apply_json_patch, json_eq, parse_patch, OpKind, Operation, Options};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

#[path = "common.rs"]
mod common;
use common::{depth, doc_and_patch, MAX_DEPTH};

fn index(t: &str) -> Option<usize> {
    let ok = t == "0" || (!t.is_empty() && !t.starts_with('0') && t.bytes().all(|b| b.is_ascii_digit()));
    if ok { t.parse().ok() } else { None }
}

fn get<'a>(v: &'a Value, toks: &[String]) -> Option<&'a Value> {
    let Some((first, rest)) = toks.split_first() else { return Some(v) };
    match v {
        Value::Object(m) => get(m.get(first)?, rest),
        Value::Array(a) => get(a.get(index(first)?)?, rest),
        _ => None,
    }
}

fn get_mut<'a>(v: &'a mut Value, toks: &[String]) -> Option<&'a mut Value> {
    let Some((first, rest)) = toks.split_first() else { return Some(v) };
    match v {
        Value::Object(m) => get_mut(m.get_mut(first)?, rest),
        Value::Array(a) => get_mut(a.get_mut(index(first)?)?, rest),
        _ => None,
    }
}

fn add(doc: &mut Value, toks: &[String], v: Value) -> Option<()> {
    let Some((last, parent)) = toks.split_last() else {
        *doc = v;
        return Some(());
    };
    match get_mut(doc, parent)? {
        Value::Object(m) => {
            m.insert(last.clone(), v);
        }
        Value::Array(a) => {
            let i = if last == "-" { a.len() } else { index(last)? };
            if i > a.len() {
                return None;
            }
            a.insert(i, v);
        }
        _ => return None,
    }
    Some(())
}

fn remove(doc: &mut Value, toks: &[String]) -> Option<Value> {
    let (last, parent) = toks.split_last()?;
    match get_mut(doc, parent)? {
        Value::Object(m) => m.shift_remove(last.as_str()),
        Value::Array(a) => {
            let i = index(last)?;
            (i < a.len()).then(|| a.remove(i))
        }
        _ => None,
    }
}

fn step(doc: &mut Value, op: &Operation) -> Option<()> {
    let path = &op.path.tokens[..];
    let from = op.from.as_ref().map_or(&[][..], |p| &p.tokens[..]);
    match op.kind {
        OpKind::Add => add(doc, path, op.value.clone()),
        OpKind::Remove => remove(doc, path).map(drop),
        OpKind::Replace => {
            *get_mut(doc, path)? = op.value.clone();
            Some(())
        }
        OpKind::Move => {
            if from == path {
                return get(doc, from).map(drop);
            }
            if from.len() < path.len() && path[..from.len()] == *from {
                return None;
            }
            let v = remove(doc, from)?;
            add(doc, path, v)
        }
        OpKind::Copy => {
            let v = get(doc, from)?.clone();
            add(doc, path, v)
        }
        OpKind::Test => json_eq(get(doc, path)?, &op.value).then_some(()),
        OpKind::Get => None, // fast-json-patch only
    }
}

fn model(doc: &Value, ops: &[Operation]) -> Result<Value, usize> {
    let mut d = doc.clone();
    for (i, op) in ops.iter().enumerate() {
        step(&mut d, op).ok_or(i)?;
        if depth(&d) > MAX_DEPTH {
            return Err(i);
        }
    }
    Ok(d)
}

fuzz_target!(|data: &[u8]| {
    let Some((doc, patch)) = doc_and_patch(data) else { return };
    let Ok(ops) = parse_patch(&patch) else { return };
    if ops.iter().any(|o| o.kind == OpKind::Test && depth(&o.value) > MAX_DEPTH) {
        return;
    }
    let mut engine = doc.clone();
    let res = apply_json_patch(&mut engine, &patch, &Options { max_depth: MAX_DEPTH, ..Options::default() });
    let got = serde_json::to_string(&engine).unwrap();
    match (model(&doc, &ops), res) {
        (Ok(want), Ok(())) => assert_eq!(got, serde_json::to_string(&want).unwrap()),
        (Err(i), Err(e)) => {
            assert_eq!(e.index, Some(i), "{e}");
            assert_eq!(got, serde_json::to_string(&doc).unwrap(), "not atomic");
        }
        (want, res) => panic!("model {want:?} vs engine {res:?}"),
    }
});
