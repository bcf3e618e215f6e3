"""Cases timed interleaved in one process (round by round, each case once per round, so a
load swing lands on every case alike), wall and CPU time (`time.process_time`: every
thread's, what a loaded or one-core machine pays)."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Dict, Tuple

# (wall min, wall median, CPU min, CPU median), in ms
Stats = Tuple[float, float, float, float]


def interleaved(cases: Dict[str, Callable[[], object]], rounds: int, before_round: Callable[[], None] = lambda: None) -> Dict[str, Stats]:
    """Run every case once per round (`before_round` first, untimed); print and return
    each case's stats."""
    got: Dict[str, list] = {k: [] for k in cases}
    for _ in range(rounds):
        before_round()
        for name, run in cases.items():
            c0, w0 = time.process_time(), time.perf_counter()
            run()
            got[name].append((time.perf_counter() - w0, time.process_time() - c0))
    stats: Dict[str, Stats] = {}
    width = max(map(len, cases))
    for name, times in got.items():
        wall, cpu = [w * 1e3 for w, _ in times], [c * 1e3 for _, c in times]
        stats[name] = (min(wall), statistics.median(wall), min(cpu), statistics.median(cpu))
        print(f"{name:{width}s} wall {stats[name][0]:7.2f} ms min {stats[name][1]:7.2f} ms median | "
              f"CPU {stats[name][2]:7.2f} / {stats[name][3]:7.2f} ms")
    return stats


def ratio_line(label: str, peer: Stats, ours: Stats) -> str:
    """`peer / ours` (> 1: ours is faster), by min and median, wall and CPU."""
    return (f"{label}: wall {peer[0] / ours[0]:.2f}x min {peer[1] / ours[1]:.2f}x median | "
            f"CPU {peer[2] / ours[2]:.2f}x min {peer[3] / ours[3]:.2f}x median")


def pedantic_against(benchmark: Any, target: Callable[..., Any], args: tuple, peers: Dict[str, Callable[[], object]],
                     *, rounds: int, warmup_rounds: int = 0, settle: float = 0.01) -> Any:
    """`benchmark.pedantic(target, args, ...)` with each peer run once before each of its
    rounds (in pytest-benchmark's untimed `setup`), timed here: our rounds and the peers'
    alternate, so a burst of load lands on both alike, which back-to-back benchmarks
    cannot give on a noisy machine. A peer's result is freed before our round starts (not
    timed, as pytest-benchmark drops ours after its timer), and every call starts `settle`
    seconds after the last one's result was freed: freeing `decode_sse`'s 100k Structs
    hands the kernel ~3 ms of page freeing on a core, which otherwise lands in the next
    call (stop 29: a `to_arrow` worker kept waiting 3.2 ms by median for a CPU, none with
    5 ms between). The peers' times (seconds, the measured rounds only) go into
    `benchmark.extra_info["interleaved"]`; conftest.py's summary prints peer / ours."""
    times: Dict[str, list] = {name: [] for name in peers}

    def setup() -> None:
        for name, run in peers.items():
            time.sleep(settle)
            t0 = time.perf_counter()
            out = run()
            times[name].append(time.perf_counter() - t0)
            del out
        time.sleep(settle)

    result = benchmark.pedantic(target, args, setup=setup, rounds=rounds, warmup_rounds=warmup_rounds)
    benchmark.extra_info["interleaved"] = {name: ts[warmup_rounds:] for name, ts in times.items()}
    return result
