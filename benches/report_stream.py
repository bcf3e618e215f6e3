"""Ratios of ``agui_fast.stream.replay_log`` against the pure-Python replayer and against
``decode_sse`` alone, per log size (generated runs of ``_stream_log.py``), same process.

    python benches/report_stream.py [sizes...]      # default: 1000 10000 100000

Each line: events, log MB, our min / median time, and each peer's min and median time
divided by ours (> 1: we are faster). The all-or-nothing (``atomic``) peer deep-copies
the state per delta and takes about a minute at 100k events: it runs once there.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _py_replayer import replay_sse_bytes  # noqa: E402
from _stream_log import generate_events, to_sse  # noqa: E402

from agui_fast import stream  # noqa: E402
from agui_fast.sse import decode_sse  # noqa: E402


def _times(fn, rounds):
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out), statistics.median(out)


def main(sizes):
    print(f"{'events':>8} {'MB':>6} {'ours min/med ms':>17}  peer: min-ratio / median-ratio")
    for n in sizes:
        log = to_sse(generate_events(n))
        ours = _times(lambda: stream.replay_log(log), 7)
        peers = {
            "decode_sse alone": _times(lambda: decode_sse(log), 7),
            "pure Python in place": _times(lambda: replay_sse_bytes(log, atomic=False), 3 if n <= 10_000 else 1),
            "pure Python atomic": _times(lambda: replay_sse_bytes(log), 3 if n <= 10_000 else 1),
        }
        cells = "  ".join(f"{k}: {v[0] / ours[0]:.1f}x / {v[1] / ours[1]:.1f}x" for k, v in peers.items())
        print(f"{n:>8} {len(log) / 1e6:>6.2f} {ours[0] * 1e3:>8.1f}/{ours[1] * 1e3:<8.1f}  {cells}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10_000, 100_000])
