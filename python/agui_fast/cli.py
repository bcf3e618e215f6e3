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
    from .decoder import decode_protobuf, decode_sse
    from .encoder import AGUI_MEDIA_TYPE, EventEncoder
    from .patch import StateDocument

    events = _demo_events()
    enc = EventEncoder()
    print("== a run, encoded as SSE (byte-identical to ag_ui.encoder) ==")
    stream = enc.encode_many(events)
    sys.stdout.write(stream.decode())
    decoded = decode_sse(stream)
    assert decoded == events, "round trip changed an event"
    print(f"== decoded back: {len(decoded)} events, equal to the originals ==")
    extras = decoded[-2].model_extra
    print(f"   extras kept on {type(decoded[-2]).__name__}: {extras}")

    binary = EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(events)
    print(f"== the same run as length-prefixed protobuf: {len(binary)} bytes (SSE: {len(stream)}) ==")
    from_proto = decode_protobuf(binary)
    same = sum(a == b and a.__dict__ == b.__dict__ for a, b in zip(from_proto, decoded))
    print(f"   decoded {len(from_proto)} events; {same} equal to the SSE decode "
          "(protobuf drops unknown members, as the reference does)")
    state = StateDocument()
    for ev in decoded:
        if ev.type.value == "STATE_SNAPSHOT":
            state.replace(ev.snapshot)
        elif ev.type.value == "STATE_DELTA":
            state.apply(ev.delta)
    print(f"== final state after replaying the JSON Patch deltas: {state.to_python()} ==")

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


def detect_format(path: str) -> str:
    """``"sse"`` or ``"proto"`` from a log's first bytes (SSE starts with a field or comment)."""
    with open(path, "rb") as f:
        head = f.read(64)
    head = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
    if not head or head[:1] in (b"d", b"e", b"i", b"r", b":", b"\n", b"\r"):
        return "sse"
    return "proto"


def iter_log(path: str, fmt: str = "auto", raw=None):
    fmt = detect_format(path) if fmt == "auto" else fmt
    if fmt == "sse":
        from .sse import iter_sse

        return iter_sse(path, raw=raw)
    from .proto import iter_protobuf

    return iter_protobuf(path, raw=raw)


def stats(args: argparse.Namespace) -> int:
    """Decode and validate a whole log, then count its events by type."""
    from collections import Counter

    from .errors import AguiError

    counts: Counter = Counter()
    t0 = time.perf_counter()
    try:
        for event in iter_log(args.log, args.format):
            counts[event.type.value] += 1
    except AguiError as exc:
        print(f"{args.log}: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"(after {sum(counts.values())} valid events)", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - t0
    total = sum(counts.values())
    for name, n in counts.most_common():
        print(f"{name:28s} {n:10d}")
    print(f"{'total':28s} {total:10d}   ({elapsed:.3f} s, {total / max(elapsed, 1e-9):,.0f} events/s)")
    return 0


def convert(args: argparse.Namespace) -> int:
    """SSE log -> protobuf log, or back (streaming, constant memory)."""
    from .proto import convert_protobuf_to_sse, convert_sse_to_protobuf

    src_fmt = detect_format(args.src) if args.source_format == "auto" else args.source_format
    fn = convert_sse_to_protobuf if src_fmt == "sse" else convert_protobuf_to_sse
    n = fn(args.src, args.dst)
    print(f"{args.src} ({src_fmt}) -> {args.dst}: {n} events")
    return 0


def replay(args: argparse.Namespace) -> int:
    """Replay STATE_SNAPSHOT / STATE_DELTA events into the final state (JSON on stdout)."""
    import json

    from .errors import JsonPatchError
    from .patch import StateDocument

    doc = StateDocument({})
    failed = 0
    for event in iter_log(args.log, args.format):
        kind = event.type.value
        if kind == "STATE_SNAPSHOT":
            doc.replace(event.snapshot)
        elif kind == "STATE_DELTA":
            try:
                doc.apply(event.delta)
            except JsonPatchError as exc:  # the reference client also skips a failed delta
                failed += 1
                print(f"warning: skipped a STATE_DELTA: {exc}", file=sys.stderr)
    json.dump(doc.to_python(), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 1 if failed and args.strict else 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="agui-fast", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("demo", help="encode, decode and time a small run")
    p.set_defaults(func=demo)
    p = sub.add_parser("stats", help="decode and validate a log (SSE or protobuf), count events")
    p.add_argument("log")
    p.add_argument("--format", choices=("auto", "sse", "proto"), default="auto")
    p.set_defaults(func=stats)
    p = sub.add_parser("convert", help="convert a log between SSE and protobuf")
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--source-format", choices=("auto", "sse", "proto"), default="auto")
    p.set_defaults(func=convert)
    p = sub.add_parser("replay", help="replay a log's state events into the final state")
    p.add_argument("log")
    p.add_argument("--format", choices=("auto", "sse", "proto"), default="auto")
    p.add_argument("--strict", action="store_true", help="exit 1 if a delta failed")
    p.set_defaults(func=replay)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        args = parser.parse_args(["demo"])
    return args.func(args)
