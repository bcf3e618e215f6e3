"""The large events of ``bench_encode_large.py`` against ``orjson.dumps`` + framing,
interleaved in one process (the better A/B on a loaded machine than pytest-benchmark's
back-to-back rounds), CPU time per call:

    python benches/cpu_encode.py [rounds]

Each round times a batch of calls of each case in turn; prints each case's min / median
per call and the ratio orjson time / ours (> 1: ours is faster) by min and by median.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_encode_large import ENC, SNAPSHOT, SNAPSHOT_PLAIN, STATE, STATE_PLAIN, _orjson_sse  # noqa: E402


def main(rounds: int) -> None:
    cases = {
        "state": (lambda: ENC.encode_binary(STATE), lambda: _orjson_sse(STATE_PLAIN)),
        "messages": (lambda: ENC.encode_binary(SNAPSHOT), lambda: _orjson_sse(SNAPSHOT_PLAIN)),
    }
    for name, (ours, peer) in cases.items():
        got: dict = {"ours": [], "orjson": []}
        batch = 20
        for _ in range(rounds):
            for label, run in (("ours", ours), ("orjson", peer)):
                c0 = time.process_time()
                for _ in range(batch):
                    run()
                got[label].append((time.process_time() - c0) / batch * 1e6)
        (om, od), (pm, pd) = ((min(v), statistics.median(v)) for v in (got["ours"], got["orjson"]))
        print(f"{name:9s} ours {om:7.1f} / {od:7.1f} us  orjson {pm:7.1f} / {pd:7.1f} us  "
              f"orjson/ours {pm / om:.3f} min {pd / od:.3f} median")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
