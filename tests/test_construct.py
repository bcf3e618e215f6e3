"""Validating construction (issue 11 §1): the Structs accept and refuse what the
reference's pydantic models accept and refuse, through the native constructor
(construct.rs) and its lenient Python path, with errors that are ours and pydantic's."""

import datetime
import json
import os
import subprocess
import sys
import uuid

import ag_ui.core as ref
import msgspec
import pydantic
import pytest
from hypothesis import given, settings, strategies as st

import agui_fast.core as ours
from agui_fast import _native
from agui_fast.decoder import decode_event
from agui_fast.encoder import EventEncoder
from agui_fast.errors import AguiError, EventValidationError, ValidationError
from conftest import examples

ET = ours.EventType
RET = ref.EventType
ENCODER = EventEncoder()


def _args(kwargs, module):
    """Resolve the (class name, kwargs) placeholders for one package."""

    def conv(v):
        if isinstance(v, tuple) and v and v[0] == "new":
            return _cls(module, v[1])(**{k: conv(x) for k, x in v[2].items()})
        if isinstance(v, tuple) and v and v[0] == "tag":
            return getattr(module.EventType, v[1])
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v

    return {k: conv(v) for k, v in kwargs.items()}


NOW = datetime.datetime(2026, 1, 2, 3, 4, 5)
UID = uuid.UUID(int=7)
MSG = {"id": "u1", "role": "user", "content": "hi"}

