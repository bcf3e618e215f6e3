"""The Python API behaves like ag_ui.core: construction, extras, dumps, interop."""

import json

import msgspec
import pytest
from hypothesis import given, settings, strategies as st
from pydantic import TypeAdapter

import ag_ui.core as ref
from ag_ui._generated import models as ref_models
from ag_ui.encoder import EventEncoder as RefEncoder

import agui_fast.core as core
from agui_fast.core import (
    AssistantMessage, CustomEvent, EventType, FunctionCall, RunFinishedEvent,
    RunFinishedSuccessOutcome, StateDeltaEvent, TextMessageContentEvent,
    TextMessageStartEvent, TokenUsage, ToolCall, UserMessage, TextPart,
)
from agui_fast.decoder import decode_event
from agui_fast.encoder import EventEncoder
from agui_fast.interop import from_ag_ui, to_ag_ui

from conftest import by_name, case_input, load_jsonl

EVENTS = load_jsonl("codec/events.jsonl")
REF_EVENT = TypeAdapter(ref.Event)
ENC = EventEncoder()


def test_construction_like_ag_ui():
    a = TextMessageStartEvent(type=EventType.TEXT_MESSAGE_START, message_id="m1", role="assistant")
    b = TextMessageStartEvent(message_id="m1", role="assistant")
    c = TextMessageStartEvent(messageId="m1", role="assistant")  # populate by alias
    assert a == b == c
    assert a.type is EventType.TEXT_MESSAGE_START and a.type == "TEXT_MESSAGE_START"
    with pytest.raises(ValueError):
        TextMessageStartEvent(type=EventType.TEXT_MESSAGE_END, message_id="m1")
    assert UserMessage(id="u", role="user", content="hi").role == "user"


def test_verified_encoder_outputs_of_the_reference():
    # events-1.0.md §1.4, written the way ag_ui users write them.
    cases = [
        (TextMessageStartEvent(message_id="m1"),
         'data: {"type":"TEXT_MESSAGE_START","messageId":"m1"}\n\n'),
        (TextMessageContentEvent(message_id="m1", delta="x", extra_field=1, anotherOne=None),
         'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x","extra_field":1,"anotherOne":null}\n\n'),
        (CustomEvent(name="n", value=None), 'data: {"type":"CUSTOM","name":"n","value":null}\n\n'),
        (StateDeltaEvent(delta=[{"op": "move", "from": "/a", "path": "/b"}, {"op": "add", "path": "/x", "value": None}]),
         'data: {"type":"STATE_DELTA","delta":[{"op":"move","from":"/a","path":"/b"},{"op":"add","path":"/x","value":null}]}\n\n'),
        (RunFinishedEvent(thread_id="t", run_id="r", outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=["a"]), usage=[TokenUsage(input_tokens=1, provider="p")]),
         'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"success","pendingToolCallIds":["a"]},"usage":[{"provider":"p","inputTokens":1}]}\n\n'),
        (RunFinishedEvent(thread_id="t", run_id="r", outcome={"type": "cancelled"}, usage=[]),
         'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"},"usage":[]}\n\n'),
        (core.MessagesSnapshotEvent(messages=[AssistantMessage(id="a", tool_calls=[ToolCall(id="tc", function=FunctionCall(name="f", arguments="{}"))]), core.ToolMessage(id="t", content="c", tool_call_id="tc", subagent_run_id="s"), core.ActivityMessage(id="x", activity_type="PLAN", content={})]),
         'data: {"type":"MESSAGES_SNAPSHOT","messages":[{"id":"a","role":"assistant","toolCalls":[{"id":"tc","type":"function","function":{"name":"f","arguments":"{}"}}]},{"subagentRunId":"s","id":"t","role":"tool","content":"c","toolCallId":"tc"},{"id":"x","role":"activity","activityType":"PLAN","content":{}}]}\n\n'),
        (core.ReasoningMessageStartEvent(message_id="m"),
         'data: {"type":"REASONING_MESSAGE_START","messageId":"m","role":"reasoning"}\n\n'),
        (core.SubagentFinishedEvent(subagent_run_id="s", outcome={"type": "suspended"}),
         'data: {"type":"SUBAGENT_FINISHED","subagentRunId":"s","outcome":{"type":"suspended"}}\n\n'),
    ]
    for event, expected in cases:
        assert ENC.encode(event) == expected
        assert RefEncoder().encode(to_ag_ui(event)) == expected


