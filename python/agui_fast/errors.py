"""The exception types of agui-fast.

Every error caused by bad input is one of these classes, and all of them derive from
``ValueError`` (through :class:`AguiError`), so a caller can catch one thing. The Rust
extension raises these same classes (it looks them up here), so this module is the one
source of truth for the hierarchy.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

__all__ = [
    "AguiError",
    "DecodeError",
    "InvalidJsonError",
    "EventValidationError",
    "BufferLimitError",
    "FrameTooLargeError",
    "TruncatedStreamError",
    "ProtobufDecodeError",
    "EncodeError",
    "JsonPatchError",
    "JsonPatchTestFailed",
    "JsonPointerError",
]


class AguiError(ValueError):
    """Base class of every agui-fast error caused by bad input."""


class DecodeError(AguiError):
    """A stream, frame or event could not be decoded.

    Attributes (``None`` when not applicable):
      frame_index: 0-based index of the offending frame in the stream;
      offset: byte offset in the stream where that frame starts (or where the problem is);
      field: JSON path of the offending field, e.g. ``$.messages[0].role``;
      events: every event the failing call decoded, in stream order -- also those after
        the bad frames (see "Errors" in docs/sse.md: nothing is lost, nothing is queued);
      errors: every error of that call, this one first (one per bad frame).
    """

    def __init__(
        self,
        message: str,
        *,
        frame_index: Optional[int] = None,
        offset: Optional[int] = None,
        field: Optional[str] = None,
        events: Optional[List[Any]] = None,
        errors: Optional[List["DecodeError"]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.frame_index = frame_index
        self.offset = offset
        self.field = field
        self.events: List[Any] = [] if events is None else events
        self._errors = errors

    @property
    def errors(self) -> List["DecodeError"]:
        # Computed when alone: a stored [self] would make every error a reference
        # cycle, left for the cyclic GC (measurable on floods of bad frames).
        return [self] if self._errors is None else self._errors

    @errors.setter
    def errors(self, value: List["DecodeError"]) -> None:
        self._errors = value

    def __reduce__(self) -> Tuple[Any, ...]:  # keep the keyword attributes through pickling
        others = [e for e in self.errors if e is not self]
        return (
            _rebuild,
            (type(self), self.message, self.frame_index, self.offset, self.field, self.events, others),
        )


def _rebuild(
    cls: Any, message: str, frame_index: Any, offset: Any, field: Any, events: Any, others: Any = ()
) -> "DecodeError":
    err = cls(message, frame_index=frame_index, offset=offset, field=field, events=events)
    err.errors = [err, *others]
    return err


class InvalidJsonError(DecodeError):
    """A frame's payload is not valid JSON (or not valid UTF-8)."""


class EventValidationError(DecodeError):
    """A frame's JSON is not a valid AG-UI 1.0 event; ``field`` names the offending field."""


class BufferLimitError(DecodeError):
    """A configured size limit (SSE buffer, protobuf frame) was exceeded."""


class FrameTooLargeError(BufferLimitError):
    """A protobuf length prefix announced a frame larger than the configured maximum."""


class TruncatedStreamError(DecodeError):
    """The stream ended inside a frame (or a length prefix)."""


class ProtobufDecodeError(DecodeError):
    """A protobuf frame's message could not be decoded."""


class EncodeError(AguiError):
    """An event could not be encoded (e.g. a string with an unpaired surrogate)."""


class JsonPatchError(AguiError):
    """A JSON Patch could not be applied; the document is left unchanged.

    Attributes: ``index`` (0-based operation index), ``op``, ``path``.
    """

    def __init__(
        self,
        message: str,
        *,
        index: Optional[int] = None,
        op: Optional[str] = None,
        path: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.index = index
        self.op = op
        self.path = path

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_rebuild_patch, (type(self), self.message, self.index, self.op, self.path))


def _rebuild_patch(cls: Any, message: str, index: Any, op: Any, path: Any) -> "JsonPatchError":
    return cls(message, index=index, op=op, path=path)


class JsonPatchTestFailed(JsonPatchError):
    """A ``test`` operation did not match (like ``jsonpatch.JsonPatchTestFailed``)."""


class JsonPointerError(JsonPatchError):
    """An RFC 6901 JSON Pointer is malformed or does not resolve."""
