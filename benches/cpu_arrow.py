"""CPU time of ``to_arrow`` vs the typed decoders on the 100k-event logs of
``bench_arrow.py``, interleaved A/B in one process.

On a shared machine the wall times of ``bench_arrow.py`` measure the load as much as the
code (and no thread count can scale without an idle core); the process CPU time (every
thread's) is the work done, the cost a loaded or single-core machine pays:

    python benches/cpu_arrow.py
"""

from __future__ import annotations

import statistics
import time

import pyarrow as pa

from agui_fast._bench import protobuf_log, run_events, sse_log
from agui_fast.arrow import to_arrow
from agui_fast.decoder import decode_protobuf, decode_sse

ROUNDS = 9


def main() -> None:
    events = run_events(100_000)
    sse, pb = sse_log(events), protobuf_log(events)
    cases = {
        "to_arrow sse, 1 thread": lambda: pa.table(to_arrow(sse, threads=1)),
        "to_arrow sse, 2 threads": lambda: pa.table(to_arrow(sse, threads=2)),
        "decode_sse": lambda: decode_sse(sse),
        "to_arrow protobuf, 1 thread": lambda: pa.table(to_arrow(pb, threads=1)),
        "decode_protobuf": lambda: decode_protobuf(pb),
    }
    got: dict = {k: [] for k in cases}
    for _ in range(ROUNDS):
        for name, run in cases.items():
            c0, w0 = time.process_time(), time.perf_counter()
            run()
            got[name].append((time.process_time() - c0, time.perf_counter() - w0))
    for name, times in got.items():
        cpu, wall = [c * 1e3 for c, _ in times], [w * 1e3 for _, w in times]
        print(f"{name:28s} CPU {min(cpu):6.1f} ms min {statistics.median(cpu):6.1f} ms median | "
              f"wall {min(wall):6.1f} / {statistics.median(wall):6.1f} ms")


if __name__ == "__main__":
    main()
