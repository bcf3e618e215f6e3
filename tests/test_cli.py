"""The command line tools on small logs built from the vectors."""

import json
import subprocess
import sys

import pytest

from agui_fast.cli import detect_format, main
from agui_fast.decoder import decode_event, decode_protobuf, decode_sse
from agui_fast.encoder import EventEncoder

from conftest import load_jsonl

EVENTS = [decode_event(c["py_sse"][6:-2]) for c in load_jsonl("codec/events.jsonl") if c["py_sse"]][:200]


@pytest.fixture
def sse_log(tmp_path):
    path = tmp_path / "run.sse"
    path.write_bytes(EventEncoder().encode_many(EVENTS))
    return path


def test_demo_runs():
    out = subprocess.run([sys.executable, "-m", "agui_fast", "demo"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "decoded back" in out.stdout


def test_convert_round_trip(sse_log, tmp_path, capsys):
    pb = tmp_path / "run.pb"
    back = tmp_path / "back.sse"
    assert detect_format(str(sse_log)) == "sse"
    assert main(["convert", str(sse_log), str(pb)]) == 0
    assert detect_format(str(pb)) == "proto"
    assert main(["convert", str(pb), str(back)]) == 0
    assert len(decode_protobuf(pb.read_bytes())) == len(EVENTS)
    assert len(decode_sse(back.read_bytes())) == len(EVENTS)


def test_stats_counts_and_reports_errors(sse_log, tmp_path, capsys):
    assert main(["stats", str(sse_log)]) == 0
    out = capsys.readouterr().out
    assert f"total" in out and str(len(EVENTS)) in out
    bad = tmp_path / "bad.sse"
    bad.write_bytes(sse_log.read_bytes() + b'data: {"type":"NOPE"}\n\n')
    assert main(["stats", str(bad)]) == 1
    assert "EventValidationError" in capsys.readouterr().err


def test_replay_state(tmp_path, capsys):
    from agui_fast.core import StateDeltaEvent, StateSnapshotEvent

    log = tmp_path / "state.sse"
    log.write_bytes(EventEncoder().encode_many([
        StateSnapshotEvent(snapshot={"n": 1, "items": []}),
        StateDeltaEvent(delta=[{"op": "replace", "path": "/n", "value": 2}, {"op": "add", "path": "/items/-", "value": "a"}]),
        StateDeltaEvent(delta=[{"op": "remove", "path": "/missing"}]),  # fails: skipped, atomically
        StateDeltaEvent(delta=[{"op": "add", "path": "/items/0", "value": "z"}]),
    ]))
    assert main(["replay", str(log)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"n": 2, "items": ["z", "a"]}
    assert "skipped" in captured.err
    assert main(["replay", "--strict", str(log)]) == 1
