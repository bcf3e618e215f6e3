"""The official @ag-ui/proto encoder (Node 20) on a sample of the random events of
tests/test_props_events.py: our decoder reads its bytes as the same events, and our encoder
writes the same bytes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agui_fast.decoder import decode_protobuf
from agui_fast.encoder import to_builtins
from agui_fast.proto import encode_protobuf_many

from node_env import ensure_node_modules
from strategies import EventGen, normalise

HERE = Path(__file__).parent


def test_official_protobuf_bytes_of_random_events(tmp_path):
    why = ensure_node_modules()
    if why:
        pytest.skip(why)
    events = EventGen(21, extras=False).events(1_000)
    plain = [to_builtins(e) for e in events]
    src = tmp_path / "events.json"
    src.write_text(json.dumps(plain, ensure_ascii=False), encoding="utf-8")
    proc = subprocess.run(["node", str(HERE / "proto_encode.js"), str(src)], cwd=HERE, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    theirs = proc.stdout
    assert [normalise(to_builtins(e)) for e in decode_protobuf(theirs)] == [normalise(p) for p in plain]
    assert encode_protobuf_many(events) == theirs
