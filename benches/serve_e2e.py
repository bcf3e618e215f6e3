"""End-to-end serving benchmark: uvicorn on 127.0.0.1 (its own process) streams ``n`` small
events per request (``benches/serve_apps.py``), this process reads them with httpx.

    python benches/serve_e2e.py [--events 20000] [--rounds 5] [--variants ours,reference]

Rounds interleave the variants (a noisy machine slows all of them alike within a round).
Reported per variant: events/s (median, min-max over rounds) and the server's CPU time per
event (user+system of the server process during the request, from /proc); then each
variant's events/s divided by the reference's in the same round (min, median, max).
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "serve_apps:app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning", "--no-access-log"],
        cwd=ROOT / "benches",
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("uvicorn did not start")


def one_request(client: httpx.Client, url: str, pid: int):
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    size = 0
    with client.stream("GET", url) as r:
        r.raise_for_status()
        for chunk in r.iter_raw(1 << 16):
            size += len(chunk)
    t1 = time.perf_counter()
    time.sleep(0.05)  # let the server finish its bookkeeping before reading its CPU time
    return t1 - t0, cpu_seconds(pid) - c0, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="ours,ours-single,reference")
    args = ap.parse_args()
    variants = args.variants.split(",")
    port = free_port()
    server = start_server(port)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            from agui_fast.decoder import decode_sse

            for v in variants:  # warm-up, and check every variant sends all events
                body = client.get(f"/{v}?n={args.events}").content
                got = len(decode_sse(body))
                assert got == args.events, (v, got)
            results = {v: [] for v in variants}
            for _ in range(args.rounds):
                for v in variants:
                    results[v].append(one_request(client, f"/{v}?n={args.events}", server.pid))
    finally:
        server.terminate()
        server.wait(10)
    n = args.events
    print(f"{n} events per request, {args.rounds} rounds, uvicorn {_version('uvicorn')}, "
          f"starlette {_version('starlette')}, httpx {httpx.__version__}")
    # /proc counts CPU in clock ticks (10 ms, i.e. 0.5 us per event of a 20k-event request):
    # the per-request figures are coarse; the all-rounds figure divides the total.
    print(f"{'variant':14s} {'events/s median (min-max)':>34s} {'server CPU us/event median (min-max)':>40s}"
          f" {'all rounds':>11s}")
    for v, rows in results.items():
        rates = [n / wall for wall, _, _ in rows]
        cpus = [cpu / n * 1e6 for _, cpu, _ in rows]
        total = sum(cpu for _, cpu, _ in rows) / (n * len(rows)) * 1e6
        print(f"{v:14s} {statistics.median(rates):12,.0f} ({min(rates):9,.0f}-{max(rates):9,.0f})"
              f" {statistics.median(cpus):18.2f} ({min(cpus):6.2f}-{max(cpus):6.2f}) {total:11.2f}")
    if "reference" in results:
        ref = results["reference"]
        for v, rows in results.items():
            if v == "reference":
                continue
            ratios = [r[0] / o[0] for o, r in zip(rows, ref)]
            cpu_ratios = [r[1] / o[1] for o, r in zip(rows, ref)]
            print(f"{v} / reference events/s: min {min(ratios):.1f}x median {statistics.median(ratios):.1f}x "
                  f"max {max(ratios):.1f}x; server CPU per event reference/{v}: "
                  f"median {statistics.median(cpu_ratios):.1f}x ({min(cpu_ratios):.1f}-{max(cpu_ratios):.1f})")


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
