"""The direct protobuf encode of event objects (the object walk, ``rust/agui-py/src/walk.rs``,
into the encoder's JSON tree) gives exactly what the JSON-text route gives: the same bytes,
or the same error (class and message) -- except where JSON text cannot carry the value:
unpaired surrogates (U+FFFD, as @ag-ui/proto's UTF-8 encoder writes), non-finite floats
(``number_value`` infinity, as @ag-ui/proto writes) and nesting beyond the JSON parser's
128 levels (the walk's limit is ``agui_core::limits::DEFAULT_MAX_DEPTH``)."""

from __future__ import annotations

import enum
import json
import math
import struct

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_fast import _native, proto
from agui_fast.errors import EncodeError
from agui_fast.decoder import decode_event
from agui_fast.encoder import to_builtins

from conftest import by_name, case_input, examples, load_jsonl
from strategies import events, json_values

EVENTS = load_jsonl("codec/events.jsonl")
INVALID = load_jsonl("codec/invalid_events.jsonl")
TYPED = [c for c in EVENTS if c.get("py_sse")]


def outcome(fn, event, framed):
    try:
        return fn(event, framed)
    except Exception as exc:  # the comparison includes the error
        return (type(exc).__name__, str(exc))


def _non_finite(x):
    if isinstance(x, float):
        return not math.isfinite(x)
    if isinstance(x, dict):
        return any(_non_finite(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return any(_non_finite(v) for v in x)
    return False


def _beyond_json_text(via_json):
    """The JSON-text route failed on what only JSON text cannot carry."""
    return isinstance(via_json, tuple) and any(
        w in via_json[1] for w in ("surrogate", "recursion limit", "nesting", "depth")
    )


def assert_same(event):
    for framed in (True, False):
        direct = outcome(_native.proto_encode_event, event, framed)
        via_json = outcome(_native._testing.proto_encode_event_via_json, event, framed)
        if _beyond_json_text(via_json) or _non_finite(event):
            # checked by the dedicated tests below; here: the direct route writes a frame
            assert isinstance(direct, bytes) or direct[0] == "EncodeError", direct
            continue
        assert direct == via_json


@by_name(TYPED)
def test_struct_vectors(case):
    event = decode_event(case["py_sse"][len("data: ") : -2])
    assert_same(event)
    assert _native.proto_encode_events([event, event]) == _native._testing.proto_encode_event_via_json(event) * 2


@by_name(TYPED)
def test_pydantic_vectors(case):
    import pydantic
    import ag_ui.core as ref

    event = pydantic.TypeAdapter(ref.Event).validate_json(case["py_sse"][len("data: ") : -2])
    assert_same(event)


@by_name(EVENTS + INVALID)
def test_dict_vectors(case):
    try:
        event = json.loads(case_input(case))
    except ValueError:
        pytest.skip("not JSON Python reads")
    assert_same(event)


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(events)
def test_random_structs(event):
    assert_same(event)
    assert_same(to_builtins(event))


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["RAW", "CUSTOM", "STATE_SNAPSHOT", "TOOL_CALL_RESULT", "NOPE"]), json_values, json_values)
def test_random_dicts(ty, a, b):
    assert_same({"type": ty, "event": a, "value": a, "snapshot": b, "content": b, "rawEvent": b, "metadata": a})


class Color(enum.Enum):
    RED = "red"
    ESC = 'q"uote'
    ONE = 1
    HALF = 0.5
    NOTHING = None


class MyStr(str):
    pass


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyDict(dict):
    pass


class MyList(list):
    pass


EDGE = [
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": 1.0, "delta": 1e20},  # floats in string fields
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": 10**30, "delta": True, "timestamp": 3.0},
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 2**70},
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1.5},
    {"type": "RAW", "event": [float("nan"), float("inf"), -0.0, 2**64, -(2**63), 1e-300, MyFloat(2.5), MyInt(7)]},
    {"type": "RAW", "event": {"b": 1, "a": 2, "10": 3, "2": 4, "__proto__": 5, "": 6}},
    {"type": "RAW", "event": {Color.RED: 1, "red": 2, MyStr("x"): 3, "x": 4}},  # keys spelled twice
    {"type": "RAW", "event": [Color.RED, Color.ESC, Color.ONE, Color.HALF, Color.NOTHING]},
    {"type": "RAW", "event": MyDict(a=MyList([MyStr("s"), (1, 2)]))},
    {"type": "RAW", "event": {1: "non-str key"}},
    {"type": "RAW", "event": {Color.ONE: "enum key with an int value"}},
    {"type": "RAW", "event": object()},
    {"type": "RAW", "event": "lone \ud800 surrogate"},
    {"type": "RAW", "event": {"k\udc00": 1}},
    {"type": MyStr("CUSTOM"), "name": MyStr("n"), "value": None},
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": None}, {"op": "nope"}]},
    {"type": "STATE_DELTA", "delta": "not a list"},
    {"type": "UNKNOWN_TYPE", "x": 1},
    {"no": "type"},
    [],
    "text",
]


