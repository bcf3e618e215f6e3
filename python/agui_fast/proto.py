"""AG-UI 1.0 protobuf: encoding, decoding and conversion, wire-identical to ``@ag-ui/proto``.

Wire format: each event is one ``ag_ui.Event`` message (``proto/events.proto``), framed
as a 4-byte big-endian length followed by the message (media type
``application/vnd.ag-ui.event+proto``). The Rust core maps the camelCase JSON event to
protobuf exactly as the TypeScript reference does (see ``docs/protobuf.md``); this module
connects it to the typed ``agui_fast.core`` Structs.

* single messages (unframed): :func:`encode_event_message`, :func:`decode_event_message`;
* frames and streams: :func:`encode_protobuf_frame`, :func:`encode_protobuf_many`,
  :class:`ProtoDecoder` (incremental), :func:`decode_protobuf` (whole buffer),
  :func:`iter_protobuf` (files larger than memory);
* whole logs: :func:`convert_sse_to_protobuf`, :func:`convert_protobuf_to_sse`.

Decoders take ``raw``: ``False`` (default) gives event Structs, ``True`` plain dicts,
``"bytes"`` the JSON text of each event. Errors: :class:`~agui_fast.errors.ProtobufDecodeError`
(bad message), :class:`~agui_fast.errors.FrameTooLargeError` (length prefix over the limit,
raised as soon as the prefix is read), :class:`~agui_fast.errors.TruncatedStreamError`
(the stream ended inside a frame). Each carries ``frame_index``, ``offset`` (byte offset of
the frame's prefix) and ``events`` (everything decoded before the error). A frame whose
envelope only has an event kind from a later protocol version is skipped with a
``UserWarning``, like the reference client.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO, Iterable, Iterator, List, Union

import msgspec

from . import _native
from .errors import DecodeError, EventValidationError
from .sse import _bulk, _file_size, whole_call_gc_pause

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

_CHUNK_SIZE = 1 << 16

_decode_message = _native.proto_decode_message
_encode_event = _native.proto_encode_event

Source = Union[str, "os.PathLike[str]", BinaryIO, Iterable[bytes]]


# -- typed <-> JSON ---------------------------------------------------------------------------


def _raw_mode(raw: Any) -> Any:
    # The SSE decoders' spelling (None / "dict" / "bytes") is accepted too, so both
    # decoder families take the same ``raw`` values.
    raw = {None: False, "dict": True}.get(raw, raw) if isinstance(raw, (str, type(None))) else raw
    if raw not in (False, True, "bytes"):
        raise ValueError(f"raw must be None/False, 'dict'/True or 'bytes', not {raw!r}")
    return raw


_typed = None  # (EVENT_DECODER.decode, decode_event), bound on first use
_mp = None  # msgspec MessagePack decoders: (Event, List[Event])


def _typed_decoders():
    # Lazy: agui_fast.decoder re-exports this module, so it cannot be imported at load time.
    global _typed
    if _typed is None:
        from .decoder import EVENT_DECODER, decode_event

        _typed = (EVENT_DECODER.decode, decode_event)
    return _typed


def _mp_decoders():
    # The Rust decoder hands events to msgspec as MessagePack on the typed paths: nothing
    # to escape or print on our side, nothing to parse on msgspec's.
    global _mp
    if _mp is None:
        from .core import Event

        _mp = (
            msgspec.msgpack.Decoder(Event, strict=False).decode,
            msgspec.msgpack.Decoder(List[Event], strict=False).decode,
        )
    return _mp


def _one_mp(item: bytes) -> Any:
    """MessagePack of one decoded event -> event Struct (exact path via JSON if needed)."""
    try:
        return (_mp or _mp_decoders())[0](item)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _one(msgspec.json.encode(msgspec.msgpack.decode(item)))


def _convert_mp(items: List[bytes], raw: Any) -> List[Any]:
    """MessagePack items (an error's ``events``) -> what the caller asked for."""
    if raw == "bytes":
        return [msgspec.json.encode(msgspec.msgpack.decode(i)) for i in items]
    if raw:
        return [msgspec.msgpack.decode(i) for i in items]
    return _typed_each(items, _one_mp)


# MessagePack arrays below this size hold a few events (a live stream's chunk): decoded
# with no GC pause to weigh, and by the native feed in the same call.
_SMALL_ARRAY = 4096


def _convert_mp_array(array: bytes, raw: Any) -> List[Any]:
    """A MessagePack array of decoded events -> Structs (one msgspec call) or dicts."""
    if raw:
        return msgspec.msgpack.decode(array)
    decode_list = (_mp or _mp_decoders())[1]
    try:
        if len(array) < _SMALL_ARRAY:
            return decode_list(array)
        return _bulk(decode_list, array, _count(array))
    except (msgspec.ValidationError, msgspec.DecodeError):
        # Rare: an event outside the 1.0 schema. Per event, for the precise error.
        items = msgspec.msgpack.decode(array)
        return _convert([msgspec.json.encode(i) for i in items], raw)


def _convert_mp_error(exc: DecodeError, raw: Any) -> DecodeError:
    """Like :func:`_convert_error` for errors whose ``events`` are MessagePack items."""
    try:
        exc.events = _convert_mp(list(exc.events or []), raw)
    except DecodeError:
        pass
    return exc


def _one(b: bytes) -> Any:
    """JSON text of one decoded event -> event Struct."""
    fast, exact = _typed or _typed_decoders()
    try:
        return fast(b)  # one msgspec call: the decoded JSON never has unknown members
    except (msgspec.ValidationError, msgspec.DecodeError):
        return exact(b)  # precise EventValidationError (or the lenient readings)


def _convert(items: List[bytes], raw: Any) -> List[Any]:
    """JSON texts from the Rust decoder -> what the caller asked for."""
    if raw == "bytes":
        return items
    if raw:
        return [msgspec.json.decode(b) for b in items]
    return _typed_each(items, _one)


def _typed_each(items: List[bytes], one) -> List[Any]:
    """``one(item)`` for each item; an invalid event keeps what came before it."""
    out = []
    for item in items:
        try:
            out.append(one(item))
        except EventValidationError as exc:
            # The frame decoded but is not a valid 1.0 event (e.g. an op enum number
            # without a name): the events before it travel on the exception.
            exc.events = out + list(exc.events or [])
            raise
    return out


def _convert_error(exc: DecodeError, raw: Any) -> DecodeError:
    """Make ``exc.events`` hold the requested kind of objects (it arrives as JSON texts)."""
    try:
        exc.events = _convert(list(exc.events or []), raw)
    except DecodeError:
        pass  # an earlier event does not validate: leave the JSON texts
    return exc


# -- single messages ---------------------------------------------------------------------------


def encode_event_message(event: Any) -> bytes:
    """One event (Struct, ``ag_ui.core`` pydantic event or dict) as an unframed ``Event`` message.

    Accepts what the SSE encoder accepts (pydantic's JSON-mode rules); raises
    :class:`~agui_fast.errors.EncodeError` only."""
    return _encode_event(event, False)


def decode_event_message(data: Union[bytes, bytearray, memoryview], raw: Any = False) -> Any:
    """Decode one unframed ``Event`` message.

    Raises :class:`~agui_fast.errors.ProtobufDecodeError` for an invalid message, including
    an envelope from a later protocol version (a stream would skip that frame).
    """
    data = data if type(data) is bytes else bytes(data)
    if raw is False:
        item = _decode_message(data, True)
        try:  # _one_mp inlined: one Python frame less on the per-message path
            return (_mp or _mp_decoders())[0](item)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return _one_mp(item)
    return _convert([_decode_message(data)], _raw_mode(raw))[0]


def encode_protobuf_frame(event: Any) -> bytes:
    """One event as a length-prefixed frame (4-byte big-endian length + message)."""
    return _encode_event(event, True)


encode_protobuf_many = _native.proto_encode_events
"""``encode_protobuf_many(events)``: events as one framed stream (the concatenation of
their frames)."""


# -- streams -----------------------------------------------------------------------------------


class ProtoDecoder:
    """Incremental decoder of a framed protobuf stream.

    ``feed(chunk)`` returns the events completed by ``chunk`` (chunks may split frames and
    prefixes anywhere); when it raises, the events that chunk completed before the bad
    frame are on the exception's ``events``; ``close()`` must be called at the end of the stream and raises
    :class:`~agui_fast.errors.TruncatedStreamError` when bytes of an unfinished frame
    remain (a stream cut in half is an error, not a success). A length prefix announcing
    more than ``max_frame_size`` bytes (prefix included) raises
    :class:`~agui_fast.errors.FrameTooLargeError` as soon as it is read. After an error the
    decoder stays failed.
    """

    __slots__ = ("_parser", "_raw")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, raw: Any = False) -> None:
        self._parser = _native.ProtoFrameParser(max_frame_size)
        self._raw = _raw_mode(raw)

    def feed(self, chunk: Union[bytes, bytearray, memoryview]) -> List[Any]:
        raw = self._raw
        if type(chunk) is not bytes:
            chunk = bytes(chunk)
        if raw == "bytes":
            try:
                return self._parser.feed(chunk)
            except DecodeError as exc:
                raise _convert_error(exc, raw) from None
        try:
            if raw:
                got = self._parser.feed_array(chunk, True)
            else:
                # A live stream's chunk: framed, decoded and typed in one native call.
                got = self._parser.feed_decode(chunk, (_mp or _mp_decoders())[1], _SMALL_ARRAY)
        except DecodeError as exc:
            raise _convert_mp_error(exc, raw) from None
        if type(got) is list:
            return got
        if len(got) == 5:  # an empty MessagePack array32: nothing completed in this chunk
            return []
        return _convert_mp_array(got, raw)

    def close(self) -> List[Any]:
        try:
            self._parser.close()
        except DecodeError as exc:
            raise _convert_error(exc, self._raw) from None
        return []

    @property
    def pending(self) -> int:
        """Bytes buffered for an unfinished frame."""
        return self._parser.pending

    @property
    def frame_index(self) -> int:
        """Index of the next frame."""
        return self._parser.frame_index


