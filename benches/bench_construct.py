"""Building events, validation included: agui_fast vs ag_ui (pydantic) vs a plain msgspec
Struct of the same fields (no validation: the floor).

Each round builds (and, in the ``construct_encode`` groups, encodes) 100 events in a plain
``for`` loop, as an agent server's send loop does, so pytest-benchmark's per-call cost is
paid once per 100 events and the ratios are those of the constructors themselves.

Groups:
* construct_small: ``TextMessageContentEvent(message_id=..., delta=...)``;
* construct_small_tagged: the same with ``type=EventType.TEXT_MESSAGE_CONTENT`` (the style
  of the reference's docs);
* construct_nested: a ``ToolCallResultEvent`` whose content is a list of two ``TextPart``
  instances (nested Structs checked by class);
* construct_encode_small: build + encode to SSE (ours: EventEncoder.encode; ag_ui: its
  EventEncoder; floor: msgspec.json.encode of the plain Struct, no SSE framing).
"""

from typing import Any, Dict, List, Optional, Union

import msgspec
from msgspec import field

import ag_ui.core as ref
from ag_ui.encoder import EventEncoder as RefEncoder

import agui_fast.core as ours
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
_msgspec_encode = msgspec.json.encode


def _loop(cls, **extra):
    def run():
        for d in DELTAS:
            cls(message_id="msg_1", delta=d, **extra)

    return run


def test_construct_small__agui_fast(benchmark):
    benchmark.group = "construct_small"
    benchmark(_loop(ours.TextMessageContentEvent))


def test_construct_small__ag_ui(benchmark):
    benchmark.group = "construct_small"
    benchmark(_loop(ref.TextMessageContentEvent))


def test_construct_small__msgspec_floor(benchmark):
    benchmark.group = "construct_small"
    benchmark(_loop(PlainContent))


def test_construct_small_tagged__agui_fast(benchmark):
    benchmark.group = "construct_small_tagged"
    benchmark(_loop(ours.TextMessageContentEvent, type=ours.EventType.TEXT_MESSAGE_CONTENT))


def test_construct_small_tagged__ag_ui(benchmark):
    benchmark.group = "construct_small_tagged"
    benchmark(_loop(ref.TextMessageContentEvent, type=ref.EventType.TEXT_MESSAGE_CONTENT))


def _nested(event, part):
    parts = [part(text="a"), part(text="b")]

    def run():
        for d in DELTAS:
            event(message_id=d, tool_call_id="t", content=parts)

    return run


def test_construct_nested__agui_fast(benchmark):
    benchmark.group = "construct_nested"
    benchmark(_nested(ours.ToolCallResultEvent, ours.TextPart))


def test_construct_nested__ag_ui(benchmark):
    benchmark.group = "construct_nested"
    benchmark(_nested(ref.ToolCallResultEvent, ref.TextInputContent))


def test_construct_nested__msgspec_floor(benchmark):
    benchmark.group = "construct_nested"
    benchmark(_nested(PlainResult, PlainPart))


def _build_encode(cls, encode):
    def run():
        for d in DELTAS:
            encode(cls(message_id="msg_1", delta=d))

    return run


def test_construct_encode_small__agui_fast(benchmark):
    benchmark.group = "construct_encode_small"
    benchmark(_build_encode(ours.TextMessageContentEvent, ENC.encode))
    mine = ENC.encode(ours.TextMessageContentEvent(message_id="m", delta="d"))
    assert mine == REF.encode(ref.TextMessageContentEvent(message_id="m", delta="d"))


def test_construct_encode_small__ag_ui(benchmark):
    benchmark.group = "construct_encode_small"
    benchmark(_build_encode(ref.TextMessageContentEvent, REF.encode))


def test_construct_encode_small__msgspec_floor(benchmark):
    benchmark.group = "construct_encode_small"
    benchmark(_build_encode(PlainContent, _msgspec_encode))
