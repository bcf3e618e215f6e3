"""``EventEncoder``: a drop-in for ``ag_ui.encoder.EventEncoder`` (SSE), with protobuf on the side.

Output is byte-identical to the Python reference (``"data: " + model_dump_json(by_alias=True)
+ "\\n\\n"``) for ``agui_fast.core`` Structs *and* for ``ag_ui.core`` pydantic events, values
inside ``Any`` fields included (pydantic's JSON mode: datetimes, UUIDs, sets, int dict keys
...). The JSON is written by the Rust extension's object walk (``rust/agui-py/src/walk.rs``).

An encoder never labels bytes it does not write. Both references' method sets work: the
Python one (``encode`` + ``get_content_type``: always SSE) and the TypeScript one
(``encode_binary`` + ``get_content_type``, or ``get_binary_content_type``). The first call that
fixes a format (a label or bytes) fixes it for the encoder: after ``get_content_type()`` has
said SSE, ``encode_binary`` writes SSE too; after protobuf bytes, both labels name protobuf; a
call that cannot follow (``encode`` after protobuf, ``encode_protobuf`` after an SSE label)
raises :class:`~agui_fast.errors.EncoderFormatError` at once.

Content negotiation (docs/encoder.md): protobuf is chosen only when the Accept header names
the protobuf media type explicitly (``application/vnd.ag-ui.event+proto``, or the pre-1.0
``application/x-ag-ui``) with a q-value above zero and strictly above the q-value that
``text/event-stream`` gets from the same header. ``*/*``, ``application/*``, a missing header
and ties give SSE. The result is memoised per header string (bounded), so building one
encoder per event, as frameworks do, costs about what the reference's constructor costs.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import _native
from ..core._dump import to_builtins
from ..errors import EncoderFormatError

__all__ = [
    "EventEncoder",
    "AGUI_MEDIA_TYPE",
    "AGUI_LEGACY_MEDIA_TYPE",
    "SSE_MEDIA_TYPE",
    "negotiate",
    "event_to_json_bytes",
    "to_builtins",
    "EncoderFormatError",
]

AGUI_MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
"""The AG-UI 1.0 protobuf media type (same constant as ``ag_ui.encoder.AGUI_MEDIA_TYPE``)."""
AGUI_LEGACY_MEDIA_TYPE = "application/x-ag-ui"
"""The binary media type's name in the original (pre-1.0) protocol description."""
SSE_MEDIA_TYPE = "text/event-stream"

_PROTO_TYPES = (AGUI_MEDIA_TYPE, AGUI_LEGACY_MEDIA_TYPE)


event_to_json_bytes = _native.dumps
"""JSON bytes of an event (Struct, pydantic model or plain data), as the reference writes it."""