CASES = [
    ("TextMessageContentEvent", dict(message_id="m", delta="d")),
    ("TextMessageContentEvent", dict(message_id="m", delta=None)),
    ("TextMessageContentEvent", dict(message_id=123, delta="d")),
    ("TextMessageContentEvent", dict(delta="d")),
    ("TextMessageContentEvent", dict()),
    ("TextMessageContentEvent", dict(type=("tag", "TEXT_MESSAGE_CONTENT"), message_id="m", delta="d")),
    ("TextMessageContentEvent", dict(type="TEXT_MESSAGE_CONTENT", message_id="m", delta="d")),
    ("TextMessageContentEvent", dict(type=("tag", "RAW"), message_id="m", delta="d")),
    ("TextMessageContentEvent", dict(type="nope", message_id="m", delta="d")),
    ("TextMessageContentEvent", dict(messageId="m", delta="d")),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", foo=1, bar={"x": [1]})),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp=17)),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp="17")),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp=17.0)),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp=17.5)),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp=2**53 - 1)),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp=2**53)),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp=-(2**53))),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", timestamp=2**70)),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", metadata={"a": 1})),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", metadata=[1])),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", raw_event={"when": NOW})),
    ("TextMessageContentEvent", dict(message_id="m", delta="d", subagent_run_id=None)),
    ("TextMessageStartEvent", dict(message_id="m", role="assistant")),
    ("TextMessageStartEvent", dict(message_id="m", role="robot")),
    ("TextMessageStartEvent", dict(message_id="m", role=None)),
    ("TextMessageStartEvent", dict(message_id="m", role="tool")),
    ("TextMessageChunkEvent", dict()),
    ("ReasoningMessageStartEvent", dict(message_id="m")),
    ("ReasoningMessageStartEvent", dict(message_id="m", role="assistant")),
    ("ReasoningEncryptedValueEvent", dict(subtype="message", entity_id="e", encrypted_value="x")),
    ("ReasoningEncryptedValueEvent", dict(subtype="other", entity_id="e", encrypted_value="x")),
    ("ToolCallStartEvent", dict(tool_call_id="t", tool_call_name="f", parent_message_id="m")),
    ("ToolCallArgsEvent", dict(tool_call_id="t", delta=5)),
    ("ToolCallResultEvent", dict(message_id="m", tool_call_id="t", content="r")),
    ("ToolCallResultEvent", dict(message_id="m", tool_call_id="t", content=[("new", "TextPart", dict(text="a"))])),
    ("ToolCallResultEvent", dict(message_id="m", tool_call_id="t", content=[{"type": "text", "text": "a"}])),
    ("ToolCallResultEvent", dict(message_id="m", tool_call_id="t", content=[{"type": "text"}])),
    ("ToolCallResultEvent", dict(message_id="m", tool_call_id="t", content=5)),
    ("StateSnapshotEvent", dict(snapshot={"when": NOW, "id": UID})),
    ("StateSnapshotEvent", dict()),
    ("StateDeltaEvent", dict(delta=[("new", "AddOperation", dict(path="/a", value=NOW))])),
    ("StateDeltaEvent", dict(delta=[{"op": "replace", "path": "/a/0", "value": 1}])),
    ("StateDeltaEvent", dict(delta=[{"op": "add", "path": "no-slash", "value": 1}])),
    ("StateDeltaEvent", dict(delta=[{"op": "jump", "path": "/a"}])),
    ("StateDeltaEvent", dict(delta="x")),
    ("AddOperation", dict(path="/a~1b", value=1)),
    ("AddOperation", dict(path="/a~2b", value=1)),
    ("MoveOperation", dict(from_="/a", path="/b")),
    ("MessagesSnapshotEvent", dict(messages=[MSG, {"id": "a1", "role": "assistant", "content": "yo"}])),
    ("MessagesSnapshotEvent", dict(messages=[("new", "UserMessage", dict(id="u", content="x"))])),
    ("MessagesSnapshotEvent", dict(messages=[{"id": "u1", "role": "robot", "content": "hi"}])),
    ("MessagesSnapshotEvent", dict(messages=[{"id": "u1", "role": "user", "content": 5}])),
    ("MessagesSnapshotEvent", dict(messages=None)),
    ("UserMessage", dict(id="u", content=[{"type": "image", "source": {"type": "url", "value": "http://x"}}])),
    ("UserMessage", dict(id="u", content=[{"type": "image", "source": {"type": "data", "value": "x"}}])),
    ("AssistantMessage", dict(id="a", tool_calls=[{"id": "c", "function": {"name": "f", "arguments": "{}"}}])),
    ("AssistantMessage", dict(id="a", tool_calls=[{"id": "c", "function": {"name": "f"}}])),
    ("ToolCall", dict(id="c", function=("new", "FunctionCall", dict(name="f", arguments="{}")))),
    ("ToolCall", dict(id="c", type="method", function={"name": "f", "arguments": "{}"})),
    ("RunStartedEvent", dict(thread_id="t", run_id="r", input={"threadId": "t", "runId": "r", "messages": [MSG]})),
    ("RunStartedEvent", dict(thread_id="t", run_id="r", input={"threadId": "t", "messages": []})),
    ("RunAgentInput", dict(thread_id="t", run_id="r", messages=[MSG], state={"n": 1}, tools=[], context=[])),
    ("RunAgentInput", dict(thread_id="t", run_id="r")),
    ("RunFinishedEvent", dict(thread_id="t", run_id="r", outcome={"type": "interrupt", "interrupts": []})),
    ("RunFinishedEvent", dict(thread_id="t", run_id="r", outcome={"type": "interrupt", "interrupts": [{"id": "i", "reason": "r"}]})),
    ("RunFinishedEvent", dict(thread_id="t", run_id="r", usage=[{"inputTokens": 5}])),
    ("RunFinishedEvent", dict(thread_id="t", run_id="r", usage=[{"inputTokens": -1}])),
    ("TokenUsage", dict(input_tokens=5, output_tokens=0)),
    ("TokenUsage", dict(input_tokens=-1)),
    ("TokenUsage", dict(input_tokens=2**53)),
    ("RunErrorEvent", dict(message="boom", code="E")),
    ("RunErrorEvent", dict(message=None)),
    ("CustomEvent", dict(name="x", value={"a": [1, None, 2.5]})),
    ("CustomEvent", dict(name=None, value=1)),
    ("ActivitySnapshotEvent", dict(message_id="m", activity_type="t", content={"a": 1}, replace=True)),
    ("ActivitySnapshotEvent", dict(message_id="m", activity_type="t", content={"a": 1}, replace="maybe")),
    ("ExecutionCapabilities", dict(max_iterations=3, sandboxed=False)),
    ("AgentCapabilities", dict(identity={"name": "a"}, custom={"k": 1})),
]


def _cls(module, name):
    if module is ref and not hasattr(ref, name):  # the patch operations are not re-exported
        from ag_ui._generated import models

        return getattr(models, name)
    return getattr(module, name)


