"""The exception types of agui-fast.

Every error caused by bad input is one of these classes, and all of them derive from
``ValueError`` (through :class:`AguiError`), so a caller can catch one thing. The Rust
extension raises these same classes (it looks them up here), so this module is the one
source of truth for the hierarchy.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "AguiError",
    "DecodeError",
    "InvalidJsonError",
    "EventValidationError",
    "BufferLimitError",
    "LimitError",
    "FrameTooLargeError",
    "TruncatedStreamError",
    "ProtobufDecodeError",
    "EncodeError",
    "EncoderFormatError",
    "RequestBodyError",
    "JsonPatchError",
    "JsonPatchTestFailed",
    "JsonPointerError",
    "JsonPatchLimitError",
    "ResponseError",
    "HttpStatusError",
    "ContentTypeError",
    "IncompleteRunError",
    "RunTimeoutError",
    "AgentRunError",
    "StreamError",
    "VerificationError",
]


class AguiError(ValueError):
    """Base class of every agui-fast error caused by bad input."""

    # Set by agui_fast.stream on the errors its replays raise: the replay up to the error,
    # and (replay_log_files) the log's path; by HttpAgent.run_agent: the run's warnings
    # before the error. Declared for type checkers only.
    replay: Any
    path: Any
    warnings: Any


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


class LimitError(AguiError, MemoryError):
    """A configured resource limit other than a frame's size was exceeded: the memory one
    JSON Patch may build, the errors one call may collect. Also a ``MemoryError``, so code
    that handles running out of memory handles it; each limit is an option of the call."""


class FrameTooLargeError(BufferLimitError):
    """A protobuf length prefix announced a frame larger than the configured maximum."""


class TruncatedStreamError(DecodeError):
    """The stream ended inside a frame (or a length prefix)."""


class ProtobufDecodeError(DecodeError):
    """A protobuf frame's message could not be decoded."""


class EncodeError(AguiError):
    """An event could not be encoded (e.g. a string with an unpaired surrogate)."""


class RequestBodyError(AguiError):
    """An HTTP request's body is not the JSON of the expected type (``agui_fast.asgi.read_input``:
    Starlette and FastAPI answer it with ``422 Unprocessable Entity`` and this message)."""

    status_code = 422


class EncoderFormatError(EncodeError):
    """An ``EventEncoder`` call would write a format other than the one its response is
    labelled with or already written in (SSE or protobuf)."""


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


class JsonPatchLimitError(JsonPatchError, LimitError):
    """A JSON Patch would build more memory than its limit (``max_patch_bytes``: the values
    it adds and copies; a stream's patches also share one allowance for their copies). The
    document is left unchanged. Also a :class:`LimitError` and a ``MemoryError``."""


class ResponseError(AguiError):
    """An agent's HTTP response cannot be read as an AG-UI stream (``agui_fast.client``).

    Attributes: ``status_code``, ``content_type`` (as sent, or ``None``) and ``body`` (the
    first bytes of the response body, at most 1 KiB).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: Optional[int] = None,
        content_type: Optional[str] = None,
        body: bytes = b"",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.content_type = content_type
        self.body = body

    def __reduce__(self):
        return (_rebuild_response, (type(self), self.message, self.status_code, self.content_type, self.body))


def _rebuild_response(cls, message, status_code, content_type, body):
    return cls(message, status_code=status_code, content_type=content_type, body=body)


class HttpStatusError(ResponseError):
    """The agent answered with an HTTP error status (not 2xx)."""


class ContentTypeError(ResponseError):
    """The agent answered with a media type that is neither SSE nor AG-UI protobuf."""


class IncompleteRunError(TruncatedStreamError):
    """The stream ended before its last run was over (no ``RUN_FINISHED`` or ``RUN_ERROR``
    after the last ``RUN_STARTED``), or was cut, or could not be decoded: the run did not
    complete."""


class RunTimeoutError(IncompleteRunError):
    """The run did not finish within the client's ``deadline``."""


class AgentRunError(AguiError):
    """The agent reported ``RUN_ERROR`` (raised by ``HttpAgent.run_agent``).

    Attributes: ``event`` (the ``RunErrorEvent``), ``code``, ``messages``/``state`` as
    applied by the end of the stream, and the run's ``warnings``.
    """

    def __init__(self, event: Any, *, messages: Optional[List[Any]] = None, state: Any = None) -> None:
        code = getattr(event, "code", None)
        text = getattr(event, "message", "")
        super().__init__(f"agent run failed: {text}" + (f" (code {code})" if code else ""))
        self.event = event
        self.code = code
        self.messages = [] if messages is None else messages
        self.state = state
        # The run's warnings (``RunAgentResult.warnings``), set by ``run_agent``.
        self.warnings: List[Any] = []

    def __reduce__(self):
        return (_rebuild_run_error, (type(self), self.event, self.messages, self.state))