def decode_protobuf(
    data: Union[bytes, bytearray, memoryview],
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    raw: Any = False,
) -> List[Any]:
    """Decode a whole framed stream (the heavy part runs without the GIL).

    A stream that ends inside a frame raises :class:`~agui_fast.errors.TruncatedStreamError`.
    """
    _raw_mode(raw)
    if not isinstance(data, bytes):
        data = bytes(data)
    if raw is False:
        try:
            return _decode_typed(data, max_frame_size)
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass  # rare (events outside the 1.0 schema): per event, with precise errors
    if raw is True:
        try:
            array, _, _ = _native.proto_decode_part(data, 0, 0, len(data) + 1, max_frame_size, True)
        except DecodeError as exc:
            raise _convert_mp_error(exc, raw) from None
        return msgspec.msgpack.decode(array)
    try:
        items = _native.proto_decode_frames(data, max_frame_size)
    except DecodeError as exc:
        raise _convert_error(exc, raw) from None
    return _convert(items, raw)


# Large buffers are decoded in parts on a Rust thread: the first part has _PART bytes of
# protobuf, each next one 1.5x more, up to _MAX_PART (see proto_decode_parts).
_PART = 1 << 16
_MAX_PART = 1 << 19


def _count(array: bytes) -> int:
    """Events in a MessagePack array from the Rust decoder (always a 32-bit header)."""
    return int.from_bytes(array[1:5], "big")


