"""``agui-fast`` / ``python -m agui_fast``: demo and log tools."""

from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional


def _demo_events():
    from .core import (
        CustomEvent, RunFinishedEvent, RunStartedEvent, StateDeltaEvent, StateSnapshotEvent,
        TextMessageContentEvent, TextMessageEndEvent, TextMessageStartEvent, ToolCallArgsEvent,
        ToolCallEndEvent, ToolCallStartEvent, PROTOCOL_VERSION,
    )

    events = [
        RunStartedEvent(thread_id="t1", run_id="r1", protocol_version=PROTOCOL_VERSION),
        StateSnapshotEvent(snapshot={"status": "thinking", "steps": []}),
        TextMessageStartEvent(message_id="m1", role="assistant"),
    ]
    events += [TextMessageContentEvent(message_id="m1", delta=w) for w in "Hello from agui-fast ".split(" ")]
    events += [
        TextMessageEndEvent(message_id="m1"),
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="m1"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"q":"ag-ui"}'),
        ToolCallEndEvent(tool_call_id="c1"),
        StateDeltaEvent(delta=[
            {"op": "replace", "path": "/status", "value": "done"},
            {"op": "add", "path": "/steps/-", "value": {"tool": "search"}},
        ]),
        CustomEvent(name="note", value={"unknown_members": "are kept"}, trace_id="abc"),
        RunFinishedEvent(thread_id="t1", run_id="r1", outcome={"type": "success"}),
    ]
    return events


def _timeit(fn, n: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def demo(args: argparse.Namespace) -> int:
    from .decoder import decode_event
    from .encoder import EventEncoder

    events = _demo_events()
    enc = EventEncoder()
    print("== a run, encoded as SSE (byte-identical to ag_ui.encoder) ==")
    stream = enc.encode_many(events)
    sys.stdout.write(stream.decode())
    decoded = [decode_event(chunk[6:]) for chunk in stream.split(b"\n\n") if chunk]
    assert decoded == events, "round trip changed an event"
    print(f"== decoded back: {len(decoded)} events, equal to the originals ==")
    extras = decoded[-2].model_extra
    print(f"   extras kept on {type(decoded[-2]).__name__}: {extras}")

    try:
        from ag_ui.encoder import EventEncoder as RefEncoder
        from .interop import to_ag_ui
    except ImportError:
        print("(install ag-ui-protocol to compare speed with the reference encoder)")
        return 0
    ours = events[3]
    theirs = to_ag_ui(ours)
    ref = RefEncoder()
    assert enc.encode(ours) == ref.encode(theirs) == enc.encode(theirs)
    t_ref = _timeit(lambda: ref.encode(theirs), 2000)
    t_ours = _timeit(lambda: enc.encode(ours), 20000)
    t_pyd = _timeit(lambda: enc.encode(theirs), 20000)
    print("== encode one TEXT_MESSAGE_CONTENT (best of 5) ==")
    print(f"   ag_ui.encoder (pydantic):          {t_ref * 1e6:8.2f} us")
    print(f"   agui_fast, msgspec Struct:          {t_ours * 1e6:8.2f} us  ({t_ref / t_ours:5.1f}x)")
    print(f"   agui_fast, the same pydantic event: {t_pyd * 1e6:8.2f} us  ({t_ref / t_pyd:5.1f}x)")
    print("   (full benchmarks: python -m pytest benches --benchmark-only)")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="agui-fast", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("demo", help="encode, decode and time a small run")
    p.set_defaults(func=demo)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        args = parser.parse_args(["demo"])
    return args.func(args)
