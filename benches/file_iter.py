"""Big-file iteration: ``iter_sse(path)`` and ``iter_protobuf(path)`` over a 62 MB SSE log
and the same events as a framed protobuf log (300k events, the valid vector events cycled).

    python benches/file_iter.py make             # writes the logs (to $AGUI_BENCH_DIR or /tmp)
    python benches/file_iter.py LABEL [N [CHUNK]] # best and median of N runs

Only the public API is used, so any build can be measured against another (install the
other build in its own venv and run the same script with the same logs). Three times
per run: wall, the calling thread's CPU (``time.thread_time``: the critical path when a
core is free for the decoders' Rust threads) and the process's CPU. On a shared machine
the wall time is mostly other people's load; compare the CPU times there.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

from agui_fast.proto import iter_protobuf
from agui_fast.sse import iter_sse

DIR = Path(os.environ.get("AGUI_BENCH_DIR", "/tmp")) / "agui_file_iter"
SSE, PROTO = DIR / "big.sse", DIR / "big.pb"
VECTORS = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "codec" / "events.jsonl"


def make(size: int = 62_000_000) -> None:
    import msgspec

    from agui_fast.decoder import EVENT_DECODER
    from agui_fast.proto import convert_sse_to_protobuf

    base = []
    with open(VECTORS, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            sse = case.get("py_sse")
            if not sse or case["name"].startswith("structure/"):
                continue
            payload = sse[len("data: ") : -2].encode()
            try:
                EVENT_DECODER.decode(payload)
            except msgspec.MsgspecError:
                continue  # needs the exact path (extras)
            base.append(payload)
    DIR.mkdir(parents=True, exist_ok=True)
    written, i = 0, 0
    with open(SSE, "wb") as out:
        while written < size:
            frame = b"data: " + base[i % len(base)] + b"\n\n"
            out.write(frame)
            written += len(frame)
            i += 1
    convert_sse_to_protobuf(SSE, PROTO)
    print(f"{SSE}: {SSE.stat().st_size} bytes, {PROTO}: {PROTO.stat().st_size} bytes, {i} events")


def measure(fn, path: Path, runs: int, **kw):
    wall, thread, process = [], [], []
    for _ in range(runs):
        gc.collect()
        w, t, p = time.perf_counter(), time.thread_time(), time.process_time()
        for _ in fn(path, **kw):
            pass
        wall.append(time.perf_counter() - w)
        thread.append(time.thread_time() - t)
        process.append(time.process_time() - p)
    return wall, thread, process


def main() -> None:
    if sys.argv[1:2] == ["make"]:
        make()
        return
    label = sys.argv[1] if len(sys.argv) > 1 else "this build"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    kw = {"chunk_size": int(sys.argv[3])} if len(sys.argv) > 3 else {}
    for name, fn, path in (("iter_sse(path)", iter_sse, SSE), ("iter_protobuf(path)", iter_protobuf, PROTO)):
        wall, thread, process = measure(fn, path, runs, **kw)
        ms = lambda xs: f"min {min(xs) * 1e3:5.0f} med {statistics.median(xs) * 1e3:5.0f} ms"  # noqa: E731
        print(f"{label:10} {name:20} wall {ms(wall)} | calling thread CPU {ms(thread)} | process CPU {ms(process)}")


if __name__ == "__main__":
    main()
