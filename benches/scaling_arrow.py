"""Throughput of ``to_arrow`` by thread count: on several logs (the GIL is released and
each log decodes on its own Rust thread), and on one big log (the same events in one
source, cut at frame boundaries into parts decoded on every thread).

    python benches/scaling_arrow.py            # table, writes docs/arrow_scaling.csv
    python benches/scaling_arrow.py --plot     # also docs/arrow_scaling.png (matplotlib)

Each point is the best and the median of several runs on the same logs, in one process;
the machine's core count bounds the useful thread count. A GIL-free control (``hashlib``
on the same number of Python threads) is measured alongside: when it does not scale
either, the machine had no idle core to give (a shared machine under load).
"""

from __future__ import annotations

import csv
import hashlib
import os
import statistics
import sys
import threading
import time

import pyarrow as pa

from agui_fast._bench import run_events, sse_log
from agui_fast.arrow import to_arrow

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(os.path.dirname(HERE), "docs")
N = 100_000
LOGS = 4
REPEAT = 7


_BLOCK = b"x" * (32 << 20)


def _control(threads: int) -> float:
    """Seconds for 4 hashes of 32 MiB on `threads` threads (hashlib releases the GIL)."""
    jobs = list(range(4))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not jobs:
                    return
                jobs.pop()
            hashlib.sha256(_BLOCK).digest()

    t0 = time.perf_counter()
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0


def _times(source, threads: int) -> list:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        t = pa.table(to_arrow(source, threads=threads))
        times.append(time.perf_counter() - t0)
        assert t.num_rows == LOGS * N
    return times


def main() -> None:
    logs = [sse_log(run_events(N, seed=i)) for i in range(LOGS)]
    big = b"".join(logs)
    mb = len(big) / 1e6
    rows = []
    for threads in (1, 2, 3, 4):
        times = _times(logs, threads)
        one = _times(big, threads)
        best, med = min(times), statistics.median(times)
        control = min(_control(threads) for _ in range(3))
        rows.append({
            "threads": threads,
            "events_per_s_best": round(LOGS * N / best),
            "events_per_s_median": round(LOGS * N / med),
            "mb_per_s_best": round(mb / best, 1),
            "mb_per_s_median": round(mb / med, 1),
            "one_log_events_per_s_best": round(LOGS * N / min(one)),
            "one_log_events_per_s_median": round(LOGS * N / statistics.median(one)),
            "control_s": round(control, 4),
        })
        print(rows[-1])
    base = rows[0]
    for r in rows:
        print(f"{r['threads']} threads: {r['events_per_s_best'] / base['events_per_s_best']:.2f}x (best), "
              f"{r['events_per_s_median'] / base['events_per_s_median']:.2f}x (median); one log "
              f"{r['one_log_events_per_s_best'] / base['one_log_events_per_s_best']:.2f}x (best), "
              f"{r['one_log_events_per_s_median'] / base['one_log_events_per_s_median']:.2f}x (median); "
              f"GIL-free control {base['control_s'] / r['control_s']:.2f}x")
    with open(os.path.join(DOCS, "arrow_scaling.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if "--plot" in sys.argv:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        xs = [r["threads"] for r in rows]
        ax.plot(xs, [r["events_per_s_best"] / 1e6 for r in rows], "o-", label=f"{LOGS} logs, best")
        ax.plot(xs, [r["events_per_s_median"] / 1e6 for r in rows], "s--", label=f"{LOGS} logs, median")
        ax.plot(xs, [r["one_log_events_per_s_best"] / 1e6 for r in rows], "^-", label=f"one log of {LOGS * N:,} events, best")
        ax.plot(xs, [r["one_log_events_per_s_median"] / 1e6 for r in rows], "v--", label="one log, median")
        # The control scaled to the 1-thread best: where the machine could have taken us.
        ax.plot(xs, [rows[0]["events_per_s_best"] / 1e6 * rows[0]["control_s"] / r["control_s"] for r in rows],
                ":", color="grey", label="GIL-free control (hashlib), scaled")
        ax.set_xticks(xs)
        ax.set_xlabel(f"threads (to_arrow of {LOGS} SSE logs of {N:,} events, or of one; {os.cpu_count()} cores)")
        ax.set_ylabel("million events / s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
        ax.set_title("to_arrow throughput by thread count")
        fig.tight_layout()
        fig.savefig(os.path.join(DOCS, "arrow_scaling.png"), dpi=110)


if __name__ == "__main__":
    main()
