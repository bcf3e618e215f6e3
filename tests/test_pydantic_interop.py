"""pydantic interop of the Structs (issue 11 §3): TypeAdapter, fields of pydantic models,
model_fields, model_fields_set, model_json_schema, model_dump include/exclude,
model_validate errors that are pydantic ValidationErrors, dataclass view."""

import dataclasses
import datetime
import json
import uuid
from typing import List, Optional

import ag_ui.core as ref
import pydantic
import pytest
from pydantic import BaseModel, TypeAdapter

import agui_fast.core as core
from agui_fast.errors import ValidationError


def test_type_adapter_validates_through_msgspec_and_dumps_like_the_reference():
    ta = TypeAdapter(core.Event)
    ev = ta.validate_python({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"})
    assert type(ev) is core.TextMessageContentEvent
    assert ta.validate_python(ev) is ev
    ref_ev = ref.TextMessageContentEvent(message_id="m", delta="x")
    assert ta.dump_json(ev) == TypeAdapter(ref.Event).dump_json(ref_ev)
    assert ta.dump_json(ev, by_alias=True) == TypeAdapter(ref.Event).dump_json(ref_ev, by_alias=True)
    assert ta.dump_python(ev, by_alias=True, mode="json") == ref_ev.model_dump(by_alias=True, mode="json", exclude_none=True)
    with pytest.raises(pydantic.ValidationError):
        ta.validate_python({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": None})
    with pytest.raises(pydantic.ValidationError):
        ta.validate_python(5)


def test_type_adapter_of_message_lists():
    ta = TypeAdapter(List[core.Message])
    msgs = ta.validate_json(b'[{"id":"1","role":"user","content":"hi"},{"id":"2","role":"assistant","toolCalls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]}]')
    assert [type(m) for m in msgs] == [core.UserMessage, core.AssistantMessage]
    assert json.loads(ta.dump_json(msgs, by_alias=True)) == [
        {"id": "1", "role": "user", "content": "hi"},
        {"id": "2", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ]


def test_structs_as_fields_of_pydantic_models():
    class Envelope(BaseModel):
        event: core.Event
        input: Optional[core.RunAgentInput] = None

    env = Envelope.model_validate({"event": {"type": "RUN_ERROR", "message": "boom"}})
    assert type(env.event) is core.RunErrorEvent
    assert env.model_dump(by_alias=True, mode="json") == {"event": {"type": "RUN_ERROR", "message": "boom"}, "input": None}
    with pytest.raises(pydantic.ValidationError) as info:
        Envelope.model_validate({"event": {"type": "RUN_ERROR"}})
    assert info.value.errors()[0]["loc"][:2] == ("event", "message") or "message" in str(info.value)


def test_json_mode_writes_datetimes_and_uuids_inside_any_fields():
    when, uid = datetime.datetime(2026, 1, 2, 3, 4, 5), uuid.UUID(int=1)
    ev = core.StateSnapshotEvent(snapshot={"when": when, "id": uid})
    ref_ev = ref.StateSnapshotEvent(snapshot={"when": when, "id": uid})
    assert TypeAdapter(core.Event).dump_json(ev, by_alias=True) == ref_ev.model_dump_json(by_alias=True, exclude_none=True).encode()


def test_model_fields_like_the_reference():
    for cls_name in ("TextMessageStartEvent", "RunAgentInput", "ToolCall", "AgentCapabilities", "RunFinishedEvent"):
        mine, theirs = getattr(core, cls_name).model_fields, getattr(ref, cls_name).model_fields
        assert list(mine) == list(theirs), cls_name
        for name in mine:
            assert mine[name].alias == theirs[name].alias, (cls_name, name)
            assert mine[name].is_required() == theirs[name].is_required(), (cls_name, name)
    assert core.TextMessageContentEvent.model_fields["delta"].annotation is str
    ev = core.TextMessageContentEvent(message_id="m", delta="d")
    assert ev.model_fields is core.TextMessageContentEvent.model_fields


def test_model_fields_set():
    ev = core.TextMessageStartEvent(message_id="m", name="n", extra_key=1)
    theirs = ref.TextMessageStartEvent(message_id="m", name="n", extra_key=1)
    assert ev.model_fields_set == theirs.model_fields_set == {"message_id", "name", "extra_key"}


FIELDS_SET_CASES = [
    ("TextMessageStartEvent", dict(message_id="m")),
    ("TextMessageStartEvent", dict(message_id="m", role=None, name=None)),  # given at the default
    ("TextMessageStartEvent", dict(message_id="m", role="assistant", timestamp=None, raw_event=None)),
    ("TextMessageContentEvent", dict(type="TEXT_MESSAGE_CONTENT", message_id="m", delta="d")),  # the tag
    ("TextMessageContentEvent", dict(type="TEXT_MESSAGE_CONTENT", message_id="m", delta="d", metadata=None)),
    ("ReasoningMessageStartEvent", dict(message_id="m")),
    ("ReasoningMessageStartEvent", dict(message_id="m", role="reasoning")),  # a literal's default
    ("ToolCall", dict(id="c", type="function", function={"name": "f", "arguments": "{}"})),
    ("ToolCall", dict(id="c", function={"name": "f", "arguments": "{}"})),
    ("TextMessageStartEvent", dict(messageId="m", name=None)),  # camelCase: the lenient path
    ("TextMessageStartEvent", dict(message_id="m", name=None, extra=None)),  # an extra
    ("RunStartedEvent", dict(thread_id="t", run_id="r", parent_run_id=None, input=None)),
    ("UserMessage", dict(id="u", content="x", role="user", name=None)),
    ("ToolCallResultEvent", dict(message_id="m", tool_call_id="c", content="x", role="tool")),
]


@pytest.mark.parametrize("name,kwargs", FIELDS_SET_CASES)
def test_model_fields_set_is_exactly_the_references(name, kwargs):
    """pydantic's rule: the fields given at construction, at their default or not."""
    mine, theirs = getattr(core, name)(**kwargs), getattr(ref, name)(**kwargs)
    assert mine.model_fields_set == theirs.model_fields_set


@pytest.mark.parametrize("name,kwargs", FIELDS_SET_CASES)
def test_model_fields_set_after_validate_and_assignment(name, kwargs):
    cls, ref_cls = getattr(core, name), getattr(ref, name)
    data = ref_cls(**kwargs).model_dump(mode="json", by_alias=True, exclude_unset=True)
    mine, theirs = cls.model_validate(data), ref_cls.model_validate(data)
    assert mine.model_fields_set == theirs.model_fields_set, data
    mine, theirs = cls.model_validate_json(json.dumps(data)), ref_cls.model_validate_json(json.dumps(data))
    assert mine.model_fields_set == theirs.model_fields_set, data
    for field in ref_cls.model_fields:  # assigning a field (its default too) adds it
        if field in cls.__struct_fields__ and not ref_cls.model_fields[field].is_required():
            default = ref_cls.model_fields[field].get_default(call_default_factory=True)
            setattr(mine, field, default)
            setattr(theirs, field, default)
            assert mine.model_fields_set == theirs.model_fields_set, field
    for deep in (False, True):
        assert mine.model_copy(deep=deep).model_fields_set == theirs.model_copy(deep=deep).model_fields_set


def test_model_fields_set_of_nested_models_and_copies():
    body = {"threadId": "t", "runId": "r", "state": None, "messages": [
        {"id": "u", "role": "user", "content": "x", "name": None},
        {"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ], "tools": [], "context": [], "forwardedProps": None}
    mine, theirs = core.RunAgentInput.model_validate(body), ref.RunAgentInput.model_validate(body)
    assert mine.model_fields_set == theirs.model_fields_set
    assert [m.model_fields_set for m in mine.messages] == [m.model_fields_set for m in theirs.messages]
    assert mine.messages[1].tool_calls[0].model_fields_set == theirs.messages[1].tool_calls[0].model_fields_set
    update = {"parent_run_id": None, "thread_id": "t2"}
    assert mine.model_copy(update=update).model_fields_set == theirs.model_copy(update=update).model_fields_set


def test_model_json_schema_names_the_wire_fields():
    schema = core.RunAgentInput.model_json_schema()
    ref_schema = ref.RunAgentInput.model_json_schema()
    assert set(schema["properties"]) == set(ref_schema["properties"])
    assert set(schema["required"]) == set(ref_schema["required"])
    assert set(schema["$defs"]) >= {"UserMessage", "Tool", "Context"}
    path = core.StateDeltaEvent.model_json_schema()["$defs"]["AddOperation"]["properties"]["path"]
    assert path["pattern"] == "^(/([^/~]|~[01])*)*$"


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(include={"thread_id", "messages"}),
        dict(exclude={"state"}),
        dict(exclude={"messages": {0: {"content"}}}, by_alias=True),
        dict(include={"messages": {"__all__": {"id"}}}, by_alias=True),
        dict(exclude={"messages": {"__all__": {"id"}}}),
        dict(exclude_none=True, by_alias=True),
    ],
)
def test_model_dump_include_exclude_like_the_reference(kwargs):
    args = dict(thread_id="t", run_id="r", state={"n": 1, "skip": None}, messages=[{"id": "u", "role": "user", "content": "x"}, {"id": "a", "role": "assistant", "content": "y"}])
    mine = core.RunAgentInput(**args).model_dump(**kwargs)
    theirs = ref.RunAgentInput(**args).model_dump(**kwargs, exclude_unset=True)
    assert mine == theirs


def test_model_validate_errors_are_pydantic_validation_errors():
    with pytest.raises(pydantic.ValidationError) as info:
        core.RunAgentInput.model_validate({"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "robot"}]})
    assert isinstance(info.value, ValidationError) and info.value.loc[:2] == ("messages", 0)
    with pytest.raises(pydantic.ValidationError):
        core.RunAgentInput.model_validate_json(b'{"threadId": "t", "messages": []}')
    # the reference's idiom keeps working
    try:
        core.TextMessageContentEvent(message_id="m", delta=None)
    except pydantic.ValidationError as exc:
        assert exc.errors()[0]["loc"] == ("delta",)
    else:
        raise AssertionError("not refused")


def test_dataclass_view():
    assert dataclasses.is_dataclass(core.RunAgentInput)
    names = [f.name for f in dataclasses.fields(core.RunAgentInput)]
    assert names == list(core.RunAgentInput.__struct_fields__)
    run = core.RunAgentInput(thread_id="t", run_id="r", messages=[])
    assert dataclasses.asdict(run)["thread_id"] == "t"
    assert dataclasses.replace(run, run_id="r2").run_id == "r2"


def test_what_cannot_be_transparent():
    # Documented: our Structs are not ag_ui's pydantic classes; from_ag_ui/to_ag_ui bridge.
    from agui_fast.interop import from_ag_ui, to_ag_ui

    ev = core.RunErrorEvent(message="x")
    assert not isinstance(ev, ref.BaseEvent)
    assert isinstance(to_ag_ui(ev), ref.BaseEvent) and from_ag_ui(to_ag_ui(ev)) == ev


def test_encoder_module_path_of_the_reference():
    """``from ag_ui.encoder.encoder import EventEncoder`` has a counterpart after the swap."""
    import agui_fast.encoder
    from agui_fast.encoder.encoder import AGUI_MEDIA_TYPE, EventEncoder

    assert EventEncoder is agui_fast.encoder.EventEncoder
    assert AGUI_MEDIA_TYPE == "application/vnd.ag-ui.event+proto"