def _build(module, name, kwargs):
    try:
        return _cls(module, name)(**_args(kwargs, module)), None
    except Exception as exc:  # noqa: BLE001 - the class of the error is what is compared
        return None, exc


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_construction_agrees_with_the_reference(name, kwargs):
    mine, my_err = _build(ours, name, kwargs)
    theirs, their_err = _build(ref, name, kwargs)
    if their_err is not None:
        assert isinstance(their_err, pydantic.ValidationError)
        assert my_err is not None, f"accepted what the reference refuses: {their_err}"
        assert isinstance(my_err, ValidationError), repr(my_err)
        assert isinstance(my_err, pydantic.ValidationError) and isinstance(my_err, EventValidationError)
        assert my_err.field and my_err.field.startswith(name)
        return
    assert my_err is None, f"refused what the reference accepts: {my_err!r}"
    # Same value: written the same by both encoders (events), or the same builtins.
    if isinstance(theirs, ref.BaseEvent) and name not in ("StateSnapshotEvent", "StateDeltaEvent") and "raw_event" not in kwargs:
        assert EventEncoder().encode(mine) == _ref_encode(theirs)
    else:
        assert mine.model_dump(by_alias=True).keys() <= theirs.model_dump(by_alias=True).keys() | set(kwargs)


def _ref_encode(event):
    from ag_ui.encoder import EventEncoder as RefEncoder

    return RefEncoder().encode(event)


@pytest.mark.every_interpreter
def test_fast_path_is_native():
    # On CPython 3.10-3.14 (64-bit) the classes are called through vectorcall, unless the
    # public API is forced (AGUI_FAST_PUBLIC_API=1: tp_call, the path of later versions).
    assert _native.struct_meta_vectorcall() == (os.environ.get("AGUI_FAST_PUBLIC_API") != "1")
    assert type(ours.TextMessageContentEvent).__module__ == "agui_fast.core._base"


def test_first_call_of_a_new_class_validates_too():
    # A class's first call goes through tp_call (and arms vectorcall for the next ones).
    class Note(ours.GeneratedBaseModel, kw_only=True):
        text: str
        count: int = 0

    with pytest.raises(ValidationError) as info:
        Note(text=None)
    assert info.value.field == "Note.text"
    assert Note(text="a", count=2).count == 2
    with pytest.raises(ValidationError):
        Note(text="a", count="many")
    assert Note(text="a", count="3").count == 3  # lax, like pydantic


def test_error_classes_and_fields():
    with pytest.raises(ValidationError) as info:
        ours.TextMessageContentEvent(message_id="m1", delta=None)
    err = info.value
    assert isinstance(err, (EventValidationError, AguiError, ValueError, pydantic.ValidationError))
    assert err.field == "TextMessageContentEvent.delta" and err.loc == ("delta",)
    assert err.errors()[0]["loc"] == ("delta",) and err.errors()[0]["input"] is None
    assert "delta" in str(err)
    # a missing argument is a validation error, not a TypeError
    with pytest.raises(ValidationError) as info:
        ours.ToolCallArgsEvent(tool_call_id="t")
    assert info.value.field == "ToolCallArgsEvent.delta"
    # positional arguments are a wrong call: TypeError, as for any keyword-only class
    with pytest.raises(TypeError, match=r"TextMessageEndEvent\(\) takes keyword arguments only"):
        ours.TextMessageEndEvent("m")
    # pydantic's own error type for a missing field (FastAPI clients read it)
    assert info.value.errors()[0]["type"] == "missing"


def test_nested_dicts_become_structs_and_extras_are_kept():
    ev = ours.MessagesSnapshotEvent(messages=[{"id": "u", "role": "user", "content": "x", "mood": "ok"}])
    assert type(ev.messages[0]) is ours.UserMessage and ev.messages[0].model_extra == {"mood": "ok"}
    ev = ours.TextMessageContentEvent(messageId="m", delta="d", custom=[1])
    assert ev.message_id == "m" and ev.model_extra == {"custom": [1]}


def test_callers_keywords_are_not_changed():
    kw = {"type": ET.TEXT_MESSAGE_CONTENT, "message_id": "m", "delta": "d"}
    ours.TextMessageContentEvent(**kw)
    assert kw == {"type": ET.TEXT_MESSAGE_CONTENT, "message_id": "m", "delta": "d"}


def test_constructed_values_are_the_given_objects():
    meta = {"k": [1]}
    snap = {"when": NOW}
    ev = ours.StateSnapshotEvent(snapshot=snap, metadata=meta)
    assert ev.snapshot is snap and ev.metadata is meta


def test_decoding_does_not_call_the_constructor():
    from agui_fast.decoder import decode_event

    ev = decode_event(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}')
    assert ev == ours.TextMessageContentEvent(message_id="m", delta="d")
    assert msgspec.json.decode(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}', type=ours.Event) == ev


