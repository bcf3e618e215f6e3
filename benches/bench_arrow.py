"""Columnar decoding of a 100k-event log: ``to_arrow`` vs the object decoders, same run.

The log (``agui_fast._bench.run_events``) is shaped like recorded agent runs: mostly
text and tool-call deltas, a state snapshot and delta and token usage per run. Groups
(conftest.py prints peer time / our time):

* ``arrow_sse_100k``: ``to_arrow(log)`` → a table, vs ``decode_sse(log)`` → typed Structs
  (goal ≥ 5×; interleaved: one ``decode_sse`` call before each of our rounds, the
  "interleaved" table of the summary) and the pure-Python peer (httpx-sse style parser + ``TypeAdapter(ag_ui.core.
  Event)``, goal ≥ 60×). ``to_arrow`` is measured with ``pa.table(...)`` (the import a
  user does), so the whole path is timed, with the default threads (the cores: the log
  is cut at frame boundaries into parts decoded on every thread).
  ``benches/cpu_arrow.py`` gives the CPU time of the same calls (the work, whatever the
  machine's load).
* ``arrow_protobuf_100k``: the protobuf log into a table vs ``decode_protobuf`` (interleaved)
  and the upb dict path (generated classes, ``FromString`` + ``MessageToDict`` per frame).
* ``arrow_threads_2logs``: two 100k-event logs with ``threads=2`` vs ``threads=1``
  (interleaved; goal ≥ 1.7× on 2 cores). ``benches/scaling_arrow.py`` draws the chart.

The fast peers run round by round between our rounds (``_interleave.pedantic_against``):
on a noisy machine, back-to-back benchmarks let a burst of host stalls take one side's
rounds and not the other's (stop 28: the two-logs group 1.04× by median back to back,
1.83× interleaved). The pure-Python peers (about a second a call) run on their own.

Run: ``python -m pytest benches/bench_arrow.py --benchmark-only``.
"""

from __future__ import annotations

import pyarrow as pa

from agui_fast._bench import protobuf_log, pydantic_peer, run_events, sse_log
from agui_fast.arrow import to_arrow
from agui_fast.decoder import decode_protobuf, decode_sse

from _interleave import pedantic_against
from bench_proto import upb_dict_log

N = 100_000
EVENTS = run_events(N)
SSE = sse_log(EVENTS)
PB = protobuf_log(EVENTS)
SSE_B = sse_log(run_events(N, seed=1))
PEER = pydantic_peer()


def _table(data, threads=None):
    return pa.table(to_arrow(data, threads=threads))


def test_sse__agui_fast_to_arrow(benchmark):
    benchmark.group = "arrow_sse_100k"
    assert len(decode_sse(SSE)) == N
    t = pedantic_against(benchmark, _table, (SSE,), {"decode_sse": lambda: decode_sse(SSE)}, rounds=21, warmup_rounds=2)
    assert t.num_rows == N


def test_sse__pure_python_pydantic(benchmark):
    benchmark.group = "arrow_sse_100k"
    out = benchmark.pedantic(PEER, (SSE,), rounds=2, iterations=1)
    assert len(out) == N


def test_protobuf__agui_fast_to_arrow(benchmark):
    benchmark.group = "arrow_protobuf_100k"
    assert len(decode_protobuf(PB)) == N
    t = pedantic_against(benchmark, _table, (PB,), {"decode_protobuf": lambda: decode_protobuf(PB)}, rounds=21, warmup_rounds=2)
    assert t.num_rows == N


def test_protobuf__upb_dict(benchmark):
    benchmark.group = "arrow_protobuf_100k"

    out = benchmark.pedantic(upb_dict_log, (PB,), rounds=3, iterations=1)
    assert len(out) == N


# 21 rounds after 3 warm-up rounds: the first calls on two threads map fresh memory (up to
# 3x the steady time), and on this VM one round in ~10 loses the second vCPU for a while.
def test_two_logs__agui_fast_2threads(benchmark):
    benchmark.group = "arrow_threads_2logs"
    one = {"1thread": lambda: _table([SSE, SSE_B], 1)}
    t = pedantic_against(benchmark, _table, ([SSE, SSE_B], 2), one, rounds=21, warmup_rounds=3)
    assert t.num_rows == 2 * N
