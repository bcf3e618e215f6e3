"""``model_dump``: Structs to plain Python data (and to JSON-mode data), as ported code calls
it, against the reference's pydantic ``model_dump`` of the same events (the outputs are
checked equal)."""

import pytest

from _data import large_events
from _interleave import against
from agui_fast.core import (
    AssistantMessage,
    FunctionCall,
    MessagesSnapshotEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    ToolCall,
    UserMessage,
)
from agui_fast.interop import to_ag_ui

SMALL = TextMessageContentEvent(message_id="msg_1", delta="Hello, world")
SNAPSHOT = MessagesSnapshotEvent(messages=[
    UserMessage(id="u", content="hi"),
    AssistantMessage(id="a", content="x", tool_calls=[ToolCall(id="c", function=FunctionCall(name="f", arguments="{}"))]),
])
STATE = StateSnapshotEvent(snapshot={"a": [1, 2, {"b": "c"}], "d": 1.5, "e": None})

OPTIONS = {
    "python": {},
    "by_alias": {"by_alias": True},
    "by_alias_exclude_none": {"by_alias": True, "exclude_none": True},
    "json": {"mode": "json"},
    "json_by_alias": {"mode": "json", "by_alias": True},
}
EVENTS = {"text_content": SMALL, "messages_snapshot_2": SNAPSHOT, "state_snapshot": STATE}


@pytest.mark.parametrize("event", list(EVENTS))
@pytest.mark.parametrize("option", list(OPTIONS))
def test_model_dump(benchmark, option, event):
    """``event.model_dump(**options)`` of a small event, against the reference's."""
    benchmark.group = f"dump/{option}/{event}"
    ours, kw = EVENTS[event], OPTIONS[option]
    theirs = to_ag_ui(ours)
    out = against(benchmark, lambda: ours.model_dump(**kw), {"ag_ui (pydantic)": lambda: theirs.model_dump(**kw)})
    assert out == theirs.model_dump(**kw)


@pytest.mark.parametrize("option", ["by_alias", "by_alias_exclude_none"])
def test_model_dump_large(benchmark, option):
    """A 300-message ``MESSAGES_SNAPSHOT`` to Python data, against the reference's."""
    benchmark.group = f"dump/{option}/messages_snapshot_300"
    ours = large_events()["messages_snapshot_300"][0]
    theirs = to_ag_ui(ours)
    kw = OPTIONS[option]
    out = against(benchmark, lambda: ours.model_dump(**kw), {"ag_ui (pydantic)": lambda: theirs.model_dump(**kw)}, rounds=20)
    assert out == theirs.model_dump(**kw)
