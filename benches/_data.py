"""The suite's inputs, generated (seeded) or taken from the test vectors, shared by every
bench file so that each workload is built one way.

Sizes shrink in ``--quick`` runs (``QUICK``); each bench records the sizes it used, and the
runner's report says them.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List

import msgspec

from _interleave import QUICK
from _stream_log import generate_events, to_sse
from agui_fast._bench import protobuf_log, run_events, sse_log
from agui_fast.decoder import EVENT_DECODER, decode_event

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors"

# The logs' size: events of a recorded run (100k: ~8 MB of SSE).
LOG_EVENTS = 20_000 if QUICK else 100_000

__all__ = [
    "LOG_EVENTS", "ROOT", "VECTORS", "generate_events", "to_sse", "protobuf_log", "run_events", "sse_log",
    "load_jsonl", "codec_payloads", "vector_events", "arrow_logs", "stream_log", "large_events",
    "make_state", "ONE_OP", "THREE_OPS", "APPEND_BIG_LIST", "two_op_deltas",
]


def load_jsonl(relpath: str) -> List[Dict[str, Any]]:
    with open(VECTORS / relpath, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@lru_cache(maxsize=None)
def codec_payloads(with_extras: bool = False) -> List[bytes]:
    """The valid events of the codec vectors as their reference SSE payloads (``py_sse``),
    the huge ``structure/`` cases left out. Without ``with_extras``, only the events bare
    msgspec decodes as they are (no unknown members: those take the decoders' exact, slower
    path), so that every peer decodes the very same frames."""
    out = []
    for case in load_jsonl("codec/events.jsonl"):
        sse = case.get("py_sse")
        if not sse or case["name"].startswith("structure/"):
            continue
        payload = sse[len("data: "):-2].encode("utf-8")
        if not with_extras:
            try:
                EVENT_DECODER.decode(payload)
            except msgspec.MsgspecError:
                continue
        out.append(payload)
    return out


@lru_cache(maxsize=None)
def vector_events() -> List[Any]:
    """Every valid codec vector event our typed layer reads, as Structs (mixed kinds)."""
    return [decode_event(c["py_sse"][6:-2]) for c in load_jsonl("codec/events.jsonl") if c.get("py_sse")]


@lru_cache(maxsize=None)
def arrow_logs() -> Dict[str, bytes]:
    """A recorded-run-shaped log (``agui_fast._bench.run_events``: mostly text and tool-call
    deltas, a state snapshot and delta and token usage per run) as SSE and protobuf, and a
    second SSE log of other events (for the several-logs cases)."""
    events = run_events(LOG_EVENTS)
    return {"sse": sse_log(events), "protobuf": protobuf_log(events), "sse_b": sse_log(run_events(LOG_EVENTS, seed=1))}


@lru_cache(maxsize=None)
def stream_log(seed: int = 7) -> bytes:
    """A long agent run (``_stream_log``: text streaming, tool calls, reasoning, a 2,000-key
    state under many small deltas) as SSE."""
    return to_sse(generate_events(LOG_EVENTS, seed=seed))


# -- large events: prose as an LLM writes it, a nested agent state ----------------------------

_WORDS = (
    "the agent calls a tool to search for the answer and then writes it back to the user "
    "with a short summary of what it found, including numbers like 42 and 3.14, code, "
    "résumé naïve café"
).split()
_SPECIAL = ["\n\n", '"quoted"', "C:\\path", "→", "😀", "\t"]


def _text(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        r = rng.random()
        out.append(rng.choice(_SPECIAL[:2]) if r < 0.06 else rng.choice(_SPECIAL[2:]) if r < 0.08 else rng.choice(_WORDS))
    return " ".join(out)


def _messages(rng: random.Random, n: int) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for i in range(n):
        if i % 3 == 0:
            out.append({"id": f"m{i}", "role": "user", "content": _text(rng, 40)})
        elif i % 3 == 1:
            call = {"id": f"call_{i}", "type": "function",
                    "function": {"name": "search", "arguments": json.dumps({"q": _text(rng, 5), "k": i})}}
            out.append({"id": f"m{i}", "role": "assistant", "content": _text(rng, 60), "toolCalls": [call]})
        else:
            out.append({"id": f"m{i}", "role": "tool", "content": _text(rng, 30), "toolCallId": f"call_{i - 1}"})
    return out


def _state(rng: random.Random, size: int) -> Dict[str, Any]:
    def node(depth: int) -> Any:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice([_text(rng, 6), rng.randint(-(10**6), 10**6), rng.random() * 1000, True, None])
        if rng.random() < 0.5:
            return [node(depth - 1) for _ in range(rng.randint(1, 6))]
        return {f"key_{rng.randint(0, 999)}": node(depth - 1) for _ in range(rng.randint(1, 6))}

    state: Dict[str, Any] = {}
    while len(json.dumps(state)) < size:
        state[f"section_{len(state)}"] = node(5)
    return state


@lru_cache(maxsize=None)
def large_events() -> Dict[str, tuple]:
    """``name -> (Struct, the same event as plain JSON data)``: a MESSAGES_SNAPSHOT of 300
    messages (user, assistant with tool calls, tool results; prose with newlines, quotes and
    non-ASCII) and a STATE_SNAPSHOT of ~100 KB of nested dicts, lists, strings and numbers."""
    rng = random.Random(9)
    out = {}
    for name, event in (
        ("messages_snapshot_300", {"type": "MESSAGES_SNAPSHOT", "messages": _messages(rng, 300)}),
        ("state_snapshot_100kb", {"type": "STATE_SNAPSHOT", "snapshot": _state(rng, 100_000)}),
    ):
        text = json.dumps(event, ensure_ascii=False)
        out[name] = (decode_event(text), json.loads(text))
    return out


# -- JSON Patch: an agent state of a chosen size and the patches applied to it ------------------


def make_state(target_bytes: int) -> Dict[str, Any]:
    """An agent state of roughly ``target_bytes`` of JSON, shaped like the states of
    ``tests/vectors/client/json-patch/state_deltas.jsonl`` (agent/plan, todo list, documents,
    counters, ui). It grows in width (more todo items and documents), as a long-running
    agent's state does, while the parts the patches touch keep their size."""
    state: Dict[str, Any] = {
        "agent": {
            "status": "idle",
            "step": 3,
            "plan": {"title": "Trip to Berlin",
                     "steps": [{"id": f"s{i}", "text": "step text", "done": False} for i in range(5)]},
        },
        "todo": [],
        "done": [],
        "documents": {},
        "counters": {"tokens": 1000, "calls": 3},
        "ui": {"selected": None, "flags": [True, False]},
    }
    i = 0
    while len(json.dumps(state)) < target_bytes:
        # In chunks, so that a 10 MB state is not serialised again per item.
        for _ in range(max(1, (target_bytes - len(json.dumps(state))) // 110)):
            state["todo"].append({"id": f"t{i}", "title": f"weather search {i}", "done": i % 3 == 0})
            state["documents"][f"reports/{i}"] = {"pages": i % 50, "note": "result"}
            i += 1
    return state


# One small operation (the in-place case).
ONE_OP = [{"op": "replace", "path": "/agent/status", "value": "running"}]

# Three operations typical of a STATE_DELTA (the copy-mode case).
THREE_OPS = [
    {"op": "replace", "path": "/agent/status", "value": "running"},
    {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": "s-new", "text": "new step", "done": False}},
    {"op": "replace", "path": "/counters/tokens", "value": 1234},
]

# Appending to the list that grows with the document: copy mode must copy that list (a
# shallow copy: one pointer per element), so this case is not flat in the document's size.
APPEND_BIG_LIST = [{"op": "add", "path": "/todo/-", "value": {"id": "new", "title": "new task", "done": False}}]


def two_op_deltas(n: int) -> List[List[Dict[str, Any]]]:
    """``n`` STATE_DELTA patches of two operations each: a counter replaced, a plan step added."""
    return [
        [{"op": "replace", "path": "/counters/tokens", "value": i},
         {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": f"s{i}", "done": False}}]
        for i in range(n)
    ]
