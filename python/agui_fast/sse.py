"""Decoding AG-UI Server-Sent Event streams.

Framing is done in Rust (``agui_fast._native.SseParser`` / ``split_sse``): a WHATWG
event-stream parser that hands out each frame's payload. This module turns the payloads
into events:

- typed (default): ``agui_fast.core`` Structs, all frames of a chunk decoded by ONE
  msgspec call over the JSON array ``[p0,p1,...]`` the parser builds;
- ``raw="dict"``: plain JSON values (any JSON, like the TypeScript client);
- ``raw="bytes"``: each frame's JSON text as ``bytes`` (checked to be valid JSON).

Legacy 0.x input (``THINKING_*``, binary content parts, legacy nulls) is converted by
:mod:`agui_fast.legacy` (``legacy=False`` turns that off). The fast path pays nothing
for it: typed decoding only looks at legacy shapes when a frame fails to decode; dict
mode only converts frames whose bytes mention ``THINKING_``, ``"binary"`` or ``null``.

Errors are :class:`agui_fast.errors.DecodeError` subclasses naming ``frame_index``,
``offset`` (byte offset of the frame's first ``data`` line), ``field`` and carrying in
``events`` what this call decoded before the failing frame. After a frame error the
decoder stays usable: the next ``feed``/``close`` continues after the bad frame.
"""

from __future__ import annotations

import os
import threading as _threading
from gc import disable as _gc_disable, enable as _gc_enable, isenabled as _gc_isenabled
from json import loads as _stdlib_loads
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Iterator, List, Optional, Union

import msgspec

from . import _native
from .errors import BufferLimitError, DecodeError, EventValidationError, InvalidJsonError
from .legacy import LegacyConverter

__all__ = [
    "SseDecoder",
    "decode_sse",
    "iter_sse",
    "aiter_sse",
    "DEFAULT_MAX_BUFFER_SIZE",
    "DEFAULT_CHUNK_SIZE",
]

#: Maximum buffered size of one event (10 MiB, like the reference client).
DEFAULT_MAX_BUFFER_SIZE: int = _native.SSE_DEFAULT_MAX_BUFFER
#: Read size of :func:`iter_sse` on files.
DEFAULT_CHUNK_SIZE: int = 1 << 20

_MODES = (None, "bytes", "dict")

_json_decode = msgspec.json.Decoder().decode
# Same, parsing floats with Python's ``float``: for batches with huge exponents, which
# msgspec parses on a slow exact path (see ``SseBatch.float_hook``). Same values.
_json_decode_fh = msgspec.json.Decoder(float_hook=float).decode
_raw_list_decoder = msgspec.json.Decoder(List[msgspec.Raw])

# Typed backend, resolved on first use (agui_fast.decoder imports this module).
_typed: Optional["_TypedBackend"] = None


class _TypedBackend:
    """The typed decoders (same settings as decode_event's fast path, strict=False; what
    they refuse falls back to decode_event frame by frame). ``*_fh``: the same with
    floats parsed by ``float`` (batches with huge exponents, see ``SseBatch.float_hook``)."""

    __slots__ = ("many", "many_fh", "one", "one_fh", "event")

    def __init__(self) -> None:
        from . import decoder  # lazy: decoder re-exports this module

        self.many = decoder.EVENT_LIST_DECODER.decode
        self.many_fh = msgspec.json.Decoder(List[decoder.Event], strict=False, float_hook=float).decode
        self.one = decoder.EVENT_DECODER.decode
        self.one_fh = msgspec.json.Decoder(decoder.Event, strict=False, float_hook=float).decode
        self.event = decoder.decode_event  # the exact / legacy-aware path, one frame


def _typed_backend() -> _TypedBackend:
    global _typed
    if _typed is None:
        _typed = _TypedBackend()
    return _typed


def _error(cls, err: BaseException, frame_index: int, offset: int, field, events) -> DecodeError:
    msg = getattr(err, "message", None) or str(err)
    return cls(
        f"SSE frame {frame_index} at byte {offset}: {msg}",
        frame_index=frame_index,
        offset=offset,
        field=field,
        events=events,
    )


