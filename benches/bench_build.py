"""Build, and build + encode: events made the way an agent server makes them, validation
included, against ``ag_ui.core`` (pydantic) and a plain msgspec Struct of the same fields
(no validation: the floor). Each call builds 100 events in a plain loop (a streamed reply's
deltas)."""

from typing import Any, Dict, List, Optional, Union

import msgspec
from msgspec import field

import ag_ui.core as ref
import agui_fast.core as ours
from ag_ui.encoder import EventEncoder as RefEncoder
from _interleave import against
from agui_fast.encoder import EventEncoder


class PlainEvent(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True, dict=True):
    """BaseEvent's fields and the Structs' options, without validation."""

    timestamp: Optional[int] = None
    raw_event: Any = field(default=None, name="rawEvent")
    metadata: Optional[Dict[str, Any]] = None
    subagent_run_id: Optional[str] = field(default=None, name="subagentRunId")


class PlainContent(PlainEvent, kw_only=True, tag_field="type", tag="TEXT_MESSAGE_CONTENT"):
    message_id: str = field(name="messageId")
    delta: str


class PlainPart(msgspec.Struct, kw_only=True, omit_defaults=True, dict=True, tag_field="type", tag="text"):
    id: Optional[str] = None
    text: str
    metadata: Any = None


class PlainResult(PlainEvent, kw_only=True, tag_field="type", tag="TOOL_CALL_RESULT"):
    message_id: str = field(name="messageId")
    tool_call_id: str = field(name="toolCallId")
    content: Union[str, List[PlainPart]]
    role: Optional[str] = None


DELTAS = [f"word {i} of the reply, " for i in range(100)]
ENC = EventEncoder()
REF = RefEncoder()


def _build(cls, **extra):
    def run():
        for d in DELTAS:
            cls(message_id="msg_1", delta=d, **extra)

    return run


def test_small(benchmark):
    """``TextMessageContentEvent(message_id=..., delta=...)``."""
    benchmark.group = "build/small"
    against(benchmark, _build(ours.TextMessageContentEvent),
            {"ag_ui.core": _build(ref.TextMessageContentEvent), "msgspec Struct (floor)": _build(PlainContent)},
            readme={"ag_ui.core": "build one small event, validation included",
                    "msgspec Struct (floor)": "build one small event, validation included"},
            events_per_call=len(DELTAS))


def test_small_tagged(benchmark):
    """The same with ``type=EventType.TEXT_MESSAGE_CONTENT`` given (the reference docs' style)."""
    benchmark.group = "build/small_tagged"
    against(benchmark, _build(ours.TextMessageContentEvent, type=ours.EventType.TEXT_MESSAGE_CONTENT),
            {"ag_ui.core": _build(ref.TextMessageContentEvent, type=ref.EventType.TEXT_MESSAGE_CONTENT)},
            events_per_call=len(DELTAS))


def _nested(event, part):
    parts = [part(text="a"), part(text="b")]

    def run():
        for d in DELTAS:
            event(message_id=d, tool_call_id="t", content=parts)

    return run


def test_nested(benchmark):
    """A ``ToolCallResultEvent`` whose content is a list of two ``TextPart`` instances (nested
    Structs checked by class)."""
    benchmark.group = "build/nested"
    against(benchmark, _nested(ours.ToolCallResultEvent, ours.TextPart),
            {"ag_ui.core": _nested(ref.ToolCallResultEvent, ref.TextInputContent),
             "msgspec Struct (floor)": _nested(PlainResult, PlainPart)},
            events_per_call=len(DELTAS))


def _build_encode(cls, encode, **tag):
    def run():
        for d in DELTAS:
            encode(cls(message_id="msg_1", delta=d, **tag))

    return run


def test_build_encode(benchmark):
    """Build + encode to SSE: ours through ``EventEncoder.encode``, ``ag_ui`` through its
    encoder, the floor a plain Struct through ``msgspec.json.encode`` (no framing)."""
    benchmark.group = "build/build_encode_small"
    mine = ENC.encode(ours.TextMessageContentEvent(message_id="m", delta="d"))
    assert mine == REF.encode(ref.TextMessageContentEvent(message_id="m", delta="d"))
    against(benchmark, _build_encode(ours.TextMessageContentEvent, ENC.encode),
            {"ag_ui": _build_encode(ref.TextMessageContentEvent, REF.encode),
             "msgspec Struct (floor)": _build_encode(PlainContent, msgspec.json.encode)},
            readme={"ag_ui": "build + encode one small event"}, events_per_call=len(DELTAS))


def test_build_encode_tagged(benchmark):
    """Build + encode with ``type=EventType.TEXT_MESSAGE_CONTENT`` given, as ported code and
    the reference's docs write it (``model_fields_set`` then holds ``type``)."""
    benchmark.group = "build/build_encode_small_tagged"
    built = ours.TextMessageContentEvent(type=ours.EventType.TEXT_MESSAGE_CONTENT, message_id="m", delta="d")
    assert built.model_fields_set == {"type", "message_id", "delta"}
    assert ENC.encode(built) == REF.encode(ref.TextMessageContentEvent(type=ref.EventType.TEXT_MESSAGE_CONTENT, message_id="m", delta="d"))
    against(benchmark, _build_encode(ours.TextMessageContentEvent, ENC.encode, type=ours.EventType.TEXT_MESSAGE_CONTENT),
            {"ag_ui": _build_encode(ref.TextMessageContentEvent, REF.encode, type=ref.EventType.TEXT_MESSAGE_CONTENT)},
            readme={"ag_ui": "build (with `type=`) + encode one small event"}, events_per_call=len(DELTAS))
