"""The encoder never writes an event that violates the schema (issue 11 §1): a value that
bypassed construction (attribute assignment) raises ``EncodeError`` naming the field's
path, in SSE and protobuf alike, for every kind of field check."""


import pytest

from agui_fast.core import (
    ActivitySnapshotEvent,
    MessagesSnapshotEvent,
    RunFinishedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
    TextPart,
    TokenUsage,
    UserMessage,
)
from agui_fast.encoder import EventEncoder
from agui_fast.errors import EncodeError

ENC = EventEncoder()
PROTO = EventEncoder(accept="application/vnd.ag-ui.event+proto")

# Every way an event is written: SSE text, SSE bytes, a batch, protobuf one and many.
WRITERS = {
    "sse": ENC.encode,
    "sse_bytes": ENC.encode_binary,
    "sse_many": lambda e: ENC.encode_many([e]),
    "proto": PROTO.encode_protobuf,
    "proto_many": lambda e: PROTO.encode_many([e]),
}


def _snapshot():
    return MessagesSnapshotEvent(
        messages=[
            UserMessage(id="u1", content="hi"),
            UserMessage(id="u2", content=[TextPart(text="a"), TextPart(text="b")]),
        ]
    )


def _bad(make, attr_path, value):
    """An event from ``make()`` with ``value`` assigned at ``attr_path`` (dotted, ints index)."""
    ev = make()
    target = ev
    steps = attr_path.split(".")
    for step in steps[:-1]:
        target = target[int(step)] if step.isdigit() else getattr(target, step)
    last = steps[-1]
    if last.isdigit():
        target[int(last)] = value
    else:
        setattr(target, last, value)
    return ev


CASES = [
    # (id, event factory, where to assign, value, field named, expected in the message)
    ("str_none", lambda: TextMessageContentEvent(message_id="m", delta="x"), "delta", None,
     "TextMessageContentEvent.delta", "expected a string, got None"),
    ("str_int", lambda: TextMessageContentEvent(message_id="m", delta="x"), "message_id", 123,
     "TextMessageContentEvent.message_id", "expected a string, got int 123"),
    ("literal", lambda: TextMessageStartEvent(message_id="m"), "role", "robot",
     "TextMessageStartEvent.role", "expected one of"),
    ("optional_int", lambda: TextMessageContentEvent(message_id="m", delta="x"), "timestamp", "17",
     "TextMessageContentEvent.timestamp", "expected an integer"),
    ("int_not_bool", lambda: TextMessageContentEvent(message_id="m", delta="x"), "timestamp", True,
     "TextMessageContentEvent.timestamp", "expected an integer"),
    ("bool", lambda: ActivitySnapshotEvent(message_id="m", activity_type="t", content={}), "replace", "yes",
     "ActivitySnapshotEvent.replace", "expected a boolean"),
    ("dict", lambda: ActivitySnapshotEvent(message_id="m", activity_type="t", content={}), "content", [1],
     "ActivitySnapshotEvent.content", "expected an object (dict)"),
    ("struct_as_dict", _snapshot, "messages.1", {"id": "u3", "role": "user", "content": "x"},
     "MessagesSnapshotEvent.messages[1]", "got dict"),
    ("list_item", _snapshot, "messages.0", "not a message",
     "MessagesSnapshotEvent.messages[0]", "got str"),
    ("list", _snapshot, "messages", {"0": 1},
     "MessagesSnapshotEvent.messages", "expected an array"),
    ("nested_field", _snapshot, "messages.0.content", 5,
     "MessagesSnapshotEvent.messages[0].content", "expected a string or an array"),
    ("nested_list_item", _snapshot, "messages.1.content.1", {"type": "text", "text": "b"},
     "MessagesSnapshotEvent.messages[1].content[1]", "got dict"),
    ("deep_field", _snapshot, "messages.1.content.0.text", None,
     "MessagesSnapshotEvent.messages[1].content[0].text", "expected a string, got None"),
    ("int_bounds", lambda: RunFinishedEvent(thread_id="t", run_id="r", usage=[TokenUsage(input_tokens=1)]),
     "usage.0.input_tokens", -1, "RunFinishedEvent.usage[0].input_tokens", "expected an integer in [0, 9007199254740991]"),
]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_schema_violation_raises_naming_the_field(case, writer):
    _, make, where, value, field, expected = case
    ev = _bad(make, where, value)
    with pytest.raises(EncodeError) as info:
        WRITERS[writer](ev)
    assert str(info.value).startswith(f"{field}: ")
    assert expected in str(info.value)
    assert info.value.field == field
    # The same event before the assignment encodes (the check refuses only the bad value).
    WRITERS[writer](make())