def _decode_typed(data: bytes, max_frame_size: int) -> List[Any]:
    """Typed decode of a whole buffer: each part's events become one MessagePack array
    that one msgspec call (cyclic GC paused, see ``sse._bulk``) turns into Structs. Large
    buffers are split into parts decoded on a Rust thread, so that the decoding of part
    i+1 overlaps msgspec on part i."""
    decode_list = (_mp or _mp_decoders())[1]
    if len(data) <= 4 * _PART:
        try:
            array, _, _ = _native.proto_decode_part(data, 0, 0, len(data) + 1, max_frame_size, True)
        except DecodeError as exc:
            raise _convert_mp_error(exc, False) from None
        return _bulk(decode_list, array, _count(array))
    out: List[Any] = []

    def consume(array: bytes) -> None:
        out.extend(_bulk(decode_list, array, _count(array)))

    try:
        with whole_call_gc_pause():
            _native.proto_decode_parts(data, consume, _PART, _MAX_PART, max_frame_size)
    except DecodeError as exc:  # from the Rust decoder (msgspec raises its own errors)
        exc = _convert_mp_error(exc, False)
        exc.events = out + list(exc.events or [])
        raise exc from None
    return out


def _chunks(src: Source, chunk_size: int) -> Iterator[bytes]:
    if isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as f:
            yield from iter(lambda: f.read(chunk_size), b"")
    elif hasattr(src, "read"):
        yield from iter(lambda: src.read(chunk_size), b"")
    elif isinstance(src, (bytes, bytearray, memoryview)):
        yield bytes(src)
    else:
        yield from src


