//! Limits of the project's own, the same whatever interpreter drives the core.
//!
//! Every decoder, encoder and patch engine that recurses into JSON values bounds the
//! nesting it accepts by a depth limit: configurable per call, defaulting to
//! [`DEFAULT_MAX_DEPTH`]. Without it, the limit would be the interpreter's recursion
//! limit (different on CPython 3.12 and 3.13) or the Rust stack.

use std::sync::atomic::{AtomicBool, Ordering};

/// Maximum nesting of arrays and objects (a scalar at the top is depth 0, `[]` is 1).
pub const DEFAULT_MAX_DEPTH: usize = 512;

/// Most memory one JSON Patch application may build, by default (the values it adds and
/// copies, counted as [`crate::patch::engine::Budget`] counts them: about the bytes they
/// take). Bounds what a small patch can make of a document: each `copy` of the root
/// doubles it.
pub const DEFAULT_MAX_PATCH_BYTES: usize = 128 << 20;

/// The most warnings a replay keeps by default (about 25 MB of them in Python).
pub const DEFAULT_MAX_WARNINGS: usize = 100_000;

/// Largest depth limit an API accepts. Values are parsed, converted and dropped
/// recursively, each nesting level through [`nest`], so any thread's stack takes the cap.
pub const MAX_DEPTH_CAP: usize = 10_000;

/// Stack a nesting level of a recursive walk may use, with what it calls, before the next
/// level's [`nest`]: a level takes a few hundred bytes in an optimised build and several
/// KiB unoptimised or under a sanitizer.
pub const STACK_RED_ZONE: usize = if cfg!(any(debug_assertions, feature = "sanitize")) { 256 << 10 } else { 64 << 10 };

/// Size of a stack segment [`nest`] moves onto (address space: pages are touched as used).
pub const STACK_SEGMENT: usize = 2 << 20;

/// Whether the host driving the core (an interpreter whose code [`nest`] and [`deep`] may
/// run) checks its own recursion by where the stack pointer lies in its thread's stack, as
/// CPython does from 3.14 on. Such code must run on the thread's own stack: on a new
/// segment its check sees the pointer past the thread's limit and ends the process
/// ("Unrecoverable stack overflow"). Set once by the binding when it is loaded.
static HOST_CHECKS_STACK: AtomicBool = AtomicBool::new(false);

/// Says whether the host checks its recursion by the stack pointer
/// ([`HOST_CHECKS_STACK`]): then [`nest`] and [`deep`] run on the current stack, and the
/// host's own checks guard its recursion (a `RecursionError` in CPython).
pub fn set_host_checks_stack(on: bool) {
    HOST_CHECKS_STACK.store(on, Ordering::Relaxed);
}

/// Whether [`set_host_checks_stack`] said so.
pub fn host_checks_stack() -> bool {
    HOST_CHECKS_STACK.load(Ordering::Relaxed)
}

/// One nesting level of a recursive walk over a value: `f` runs on the current stack while
/// at least [`STACK_RED_ZONE`] of it is left, else on a new segment of [`STACK_SEGMENT`]
/// (`stacker`), freed when `f` returns. A thread's stack size (128 KiB on musl, 1 MiB for
/// some Python threads) then never bounds the depth; the check is a compare of the stack
/// pointer with a thread-local limit, and it is made on containers only. (Not with a host
/// that checks its stack itself: [`set_host_checks_stack`].)
#[inline(always)]
pub fn nest<R>(f: impl FnOnce() -> R) -> R {
    if host_checks_stack() {
        return f();
    }
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, f)
}

/// Stack a nesting level may take in the recursions that do not go through [`nest`]:
/// serde_json dropping a `Value`, msgspec decoding, CPython freeing a nested list (each
/// under 400 bytes a level, optimised).
pub const STACK_PER_LEVEL: usize = if cfg!(any(debug_assertions, feature = "sanitize")) { 16 << 10 } else { 1 << 10 };

/// A call over values nested at most `max_depth` levels: run on the current stack when it
/// has [`STACK_PER_LEVEL`] a level left above the red zone, else on a new segment that
/// size (one check a call, a segment a call only on small stacks or for a large
/// `max_depth`). For the code between the levels that [`nest`] does not reach.
#[inline]
pub fn deep<R>(max_depth: usize, f: impl FnOnce() -> R) -> R {
    if host_checks_stack() {
        return f();
    }
    let need = stack_for(max_depth);
    stacker::maybe_grow(need, need, f)
}

fn stack_for(levels: usize) -> usize {
    STACK_RED_ZONE.saturating_add(levels.saturating_mul(STACK_PER_LEVEL))
}

/// Whether the current stack takes `levels` nesting levels without [`nest`].
#[inline]
pub fn stack_takes(levels: usize) -> bool {
    stacker::remaining_stack().is_some_and(|left| left >= stack_for(levels))
}

/// `seed` read from `de` (serde_json's recursion limit off: the text was scanned to nest
/// at most `max_depth` levels, or the seed bounds its own nesting): straight when the stack
/// takes that many levels, else through `serde_stacker`, which gives each level the
/// stack it needs as [`nest`] does.
pub(crate) fn deserialize_nested<'de, R: serde_json::de::Read<'de>, T: serde::de::DeserializeSeed<'de>>(
    de: &mut serde_json::Deserializer<R>,
    seed: T,
    max_depth: usize,
) -> Result<T::Value, serde_json::Error> {
    de.disable_recursion_limit();
    if stack_takes(max_depth) {
        seed.deserialize(de)
    } else {
        seed.deserialize(serde_stacker::Deserializer { de, red_zone: STACK_RED_ZONE, stack_size: STACK_SEGMENT })
    }
}

