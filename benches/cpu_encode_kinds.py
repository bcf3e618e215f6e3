"""The walker's cost per value kind (docs/encoder.md, "the floor per value kind"): ``dumps`` of
lists of 10,000 values of one kind against ``orjson.dumps`` and ``msgspec.json.encode`` of the
same list, interleaved in one process (the writers' order rotated each round: what ran just
before a writer moves its time on a loaded machine), ns per item, min / median over rounds:

    python benches/cpu_encode_kinds.py [rounds]

The kinds are those of bench_encode_large.py's state snapshot: floats (``random() * 1000``),
ints, None and bools, short keys as values (``key_123``), 35-byte strings with nothing to
escape, containers (``{}``, ``{"key_N": i}``, four keys, ``[i]``).
"""

from __future__ import annotations

import random
import statistics
import sys
import time

import msgspec
import orjson

from agui_fast import _native

N = 10_000


def kinds() -> dict:
    rng = random.Random(1)
    words = ["the", "agent", "calls", "tool", "search", "answer"]
    return {
        "float": [rng.random() * 1000 for _ in range(N)],
        "int": [rng.randint(-(10**6), 10**6) for _ in range(N)],
        "None/bool": [rng.choice([None, True, False]) for _ in range(N)],
        "key_123": [f"key_{rng.randint(0, 999)}" for _ in range(N)],
        "35 bytes": [" ".join(rng.choice(words) for _ in range(6)) for _ in range(N)],
        "{}": [{} for _ in range(N)],
        "{key: i}": [{f"key_{rng.randint(0, 9)}": i} for i in range(N)],
        "4 keys": [{f"key_{j}": i for j in range(4)} for i in range(N // 4)],
        "[i]": [[i] for i in range(N)],
    }


def main(rounds: int) -> None:
    writers = {"ours": _native.dumps, "orjson": orjson.dumps, "msgspec": msgspec.json.encode}
    print(f"{'kind':10s} " + "  ".join(f"{w:>15s}" for w in writers) + "   ns per item, min/median")
    for name, data in kinds().items():
        assert _native.dumps(data) == orjson.dumps(data)
        got: dict = {w: [] for w in writers}
        order = list(writers.items())
        for r in range(rounds):
            for w, f in order[r % len(order):] + order[: r % len(order)]:
                c0 = time.process_time()
                for _ in range(5):
                    f(data)
                got[w].append((time.process_time() - c0) / 5 / len(data) * 1e9)
        print(f"{name:10s} " + "  ".join(f"{min(v):6.1f} / {statistics.median(v):5.1f}" for v in got.values()))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
