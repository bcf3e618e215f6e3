"""Decoding a recorded SSE log of 100k mixed events: agui_fast vs peers, same run.

The log is built from the valid events of ``vectors/codec/events.jsonl`` (their Python
reference SSE text, ``py_sse``), cycled to 100,000 frames. Events that bare msgspec cannot
decode (unknown members, which our decoder keeps on a slower exact path) and the huge
``structure/`` cases are left out, so every peer decodes the very same frames.

Groups (the ratio table of conftest.py prints peer time / our time):

* ``sse_typed_100k``: ``decode_sse(log)`` → Structs, vs
  - ``pure_python_pydantic``: a pure-Python line parser + ``TypeAdapter(ag_ui.core.Event)
    .validate_json`` per frame (target: ≥ 25× slower than us);
  - ``msgspec_event_loop``: bare ``msgspec.json.decode`` of each (pre-split) payload into
    the ``Event`` union (target: we are within 1.5×, i.e. ratio ≥ 0.67);
  - ``msgspec_event_array``: one msgspec call on the pre-joined array (the floor).
* ``sse_typed_100k_incremental``: ``SseDecoder.feed`` with 64 KiB chunks vs the same peers'
  per-payload loop.
* ``sse_typed_100k_stream_mix``: the same, on a log shaped like a live run (90% streaming
  deltas, 10% other events).
* ``sse_typed_live_2000_chunks``: a live stream, one small event per chunk, through
  ``SseDecoder.feed`` vs a pure-Python parser + pydantic per chunk.
* ``sse_typed_100k_with_extras`` (informational): every valid vector event, including
  those with unknown members that ``decode_event`` keeps on its exact (slow) path.
* ``sse_dict_100k``: ``decode_sse(log, raw="dict")`` vs ``msgspec.json.decode`` per payload
  into plain objects, and a pure-Python parser with ``json.loads``.
* ``sse_bytes_100k``: raw bytes mode (framing + JSON check) vs the pure-Python splitter.

Run: ``pytest benches/bench_sse_decode.py --benchmark-only`` (after ``maturin develop
--release``).
"""

from __future__ import annotations

import json
from typing import List

import msgspec
import pytest
from pydantic import TypeAdapter

import ag_ui.core as ref

from agui_fast.core import Event
from agui_fast.decoder import EVENT_DECODER
from agui_fast._bench import split_sse_py as _split_py
from agui_fast.sse import SseDecoder, decode_sse

from conftest import load_jsonl

N = 100_000


def _payloads() -> List[bytes]:
    base = []
    for case in load_jsonl("codec/events.jsonl"):
        sse = case.get("py_sse")
        if not sse or case["name"].startswith("structure/"):
            continue
        payload = sse[len("data: ") : -2].encode("utf-8")
        try:
            EVENT_DECODER.decode(payload)
        except msgspec.MsgspecError:
            continue  # needs the exact path (extras): not a bare-msgspec input
        base.append(payload)
    return [base[i % len(base)] for i in range(N)]


PAYLOADS = _payloads()
LOG = b"".join(b"data: " + p + b"\n\n" for p in PAYLOADS)

