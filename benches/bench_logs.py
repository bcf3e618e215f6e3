"""Logs: recorded logs into Arrow tables (``to_arrow``, with ``pyarrow.table`` as a user calls
it), against the typed decoders of the same log and what a Python user writes without
agui-fast; threads; a large log converted to Parquet in bounded memory."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

from _data import LOG_EVENTS, arrow_logs, run_events, sse_log, stream_log
from _interleave import QUICK, Peer, against, measure
from _peers import pydantic_peer, upb_dict_log
from agui_fast.arrow import to_arrow
from agui_fast.decoder import decode_protobuf, decode_sse

N = LOG_EVENTS
K = f"{N // 1000}k"


def _table(data, threads=None):
    return pa.table(to_arrow(data, threads=threads))


def test_arrow_sse(benchmark):
    """``to_arrow`` of an SSE log (default threads: the cores; the log is cut at frame
    boundaries into parts) against ``decode_sse`` of it into typed events, and the
    pure-Python peer."""
    benchmark.group = "logs/arrow_sse"
    sse = arrow_logs()["sse"]
    peer = pydantic_peer()
    t = against(benchmark, lambda: _table(sse),
                {"decode_sse": lambda: decode_sse(sse), "pure Python + pydantic": Peer(lambda: peer(sse), every=7)},
                rounds=21, min_round=0, settle=0.01, events=N,
                readme={"decode_sse": f"`to_arrow` of a {K}-event SSE log into an Arrow table",
                        "pure Python + pydantic": f"`to_arrow` of a {K}-event SSE log into an Arrow table"})
    assert t.num_rows == N


def _dumps_log(sse: bytes) -> bytes:
    """The events of an SSE log of one-line frames as Python's ``json.dumps`` writes them."""
    return b"".join(b"data: " + json.dumps(json.loads(f[6:])).encode() + b"\n\n" for f in sse.split(b"\n\n") if f)


def test_arrow_sse_spaced(benchmark):
    """``to_arrow`` of the same log with its events written as Python's ``json.dumps`` writes
    them (``", "`` and ``": "``) against ``to_arrow`` of the compact log (one thread each)
    and ``decode_sse`` of the spaced one."""
    benchmark.group = "logs/arrow_sse_spaced"
    sse = arrow_logs()["sse"]
    spaced = _dumps_log(sse)
    t = against(benchmark, lambda: _table(spaced, 1),
                {"to_arrow of the compact log": lambda: _table(sse, 1), "decode_sse": lambda: decode_sse(spaced)},
                rounds=21, min_round=0, settle=0.01, events=N, log_bytes=len(spaced))
    assert t.num_rows == N


def test_arrow_protobuf(benchmark):
    """The same log as protobuf, against ``decode_protobuf`` and the upb dict path."""
    benchmark.group = "logs/arrow_protobuf"
    pb = arrow_logs()["protobuf"]
    t = against(benchmark, lambda: _table(pb),
                {"decode_protobuf": lambda: decode_protobuf(pb), "upb FromString + MessageToDict": Peer(lambda: upb_dict_log(pb), every=7)},
                rounds=21, min_round=0, settle=0.01, events=N,
                readme={"upb FromString + MessageToDict": f"`to_arrow` of the {K}-event log as protobuf"})
    assert t.num_rows == N


def test_arrow_threads(benchmark):
    """Two logs on two threads against the same call on one (``threads=1``)."""
    benchmark.group = "logs/arrow_two_logs_threads"
    logs = [arrow_logs()["sse"], arrow_logs()["sse_b"]]
    t = against(benchmark, lambda: _table(logs, 2), {"threads=1": lambda: _table(logs, 1)},
                rounds=21, warmup=3, min_round=0, settle=0.01, events=2 * N,
                readme={"threads=1": "`to_arrow` of two logs, 2 threads against 1 (2 cores)"})
    assert t.num_rows == 2 * N


_BLOCK = b"x" * (8 << 20)


