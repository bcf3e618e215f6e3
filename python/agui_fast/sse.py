"""Decoding AG-UI Server-Sent Event streams.

The decoder is native (``agui_fast._native.SseDecoder``, see docs/sse.md): a WHATWG
event-stream parser, then one msgspec call over all the frames of a chunk, with a
fallback chain for what that call refuses. This module picks the msgspec decoders for
the ``raw`` mode:

- ``raw=None`` (default): ``agui_fast.core`` Structs;
- ``raw="dict"``: plain JSON values (any JSON, like the TypeScript client);
- ``raw="bytes"``: each frame's JSON text as ``bytes`` (checked to be valid JSON).

Legacy 0.x input (``THINKING_*``, binary content parts, legacy nulls) is converted as
the reference client's compatibility boundary does, natively (the core's converter, the
one ``agui_fast.stream`` replays use; ``legacy=False`` turns that off); the fast path
pays nothing for it.

Errors (docs/sse.md, "Errors"): a call decodes every frame it completed; if some fail,
it raises one :class:`~agui_fast.errors.DecodeError` for them all: the first error
(``frame_index``, ``offset`` of the frame's first ``data`` line, ``field``) carrying
``events`` (every event of the call, also those after the bad frames) and ``errors``
(all of the call's errors). Nothing is queued for later calls.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Iterator, Optional

from . import _native, _typed
from ._plumbing import (
    DEFAULT_CHUNK_SIZE, DEFAULT_MAX_DEPTH, AsyncSource, Raw, Source, aiter_events, aread_chunks,
    check_chunk_size, iter_events, options, read_chunks,
)

__all__ = [
    "SseDecoder",
    "decode_sse",
    "iter_sse",
    "aiter_sse",
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_BUFFER_SIZE",
    "DEFAULT_CHUNK_SIZE",
    "DEFAULT_MAX_DEPTH",
]

#: Maximum buffered size of one event (10 MiB, like the reference client).
DEFAULT_MAX_FRAME_SIZE: int = _native.SSE_DEFAULT_MAX_BUFFER
DEFAULT_MAX_BUFFER_SIZE: int = DEFAULT_MAX_FRAME_SIZE  # the old name

# (many, many with float_hook, one, one with float_hook, exact path, items are the result)
_BACKENDS = {
    None: (
        _typed.EVENT_LIST_DECODER.decode, _typed.EVENT_LIST_DECODER_FH.decode,
        _typed.EVENT_DECODER.decode, _typed.EVENT_DECODER_FH.decode, _typed.exact_event, False,
    ),
    "dict": (
        _typed.VALUE_DECODER.decode, _typed.VALUE_DECODER_FH.decode,
        _typed.VALUE_DECODER.decode, _typed.VALUE_DECODER_FH.decode, _typed.exact_value, False,
    ),
    "bytes": (_typed.RAW_LIST_DECODER.decode, _typed.RAW_LIST_DECODER.decode, None, None, _typed.exact_bytes, True),
}


_MODES = {None: 0, "dict": 1, "bytes": 2}  # the native decoders' numbering


def _native_decoder(
    cls: Any, raw: Any, legacy: bool, max_frame_size: int, max_depth: int, max_buffer_size: Optional[int],
    lines: bool = False,
) -> Any:
    mode, max_frame_size, max_depth = options(raw, max_frame_size, max_depth, max_buffer_size, 3)
    return _native.SseDecoder.__new__(cls, _BACKENDS[mode], max_frame_size, max_depth, bool(legacy), _MODES[mode], lines)


class SseDecoder(_native.SseDecoder):
    """Incremental SSE decoder: ``feed(chunk) -> list``, ``close() -> list``.

    ``raw``: ``None`` (typed events), ``"dict"`` or ``"bytes"``; ``legacy``: convert 0.x
    input (default on); ``max_frame_size``: bytes one event may buffer (data plus
    incomplete line), more raises :class:`~agui_fast.errors.BufferLimitError` and the
    decoder stays failed; ``max_depth``: deepest JSON nesting of an event. ``feed`` takes
    bytes-like chunks only; ``feed`` after ``close`` raises ``ValueError``.
    """

    __slots__ = ()

    def __new__(
        cls,
        *,
        raw: Raw = None,
        legacy: bool = True,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_buffer_size: Optional[int] = None,
    ) -> "SseDecoder":
        return _native_decoder(cls, raw, legacy, max_frame_size, max_depth, max_buffer_size)


decode_sse = _native.SseCodec((_BACKENDS[None], _BACKENDS["dict"], _BACKENDS["bytes"]), options).decode_sse
"""``decode_sse(data, *, raw=None, legacy=True, max_frame_size=..., max_depth=...)``:
decode a whole recorded SSE stream (native: framing with the GIL released, from 2 MiB on
on a Rust thread, part by part, ahead of the decoding)."""


def iter_sse(
    source: Source,
    *,
    raw: Raw = None,
    legacy: bool = True,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_depth: int = DEFAULT_MAX_DEPTH,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_buffer_size: Optional[int] = None,
) -> Iterator[Any]:
    """Stream the events of a :data:`~agui_fast._plumbing.Source` in constant memory. On
    an error, the events of the failing chunk (also those after the bad frames) are
    yielded first, then the error is raised."""
    check_chunk_size(chunk_size)
    dec = _native_decoder(SseDecoder, raw, legacy, max_frame_size, max_depth, max_buffer_size)
    return iter_events(dec, read_chunks(source, chunk_size))


def aiter_sse(
    source: AsyncSource,
    *,
    raw: Raw = None,
    legacy: bool = True,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_depth: int = DEFAULT_MAX_DEPTH,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    max_buffer_size: Optional[int] = None,
) -> AsyncIterator[Any]:
    """:func:`iter_sse` for ``async for``: the same sources (a file is read on a worker
    thread) and async iterables of chunks, e.g. ``httpx``'s ``response.aiter_bytes()``.
    Errors behave as in :func:`iter_sse`."""
    check_chunk_size(chunk_size)
    dec = _native_decoder(SseDecoder, raw, legacy, max_frame_size, max_depth, max_buffer_size)
    return aiter_events(dec, aread_chunks(source, chunk_size))
