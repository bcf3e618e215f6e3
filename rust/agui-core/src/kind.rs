//! What kind of failure an error is. The core says which kind; each binding maps the
//! kinds to exception types of its own language (the Python binding: the classes of
//! `agui_fast.errors` and a few builtins), in one place.

/// The kind of a failure, across the core's error types ([`crate::proto::Error`],
/// [`crate::log::LogError`], [`crate::patch::PatchError`], [`crate::stream::StreamError`])
/// and the Arrow reader's issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The input is not valid JSON, or an event is not a JSON object.
    InvalidJson,
    /// An event is valid JSON but not a valid event of the schema (a member of the wrong
    /// type, an unknown event type).
    EventValidation,
    /// An event cannot be encoded.
    Encode,
    /// A protobuf message is not a valid event.
    ProtobufDecode,
    /// A protobuf frame's length prefix announced more than the limit.
    FrameTooLarge,
    /// An SSE event grew past the buffer limit.
    BufferLimit,
    /// The input ended inside a frame, or compressed data is corrupt or cut short.
    Truncated,
    /// A log is neither SSE nor length-prefixed protobuf.
    UnknownFormat,
    /// A call would collect more errors than its limit.
    TooManyErrors,
    /// The allocator refused a buffer the input needs.
    OutOfMemory,
    /// Reading or writing a file or stream failed.
    Io,
    /// A file to read does not exist.
    NotFound,
    /// The reader of an output went away.
    BrokenPipe,
    /// A stream stage (chunk expansion, the reducer, the legacy layer) rejected an event.
    Stream,
    /// Sequence verification rejected an event.
    Verification,
    /// A JSON Patch, or one of its operations, is malformed or cannot apply.
    Patch,
    /// A JSON Pointer is malformed or does not resolve.
    Pointer,
    /// A JSON Patch `test` operation did not match.
    PatchTestFailed,
    /// A JSON Patch would build more than its memory budget.
    PatchLimit,
}
