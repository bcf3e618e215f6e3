"""``TypeAdapter(cls).validate_json``: the JSON text decoded by msgspec, the members given
at their default recorded from the text, and everything else through pydantic's validator
of the class: the same instances, ``model_fields_set`` at every level and errors as the
exact path (``model_validate`` of the parsed text) and the reference."""

from __future__ import annotations

import json

import pytest

pydantic = pytest.importorskip("pydantic")
from pydantic import TypeAdapter, ValidationError  # noqa: E402

import ag_ui.core as ref  # noqa: E402
import agui_fast.core as core  # noqa: E402
from agui_fast import _native  # noqa: E402
from agui_fast.core import _pydantic  # noqa: E402


def fields_sets(obj):
    """Every Struct's ``model_fields_set`` in the tree, by path."""
    out = {}

    def walk(v, path):
        if isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, path + (i,))
        elif hasattr(v, "model_fields_set") and not isinstance(v, type):
            out[path] = v.model_fields_set
            for name in type(v).model_fields:
                walk(getattr(v, name), path + (name,))

    walk(obj, ())
    return out


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
BODIES = [
    {"threadId": "t", "runId": "r", "messages": [], "state": {"a": [1, {"b": None}]}, "tools": [], "context": [], "forwardedProps": {}},
    # members given null (at their default), the ToolCall's literal default, tags at every level
    {"threadId": "t", "runId": "r", "parentRunId": None, "state": None, "forwardedProps": None, "messages": [
        {"id": "1", "role": "assistant", "content": None, "name": None, "toolCalls": [CALL]},
        {"id": "2", "role": "user", "content": [{"type": "text", "text": "hi", "id": None}, {"type": "image", "source": {"type": "url", "value": "http://x", "mimeType": None}}]},
        {"id": "3", "role": "tool", "content": "r", "toolCallId": "c1", "error": None},
        {"id": "4", "role": "user", "content": "null \\\"quoted\\\" \u00e9"},
    ], "tools": [{"name": "s", "description": "d", "parameters": None}], "context": [{"description": "d", "value": "v"}]},
    # the ToolCall's type absent: not given
    {"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "assistant", "toolCalls": [{"id": "c", "function": {"name": "f", "arguments": ""}}]}]},
]


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("as_str", [False, True])
def test_same_instances_and_fields_set_as_the_exact_path(body, as_str):
    text = json.dumps(body)
    data = text if as_str else text.encode()
    got = TypeAdapter(core.RunAgentInput).validate_json(data)
    exact = core.RunAgentInput.model_validate(json.loads(text))
    assert got == exact
    assert fields_sets(got) == fields_sets(exact)
    # and the reference's, member for member
    theirs = TypeAdapter(ref.RunAgentInput).validate_json(data)
    assert got.model_dump(by_alias=True) == theirs.model_dump(by_alias=True, exclude_none=True)
    assert fields_sets(got) == fields_sets(theirs)


def test_escaped_keys_are_read_as_their_names():
    text = '{"thread\\u0049d": "t", "runId": "r", "messages": [{"id": "1", "r\\u006fle": "user", "content": "x", "name": null}]}'
    got = TypeAdapter(core.RunAgentInput).validate_json(text)
    assert got.thread_id == "t"
    assert got.messages[0].model_fields_set == {"id", "role", "content", "name"}


@pytest.mark.parametrize(
    "text",
    [
        b'{"threadId": "t", "runId": "r", "messages": [], "extraMember": 1}',  # an extra: kept
        b'{"thread_id": "t", "run_id": "r", "messages": []}',  # snake_case names
        b'{"threadId": "t", "runId": "r", "messages": [], "state": 1e400}',  # beyond double range
    ],
)
def test_what_msgspec_refuses_takes_pydantics_path(text):
    got = TypeAdapter(core.RunAgentInput).validate_json(text)
    exact = core.RunAgentInput.model_validate(json.loads(text))
    assert got == exact and got.__dict__ == exact.__dict__
    assert fields_sets(got) == fields_sets(exact)


@pytest.mark.parametrize(
    "text",
    [
        b"not json",
        b"[]",
        b'{"threadId": 1, "runId": "r", "messages": []}',
        b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "bogus"}]}',
        b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user"}]}',
    ],
)
def test_errors_are_pydantics(text):
    errors = []
    for cls in (core.RunAgentInput, ref.RunAgentInput):
        with pytest.raises(ValidationError) as info:
            TypeAdapter(cls).validate_json(text)
        errors.append({(e["type"], e["loc"]) for e in info.value.errors()})
    assert errors[0] and errors[0] <= errors[1]


def test_options_take_pydantics_path(monkeypatch):
    adapter = TypeAdapter(core.UserMessage)
    seen = []
    monkeypatch.setattr(_pydantic.Validator, "_record", property(lambda self: lambda obj, data: seen.append(obj) or True))
    text = b'{"id": "1", "role": "user", "content": "7"}'
    assert adapter.validate_json(text).content == "7"
    assert len(seen) == 1, "the default call takes the msgspec decode"
    with pytest.raises(ValidationError):
        adapter.validate_json(b'{"id": "1", "role": "user", "content": 7}', strict=True)
    assert adapter.validate_json(text, context={"x": 1}).content == "7"
    assert len(seen) == 1, "strict / context: pydantic's validator"


def test_the_adapter_of_a_class_keeps_its_schema_and_dump():
    adapter = TypeAdapter(core.RunAgentInput)
    assert isinstance(adapter.validator, _pydantic.Validator)
    assert adapter.json_schema() == TypeAdapter(core.RunAgentInput).json_schema()
    assert adapter.json_schema()["properties"]["threadId"] == {"title": "Threadid", "type": "string"}
    obj = adapter.validate_json(json.dumps(BODIES[1]))
    assert adapter.dump_json(obj, by_alias=True, exclude_none=True) == TypeAdapter(ref.RunAgentInput).dump_json(
        TypeAdapter(ref.RunAgentInput).validate_json(json.dumps(BODIES[1])), by_alias=True, exclude_none=True
    )
    # a subclass has its own (its fields, its validators)
    class Mine(core.UserMessage):
        extra_note: str = "n"

    assert TypeAdapter(Mine).validate_json(b'{"id": "1", "content": "c", "extraNote": "x"}').extra_note == "x"


def test_record_given_json_declines_text_that_is_not_the_objects():
    obj = core.UserMessage(id="1", content="x")
    assert _native.record_given_json(obj, b'{"id": "1", "role": "user", "content": "x"}')
    assert not _native.record_given_json(obj, b'{"id": "1", "other": 2}')
    assert not _native.record_given_json(obj, b'{"id": "1"} trailing')
    assert not _native.record_given_json(obj, b"\xff")
    with pytest.raises(TypeError):
        _native.record_given_json(obj, 1)
