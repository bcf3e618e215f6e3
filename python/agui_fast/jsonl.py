"""Decoding AG-UI logs recorded as JSON Lines: one JSON event per line (what
``agui-fast convert --to jsonl`` writes; blank lines are skipped).

The SSE decoder's parser in its line mode (``agui_core::sse::SseParser::lines``): the
same decoding chain, ``raw`` modes, legacy conversion, limits (``max_frame_size``: the
longest line) and errors as :mod:`agui_fast.sse`, an error naming the event's index
(``frame_index``, blank lines not counted) and the byte offset of its line.
"""

from __future__ import annotations

from typing import Any, Iterator

from . import _native
from ._plumbing import (
    DEFAULT_CHUNK_SIZE, DEFAULT_MAX_DEPTH, Raw, Source, check_chunk_size, iter_events, options, read_chunks,
)
from .sse import _BACKENDS, DEFAULT_MAX_FRAME_SIZE, _native_decoder

__all__ = ["JsonlDecoder", "decode_jsonl", "iter_jsonl"]


class JsonlDecoder(_native.SseDecoder):
    """Incremental JSON Lines decoder: ``feed(chunk) -> list``, ``close() -> list`` (the
    last line may lack its line end). Arguments as :class:`~agui_fast.sse.SseDecoder`."""

    __slots__ = ()

    def __new__(
        cls,
        *,
        raw: Raw = None,
        legacy: bool = True,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> "JsonlDecoder":
        return _native_decoder(cls, raw, legacy, max_frame_size, max_depth, None, True)


decode_jsonl = _native.SseCodec((_BACKENDS[None], _BACKENDS["dict"], _BACKENDS["bytes"]), options, True).decode_sse
"""``decode_jsonl(data, *, raw=None, legacy=True, max_frame_size=..., max_depth=...)``:
decode a whole JSON Lines log (as :func:`~agui_fast.sse.decode_sse` does an SSE log)."""


def iter_jsonl(
    source: Source,
    *,
    raw: Raw = None,
    legacy: bool = True,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_depth: int = DEFAULT_MAX_DEPTH,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> Iterator[Any]:
    """Stream the events of a :data:`~agui_fast._plumbing.Source` in constant memory, as
    :func:`~agui_fast.sse.iter_sse` does."""
    check_chunk_size(chunk_size)
    return iter_events(JsonlDecoder(raw=raw, legacy=legacy, max_frame_size=max_frame_size, max_depth=max_depth),
                       read_chunks(source, chunk_size))
