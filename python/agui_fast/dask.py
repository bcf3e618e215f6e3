"""Many logs on Dask (extra ``agui-fast[dask]``): one partition per log, decoded inside
the workers by :func:`agui_fast.arrow.to_arrow` (the Rust reader), so no log data goes
through the client.

``read_logs("logs/**/*.sse")`` accepts local paths, globs and fsspec URLs
(``s3://bucket/logs/**/*.sse.gz`` with ``storage_options``); see ``docs/logs.md``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

import dask.dataframe as dd
import fsspec
import pandas as pd
import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem

from .arrow import schema, to_arrow

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


def _read(path: str, fs: Any, format: str) -> pd.DataFrame:
    if isinstance(fs, LocalFileSystem):
        return to_pandas(to_arrow(path, format=format, threads=1))
    with fs.open(path, "rb") as f:
        data = f.read()
    return to_pandas(_named(to_arrow(data, format=format, threads=1), fs.unstrip_protocol(path)))


def _named(table: Any, name: str) -> pa.Table:
    """Bytes have no name in the ``source`` column: put the URL there."""
    t = pa.table(table)
    col = pa.array([name] * t.num_rows, pa.string()).dictionary_encode()
    return t.set_column(0, t.schema.field(0), col)


def read_logs(
    urlpath: Union[str, List[str]],
    *,
    format: str = "auto",
    storage_options: Optional[Dict[str, Any]] = None,
) -> dd.DataFrame:
    """A Dask DataFrame of the events of every log matching ``urlpath`` (paths, globs
    with ``**``, or fsspec URLs), one partition per log, in path order. Columns: the
    ``to_arrow`` schema (docs/logs.md). A bad frame fails the computation with the
    error of ``to_arrow``."""
    fs, _, paths = fsspec.get_fs_token_paths(urlpath, storage_options=storage_options or {})
    paths = sorted(paths)
    if not paths:
        raise FileNotFoundError(f"no log matches {urlpath!r}")
    meta = to_pandas(schema())
    return dd.from_map(_read, paths, fs=fs, format=format, meta=meta, label="read-agui-logs", enforce_metadata=False)