@pytest.mark.parametrize("event", EDGE, ids=range(len(EDGE)))
def test_edge_values(event):
    assert_same(event)


def nested(depth):
    v = 1
    for i in range(depth):
        v = [v] if i % 2 else {"k": v}
    return v


@pytest.mark.parametrize("depth", [50, 98, 99, 100, 101, 127, 128, 200, 2000])
def test_deep_nesting(depth):
    assert_same({"type": "RAW", "event": nested(depth)})


def test_depth_limit_is_the_shared_one():
    limit = _native.ENCODE_MAX_DEPTH  # agui_core::limits::DEFAULT_MAX_DEPTH
    ok = {"type": "RAW", "event": nested(limit - 1)}  # the event object is one level
    frame = proto.encode_protobuf_frame(ok)
    assert proto.decode_event_message(frame[4:], raw="dict")["event"] == nested(limit - 1)
    for bad in ({"type": "RAW", "event": nested(limit)}, {"type": "RAW", "event": nested(100_000)}):
        with pytest.raises(EncodeError, match="depth"):
            proto.encode_protobuf_frame(bad)
        with pytest.raises(EncodeError, match="depth"):
            proto.encode_protobuf_many([bad])
    with pytest.raises(EncodeError, match="depth"):
        _native.proto_encode_event({"type": "RAW", "event": nested(20)}, max_depth=20)
    assert _native.proto_encode_event({"type": "RAW", "event": nested(19)}, max_depth=20)


def test_lone_surrogates_become_replacement_characters():
    # @ag-ui/proto encodes JS strings with a UTF-8 encoder: a lone surrogate is U+FFFD, a
    # pair is the character it forms.
    ev = {"type": "RAW", "event": {"k\udc00": ["a\ud800b", "\ud83d\ude00", "\ude00\ud83d"]}}
    got = proto.decode_event_message(_native.proto_encode_event(ev, False), raw="dict")
    assert got["event"] == {"k\ufffd": ["a\ufffdb", "\U0001f600", "\ufffd\ufffd"]}


def test_infinity_is_a_number_value():
    # issue 14 finding 12: @ag-ui/proto writes number_value inf, not null_value
    def frame(x):
        return _native.proto_encode_event({"type": "RAW", "event": [x, {"k": -x}]}, False)

    one = frame(1.0)
    for x in (math.inf, -math.inf):
        want = one.replace(struct.pack("<d", 1.0), struct.pack("<d", x)).replace(struct.pack("<d", -1.0), struct.pack("<d", -x))
        assert frame(x) == want


def test_events_batch_with_unencodable_values_raises_encode_error():
    batch = [{"type": "RAW", "event": "a"}, {"type": "RAW", "event": object()}]
    with pytest.raises(EncodeError, match="Unable to serialize unknown type"):
        _native.proto_encode_events(batch)
    with pytest.raises(EncodeError):
        proto.encode_protobuf_frame(batch[1])


def test_extras_shadowing_fields_and_unset():
    from agui_fast.core import TextMessageContentEvent

    ev = TextMessageContentEvent(message_id="m", delta="d")
    ev.__dict__["delta"] = "from extras"  # same wire key as a field: first position, last value
    ev.__dict__["extra"] = [1, {"x": None}]
    ev.__dict__["timestamp"] = None  # omittable key with no value: left out
    assert_same(ev)
    assert_same({"type": "RAW", "event": msgspec.UNSET})


def test_protobuf_encoders_raise_encode_error_only():
    # issue 14 finding 8: RecursionError, TypeError, plain ValueError and a decode error
    # came out of the protobuf encoders; now what the reference refuses is an EncodeError
    # (and nothing else), and what it writes is written, as by the SSE encoder.
    from agui_fast.errors import DecodeError

    loop: list = []
    loop.append(loop)
    refused = [
        {"type": "RAW", "event": loop},  # was a RecursionError
        {"type": "RAW", "event": object()},  # was a TypeError
        {"type": "STATE_DELTA", "delta": "not a list"},
    ]
    for ev in refused:
        for encode in (proto.encode_protobuf_frame, proto.encode_event_message, lambda e: proto.encode_protobuf_many([e])):
            with pytest.raises(EncodeError) as info:
                encode(ev)
            assert type(info.value) is EncodeError and not isinstance(info.value, DecodeError)
    accepted = {"type": "RAW", "event": {1: {2, 3}, "b": b"x", "when": __import__("datetime").date(2024, 1, 2)}}
    got = proto.decode_event_message(proto.encode_event_message(accepted), raw="dict")
    assert got["event"] == {"1": [2, 3], "b": "x", "when": "2024-01-02"}
