"""``replay_log`` on two Rust threads (framing and parsing ahead of the reducer) has the
outcome of the one-thread replay: the same final messages, state, warnings and error
(class, message, frame index, stage, rule, event index, ids) on every client vector and on
generated logs with errors anywhere, in both formats. The private ``pipeline_min`` knob
of the native functions forces either path on small input."""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import pytest

from agui_fast import _native, stream
from agui_fast.decoder import decode_sse
from agui_fast.proto import encode_protobuf_many
from conftest import load_jsonl, sse_log

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

from _stream_log import generate_events, to_sse  # noqa: E402

ALWAYS, NEVER = 0, 1 << 62
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _mask(text):
    return UUID.sub("<uuid>", text)


def _error(exc):
    if exc is None:
        return None
    fields = ("frame_index", "offset", "stage", "rule", "index", "event_type")
    ids = tuple(_mask(i) for i in getattr(exc, "ids", None) or ())
    return (type(exc), _mask(str(exc)), tuple(getattr(exc, f, None) for f in fields), ids)


def _outcome(parts):
    """The native tuple as comparable values; the random UUIDs the 0.x boundary gives
    new messages (as the reference does) masked."""
    messages, state, interrupts, warnings, error = parts
    return (_mask(json.dumps(messages)), state, interrupts, [(w[0], _mask(w[1]), w[2], w[4]) for w in warnings], _error(error))


def _both(log, **kw):
    one = _native.replay_log(log, pipeline_min=NEVER, typed=False, **kw)
    two = _native.replay_log(log, pipeline_min=ALWAYS, typed=False, **kw)
    assert _outcome(one) == _outcome(two)
    return one


CASES = [(f, c) for f, key in (("chunks.jsonl", "input"), ("verify.jsonl", "input"), ("legacy.jsonl", "input")) for c in load_jsonl(f"client/{f}")]
APPLY = load_jsonl("client/apply.jsonl.gz")


@pytest.mark.parametrize("verify", [False, True])
def test_every_vector_replays_the_same_pipelined(verify):
    n = 0
    for _file, case in CASES:
        _both(sse_log(case["input"]), verify=verify)
        n += 1
    for case in APPLY:
        init = case["initial"]
        _both(sse_log(case["events"]), messages=json.dumps(init["messages"]), state=json.dumps(init["state"]), verify=verify)
        n += 1
    assert n == len(CASES) + len(APPLY) > 700


BAD = [
    b"data: {not json\n\n",  # InvalidJsonError
    b"data: [1]\n\n",  # not an object
    b'data: {"type":"TOOL_CALL_CHUNK","delta":"x"}\n\n',  # a chunk stream without an id
    b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n',  # R-rules with verify
]


@pytest.fixture(scope="module")
def frames():
    log = to_sse(generate_events(6000, seed=5))
    return [f + b"\n\n" for f in log.split(b"\n\n") if f]


@pytest.mark.parametrize("verify", [False, True])
def test_errors_at_the_start_middle_end_and_batch_boundaries(frames, verify):
    # Batches hold 256, 512, 1024, ... events.
    for at in (0, 1, 255, 256, 257, 767, 768, 769, 3000, len(frames) - 1, len(frames)):
        for bad in BAD:
            log = b"".join(frames[:at]) + bad + b"".join(frames[at:])
            one = _both(log, verify=verify)
            if bad in BAD[:2] and not verify:
                assert one[4].frame_index == at


def test_protobuf_and_gzip_logs_replay_the_same_pipelined(frames):
    log = b"".join(frames)
    pb = encode_protobuf_many(decode_sse(log))
    want = _outcome(_both(log))
    assert want[4] is None
    assert _outcome(_both(pb)) == want
    assert _outcome(_both(gzip.compress(pb))) == want
    for cut in (pb[:-3], gzip.compress(log)[:-40], pb[: len(pb) // 2] + b"\x00\x00\x00\x02\xff\xff" + pb[len(pb) // 2 :]):
        assert _both(cut)[4] is not None


def test_public_replay_log_pipelines_big_logs_with_the_same_result(tmp_path):
    log = to_sse(generate_events(20_000, seed=9))
    assert len(log) >= 1 << 20  # above the default threshold: pipelined on 2 cores
    one = stream._replay(_native.replay_log(log, pipeline_min=NEVER, typed=False), True)
    assert stream.replay_log(log, raw=True) == one
    path = tmp_path / "big.sse"
    path.write_bytes(log)
    assert stream.replay_log(path, raw=True) == one
    for threads in (1, 2, 4):
        native = _native.replay_log_files([path, path], threads=threads, pipeline_min=ALWAYS, typed=False)
        assert [stream._replay(p, True) for p in native] == [one, one]
    bad = tmp_path / "bad.sse"
    bad.write_bytes(log[: len(log) // 2] + b"data: {oops\n\n" + log[len(log) // 2 :])
    one, two = (_native.replay_log_files([bad], threads=2, pipeline_min=m, typed=False)[0] for m in (NEVER, ALWAYS))
    assert _outcome(one) == _outcome(two) and one[4] is not None
