"""Replay: what ``@ag-ui/client`` does with a stream (chunks expanded, messages and state
applied), in ``agui_fast.stream``, against the pure-Python replayer a Python user writes
today (``_py_replayer.py``: ``ag_ui`` pydantic events, ``jsonpatch``), with all-or-nothing
state patches (a deep copy per delta, as the reference's patches are atomic) and in place
(what a user who accepts half-applied patches writes)."""

from __future__ import annotations

import copy
import gzip
import json
import random

import pytest

from _data import LOG_EVENTS, VECTORS, _text as _prose, generate_events, make_state, stream_log, two_op_deltas
from _interleave import QUICK, Peer, against
from _py_replayer import EVENT, PyReplayer, replay_events, replay_sse_bytes
from agui_fast import stream
from agui_fast.arrow import to_arrow
from agui_fast.core import StateDeltaEvent
from agui_fast.patch import StateDocument, apply_patch
from agui_fast.sse import decode_sse

N = LOG_EVENTS
K = f"{N // 1000}k"
# The all-or-nothing peer deep-copies a 2,000-key state per delta: about a minute a call for
# 100k events. It runs in a few rounds only.
ATOMIC_EVERY = 10


@pytest.fixture(scope="module")
def log() -> bytes:
    return stream_log()


def test_replay_decoded(benchmark, log):
    """``replay(events)`` of already-decoded events (our Structs) against the peer on
    already-validated pydantic events."""
    benchmark.group = "replay/decoded_events"
    typed = decode_sse(log)
    theirs = [EVENT.validate_json(json.dumps(e)) for e in generate_events(N)]
    r = against(benchmark, lambda: stream.replay(typed),
                {"pure Python, all-or-nothing patches": Peer(lambda: replay_events(theirs), every=ATOMIC_EVERY),
                 "pure Python, patches in place": Peer(lambda: replay_events(theirs, atomic=False), every=3)},
                rounds=10, warmup=1, min_round=0, events=N,
                readme={"pure Python, all-or-nothing patches": f"`stream.replay` of {K} decoded events (text, tool calls, a 2,000-key state)",
                        "pure Python, patches in place": f"`stream.replay` of {K} decoded events (text, tool calls, a 2,000-key state)"})
    assert len(r.messages) == len(stream.replay_log(log).messages)


def test_replay_log(benchmark, log, tmp_path):
    """``replay_log(sse_bytes)``: bytes in, typed messages and state out, against the peer
    from the same bytes, ``decode_sse`` and ``to_arrow`` of the log alone, and itself from
    the log's file (read in chunks)."""
    benchmark.group = "replay/log"
    path = tmp_path / "run.sse"
    path.write_bytes(log)
    r = against(benchmark, lambda: stream.replay_log(log),
                {"pure Python, all-or-nothing patches": Peer(lambda: replay_sse_bytes(log), every=ATOMIC_EVERY),
                 "pure Python, patches in place": Peer(lambda: replay_sse_bytes(log, atomic=False), every=3),
                 "decode_sse alone": lambda: decode_sse(log),
                 "to_arrow(threads=1)": lambda: to_arrow(log, threads=1),
                 "replay_log of the log's file": lambda: stream.replay_log(path)},
                rounds=10, warmup=1, min_round=0, settle=0.01, events=N, log_bytes=len(log),
                readme={"pure Python, patches in place": "`stream.replay_log` of that run's SSE log (bytes in, messages and state out)",
                        "decode_sse alone": "`stream.replay_log` of that run's SSE log (bytes in, messages and state out)"})
    peer = replay_sse_bytes(log, atomic=False)
    assert [m["id"] for m in peer.dump_messages()] == [m.id for m in r.messages]
    assert r.state == peer.state


