"""The memory budget of a JSON Patch application (``max_patch_bytes``): what a patch
builds (the values it adds and copies) is counted as it is built, a patch past it raises
``JsonPatchLimitError`` (a ``JsonPatchError``, a ``LimitError`` and a ``MemoryError``) and
leaves the document unchanged; replays turn it into the usual warning of a failed patch.
Never an abort, whatever the patch."""

from __future__ import annotations

import copy
import json

import pytest

from agui_fast import stream
from agui_fast.errors import JsonPatchError, JsonPatchLimitError, LimitError
from agui_fast.patch import DEFAULT_MAX_PATCH_BYTES, StateDocument, apply_patch

MB = 1 << 20


def doubling(n: int) -> list:
    """A patch copying the whole document into itself n times: it doubles each time."""
    return [{"op": "copy", "from": "", "path": f"/b{i}"} for i in range(n)]


def shared_list(levels: int) -> list:
    """A list of 2**levels leaves held in `levels` objects (each level shares its child)."""
    a: list = [0]
    for _ in range(levels):
        a = [a, a]
    return a


def shared_tuple(levels: int) -> tuple:
    t: tuple = (0,)
    for _ in range(levels):
        t = (t, t)
    return t


def test_the_error_class():
    assert issubclass(JsonPatchLimitError, JsonPatchError)
    assert issubclass(JsonPatchLimitError, LimitError)
    assert issubclass(JsonPatchLimitError, MemoryError)
    assert DEFAULT_MAX_PATCH_BYTES == 128 * MB


@pytest.mark.parametrize("mode", ["copy", "in_place", "document", "document_text"])
def test_a_doubling_patch_fails_and_leaves_the_document(mode):
    doc = {"a": "x" * 40, "l": [1, 2, 3]}
    before = copy.deepcopy(doc)
    with pytest.raises(JsonPatchLimitError) as info:
        if mode == "copy":
            apply_patch(doc, doubling(40), max_patch_bytes=MB)
        elif mode == "in_place":
            apply_patch(doc, doubling(40), in_place=True, max_patch_bytes=MB)
        else:
            d = StateDocument(doc, max_patch_bytes=MB)
            try:
                d.apply(doubling(40) if mode == "document" else json.dumps(doubling(40)))
            finally:
                assert d.to_python() == before
    e = info.value
    assert e.op == "copy" and 10 <= e.index < 20, e
    assert "exceed the limit of 1048576 bytes (max_patch_bytes)" in str(e)
    assert doc == before


def test_the_default_budget_stops_the_doubling():
    with pytest.raises(JsonPatchLimitError):
        apply_patch({"a": "x" * 40}, doubling(40))


@pytest.mark.parametrize("value", [shared_list(40), shared_tuple(40)], ids=["list", "tuple"])
def test_a_value_sharing_its_parts_is_counted_as_built(value):
    """Deep-copied values are counted node by node: a value that shares its parts costs
    what its copy would take, and stops early (a budget of 1 MiB: the default's 128 MiB
    would be the same count, built 128 times longer)."""
    add = [{"op": "add", "path": "/x", "value": value}]
    with pytest.raises(JsonPatchLimitError):
        apply_patch({}, add, max_patch_bytes=MB)
    with pytest.raises(JsonPatchLimitError):
        apply_patch({}, add, in_place=True, max_patch_bytes=MB)
    d = StateDocument({"k": 1}, max_patch_bytes=MB)
    with pytest.raises(JsonPatchLimitError):
        d.apply(add)
    with pytest.raises(JsonPatchLimitError):
        d.apply([{"op": "test", "path": "/k", "value": value}])
    assert d.to_python() == {"k": 1}