def iter_protobuf(
    path_or_file: Source,
    chunk_size: int = _CHUNK_SIZE,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    raw: Any = False,
) -> Iterator[Any]:
    """Yield the events of a framed protobuf log, reading ``chunk_size`` bytes at a time.

    ``path_or_file`` is a path, a binary file object or an iterable of ``bytes`` chunks.
    Memory stays bounded by the chunk size plus the largest frame.
    """
    mode = _raw_mode(raw)
    if mode != "bytes" and isinstance(path_or_file, (str, os.PathLike)) and _file_size(path_or_file) >= 2 * chunk_size:
        # A big file: read and decoded on a Rust thread, ahead of the Struct building.
        frames = _native.ProtoFileFrames(os.fspath(path_or_file), chunk_size, max_frame_size)
        while True:
            try:
                array = next(frames, None)
            except DecodeError as exc:
                exc = _convert_mp_error(exc, mode)
                yield from exc.events  # frames before the bad one are delivered, then the error
                raise exc from None
            if array is None:
                return
            if len(array) != 5:  # 5: an empty MessagePack array32, nothing completed
                yield from _convert_mp_array(array, mode)
    dec = ProtoDecoder(max_frame_size, raw)
    for chunk in _chunks(path_or_file, chunk_size):
        try:
            events = dec.feed(chunk)
        except DecodeError as exc:
            yield from exc.events  # frames before the bad one are delivered, then the error
            raise
        yield from events
    dec.close()


# -- whole-log conversion ------------------------------------------------------------------------


def _sse_decoder():
    from .sse import SseDecoder

    return SseDecoder(raw="bytes")  # each frame's JSON text, validated as JSON only


def _open_out(dst: Union[str, "os.PathLike[str]", BinaryIO]):
    if isinstance(dst, (str, os.PathLike)):
        return open(dst, "wb"), True
    return dst, False


def convert_sse_to_protobuf(
    src: Source,
    dst: Union[str, "os.PathLike[str]", BinaryIO],
    *,
    chunk_size: int = _CHUNK_SIZE,
) -> int:
    """Convert an SSE log to a framed protobuf log, streaming (constant memory).

    Each frame's JSON is mapped to protobuf as the reference converter does (no schema
    validation, like the reference). Returns the number of events written.
    """
    sse = _sse_decoder()
    out, close = _open_out(dst)
    count = 0
    try:
        for chunk in _chunks(src, chunk_size):
            frames = sse.feed(chunk)
            if frames:
                out.write(_native.proto_encode_many_json(frames))
                count += len(frames)
        frames = sse.close() or []
        if frames:
            out.write(_native.proto_encode_many_json(frames))
            count += len(frames)
    finally:
        if close:
            out.close()
    return count


def convert_protobuf_to_sse(
    src: Source,
    dst: Union[str, "os.PathLike[str]", BinaryIO],
    *,
    chunk_size: int = _CHUNK_SIZE,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
) -> int:
    """Convert a framed protobuf log to SSE, streaming (constant memory).

    Events go through the typed layer, so the SSE text is byte-identical to what the Python
    reference's ``EventEncoder`` writes for the decoded events. Returns the number of events.
    """
    dec = ProtoDecoder(max_frame_size)
    out, close = _open_out(dst)
    count = 0
    try:
        for chunk in _chunks(src, chunk_size):
            events = dec.feed(chunk)
            if events:
                out.write(_native.encode_sse_many(events))
                count += len(events)
        dec.close()
    finally:
        if close:
            out.close()
    return count
