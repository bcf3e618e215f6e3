"""Print the protobuf speed goals as a table of ratios (run after ``maturin develop --release``).

    python benches/report_proto.py            # markdown table on stdout

Uses the workloads of ``bench_proto.py`` (same data, same peers) with ``timeit`` (best of
several repeats, so a busy machine disturbs the ratios less than the means would). Ratios
are peer time / agui_fast time: > 1 means agui_fast is faster.
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_proto as b  # noqa: E402
from google.protobuf import json_format  # noqa: E402

from agui_fast import proto  # noqa: E402


def best(fn, number, repeat=7):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main() -> None:
    parse, Event, to_dict, from_string = json_format.ParseDict, b.pb.Event, json_format.MessageToDict, b.pb.Event.FromString
    enc, dec = proto.encode_event_message, proto.decode_event_message
    rows = []

    def group(name, ours, dict_path, floor, number):
        o = best(ours, number)
        d = best(dict_path, max(1, number // 10)) if dict_path else None
        f = best(floor, number)
        rows.append((name, o, d, f))

    group(
        "encode small event",
        lambda: enc(b.SMALL),
        lambda: parse(b.SMALL_PB_DICT, Event()).SerializeToString(),
        b.SMALL_PB.SerializeToString,
        20000,
    )
    group(
        "decode small event",
        lambda: dec(b.SMALL_MSG),
        lambda: to_dict(from_string(b.SMALL_MSG)),
        lambda: from_string(b.SMALL_MSG),
        20000,
    )
    group(
        f"encode mixed ({len(b.MIXED)} events)",
        lambda: [enc(e) for e in b.MIXED],
        lambda: [parse(d, Event()).SerializeToString() for d in b.MIXED_PB_DICTS],
        lambda: [m.SerializeToString() for m in b.MIXED_PB],
        20,
    )
    group(
        f"decode mixed ({len(b.MIXED)} events)",
        lambda: [dec(m) for m in b.MIXED_MSGS],
        lambda: [to_dict(from_string(m)) for m in b.MIXED_MSGS],
        lambda: [from_string(m) for m in b.MIXED_MSGS],
        20,
    )

    print(f"google.protobuf implementation: {b.IMPL}\n")
    print("| workload | agui_fast | dict path | floor | vs dict path (goal ≥ 10×) | vs floor (goal ≥ 0.5×) |")
    print("|---|---|---|---|---|---|")
    for name, o, d, f in rows:
        print(f"| {name} | {o * 1e6:.2f} µs | {d * 1e6:.2f} µs | {f * 1e6:.2f} µs | {d / o:.1f}× | {f / o:.2f}× |")

    # The two log decoders alternate, with the GC on (timeit would switch it off, hiding
    # the collections a real caller pays), so a noisy moment hits both alike.
    from agui_fast.decoder import decode_sse

    times = {"proto": [], "sse": []}
    for _ in range(15):
        for name, fn, data in (("proto", proto.decode_protobuf, b.LOG_PROTO), ("sse", decode_sse, b.LOG_SSE)):
            t0 = time.perf_counter()
            out = fn(data)
            times[name].append(time.perf_counter() - t0)
            del out
    print()
    print("| 100k-event log (min / median of 15, alternating) | protobuf decode | SSE decode | SSE / protobuf (goal > 1) |")
    print("|---|---|---|---|")
    p_min, s_min = min(times["proto"]), min(times["sse"])
    p_med, s_med = statistics.median(times["proto"]), statistics.median(times["sse"])
    print(
        f"| {len(b.LOG_PROTO) / 1e6:.1f} MB protobuf, {len(b.LOG_SSE) / 1e6:.1f} MB SSE "
        f"| {p_min * 1e3:.0f} / {p_med * 1e3:.0f} ms | {s_min * 1e3:.0f} / {s_med * 1e3:.0f} ms "
        f"| {s_min / p_min:.2f}× / {s_med / p_med:.2f}× |"
    )


if __name__ == "__main__":
    main()
