"""The state path of ``replay`` against a plain ``apply_patch(in_place=True)`` loop on the
10k ``STATE_DELTA`` events of ``bench_stream.py``'s ``stream_state_deltas_10k`` group
(2 operations each, a 70 KB state), interleaved in one process, wall and CPU time:

    python benches/cpu_state_deltas.py [rounds]

Cases: the loop; ``replay`` of the constructed ``StateDeltaEvent`` Structs (the bench
group's events, reused every round); of the same events decoded from JSON, reused, and
decoded afresh for each round (outside the timing: a decoded Struct has no instance
``__dict__`` until one is asked for, and the direct path asks, so it makes one per event
and per operation on its first replay); of the events as dicts; ``StateDocument.apply_many``
on the bare deltas. Prints min / median per case and the loop's time over each (> 1:
faster than the loop).
"""

from __future__ import annotations

import copy
import json
import statistics
import sys
import time
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _patch_data import make_state  # noqa: E402

from agui_fast import stream  # noqa: E402
from agui_fast.core import Event, StateDeltaEvent  # noqa: E402
from agui_fast.decoder import decode_as  # noqa: E402
from agui_fast.patch import StateDocument, apply_patch  # noqa: E402


def main(rounds: int) -> None:
    state = make_state(70_000)
    deltas = [
        [{"op": "replace", "path": "/counters/tokens", "value": i}, {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": i}}]
        for i in range(10_000)
    ]
    structs = [StateDeltaEvent(delta=d) for d in deltas]
    dicts = [{"type": "STATE_DELTA", "delta": d} for d in deltas]
    text = json.dumps(dicts).encode()
    decoded = decode_as(text, List[Event])
    fresh: list = []

    def loop():
        doc = copy.deepcopy(state)
        for d in deltas:
            doc = apply_patch(doc, d, in_place=True)
        return doc

    def apply_many():
        sd = StateDocument(state)
        sd.apply_many(deltas)
        return sd.to_python()

    cases = {
        "apply_patch loop": loop,
        "replay Structs": lambda: stream.replay(structs, state=state),
        "replay decoded": lambda: stream.replay(decoded, state=state),
        "replay decoded afresh": lambda: stream.replay(fresh, state=state),
        "replay dicts": lambda: stream.replay(dicts, state=state),
        "apply_many": apply_many,
    }
    got: dict = {k: [] for k in cases}
    for _ in range(rounds):
        fresh[:] = decode_as(text, List[Event])
        for name, run in cases.items():
            c0, w0 = time.process_time(), time.perf_counter()
            run()
            got[name].append((time.perf_counter() - w0, time.process_time() - c0))
    stat = {}
    for name, times in got.items():
        wall, cpu = [w * 1e3 for w, _ in times], [c * 1e3 for _, c in times]
        stat[name] = (min(wall), statistics.median(wall), min(cpu), statistics.median(cpu))
        print(f"{name:22s} wall {stat[name][0]:6.2f} ms min {stat[name][1]:6.2f} ms median | "
              f"CPU {stat[name][2]:6.2f} / {stat[name][3]:6.2f} ms")
    peer = stat["apply_patch loop"]
    for name, s in stat.items():
        if name != "apply_patch loop":
            print(f"loop / {name}: wall {peer[0] / s[0]:.2f}x min {peer[1] / s[1]:.2f}x median | "
                  f"CPU {peer[2] / s[2]:.2f}x min {peer[3] / s[3]:.2f}x median")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 11)
