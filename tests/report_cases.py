"""Logs for the report tests (tests/test_report.py, tests/test_report_browser.py)."""

import json

from agui_fast.cli import _demo_events
from agui_fast.encoder import EventEncoder

# Strings that would run script if a page inserted them as markup (each sets a global or
# opens a dialog), or end the data's <script> element, or break JSON inside JavaScript.
MARK = "document.documentElement.dataset.pwned = 1"  # what a payload does if it runs: visible in the DOM
PAYLOADS = [
    f"</script><script>{MARK}; window.__pwned = 1</script>",
    f"<img src=x onerror=\"{MARK}; window.__pwned = 2\">",
    f"<svg onload=\"{MARK}; alert(3)\">",
    f"<!--<script>{MARK}; window.__pwned = 4</script>-->",
    "\u2028\u2029<b>bold?</b>&amp;&lt;",
    f"javascript:{MARK}",
    f"<iframe srcdoc='<script>parent.{MARK}</script>'></iframe>",
]


def sse(events):
    """An SSE log of events given as dicts (any JSON, as a recorded log may hold)."""
    return "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events).encode()


def demo_log():
    return EventEncoder().encode_many(_demo_events())


def hostile_events(big=0):
    """A run whose every string a page shows is a payload: ids, names, text, arguments,
    results, state keys and values, custom events, an unknown type, a verification error
    and a failing patch (findings quote the ids). ``big``: add a delta of that many bytes."""
    p = PAYLOADS
    events = [{"type": "RUN_STARTED", "threadId": p[0], "runId": p[1], "timestamp": 1000}]
    events.append({"type": "STATE_SNAPSHOT", "snapshot": {p[2]: p[3], "list": [p[4]]}})
    events.append({"type": "TEXT_MESSAGE_START", "messageId": p[5], "role": "assistant", "name": p[6]})
    events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": p[5], "delta": s} for s in p]
    events.append({"type": "TEXT_MESSAGE_END", "messageId": p[5]})
    events.append({"type": "TOOL_CALL_START", "toolCallId": p[0], "toolCallName": p[1], "parentMessageId": p[5]})
    events.append({"type": "TOOL_CALL_ARGS", "toolCallId": p[0], "delta": json.dumps({p[2]: p[3]})})
    events.append({"type": "TOOL_CALL_END", "toolCallId": p[0]})
    events.append({"type": "TOOL_CALL_RESULT", "messageId": p[4], "toolCallId": p[0], "content": p[6]})
    events.append({"type": "STATE_DELTA", "delta": [
        {"op": "add", "path": "/" + p[0].replace("~", "~0").replace("/", "~1"), "value": p[1]},
        {"op": "replace", "path": "/list/0", "value": {p[3]: p[2]}},
    ]})
    events.append({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/" + p[5]}]})  # fails: a warning
    events.append({"type": "CUSTOM", "name": p[0], "value": {p[1]: p[2]}})
    events.append({"type": "STEP_STARTED", "stepName": p[3], "subagentRunId": p[4]})
    events.append({"type": p[0], p[1]: p[2]})  # an unknown type: dropped, with a warning
    events.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": p[6], "delta": p[0]})  # no such message: R12
    if big:
        chunk = p[0] + p[1]
        events.append({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/big", "value": chunk * (big // len(chunk))}]})
    events.append({"type": "RUN_FINISHED", "threadId": p[0], "runId": p[1], "outcome": {"type": "success", p[2]: p[3]}})
    return events
