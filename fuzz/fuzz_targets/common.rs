//! Input shared by the patch targets: `[doc, patch]` as JSON text.
use agui_core::patch::parse_json;
use serde_json::Value;

/// Nesting limit of the targets (low, so that the limit itself is reached often).
pub const MAX_DEPTH: usize = 64;

pub fn depth(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The document and the patch, when the input is `[doc, patch]` with a document within
/// the limit.
pub fn doc_and_patch(data: &[u8]) -> Option<(Value, Value)> {
    let Ok(Value::Array(mut parts)) = parse_json(data, MAX_DEPTH, 3) else { return None };
    if parts.len() != 2 {
        return None;
    }
    let patch = parts.pop()?;
    let doc = parts.pop()?;
    (depth(&doc) <= MAX_DEPTH).then_some((doc, patch))
}
