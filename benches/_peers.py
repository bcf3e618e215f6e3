"""The peers: what a Python user does without agui-fast, each written the way its own docs
say. The pure-Python SSE reader (an httpx-sse style line parser and
``TypeAdapter(ag_ui.core.Event)``) is the one ``agui-fast bench`` uses too; the stream
replayer is ``_py_replayer.py``; the protobuf peer is google's ``protobuf`` (upb) with
classes generated from this repository's ``.proto`` files at import (nothing generated is
committed).
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, List

from _data import ROOT
from agui_fast._bench import pydantic_peer, split_sse_py

__all__ = ["pydantic_peer", "split_sse_py", "upb", "upb_dict_log", "upb_log"]


@lru_cache(maxsize=None)
def upb() -> Any:
    """The generated ``events_pb2`` module (``grpc_tools.protoc`` into a temporary dir)."""
    import grpc_tools
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="agui_pb_")
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    args = ["protoc", f"-I{ROOT / 'proto'}", f"-I{include}", f"--python_out={out}"]
    args += [str(p) for p in sorted((ROOT / "proto").glob("*.proto"))]
    if protoc.main(args) != 0:
        raise RuntimeError("grpc_tools.protoc failed")
    sys.path.insert(0, out)
    try:
        return importlib.import_module("events_pb2")
    finally:
        sys.path.remove(out)


def _frames(data: bytes):
    mv, pos = memoryview(data), 0
    while pos < len(mv):
        n = int.from_bytes(mv[pos:pos + 4], "big")
        yield mv[pos + 4:pos + 4 + n]
        pos += 4 + n


def upb_log(data: bytes) -> List[Any]:
    """A length-prefixed protobuf log into upb messages (the C floor: no Python data)."""
    from_string = upb().Event.FromString
    return [from_string(m) for m in _frames(data)]


def upb_dict_log(data: bytes) -> List[dict]:
    """A length-prefixed protobuf log the way a user of the generated classes reads it:
    ``FromString`` and ``MessageToDict`` per frame."""
    from google.protobuf import json_format

    to_dict, from_string = json_format.MessageToDict, upb().Event.FromString
    return [to_dict(from_string(m)) for m in _frames(data)]

