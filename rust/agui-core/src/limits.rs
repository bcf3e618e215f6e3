//! Limits of the project's own, the same whatever interpreter drives the core.
//!
//! Every decoder, encoder and patch engine that recurses into JSON values bounds the
//! nesting it accepts by a depth limit: configurable per call, defaulting to
//! [`DEFAULT_MAX_DEPTH`]. Without it, the limit would be the interpreter's recursion
//! limit (different on CPython 3.12 and 3.13) or the Rust stack.

/// Maximum nesting of arrays and objects (a scalar at the top is depth 0, `[]` is 1).
pub const DEFAULT_MAX_DEPTH: usize = 512;
