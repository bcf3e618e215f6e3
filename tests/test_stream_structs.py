"""Events given as Structs replay exactly as their JSON text does: the starts, ends,
deltas, results and run events the engine reads from a Struct's fields (no JSON text)
and the near misses it leaves to the JSON path (lone surrogates, the kept range, extras,
integers past 64 bits or the schema's range, pending chunk streams, verification)."""

from __future__ import annotations

import enum

import pytest

from agui_fast import _native, stream
from agui_fast.core import (
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    TokenUsage,
)
from agui_fast.decoder import decode_event
from agui_fast.errors import AguiError

class Sub(str):
    pass


class DictSub(dict):
    pass


class Color(enum.IntEnum):
    RED = 1


DEEP: object = []
for _ in range(600):
    DEEP = [DEEP]

BEFORE = [
    RunStartedEvent(thread_id="t", run_id="r"),
    TextMessageStartEvent(message_id="m1", role="assistant"),
    TextMessageContentEvent(message_id="m1", delta="a"),
    ToolCallStartEvent(tool_call_id="c1", tool_call_name="f", parent_message_id="m1"),
    ToolCallArgsEvent(tool_call_id="c1", delta="{"),
]

VARIANTS = [
    TextMessageStartEvent(message_id="m9", role="user", name="n", timestamp=1_700_000_000_000),
    TextMessageStartEvent(message_id="m1", role="developer"),
    TextMessageStartEvent(message_id="m9", timestamp=2**53 - 1),
    TextMessageStartEvent(message_id="m\ud800"),
    TextMessageStartEvent(message_id="m\U0010f800"),
    TextMessageStartEvent(message_id="m9", raw_event={"a": 1}),
    TextMessageStartEvent(message_id="m9", subagent_run_id="s"),
    TextMessageContentEvent(message_id="m1", delta="b\ud83d"),
    TextMessageContentEvent(message_id="m1", delta="\ude00c"),
    TextMessageContentEvent(message_id="m1", delta="\U0010f800"),
    TextMessageContentEvent(message_id="nope", delta="x"),
    TextMessageChunkEvent(message_id="k1", delta="x"),
    TextMessageChunkEvent(message_id="m1", delta="y"),
    TextMessageEndEvent(message_id="m1"),
    TextMessageEndEvent(message_id="nope"),
    ToolCallStartEvent(tool_call_id="c1", tool_call_name="g"),
    ToolCallStartEvent(tool_call_id="c9", tool_call_name="f", parent_message_id="zz"),
    ToolCallArgsEvent(tool_call_id="c1", delta="1}"),
    ToolCallChunkEvent(tool_call_id="c1", delta="x"),
    ToolCallChunkEvent(tool_call_id="c8", tool_call_name="h", delta="x"),
    ToolCallEndEvent(tool_call_id="c1"),
    ToolCallResultEvent(message_id="t1", tool_call_id="c1", content="ok"),
    ToolCallResultEvent(message_id="m1", tool_call_id="c1", content="dup", role="tool"),
    ReasoningMessageStartEvent(message_id="r1", role="reasoning"),
    ReasoningMessageContentEvent(message_id="r1", delta="hm"),
    ReasoningMessageEndEvent(message_id="r1"),
    StepStartedEvent(step_name="s"),
    StepFinishedEvent(step_name="s"),
    RunStartedEvent(thread_id="t", run_id="r2", parent_run_id="r"),
    RunFinishedEvent(thread_id="t", run_id="r"),
    RunFinishedEvent(thread_id="t", run_id="r", result={"a": 1}),
    decode_event(b'{"type":"TEXT_MESSAGE_END","messageId":"m1","future":1}'),
    RunFinishedEvent(thread_id="t", run_id="r", usage=[TokenUsage(provider="p", input_tokens=1, output_tokens=2)]),
    RunFinishedEvent(thread_id="t", run_id="r", usage=[]),
    StateSnapshotEvent(snapshot={"a": [1, {"b": "c"}], "d": "\n", "e": 1.5, "f": None, "g": True}),
    StateSnapshotEvent(snapshot=[1, 2]),
    StateSnapshotEvent(snapshot="s"),
    StateSnapshotEvent(snapshot=5),
    StateSnapshotEvent(snapshot={"\ud800": "x\U0010f800"}),
    StateSnapshotEvent(snapshot={"n": 10**30}),
    StateSnapshotEvent(snapshot=DEEP),
    StateSnapshotEvent(snapshot={"x": float("nan"), "y": [float("inf")]}),
    StateSnapshotEvent(snapshot={"x": float("nan"), "y": [float("inf")], "\ud800": "\udc00"}),
    StateDeltaEvent(delta=[{"op": "add", "path": "/s", "value": [float("-inf"), "\udc00"]}]),
    StateSnapshotEvent(snapshot={1: "a", "b": (1, 2)}),
    StateSnapshotEvent(snapshot={"s": Sub("x"), "e": Color.RED, "d": DictSub(a=1)}),
    StateSnapshotEvent(snapshot={"a": {"b": [{"c": {}}]}}, timestamp=1_700_000_000_000),
    StateSnapshotEvent(snapshot={"a": 1}, timestamp=-1),
    StateSnapshotEvent(snapshot={"a": 1}, raw_event={"r": 1}),
    StateSnapshotEvent(snapshot=[]),
    StateSnapshotEvent(snapshot={"x": {"$serde_json::private::Number": "12"}}),
    StateSnapshotEvent(snapshot=[{"$serde_json::private::Number": "1.5", "y": 1}]),
    TextMessageContentEvent(message_id="m1", delta="caf\u00e9 \u2192 \U0001f600"),
    TextMessageContentEvent(message_id="m1", delta="\u2192"),
    TextMessageContentEvent(message_id="m1", delta=""),
    TextMessageContentEvent(message_id="m\u00e9", delta="x"),
    ToolCallArgsEvent(tool_call_id="c1", delta="\U0001f600\U0010f800"),
]

