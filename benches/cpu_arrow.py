"""CPU time of ``to_arrow`` vs the typed decoders and the pure-Python peers on the
100k-event logs of ``bench_arrow.py``, interleaved A/B in one process.

On a shared machine the wall times of ``bench_arrow.py`` measure the load as much as the
code (and no thread count can scale without an idle core); the process CPU time (every
thread's) is the work done, the cost a loaded or single-core machine pays:

    python benches/cpu_arrow.py

Each call is timed without freeing its result (as pytest-benchmark times it: the result
is dropped after the timer stops); the freeing is printed apart (``decode_sse``'s 100k
Structs take ~10 ms to free, a table next to nothing). Until stop 25 the freeing was
timed with the call, which counted ~10 ms more on ``decode_sse``'s side of the ratio.
Each call starts 10 ms after the last one's result was freed (since stop 29): that free
hands the kernel ~3 ms of page freeing on a core, which otherwise lands in the next call.
"""

from __future__ import annotations

import statistics
import time

import pyarrow as pa

from agui_fast._bench import protobuf_log, pydantic_peer, run_events, sse_log
from agui_fast.arrow import to_arrow
from agui_fast.decoder import decode_protobuf, decode_sse

from bench_proto import upb_dict_log

ROUNDS = 9


def main() -> None:
    events = run_events(100_000)
    sse, pb = sse_log(events), protobuf_log(events)
    cases = {
        "to_arrow sse, 1 thread": lambda: pa.table(to_arrow(sse, threads=1)),
        "to_arrow sse, 2 threads": lambda: pa.table(to_arrow(sse, threads=2)),
        "decode_sse": lambda: decode_sse(sse),
        "to_arrow protobuf, 1 thread": lambda: pa.table(to_arrow(pb, threads=1)),
        "to_arrow protobuf, 2 threads": lambda: pa.table(to_arrow(pb, threads=2)),
        "decode_protobuf": lambda: decode_protobuf(pb),
        # The pure-Python peers (about a second each): every third round.
        "pure-Python peer (sse)": lambda: pure_python(sse),
        "upb dict (protobuf)": lambda: upb_dict_log(pb),
    }
    pure_python = pydantic_peer()
    slow = {"pure-Python peer (sse)", "upb dict (protobuf)"}
    got: dict = {k: [] for k in cases}
    for r in range(ROUNDS):
        for name, run in cases.items():
            if name in slow and r % 3:
                continue
            time.sleep(0.01)  # settle: the kernel's page freeing after the last result's free
            c0, w0 = time.process_time(), time.perf_counter()
            out = run()
            c1, w1 = time.process_time(), time.perf_counter()
            del out
            c2, w2 = time.process_time(), time.perf_counter()
            got[name].append((c1 - c0, w1 - w0, c2 - c1, w2 - w1))
    stats = {}
    for name, times in got.items():
        cpu, wall = [t[0] * 1e3 for t in times], [t[1] * 1e3 for t in times]
        drop = statistics.median(t[3] * 1e3 for t in times)
        stats[name] = (min(cpu), statistics.median(cpu), min(wall), statistics.median(wall))
        print(f"{name:28s} CPU {min(cpu):6.1f} ms min {statistics.median(cpu):6.1f} ms median | "
              f"wall {min(wall):6.1f} / {statistics.median(wall):6.1f} ms | freeing the result {drop:5.1f} ms")
    # Peer time / our time (min, median), CPU and wall.
    for ours, peer in [("to_arrow sse, 1 thread", "decode_sse"), ("to_arrow sse, 2 threads", "decode_sse"),
                       ("to_arrow protobuf, 1 thread", "decode_protobuf"),
                       ("to_arrow protobuf, 2 threads", "decode_protobuf"),
                       ("to_arrow sse, 2 threads", "pure-Python peer (sse)"),
                       ("to_arrow protobuf, 2 threads", "upb dict (protobuf)")]:
        o, p = stats[ours], stats[peer]
        print(f"{ours:28s} vs {peer:22s} CPU {p[0] / o[0]:4.2f}x min {p[1] / o[1]:4.2f}x median | "
              f"wall {p[2] / o[2]:4.2f}x / {p[3] / o[3]:4.2f}x")


if __name__ == "__main__":
    main()
