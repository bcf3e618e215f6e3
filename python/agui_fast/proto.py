"""AG-UI 1.0 protobuf: encoding, decoding and conversion, wire-identical to ``@ag-ui/proto``.

Wire format: each event is one ``ag_ui.Event`` message (``proto/events.proto``), framed
as a 4-byte big-endian length followed by the message (media type
``application/vnd.ag-ui.event+proto``). The Rust core maps the camelCase JSON event to
protobuf exactly as the TypeScript reference does (see ``docs/protobuf.md``).

* single messages (unframed): :func:`encode_event_message`, :func:`decode_event_message`;
* frames and streams: :func:`encode_protobuf_frame`, :func:`encode_protobuf_many`,
  :class:`ProtoDecoder` (incremental, native), :func:`decode_protobuf` (whole buffer),
  :func:`iter_protobuf` (files larger than memory);
* whole logs: :func:`convert_sse_to_protobuf`, :func:`convert_protobuf_to_sse`.

Decoders take the same options as the SSE decoders: ``raw`` (``None`` typed events,
``"dict"`` plain dicts, ``"bytes"`` the JSON text of each event), ``max_frame_size``
(prefix + message), ``max_depth``, ``legacy`` (accepted; the 1.0 wire format has no
legacy shapes). Errors follow the same contract (docs/sse.md, "Errors"): a call decodes
every frame it completed and raises one error carrying ``events`` (all of the call's
events) and ``errors``. :class:`~agui_fast.errors.ProtobufDecodeError` (a bad message;
the stream goes on) and :class:`~agui_fast.errors.EventValidationError` (a frame valid
on the wire but not a valid 1.0 event) name ``frame_index`` and ``offset`` (the frame's
prefix); :class:`~agui_fast.errors.FrameTooLargeError` (length prefix over the limit)
and :class:`~agui_fast.errors.TruncatedStreamError` (the stream ended inside a frame)
end the stream. Frames whose envelope only has an event kind from a later protocol
version are skipped like the reference client does, with one ``UserWarning`` per
decoder (``ProtoDecoder.skipped_frames`` counts them).
"""

from __future__ import annotations

import os
import warnings
from typing import IO, Any, Iterable, Iterator, Optional, Tuple, Union

import msgspec

from . import _native, _typed
from ._plumbing import (
    DEFAULT_CHUNK_SIZE, DEFAULT_MAX_DEPTH, BytesLike, Raw, Source, chunk_events, check_chunk_size, iter_events,
    options, read_chunks,
)
from .errors import EncodeError
from .sse import SseDecoder  # the same layer: the SSE -> protobuf converter reads SSE

__all__ = [
    "AGUI_MEDIA_TYPE",
    "DEFAULT_MAX_FRAME_SIZE",
    "ProtoDecoder",
    "decode_protobuf",
    "iter_protobuf",
    "encode_event_message",
    "decode_event_message",
    "encode_protobuf_frame",
    "encode_protobuf_many",
    "convert_sse_to_protobuf",
    "convert_protobuf_to_sse",
]

AGUI_MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
DEFAULT_MAX_FRAME_SIZE: int = _native.PROTO_DEFAULT_MAX_FRAME_SIZE
"""10 MiB, the reference client's limit; applies to prefix + message (exactly the limit is fine)."""

_encode_event = _native.proto_encode_event

# (many, many with float_hook, one, one with float_hook, exact path, items are the result);
# bytes mode: the native decoder's JSON texts are the result.
_BACKENDS = {
    None: (
        _typed.MP_EVENT_LIST_DECODER.decode, None, _typed.MP_EVENT_DECODER.decode, None, _typed.exact_mp_event, False,
    ),
    "dict": (msgspec.msgpack.decode, None, msgspec.msgpack.decode, None, _typed.exact_mp_value, False),
    "bytes": (None, None, None, None, _typed.exact_mp_value, False),
}


# -- encoding -----------------------------------------------------------------------------------


# -- single messages ---------------------------------------------------------------------------


def encode_event_message(event: Any) -> bytes:
    """One event (Struct, ``ag_ui.core`` pydantic event or dict) as an unframed ``Event`` message.

    Accepts what the SSE encoder accepts (pydantic's JSON-mode rules); raises
    :class:`~agui_fast.errors.EncodeError` only."""
    return _encode_event(event, False)


def encode_protobuf_frame(event: Any) -> bytes:
    """One event as a length-prefixed frame (4-byte big-endian length + message)."""
    return _encode_event(event, True)


encode_protobuf_many = _native.proto_encode_events
"""``encode_protobuf_many(events)``: events as one framed stream (the concatenation of
their frames)."""


# -- decoding -----------------------------------------------------------------------------------


def decode_event_message(data: BytesLike, raw: Raw = None) -> Any:
    """Decode one unframed ``Event`` message.

    Raises :class:`~agui_fast.errors.ProtobufDecodeError` for an invalid message, including
    an envelope from a later protocol version (a stream would skip that frame).
    """
    data = data if type(data) is bytes else bytes(memoryview(data))
    if raw is None:  # the common case, first: no option check to pay
        item = _native.proto_decode_message(data, True)
        try:
            return _typed.MP_EVENT_DECODER.decode(item)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return _typed.exact_mp_event(item, False)
    mode = options(raw, 0, 0, None, 2)[0]
    if mode is None:
        return decode_event_message(data)
    item = _native.proto_decode_message(data, mode == "dict")
    return msgspec.msgpack.decode(item) if mode == "dict" else item


