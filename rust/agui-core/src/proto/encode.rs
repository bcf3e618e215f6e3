//! JSON event -> `ag_ui.Event` (wire-schema §5.1), as the reference converter does it.
//!
//! The input is the camelCase JSON event (the SSE payload). The reference does not
//! validate before encoding (validation only warns), so neither do we: keys are copied
//! by name, unknown keys are dropped, optional `null`s are removed, and the same inputs
//! that make the reference throw give an [`Error::Encode`].

use super::error::{Error, Result};
use super::pb;
use super::pb::event::Event as Arm;
use super::wkt;
use super::node::{Node as J, Obj};
use super::events::event_table;
use std::borrow::Cow;

// ---------------------------------------------------------------------------------
// Field helpers. `null` counts as absent for every optional field (§5.1.1).
// ---------------------------------------------------------------------------------

#[inline]
fn present<'o, 'a>(o: &'o Obj<'a>, k: &str) -> Option<&'o J<'a>> {
    match o.get(k) {
        None | Some(J::Null) => None,
        Some(v) => Some(v),
    }
}

/// JS `String(x)` for the scalars a best-effort encoder may meet in a string field.
fn scalar_string(v: &J) -> Option<String> {
    match v {
        J::String(s) => Some(s.to_string()),
        J::Number(n) => Some(n.text()),
        J::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Implicit-presence string: `""` when absent (then not written).
#[inline]
fn req_str(o: &Obj, k: &str) -> String {
    present(o, k).and_then(scalar_string).unwrap_or_default()
}

/// `optional string`: written whenever present, even `""`.
#[inline]
fn opt_str(o: &Obj, k: &str) -> Option<String> {
    present(o, k).and_then(scalar_string)
}

fn opt_bool(o: &Obj, k: &str) -> Option<bool> {
    match present(o, k) {
        Some(J::Bool(b)) => Some(*b),
        _ => None,
    }
}

/// An int64 field. JS turns the number into a BigInt, which throws for fractions.
///
/// Past ±(2^53 − 1) the reference's encoder clamps or writes a value its decoder (and ours)
/// then refuses as unsafe for a JS number: such a value is refused here, so that every frame
/// written decodes.
fn opt_int(o: &Obj, k: &str) -> Result<Option<i64>> {
    let v = match present(o, k) {
        None => return Ok(None),
        Some(v) => v,
    };
    let f = match v {
        J::Number(n) => {
            if let Some(i) = n.i64() {
                return safe_int(k, i, || i.to_string());
            }
            let text = n.text();
            if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                return Err(unsafe_int(k, &text)); // an integer past i64 (and maybe past f64)
            }
            n.f64()
        }
        J::Bool(b) => return Ok(Some(*b as i64)),
        J::String(s) => s.trim().parse::<f64>().unwrap_or(f64::NAN),
        _ => return Err(Error::Encode(format!("`{k}` must be an integer"))),
    };
    // A non-finite double (a Python float, or `1e400` read as infinity) has no JSON
    // form: the reference's JSON carries `null` there, i.e. no value.
    if matches!(v, J::Number(_)) && !f.is_finite() {
        return Ok(None);
    }
    if !f.is_finite() || f.fract() != 0.0 {
        return Err(Error::Encode(format!("`{k}`: the number {f} is not an integer")));
    }
    safe_int(k, f as i64, || match v {
        J::Number(n) => n.text(),
        _ => f.to_string(),
    })
}

fn safe_int(k: &str, v: i64, text: impl FnOnce() -> String) -> Result<Option<i64>> {
    if v.unsigned_abs() > super::MAX_SAFE_INT as u64 {
        return Err(unsafe_int(k, &text()));
    }
    Ok(Some(v))
}

fn unsafe_int(k: &str, text: &str) -> Error {
    let text = if text.len() > 40 { format!("a {}-digit number", text.len()) } else { text.to_string() };
    Error::Encode(format!("`{k}`: {text} is outside the integers a protobuf frame carries (at most 9007199254740991 either way)"))
}

/// Optional any-JSON field: `null` is dropped.
#[inline]
fn opt_value(o: &Obj, k: &str) -> Option<wkt::Value> {
    present(o, k).map(wkt::Value::from_node)
}

/// Required any-JSON field (RAW event, CUSTOM value, snapshot, patch value): `null`
/// is a real value and travels as `null_value`.
#[inline]
fn keep_null_value(o: &Obj, k: &str) -> Option<wkt::Value> {
    o.get(k).map(wkt::Value::from_node)
}

/// Struct-typed metadata: only a non-null, non-array object is written.
#[inline]
fn opt_struct(o: &Obj, k: &str) -> Option<wkt::Struct> {
    match o.get(k) {
        Some(J::Object(m)) => Some(wkt::Struct::from_obj(m)),
        _ => None,
    }
}

fn objects<'o, 'a>(o: &'o Obj<'a>, k: &str) -> impl Iterator<Item = &'o Obj<'a>> {
    let arr: &[J] = match o.get(k) {
        Some(J::Array(a)) => a,
        _ => &[],
    };
    arr.iter().filter_map(J::as_object)
}

fn strings(v: Option<&J>) -> Vec<String> {
    match v {
        Some(J::Array(a)) => a.iter().map(|e| scalar_string(e).unwrap_or_default()).collect(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------
// Nested structures
// ---------------------------------------------------------------------------------

fn base(o: &Obj, ty: i32) -> Result<Option<pb::BaseEvent>> {
    Ok(Some(pb::BaseEvent {
        r#type: ty,
        timestamp: opt_int(o, "timestamp")?,
        raw_event: opt_value(o, "rawEvent"),
        metadata: opt_struct(o, "metadata"),
    }))
}

fn patch_ops(o: &Obj, k: &str) -> Result<Vec<pb::JsonPatchOperation>> {
    let arr = match o.get(k) {
        Some(J::Array(a)) => a,
        _ => return Err(Error::Encode(format!("`{k}` is not an array of JSON Patch operations"))),
    };
    let mut out = Vec::with_capacity(arr.len());
    for (i, op) in arr.iter().enumerate() {
        let op = op
            .as_object()
            .ok_or_else(|| Error::Encode(format!("`{k}[{i}]` is not an object")))?;
        let name = match op.get("op") {
            Some(J::String(s)) => s,
            _ => return Err(Error::Encode(format!("`{k}[{i}].op` is not a string"))),
        };
        // The reference upper-cases the name before the enum lookup ("Add" works).
        let code = match name.to_ascii_uppercase().as_str() {
            "ADD" => 0,
            "REMOVE" => 1,
            "REPLACE" => 2,
            "MOVE" => 3,
            "COPY" => 4,
            "TEST" => 5,
            _ => return Err(Error::Encode(format!("`{k}[{i}].op`: unknown operation {name:?}"))),
        };
        out.push(pb::JsonPatchOperation {
            op: code,
            path: req_str(op, "path"),
            from: opt_str(op, "from"),
            value: keep_null_value(op, "value"),
        });
    }
    Ok(out)
}

fn source(v: Option<&J>) -> Option<pb::InputContentSource> {
    use pb::input_content_source::Source;
    let o = v?.as_object()?;
    let s = match o.get("type").and_then(J::as_str)? {
        "data" => Source::Data(pb::InputContentDataSource {
            value: req_str(o, "value"),
            mime_type: req_str(o, "mimeType"),
        }),
        "url" => Source::Url(pb::InputContentUrlSource {
            value: req_str(o, "value"),
            mime_type: opt_str(o, "mimeType"),
        }),
        "file" => Source::File(pb::InputContentFileSource {
            value: req_str(o, "value"),
            provider: opt_str(o, "provider"),
            mime_type: opt_str(o, "mimeType"),
        }),
        _ => return None,
    };
    Some(pb::InputContentSource { source: Some(s) })
}

/// One content part (§5.1.10); `None` = dropped (the reference warns).
fn part(v: &J) -> Option<pb::InputContent> {
    use pb::input_content::Part;
    let o = v.as_object()?;
    let p = match o.get("type").and_then(J::as_str)? {
        "text" => Part::Text(pb::TextInputPart {
            text: req_str(o, "text"),
            id: opt_str(o, "id"),
            metadata: opt_value(o, "metadata"),
        }),
        "image" => Part::Image(pb::ImageInputPart {
            source: source(present(o, "source")),
            metadata: opt_value(o, "metadata"),
            id: opt_str(o, "id"),
        }),
        "audio" => Part::Audio(pb::AudioInputPart {
            source: source(present(o, "source")),
            metadata: opt_value(o, "metadata"),
            id: opt_str(o, "id"),
        }),
        "video" => Part::Video(pb::VideoInputPart {
            source: source(present(o, "source")),
            metadata: opt_value(o, "metadata"),
            id: opt_str(o, "id"),
        }),
        "document" => Part::Document(pb::DocumentInputPart {
            source: source(present(o, "source")),
            metadata: opt_value(o, "metadata"),
            id: opt_str(o, "id"),
        }),
        "binary" => return legacy_binary(o),
        _ => return None,
    };
    Some(pb::InputContent { part: Some(p) })
}

/// The pre-1.0 `binary` part becomes a `document` part, as the reference maps it:
/// source from `data`, else `url`, else the `id` used as a URL; the id and filename
/// move into `metadata` next to `legacyBinary: true`. Nothing maps it back on decode.
fn legacy_binary(o: &Obj) -> Option<pb::InputContent> {
    use pb::input_content_source::Source;
    let mime = opt_str(o, "mimeType");
    let id = opt_str(o, "id");
    let src = if let Some(data) = opt_str(o, "data") {
        Source::Data(pb::InputContentDataSource { value: data, mime_type: mime.unwrap_or_default() })
    } else if let Some(url) = opt_str(o, "url") {
        Source::Url(pb::InputContentUrlSource { value: url, mime_type: mime })
    } else if let Some(id) = &id {
        Source::Url(pb::InputContentUrlSource { value: id.clone(), mime_type: mime })
    } else {
        return None;
    };
    let mut meta = Obj::default();
    meta.0.push((Cow::Borrowed("legacyBinary"), J::Bool(true)));
    if let Some(f) = opt_str(o, "filename") {
        meta.0.push((Cow::Borrowed("filename"), J::String(Cow::Owned(f))));
    }
    if let Some(id) = id {
        meta.0.push((Cow::Borrowed("id"), J::String(Cow::Owned(id))));
    }
    Some(pb::InputContent {
        part: Some(pb::input_content::Part::Document(pb::DocumentInputPart {
            source: Some(pb::InputContentSource { source: Some(src) }),
            metadata: Some(wkt::Value::from_node(&J::Object(meta))),
            id: None,
        })),
    })
}

fn parts(a: &[J]) -> Vec<pb::InputContent> {
    a.iter().filter_map(part).collect()
}

fn tool_call(o: &Obj) -> pb::ToolCall {
    pb::ToolCall {
        id: req_str(o, "id"),
        r#type: req_str(o, "type"),
        function: o.get("function").and_then(J::as_object).map(|f| pb::tool_call::Function {
            name: req_str(f, "name"),
            arguments: req_str(f, "arguments"),
        }),
        metadata: opt_struct(o, "metadata"),
        encrypted_value: opt_str(o, "encryptedValue"),
    }
}

/// One message of MESSAGES_SNAPSHOT / RUN_STARTED input (§5.1.9). No role filtering.
fn message(o: &Obj) -> pb::Message {
    let role = req_str(o, "role");
    let mut m = pb::Message {
        id: req_str(o, "id"),
        name: opt_str(o, "name"),
        tool_calls: objects(o, "toolCalls").map(tool_call).collect(),
        tool_call_id: opt_str(o, "toolCallId"),
        error: opt_str(o, "error"),
        metadata: opt_struct(o, "metadata"),
        subagent_run_id: opt_str(o, "subagentRunId"),
        encrypted_value: opt_str(o, "encryptedValue"),
        activity_type: opt_str(o, "activityType"),
        ..Default::default()
    };
    match present(o, "content") {
        Some(J::Array(a)) => m.content_parts = parts(a),
        Some(c) if role == "activity" => {
            m.activity_content = Some(match c {
                J::Object(map) => wkt::Struct::from_obj(map),
                _ => wkt::Struct::default(),
            })
        }
        Some(J::String(s)) => m.content = Some(s.to_string()),
        _ => {}
    }
    m.role = role;
    m
}

fn usage(o: &Obj, k: &str) -> Result<Vec<pb::Usage>> {
    objects(o, k)
        .map(|u| {
            Ok(pb::Usage {
                provider: opt_str(u, "provider"),
                model: opt_str(u, "model"),
                input_tokens: opt_int(u, "inputTokens")?,
                output_tokens: opt_int(u, "outputTokens")?,
                total_tokens: opt_int(u, "totalTokens")?,
                reasoning_tokens: opt_int(u, "reasoningTokens")?,
                cached_input_tokens: opt_int(u, "cachedInputTokens")?,
                cache_write_input_tokens: opt_int(u, "cacheWriteInputTokens")?,
            })
        })
        .collect()
}

fn interrupt(o: &Obj) -> pb::Interrupt {
    pb::Interrupt {
        id: req_str(o, "id"),
        reason: req_str(o, "reason"),
        message: opt_str(o, "message"),
        tool_call_id: opt_str(o, "toolCallId"),
        response_schema: opt_value(o, "responseSchema"),
        expires_at: opt_str(o, "expiresAt"),
        metadata: opt_value(o, "metadata"),
        subagent_run_id: opt_str(o, "subagentRunId"),
    }
}

fn run_input(o: &Obj) -> pb::RunAgentInput {
    pb::RunAgentInput {
        thread_id: req_str(o, "threadId"),
        run_id: req_str(o, "runId"),
        parent_run_id: opt_str(o, "parentRunId"),
        state: opt_value(o, "state"),
        messages: objects(o, "messages").map(message).collect(),
        tools: objects(o, "tools")
            .map(|t| pb::Tool {
                name: req_str(t, "name"),
                description: req_str(t, "description"),
                parameters: opt_value(t, "parameters"),
                metadata: opt_struct(t, "metadata"),
            })
            .collect(),
        context: objects(o, "context")
            .map(|c| pb::Context { description: req_str(c, "description"), value: req_str(c, "value") })
            .collect(),
        forwarded_props: opt_value(o, "forwardedProps"),
        resume: objects(o, "resume")
            .map(|r| pb::ResumeEntry {
                interrupt_id: req_str(r, "interruptId"),
                status: req_str(r, "status"),
                payload: opt_value(r, "payload"),
                metadata: opt_struct(r, "metadata"),
            })
            .collect(),
        protocol_version: opt_str(o, "protocolVersion"),
    }
}

/// `outcome.type` when `outcome` (member `k`) is an object with a string `type`.
fn outcome<'o, 'a>(o: &'o Obj<'a>, k: &str) -> Option<(&'o str, &'o Obj<'a>)> {
    let oc = o.get(k)?.as_object()?;
    Some((oc.get("type")?.as_str()?, oc))
}

/// MESSAGES_SNAPSHOT's `messages`: an array (of which the objects are read).
fn messages(o: &Obj, k: &str) -> Result<Vec<pb::Message>> {
    if !matches!(o.get(k), Some(J::Array(_))) {
        return Err(Error::Encode(format!("`{k}` is not an array")));
    }
    Ok(objects(o, k).map(message).collect())
}

/// ACTIVITY_SNAPSHOT's `content`: an object; `null` is an error, any other value has
/// nothing usable (an empty object).
fn activity_content(o: &Obj, k: &str) -> Result<Option<wkt::Struct>> {
    Ok(match o.get(k) {
        Some(J::Object(m)) => Some(wkt::Struct::from_obj(m)),
        None => None,
        Some(J::Null) => return Err(Error::Encode(format!("`{k}` is null"))),
        Some(_) => Some(wkt::Struct::default()),
    })
}

// ---------------------------------------------------------------------------------
// The event
// ---------------------------------------------------------------------------------

/// Convert one JSON event into the `Event` envelope.
///
/// Each event's members are read as the event table says. A `type` outside the 31
/// known names gives an envelope with no arm (zero bytes on
/// the wire), exactly like the reference; a non-object or a missing/non-string `type`
/// is an error (the reference throws a TypeError).
pub fn json_to_event(v: &J) -> Result<pb::Event> {
    let o = v.as_object().ok_or_else(|| Error::Encode("the event is not a JSON object".into()))?;
    let ty = match o.get("type") {
        Some(J::String(s)) => s.as_ref(),
        _ => return Err(Error::Encode("the event has no string `type`".into())),
    };
    // Each member read by its kind (the fields a kind writes together with others are
    // set after the rest: `after!`).
    macro_rules! take {
        (Str, $k:literal) => {
            req_str(o, $k)
        };
        (Opt, $k:literal) => {
            opt_str(o, $k)
        };
        (Value, $k:literal) => {
            opt_value(o, $k)
        };
        (Keep, $k:literal) => {
            keep_null_value(o, $k)
        };
        (Bool, $k:literal) => {
            opt_bool(o, $k)
        };
        (ActivityContent, $k:literal) => {
            activity_content(o, $k)?
        };
        (Patch, $k:literal) => {
            patch_ops(o, $k)?
        };
        (Messages, $k:literal) => {
            messages(o, $k)?
        };
        (Input, $k:literal) => {
            o.get($k).and_then(J::as_object).map(run_input)
        };
        (Usage, $k:literal) => {
            usage(o, $k)?
        };
        ($kind:ident, $k:literal) => {
            Default::default()
        };
    }
    macro_rules! after {
        (ToolContent, $e:ident, $k:literal) => {
            match present(o, $k) {
                Some(J::Array(a)) => $e.content_parts = parts(a),
                Some(c) => $e.content = scalar_string(c),
                None => {}
            }
        };
        // The outcome object is flattened; top-level interrupts/pendingToolCallIds keys
        // are ignored (the reference resets both lists first).
        (RunOutcome, $e:ident, $k:literal) => {
            if let Some((t, oc)) = outcome(o, $k) {
                match t {
                    "success" => $e.pending_tool_call_ids = strings(oc.get("pendingToolCallIds")),
                    "interrupt" => $e.interrupts = objects(oc, "interrupts").map(interrupt).collect(),
                    _ => {}
                }
                $e.outcome = t.to_string();
            }
        };
        (SubagentOutcome, $e:ident, $k:literal) => {
            if let Some((t, oc)) = outcome(o, $k) {
                if t == "suspended" {
                    $e.interrupt_ids = strings(oc.get("interruptIds"));
                }
                $e.outcome = t.to_string();
            }
        };
        ($kind:ident, $e:ident, $k:literal) => {};
    }
    macro_rules! arms {
        (() $( $arm:literal $en:literal $ty:literal $v:ident($m:ident) $path:ident {
            $( $n:literal $f:ident $k:literal $kind:ident ),* $(,)?
        } )*) => {
            match ty {
                $( $ty => {
                    let base_event = base(o, $en)?;
                    #[allow(unused_mut, clippy::needless_update)]
                    let mut e = pb::$m { base_event, $( $f: take!($kind, $k), )* ..Default::default() };
                    $( after!($kind, e, $k); )*
                    Arm::$v(e)
                } )*
                // A type outside the table: an envelope with no arm.
                _ => return Ok(pb::Event { event: None }),
            }
        };
    }
    let arm = event_table!(arms);
    Ok(pb::Event { event: Some(arm) })
}
