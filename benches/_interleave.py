"""The one way the suite times a workload: ours and its peers interleaved round by round.

``against(benchmark, ours, peers, ...)`` runs, each round, every peer once (in
pytest-benchmark's untimed ``setup``) and then ours (pytest-benchmark's timed target), so a
burst of load on a shared machine lands on every implementation alike; back-to-back
benchmarks let it land on one side only. Every implementation is timed the same way, here:
wall (``perf_counter``) and CPU (``process_time``: every thread's, the cost a loaded or
one-core machine pays) of each round. A round is ``calls`` calls in a plain loop, as many as
make ours take ``min_round`` seconds (and no peer longer than ``max_round``), so
sub-microsecond calls are not drowned by the timer (every side pays the same loop). Results are freed before the next call starts and,
with ``settle``, the next call waits that long after the free: freeing 100k objects hands
the kernel milliseconds of page freeing that would otherwise land in the next call.

Everything the runner (``python -m benches``) reads goes into ``benchmark.extra_info``:
per implementation the per-call wall and CPU times of the measured rounds, the calls per
round, and the README rows this group feeds.
"""

from __future__ import annotations

import os
import time
from itertools import repeat
from typing import Any, Callable, Dict, Optional, Union

OURS = "agui_fast"

# `python -m benches --quick` sets this: fewer rounds and smaller inputs (the runner says so
# in what it writes).
QUICK = os.environ.get("AGUI_BENCH_QUICK", "") not in ("", "0")

# `python -m benches --callgrind` sets this: "list" names the implementations of a bench (and
# times a call of each); "K:NAME" calls NAME's K times, untimed, for an instruction count.
COUNT = os.environ.get("AGUI_BENCH_COUNT", "")

Call = Union[Callable[[], Any], "Peer"]


class Peer:
    """A peer's call and how often it runs: ``every=k`` runs it in every k-th measured round
    only, and in no warm-up round (a pure-Python peer taking seconds a call need not run as
    often as ours)."""

    __slots__ = ("call", "every")

    def __init__(self, call: Callable[[], Any], every: int = 1) -> None:
        self.call, self.every = call, every


def _loop(call: Callable[[], Any], calls: int) -> Callable[[], Any]:
    if calls == 1:
        return call

    def run() -> None:
        for _ in repeat(None, calls):
            call()

    return run


def _once(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _calls_for(call: Callable[[], Any], min_round: float) -> int:
    """Calls per round so that a round of ``call`` takes at least ``min_round`` seconds."""
    calls = 1
    while True:
        t0 = time.perf_counter()
        _loop(call, calls)()
        took = time.perf_counter() - t0
        if took >= min_round or calls >= 1 << 20:
            return calls
        calls = max(calls * 2, int(calls * min_round / max(took, 1e-9) * 1.2))


def against(
    benchmark: Any,
    ours: Callable[[], Any],
    peers: Dict[str, Call],
    *,
    rounds: int = 30,
    warmup: int = 2,
    min_round: float = 0.002,
    max_round: float = 0.1,
    settle: float = 0.0,
    readme: Optional[Dict[str, str]] = None,
    **info: Any,
) -> Any:
    """Time ``ours`` against each of ``peers`` (name -> call or :class:`Peer`), interleaved;
    returns what ours returned in its last round. ``readme`` maps a peer's name to the README
    row it feeds (the workload's words); ``info`` goes into ``extra_info`` as it is (sizes,
    counts: what the runner's report says about the workload)."""
    if QUICK:
        rounds, warmup = max(5, rounds // 3), min(warmup, 1)
    specs = {name: p if isinstance(p, Peer) else Peer(p) for name, p in peers.items()}
    if COUNT:
        return _count(ours, {name: p.call for name, p in specs.items()})
    calls = _calls_for(ours, min_round) if min_round else 1
    if calls > 1 and specs:
        # As many calls as make ours' round last min_round, but no more than keep the
        # slowest peer's round within max_round.
        slowest = max(_once(p.call) for p in specs.values())
        calls = max(1, min(calls, int(max_round / slowest)))
    loops = {name: _loop(p.call, calls) for name, p in specs.items()}
    times: Dict[str, Dict[str, list]] = {name: {"wall": [], "cpu": []} for name in [OURS, *specs]}
    state = {"round": 0, "result": None}

    def timed(name: str, run: Callable[[], Any]) -> Any:
        if settle:
            time.sleep(settle)
        c0, w0 = time.process_time(), time.perf_counter()
        out = run()
        w1, c1 = time.perf_counter(), time.process_time()
        if state["round"] >= warmup:
            times[name]["wall"].append((w1 - w0) / calls)
            times[name]["cpu"].append((c1 - c0) / calls)
        return out

    def setup() -> None:
        measured = state["round"] - warmup  # negative: a warm-up round
        for name, run in loops.items():
            every = specs[name].every
            if (measured < 0 and every == 1) or (measured >= 0 and measured % every == 0):
                out = timed(name, run)
                del out

    def target() -> Any:
        out = timed(OURS, our_loop)
        state["round"] += 1
        return out

    our_loop = _loop(ours, calls)
    result = benchmark.pedantic(target, setup=setup, rounds=rounds, warmup_rounds=warmup)
    benchmark.extra_info.update(info)
    benchmark.extra_info.update(
        {"interleaved": times, "calls_per_round": calls, "readme": readme or {}, "quick": QUICK}
    )
    return result if calls == 1 else ours()


def _count(ours: Callable[[], Any], peers: Dict[str, Callable[[], Any]]) -> Any:
    calls = {OURS: ours, **peers}
    if COUNT == "list":  # the implementations, each with the seconds of one warm call
        for name, call in calls.items():
            call()
            print(f"\nimpl: {_once(call):.9f} {name}")
    else:
        k, _, name = COUNT.partition(":")
        for _ in range(int(k)):
            calls[name]()
    return ours()


def measure(benchmark: Any, run: Callable[[], Dict[str, float]], *, rounds: int = 3,
            compare: Optional[Dict[str, str]] = None, readme: bool = False, **info: Any) -> Dict[str, list]:
    """A whole-process measurement (memory, end to end): ``run()`` returns named figures
    (e.g. ``{"peak_rss_mib": ...}``); each round's figures go into ``extra_info["figures"]``
    and pytest-benchmark times the rounds. ``compare`` (``label``, ``ours`` and ``peer``: the
    figures compared, ``peer_label``, ``unit``) makes a table row of two figures, in the
    README's too with ``readme``."""
    if COUNT:
        import pytest

        pytest.skip("a whole-process measurement: no instruction count")
    if QUICK:
        rounds = 1
    figures: Dict[str, list] = {}

    def target() -> None:
        for key, value in run().items():
            figures.setdefault(key, []).append(value)

    benchmark.pedantic(target, rounds=rounds, warmup_rounds=0)
    benchmark.extra_info.update(info)
    benchmark.extra_info.update({"figures": figures, "compare": compare, "readme": readme, "quick": QUICK})
    return figures
