//! agui-core: the pure Rust core of agui-fast. No Python here: every module is
//! tested with `cargo test` and driven from Python by the `agui-py` binding crate.
//!
//! One concern per module:
//! - [`sse`]: Server-Sent Events framing and incremental parsing;
//! - [`proto`]: the AG-UI 1.0 protobuf wire format and its JSON mapping;
//! - [`patch`]: RFC 6902 JSON Patch / RFC 6901 JSON Pointer;
//! - [`copy`]: the one short copy (a few bytes appended with a copy of constant size);
//! - [`json`]: JSON text output matching the Python reference (pydantic) byte for byte;
//! - [`sink`]: the output side of every walk over JSON-shaped data (JSON text,
//!   MessagePack, the protobuf encoder's tree): one trait, one walk per input;
//! - [`kind`]: the kinds of failure every error reports (bindings map them to exception
//!   types);
//! - [`limits`]: the project's own limits (nesting depth), the same on every interpreter;
//! - [`stream`]: the reference client's stream semantics (chunk expansion, verification, replay into messages and state, compaction, 0.x conversion);
//! - [`log`]: reading recorded logs (SSE or protobuf, gzip or not) event by event;
//! - [`construct`]: the routing decision of the Structs' validating construction;
//! - [`decoder`]: the stream decoders' work around their Python calls (framing into
//!   batches and parts, the 0.x conversion of items, the `raw` modes, once-only warnings);
//! - [`pipeline`]: a producer thread ahead of the calling thread (whole-input calls on two cores).

#![forbid(unsafe_code)]

pub mod construct;
pub mod copy;
pub mod decoder;
pub mod json;
pub mod kind;
pub mod limits;
pub mod log;
pub mod patch;
pub mod pipeline;
pub mod proto;
pub mod sink;
pub mod sse;
pub mod stream;
pub mod text;
// The tests' random generator, one for this crate's tests, its integration tests and the
// arrow crate's: hidden, not an API.
#[doc(hidden)]
pub mod test_rng;
