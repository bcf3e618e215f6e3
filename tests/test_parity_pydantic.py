"""Parity with ``ag-ui-protocol`` 1.0 as other code uses it: the reference SDK's own test
suite and public projects built on ``ag_ui.core`` (README, "Compatibility notes"). Each test
is one usage pattern, checked against the reference's result: same values, same bytes, same
exception classes."""

import json
import pickle
from typing import Annotated, List, Optional, Union

import ag_ui.core as ref
import ag_ui.encoder as ref_encoder
import pydantic
import pytest
from pydantic import BaseModel, Field, TypeAdapter

import agui_fast.core as core
import agui_fast.encoder as encoder
from agui_fast.errors import ValidationError

BOTH = pytest.mark.parametrize("M, E", [(ref, ref_encoder), (core, encoder)], ids=["ref", "ours"])


def same(fn):
    """``fn(core_module, encoder_module)`` gives the same result for the reference and us."""
    ours, theirs = fn(core, encoder), fn(ref, ref_encoder)
    assert ours == theirs
    return ours


# -- pydantic discriminated unions built by users from the event classes --------------------


def test_a_users_discriminated_union_of_events():
    def run(M, E):
        Ev = Annotated[Union[M.TextMessageStartEvent, M.TextMessageContentEvent, M.RunErrorEvent], Field(discriminator="type")]
        ta = TypeAdapter(Ev)
        ev = ta.validate_python({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"})
        from_json = ta.validate_json(b'{"type":"RUN_ERROR","message":"boom"}')
        again = ta.validate_python(ev)  # an instance picks its member by its tag attribute
        return type(ev).__name__, ev.delta, type(from_json).__name__, type(again).__name__, ta.dump_json(ev, by_alias=True)

    assert same(run)[0] == "TextMessageContentEvent"


def test_a_users_discriminated_union_rejects_an_unknown_tag_with_a_validation_error():
    for M in (ref, core):
        Ev = Annotated[Union[M.TextMessageStartEvent, M.RunErrorEvent], Field(discriminator="type")]
        with pytest.raises(pydantic.ValidationError):
            TypeAdapter(Ev).validate_python({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"})
        with pytest.raises(pydantic.ValidationError):  # the member's own validation still runs
            TypeAdapter(Ev).validate_python({"type": "RUN_ERROR"})


def test_a_users_discriminated_union_of_messages_by_role_inside_a_model():
    def run(M, E):
        Msg = Annotated[Union[M.UserMessage, M.AssistantMessage, M.ToolMessage], Field(discriminator="role")]

        class Chat(BaseModel):
            messages: List[Msg]

        chat = Chat.model_validate({"messages": [{"id": "1", "role": "user", "content": "hi"}, {"id": "2", "role": "tool", "content": "r", "toolCallId": "t"}]})
        return [type(m).__name__ for m in chat.messages], chat.model_dump_json(by_alias=True, exclude_none=True)

    assert same(run)[0] == ["UserMessage", "ToolMessage"]


def test_the_json_schema_of_a_users_discriminated_union():
    Ev = Annotated[Union[core.TextMessageStartEvent, core.RunErrorEvent], Field(discriminator="type")]
    schema = TypeAdapter(Ev).json_schema()
    assert schema["discriminator"]["propertyName"] == "type"
    assert {"type": "string", "const": "RUN_ERROR"}.items() <= schema["$defs"]["RunErrorEvent"]["properties"]["type"].items()


# -- subclasses with fields of their own (RunAgentInputExt, RunFinishedEventExt, ...) -------


def test_a_subclass_adds_fields_with_camel_case_wire_names():
    def run(M, E):
        class RunFinishedEventExt(M.RunFinishedEvent):
            interrupt_info: Optional[dict] = None
            extra_note: Optional[str] = None

        ev = RunFinishedEventExt(thread_id="t", run_id="r", interrupt_info={"a": 1})
        return (
            E.EventEncoder().encode(ev),
            ev.model_dump(),
            ev.model_dump(by_alias=True),
            ev.model_dump_json(by_alias=True),
            sorted(RunFinishedEventExt.model_fields),
            RunFinishedEventExt.model_fields["interrupt_info"].alias,
        )

    out = same(run)
    assert '"interruptInfo":{"a":1}' in out[0] and "extraNote" not in out[0]


def test_a_subclassed_run_input_reads_its_own_fields_from_camel_case_json():
    def run(M, E):
        class RunAgentInputExt(M.RunAgentInput):
            user_id: Optional[str] = None

        body = {"threadId": "t", "runId": "r", "state": None, "messages": [], "tools": [], "context": [], "forwardedProps": None, "userId": "u"}
        a = RunAgentInputExt.model_validate(body)
        b = RunAgentInputExt.model_validate_json(json.dumps(body))
        c = RunAgentInputExt(thread_id="t", run_id="r", state=None, messages=[], tools=[], context=[], forwarded_props=None, user_id="v")
        return type(a).__name__, a.user_id, b.user_id, c.user_id, c.model_dump(by_alias=True)["userId"]

    assert same(run)[1:4] == ("u", "u", "v")


# -- pydantic methods and arguments ---------------------------------------------------------


@pytest.mark.parametrize("indent", [2, 4])
def test_model_dump_json_indent(indent):
    def run(M, E):
        ev = M.StateSnapshotEvent(snapshot={"a": [1, 2.5, {}], "b": {}, "é": []})
        return ev.model_dump_json(by_alias=True, indent=indent), ev.model_dump_json(indent=indent)

    assert "\n" in same(run)[0]


def test_model_dump_exclude_unset_and_exclude_defaults():
    def run(M, E):
        a = M.TextMessageStartEvent(message_id="m")
        b = M.TextMessageStartEvent(type=M.EventType.TEXT_MESSAGE_START, message_id="m", role="assistant")
        c = M.MessagesSnapshotEvent(messages=[M.UserMessage(id="u", content="c")])
        return [
            a.model_dump(exclude_unset=True),
            a.model_dump(exclude_defaults=True, by_alias=True),
            b.model_dump(exclude_unset=True, by_alias=True),
            b.model_dump(exclude_defaults=True),
            c.model_dump(exclude_unset=True, by_alias=True),
        ]

    assert same(run)[0] == {"message_id": "m"}


def test_model_construct_builds_the_model():
    def run(M, E):
        return E.EventEncoder().encode(M.RunStartedEvent.model_construct(thread_id="t", run_id="r"))

    same(run)


def test_dict_of_a_model_gives_every_field_the_tag_first():
    def run(M, E):
        ev = M.RunErrorEvent(message="x", code="c")
        return dict(ev), [k for k, _ in ev]

    out = same(run)
    assert out[1][0] == "type" and out[0]["code"] == "c"


def test_model_validate_json_of_bad_json_is_a_validation_error():
    for M in (ref, core):
        with pytest.raises(pydantic.ValidationError):
            M.RunAgentInput.model_validate_json(b"{not json")
    with pytest.raises(ValidationError) as info:
        core.RunAgentInput.model_validate_json("[1, 2")
    assert isinstance(info.value, ValueError)


def test_the_encoders_private_encode_sse():
    def run(M, E):
        return E.EventEncoder()._encode_sse(M.TextMessageContentEvent(message_id="m", delta="d"))

    assert same(run).startswith("data: ")


class _Ext(core.CustomEvent):
    note_text: Optional[str] = None


def test_subclass_instances_pickle_and_copy_with_their_own_fields():
    ev = _Ext(name="n", value=1, note_text="x")
    assert pickle.loads(pickle.dumps(ev)) == ev
    assert ev.model_copy(update={"note_text": "y"}).model_dump(by_alias=True)["noteText"] == "y"


# -- BaseEvent built directly (the reference's own encoder tests) ----------------------------


def test_a_base_event_built_directly_encodes_like_the_reference():
    def run(M, E):
        a = M.BaseEvent(type=M.EventType.RAW, timestamp=1648214400000)
        b = M.BaseEvent(type="CUSTOM", raw_event={"a": 1}, metadata={"m": 1}, extra_member=[1])
        c = M.BaseEvent.model_validate({"type": "RAW", "timestamp": 1})
        return [
            (E.EventEncoder().encode(x), x.model_dump_json(by_alias=True), x.model_dump_json(), x.model_dump(), repr(x.type))
            for x in (a, b, c)
        ] + [sorted(a.model_fields_set)]

    out = same(run)
    assert out[0][0] == 'data: {"type":"RAW","timestamp":1648214400000}\n\n'


@pytest.mark.parametrize("kwargs", [{}, {"timestamp": 5}, {"type": "NOPE"}, {"type": 3}, {"type": None, "timestamp": 5}])
def test_a_base_event_needs_a_valid_type(kwargs):
    for M in (ref, core):
        with pytest.raises(pydantic.ValidationError) as info:
            M.BaseEvent(**kwargs)
        assert info.value.errors()[0]["loc"] == ("type",)
        with pytest.raises(pydantic.ValidationError):
            M.BaseEvent.model_validate(kwargs)


def test_an_event_still_refuses_an_extra_named_like_its_tag():
    ev = core.RunErrorEvent(message="x")
    ev.__dict__["type"] = "RUN_ERROR"
    with pytest.raises(ValueError, match="declared field `type`"):
        encoder.EventEncoder().encode(ev)


def test_model_dump_keeps_the_event_type_member_in_python_mode():
    def run(M, E):
        ev = M.RunErrorEvent(message="x")
        d, j = ev.model_dump(), ev.model_dump(mode="json", by_alias=True)
        return type(d["type"]).__name__, d, type(j["type"]).__name__, j

    assert same(run)[0] == "EventType"


# -- more of pydantic's model API (v2 options, v1 names) ------------------------------------


def test_model_dump_json_applies_model_dumps_filters():
    def run(M, E):
        ev = M.RunErrorEvent(message="x", code="c")
        start = M.TextMessageStartEvent(message_id="m")
        return [
            ev.model_dump_json(include={"message"}),
            ev.model_dump_json(exclude={"code"}, by_alias=True),
            ev.model_dump_json(exclude={"code"}, by_alias=True, indent=2),
            start.model_dump_json(exclude_unset=True),
            start.model_dump_json(exclude_defaults=True, by_alias=True),
            ev.model_dump_json(exclude_none=True, by_alias=True),
        ]

    assert same(run)[0] == '{"message":"x"}'


def test_model_dump_json_mode_gives_json_values():
    import datetime
    import uuid

    def run(M, E):
        ev = M.StateSnapshotEvent(snapshot={"t": datetime.date(2024, 1, 2), "u": uuid.UUID(int=1), "s": [1.5, None]})
        return ev.model_dump(mode="json"), ev.model_dump(mode="json", by_alias=True, exclude={"snapshot": {"s"}})

    assert same(run)[0]["snapshot"]["t"] == "2024-01-02"


def test_pydantic_validation_options_are_accepted():
    def run(M, E):
        a = M.RunStartedEvent.model_validate({"threadId": "t", "runId": "r"}, context={"k": 1}, by_alias=True)
        b = M.RunErrorEvent.model_validate_json('{"message": "x"}', strict=False, context=None)
        return a.thread_id, b.message

    assert same(run) == ("t", "x")


def test_the_pydantic_v1_method_names_warn_and_work():
    def run(M, E):
        ev = M.RunErrorEvent(message="x")
        with pytest.warns(DeprecationWarning):
            d = ev.dict(by_alias=True)
        with pytest.warns(DeprecationWarning):
            j = ev.json(by_alias=True)
        with pytest.warns(DeprecationWarning):
            c = ev.copy(update={"message": "y"}).message
        with pytest.warns(DeprecationWarning):
            o = M.RunErrorEvent.parse_obj({"message": "z"}).message
        with pytest.warns(DeprecationWarning):
            r = M.RunErrorEvent.parse_raw('{"message": "w"}').message
        with pytest.warns(DeprecationWarning):
            f = sorted(M.RunErrorEvent.__fields__)
        return d, j, c, o, r, f

    assert same(run)[2:5] == ("y", "z", "w")


def test_class_level_pydantic_attributes():
    def run(M, E):
        cfg = M.RunAgentInput.model_config
        return (
            cfg.get("extra"),
            cfg.get("populate_by_name"),
            cfg["alias_generator"]("forwarded_props"),
            M.RunAgentInput.model_computed_fields,
            M.RunAgentInput.model_rebuild(),
        )

    assert same(run)[:2] == ("allow", True)


# -- pydantic validators on a user's subclass (RunAgentInput subclasses in the wild) ---------

BODY = {"threadId": "t", "runId": "r", "state": None, "messages": [], "tools": [], "context": [], "forwardedProps": None}


def _checked_input(M):
    class Req(M.RunAgentInput):
        @pydantic.model_validator(mode="before")
        @classmethod
        def _defaults(cls, data):
            return {**data, "state": data.get("state") or {"filled": True}}

        @pydantic.field_validator("thread_id", mode="before")
        @classmethod
        def _strip(cls, v):
            return v.strip()

        @pydantic.field_validator("run_id")
        @classmethod
        def _upper(cls, v, info):
            assert v, "empty run id"
            return v.upper() + ("-" + info.data["thread_id"] if "thread_id" in info.data else "")

        @pydantic.model_validator(mode="after")
        def _rules(self):
            if not self.messages:
                raise ValueError("messages must not be empty")
            return self

    return Req


def test_a_subclass_runs_its_pydantic_validators_in_pydantics_order():
    def run(M, E):
        Req = _checked_input(M)
        body = {**BODY, "threadId": " t ", "messages": [{"id": "u", "role": "user", "content": "hi"}]}
        a = Req.model_validate(body)
        b = Req.model_validate_json(json.dumps(body))
        c = TypeAdapter(Req).validate_python(body)
        d = Req(thread_id=" x ", run_id="r", messages=[M.UserMessage(id="u", content="c")], tools=[], context=[], state=None, forwarded_props=None)
        return [(x.thread_id, x.run_id, x.state) for x in (a, b, c, d)]

    assert same(run)[0] == ("t", "R-t", {"filled": True})


def test_validators_run_when_every_field_is_given():
    """Construction with every declared field (no field left to its default) runs the
    validators too: it is never the native route, which calls no Python."""

    def run(M, E):
        Req = _checked_input(M)
        names = [n for n in M.RunAgentInput.model_fields]
        values = {n: None for n in names}
        values.update(thread_id=" x ", run_id="r", messages=[M.UserMessage(id="u", content="c")])
        r = Req(**values)
        return (r.thread_id, r.run_id, r.state)

    assert same(run) == ("x", "R-x", {"filled": True})


@pytest.mark.parametrize("body, loc", [(BODY, ()), ({**BODY, "runId": ""}, ("runId",))])
def test_a_validator_that_raises_gives_a_validation_error(body, loc):
    for M in (ref, core):
        Req = _checked_input(M)
        with pytest.raises(pydantic.ValidationError) as info:
            Req.model_validate(body)
        assert info.value.errors()[0]["loc"] == loc
        assert "empty" in str(info.value)


def test_an_unsupported_validator_mode_is_refused_not_ignored():
    class Req(core.RunAgentInput):
        @pydantic.model_validator(mode="wrap")
        @classmethod
        def _wrap(cls, data, handler):
            return handler(data)

    with pytest.raises(TypeError, match="not supported"):
        Req.model_validate(BODY)
    with pytest.raises(TypeError, match="not supported"):
        Req(thread_id="t", run_id="r", messages=[], tools=[], context=[], state=None, forwarded_props=None)


def test_a_validation_errors_loc_names_the_key_as_the_caller_spelled_it():
    for M in (ref, core):
        for kwargs, loc in (({"thread_id": 1, "run_id": "r"}, ("thread_id",)), ({"threadId": 1, "runId": "r"}, ("threadId",))):
            with pytest.raises(pydantic.ValidationError) as info:
                M.RunStartedEvent.model_validate(kwargs)
            assert info.value.errors()[0]["loc"] == loc and info.value.errors()[0]["input"] == 1
        with pytest.raises(pydantic.ValidationError) as info:
            M.RunStartedEvent(thread_id=1, run_id="r")
        assert info.value.errors()[0]["loc"] == ("thread_id",)


def test_model_dump_json_mode_keeps_a_lone_surrogate_as_pydantic_does():
    def run(M, E):
        return M.TextMessageContentEvent(message_id="m", delta="a\ud83db").model_dump(mode="json", by_alias=True)

    assert same(run)["delta"] == "a\ud83db"


# -- found by running the reference's sdks/python/tests (README, "Compatibility notes") -----


def test_base_message_is_the_parent_of_the_four_messages_that_compose_it_and_of_nothing_else():
    def run(M, E):
        samples = [
            M.DeveloperMessage(id="d", content="c"), M.SystemMessage(id="s", content="c"),
            M.AssistantMessage(id="a"), M.UserMessage(id="u", content="c"),
            M.ToolMessage(id="t", content="c", tool_call_id="tc"),
            M.ActivityMessage(id="x", activity_type="a", content={}),
            M.ReasoningMessage(id="r", content="c"),
            M.TextMessageStartEvent(message_id="m"), M.Tool(name="n", description="d", parameters={}),
        ]
        return [(type(m).__name__, isinstance(m, M.BaseMessage)) for m in samples]

    got = same(run)
    assert [name for name, is_base in got if is_base] == ["DeveloperMessage", "SystemMessage", "AssistantMessage", "UserMessage"]


def test_a_missing_fields_error_carries_the_object_it_is_missing_from_as_input():
    def run(M, E):
        out = []
        for build in (
            lambda: M.TextMessageContentEvent(message_id="m"),
            lambda: M.ToolMessage.model_validate({"id": "1", "content": "c"}),
            lambda: M.RunAgentInput.model_validate({"threadId": "t", "runId": "r", "messages": [{"role": "user", "content": "x"}]}),
        ):
            with pytest.raises(pydantic.ValidationError) as info:
                build()
            first = info.value.errors()[0]
            out.append((first["type"], first["loc"][-1], first["input"]))
        return out

    assert same(run)[0] == ("missing", "delta", {"message_id": "m"})


@pytest.mark.parametrize("name", ["version", "deprecated"])
def test_the_reference_modules_for_the_protocol_version_and_the_0x_shapes_import(name):
    import importlib

    def run(M, E):
        mod = importlib.import_module(f"{M.__name__}.{name}")
        return {n: getattr(mod, n) is getattr(M, n) for n in mod.__all__}

    names = same(run)
    assert names and all(names.values())


@pytest.mark.parametrize("cls, body", [
    ("RunAgentInput", {"threadId": "t", "runId": "r", "messages": [{"role": "user"}]}),
    ("RunAgentInput", {"threadId": "t", "runId": "r", "messages": [{"role": "assistant", "id": "a", "toolCalls": [{"id": "c", "function": {"name": "f"}}]}]}),
    # attribute names as keys: the loc keeps the input's spelling and still names the member
    ("RunAgentInput", {"thread_id": "t", "run_id": "r", "messages": [{"role": "assistant", "id": "a", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}]}),
    ("RunFinishedEvent", {"threadId": "t", "runId": "r", "outcome": {"type": "interrupt", "interrupts": []}}),
    ("StateDeltaEvent", {"delta": [{"op": "add", "path": "/a"}]}),
    ("ImagePart", {"source": {"type": "url"}}),
    ("RunStartedEvent", {"threadId": "t", "runId": "r", "input": {"threadId": "t", "runId": "r", "messages": [{"role": "tool", "id": "x", "content": "c"}]}}),
])
def test_a_validation_errors_loc_names_the_member_of_a_discriminated_union_it_passes_through(cls, body):
    def run(M, E):
        with pytest.raises(pydantic.ValidationError) as info:
            getattr(M, cls).model_validate(body)
        return info.value.errors()[0]["loc"]

    assert len(same(run)) > 2


@pytest.mark.parametrize("cls, body", [
    ("RunAgentInput", {"threadId": "t", "runId": "r", "messages": [{"role": "nobody", "id": "u"}]}),
    ("RunAgentInput", {"threadId": "t", "runId": "r", "messages": [{"id": "u", "content": "c"}]}),
    ("RunFinishedEvent", {"threadId": "t", "runId": "r", "outcome": {"type": 3}}),
    ("StateDeltaEvent", {"delta": [{"op": "nope", "path": "/a"}]}),
    ("ImagePart", {"source": {"value": "v"}}),
])
def test_an_unknown_or_absent_tag_is_pydantics_union_tag_error_at_the_union(cls, body):
    def run(M, E):
        with pytest.raises(pydantic.ValidationError) as info:
            getattr(M, cls).model_validate(body)
        return info.value.errors(include_url=False)[0]

    assert same(run)["type"] in ("union_tag_invalid", "union_tag_not_found")
