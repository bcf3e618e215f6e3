"""``replay_log`` against ``decode_sse`` on the 100k-event log of ``_stream_log.py``,
interleaved in one process, wall and CPU time, with ``replay_log`` forced onto one thread
(the native ``pipeline_min`` knob) beside it:

    python benches/cpu_stream.py [rounds]

``replay_log`` of a log of at least ``agui_core::stream::PIPELINE_MIN`` bytes frames and
parses on a second Rust thread ahead of the reducer, as ``decode_sse`` frames ahead of
msgspec: wall time drops when a second core is free, the process CPU time (every
thread's: the cost a loaded or single-core machine pays) rises a little. Prints each
case's min / median, then the ratios of ``decode_sse`` and of the one-thread replay to
``replay_log`` (> 1: ``replay_log`` is faster).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _stream_log import generate_events, to_sse  # noqa: E402

from agui_fast import _native, stream  # noqa: E402
from agui_fast.sse import decode_sse  # noqa: E402

NEVER = 1 << 62


def main(rounds: int) -> None:
    log = to_sse(generate_events(100_000))
    cases = {
        "replay_log": lambda: stream.replay_log(log),
        "replay_log, one thread": lambda: stream._replay(_native.replay_log(log, pipeline_min=NEVER), False),
        "decode_sse": lambda: decode_sse(log),
    }
    got: dict = {k: [] for k in cases}
    for _ in range(rounds):
        for name, run in cases.items():
            c0, w0 = time.process_time(), time.perf_counter()
            run()
            got[name].append((time.perf_counter() - w0, time.process_time() - c0))
    stat = {}
    for name, times in got.items():
        wall, cpu = [w * 1e3 for w, _ in times], [c * 1e3 for _, c in times]
        stat[name] = (min(wall), statistics.median(wall), min(cpu), statistics.median(cpu))
        print(f"{name:24s} wall {stat[name][0]:6.1f} ms min {stat[name][1]:6.1f} ms median | "
              f"CPU {stat[name][2]:6.1f} / {stat[name][3]:6.1f} ms")
    ours = stat["replay_log"]
    for peer in ("decode_sse", "replay_log, one thread"):
        p = stat[peer]
        print(f"{peer} / replay_log: wall {p[0] / ours[0]:.2f}x min {p[1] / ours[1]:.2f}x median | "
              f"CPU {p[2] / ours[2]:.2f}x min {p[3] / ours[3]:.2f}x median")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
