"""``max_depth=`` on every ``agui_fast.stream`` entry point that parses or holds JSON
values: the project's one limit (``agui_core::limits::DEFAULT_MAX_DEPTH``, 512, the
event object included), tested at the boundary through the Python API, configurable per
call, and the same for JSON text, dicts and logs."""

from __future__ import annotations

import json

import pytest

from agui_fast import stream
from agui_fast._native import DEFAULT_MAX_DEPTH
from agui_fast.errors import InvalidJsonError

RUN_STARTED = b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}'
RUN_FINISHED = b'{"type":"RUN_FINISHED","threadId":"t","runId":"r"}'


def snapshot(depth: int) -> bytes:
    """A STATE_SNAPSHOT whose JSON nests ``depth`` levels, the event object included."""
    n = depth - 1
    return b'{"type":"STATE_SNAPSHOT","snapshot":' + b"[" * n + b"]" * n + b"}"


def sse(*events: bytes) -> bytes:
    return b"".join(b"data: " + e + b"\n\n" for e in events)


def _replay(events, **kw):
    return stream.replay(events, raw=True, **kw)


def _applier(events, **kw):
    ap = stream.EventApplier(raw=True, **kw)
    for e in events:
        ap.apply(e)
    return ap.state


def _expander(events, **kw):
    x = stream.ChunkExpander(raw=True, **kw)
    return [x.push(e) for e in events]


def _verifier(events, **kw):
    v = stream.EventVerifier(**kw)
    for e in events:
        v.push(e)


def _replay_log_bytes(events, **kw):
    return stream.replay_log(sse(*events), raw=True, **kw)


def _replay_log_path(events, tmp_path, **kw):
    p = tmp_path / "run.sse"
    p.write_bytes(sse(*events))
    return stream.replay_log(p, raw=True, **kw)


def _replay_logs(events, tmp_path, **kw):
    p = tmp_path / "run.sse"
    p.write_bytes(sse(*events))
    return stream.replay_logs([p, p], raw=True, **kw)


CALLS = {
    "replay": _replay,
    "EventApplier": _applier,
    "expand_chunks": lambda ev, **kw: stream.expand_chunks(ev, raw=True, **kw),
    "ChunkExpander": _expander,
    "verify_events": lambda ev, **kw: stream.verify_events(ev, **kw),
    "EventVerifier": _verifier,
    "compact_events": lambda ev, **kw: stream.compact_events(ev, raw=True, **kw),
    "replay_log(bytes)": _replay_log_bytes,
}
FILE_CALLS = {"replay_log(path)": _replay_log_path, "replay_logs": _replay_logs}


def _as_dicts(events):
    return [json.loads(e) for e in events]


@pytest.mark.parametrize("form", ["text", "dicts"])
@pytest.mark.parametrize("name", list(CALLS))
def test_default_limit_at_the_boundary(name, form):
    call = CALLS[name]
    assert DEFAULT_MAX_DEPTH == 512
    if form == "dicts" and name.startswith("replay_log"):
        pytest.skip("a log is bytes")
    conv = _as_dicts if form == "dicts" else list
    call(conv([RUN_STARTED, snapshot(512), RUN_FINISHED]))
    with pytest.raises(InvalidJsonError) as info:
        call(conv([RUN_STARTED, snapshot(513), RUN_FINISHED]))
    assert info.value.frame_index == 1


@pytest.mark.parametrize("name", list(CALLS))
def test_max_depth_is_configurable(name):
    call = CALLS[name]
    call([RUN_STARTED, snapshot(600), RUN_FINISHED], max_depth=600)
    with pytest.raises(InvalidJsonError):
        call([RUN_STARTED, snapshot(601), RUN_FINISHED], max_depth=600)
    call([RUN_STARTED, snapshot(8), RUN_FINISHED], max_depth=8)
    with pytest.raises(InvalidJsonError):
        call([RUN_STARTED, snapshot(9), RUN_FINISHED], max_depth=8)


@pytest.mark.parametrize("name", list(FILE_CALLS))
def test_log_files_at_the_boundary(name, tmp_path):
    call = FILE_CALLS[name]
    call([RUN_STARTED, snapshot(512), RUN_FINISHED], tmp_path)
    with pytest.raises(InvalidJsonError):
        call([RUN_STARTED, snapshot(513), RUN_FINISHED], tmp_path)
    call([RUN_STARTED, snapshot(700), RUN_FINISHED], tmp_path, max_depth=700)
    with pytest.raises(InvalidJsonError):
        call([RUN_STARTED, snapshot(701), RUN_FINISHED], tmp_path, max_depth=700)


def test_state_patches_follow_the_limit():
    # Each event parses (3 levels above its value), but the second patch would nest the
    # state 1 + 30 + 30 levels: beyond max_depth=50 it fails as the reference's failing
    # patches do (a warning, the state as before).
    nest = "[" * 30 + "]" * 30
    first = ('{"type":"STATE_DELTA","delta":[{"op":"add","path":"/x","value":%s}]}' % nest).encode()
    inner = "/x" + "/0" * 29 + "/-"
    second = ('{"type":"STATE_DELTA","delta":[{"op":"add","path":"%s","value":%s}]}' % (inner, nest)).encode()
    r = stream.replay([first, second], max_depth=50, raw=True)
    assert r.state == {"x": json.loads(nest)}
    assert len(r.warnings) == 1 and r.warnings[0][0] == 1 and "deeper than 50" in r.warnings[0][1]
    r = stream.replay([first, second], max_depth=64, raw=True)
    assert r.warnings == [] and r.state != {"x": json.loads(nest)}


def test_initial_messages_and_state_follow_the_limit():
    deep = json.loads("[" * 600 + "]" * 600)
    with pytest.raises(InvalidJsonError):
        stream.replay([], state={"s": deep})
    assert stream.replay([], state={"s": deep}, max_depth=601, raw=True).state == {"s": deep}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("bad, exc", [("512", TypeError), (1.5, TypeError), (-1, ValueError), (10**9, ValueError)])
def test_bad_max_depth_arguments(name, bad, exc):
    with pytest.raises(exc):
        CALLS[name]([RUN_STARTED], max_depth=bad)
