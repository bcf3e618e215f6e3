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
import sys
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import interleaved, ratio_line  # noqa: E402
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

    def decode_afresh():  # untimed, before each round
        fresh[:] = decode_as(text, List[Event])

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
    stats = interleaved(cases, rounds, before_round=decode_afresh)
    peer = stats["apply_patch loop"]
    for name, s in stats.items():
        if name != "apply_patch loop":
            print(ratio_line(f"loop / {name}", peer, s))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 11)
