"""Linear time of the stream semantics on the shapes that were quadratic (each event
searched the messages, a lane list or an open-id list): tool results inserted before later
messages, numeric ids, many tool calls on one message, many chunk lanes, many activity
deltas, many open messages and steps under verification. 10x the events may cost at most
``BOUND`` x the time (see ``test_props_linear``), on every path that runs the reducer."""

from __future__ import annotations

import json

import pytest

from agui_fast import stream
from agui_fast.core import FunctionCall, ToolCall
from test_props_linear import check, frozen_heap  # noqa: F401 (the module's frozen heap)

pytestmark = pytest.mark.complexity


def results_after_later_messages(n):
    """n tool calls, each on its own assistant message, a later message, then the n
    results: each goes right after its call's message, before the later ones."""
    ev = [{"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "f"} for i in range(n)]
    ev.append({"type": "TEXT_MESSAGE_START", "messageId": "later", "role": "assistant"})
    ev += [{"type": "TOOL_CALL_RESULT", "messageId": f"r{i}", "toolCallId": f"c{i}", "content": "ok"} for i in range(n)]
    return ev


def numeric_ids(n):
    ev = []
    for i in range(n):
        ev.append({"type": "TEXT_MESSAGE_START", "messageId": i, "role": "assistant"})
        ev.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": i, "delta": "x"})
    return ev


def calls_on_one_message(n):
    ev = [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}]
    ev += [{"type": "TOOL_CALL_START", "toolCallId": f"c{i}", "toolCallName": "f", "parentMessageId": "m"} for i in range(n)]
    ev += [{"type": "TOOL_CALL_ARGS", "toolCallId": f"c{i}", "delta": "{}"} for i in range(n)]
    ev += [{"type": "TOOL_CALL_END", "toolCallId": f"c{i}"} for i in range(n)]
    ev += [{"type": "TOOL_CALL_RESULT", "messageId": f"r{i}", "toolCallId": f"c{i}", "content": "ok"} for i in range(n)]
    return ev


def chunk_lanes(n):
    return [{"type": "TEXT_MESSAGE_CHUNK", "messageId": f"m{i}", "subagentRunId": f"s{i}", "delta": "x"} for i in range(n)]


def activity_deltas(n):
    ev = [{"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {"items": []}}]
    ev += [
        {"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "plan", "patch": [{"op": "add", "path": "/items/-", "value": i}]}
        for i in range(n)
    ]
    return ev


def open_messages_and_steps(n):
    ev = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    ev += [{"type": "TEXT_MESSAGE_START", "messageId": f"m{i}", "role": "assistant"} for i in range(n)]
    ev += [{"type": "STEP_STARTED", "stepName": f"s{i}"} for i in range(n)]
    ev += [{"type": "TEXT_MESSAGE_END", "messageId": f"m{i}"} for i in range(n)]
    ev += [{"type": "STEP_FINISHED", "stepName": f"s{i}"} for i in range(n)]
    ev.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return ev


def sse(events):
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def applier(events, **options):
    ap = stream.EventApplier(raw=True, **options)
    for e in events:
        ap.apply(e)


def applier_reading_calls(events, **options):
    """A live view: each tool call read (by id) after each of its events."""
    ap = stream.EventApplier(raw=True, **options)
    for e in events:
        ap.apply(e)
        if "toolCallId" in e:
            ap.tool_call(e["toolCallId"])


PATHS = {
    "replay": (lambda e: e, lambda e, **o: stream.replay(e, raw=True, **o)),
    "replay_log": (sse, lambda b, **o: stream.replay_log(b, raw=True, **o)),
    "applier": (lambda e: e, applier),
    "applier_reading_calls": (lambda e: e, applier_reading_calls),
}

#: Numeric ids are malformed for the schema stage (a fatal error at the first event): the
#: reducer meets them only behind ``schema=False``, as the reference's reducer called alone.
OPTIONS = {"numeric_ids": {"schema": False}}

CASES = {
    "results_after_later_messages": results_after_later_messages,
    "numeric_ids": numeric_ids,
    "calls_on_one_message": calls_on_one_message,
    "chunk_lanes": chunk_lanes,
    "activity_deltas": activity_deltas,
    "open_messages_and_steps": open_messages_and_steps,
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("case", list(CASES))
def test_the_reducer_is_linear(case, path):
    encode, run = PATHS[path]
    options = OPTIONS.get(case, {})
    check(lambda e: run(e, **options), lambda n: encode(CASES[case](n)), 200)


def test_the_results_go_where_the_reference_puts_them():
    r = stream.replay(results_after_later_messages(3), raw=True)
    assert [m["id"] for m in r.messages] == ["c0", "r0", "c1", "r1", "c2", "r2", "later"]
    r = stream.replay(calls_on_one_message(3), raw=True)
    assert [m["id"] for m in r.messages] == ["m", "r0", "r1", "r2"]
    assert [tc["function"]["arguments"] for tc in r.messages[0]["toolCalls"]] == ["{}"] * 3


def test_a_tool_call_is_read_by_its_id():
    events = calls_on_one_message(3)[:6]  # calls c0-c2 on m, arguments to c0 and c1
    for raw in (True, False):
        ap = stream.EventApplier(raw=raw)
        for e in events:
            ap.apply(e)
        position, parent, call = ap.tool_call("c1")
        assert (position, parent) == (0, "m")
        assert (call["function"]["arguments"] if raw else call.function.arguments) == "{}"
        assert ap.tool_call("c2")[2] == ({"id": "c2", "type": "function", "function": {"name": "f", "arguments": ""}} if raw
                                         else ToolCall(id="c2", function=FunctionCall(name="f", arguments="")))
        assert ap.tool_call("nope") is None
        with pytest.raises(TypeError):
            ap.tool_call(1)
    # Read between plain deltas (held aside while a run of them lasts), and after a
    # snapshot replaced the call's message (the snapshot's call; its message kept its place).
    ap = stream.EventApplier(raw=True)
    ap.apply(b'{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"f","parentMessageId":"a"}')
    for d in ("x", "y", "z"):
        ap.apply(b'{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"%s"}' % d.encode())
        assert ap.tool_call("c")[2]["function"]["arguments"] == {"x": "x", "y": "xy", "z": "xyz"}[d]
    ap.apply({"type": "MESSAGES_SNAPSHOT", "messages": [
        {"id": "u", "role": "user", "content": "hi"},
        {"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "g", "arguments": "1"}}]},
    ]})
    assert ap.tool_call("c") == (0, "a", {"id": "c", "type": "function", "function": {"name": "g", "arguments": "1"}})


@pytest.mark.parametrize("verify", ["verify_events", "replay"])
def test_verification_is_linear(verify):
    if verify == "verify_events":
        check(stream.verify_events, open_messages_and_steps, 200)
    else:
        check(lambda e: stream.replay(e, verify=True), open_messages_and_steps, 200)
