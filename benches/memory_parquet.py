"""``agui-fast convert LOG -o OUT.parquet`` of a ~1 GB SSE log: peak RSS and MB/s.

Generates the log in a temporary directory (written block by block, never held in
memory), runs the CLI in a child process, and reports the child's peak RSS (from
``/usr/bin/time``-free ``wait4`` accounting) and throughput; then deletes both files. Not
part of the test suite:

    python benches/memory_parquet.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from agui_fast._bench import run_events, sse_log


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    args = ap.parse_args()
    block = sse_log(run_events(20_000))
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "big.sse")
        out = os.path.join(tmp, "big.parquet")
        with open(log, "wb") as f:
            while f.tell() < args.size_mb * 2**20:
                f.write(block)
        size = os.path.getsize(log)
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "agui_fast", "convert", log, "-o", out])
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - t0
        if status != 0:
            raise SystemExit(f"convert failed: {status}")
        print(f"log {size / 2**20:.0f} MiB -> parquet {os.path.getsize(out) / 2**20:.0f} MiB "
              f"in {elapsed:.1f} s: {size / 2**20 / elapsed:.0f} MiB/s, peak RSS {usage.ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