def test_dicts_given_for_nested_models_are_converted():
    ev = RunFinishedEvent(thread_id="t", run_id="r", outcome={"type": "cancelled"})
    assert isinstance(ev.outcome, core.RunFinishedCancelledOutcome)
    ev = StateDeltaEvent(delta=[{"op": "move", "from": "/a", "path": "/b"}])
    assert isinstance(ev.delta[0], core.MoveOperation) and ev.delta[0].from_ == "/a"
    msg = UserMessage(id="u", content=[{"type": "text", "text": "hi", "extra": 1}])
    assert isinstance(msg.content[0], TextPart) and msg.content[0].model_extra == {"extra": 1}


def test_extras_survive_decode_and_encode_at_every_level():
    src = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "u", "role": "user", "content": [{"type": "text", "text": "t", "p": 1}], "m": [1]}],
        "top": {"a": None},
    }
    ev = decode_event(json.dumps(src))
    assert ev.model_extra == {"top": {"a": None}}
    assert ev.messages[0].model_extra == {"m": [1]}
    assert ev.messages[0].content[0].model_extra == {"p": 1}
    assert ENC.encode(ev) == RefEncoder().encode(REF_EVENT.validate_python(src))


def test_snake_case_names_are_accepted_like_the_reference():
    ev = decode_event('{"type":"TEXT_MESSAGE_END","message_id":"m"}')
    assert ev.message_id == "m" and ev.model_extra == {}
    # camelCase wins and the snake_case key is kept as an extra (as in the reference)
    ev = decode_event('{"type":"TEXT_MESSAGE_END","messageId":"m","message_id":"x"}')
    assert ev.message_id == "m" and ev.model_extra == {"message_id": "x"}


def test_model_dump_matches_reference():
    ev = RunFinishedEvent(thread_id="t", run_id="r", outcome={"type": "cancelled"}, usage=[TokenUsage(input_tokens=1)], extra_x=None)
    r = to_ag_ui(ev)
    assert ev.model_dump() == r.model_dump()
    assert ev.model_dump(by_alias=True) == r.model_dump(by_alias=True)
    assert ev.model_dump_json(by_alias=True) == r.model_dump_json(by_alias=True)
    mv = core.MoveOperation(from_="/a", path="/b")
    assert mv.model_dump() == ref_models.MoveOperation(from_="/a", path="/b").model_dump() == {"op": "move", "from": "/a", "path": "/b"}


def test_model_copy_and_validate():
    ev = TextMessageContentEvent(message_id="m", delta="d", x=1)
    cp = ev.model_copy(update={"delta": "e", "y": 2})
    assert cp.delta == "e" and cp.model_extra == {"x": 1, "y": 2} and ev.delta == "d"
    assert TextMessageContentEvent.model_validate({"messageId": "m", "delta": "d"}).message_id == "m"
    assert TextMessageContentEvent.model_validate_json(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}').delta == "d"


def test_constraints():
    with pytest.raises(ValueError):
        decode_event('{"type":"RUN_ERROR","message":"m","usage":[{"inputTokens":-1}]}')
    with pytest.raises(ValueError, match="interrupts"):
        decode_event('{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[]}}')
    assert decode_event('{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}').delta == ""


@by_name(EVENTS)
def test_interop_round_trip_on_every_vector(case):
    ours = decode_event(case_input(case))
    theirs = REF_EVENT.validate_python(json.loads(case_input(case)))
    assert to_ag_ui(ours) == theirs
    back = from_ag_ui(theirs)
    assert back == ours and back.__dict__ == ours.__dict__
    assert ours.model_dump(by_alias=True) == theirs.model_dump(by_alias=True)
    assert ours.model_dump() == theirs.model_dump()


def test_deep_nesting_is_a_clear_error_not_a_recursion_error():
    from agui_fast.errors import InvalidJsonError

    deep = '{"type":"RAW","event":' + "[" * 100000 + "]" * 100000 + "}"
    with pytest.raises(InvalidJsonError):
        decode_event(deep)
    from agui_fast.errors import DecodeError

    with pytest.raises(DecodeError):
        decode_event("[" * 100000)


@pytest.mark.parametrize("name", ["events", "types", "capabilities", "token_usage", "version", "deprecated"])
def test_reference_module_paths(name):
    # `from ag_ui.core.<name> import X` keeps working after the one-import swap
    import importlib

    mine = importlib.import_module(f"agui_fast.core.{name}")
    theirs = importlib.import_module(f"ag_ui.core.{name}")
    assert list(mine.__all__) == list(theirs.__all__)
    for n in mine.__all__:
        assert getattr(mine, n) is getattr(core, n, getattr(mine, n)), n
