"""Data kept as given through the stream semantics, on every path: lone surrogates and
the characters whose kept forms they share, as values and as keys; a ``str`` state is a
string; numbers beyond a double are infinities; integers too long for Python's decimal
conversion are one clear error everywhere."""

from __future__ import annotations

import gc
import json
import math
import sys
import threading

import pytest

from agui_fast import _native, core, stream
from agui_fast.errors import AguiError, InvalidJsonError


def sse(events) -> bytes:
    out = []
    for e in events:
        out.append(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n")
    return b"".join(out)


def every_path(events):
    """The final state of the same events replayed as dicts (where they are dicts), JSON
    text, an SSE log, and one at a time."""
    texts = [e if isinstance(e, bytes) else json.dumps(e).encode() for e in events]
    out = {
        "text": stream.replay(texts).state,
        "log": stream.replay_log(sse(texts)).state,
        "log_raw": stream.replay_log(sse(texts), raw=True).state,
    }
    if not any(isinstance(e, bytes) for e in events):
        out["dicts"] = stream.replay(events).state
        ap = stream.EventApplier()
        for e in events:
            ap.apply(e)
        out["applier"] = ap.state
    return out


KEYS = [
    {"type": "STATE_SNAPSHOT", "snapshot": {"\ud800": 1}},
    {"type": "STATE_SNAPSHOT", "snapshot": {"\ud800": 1, "\U0010f800": 2, "a\udbff": "\udfff\U0010ffff"}},
    {"type": "STATE_SNAPSHOT", "snapshot": {"k": ["\U0010f800", "\ud800", "x\U0010fffey"]}},
]


@pytest.mark.parametrize("event", KEYS)
def test_lone_surrogates_and_their_neighbours_are_kept(event):
    for path, state in every_path([event]).items():
        assert state == event["snapshot"], path
        assert list(state) == list(event["snapshot"]), path


def test_escaped_pairs_of_the_kept_range_are_the_character():
    text = b'{"type": "STATE_SNAPSHOT", "snapshot": {"a": "\\udbfe\\udc00", "b": "\\ud800"}}'
    for path, state in every_path([text]).items():
        assert state == {"a": "\U0010f800", "b": "\ud800"}, path


def test_deltas_keep_them_too():
    events = [
        {"type": "STATE_SNAPSHOT", "snapshot": {}},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/\U0010f801", "value": "\ud801"}]},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/\ud801", "value": "\U0010f801"}]},
    ]
    for path, state in every_path(events).items():
        assert state == {"\U0010f801": "\ud801", "\ud801": "\U0010f801"}, path


def test_text_deltas_keep_the_kept_range_apart():
    events = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a\U0010f800"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "\udbfe"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "\udc00"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "\ud83d"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "\ude00"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    ]
    want = "a\U0010f800\U0010f800\U0001f600"
    assert stream.replay(events).messages[0].content == want
    assert stream.replay_log(sse(events)).messages[0].content == want
    assert stream.replay_log(sse(events), raw=True).messages[0]["content"] == want


def test_keys_and_strings_handed_over_in_bulk():
    """Python strings for keys are reused across a hand-over (and across calls): many
    distinct keys (more than any cache holds, so they share its slots), keys of every
    length around its limits, non-ASCII keys, and keys or strings holding lone
    surrogates all come back as given, in order, on every path, twice in a row."""
    inner = ["id", "status", "score", "tags", "é", "日本", "\U0001f600", "\ud800", "a\udbff", "\U0010f800", ""]
    snapshot = {f"item_{i:05d}": {k: (i if n % 2 else f"v{n}{k}") for n, k in enumerate(inner)} for i in range(3000)}
    for n in range(0, 80, 7):
        snapshot["k" * n] = {"x" * n: "y" * n, "é" * n: "\ud800" * (n % 3)}
    events = [
        {"type": "STATE_SNAPSHOT", "snapshot": snapshot},
        {"type": "TEXT_MESSAGE_START", "messageId": "m\ud800", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m\ud800", "delta": "x\udfff"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m\ud800"},
    ]
    for _ in range(2):
        for path, state in every_path(events).items():
            assert state == snapshot, path
            assert list(state) == list(snapshot), path
            assert list(state["item_02999"]) == inner, path
        raw = stream.replay_log(sse(events), raw=True).messages
        assert raw == [{"id": "m\ud800", "role": "assistant", "content": "x\udfff"}]


