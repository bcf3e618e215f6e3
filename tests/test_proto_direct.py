"""The direct protobuf encode of event objects (read straight into the encoder's JSON tree,
``rust/agui-py/src/pynode.rs``) gives exactly what the JSON-text route gives: the same
bytes, or the same error (class and message)."""

from __future__ import annotations

import enum
import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_fast import _native, proto
from agui_fast.decoder import decode_event
from agui_fast.encoder import to_builtins

from conftest import by_name, case_input, load_jsonl
from strategies import events, json_values

EVENTS = load_jsonl("codec/events.jsonl")
INVALID = load_jsonl("codec/invalid_events.jsonl")
TYPED = [c for c in EVENTS if c.get("py_sse")]


def outcome(fn, event, framed):
    try:
        return fn(event, framed)
    except Exception as exc:  # the comparison includes the error
        return (type(exc).__name__, str(exc))


def assert_same(event):
    for framed in (True, False):
        direct = outcome(_native.proto_encode_event, event, framed)
        via_json = outcome(_native.proto_encode_event_via_json, event, framed)
        assert direct == via_json


@by_name(TYPED)
def test_struct_vectors(case):
    event = decode_event(case["py_sse"][len("data: ") : -2])
    assert_same(event)
    assert _native.proto_encode_events([event, event]) == _native.proto_encode_event_via_json(event) * 2


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


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(events)
def test_random_structs(event):
    assert_same(event)
    assert_same(to_builtins(event))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
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
def test_deep_nesting_takes_the_json_route(depth):
    assert_same({"type": "RAW", "event": nested(depth)})


def test_extras_shadowing_fields_and_unset():
    from agui_fast.core import TextMessageContentEvent

    ev = TextMessageContentEvent(message_id="m", delta="d")
    ev.__dict__["delta"] = "from extras"  # same wire key as a field: first position, last value
    ev.__dict__["extra"] = [1, {"x": None}]
    ev.__dict__["timestamp"] = None  # omittable key with no value: left out
    assert_same(ev)
    assert_same({"type": "RAW", "event": msgspec.UNSET})


def test_events_batch_mixes_routes():
    batch = [{"type": "RAW", "event": "a"}, {"type": "RAW", "event": "b \udfff"}, {"type": "RAW", "event": nested(300)}]
    with pytest.raises(Exception) as direct:
        _native.proto_encode_events(batch)
    with pytest.raises(Exception) as via_json:
        _native.proto_encode_json(_native.dumps(batch[1]))
    assert type(direct.value) is type(via_json.value) and str(direct.value) == str(via_json.value)
    ok = batch[:1] + [{"type": "RAW", "event": nested(110)}]
    assert _native.proto_encode_events(ok) == b"".join(_native.proto_encode_event_via_json(e) for e in ok)
    assert proto.encode_protobuf_many(batch[:2]) == b"".join(proto.encode_protobuf_frame(e) for e in batch[:2])
