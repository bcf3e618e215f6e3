"""``EventEncoder``: a drop-in for ``ag_ui.encoder.EventEncoder`` (SSE and protobuf).

Output is byte-identical to the Python reference (``"data: " + model_dump_json(by_alias=True)
+ "\\n\\n"``) for ``agui_fast.core`` Structs *and* for ``ag_ui.core`` pydantic events; the
JSON is written by the Rust extension from each class's field plan (``__agui_fields__``, or
the pydantic ``model_fields``), never by pydantic's own serializer.

Content negotiation (docs/encoder.md): protobuf is chosen only when the Accept header names
the protobuf media type explicitly (``application/vnd.ag-ui.event+proto``, or the pre-1.0
``application/x-ag-ui``) with a q-value above zero and strictly above the q-value that
``text/event-stream`` gets from the same header. ``*/*``, ``application/*``, a missing header
and ties give SSE, so swapping this encoder into an existing server never changes what it
sends. (The TypeScript reference picks protobuf for ``*/*`` and ignores preference order;
we deliberately do not copy that.)
"""

from __future__ import annotations

from typing import Any, Iterable, List, Optional, Tuple

from . import _native
from .core._dump import to_builtins

__all__ = [
    "EventEncoder",
    "AGUI_MEDIA_TYPE",
    "AGUI_LEGACY_MEDIA_TYPE",
    "SSE_MEDIA_TYPE",
    "negotiate",
    "event_to_json_bytes",
    "to_builtins",
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
    """Encodes AG-UI events as SSE (default) or length-prefixed protobuf frames.

    ``EventEncoder(accept=request.headers.get("accept"))`` negotiates the format;
    ``get_content_type()`` gives the media type to send. ``encode()`` always returns the
    SSE string, like both references.
    """

    __slots__ = ("_protobuf", "_accept")

    # A builtin function stored on the class is not bound as a method, so ``enc.encode(ev)``
    # is a direct call into Rust with no Python frame in between.
    encode = staticmethod(_native.encode_sse_event)
    encode_sse = staticmethod(_native.encode_sse_event)

    def __init__(self, accept: Optional[str] = None) -> None:
        self._accept = accept
        self._protobuf = negotiate(accept) == AGUI_MEDIA_TYPE

    def __repr__(self) -> str:
        return f"EventEncoder(accept={self._accept!r})"

    @property
    def accepts_protobuf(self) -> bool:
        """True when the Accept header negotiated protobuf."""
        return self._protobuf

    def get_content_type(self) -> str:
        """The media type of ``encode_binary``/``encode_many`` output."""
        return AGUI_MEDIA_TYPE if self._protobuf else SSE_MEDIA_TYPE

    def encode_binary(self, event: Any) -> bytes:
        """A protobuf frame when protobuf was negotiated, else the SSE text as UTF-8 bytes."""
        if self._protobuf:
            return self.encode_protobuf(event)
        return _native.encode_sse_bytes(event)

    def encode_protobuf(self, event: Any) -> bytes:
        """The event as one length-prefixed protobuf frame (4-byte big-endian length)."""
        from . import proto

        return proto.encode_protobuf_frame(event)

    def encode_many(self, events: Iterable[Any]) -> bytes:
        """A whole batch in one buffer, in the negotiated format."""
        if self._protobuf:
            from . import proto

            return proto.encode_protobuf_many(events)
        return _native.encode_sse_many(events)


def negotiate(accept: Optional[str]) -> str:
    """The media type to send for an Accept header: ``AGUI_MEDIA_TYPE`` or ``SSE_MEDIA_TYPE``."""
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