def _control(threads: int) -> None:
    """Work without the GIL on ``threads`` threads (hashlib): what the machine's cores give."""
    jobs = list(range(8))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not jobs:
                    return
                jobs.pop()
            hashlib.sha256(_BLOCK).digest()

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def test_arrow_scaling(benchmark):
    """Events/s of ``to_arrow`` by thread count (1 to 4), on four logs and on the same events
    as one log (cut into parts), beside a GIL-free control: when the control does not scale,
    the machine had no idle core to give. The runner draws ``docs/arrow_scaling.svg``."""
    benchmark.group = "logs/arrow_scaling"
    logs = [sse_log(run_events(N, seed=i)) for i in range(4)]
    one = b"".join(logs)
    rounds = 3 if QUICK else 7

    def best(fn):
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return min(times)

    def run():
        figures = {}
        for threads in (1, 2, 3, 4):
            figures[f"four_logs_{threads}"] = 4 * N / best(lambda: _table(logs, threads))
            figures[f"one_log_{threads}"] = 4 * N / best(lambda: _table(one, threads))
            figures[f"control_{threads}"] = 1 / best(lambda: _control(threads))
        return figures

    measure(benchmark, run, rounds=1, events=4 * N, chart="arrow_scaling")


_CONVERT_CHILD = r"""
import re, sys
from agui_fast.cli import main
code = main(["convert", sys.argv[1], "-o", sys.argv[2]])
print(code, int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the peak RSS from /proc/self/status (VmHWM)")
def test_memory_parquet(benchmark, tmp_path):
    """``agui-fast convert LOG -o OUT.parquet`` of a large SSE log in a process of its own:
    its peak RSS, against the same on a log an eighth of its size."""
    benchmark.group = "logs/memory_convert_parquet"
    big_mib = 128 if QUICK else 1024
    sizes = {"big": big_mib, "small": big_mib // 8}
    block = sse_log(run_events(20_000))
    for k, mib in sizes.items():
        with open(tmp_path / f"{k}.sse", "wb") as f:
            while f.tell() < mib * 2**20:
                f.write(block)

    def run():
        figures = {}
        for k in sizes:
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", _CONVERT_CHILD, str(tmp_path / f"{k}.sse"),
                                  str(tmp_path / f"{k}.parquet")], check=True, capture_output=True, text=True).stdout.split()
            assert out[0] == "0"
            figures[f"peak_rss_mib_{k}"] = float(out[1])
            figures[f"mib_per_s_{k}"] = sizes[k] / (time.perf_counter() - t0)
        return figures

    measure(benchmark, run, rounds=2, log_mib=sizes,
            compare={"label": f"convert a {big_mib:,} MiB SSE log to Parquet (`agui-fast convert`): peak RSS",
                    "ours": "peak_rss_mib_big", "peer": "peak_rss_mib_small", "unit": "MiB",
                    "peer_label": f"the same on a {sizes['small']:,} MiB log"})


@pytest.mark.parametrize("log", ["recorded_run", "long_run"])
def test_report_page(benchmark, log):
    """``agui-fast report``'s page of a log (``report.render``: the replay, the page built and
    written as HTML), against the engine's replay of the same log (``replay_log``, the whole
    log in Rust) and of its events (``replay``): what the page costs over replaying the log.
    Logs: the recorded-run-shaped one and the long run of ``_stream_log`` (long text
    streams, tool calls, reasoning, a 2,000-key state under many small deltas)."""
    from agui_fast import report, stream
    from agui_fast.logs import iter_log

    benchmark.group = f"logs/report_page_{log}"
    data = arrow_logs()["sse"] if log == "recorded_run" else stream_log()
    events = list(iter_log(data, raw="bytes"))
    page = against(benchmark, lambda: report.render(data),
                   {"stream.replay_log": lambda: stream.replay_log(data), "stream.replay of its events": lambda: stream.replay(events)},
                   rounds=9, min_round=0, settle=0.01, events=len(events), log_bytes=len(data))
    benchmark.extra_info["page_bytes"] = len(page.encode())