def test_values_within_the_budget_apply():
    big = "x" * (2 * MB)
    patch = [{"op": "add", "path": "/big", "value": big}]
    with pytest.raises(JsonPatchLimitError):
        StateDocument({}, max_patch_bytes=MB).apply(json.dumps(patch))
    d = StateDocument({}, max_patch_bytes=3 * MB)
    d.apply(json.dumps(patch))
    assert d.to_python() == {"big": big}
    # Python strings are shared, not copied: only the slots count
    assert apply_patch({}, patch, max_patch_bytes=MB) == {"big": big}
    # the budget is per patch: many patches within it apply
    d = StateDocument({"a": "x" * 1000}, max_patch_bytes=64 * 1024)
    for i in range(200):
        d.apply([{"op": "copy", "from": "/a", "path": f"/c{i}"}])
    assert len(d.to_python()) == 201


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True])
def test_the_argument(bad):
    with pytest.raises(ValueError if bad == -1 else TypeError):
        apply_patch({}, [], max_patch_bytes=bad)
    with pytest.raises(ValueError if bad == -1 else TypeError):
        StateDocument({}, max_patch_bytes=bad)
    with pytest.raises(ValueError if bad == -1 else TypeError):
        stream.replay([], max_patch_bytes=bad)
    # beyond the machine's sizes: no limit
    assert apply_patch({}, [{"op": "add", "path": "/a", "value": 1}], max_patch_bytes=2**70) == {"a": 1}


BOMB = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"a": "xxxxxxxxxxxxxxxxxxxxxxxxxx"}},
    {"type": "STATE_DELTA", "delta": doubling(25)},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def sse(events) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def test_the_copy_bomb_log_replays_with_a_warning_on_every_path(tmp_path):
    """The ~1 KB log whose one delta doubles the state 25 times (an abort before)."""
    path = tmp_path / "bomb.sse"
    path.write_bytes(sse(BOMB))
    results = [
        stream.replay(BOMB, max_patch_bytes=MB),
        stream.replay([json.dumps(e) for e in BOMB], max_patch_bytes=MB),
        stream.replay_log(sse(BOMB), max_patch_bytes=MB),
        stream.replay_log(path, max_patch_bytes=MB),
        stream.replay_logs([path], max_patch_bytes=MB)[0],
    ]
    for r in results:
        assert r.state == {"a": "xxxxxxxxxxxxxxxxxxxxxxxxxx"}
        assert len(r.warnings) == 1 and r.warnings[0][0] == 2
        assert "exceed the limit of 1048576 bytes" in r.warnings[0][1]
    ap = stream.EventApplier(max_patch_bytes=MB)
    ap.apply_many(BOMB[:2])
    change = ap.apply(BOMB[2])
    assert not change.state and "exceed the limit" in change.warnings[0]
    out = stream.compact_events(BOMB, raw=True, max_patch_bytes=MB)
    assert {"type": "STATE_SNAPSHOT", "snapshot": {"a": "xxxxxxxxxxxxxxxxxxxxxxxxxx"}} in out


def test_copies_share_one_allowance_over_a_replay():
    """Many deltas that each double the state fit one patch's budget each; together they
    spend the replay's allowance for copies, and the state stays bounded."""
    # (values of many parts: Python documents share strings, so a copy of one costs a slot)
    events = [{"type": "STATE_SNAPSHOT", "snapshot": {"a": list(range(1000))}}]
    events += [{"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "", "path": f"/c{i}"}]} for i in range(64)]
    for r in [stream.replay(events, max_patch_bytes=MB), stream.replay_log(sse(events), max_patch_bytes=MB)]:
        assert len(json.dumps(r.state)) < 2 * MB
        assert any("copied by all the patches exceed" in w for _, w in r.warnings), r.warnings
    activity = [{"type": "ACTIVITY_SNAPSHOT", "messageId": "m", "activityType": "x", "content": {"a": list(range(1000))}}]
    activity += [
        {"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "x", "patch": [{"op": "copy", "from": "", "path": f"/c{i}"}]}
        for i in range(64)
    ]
    r = stream.replay(activity, max_patch_bytes=MB, raw=True)
    assert len(json.dumps(r.messages)) < 2 * MB
    assert any("exceed the limit" in w for _, w in r.warnings)
