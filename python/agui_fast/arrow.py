"""Columnar decoding of AG-UI logs into Arrow (extra ``agui-fast[arrow]`` for pyarrow).

``to_arrow`` decodes in Rust with the GIL released (several sources in parallel on
Rust threads) and returns an Arrow table through the Arrow PyCapsule interface
(``__arrow_c_stream__``): ``pyarrow.table(t)``, ``polars.DataFrame(t)`` or a DuckDB
query over ``t`` import it without a copy. pyarrow is not needed to call it. The schema
is documented in ``docs/logs.md``.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _native
from .logs import LogProgress, LogSource, _arg

__all__ = ["to_arrow", "schema", "sources_of", "count_arg"]

_ERRORS = ("raise", "collect")


def count_arg(name: str, value: Any, least: int = 0) -> int:
    """A limit (a size, a count), checked as every numeric argument is
    (``_native.check_limit``): ``TypeError`` for anything but an int, ``ValueError`` naming it
    below ``least``; past the machine's sizes it means no limit."""
    return _native.check_limit(name, value, least)


def sources_of(source: Union[LogSource, Sequence[LogSource]]) -> Tuple[List[Union[str, bytes]], List[Optional[str]]]:
    """The native arguments for one source or a list of them: (sources, names). A path's
    name is the path; bytes have no name (null ``source`` column)."""
    items = list(source) if isinstance(source, (list, tuple)) else [source]
    args = [_arg(s) for s in items]
    names = [a if isinstance(a, str) else None for a in args]
    return args, names


def to_arrow(
    source: Union[LogSource, Sequence[LogSource]],
    *,
    format: str = "auto",
    threads: Optional[int] = None,
    errors: str = "raise",
    max_buffer_size: Optional[int] = None,
    max_frame_size: int = _native.PROTO_DEFAULT_MAX_FRAME_SIZE,
    max_depth: int = _native.DEFAULT_MAX_DEPTH,
    max_errors: int = _native.DEFAULT_MAX_ERRORS,
    progress: Optional[LogProgress] = None,
) -> Any:
    """Decode logs (a path, bytes, or a list of them; SSE, protobuf or JSON Lines, gzip or
    not) into one Arrow table, one row per event, in source order.

    ``threads``: Rust threads (default: the number of cores; at most 256): one source per thread, or,
    with fewer sources than threads, each source's events parsed on all of them. With more
    than one, the threads are kept between calls (one pool per process, built anew in a
    forked child) and the calling thread waits for them with the GIL released.
    ``errors="raise"``: the first bad frame raises its ``agui_fast.errors`` class with the
    source, frame index and byte offset in the message (``frame_index``, ``offset``,
    ``field`` attributes). ``errors="collect"``: returns ``(events, errors)``, the bad
    frames (and unreadable logs) as rows of an errors table, and decoding goes on; at
    most ``max_errors`` of them in one call (memory stays bounded on a log of nothing but
    bad frames): one more raises ``LimitError`` (a ``MemoryError`` too).
    ``progress``: a :data:`agui_fast.logs.LogProgress` to poll from another thread (bytes
    and events read so far; ``cancel()`` ends the call early with what it has read).
    ``max_frame_size``: the largest frame in every format (an SSE event, a protobuf
    message, a JSON line; default 10 MiB): a longer one, or a log with no frame boundary,
    is a ``BufferLimitError`` / ``FrameTooLargeError`` once that much is read;
    ``max_buffer_size``: the SSE and JSON Lines limit alone, when it should differ.
    ``max_depth``: the nesting allowed in an event (the project's one limit,
    ``agui_core::limits::DEFAULT_MAX_DEPTH``); deeper is an ``InvalidJsonError``.
    """
    if errors not in _ERRORS:
        raise ValueError(f"errors must be 'raise' or 'collect', not {errors!r}")
    args, names = sources_of(source)
    if max_buffer_size is None:
        max_buffer_size = max_frame_size = count_arg("max_frame_size", max_frame_size)
    return _native.logs_to_arrow(  # the numeric arguments are checked there
        args, names, format, threads, errors == "collect", max_buffer_size, max_frame_size, max_depth,
        max_errors=max_errors, progress=progress,
    )


def schema() -> Any:
    """The events table's schema, as an empty table (``pyarrow.schema(schema())``)."""
    return _native.log_schema()
