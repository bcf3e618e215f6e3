"""Streaming a ~1 GB SSE log with ``iter_sse`` keeps memory flat.

Generates a log in /tmp from the valid events of ``vectors/codec/events.jsonl`` (written
block by block, never held in memory), streams it with ``iter_sse`` (typed Structs by
default, ``--raw dict``/``bytes`` for the raw modes), and prints the peak RSS before and
after, sampled current RSS along the way, and throughput. The file is deleted afterwards.
Not part of the test suite: run it by hand, e.g.

    python benches/memory_sse.py --size-mb 1024
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def build_block() -> bytes:
    import msgspec

    from agui_fast.decoder import EVENT_DECODER

    frames = []
    with open(ROOT / "tests/vectors/codec/events.jsonl", encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            sse = case.get("py_sse")
            if not sse or case["name"].startswith("structure/"):
                continue
            payload = sse[6:-2].encode()
            try:
                EVENT_DECODER.decode(payload)
            except msgspec.MsgspecError:
                continue
            frames.append(b"data: " + payload + b"\n\n")
    return b"".join(frames), len(frames)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--raw", choices=["dict", "bytes"], default=None)
    ap.add_argument("--chunk-size", type=int, default=1 << 20)
    ap.add_argument("--generate", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.generate:
        # Child process: write the log and report the event count, so that loading the
        # vectors does not count towards the streaming process's peak RSS.
        block, per_block = build_block()
        blocks = max(1, args.size_mb * 2**20 // len(block))
        with open(args.generate, "wb") as f:
            for _ in range(blocks):
                f.write(block)
        print(blocks * per_block)
        return

    from agui_fast.sse import iter_sse

    fd, path = tempfile.mkstemp(prefix="agui-sse-", suffix=".log", dir="/tmp")
    os.close(fd)
    try:
        expected = int(subprocess.run(
            [sys.executable, __file__, "--generate", path, "--size-mb", str(args.size_mb)],
            check=True, capture_output=True, text=True,
        ).stdout)
        size = os.path.getsize(path)
        print(f"log: {size / 2**20:.0f} MiB, {expected:,} events ({path})")
        print(f"before: rss {rss_mb():.1f} MiB, peak {peak_mb():.1f} MiB")
        samples = []
        n = 0
        t0 = time.perf_counter()
        for _ in iter_sse(path, raw=args.raw, chunk_size=args.chunk_size):
            n += 1
            if n % 250_000 == 0:
                samples.append(rss_mb())
        dt = time.perf_counter() - t0
        assert n == expected, (n, expected)
        print(f"after:  rss {rss_mb():.1f} MiB, peak {peak_mb():.1f} MiB")
        print("rss samples (MiB, every 250k events):", " ".join(f"{s:.0f}" for s in samples))
        print(f"mode {args.raw or 'typed'}: {n:,} events in {dt:.1f} s "
              f"({size / 2**20 / dt:.0f} MiB/s, {n / dt / 1e3:.0f}k events/s)")
    finally:
        os.unlink(path)


if __name__ == "__main__":
    main()