/// A `max_depth=` argument checked against [`MAX_DEPTH_CAP`] (the one check of every API
/// that takes one); the error is the message to raise.
pub fn check_max_depth(max_depth: usize) -> Result<usize, String> {
    if max_depth > MAX_DEPTH_CAP {
        return Err(format!("max_depth must be at most {MAX_DEPTH_CAP}"));
    }
    Ok(max_depth)
}

/// True when the JSON text nests arrays and objects deeper than `max_depth` (brackets
/// inside strings do not count). A cheap pre-check for readers whose parser has no
/// limit of its own: text with at most `max_depth` opening brackets is not scanned.
pub fn exceeds_depth(json: &[u8], max_depth: usize) -> bool {
    // (a level takes a byte: most events are shorter than the limit, and are not read)
    if json.len() <= max_depth || json.iter().filter(|&&b| b == b'[' || b == b'{').count() <= max_depth {
        return false;
    }
    deepest(json, max_depth) > max_depth
}

/// How deep JSON text nests arrays and objects (brackets inside strings do not count).
pub fn depth_of(json: &[u8]) -> usize {
    deepest(json, usize::MAX)
}

/// The deepest nesting of arrays and objects in JSON text, read until it passes `stop`.
fn deepest(json: &[u8], stop: usize) -> usize {
    let (mut depth, mut deepest, mut in_str, mut esc) = (0usize, 0usize, false, false);
    for &b in json {
        if in_str {
            match b {
                _ if esc => esc = false,
                b'\\' => esc = true,
                b'"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > stop {
                    break;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Parse JSON text into a `serde_json::Value` nesting at most `max_depth` levels: the one
/// depth-checked parse of the core (serde_json's own recursion limit, 128, is replaced by
/// ours after the scan, so the Rust stack is never at risk).
pub fn parse_value(text: &[u8], max_depth: usize) -> Result<serde_json::Value, ParseError> {
    if exceeds_depth(text, max_depth) {
        return Err(ParseError::TooDeep(max_depth));
    }
    parse_seed(serde_json::Deserializer::from_slice(text), std::marker::PhantomData::<serde_json::Value>, max_depth)
}

/// [`parse_value`] of text known to be UTF-8 (its strings are not checked again).
pub fn parse_value_str(text: &str, max_depth: usize) -> Result<serde_json::Value, ParseError> {
    if exceeds_depth(text.as_bytes(), max_depth) {
        return Err(ParseError::TooDeep(max_depth));
    }
    parse_seed(serde_json::Deserializer::from_str(text), std::marker::PhantomData::<serde_json::Value>, max_depth)
}

/// One whole JSON text read by `seed` nesting at most `max_depth` levels (see
/// [`deserialize_nested`]).
pub(crate) fn parse_seed<'de, R: serde_json::de::Read<'de>, T: serde::de::DeserializeSeed<'de>>(
    mut de: serde_json::Deserializer<R>,
    seed: T,
    max_depth: usize,
) -> Result<T::Value, ParseError> {
    let v = deserialize_nested(&mut de, seed, max_depth).map_err(ParseError::Json)?;
    de.end().map_err(ParseError::Json)?;
    Ok(v)
}

/// Why [`parse_value`] failed.
#[derive(Debug)]
pub enum ParseError {
    /// Nested deeper than the limit (the limit is given).
    TooDeep(usize),
    /// Not valid JSON.
    Json(serde_json::Error),
}

/// What every reader says of a JSON text that ends early: msgspec's words, so that the
/// typed decoders, `replay_log` and `to_arrow` word a truncated log the same.
pub const TRUNCATED: &str = "Input data was truncated";

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::TooDeep(n) => write!(f, "nested deeper than {n} levels"),
            ParseError::Json(e) if e.is_eof() => f.write_str(TRUNCATED),
            ParseError::Json(e) => e.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_depth_argument() {
        assert_eq!(check_max_depth(MAX_DEPTH_CAP), Ok(MAX_DEPTH_CAP));
        assert_eq!(check_max_depth(0), Ok(0));
        assert_eq!(check_max_depth(MAX_DEPTH_CAP + 1), Err(format!("max_depth must be at most {MAX_DEPTH_CAP}")));
    }

    #[test]
    fn depth_at_the_boundary() {
        let nest = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert!(!exceeds_depth(nest(DEFAULT_MAX_DEPTH).as_bytes(), DEFAULT_MAX_DEPTH));
        assert!(exceeds_depth(nest(DEFAULT_MAX_DEPTH + 1).as_bytes(), DEFAULT_MAX_DEPTH));
        assert!(!exceeds_depth(b"0", 0));
        assert_eq!(depth_of(nest(DEFAULT_MAX_DEPTH).as_bytes()), DEFAULT_MAX_DEPTH);
        assert_eq!(depth_of(b"[{\"a\":\"[[[\\\"[\"},[]]"), 2);
        assert!(exceeds_depth(b"{}", 0));
        // Brackets in strings (escaped quotes too) do not count.
        let s = format!("{{\"a\":\"\\\"{}\"}}", "[".repeat(40));
        assert!(!exceeds_depth(s.as_bytes(), 1));
        assert!(exceeds_depth(br#"{"a":[{"b":1}]}"#, 2));
        assert!(!exceeds_depth(br#"{"a":[{"b":1}]}"#, 3));
        // Texts as long as the limit, shorter, longer, unbalanced: the depth decides.
        for text in ["[", "[[", "[]", "{}", "[[[", "[{}]", "[[]]", "{\"a\":[1]}", "[[[[[[", "\"[[[[\"", "[\"[\"]"] {
            for limit in 0..8 {
                assert_eq!(exceeds_depth(text.as_bytes(), limit), depth_of(text.as_bytes()) > limit, "{text} {limit}");
            }
        }
    }
}
