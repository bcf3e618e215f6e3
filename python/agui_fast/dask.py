"""Many logs on Dask (extra ``agui-fast[dask]``): one partition per log, decoded inside
the workers by :func:`agui_fast.arrow.to_arrow` (the Rust reader), so no log data goes
through the client.

``read_logs("logs/**/*.sse")`` accepts local paths, globs and fsspec URLs
(``s3://bucket/logs/**/*.sse.gz`` with ``storage_options``); see ``docs/logs.md``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

import dask
import dask.dataframe as dd
import fsspec
import pandas as pd
import pyarrow as pa
from dask.base import tokenize
from fsspec.implementations.local import LocalFileSystem

from . import _native
from .arrow import count_arg, schema, to_arrow

__all__ = ["read_logs", "to_pandas"]


def to_pandas(table: Any) -> pd.DataFrame:
    """An events table (anything with ``__arrow_c_stream__``) as pandas with Arrow-backed
    columns (``pd.ArrowDtype``): the table's types, nulls kept. ``source`` and ``type``
    are plain strings there (a dictionary per partition would not line up across them),
    and ``json`` too (pyarrow has no ``take`` for ``string_view``, which pandas needs)."""
    t = pa.table(table)
    columns = [
        c.cast(pa.string()) if pa.types.is_dictionary(c.type) or pa.types.is_string_view(c.type) else c
        for c in t.columns
    ]
    return pa.table(columns, names=t.column_names).to_pandas(types_mapper=pd.ArrowDtype)


def _read(path: str, fs: Any, format: str, collect: bool, max_errors: int, max_frame_size: int) -> Any:
    """One log as pandas: its events, or with ``collect`` (events, errors)."""
    options: Dict[str, Any] = dict(
        format=format, threads=1, errors="collect" if collect else "raise", max_errors=max_errors,
        max_frame_size=max_frame_size,
    )
    if isinstance(fs, LocalFileSystem):
        out = to_arrow(path, **options)
        name = None
    else:
        with fs.open(path, "rb") as f:
            data = f.read()
        out = to_arrow(data, **options)
        name = fs.unstrip_protocol(path)
    events, errors = out if collect else (out, None)
    if name is not None:
        events = _named(events, name)
        errors = None if errors is None else _named_errors(errors, name)
    if errors is None:
        return to_pandas(events)
    return to_pandas(events), to_pandas(errors)


def _named(table: Any, name: str) -> pa.Table:
    """Bytes have no name in the ``source`` column: put the URL there."""
    t = pa.table(table)
    col = pa.array([name] * t.num_rows, pa.string()).dictionary_encode()
    return t.set_column(0, t.schema.field(0), col)


def _named_errors(table: Any, name: str) -> pa.Table:
    """The errors table's ``source`` (plain strings) as the URL, for bytes read by fsspec."""
    t = pa.table(table)
    return t.set_column(0, t.schema.field(0), pa.array([name] * t.num_rows, pa.string()))


def read_logs(
    urlpath: Union[str, List[str]],
    *,
    format: str = "auto",
    storage_options: Optional[Dict[str, Any]] = None,
    errors: str = "raise",
    max_errors: int = _native.DEFAULT_MAX_ERRORS,
    max_frame_size: int = _native.PROTO_DEFAULT_MAX_FRAME_SIZE,
) -> Any:
    """A Dask DataFrame of the events of every log matching ``urlpath`` (paths, globs
    with ``**``, or fsspec URLs), one partition per log, in path order. Columns: the
    ``to_arrow`` schema (docs/logs.md).

    ``errors="raise"``: a bad frame fails the computation with the error of
    ``to_arrow``. ``errors="collect"``: ``(events, errors)``, two DataFrames: the good
    rows of every log, and the bad frames and unreadable logs as rows of ``to_arrow``'s
    errors table (one partition per log too; computed together, each log is read once:
    ``dask.compute(events, errors)``). ``max_errors``: the errors one log may collect
    (more raises ``LimitError``). ``max_frame_size``: the largest frame, as for ``to_arrow``
    (default 10 MiB)."""
    if errors not in ("raise", "collect"):
        raise ValueError(f"errors must be 'raise' or 'collect', not {errors!r}")
    max_errors = count_arg("max_errors", max_errors)
    max_frame_size = count_arg("max_frame_size", max_frame_size)
    fs, _, paths = fsspec.get_fs_token_paths(urlpath, storage_options=storage_options or {})
    paths = sorted(paths)
    if not paths:
        raise FileNotFoundError(f"no log matches {urlpath!r}")
    meta = to_pandas(schema())
    if errors == "raise":
        return dd.from_map(
            _read, paths, fs=fs, format=format, collect=False, max_errors=max_errors, max_frame_size=max_frame_size,
            meta=meta, label="read-agui-logs", enforce_metadata=False,
        )
    # One task a log gives both frames' partitions.
    token = tokenize(urlpath, storage_options, format, max_errors, max_frame_size, paths)
    both = [
        dask.delayed(_read, pure=True)(p, fs, format, True, max_errors, max_frame_size, dask_key_name=f"read-agui-logs-{token}-{i}")
        for i, p in enumerate(paths)
    ]
    errors_meta = to_pandas(to_arrow(b"", errors="collect")[1])
    events_df = dd.from_delayed([d[0] for d in both], meta=meta, verify_meta=False)
    errors_df = dd.from_delayed([d[1] for d in both], meta=errors_meta, verify_meta=False)
    return events_df, errors_df