def test_objects_of_one_shape_are_handed_over_apart():
    """Objects with the same keys (in a row, nested in each other, in another order, one
    key more or fewer, equal values, containers as values) each come back as their own
    dict, equal to what was given; changing one changes no other. Lists of short strings
    sharing some at the same places come back as given."""
    item = lambda i: {"id": i, "status": "pending" if i % 3 else "done", "score": i / 7, "tags": ["a", {"id": i}]}
    snapshot = {
        "items": [item(i) for i in range(50)],
        "keyed": {f"k{i}": item(i) for i in range(20)},
        "nested": {"id": 1, "status": {"id": 2, "status": {"id": 3, "status": None}}},
        "mixed": [{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"a": 1}, {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2}, {}, {}],
        "same": [{"x": [1], "y": {"z": 1}}] * 4,
        "lists": [["x", "y"], ["x", "z"], ["y", "x", "é"], ["x"], [], ["x", "y", "z" * 40], [["x"], "x"]],
    }
    events = [{"type": "STATE_SNAPSHOT", "snapshot": snapshot},
              {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/items/3/status", "value": "failed"}]}]
    expected = json.loads(json.dumps(snapshot))
    expected["items"][3]["status"] = "failed"
    for path, state in every_path(events).items():
        assert state == expected, path
        assert [list(o) for o in state["mixed"]] == [list(o) for o in expected["mixed"]], path
        dicts = [*state["items"], *state["keyed"].values(), *state["mixed"], *state["same"]]
        dicts += [o["tags"][1] for o in state["items"]] + [o["y"] for o in state["same"]]
        assert len({id(o) for o in dicts}) == len(dicts), path
        assert len({id(o["tags"]) for o in state["items"]}) == 50, path
        state["items"][0]["id"] = -1
        state["items"][0]["tags"].append(0)
        state["same"][0]["y"]["z"] = 2
        assert state["items"][1] == expected["items"][1] and state["same"][1] == expected["same"][1], path


def test_objects_of_one_shape_are_the_dicts_json_makes():
    """Runs of objects with the same keys (two to sixteen, scalars only or a container
    among them, keys holding lone surrogates, nested at several depths, at the depth limit
    of the shapes remembered and past it) come back as the dicts ``json.loads`` makes of
    their text: equal, in order, the same size, tracked by the cyclic GC alike, each its
    own."""
    def run(n, i):
        keys = [f"k{j}" if j % 5 else f"\ud800{j}" for j in range(n)]
        return {k: ([i, {"j": j}] if (n + j) % 4 == 0 else i * j + 0.5 if j % 2 else f"s{i % 2}") for j, k in enumerate(keys)}

    def deep(v, d):
        for _ in range(d):
            v = {"down": v}
        return v

    snapshot = {f"n{n}": [run(n, i) for i in range(5)] for n in range(1, 18)}
    snapshot["scalars"] = [{"a": i, "b": "x", "c": None, "d": True} for i in range(5)]
    snapshot["deep"] = [deep({"x": i, "y": [i]}, d) for d in range(12) for i in range(3)]
    events = [{"type": "STATE_SNAPSHOT", "snapshot": snapshot}]
    expected = json.loads(json.dumps(snapshot))

    def dicts(v):
        if isinstance(v, dict):
            yield v
            for x in v.values():
                yield from dicts(x)
        elif isinstance(v, list):
            for x in v:
                yield from dicts(x)

    for path, state in every_path(events).items():
        assert state == expected, path
        got, want = list(dicts(state)), list(dicts(expected))
        assert [list(d) for d in got] == [list(d) for d in want], path
        assert [sys.getsizeof(d) for d in got] == [sys.getsizeof(d) for d in want], path
        assert [gc.is_tracked(d) for d in got] == [gc.is_tracked(d) for d in want], path
        assert len({id(d) for d in got}) == len(got), path
        for d in got:
            d["new"] = 1
        assert all(list(d)[-1] == "new" and len(d) == len(w) + 1 for d, w in zip(got, want)), path


@pytest.mark.parametrize("state", ["[1, 2]", '"x"', "hello", "", "\ud800", "{}"])
def test_a_str_state_is_a_string(state):
    assert stream.replay([], state=state).state == state
    assert stream.EventApplier(state=state).state == state
    # (the native log replay takes the same initial values)
    from agui_fast import _native

    assert _native.replay_log(b"", state=state)[1] == state


def test_bytes_state_is_json_text():
    assert stream.replay([], state=b"[1, 2]").state == [1, 2]


def test_numbers_beyond_a_double_are_infinities_on_every_path():
    events = [
        b'{"type": "STATE_SNAPSHOT", "snapshot": {"a": 1e400, "b": -1e400, "c": 1.5}}',
        b'{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/d", "value": 1e400}]}',
        b'{"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/a", "value": 2e400}]}',
    ]
    for path, state in every_path(events).items():
        assert state == {"a": math.inf, "b": -math.inf, "c": 1.5, "d": math.inf}, path
    r = stream.replay(events)
    assert r.warnings == []
    # a Python state keeps its infinities (and NaN) as given
    s = stream.replay([], state={"a": math.inf, "n": math.nan}).state
    assert s["a"] == math.inf and math.isnan(s["n"])



@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, [1, {"y": math.inf}]])
def test_non_finite_floats_in_events_given_as_objects_are_null_as_in_their_json_text(value):
    """An event given as Python objects replays as its JSON text does, whatever path it
    takes (the plain delta straight to the state, a delta with another member, a Struct,
    the snapshot): a non-finite float is null there, as the encoder writes it."""
    null = json.loads(json.dumps(value).replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null"))
    op = {"op": "add", "path": "/x", "value": value}
    given = [
        [{"type": "STATE_DELTA", "delta": [op]}],
        [{"type": "STATE_DELTA", "delta": [op], "timestamp": 5}],
        [core.StateDeltaEvent(delta=[op])],
        [{"type": "STATE_SNAPSHOT", "snapshot": {"x": value}}],
        [core.StateSnapshotEvent(snapshot={"x": value})],
    ]
    for events in given:
        texts = [_native.dumps(e) if not isinstance(e, dict) else json.dumps(e).replace("-Infinity", "null").replace("Infinity", "null").replace("NaN", "null").encode() for e in events]
        assert stream.replay(texts, state={}).state == {"x": null}, events
        assert stream.replay(events, state={}).state == {"x": null}, events
        ap = stream.EventApplier(state={})
        ap.apply_many(events)
        assert ap.state == {"x": null}, events
    # beside a lone surrogate (the slower writer's route), the same
    for event in (core.StateSnapshotEvent(snapshot={"x": value, "\ud800": "\udc00"}),
                  core.StateDeltaEvent(delta=[op, {"op": "add", "path": "/s", "value": "\udc00"}])):
        want = {"x": null, "\ud800": "\udc00"} if "snapshot" in type(event).__name__.lower() else {"x": null, "s": "\udc00"}
        assert stream.replay([event], state={}).state == want, event
    # a test of such a value compares null, as its JSON text does
    checked = stream.replay([{"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/x", "value": value}]}], state={"x": null})
    assert checked.warnings == [], checked.warnings