class EventEncoder:
    """Encodes AG-UI events as SSE (``encode``, like the reference) or, when the Accept
    header asks for it, as length-prefixed protobuf frames (``encode_binary``).

    * ``encode(event) -> str`` / ``encode_sse``: SSE text; ``get_content_type()`` names
      ``"text/event-stream"`` (the reference's pair).
    * ``encode_binary(event) -> bytes`` / ``encode_many(events) -> bytes``: the negotiated
      format; ``get_binary_content_type()`` is its media type.
    * ``encode_protobuf(event) -> bytes``: one protobuf frame (``AGUI_MEDIA_TYPE``).

    Labels and bytes always agree: the first call that fixes a format fixes it for this
    encoder (``get_content_type`` fixes SSE, so a TypeScript-style ``encode_binary`` then
    writes SSE), and a call that would write the other format raises
    :class:`~agui_fast.errors.EncoderFormatError`.
    """

    __slots__ = ("_accept", "_binary_type")

    # A builtin function stored on the class is not bound as a method, so ``enc.encode(ev)``
    # is a direct call into Rust with no Python frame in between. Until a label or
    # ``encode_protobuf`` fixes the format, an encoder that negotiated SSE writes SSE from
    # every method but ``encode_protobuf``, so those need no bookkeeping.
    encode = staticmethod(_native.encode_sse_event)
    encode_sse = staticmethod(_native.encode_sse_event)
    _encode_sse = staticmethod(_native.encode_sse_event)  # the reference's private name, which its own tests and some callers use
    encode_binary = staticmethod(_native.encode_sse_bytes)
    encode_many = staticmethod(_native.encode_sse_many)

    def __init__(self, accept: Optional[str] = None) -> None:
        self._accept = accept
        self._binary_type = _NEGOTIATED.get(accept) or negotiate(accept)
        if self._binary_type is AGUI_MEDIA_TYPE:
            self.__class__ = _state_class(type(self), _ProtoOpen)

    def __repr__(self) -> str:
        return f"EventEncoder(accept={self._accept!r})"

    @property
    def accepts_protobuf(self) -> bool:
        """True when the Accept header negotiated protobuf (for ``encode_binary``)."""
        return self._binary_type is AGUI_MEDIA_TYPE

    def get_content_type(self) -> str:
        """The media type of this encoder's output: ``"text/event-stream"`` (and from now on
        its format), unless protobuf was already written."""
        self.__class__ = _state_class(type(self), _Sse)
        return SSE_MEDIA_TYPE

    def get_binary_content_type(self) -> str:
        """The media type of ``encode_binary``/``encode_many`` output (the negotiated one,
        unless an earlier call fixed the format)."""
        self.__class__ = _state_class(type(self), _Sse)
        return SSE_MEDIA_TYPE

    def encode_protobuf(self, event: Any, *, max_depth: int = _native.DEFAULT_MAX_DEPTH) -> bytes:
        """One protobuf frame (``AGUI_MEDIA_TYPE``; from now on this encoder's format)."""
        self.__class__ = _state_class(type(self), _Proto)
        return _native.proto_encode_event(event, max_depth=max_depth)


class _ProtoOpen(EventEncoder):
    """Protobuf negotiated, no format fixed yet: SSE calls fix SSE, the others protobuf."""

    __slots__ = ()

    def encode(self, event: Any) -> str:
        self.__class__ = _state_class(type(self), _Sse)
        return _native.encode_sse_event(event)

    encode_sse = _encode_sse = encode

    def get_content_type(self) -> str:
        self.__class__ = _state_class(type(self), _Sse)
        return SSE_MEDIA_TYPE

    def get_binary_content_type(self) -> str:
        self.__class__ = _state_class(type(self), _Proto)
        return AGUI_MEDIA_TYPE

    # The states' methods take the event only (the native ones' keyword options are not the
    # encoder's API).
    def encode_binary(self, event: Any) -> bytes:  # type: ignore[override]
        self.__class__ = _state_class(type(self), _Proto)
        return _native.proto_encode_event(event)

    def encode_many(self, events: Iterable[Any]) -> bytes:  # type: ignore[override]
        self.__class__ = _state_class(type(self), _Proto)
        return _native.proto_encode_events(events)


class _Sse(EventEncoder):
    """SSE fixed: every method writes and names SSE; ``encode_protobuf`` is refused."""

    __slots__ = ()

    encode = encode_sse = _encode_sse = staticmethod(_native.encode_sse_event)
    encode_binary = staticmethod(_native.encode_sse_bytes)
    encode_many = staticmethod(_native.encode_sse_many)

    def get_content_type(self) -> str:
        return SSE_MEDIA_TYPE

    get_binary_content_type = get_content_type

    def encode_protobuf(self, event: Any, *, max_depth: int = _native.DEFAULT_MAX_DEPTH) -> bytes:
        raise EncoderFormatError(
            "this encoder's output is SSE (labelled text/event-stream or written as SSE before): "
            "encode_protobuf would send protobuf under that label; use one encoder per response "
            "and either encode()/encode_binary() with get_content_type(), or encode_binary() "
            "with get_binary_content_type() for protobuf"
        )


