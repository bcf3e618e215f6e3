"""``replay_log`` of a log read in chunks (gzip, a file) has the outcome of the same log
held in memory (read where it lies): the same final messages, state, warnings and error
(class, message, frame index, stage, rule, event index, ids) on every client vector and on
generated logs with errors anywhere, in both formats. (The Rust tests cut the chunks
anywhere: ``rust/agui-core/tests/stream_pipeline.rs``.)"""

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
    one = _native.replay_log(log, typed=False, **kw)
    # (gzip: read in chunks, the first one the reader's 4 KiB head)
    two = _native.replay_log(gzip.compress(log, 1), typed=False, **kw)
    assert _outcome(one) == _outcome(two)
    return one


CASES = [(f, c) for f, key in (("chunks.jsonl", "input"), ("verify.jsonl", "input"), ("legacy.jsonl", "input")) for c in load_jsonl(f"client/{f}")]
APPLY = load_jsonl("client/apply.jsonl.gz")


@pytest.mark.parametrize("verify", [False, True])
def test_every_vector_replays_the_same_read_in_chunks(verify):
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
def test_errors_at_the_start_middle_end_and_anywhere_between(frames, verify):
    for at in (0, 1, 255, 256, 257, 3000, len(frames) - 1, len(frames)):
        for bad in BAD:
            log = b"".join(frames[:at]) + bad + b"".join(frames[at:])
            one = _both(log, verify=verify)
            if bad in BAD[:2] and not verify:
                assert one[4].frame_index == at


def test_protobuf_and_gzip_logs_replay_the_same_read_in_chunks(frames):
    log = b"".join(frames)
    pb = encode_protobuf_many(decode_sse(log))
    want = _outcome(_both(log))
    assert want[4] is None
    assert _outcome(_both(pb)) == want  # (and gzipped)
    for cut in (pb[:-3], pb[: len(pb) // 2] + b"\x00\x00\x00\x02\xff\xff" + pb[len(pb) // 2 :]):
        assert _both(cut)[4] is not None
    # A gzip stream cut short: the events before the cut, then the error.
    cut = _native.replay_log(gzip.compress(log)[:-40], typed=False)
    assert cut[4] is not None and 0 < len(cut[0]) <= len(_native.replay_log(log, typed=False)[0])


def test_big_logs_replay_the_same_from_bytes_files_and_threads(tmp_path):
    log = to_sse(generate_events(20_000, seed=9))
    assert len(log) >= 1 << 20  # several of the reader's 256 KiB chunks
    one = stream.replay_log(log, raw=True)
    path = tmp_path / "big.sse"
    path.write_bytes(log)
    assert stream.replay_log(path, raw=True) == one
    gz = tmp_path / "big.sse.gz"
    gz.write_bytes(gzip.compress(log, 1))
    for threads in (1, 2, 4):
        native = _native.replay_log_files([path, gz], threads=threads, typed=False)
        assert [stream._replay(p, True) for p in native] == [one, one]
    bad = tmp_path / "bad.sse"
    cut = log[: len(log) // 2] + b"data: {oops\n\n" + log[len(log) // 2 :]
    bad.write_bytes(cut)
    from_file = _native.replay_log_files([bad], typed=False)[0]
    from_bytes = _native.replay_log(cut, typed=False)
    assert _outcome(from_file) == _outcome(from_bytes) and from_file[4] is not None


def test_many_logs_come_back_in_input_order_whatever_finishes_first(tmp_path):
    """``replay_log_files`` writes each log out as it finishes (the big ones last): the
    results are still in input order, each the outcome of that log alone, errors and a
    missing file included."""
    paths, want = [], []
    for k, n in enumerate((6000, 10, 0, 1500, 5, 800, 3000, 50, 1, 2500, 7, 300)):
        log = to_sse(generate_events(n, seed=k)) if n else b""
        if k == 3:
            log = log[: len(log) // 2] + b"data: {oops\n\n" + log[len(log) // 2 :]
        path = tmp_path / f"log{k}.sse"
        if k == 5:
            path = tmp_path / "log5.sse.gz"
            path.write_bytes(gzip.compress(log, 1))
        else:
            path.write_bytes(log)
        paths.append(path)
        want.append(_outcome(_native.replay_log(log, typed=False)))
    missing = tmp_path / "missing.sse"
    paths.insert(4, missing)
    for threads in (1, 2, 3, 16):
        got = _native.replay_log_files(paths, threads=threads, typed=False)
        assert len(got) == len(paths)
        assert isinstance(got[4][4], FileNotFoundError) and str(missing) in str(got[4][4])
        assert [_outcome(p) for p in got[:4] + got[5:]] == want, threads
    good = [p for k, p in enumerate(paths) if k not in (3, 4)]
    assert stream.replay_logs(good, threads=3) == [stream.replay_log(p) for p in good]
    # (the first failing log in input order raises, naming its path)
    with pytest.raises(ValueError) as e:
        stream.replay_logs(paths, threads=2)
    assert e.value.path == paths[3]