TOO_LONG = b"1" * 5001


@pytest.mark.parametrize(
    "event",
    [
        b'{"type": "STATE_SNAPSHOT", "snapshot": {"a": ' + TOO_LONG + b"}}",
        b'{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": ' + TOO_LONG + b"}]}",
        b'{"type": "RAW", "event": [' + TOO_LONG + b"]}",
    ],
)
def test_integers_too_long_for_python_are_one_error_everywhere(event):
    calls = [
        lambda: stream.replay([event]),
        lambda: stream.replay_log(sse([event])),
        lambda: stream.replay_log(sse([event]), raw=True),
        lambda: stream.EventApplier().apply(event),
        lambda: stream.compact_events([event]),
        lambda: stream.expand_chunks([event]),
        lambda: stream.verify_events([event]),
    ]
    for call in calls:
        with pytest.raises(InvalidJsonError, match="integer is too large") as info:
            call()
        assert info.value.frame_index == 0


def test_python_integers_too_long_are_the_same_error():
    big = 10**5000
    with pytest.raises(InvalidJsonError, match="cannot be written as JSON") as info:
        stream.replay([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, {"type": "RAW", "event": big}])
    assert info.value.frame_index == 1
    with pytest.raises(InvalidJsonError, match="state: cannot be written"):
        stream.replay([], state={"a": big})
    # 4300 digits is the limit, inclusive
    ok = b"9" * 4300
    assert stream.replay_log(sse([b'{"type": "STATE_SNAPSHOT", "snapshot": {"a": ' + ok + b"}}"])).state == {"a": int(ok)}


