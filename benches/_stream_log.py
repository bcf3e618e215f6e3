"""A realistic long AG-UI run (100k events by default), for the replay and client benches.

Deterministic (seeded). Several runs in one stream, each shaped like a real agent turn:

* long text streaming: assistant messages of hundreds of small ``TEXT_MESSAGE_CONTENT``
  deltas (a few characters each, as LLM token streams are), some sent as
  ``TEXT_MESSAGE_CHUNK`` shorthand;
* tool calls with streamed JSON arguments (``TOOL_CALL_ARGS`` fragments) and results;
* reasoning messages;
* a large state (2,000 top-level keys, nested records) set by a ``STATE_SNAPSHOT`` and then
  modified by many small ``STATE_DELTA`` patches using add / replace / remove / move /
  copy / test, as agents update status, counters, plans and task lists.

``generate_events()`` returns the events as dicts; ``to_sse()`` writes them the way an
agent server does (``data: <compact JSON>\\n\\n``).
"""

from __future__ import annotations

import json
import random
from typing import Dict, List

WORDS = (
    "the agent plan step tool result query weather search Berlin alpha beta gamma delta "
    "café naïve 日本語 emoji😀 ok { } [ ] : , quote\" back\\slash new\nline"
).split(" ")

STATE_KEYS = 2000


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _deltas(rng: random.Random, text: str) -> List[str]:
    out, i = [], 0
    while i < len(text):
        k = rng.randint(2, 8)
        out.append(text[i : i + k])
        i += k
    return out


def _initial_state(rng: random.Random) -> Dict:
    state = {
        f"item_{i:04d}": {"id": i, "status": "pending", "score": rng.random(), "tags": ["a", "b"]}
        for i in range(STATE_KEYS)
    }
    state["plan"] = {"steps": [], "done": 0}
    state["counter"] = 0
    state["log"] = []
    return state


def _state_delta(rng: random.Random, counter: int, plan_len: int) -> List[Dict]:
    k = rng.randrange(STATE_KEYS)
    choice = rng.random()
    if choice < 0.35:
        return [
            {"op": "test", "path": "/counter", "value": counter},
            {"op": "replace", "path": "/counter", "value": counter + 1},
        ]
    if choice < 0.6:
        return [{"op": "replace", "path": f"/item_{k:04d}/status", "value": rng.choice(["running", "done", "failed"])}]
    if choice < 0.75:
        return [{"op": "add", "path": "/plan/steps/-", "value": {"title": _text(rng, 3), "done": False}}]
    if choice < 0.85 and plan_len > 0:
        return [{"op": "remove", "path": f"/plan/steps/{rng.randrange(plan_len)}"}]
    if choice < 0.93:
        return [{"op": "copy", "from": f"/item_{k:04d}/score", "path": "/log/-"}]
    return [{"op": "add", "path": f"/item_{k:04d}/note", "value": _text(rng, 4)}]


def generate_events(n: int = 100_000, seed: int = 7) -> List[Dict]:
    rng = random.Random(seed)
    events: List[Dict] = []
    thread = "thread-bench"
    run = 0
    counter = 0
    plan_len = 0
    msg = 0
    first = True
    while len(events) < n:
        run += 1
        run_id = f"run-{run}"
        events.append({"type": "RUN_STARTED", "threadId": thread, "runId": run_id})
        if first:
            events.append({"type": "STATE_SNAPSHOT", "snapshot": _initial_state(rng)})
            first = False
        for _turn in range(rng.randint(3, 6)):
            kind = rng.random()
            msg += 1
            if kind < 0.15:
                rid = f"reason-{msg}"
                events.append({"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"})
                for d in _deltas(rng, _text(rng, rng.randint(20, 80))):
                    events.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": d})
                events.append({"type": "REASONING_MESSAGE_END", "messageId": rid})
            mid = f"msg-{msg}"
            text = _text(rng, rng.randint(100, 600))
            if rng.random() < 0.2:
                for d in _deltas(rng, text):
                    events.append({"type": "TEXT_MESSAGE_CHUNK", "messageId": mid, "delta": d})
            else:
                events.append({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
                for d in _deltas(rng, text):
                    events.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": d})
                events.append({"type": "TEXT_MESSAGE_END", "messageId": mid})
            for _ in range(rng.randint(0, 2)):
                msg += 1
                cid = f"call-{msg}"
                args = json.dumps({"query": _text(rng, rng.randint(5, 40)), "limit": rng.randint(1, 50)})
                events.append(
                    {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": rng.choice(["search", "get_weather"]), "parentMessageId": mid}
                )
                for d in _deltas(rng, args):
                    events.append({"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": d})
                events.append({"type": "TOOL_CALL_END", "toolCallId": cid})
                events.append(
                    {"type": "TOOL_CALL_RESULT", "messageId": f"result-{msg}", "toolCallId": cid, "content": _text(rng, 30), "role": "tool"}
                )
            for _ in range(rng.randint(5, 30)):
                delta = _state_delta(rng, counter, plan_len)
                op = delta[-1]
                if op["path"] == "/counter":
                    counter += 1
                elif op["path"] == "/plan/steps/-":
                    plan_len += 1
                elif op["op"] == "remove":
                    plan_len -= 1
                events.append({"type": "STATE_DELTA", "delta": delta})
        events.append({"type": "RUN_FINISHED", "threadId": thread, "runId": run_id})
    return events


def to_sse(events: List[Dict]) -> bytes:
    return b"".join(
        b"data: " + json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n" for e in events
    )

