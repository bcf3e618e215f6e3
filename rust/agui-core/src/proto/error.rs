//! Errors of the protobuf codec. No panics on bad input: everything ends up here.

use std::fmt;

use crate::kind::Kind;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The input is not valid JSON (JSON-level entry points only).
    InvalidJson(String),
    /// The event JSON cannot be encoded (the reference throws in the same places).
    Encode(String),
    /// A message is not a valid `ag_ui.Event` (reference: `Invalid event …`).
    Decode(String),
    /// The envelope only carries arms this schema does not know: an event from a later
    /// protocol version. Streams skip such frames with a warning, like the reference.
    UnknownEventType,
    /// A frame of a stream failed to decode.
    Frame { frame_index: usize, offset: u64, source: Box<Error> },
    /// A length prefix announced more than the configured maximum (prefix included).
    FrameTooLarge { frame_index: usize, offset: u64, length: u64, max_frame_size: usize },
    /// The stream ended inside a frame or a length prefix.
    Truncated { frame_index: usize, offset: u64, trailing: usize },
    /// A chunk could not be buffered (the allocator refused `bytes` more): the stream
    /// cannot go on. Bindings raise their out-of-memory error, never abort.
    OutOfMemory { bytes: usize },
}

impl Error {
    /// The kind of this error (of its source, for a frame's).
    pub fn kind(&self) -> Kind {
        match self {
            Error::InvalidJson(_) => Kind::InvalidJson,
            Error::Encode(_) => Kind::Encode,
            Error::Decode(_) | Error::UnknownEventType => Kind::ProtobufDecode,
            Error::Frame { source, .. } => source.kind(),
            Error::FrameTooLarge { .. } => Kind::FrameTooLarge,
            Error::Truncated { .. } => Kind::Truncated,
            Error::OutOfMemory { .. } => Kind::OutOfMemory,
        }
    }

    /// (frame index, byte offset of the frame start) where known.
    pub fn position(&self) -> (Option<usize>, Option<u64>) {
        match self {
            Error::Frame { frame_index, offset, .. }
            | Error::FrameTooLarge { frame_index, offset, .. }
            | Error::Truncated { frame_index, offset, .. } => (Some(*frame_index), Some(*offset)),
            _ => (None, None),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidJson(m) => write!(f, "invalid JSON: {m}"),
            Error::Encode(m) => write!(f, "cannot encode event as protobuf: {m}"),
            Error::Decode(m) => write!(f, "{m}"),
            Error::UnknownEventType => {
                write!(f, "Unknown event type: the envelope only has arms from a later protocol version")
            }
            Error::Frame { frame_index, offset, source } => write!(
                f,
                "Failed to decode protocol buffer message (frame {frame_index} at byte offset {offset}): {source}"
            ),
            Error::FrameTooLarge { frame_index, offset, length, max_frame_size } => write!(
                f,
                "Protobuf message size exceeded maximum limit: frame {frame_index} at byte offset {offset} \
                 announces {length} bytes (4 + {length} > {max_frame_size})"
            ),
            Error::Truncated { frame_index, offset, trailing } => write!(
                f,
                "The binary stream ended mid-frame: {trailing} trailing bytes (frame {frame_index} at byte \
                 offset {offset}) could not be read as a complete message"
            ),
            Error::OutOfMemory { bytes } => write!(f, "cannot buffer {bytes} more bytes of the stream"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