AFTER = [
    StateDeltaEvent(delta=[{"op": "add", "path": "/z", "value": 1}]),
    TextMessageContentEvent(message_id="m1", delta="z"),
    ToolCallArgsEvent(tool_call_id="c1", delta="]"),
    TextMessageEndEvent(message_id="m1"),
]


def json_text(event) -> bytes:
    """The event's JSON text as the binding writes it (a lone surrogate by the surrogate
    writer)."""
    try:
        return _native.dumps(event)
    except Exception:
        return stream._surrogate_json(event)


def outcome(events, **options):
    try:
        r = stream.replay(events, raw=True, **options)
        return (r.messages, r.state, r.warnings, None)
    except AguiError as exc:
        r = exc.replay
        return (r.messages, r.state, r.warnings, (type(exc), str(exc)))


def normalised(out):
    """Generated ids (the boundary's UUIDs) aside."""
    messages, state, warnings, error = out
    return (repr(messages), state, [w.message if hasattr(w, "message") else w for w in warnings], error)


@pytest.mark.parametrize("event", VARIANTS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("options", [{}, {"verify": True}, {"schema": False}, {"compat": False}], ids=str)
def test_structs_replay_as_their_json_text_does(event, options):
    for before in (BEFORE, BEFORE + [TextMessageChunkEvent(message_id="k0", delta="p")]):
        events = before + [event] + AFTER
        texts = [json_text(e) for e in events]
        assert normalised(outcome(events, **options)) == normalised(outcome(texts, **options)), event


@pytest.mark.parametrize("max_depth", [3, 4, 5, 8])
def test_snapshot_structs_nest_as_their_json_text_does(max_depth):
    """A snapshot nested up to the limit and one level past it, as Structs and as text."""
    for levels in range(1, 8):
        value: object = 1
        for _ in range(levels):
            value = {"a": value}
        events = [StateSnapshotEvent(snapshot=value), StateDeltaEvent(delta=[{"op": "add", "path": "/b", "value": 2}])]
        texts = [json_text(e) for e in events]
        assert normalised(outcome(events, max_depth=max_depth)) == normalised(outcome(texts, max_depth=max_depth)), levels


def test_snapshot_structs_leave_the_given_value_alone():
    """The state is a copy: later patches never write into the snapshot the caller gave."""
    snapshot = {"a": [1, 2], "b": {"c": 1}}
    events = [StateSnapshotEvent(snapshot=snapshot),
              StateDeltaEvent(delta=[{"op": "add", "path": "/a/-", "value": 3}, {"op": "replace", "path": "/b/c", "value": 2}])]
    r = stream.replay(events)
    assert r.state == {"a": [1, 2, 3], "b": {"c": 2}}
    assert snapshot == {"a": [1, 2], "b": {"c": 1}}
    r.state["a"].append(9)
    assert snapshot == {"a": [1, 2], "b": {"c": 1}}