class _Proto(EventEncoder):
    """Protobuf fixed: every binary method writes and names protobuf; ``encode`` (text) is
    refused."""

    __slots__ = ()

    encode_binary = encode_protobuf = staticmethod(_native.proto_encode_event)  # type: ignore[assignment]
    encode_many = staticmethod(_native.proto_encode_events)  # type: ignore[assignment]

    def get_content_type(self) -> str:
        return AGUI_MEDIA_TYPE

    get_binary_content_type = get_content_type

    def encode(self, event: Any) -> str:
        raise EncoderFormatError(
            "this encoder's output is protobuf (labelled or written as "
            f"{AGUI_MEDIA_TYPE} before): encode() writes SSE text; use encode_binary() for "
            "this response, or get_content_type() before any bytes for an SSE one"
        )

    encode_sse = _encode_sse = encode


_STATES: Dict[Tuple[type, type], type] = {}
_USER_CLASS: Dict[type, type] = {}


def _state_class(cls: type, state: type) -> type:
    """The class of an encoder of class ``cls`` in ``state``: the state itself for ours, a
    subclass of both for a user's subclass (its own methods still first); a fixed format
    stays fixed."""
    if issubclass(cls, (_Sse, _Proto)):
        return cls
    user = _USER_CLASS.get(cls, cls)
    if user is EventEncoder or user is _ProtoOpen:
        return state
    made = _STATES.get((user, state))
    if made is None:
        made = type(user.__name__, (user, state), {"__slots__": (), "__module__": user.__module__, "__qualname__": user.__qualname__})
        _STATES[(user, state)] = made
        _USER_CLASS[made] = user
    return made


_NEGOTIATED: Dict[Optional[str], str] = {}
_NEGOTIATED_MAX = 512  # distinct Accept headers remembered (cleared when full)


def negotiate(accept: Optional[str]) -> str:
    """The media type to send for an Accept header: ``AGUI_MEDIA_TYPE`` or ``SSE_MEDIA_TYPE``."""
    media = _NEGOTIATED.get(accept)
    if media is None:
        if accept is not None and not isinstance(accept, str):
            raise TypeError(f"accept must be a str or None, not {type(accept).__name__}")
        media = _negotiate(accept)
        if len(_NEGOTIATED) >= _NEGOTIATED_MAX:
            _NEGOTIATED.clear()
        _NEGOTIATED[accept] = media
    return media


def _negotiate(accept: Optional[str]) -> str:
    if not accept:
        return SSE_MEDIA_TYPE
    proto_q = 0.0
    sse_q, sse_specificity = 0.0, -1
    for media, q in _parse_accept(accept):
        if media in _PROTO_TYPES:
            proto_q = max(proto_q, q)
        # RFC 9110 12.5.1: the most specific matching range decides text/event-stream's q.
        specificity = {"text/event-stream": 2, "text/*": 1, "*/*": 0}.get(media, -1)
        if specificity > sse_specificity or (specificity == sse_specificity and q > sse_q):
            if specificity >= 0:
                sse_q, sse_specificity = q, specificity
    return AGUI_MEDIA_TYPE if proto_q > 0 and proto_q > sse_q else SSE_MEDIA_TYPE


def _parse_accept(header: str) -> List[Tuple[str, float]]:
    """(lower-cased type/subtype, q) for each media range; malformed ranges are skipped."""
    out = []
    for part in _split_outside_quotes(header, ","):
        params = _split_outside_quotes(part, ";")
        media = params[0].strip().lower()
        if media.count("/") != 1 or " " in media:
            continue
        q = 1.0
        for param in params[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value.strip())
                except ValueError:
                    q = 0.0
                if not 0.0 <= q <= 1.0:
                    q = 0.0
                break  # parameters after q are accept-extensions
        out.append((media, q))
    return out


def _split_outside_quotes(text: str, sep: str) -> List[str]:
    parts: List[str] = []
    current: List[str] = []
    quoted = escape = False
    for ch in text:
        if escape:
            escape = False
        elif ch == "\\" and quoted:
            escape = True
        elif ch == '"':
            quoted = not quoted
        elif ch == sep and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return parts
