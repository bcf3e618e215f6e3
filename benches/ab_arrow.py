"""Builds of the extension side by side in one process on ``to_arrow`` of the 100k-event
logs of ``cpu_arrow.py`` (protobuf one and two threads, SSE one thread): the A/B of a
Rust change to the columnar path on a shared, noisy machine.

    cp python/agui_fast/_native.abi3.so /tmp/before.so   # then rebuild
    python benches/ab_arrow.py [rounds] /tmp/before.so python/agui_fast/_native.abi3.so

Each build is loaded as ``ab_builds.py`` loads it; every round runs each build once per
case, in an order alternated per round. Process CPU time (every thread's), min and
median over rounds, and each build's ratio first build / it (> 1: faster than the first).
A case the change does not touch is the control: its ratio is the noise.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_builds import load  # noqa: E402

from agui_fast._bench import protobuf_log, run_events, sse_log  # noqa: E402


def main(rounds: int, paths: list[str]) -> None:
    mods = [load(p, i) for i, p in enumerate(paths)]
    events = run_events(100_000)
    logs = {"protobuf": protobuf_log(events), "sse": sse_log(events)}

    def run(m, log: bytes, threads: int) -> pa.Table:
        return pa.table(m.logs_to_arrow([log], [None], "auto", threads, False, m.SSE_DEFAULT_MAX_BUFFER,
                                        m.PROTO_DEFAULT_MAX_FRAME_SIZE, m.DEFAULT_MAX_DEPTH))

    first = run(mods[0], logs["protobuf"], 1)
    assert all(run(m, logs["protobuf"], 1).equals(first) for m in mods[1:])
    for kind, threads in [("protobuf", 1), ("protobuf", 2), ("sse", 1)]:
        got: list[list[float]] = [[] for _ in mods]
        for r in range(rounds):
            order = list(range(len(mods)))
            for i in order if r % 2 == 0 else order[::-1]:
                c = time.process_time()
                run(mods[i], logs[kind], threads)
                got[i].append(time.process_time() - c)
        ref = got[0]
        for path, v in zip(paths, got):
            print(f"{kind} {threads}t {path}: {min(v) * 1e3:.1f} ms min {statistics.median(v) * 1e3:.1f} ms median; "
                  f"{min(ref) / min(v):.3f} min {statistics.median(ref) / statistics.median(v):.3f} median")


if __name__ == "__main__":
    args = sys.argv[1:]
    n = int(args.pop(0)) if args and args[0].isdigit() else 41
    if not args:
        sys.exit(__doc__)
    main(n, args)
