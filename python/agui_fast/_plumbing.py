"""Stream plumbing shared by ``agui_fast.sse`` and ``agui_fast.proto``: the one chunk
reader, the one ``raw`` vocabulary, the shared keyword options (and their deprecated
spellings), and the one "deliver what was decoded, then raise" helper.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from typing import (
    IO, Any, AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, List, Literal, Optional, Protocol,
    Tuple, Union,
)

from . import _native
from .errors import DecodeError

__all__ = [
    "DEFAULT_CHUNK_SIZE", "DEFAULT_MAX_DEPTH", "Raw", "Source", "AsyncSource", "options", "read_chunks",
    "aread_chunks", "chunk_events",
]

#: Read size of the ``iter_*`` functions on files and file objects (both formats).
DEFAULT_CHUNK_SIZE: int = 1 << 20
#: Deepest nesting of JSON arrays/objects an event may have (``agui_core::limits``).
DEFAULT_MAX_DEPTH: int = _native.DEFAULT_MAX_DEPTH

Raw = Optional[Literal["dict", "bytes"]]
"""``None``: typed events (Structs); ``"dict"``: plain JSON values; ``"bytes"``: each
event's JSON text."""

BytesLike = Union[bytes, bytearray, memoryview]
Source = Union[BytesLike, str, "os.PathLike[str]", IO[bytes], Iterable[Union[bytes, str]]]
"""A bytes-like object (one chunk), a path (a file), a binary file object (read in
``chunk_size`` pieces) or an iterable of chunks (``str`` chunks are UTF-8 encoded)."""


def options(
    raw: Any, max_frame_size: int, max_depth: int, max_buffer_size: Optional[int] = None, depth: int = 1
) -> Tuple[Raw, int, int]:
    """``(raw, max_frame_size, max_depth)`` with ``raw`` checked and the old spellings mapped
    (and a DeprecationWarning pointing ``depth`` Python frames up: the native one-shot
    functions add none, the decoder classes two). The numbers are checked by the native
    side, as every numeric argument is (``_native.check_int``)."""
    if raw is not None and raw != "dict" and raw != "bytes":
        if raw is False or raw is True:  # the protobuf API's old spelling
            msg = "raw=False/True is deprecated: use raw=None (typed) or raw='dict'"
            warnings.warn(msg, DeprecationWarning, stacklevel=1 + depth)
            raw = "dict" if raw else None
        else:
            raise ValueError(f"raw must be None, 'dict' or 'bytes', not {raw!r}")
    if max_buffer_size is not None:  # the SSE API's old name
        warnings.warn("max_buffer_size is deprecated: use max_frame_size", DeprecationWarning, stacklevel=1 + depth)
        max_frame_size = _native.check_limit("max_buffer_size", max_buffer_size)
    return raw, max_frame_size, max_depth


def read_chunks(source: Source, chunk_size: int) -> Iterator[BytesLike]:
    """The chunks of a :data:`Source`."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        yield source
    elif isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            yield from iter(lambda: f.read(chunk_size), b"")
    elif hasattr(source, "read"):
        read = source.read
        while chunk := read(chunk_size):
            yield chunk.encode("utf-8") if isinstance(chunk, str) else chunk
    else:
        for chunk in source:
            yield chunk.encode("utf-8") if isinstance(chunk, str) else chunk


AsyncSource = Union[Source, AsyncIterable[Union[bytes, str]]]
"""A :data:`Source` or an async iterable of chunks (``str`` chunks are UTF-8 encoded)."""


async def aread_chunks(source: AsyncSource, chunk_size: int) -> AsyncIterator[BytesLike]:
    """The chunks of an :data:`AsyncSource`: an async iterable's as they come; a file's (a
    path or a file object) read on a worker thread, so the event loop never waits on a
    disk; anything else as :func:`read_chunks` gives them."""
    if hasattr(source, "__aiter__"):
        async for chunk in source:
            yield chunk.encode("utf-8") if isinstance(chunk, str) else chunk
    elif isinstance(source, (str, os.PathLike)):
        f = await asyncio.to_thread(open, source, "rb")
        try:
            while chunk := await asyncio.to_thread(f.read, chunk_size):
                yield chunk
        finally:
            f.close()
    elif hasattr(source, "read"):
        read = source.read
        while chunk := await asyncio.to_thread(read, chunk_size):
            yield chunk.encode("utf-8") if isinstance(chunk, str) else chunk
    else:
        for chunk in read_chunks(source, chunk_size):
            yield chunk


def check_chunk_size(chunk_size: int) -> int:
    """A ``chunk_size=`` argument: bytes read at a time, 1 to ``_native.MAX_CHUNK_SIZE``."""
    return _native.check_int("chunk_size", chunk_size, 1, _native.MAX_CHUNK_SIZE)


class StreamDecoder(Protocol):
    def feed(self, chunk: Any, /) -> List[Any]: ...
    def close(self) -> List[Any]: ...


def _step(call: Callable[..., List[Any]], *args: Any) -> Tuple[List[Any], Optional[DecodeError]]:
    """One decoder call: its events and its error (which carries them all)."""
    try:
        return call(*args), None
    except DecodeError as e:
        return e.events, e


def chunk_events(decoder: StreamDecoder, chunks: Iterable[Any]) -> Iterator[List[Any]]:
    """The events of each chunk, then of the end of the stream. A failing call's events
    (every event of its chunk) come first, then its error is raised."""
    for chunk in chunks:
        events, err = _step(decoder.feed, chunk)
        yield events
        if err is not None:
            raise err
    events, err = _step(decoder.close)
    yield events
    if err is not None:
        raise err


def iter_events(decoder: StreamDecoder, chunks: Iterable[Any]) -> Iterator[Any]:
    for events in chunk_events(decoder, chunks):
        yield from events


async def aiter_events(decoder: StreamDecoder, chunks: AsyncIterable[BytesLike]) -> AsyncIterator[Any]:
    async for chunk in chunks:
        events, err = _step(decoder.feed, chunk)
        for ev in events:
            yield ev
        if err is not None:
            raise err
    events, err = _step(decoder.close)
    for ev in events:
        yield ev
    if err is not None:
        raise err
