"""Builds of the extension side by side in one process, against orjson, on the large events
of ``bench_encode_large.py``: the A/B for a Rust change on a shared, noisy machine.

    cp python/agui_fast/_native.abi3.so /tmp/before.so   # then rebuild
    python benches/ab_builds.py [rounds] /tmp/before.so python/agui_fast/_native.abi3.so

Each build is loaded from its own copy of the file (a module is loaded once per path) as
``abN._native`` and called as ``encode_sse_bytes(event)``; the peers are ``orjson.dumps`` of
the plain data (``json.loads`` objects, what ``cpu_encode.py`` compares with) plus the SSE
framing, and of the very objects our Struct holds (``orjson-same``: the same memory layout;
the state snapshot only). Each round times a batch of calls of every case, in an order
rotated per round (what ran just before a case moves its time); CPU time per call, min,
10th percentile and median over rounds, and each case's ratio orjson time / its time
(> 1: faster than orjson). ``BATCH`` (environment) sets the calls per batch (default 5).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, List, Tuple, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_encode_large import SNAPSHOT, SNAPSHOT_PLAIN, STATE, STATE_PLAIN, _orjson_sse  # noqa: E402

from agui_fast.core import StateSnapshotEvent  # noqa: E402


def load(path: str, tag: int) -> Any:
    """The extension module at `path`, loaded from a copy of its own."""
    pkg = Path(tempfile.mkdtemp(prefix="ab_builds_")) / f"ab{tag}"
    pkg.mkdir()
    (pkg / "__init__.py").touch()
    so = pkg / "_native.abi3.so"
    shutil.copy(path, so)
    spec = importlib.util.spec_from_file_location(f"ab{tag}._native", so)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def encoder(module: Any, event: Any) -> Callable[[], bytes]:
    return lambda: module.encode_sse_bytes(event)


def peer(plain: Any) -> Callable[[], bytes]:
    return lambda: _orjson_sse(plain)


def main(rounds: int, paths: list[str]) -> None:
    builds = [(f"{i}:{Path(p).name}", load(p, i)) for i, p in enumerate(paths)]
    batch = int(os.environ.get("BATCH", "5"))
    same = {"type": "STATE_SNAPSHOT", "snapshot": cast(StateSnapshotEvent, STATE).snapshot}
    cases: List[Tuple[str, Any, Any, Any]] = [
        ("state", STATE, STATE_PLAIN, same),
        ("messages", SNAPSHOT, SNAPSHOT_PLAIN, None),
    ]
    for name, event, plain, same_objects in cases:
        runs: List[Tuple[str, Callable[[], bytes]]] = [(label, encoder(m, event)) for label, m in builds]
        for label, run in runs:
            assert run() == _orjson_sse(plain), label
        runs.append(("orjson", peer(plain)))
        if same_objects is not None:
            runs.append(("orjson-same", peer(same_objects)))
        got: dict[str, list[float]] = {label: [] for label, _ in runs}
        for r in range(rounds):
            k = r % len(runs)
            for label, run in runs[k:] + runs[:k]:
                c0 = time.process_time()
                for _ in range(batch):
                    run()
                got[label].append((time.process_time() - c0) / batch * 1e6)

        def p10(v: list[float]) -> float:
            return sorted(v)[len(v) // 10]

        ref = got["orjson"]
        for label, v in got.items():
            print(
                f"{name:8s} {label:16s} {min(v):7.1f} / {p10(v):7.1f} / {statistics.median(v):7.1f} us  "
                f"orjson/this {min(ref) / min(v):.3f} min {p10(ref) / p10(v):.3f} p10 "
                f"{statistics.median(ref) / statistics.median(v):.3f} median"
            )


if __name__ == "__main__":
    args = sys.argv[1:]
    n = int(args.pop(0)) if args and args[0].isdigit() else 100
    if not args:
        sys.exit(__doc__)
    main(n, args)