def _text_log(n: int) -> bytes:
    """A token stream: messages of 200 deltas of about 100 bytes of prose each."""
    rng = random.Random(5)
    events: list = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    while len(events) < n - 1:
        mid = f"m{len(events)}"
        events.append({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
        events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": _prose(rng, 25)[:100]} for _ in range(200)]
        events.append({"type": "TEXT_MESSAGE_END", "messageId": mid})
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    return b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events)


def test_replay_log_text_heavy(benchmark):
    """``replay_log`` of a token stream (100-byte deltas: the messages' text is most of the
    result) against ``decode_sse`` and ``to_arrow`` of the same bytes."""
    benchmark.group = "replay/log_text_heavy"
    log = _text_log(N)
    r = against(benchmark, lambda: stream.replay_log(log, format="sse"),
                {"decode_sse alone": lambda: decode_sse(log),
                 "to_arrow(threads=1)": lambda: to_arrow(log, threads=1)},
                rounds=10, warmup=1, min_round=0, settle=0.01, events=N, log_bytes=len(log))
    assert sum(len(m.content) for m in r.messages) >= 90 * (N - 2 - 2 * len(r.messages))


def _small_log() -> bytes:
    """One agent response as a client receives it: a run, a streamed answer, a tool call
    and its result, a state delta (14 events)."""
    events: list = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}]
    events += [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": w} for w in ("The ", "weather ", "is ", "sunny.")]
    events += [{"type": "TEXT_MESSAGE_END", "messageId": "m1"},
               {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search", "parentMessageId": "m1"},
               {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":'},
               {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"Berlin"}'},
               {"type": "TOOL_CALL_END", "toolCallId": "c1"},
               {"type": "TOOL_CALL_RESULT", "messageId": "r1", "toolCallId": "c1", "content": "sunny"},
               {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/city", "value": "Berlin"}]},
               {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    return b"".join(b"data: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n" for e in events)


def test_replay_log_small(benchmark):
    """``replay_log`` of one short response (14 events): the fixed cost a call pays, against
    ``decode_sse`` of the same bytes and the pure-Python replayer."""
    benchmark.group = "replay/log_small"
    log = _small_log()
    r = against(benchmark, lambda: stream.replay_log(log),
                {"decode_sse alone": lambda: decode_sse(log),
                 "pure Python, patches in place": lambda: replay_sse_bytes(log, atomic=False)},
                rounds=15, events=14, log_bytes=len(log))
    assert [m.id for m in r.messages] == ["m1", "r1"] and r.state == {"city": "Berlin"}


def test_replay_recorded_runs(benchmark):
    """The reducer alone on the four largest recorded runs of the client vectors."""
    benchmark.group = "replay/recorded_runs"
    with gzip.open(VECTORS / "client" / "apply.jsonl.gz", "rt", encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    cases = sorted((c for c in cases if c["error"] is None), key=lambda c: len(c["events"]))[-4:]
    # json.dumps escapes the lone surrogates some runs hold
    ours = [(decode_sse(b"".join(b"data: %s\n\n" % json.dumps(e).encode() for e in c["events"])), c["initial"]) for c in cases]
    peers = [([EVENT.validate_python(e) for e in c["events"]], c["initial"]) for c in cases]

    def peer():
        for events, initial in peers:
            r = PyReplayer(initial["messages"], initial["state"])
            for e in events:
                r.apply(e)

    against(benchmark, lambda: [stream.replay(e, messages=i["messages"], state=i["state"], expand=False) for e, i in ours],
            {"pure Python, all-or-nothing patches": peer}, rounds=15)


def test_replay_logs_threads(benchmark, tmp_path):
    """``replay_logs`` over two log files, 2 threads against 1 and against ``replay_log`` of
    each in turn."""
    benchmark.group = "replay/two_logs_threads"
    paths = []
    for seed in (7, 8):
        p = tmp_path / f"run{seed}.sse"
        p.write_bytes(stream_log(seed))
        paths.append(p)
    against(benchmark, lambda: stream.replay_logs(paths, threads=2),
            {"threads=1": lambda: stream.replay_logs(paths, threads=1),
             "replay_log of each in turn": lambda: [stream.replay_log(p) for p in paths]},
            rounds=15 if QUICK else 30, warmup=2, min_round=0, settle=0.01, events=2 * N,
            readme={"threads=1": "`stream.replay_logs` of two logs, 2 threads against 1 (2 cores)",
                    "replay_log of each in turn": "`stream.replay_logs` of two logs on 2 threads (2 cores)"})


def test_state_deltas(benchmark):
    """The state path: ``replay`` of 10,000 ``STATE_DELTA`` events (two operations each, a
    70 KB state) against a plain ``apply_patch(in_place=True)`` loop over the same deltas and
    ``StateDocument.apply_many``."""
    benchmark.group = "replay/state_deltas_10k"
    state = make_state(70_000)
    deltas = two_op_deltas(10_000)
    events = [StateDeltaEvent(delta=d) for d in deltas]

    def loop():
        doc = copy.deepcopy(state)
        for d in deltas:
            doc = apply_patch(doc, d, in_place=True)
        return doc

    def apply_many():
        sd = StateDocument(state)
        sd.apply_many(deltas)
        return sd.to_python()

    r = against(benchmark, lambda: stream.replay(events, state=state),
                {"apply_patch(in_place=True) loop": loop, "StateDocument.apply_many": apply_many},
                rounds=15, min_round=0, deltas=len(deltas))
    assert r.state == loop()