@pytest.mark.parametrize("writer", WRITERS)
def test_valid_values_of_every_kind_pass(writer):
    events = [
        TextMessageStartEvent(message_id="m", role="assistant", timestamp=17),
        ActivitySnapshotEvent(message_id="m", activity_type="t", content={"a": [1, {"b": None}]}, replace=False),
        _snapshot(),
        RunFinishedEvent(thread_id="t", run_id="r", usage=[TokenUsage(input_tokens=0, output_tokens=2**53 - 1)]),
        # Any: whatever the state holds
        StateSnapshotEvent(snapshot={"x": [1, 2.5, None, True, "s", {"y": ()}]}),
    ]
    for ev in events:
        WRITERS[writer](ev)


def test_optional_field_set_to_none_is_left_out():
    ev = TextMessageStartEvent(message_id="m", role="user")
    ev.role = None
    assert ENC.encode(ev) == 'data: {"type":"TEXT_MESSAGE_START","messageId":"m"}\n\n'


def test_subclass_values_and_tuples_fit_their_kind():
    class Text(str):
        pass

    ev = TextMessageContentEvent(message_id="m", delta="x")
    ev.delta = Text("sub")
    assert ENC.encode(ev) == 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"sub"}\n\n'
    snap = _snapshot()
    snap.messages = tuple(snap.messages)
    assert ENC.encode(snap) == ENC.encode(_snapshot())


def test_user_subclass_field_is_checked_too():
    class Traced(TextMessageContentEvent, tag="TEXT_MESSAGE_CONTENT"):
        trace: str = ""

    ev = Traced(message_id="m", delta="x", trace="t1")
    assert '"trace":"t1"' in ENC.encode(ev)
    ev.trace = 5
    with pytest.raises(EncodeError, match=r"Traced\.trace: expected a string, got int 5"):
        ENC.encode(ev)


def test_path_from_a_plain_container():
    ev = _bad(lambda: TextMessageContentEvent(message_id="m", delta="x"), "delta", None)
    with pytest.raises(EncodeError) as info:
        ENC.encode_many([TextMessageContentEvent(message_id="m", delta="ok"), ev])
    assert info.value.field == "TextMessageContentEvent.delta"
    from agui_fast import _native

    with pytest.raises(EncodeError) as info:
        _native.dumps({"events": [ev]})
    assert info.value.field == "dict['events'][0].delta"


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name, declared", [("messageId", "message_id"), ("type", "type")])
def test_extra_attribute_may_not_repeat_a_declared_field(writer, name, declared):
    ev = TextMessageContentEvent(message_id="m", delta="x", extra=1)
    WRITERS[writer](ev)
    setattr(ev, name, "zz")
    with pytest.raises(EncodeError, match=rf"TextMessageContentEvent\.{name}: an extra attribute named like the declared field `{declared}`"):
        WRITERS[writer](ev)


@pytest.mark.parametrize("writer", WRITERS)
def test_an_unknown_member_spelled_like_a_python_name_is_written_back(writer):
    # A decoder keeps `"message_id"` beside `"messageId"` as an unknown member; a proxy
    # re-serving what it decoded writes it back as the reference's models do.
    from agui_fast.decoder import decode_event, decode_protobuf

    wire = b'{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant","message_id":"x"}'
    ev = decode_event(wire)
    out = WRITERS[writer](ev)
    if writer.startswith("sse"):
        assert (out.encode() if isinstance(out, str) else out) == b"data: " + wire + b"\n\n"
    else:  # protobuf carries the declared fields only
        assert decode_protobuf(out) == [TextMessageStartEvent(message_id="m", role="assistant")]
    ev.__dict__["message_id"] = "zz"  # the same through the instance's own dict
    assert b'"message_id":"zz"' in (ENC.encode_binary(ev))