# -- a log that cannot be read: the readers' error classes ---------------------------------


def test_replay_log_raises_what_the_log_readers_raise(tmp_path):
    import gzip

    from agui_fast import logs
    from agui_fast.errors import BufferLimitError, TruncatedStreamError

    good = sse([{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}] * 50)
    truncated = tmp_path / "cut.sse.gz"
    truncated.write_bytes(gzip.compress(good)[:-20])
    oversized = tmp_path / "big.sse"
    oversized.write_bytes(good + b"data: " + b"x" * (11 << 20) + b"\n\n")
    cases = [
        (tmp_path / "missing.sse", FileNotFoundError),
        (tmp_path, OSError),
        (truncated, TruncatedStreamError),
        (oversized, BufferLimitError),
    ]
    for path, cls in cases:
        with pytest.raises(cls) as reader:
            list(logs.iter_log(path))
        for call in (lambda: stream.replay_log(path), lambda: stream.replay_logs([path])):
            with pytest.raises(cls) as info:
                call()
            assert type(info.value) is type(reader.value), path
            assert str(path) in str(info.value)
            assert isinstance(info.value.replay, stream.Replay)  # what was applied before
    # from bytes too, the events before the error applied
    with pytest.raises(BufferLimitError) as info:
        stream.replay_log(oversized.read_bytes())
    assert info.value.frame_index == 50 and len(info.value.replay.warnings) == 0
    with pytest.raises(TruncatedStreamError):
        stream.replay_log(truncated.read_bytes())


@pytest.mark.parametrize("kind", ["object", "array"])
def test_a_deep_state_is_handed_over_on_a_small_thread_stack(kind):
    # 1,500 levels on a thread of 1 MiB (the stack some Python builds give threads): the
    # state is built, handed over and dropped within it.
    depth = 1500
    # (written out by hand: json.dumps recurses past CPython 3.11's recursion limit)
    opening, closing = (b'{"k":', b"}") if kind == "object" else (b"[", b"]")
    snapshot = opening * depth + b"1" + closing * depth
    log = (
        b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
        b'data: {"type":"STATE_SNAPSHOT","snapshot":' + snapshot + b"}\n\n"
        b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
    )
    result: list = []
    old = threading.stack_size(1 << 20)
    try:
        t = threading.Thread(target=lambda: result.append(stream.replay_log(log, max_depth=depth + 1).state))
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    got, levels = result[0], 0
    while isinstance(got, (dict, list)):
        got = got["k"] if isinstance(got, dict) else got[0]
        levels += 1
    assert (levels, got) == (depth, 1)


def test_warnings_and_errors_quote_lone_surrogates_as_the_results_hold_them():
    """An id or a member name holding a lone surrogate reads the same in a warning's
    message, ids and path, and in an error, as in the messages replayed."""
    events = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m\udc00", "role": "assistant", "x\ud800": 1},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "z\ud83d", "delta": "a"},
    ]
    for replay in (lambda: stream.replay_log(sse(events)), lambda: stream.replay(events)):
        r = replay()
        assert r.messages[0].id == "m\udc00"
        removed, missing = r.warnings
        assert "/x\ud800" in removed.message and removed.path == "/x\ud800"
        assert "'z\ud83d'" in missing.message
        assert not any("\U0010f800" <= c for w in r.warnings for c in w.message + (w.path or "") + "".join(w.ids))
    started = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}] + events[:1] * 2
    with pytest.raises(AguiError) as info:
        stream.replay(started, verify=True)
    assert "'m\udc00' is already in progress" in str(info.value) and info.value.ids == ("m\udc00",)
