"""Stream semantics (``agui_fast.stream``) against the pure-Python replayer a Python user
writes today (``_py_replayer.py``: ``ag_ui`` pydantic events, ``jsonpatch``), same run.

The input is the generated 100k-event run of ``_stream_log.py`` (long text streaming,
tool calls, reasoning, a 2,000-key state under many small deltas), and for the reducer
alone the largest runs of ``tests/vectors/client/apply.jsonl.gz``. Groups (the ratio
table of conftest.py prints peer time / our time):

* ``stream_replay_decoded_100k``: ``replay(events)`` of already-decoded events (our
  Structs) vs the peer on already-validated pydantic events, with all-or-nothing state
  patches (``atomic``: a deep copy per delta, as the reference's patches are atomic) and
  in place (``in_place``: what a user who accepts half-applied patches writes).
  Goal: >= 50x.
* ``stream_replay_log_100k``: ``replay_log(sse_bytes)`` (bytes in, messages and state out;
  framing and parsing on a second Rust thread ahead of the reducer) vs the peer from the
  same bytes (line parser + pydantic + replay), vs ``decode_sse`` of that log alone (goal:
  >= 100x the peer, and faster than decoding), and vs itself on one thread.
  ``benches/cpu_stream.py`` adds the CPU time.
* ``stream_replay_apply_vectors``: the reducer alone on the 4 largest recorded runs.
* ``stream_replay_logs_2x100k``: ``replay_logs`` over two 100k-event log files, 2 threads
  vs 1 (goal: >= 1.7x on 2 cores).
* ``stream_state_deltas_10k``: ``replay`` of 10k ``STATE_DELTA`` events vs a plain
  ``apply_patch(in_place=True)`` loop and ``StateDocument.apply_many`` over the same deltas.

The atomic peer takes about a minute per 100k-event round: it runs one round (min ==
median), the others several. ``benches/report_stream.py`` prints the ratios per log size.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from _py_replayer import EVENT, PyReplayer, replay_events, replay_sse_bytes
from _stream_log import generate_events, to_sse
from agui_fast import stream
from agui_fast.sse import decode_sse

from conftest import VECTORS

N = 100_000


@pytest.fixture(scope="module")
def log() -> bytes:
    return to_sse(generate_events(N))


@pytest.fixture(scope="module")
def typed(log):
    return decode_sse(log)


@pytest.fixture(scope="module")
def pydantic_events(log):
    return [EVENT.validate_json(json.dumps(e)) for e in generate_events(N)]


def _slow(benchmark, fn, rounds):
    return benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=0)


# -- replay of decoded events ------------------------------------------------------------


def test_replay_decoded_agui_fast(benchmark, typed, log):
    benchmark.group = "stream_replay_decoded_100k"
    r = _slow(benchmark, lambda: stream.replay(typed), 7)
    assert len(r.messages) == len(stream.replay_log(log).messages)


def test_replay_decoded_pure_python_atomic(benchmark, pydantic_events):
    benchmark.group = "stream_replay_decoded_100k"
    _slow(benchmark, lambda: replay_events(pydantic_events), 1)


def test_replay_decoded_pure_python_in_place(benchmark, pydantic_events):
    benchmark.group = "stream_replay_decoded_100k"
    _slow(benchmark, lambda: replay_events(pydantic_events, atomic=False), 3)


# -- replay of a log's bytes -------------------------------------------------------------


def test_replay_log_agui_fast(benchmark, log):
    benchmark.group = "stream_replay_log_100k"
    r = _slow(benchmark, lambda: stream.replay_log(log), 10)
    peer = replay_sse_bytes(log, atomic=False)
    assert [m["id"] for m in peer.dump_messages()] == [m.id for m in r.messages]
    assert r.state == peer.state


def test_replay_log_pure_python_atomic(benchmark, log):
    benchmark.group = "stream_replay_log_100k"
    _slow(benchmark, lambda: replay_sse_bytes(log), 1)


def test_replay_log_pure_python_in_place(benchmark, log):
    benchmark.group = "stream_replay_log_100k"
    _slow(benchmark, lambda: replay_sse_bytes(log, atomic=False), 3)


def test_replay_log_decode_sse_alone(benchmark, log):
    benchmark.group = "stream_replay_log_100k"
    _slow(benchmark, lambda: decode_sse(log), 10)


def test_replay_log_one_thread(benchmark, log):
    """``replay_log`` kept on one thread (the native ``pipeline_min`` knob): what the
    pipelining (framing and parsing on a second thread) gains."""
    from agui_fast import _native

    benchmark.group = "stream_replay_log_100k"
    r = _slow(benchmark, lambda: stream._replay(_native.replay_log(log, pipeline_min=1 << 62), False), 10)
    assert r == stream.replay_log(log)


# -- the reducer on the recorded large runs ---------------------------------------------


def _largest():
    with gzip.open(VECTORS / "client" / "apply.jsonl.gz", "rt", encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    return sorted((c for c in cases if c["error"] is None), key=lambda c: len(c["events"]))[-4:]


@pytest.fixture(scope="module")
def large_cases():
    cases = _largest()
    # json.dumps escapes the lone surrogates some runs hold (to_sse writes UTF-8)
    ours = [(decode_sse(b"".join(b"data: %s\n\n" % json.dumps(e).encode() for e in c["events"])), c["initial"]) for c in cases]
    peers = [([EVENT.validate_python(e) for e in c["events"]], c["initial"]) for c in cases]
    return ours, peers


def test_replay_apply_vectors_agui_fast(benchmark, large_cases):
    benchmark.group = "stream_replay_apply_vectors"
    ours, _ = large_cases
    benchmark(lambda: [stream.replay(e, messages=i["messages"], state=i["state"], expand=False) for e, i in ours])


def test_replay_apply_vectors_pure_python_atomic(benchmark, large_cases):
    benchmark.group = "stream_replay_apply_vectors"
    _, peers = large_cases

    def run():
        for events, initial in peers:
            r = PyReplayer(initial["messages"], initial["state"])
            for e in events:
                r.apply(e)

    _slow(benchmark, run, 5)


# -- several logs on threads -------------------------------------------------------------


@pytest.fixture(scope="module")
def two_logs(tmp_path_factory):
    d = Path(tmp_path_factory.mktemp("logs"))
    paths = []
    for seed in (7, 8):
        p = d / f"run{seed}.sse"
        p.write_bytes(to_sse(generate_events(N, seed=seed)))
        paths.append(p)
    return paths


def test_replay_logs_two_threads_agui_fast(benchmark, two_logs):
    benchmark.group = "stream_replay_logs_2x100k"
    _slow(benchmark, lambda: stream.replay_logs(two_logs, threads=2), 30)


def test_replay_logs_one_thread(benchmark, two_logs):
    benchmark.group = "stream_replay_logs_2x100k"
    _slow(benchmark, lambda: stream.replay_logs(two_logs, threads=1), 30)


# -- the state path: 10k STATE_DELTA events ----------------------------------------------
# `StateDocument.apply_many` was slower than a plain `apply_patch(in_place=True)` loop
# (it converted the Python operation lists the slow way); replay of event objects keeps
# its state in the same kind of document and applies delta objects to it without JSON.
# Peers: that loop and apply_many on the same deltas (both from agui_fast.patch), all
# from the same 70 KB state.


@pytest.fixture(scope="module")
def state_deltas():
    from _patch_data import make_state

    from agui_fast.core import StateDeltaEvent

    state = make_state(70_000)
    deltas = [
        [{"op": "replace", "path": "/counters/tokens", "value": i}, {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": i}}]
        for i in range(10_000)
    ]
    return state, deltas, [StateDeltaEvent(delta=d) for d in deltas]


def test_state_deltas_replay_agui_fast(benchmark, state_deltas):
    benchmark.group = "stream_state_deltas_10k"
    state, deltas, events = state_deltas
    r = _slow(benchmark, lambda: stream.replay(events, state=state), 10)
    assert len(r.state["agent"]["plan"]["steps"]) == len(state["agent"]["plan"]["steps"]) + len(deltas)


def test_state_deltas_apply_patch_in_place_loop(benchmark, state_deltas):
    import copy

    from agui_fast.patch import apply_patch

    benchmark.group = "stream_state_deltas_10k"
    state, deltas, _ = state_deltas

    def run():
        doc = copy.deepcopy(state)
        for d in deltas:
            doc = apply_patch(doc, d, in_place=True)
        return doc

    _slow(benchmark, run, 10)


def test_state_deltas_apply_many_agui_fast(benchmark, state_deltas):
    from agui_fast.patch import StateDocument

    benchmark.group = "stream_state_deltas_10k"
    state, deltas, _ = state_deltas

    def run():
        sd = StateDocument(state)
        sd.apply_many(deltas)
        return sd.to_python()

    _slow(benchmark, run, 10)