def _rebuild_run_error(cls, event, messages, state):
    return cls(event, messages=messages, state=state)


class StreamError(AguiError):
    """The stream semantics (``agui_fast.stream``) rejected an event, as the reference
    client throws: a chunk stream it cannot expand, an event the reducer cannot apply.

    Attributes: ``stage`` (``"chunks"``, ``"verify"``, ``"apply"``, ``"legacy"``), ``rule``
    (verification rule id such as ``"R12"``, else ``None``), ``index`` (0-based position of
    the offending event in the input), ``event_type``, ``ids`` (message / tool call / step /
    subagent ids involved, a tuple) and ``events`` (what the stage produced before the
    error, where that is meaningful; else empty).
    """

    def __init__(
        self,
        message: str,
        *,
        stage: Optional[str] = None,
        rule: Optional[str] = None,
        index: Optional[int] = None,
        event_type: Optional[str] = None,
        ids: Any = (),
        events: Optional[List[Any]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.stage = stage
        self.rule = rule
        self.index = index
        self.event_type = event_type
        self.ids = tuple(ids)
        self.events = [] if events is None else events

    def __reduce__(self):
        return (
            _rebuild_stream,
            (type(self), self.message, self.stage, self.rule, self.index, self.event_type, self.ids, self.events),
        )


def _rebuild_stream(cls, message, stage, rule, index, event_type, ids, events):
    return cls(message, stage=stage, rule=rule, index=index, event_type=event_type, ids=ids, events=events)


class VerificationError(StreamError):
    """An event breaks a rule of the reference ``verifyEvents`` (R01-R31); ``rule`` names
    it, ``index`` and ``ids`` locate it, ``events`` are the events that passed before it."""



# -- construction and model_validate -------------------------------------------------------
# pydantic is optional. When it is installed, a ValidationError is ALSO a
# pydantic_core.ValidationError (so `except pydantic.ValidationError` keeps working around
# construction and model_validate, and frameworks such as FastAPI answer 422). pydantic's
# class can be subclassed, but its instances are only made by its own constructor, so
# instances come from `ValidationError.build`, never from calling the class.
try:
    from pydantic_core import PydanticCustomError as _PydanticCustomError
    from pydantic_core import ValidationError as _PydanticValidationError
except ImportError:  # pragma: no cover - exercised by the no-pydantic test
    _WITH_PYDANTIC = False
    _VALIDATION_BASES: tuple = (EventValidationError,)
else:
    _WITH_PYDANTIC = True
    _VALIDATION_BASES = (_PydanticValidationError, EventValidationError)


class ValidationError(*_VALIDATION_BASES):  # type: ignore[misc]
    """A Struct could not be built (construction, ``model_validate``): ``field`` names the
    offending field (``TextMessageContentEvent.delta``), ``loc`` is the same as a tuple
    (``("delta",)``, pydantic's ``loc``). With pydantic installed it is also a
    ``pydantic.ValidationError`` (``errors()``, ``title``); it is always a ``ValueError``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Called by pydantic's constructor with its own arguments; `build` sets ours.
        if not _WITH_PYDANTIC:
            super().__init__(*args, **kwargs)

    @classmethod
    def build(
        cls, title: str, message: str, *, field: Optional[str] = None, loc: tuple = (), input: Any = None, detail: Optional[str] = None,
        kind: Optional[str] = None, ctx: Optional[Dict[str, Any]] = None,
    ) -> "ValidationError":
        """``message``: the whole text; ``detail``: the same without the location (pydantic's
        ``msg``, which it prints under the ``loc``); ``kind``, ``ctx``: one of pydantic's own
        error types and its context, where ours is one of them."""
        if not _WITH_PYDANTIC:
            exc = cls(message, field=field)
        else:
            text = detail or message
            # A missing field is pydantic's own "missing" error (what FastAPI clients expect).
            error: Dict[str, Any] = {"type": kind, "loc": loc, "input": input}
            if kind is None:
                error["type"] = "missing" if text.startswith("Object missing required field") else _PydanticCustomError("agui_validation", "{detail}", {"detail": text})
            elif ctx is not None:
                error["ctx"] = ctx
            exc = cls.from_exception_data(title, [error])
            DecodeError.__init__(exc, message, field=field)
        exc.loc = loc
        return exc

    def __reduce__(self):
        return (_rebuild_validation, (type(self), self.title if hasattr(self, "title") else "", self.message, self.field, self.loc))


def _rebuild_validation(cls, title, message, field, loc):
    return cls.build(title, message, field=field, loc=loc)


__all__.append("ValidationError")