_BULK_ERRORS = (ValueError, TypeError, RecursionError)

# Batches at least this large decode with the cyclic GC paused (see _bulk).
_GC_PAUSE_MIN = 256


def _bulk(decode, array, n: int, post=None, cands=None) -> list:
    """One msgspec call over the joined array. For big batches the cyclic GC is paused:
    the call allocates many container objects (our Structs carry a ``__dict__``) and
    every collection it triggers would rescan them all for nothing; msgspec holds the
    GIL throughout, so no other thread observes the pause."""
    pause = n >= _GC_PAUSE_MIN and _gc_isenabled()
    if pause:
        _gc_disable()
    try:
        items = decode(array)
        if post is not None and cands and len(items) == n:
            post(items, cands, 0)
        return items
    finally:
        if pause:
            _gc_enable()


def _reject_constant(name: str):
    raise ValueError(f"invalid JSON literal {name}")


def _loads(payload: bytes) -> Any:
    """JSON text to Python values; InvalidJsonError on failure."""
    try:
        return _json_decode(payload)
    except msgspec.DecodeError as e:
        first = e
    except RecursionError:
        raise InvalidJsonError("JSON is nested too deeply") from None
    # msgspec refuses some valid JSON that the reference reads: escaped unpaired
    # surrogates ("\\ud800") and numbers beyond double range (1e400 -> inf). The stdlib
    # parser takes those; its NaN/Infinity extensions are not JSON and stay rejected.
    try:
        return _stdlib_loads(payload.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        pass
    raise InvalidJsonError(str(first)) from first


class SseDecoder:
    """Incremental SSE decoder: ``feed(chunk) -> list``, ``close() -> list``.

    ``raw``: ``None`` (typed events), ``"dict"`` or ``"bytes"``.
    ``legacy``: convert 0.x input (default on).
    ``max_buffer_size``: bytes one event may buffer (data plus incomplete line); more
    raises :class:`BufferLimitError`, and the decoder stays failed.
    """

    __slots__ = ("_parser", "_raw", "_legacy", "_resume", "_closed", "_many", "_many_fh", "_one", "_one_fh")

    def __init__(
        self,
        *,
        raw: Optional[str] = None,
        legacy: bool = True,
        max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
    ) -> None:
        if raw is False or raw is True:  # the protobuf decoders' spelling, accepted too
            raw = "dict" if raw else None
        if raw not in _MODES:
            raise ValueError(f"raw must be None/False, 'dict'/True or 'bytes', not {raw!r}")
        if max_buffer_size < 0:
            raise ValueError("max_buffer_size must be >= 0")
        self._raw = raw
        self._legacy = LegacyConverter() if legacy else None
        self._parser = _native.SseParser(
            max_buffer_size, check=True, candidates=bool(legacy) and raw == "dict"
        )
        # Batches (with the index to resume at) left over after a frame error.
        self._resume: list = []
        self._closed = False
        # The bulk decoder of this mode (resolved once: feed() is called per chunk).
        # ``_many_fh``: the same with floats parsed by ``float`` (batches with huge
        # exponents; bytes mode does not build numbers).
        # ``_one``/``_one_fh``: the fast decoder of a single payload (after a bulk failure).
        if raw is None:
            typed = _typed_backend()
            self._many, self._many_fh, self._one, self._one_fh = typed.many, typed.many_fh, typed.one, typed.one_fh
        elif raw == "dict":
            self._many, self._many_fh = _json_decode, _json_decode_fh
            self._one, self._one_fh = _json_decode, _json_decode_fh
        else:
            self._many = self._many_fh = _raw_list_decoder.decode
            self._one = self._one_fh = None  # bytes mode goes frame by frame via _decode_one

    @property
    def last_event_id(self) -> str:
        """The stream's last event id (send it as ``Last-Event-ID`` on reconnect)."""
        return self._parser.last_event_id

    @property
    def retry(self) -> Optional[int]:
        """The last ``retry`` value of the stream (milliseconds), if any."""
        return self._parser.retry

    @property
    def frame_count(self) -> int:
        """Frames framed so far (decoded or not)."""
        return self._parser.frame_count

    @property
    def position(self) -> int:
        """Bytes fed so far."""
        return self._parser.position

    def feed(self, chunk: Union[bytes, bytearray, memoryview]) -> list:
        """Feed a chunk of the stream; return the events it completed."""
        if self._closed:
            raise ValueError("feed() after close()")
        if self._one is None or self._resume:
            return self._run(self._parser.feed(chunk))
        # Live streams feed a few events at a time: a plain small batch is parsed and
        # decoded in one native call (about half the cost of the general path); big
        # batches come back for the GC-paused bulk decode.
        got = self._parser.feed_decode(chunk, self._many, _GC_PAUSE_MIN)
        return got if type(got) is list else self._run(got)

    def close(self) -> list:
        """End of stream: return the remaining events (a final event without its
        closing blank line is decoded, like the reference client)."""
        if self._closed:
            return self._run(None) if self._resume else []
        self._closed = True
        return self._run(self._parser.close())

    # -- internals ---------------------------------------------------------------

    def _run(self, batch) -> list:
        out: list = []
        if batch is not None and not self._resume:
            # Common case: nothing left over from an earlier error.
            self._decode_batch(batch, 0, out)
            if batch.error is not None:
                self._raise_limit(batch, out)
            return out
        if batch is not None:
            self._resume.append((batch, 0))
        while self._resume:
            b, start = self._resume.pop(0)
            self._decode_batch(b, start, out)
            if b.error is not None:
                self._raise_limit(b, out)
        return out

    def _raise_limit(self, b, out: list) -> None:
        kind, message, frame_index, offset = b.error
        # A failed parser: keep nothing queued, the stream cannot go on.
        self._resume.clear()
        raise BufferLimitError(
            f"SSE frame {frame_index} at byte {offset}: {message}",
            frame_index=frame_index,
            offset=offset,
            events=out,
        )

    def _decode_batch(self, b, start: int, out: list) -> None:
        n = len(b)
        if start >= n:
            return
        raw = self._raw
        if b.balanced:
            fh = b.float_hook
            many = self._many_fh if fh else self._many
            if start == 0:
                # Fast path: one decode call for the whole batch.
                converted = False
                try:
                    if raw == "bytes":
                        # Validate every frame's JSON without building objects.
                        items = b.payloads() if len(many(b.array())) == n else None
                    elif raw == "dict" and self._legacy is not None:
                        # Legacy candidates are converted inside the same GC pause, and
                        # fetched before it: any allocation after the pause would
                        # trigger a collection over everything just decoded.
                        cands = b.candidates
                        items = _bulk(many, b.array(), n, self._convert_candidates, cands)
                        converted = True
                    else:
                        items = _bulk(many, b.array(), n)
                except _BULK_ERRORS:
                    items = None  # a bad, legacy or unusual frame somewhere
                if items is not None and len(items) == n:
                    if converted:
                        out.extend(items)
                    else:
                        self._extend(out, items, b, 0)
                    return
            if raw != "bytes":
                self._one_by_one(b, start, out, fh)
                return
        self._per_frame(b, start, n, out)

    def _extend(self, out: list, items: list, b, first: int) -> None:
        """Append decoded frames ``first..``; dict mode converts the legacy candidates."""
        if self._raw == "dict" and self._legacy is not None:
            self._convert_candidates(items, b.candidates, first)
        out.extend(items)

    def _convert_candidates(self, items: list, cands: list, first: int) -> None:
        conv = self._legacy.convert
        last = first + len(items)
        for c in cands:
            if first <= c < last:
                items[c - first] = conv(items[c - first])

    def _per_frame(self, b, start: int, end: int, out: list) -> None:
        for i in range(start, end):
            self._decode_at(b, i, out)

    def _decode_at(self, b, i: int, out: list) -> None:
        try:
            ev = self._decode_one(b.payload(i))
        except DecodeError as e:
            # Keep the frames after the bad one for the next call.
            self._resume.insert(0, (b, i + 1))
            raise _error(type(e), e, b.first_index + i, b.offsets[i], e.field, out) from e
        out.append(ev)

    def _one_by_one(self, b, i: int, out: list, fh: bool) -> None:
        """Frames ``i..`` of a batch whose bulk call failed (a bad frame, unknown members,
        legacy input, an unpaired surrogate escape), decoded one at a time and each once:
        a frame the fast decoder takes costs what it costs inside the bulk call (measured
        +2%, with the GC paused alike); a frame it refuses goes alone to the exact path,
        the legacy conversion or its located error. (Re-running bulk calls around each
        refused frame cost up to twice the frames before it.)"""
        n = len(b)
        payloads = b.payloads()
        one = self._one_fh if fh else self._one
        cands = None
        if self._raw == "dict" and self._legacy is not None and b.candidates:
            cands = set(b.candidates)
        pause = n - i >= _GC_PAUSE_MIN and _gc_isenabled()
        if pause:
            _gc_disable()
        try:
            append = out.append
            for k in range(i, n):
                try:
                    ev = one(payloads[k])
                except _BULK_ERRORS:
                    self._decode_at(b, k, out)  # raises (and queues the rest) on a bad frame
                    continue
                if cands is not None and k in cands:
                    ev = self._legacy.convert(ev)
                append(ev)
        finally:
            if pause:
                _gc_enable()

    def _decode_one(self, payload: bytes) -> Any:
        raw = self._raw
        if raw is not None:
            obj = _loads(payload)
            if raw == "bytes":
                return payload
            if self._legacy is not None:
                obj = self._legacy.convert(obj)
            return obj
        decode_one = _typed_backend().event
        try:
            return decode_one(payload)
        except DecodeError as e:
            first = e
        except RecursionError:
            raise InvalidJsonError("JSON is nested too deeply") from None
        except Exception as e:  # noqa: BLE001 - a decoder must only raise our types
            raise EventValidationError(f"{type(e).__name__}: {e}") from e
        if isinstance(first, InvalidJsonError):
            # msgspec rejects escaped lone surrogates that JSON (and the reference)
            # accept; the stdlib parser takes them.
            obj = _loads(payload)
            if self._legacy is not None:
                obj = self._legacy.convert(obj)
            return _decode_obj(decode_one, obj)
        if self._legacy is None:
            raise first
        # Slow path: maybe a legacy shape; convert and try again.
        obj = _loads(payload)
        if not isinstance(obj, dict):
            raise first
        return _decode_obj(decode_one, self._legacy.convert(obj))


def _decode_obj(decode_one, obj: Any) -> Any:
    try:
        return decode_one(obj)
    except DecodeError:
        raise
    except RecursionError:
        raise EventValidationError("event is nested too deeply") from None
    except Exception as e:  # noqa: BLE001 - a decoder must only raise our types
        raise EventValidationError(f"{type(e).__name__}: {e}") from e


def decode_sse(
    data: Union[bytes, bytearray, memoryview],
    *,
    raw: Optional[str] = None,
    legacy: bool = True,
    max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
) -> list:
    """Decode a whole recorded SSE stream. Framing runs in Rust with the GIL released;
    from 2 MiB on it runs on a Rust thread, part by part, ahead of the decoding."""
    dec = SseDecoder(raw=raw, legacy=legacy, max_buffer_size=max_buffer_size)
    dec._closed = True
    candidates = bool(legacy) and raw == "dict"
    if len(data) < _PIPELINE_MIN:
        batch = _native.split_sse(data, max_buffer_size, check=True, candidates=candidates)
        return dec._run(batch)
    if not isinstance(data, bytes):
        data = bytes(data)
    out: list = []

    def consume(batch) -> None:
        out.extend(dec._run(batch))

    try:
        with whole_call_gc_pause():
            _native.split_sse_parts(
                data, consume, _PART, _MAX_PART, max_buffer_size, check=True, candidates=candidates
            )
    except DecodeError as e:
        e.events = out + list(e.events)
        raise
    return out


# Inputs this large are framed on a Rust thread, in parts growing from _PART to _MAX_PART
# (a small first part starts the overlap early; few parts mean few decode calls).
_PIPELINE_MIN = 2 << 20
_PART = 128 << 10
_MAX_PART = 512 << 10


class whole_call_gc_pause:
    """Pause the cyclic GC for a whole multi-part decode when no other Python thread
    exists, as a single bulk call would (see ``_bulk``): re-enabling it between parts runs
    collections over everything decoded so far, again and again (measured 5-30 ms inside
    a 50 ms call). With other threads running, only each msgspec call pauses it."""

    __slots__ = ("_paused",)

    def __enter__(self) -> "whole_call_gc_pause":
        self._paused = _threading.active_count() == 1 and _gc_isenabled()
        if self._paused:
            _gc_disable()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._paused:
            _gc_enable()


def _chunks_of(source: Any, chunk_size: int) -> Iterator[bytes]:
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            yield from _chunks_of(f, chunk_size)
        return
    read = getattr(source, "read", None)
    if read is not None:
        while True:
            chunk = read(chunk_size)
            if not chunk:
                return
            yield chunk.encode("utf-8") if isinstance(chunk, str) else chunk
    else:
        for chunk in source:
            yield chunk.encode("utf-8") if isinstance(chunk, str) else chunk


def iter_sse(
    source: Union[str, "os.PathLike[str]", Any, Iterable[bytes]],
    *,
    raw: Optional[str] = None,
    legacy: bool = True,
    max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Iterator[Any]:
    """Stream the events of a file (path or binary file object) or of an iterable of
    byte chunks, in constant memory. On an error, the events before the failing frame
    are yielded first, then the exception is raised (its ``events`` lists those of the
    failing chunk, already yielded). A path to a file of two chunks or more is read and
    framed on a Rust thread, ahead of the decoding (``_native.SseFileFrames``)."""
    dec = SseDecoder(raw=raw, legacy=legacy, max_buffer_size=max_buffer_size)
    steps: Iterator[list]  # the events of each chunk
    if isinstance(source, (str, os.PathLike)) and _file_size(source) >= 2 * chunk_size:
        dec._closed = True
        frames = _native.SseFileFrames(
            os.fspath(source), chunk_size, max_buffer_size, check=True,
            candidates=bool(legacy) and raw == "dict",
        )
        steps = (dec._run(batch) for batch in frames)
    else:
        steps = _fed(dec, _chunks_of(source, chunk_size))
    while True:
        try:
            events = next(steps, None)
        except DecodeError as e:
            yield from e.events
            raise
        if events is None:
            return
        yield from events


def _fed(dec: SseDecoder, chunks: Iterator[bytes]) -> Iterator[list]:
    for chunk in chunks:
        yield dec.feed(chunk)
    yield dec.close()


def _file_size(path: Any) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return -1  # let open() report it


async def aiter_sse(
    source: AsyncIterable[bytes],
    *,
    raw: Optional[str] = None,
    legacy: bool = True,
    max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE,
) -> AsyncIterator[Any]:
    """Decode an async iterator of byte chunks, e.g. ``httpx`` ``response.aiter_bytes()``.
    Errors behave as in :func:`iter_sse`."""
    dec = SseDecoder(raw=raw, legacy=legacy, max_buffer_size=max_buffer_size)
    async for chunk in source:
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        try:
            events = dec.feed(chunk)
        except DecodeError as e:
            for ev in e.events:
                yield ev
            raise
        for ev in events:
            yield ev
    try:
        events = dec.close()
    except DecodeError as e:
        for ev in e.events:
            yield ev
        raise
    for ev in events:
        yield ev