# A second log shaped like a live agent run: 90% streaming deltas (text, tool-call args,
# reasoning content), 10% the other events, from the same vector pool.
_DELTA_TYPES = (b'"TEXT_MESSAGE_CONTENT"', b'"TOOL_CALL_ARGS"', b'"REASONING_MESSAGE_CONTENT"')
_pool = sorted(set(PAYLOADS))
_deltas = [p for p in _pool if any(t in p[:40] for t in _DELTA_TYPES)]
_others = [p for p in _pool if p not in set(_deltas)]
STREAM_PAYLOADS = [
    _others[(i // 10) % len(_others)] if i % 10 == 9 else _deltas[i % len(_deltas)] for i in range(N)
]
STREAM_LOG = b"".join(b"data: " + p + b"\n\n" for p in STREAM_PAYLOADS)
ARRAY = b"[" + b",".join(PAYLOADS) + b"]"
ADAPTER = TypeAdapter(ref.Event)
EVENT_LIST = msgspec.json.Decoder(List[Event], strict=False)
_decode_plain = msgspec.json.decode


def pure_python_pydantic(data: bytes):
    validate = ADAPTER.validate_json
    return [validate(p) for p in _split_py(data)]


def pure_python_json(data: bytes):
    loads = json.loads
    return [loads(p) for p in _split_py(data)]


def msgspec_event_loop(payloads):
    dec = EVENT_DECODER.decode
    return [dec(p) for p in payloads]


def msgspec_plain_loop(payloads):
    return [_decode_plain(p) for p in payloads]


def incremental(data: bytes, chunk: int = 64 * 1024, **kw):
    dec = SseDecoder(**kw)
    out = []
    for i in range(0, len(data), chunk):
        out.extend(dec.feed(data[i : i + chunk]))
    out.extend(dec.close())
    return out


def _run(benchmark, fn, *args, rounds=5):
    return benchmark.pedantic(fn, args=args, rounds=rounds, iterations=1, warmup_rounds=1)


# -- typed -------------------------------------------------------------------------------


def test_sse_typed__agui_fast(benchmark):
    benchmark.group = "sse_typed_100k"
    out = _run(benchmark, decode_sse, LOG)
    assert len(out) == N


def test_sse_typed__pure_python_pydantic(benchmark):
    benchmark.group = "sse_typed_100k"
    out = _run(benchmark, pure_python_pydantic, LOG, rounds=2)
    assert len(out) == N


def test_sse_typed__msgspec_event_loop(benchmark):
    benchmark.group = "sse_typed_100k"
    out = _run(benchmark, msgspec_event_loop, PAYLOADS)
    assert len(out) == N


def test_sse_typed__msgspec_event_array(benchmark):
    benchmark.group = "sse_typed_100k"
    out = _run(benchmark, EVENT_LIST.decode, ARRAY)
    assert len(out) == N


def test_sse_typed_inc__agui_fast(benchmark):
    benchmark.group = "sse_typed_100k_incremental"
    out = _run(benchmark, incremental, LOG)
    assert len(out) == N


def test_sse_typed_inc__msgspec_event_loop(benchmark):
    benchmark.group = "sse_typed_100k_incremental"
    _run(benchmark, msgspec_event_loop, PAYLOADS)


def test_sse_typed_inc__pure_python_pydantic(benchmark):
    benchmark.group = "sse_typed_100k_incremental"
    _run(benchmark, pure_python_pydantic, LOG, rounds=2)


def test_sse_stream_mix__agui_fast(benchmark):
    benchmark.group = "sse_typed_100k_stream_mix"
    assert len(_run(benchmark, decode_sse, STREAM_LOG)) == N


def test_sse_stream_mix__pure_python_pydantic(benchmark):
    benchmark.group = "sse_typed_100k_stream_mix"
    _run(benchmark, pure_python_pydantic, STREAM_LOG, rounds=2)


def test_sse_stream_mix__msgspec_event_loop(benchmark):
    benchmark.group = "sse_typed_100k_stream_mix"
    _run(benchmark, msgspec_event_loop, STREAM_PAYLOADS)


# Every valid vector event, including the ~11% with unknown members (kept as extras by
# decode_event's exact path): informational, shows what the slow path costs.
_ALL = [
    c["py_sse"][6:-2].encode("utf-8")
    for c in load_jsonl("codec/events.jsonl")
    if c.get("py_sse") and not c["name"].startswith("structure/")
]
ALL_PAYLOADS = [_ALL[i % len(_ALL)] for i in range(N)]
ALL_LOG = b"".join(b"data: " + p + b"\n\n" for p in ALL_PAYLOADS)


def test_sse_with_extras__agui_fast(benchmark):
    benchmark.group = "sse_typed_100k_with_extras"
    assert len(_run(benchmark, decode_sse, ALL_LOG, rounds=3)) == N


def test_sse_with_extras__pure_python_pydantic(benchmark):
    benchmark.group = "sse_typed_100k_with_extras"
    _run(benchmark, pure_python_pydantic, ALL_LOG, rounds=2)


# A live stream: one small event per network chunk (how an agent UI client receives a
# reply), fed to the incremental decoders one chunk at a time.
LIVE_CHUNKS = [b"data: " + p + b"\n\n" for p in STREAM_PAYLOADS[:2000]]


def live_agui_fast(chunks):
    dec = SseDecoder()
    out = []
    for c in chunks:
        out.extend(dec.feed(c))
    return out


def live_pure_python_pydantic(chunks):
    validate = ADAPTER.validate_json
    out = []
    for c in chunks:  # the chunk is one whole frame: the simplest correct parser
        out.extend(validate(p) for p in _split_py(c))
    return out


def test_sse_live__agui_fast(benchmark):
    benchmark.group = "sse_typed_live_2000_chunks"
    assert len(_run(benchmark, live_agui_fast, LIVE_CHUNKS, rounds=20)) == 2000


def test_sse_live__pure_python_pydantic(benchmark):
    benchmark.group = "sse_typed_live_2000_chunks"
    _run(benchmark, live_pure_python_pydantic, LIVE_CHUNKS, rounds=20)


# -- one frame: the whole call, whichever way it is reached ----------------------------------

ONE_FRAME = LIVE_CHUNKS[0]


def test_sse_one_frame__agui_fast(benchmark):
    benchmark.group = "sse_typed_one_frame"
    assert len(benchmark(decode_sse, ONE_FRAME)) == 1


def test_sse_one_frame__agui_fast_via_decoder_module(benchmark):
    benchmark.group = "sse_typed_one_frame"
    import agui_fast.decoder

    assert len(benchmark(lambda: agui_fast.decoder.decode_sse(ONE_FRAME))) == 1


def test_sse_one_frame__decode_event_plus_framing(benchmark):
    """The floor: decode_event on the payload, framed by a slice (one ``data:`` line)."""
    benchmark.group = "sse_typed_one_frame"
    from agui_fast.decoder import decode_event

    benchmark(lambda: [decode_event(ONE_FRAME[6:-2])])


# -- raw dict / bytes ----------------------------------------------------------------------


def test_sse_dict__agui_fast(benchmark):
    benchmark.group = "sse_dict_100k"
    out = benchmark.pedantic(lambda: decode_sse(LOG, raw="dict"), rounds=5, iterations=1, warmup_rounds=1)
    assert len(out) == N


def test_sse_dict__msgspec_plain_loop(benchmark):
    benchmark.group = "sse_dict_100k"
    _run(benchmark, msgspec_plain_loop, PAYLOADS)


def test_sse_dict__pure_python_json(benchmark):
    benchmark.group = "sse_dict_100k"
    _run(benchmark, pure_python_json, LOG, rounds=3)


def test_sse_bytes__agui_fast(benchmark):
    benchmark.group = "sse_bytes_100k"
    out = benchmark.pedantic(lambda: decode_sse(LOG, raw="bytes"), rounds=5, iterations=1, warmup_rounds=1)
    assert len(out) == N


def test_sse_bytes__pure_python_split(benchmark):
    benchmark.group = "sse_bytes_100k"
    _run(benchmark, lambda d: [p.encode() for p in _split_py(d)], LOG, rounds=3)


@pytest.mark.parametrize("n", [1])
def test_sanity_same_events(n):
    """Not a benchmark: all implementations agree on the log."""
    ours = decode_sse(LOG[: 200 * 400])
    peers = msgspec_event_loop(PAYLOADS[: len(ours)])
    assert ours == peers