def test_without_pydantic_errors_are_still_ours():
    code = (
        "import sys\n"
        "sys.modules['pydantic'] = None; sys.modules['pydantic_core'] = None\n"
        "import agui_fast.core as c\n"
        "from agui_fast.errors import ValidationError, EventValidationError\n"
        "assert ValidationError.__mro__[1] is EventValidationError\n"
        "try:\n"
        "    c.TextMessageContentEvent(message_id='m', delta=None)\n"
        "except ValidationError as e:\n"
        "    assert e.field == 'TextMessageContentEvent.delta', e.field\n"
        "    print('ok', type(e).__mro__[1].__name__)\n"
        "import dataclasses\n"
        "assert c.TextMessageStartEvent.model_fields['message_id'].alias == 'messageId'\n"
        "assert c.TextMessageStartEvent.model_fields['message_id'].is_required()\n"
        "assert dataclasses.is_dataclass(c.RunAgentInput)\n"
        "assert c.RunAgentInput(thread_id='t', run_id='r', messages=[]).model_dump(include={'thread_id'}) == {'thread_id': 't'}\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok EventValidationError"


def test_structs_pickle_and_copy():
    import copy
    import pickle

    ev = ours.MessagesSnapshotEvent(messages=[ours.UserMessage(id="u", content="x")])
    assert pickle.loads(pickle.dumps(ev)) == ev and copy.deepcopy(ev) == ev and copy.copy(ev) == ev


def _copies(obj):
    import copy
    import pickle

    return [pickle.loads(pickle.dumps(obj, protocol=p)) for p in (2, pickle.HIGHEST_PROTOCOL)] + [copy.deepcopy(obj), copy.copy(obj)]


def test_pickle_and_copies_keep_extras_and_fields_set():
    ev = ours.TextMessageStartEvent(message_id="m", name=None, extra_key={"nested": [1, 2]}, camelKey="x")
    msg = ours.UserMessage.model_validate({"id": "u", "role": "user", "content": "x", "seen": True})
    for obj in (ev, msg):
        for again in _copies(obj):
            assert type(again) is type(obj) and again == obj
            assert again.model_extra == obj.model_extra and again.model_fields_set == obj.model_fields_set
    assert ev.model_fields_set == {"message_id", "name", "extra_key", "camelKey"}
    deep = _copies(ev)[2]
    assert deep.extra_key == ev.extra_key and deep.extra_key is not ev.extra_key  # deep copies the extras


def test_every_event_and_message_round_trips_through_pickle_and_deepcopy():
    """The 598 golden events (every event and message type, extras at every level among
    them), each with one more extra: the same data, extras included, after each copy."""
    from conftest import case_input, load_jsonl

    from agui_fast.decoder import decode_event
    from agui_fast.encoder import to_builtins

    seen = set()
    for case in load_jsonl("codec/events.jsonl"):
        event = decode_event(case_input(case))
        event.agui_fast_extra = {"kept": [1, "two"]}
        data = to_builtins(event)  # every level's extras (some events hold unpaired surrogates: no SSE)
        for again in _copies(event):
            assert type(again) is type(event) and to_builtins(again) == data, case["name"]
            assert again.model_fields_set == event.model_fields_set, case["name"]
        seen.add(type(event).__name__)
        for message in getattr(event, "messages", None) or []:
            for again in _copies(message):
                assert again == message and again.model_extra == message.model_extra, case["name"]
            seen.add(type(message).__name__)
    assert len([n for n in seen if n.endswith("Event")]) == 31
    assert {"UserMessage", "AssistantMessage", "ToolMessage", "SystemMessage", "DeveloperMessage",
            "ActivityMessage", "ReasoningMessage"} <= seen


def test_validation_error_pickles():
    import pickle

    with pytest.raises(ValidationError) as info:
        ours.TextMessageContentEvent(message_id="m1", delta=None)
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is ValidationError and again.field == info.value.field


def test_every_generated_field_has_a_native_check():
    # A field the plan cannot model natively ("never") would silently take the slow path.
    from agui_fast.core._construct import plan_of

    def names(check):
        yield check[0]
        for part in check[1:]:
            if isinstance(part, tuple) and part and isinstance(part[0], str):
                yield from names(part)
            elif isinstance(part, tuple):
                for sub in part:
                    if isinstance(sub, tuple) and sub and isinstance(sub[0], str):
                        yield from names(sub)

    structs = [v for v in vars(ours).values() if isinstance(v, type) and issubclass(v, msgspec.Struct) and v.__module__.startswith("agui_fast")]
    assert len(structs) > 60
    for cls in structs:
        if cls is ours.BaseEvent:
            # Deliberately never native: its required `type` is no field, so `lenient`
            # checks every call (tests/test_parity_pydantic.py).
            assert {check for _, _, check, _, _ in plan_of(cls)[1]} == {("never",)}
            continue
        for field, _, check, _, _ in plan_of(cls)[1]:
            assert "never" not in set(names(check)), (cls.__name__, field, check)


@given(st.text(alphabet="/~01a\n\u00e9", max_size=12))
@settings(max_examples=examples(400), deadline=None)
def test_native_json_pointer_check_is_the_schema_pattern(path):
    import re

    from agui_fast.core._construct import JSON_POINTER_PATTERN

    # `$` as pydantic's regex engine reads it (the end of the text): Python's `re` also
    # matches it before a final newline, so its search accepted "\n", which the
    # reference refuses.
    valid = re.search(JSON_POINTER_PATTERN.replace("$", r"\Z"), path) is not None
    try:
        ours.RemoveOperation(path=path)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == valid
    # Decoding takes the same decision (the operations' __post_init__), with the error
    # msgspec's pattern gave.
    payload = json.dumps({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": path}]})
    if valid:
        assert decode_event(payload).delta[0].path == path
    else:
        with pytest.raises(EventValidationError, match=r"matching regex .* - at `\$\.delta\[0\]\.path`$"):
            decode_event(payload)


def test_every_way_of_calling_the_class_validates():
    import functools

    cls = ours.TextMessageContentEvent
    calls = [
        lambda **kw: cls(**kw),
        lambda **kw: type(cls).__call__(cls, **kw),  # the tp_call slot
        lambda **kw: functools.partial(cls, message_id="m")(**{k: v for k, v in kw.items() if k != "message_id"}),
    ]
    for call in calls:
        assert call(message_id="m", delta="d") == cls(message_id="m", delta="d")
        with pytest.raises(ValidationError):
            call(message_id="m", delta=None)


def test_the_tag_keyword_at_many_call_sites():
    """Calls that pass the tag, from more call sites than the class remembers (each site's
    keyword names without the tag are kept per class), with the tag anywhere among the
    keywords: each builds the same event and records the tag."""
    cls = ours.TextMessageContentEvent
    orders = [("type", "message_id", "delta"), ("message_id", "type", "delta"), ("message_id", "delta", "type")]
    sites = []
    for i in range(12):
        names = orders[i % 3]
        source = "lambda cls, t, d: cls(" + ", ".join({"type": "type=t", "message_id": "message_id='m'", "delta": "delta=d"}[n] for n in names) + ")"
        sites.append(eval(compile(source, f"<site {i}>", "eval")))
    for _ in range(3):
        for i, site in enumerate(sites):
            ev = site(cls, ET.TEXT_MESSAGE_CONTENT if i % 2 else "TEXT_MESSAGE_CONTENT", f"d{i}")
            assert ev == cls(message_id="m", delta=f"d{i}")
            assert ev.model_fields_set == {"type", "message_id", "delta"}
            assert ENCODER.encode(ev) == ENCODER.encode(cls(message_id="m", delta=f"d{i}"))
    with pytest.raises(ValidationError):
        sites[0](cls, ET.TEXT_MESSAGE_START, "d")


def test_the_record_never_reaches_the_wire():
    """Fields given at their default and the tag are recorded in the instance __dict__ (a dict
    subclass, ``_given.Extras``): every encoder still writes only the extras."""
    from agui_fast.core._given import Extras
    from agui_fast.proto import encode_event_message

    plain = ours.TextMessageStartEvent(message_id="m", role="assistant")
    recorded = ours.TextMessageStartEvent(type=ET.TEXT_MESSAGE_START, message_id="m", role="assistant", name=None, timestamp=None)
    assert type(recorded.__dict__) is Extras and recorded.model_extra == {}
    assert ENCODER.encode(recorded) == ENCODER.encode(plain)
    assert encode_event_message(recorded) == encode_event_message(plain)
    assert ENCODER.encode_many([recorded]) == ENCODER.encode_many([plain])
    with_extra = ours.TextMessageStartEvent(type=ET.TEXT_MESSAGE_START, message_id="m", name=None, seen=1)
    assert ENCODER.encode(with_extra) == 'data: {"type":"TEXT_MESSAGE_START","messageId":"m","seen":1}\n\n'
    assert with_extra.model_fields_set == {"type", "message_id", "name", "seen"}