def _native_decoder(
    cls: Any, raw: Any, max_frame_size: int, max_depth: int, max_buffer_size: Optional[int] = None
) -> Any:
    mode, max_frame_size, max_depth = options(raw, max_frame_size, max_depth, max_buffer_size, 3)
    return _native.ProtoDecoder.__new__(cls, _BACKENDS[mode], mode != "bytes", max_frame_size, max_depth)


class ProtoDecoder(_native.ProtoDecoder):
    """Incremental decoder of a framed protobuf stream: ``feed(chunk) -> list`` (chunks may
    split frames and prefixes anywhere), ``close() -> list``, which raises
    :class:`~agui_fast.errors.TruncatedStreamError` when bytes of an unfinished frame
    remain (a stream cut in half is an error, not a success). Options and errors: see the
    module documentation. ``feed`` takes bytes-like chunks only; ``feed`` after ``close``
    raises ``ValueError``.
    """

    __slots__ = ()

    def __new__(
        cls,
        *args: Any,
        raw: Raw = None,
        legacy: bool = True,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_buffer_size: Optional[int] = None,
    ) -> "ProtoDecoder":
        if args:  # the old signature: ProtoDecoder(max_frame_size, raw)
            warnings.warn("ProtoDecoder's options are keyword-only", DeprecationWarning, stacklevel=2)
            max_frame_size, raw = (*args, raw)[:2]
        return _native_decoder(cls, raw, max_frame_size, max_depth, max_buffer_size)


decode_protobuf = _native.ProtoCodec((_BACKENDS[None], _BACKENDS["dict"], _BACKENDS["bytes"]), options).decode_protobuf
"""``decode_protobuf(data, *, raw=None, legacy=True, max_frame_size=..., max_depth=...)``:
decode a whole framed stream (native: the protobuf decoding runs without the GIL, large
buffers in parts on a Rust thread ahead of the Struct building). A stream that ends
inside a frame raises :class:`~agui_fast.errors.TruncatedStreamError`."""


def iter_protobuf(
    source: Source,
    *args: Any,
    raw: Raw = None,
    legacy: bool = True,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_depth: int = DEFAULT_MAX_DEPTH,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_buffer_size: Optional[int] = None,
) -> Iterator[Any]:
    """Yield the events of a framed protobuf log (a :data:`~agui_fast._plumbing.Source`),
    reading ``chunk_size`` bytes at a time: memory stays bounded by the chunk size plus the
    largest frame. On an error, the events of the failing chunk are yielded first."""
    if args:  # the old signature: iter_protobuf(source, chunk_size)
        warnings.warn("iter_protobuf's options are keyword-only", DeprecationWarning, stacklevel=2)
        (chunk_size,) = args
    check_chunk_size(chunk_size)
    dec = _native_decoder(ProtoDecoder, raw, max_frame_size, max_depth, max_buffer_size)
    return iter_events(dec, read_chunks(source, chunk_size))


# -- whole-log conversion ------------------------------------------------------------------------

Sink = Union[str, "os.PathLike[str]", IO[bytes]]


def _open_out(dst: Sink) -> Tuple[IO[bytes], bool]:
    if isinstance(dst, (str, os.PathLike)):
        return open(dst, "wb"), True
    return dst, False


def _convert(dec: Any, src: Source, dst: Sink, chunk_size: int, write: Any) -> int:
    """Decode ``src`` chunk by chunk and write each chunk's events; on an error, the
    events decoded from the failing chunk are written before it is raised."""
    check_chunk_size(chunk_size)
    out, close = _open_out(dst)
    count = 0
    try:
        for events in chunk_events(dec, read_chunks(src, chunk_size)):
            if events:
                out.write(write(events))
                count += len(events)
    finally:
        if close:
            out.close()
    return count


def convert_sse_to_protobuf(src: Source, dst: Sink, *, chunk_size: int = DEFAULT_CHUNK_SIZE) -> int:
    """Convert an SSE log to a framed protobuf log, streaming (constant memory).

    Each frame's JSON is mapped to protobuf as the reference converter does (no schema
    validation, like the reference). Returns the number of events written.
    """
    return _convert(SseDecoder(raw="bytes"), src, dst, chunk_size, _native.proto_encode_many_json)


def convert_protobuf_to_sse(
    src: Source, dst: Sink, *, chunk_size: int = DEFAULT_CHUNK_SIZE, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
) -> int:
    """Convert a framed protobuf log to SSE, streaming (constant memory).

    Events go through the typed layer, so the SSE text is byte-identical to what the Python
    reference's ``EventEncoder`` writes for the decoded events. Returns the number of events.
    """
    return _convert(ProtoDecoder(max_frame_size=max_frame_size), src, dst, chunk_size, _native.encode_sse_many)
