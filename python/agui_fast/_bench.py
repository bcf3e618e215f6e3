"""Generated logs and the pure-Python peers, shared by ``agui-fast bench`` and
the bench suite (``python -m benches``).

The peer is what a Python user writes without agui-fast: an httpx-sse style line parser
(``data:`` lines joined, blank line dispatches) and ``TypeAdapter(ag_ui.core.Event)`` per
event (``ag-ui-protocol``, a dev dependency, imported where the peer is built).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterator, List

from .core import (
    ReplaceOperation, RunFinishedEvent, RunStartedEvent, StateDeltaEvent, StateSnapshotEvent,
    TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent, TokenUsage, ToolCallArgsEvent,
    ToolCallEndEvent, ToolCallStartEvent,
)
from .encoder import AGUI_MEDIA_TYPE, EventEncoder

_WORDS = "the agent streams tokens to the user interface while tools run and state changes".split()


def run_events(n: int, seed: int = 0) -> List[Any]:
    """About ``n`` events shaped like recorded agent runs: mostly text and tool-call
    deltas, a state snapshot and delta per run, token usage at the end of each run."""
    rng = random.Random(seed)
    events: List[Any] = []
    run = 0
    while len(events) < n:
        run += 1
        t, r, m, c = f"thread-{run % 7}", f"run-{run}", f"msg-{run}", f"call-{run}"
        events.append(RunStartedEvent(thread_id=t, run_id=r, timestamp=1_700_000_000_000 + run * 1000))
        events.append(StateSnapshotEvent(snapshot={"run": run, "steps": [], "status": "thinking"}))
        events.append(TextMessageStartEvent(message_id=m, role="assistant"))
        for _ in range(rng.randint(20, 60)):
            events.append(TextMessageContentEvent(message_id=m, delta=rng.choice(_WORDS) + " "))
        events.append(TextMessageEndEvent(message_id=m))
        events.append(ToolCallStartEvent(tool_call_id=c, tool_call_name="search", parent_message_id=m))
        for part in ('{"query": ', '"agent ', "logs", '", "limit": ', "10}"):
            events.append(ToolCallArgsEvent(tool_call_id=c, delta=part))
        events.append(ToolCallEndEvent(tool_call_id=c))
        events.append(StateDeltaEvent(delta=[ReplaceOperation(path="/status", value="done")]))
        events.append(RunFinishedEvent(
            thread_id=t, run_id=r, usage=[TokenUsage(provider="p", input_tokens=100 + run, output_tokens=40)],
        ))
    return events[:n]


def sse_log(events: List[Any]) -> bytes:
    return EventEncoder().encode_many(events)


def protobuf_log(events: List[Any]) -> bytes:
    return EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(events)


def split_sse_py(data: bytes) -> Iterator[str]:
    """The peer's SSE parser (httpx-sse's rules for LF-separated logs)."""
    buf: List[str] = []
    for line in data.decode("utf-8").split("\n"):
        if not line:
            if buf:
                yield "\n".join(buf)
                buf = []
            continue
        if line.startswith("data:"):
            value = line[5:]
            buf.append(value[1:] if value.startswith(" ") else value)
    if buf:
        yield "\n".join(buf)


def pydantic_peer() -> Callable[[bytes], list]:
    """``log bytes -> [ag_ui.core events]`` (needs ag-ui-protocol)."""
    from pydantic import TypeAdapter  # optional: the reference SDK's dependency

    import ag_ui.core as ref

    validate = TypeAdapter(ref.Event).validate_json

    def decode(data: bytes) -> list:
        return [validate(p) for p in split_sse_py(data)]

    return decode
