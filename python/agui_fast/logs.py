"""Recorded AG-UI logs: format detection and typed iteration.

A log is an SSE stream, a length-prefixed protobuf stream or JSON Lines (one event per
line), optionally gzip-compressed.
Format and compression are decided by the core crate's log reader (``agui_core::log``,
through ``_native.LogChunks``); the events are then built by the typed decoders
(``iter_sse`` / ``iter_protobuf`` / ``iter_jsonl``), so they are validated exactly as there. For columns
instead of objects see :mod:`agui_fast.arrow`.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Optional, Union

from . import _native
from ._plumbing import DEFAULT_MAX_DEPTH, Raw
from .errors import DecodeError
from .jsonl import iter_jsonl
from .proto import DEFAULT_MAX_FRAME_SIZE, iter_protobuf
from .sse import iter_sse

__all__ = ["LogProgress", "LogSource", "detect_format", "iter_log"]

LogProgress = _native.LogProgress
"""What a long log call has read so far, for a progress display: pass one as
``progress=`` (``iter_log``, ``to_arrow``) and poll its ``bytes`` (input bytes read:
compressed ones for a gzip log) and ``events`` (counted in steps of a few thousand; by
``to_arrow`` only) from another thread; ``cancel()`` stops a ``to_arrow`` call soon."""

LogSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]

_FORMATS = ("auto", "sse", "protobuf", "proto", "jsonl", "ndjson")


def _arg(source: Any) -> Union[str, bytes]:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    raise TypeError(f"a log is a path or bytes, not {type(source).__name__}")


def _name(source: Any) -> str:
    return os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<bytes>"


def detect_format(source: LogSource) -> Optional[str]:
    """``"sse"``, ``"protobuf"``, ``"jsonl"``, or ``None`` for an empty log, from the first
    bytes of a path or bytes (gzip-compressed logs are looked into). Raises
    ``DecodeError`` for data of no format."""
    return _native.LogChunks(_arg(source)).format


def iter_log(
    source: LogSource,
    format: str = "auto",
    *,
    raw: Raw = None,
    progress: Optional[LogProgress] = None,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Iterator[Any]:
    """Yield the typed events of a log (a path or bytes; SSE, protobuf or JSON Lines, gzip
    or not), in constant memory. ``format``: ``"auto"`` (detected), ``"sse"``,
    ``"protobuf"`` or ``"jsonl"``. Errors are those of ``iter_sse`` / ``iter_protobuf`` /
    ``iter_jsonl`` (the events before the bad frame
    are yielded first) with the log's name in front of the message. ``progress``: a
    :data:`LogProgress` counting the log's bytes read so far. ``max_frame_size``: the
    largest frame (an SSE event, a protobuf message, a JSON line; default 10 MiB): a
    longer one, or a log with no frame boundary, raises ``BufferLimitError`` (protobuf:
    ``FrameTooLargeError``) once that much is read; ``max_depth``: the deepest nesting of
    an event's JSON."""
    if format not in _FORMATS:
        raise ValueError(f"format must be one of {', '.join(_FORMATS)}, not {format!r}")
    arg = _arg(source)
    chunks = _native.LogChunks(arg, format, progress=progress)
    fmt = chunks.format
    if fmt is None:  # empty
        return
    # A plain regular file goes to the decoders by path (they read it themselves);
    # anything else (gzip, a pipe such as /dev/stdin, whose first bytes the reader has
    # already taken, a read whose bytes are counted) is fed from the reader.
    by_path = (
        progress is None and isinstance(arg, str) and not chunks.gzip and os.path.isfile(arg)
        and not arg.startswith(("/dev/", "/proc/"))
    )
    feed: Any = arg if by_path else chunks
    events = {"sse": iter_sse, "protobuf": iter_protobuf, "jsonl": iter_jsonl}[fmt](
        feed, raw=raw, max_frame_size=max_frame_size, max_depth=max_depth
    )
    try:
        yield from events
    except DecodeError as exc:
        name = _name(source)
        if exc.message.startswith(name):  # raised by the reader, which names the log
            raise
        raise type(exc)(
            f"{name}: {exc.message}",
            frame_index=exc.frame_index, offset=exc.offset, field=exc.field, events=exc.events,
        ) from None
