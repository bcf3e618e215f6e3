"""Decode: SSE logs and live streams into typed events (or dicts, or bytes), against what a
Python user writes without agui-fast (an httpx-sse style parser and
``TypeAdapter(ag_ui.core.Event)`` per frame) and against bare msgspec on pre-split payloads
(the floor: our typed events are msgspec Structs). Also: files streamed from disk, and the
memory of streaming a log far larger than that."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Dict, List, Optional, Union

import msgspec
import pytest
from pydantic import TypeAdapter

import ag_ui.core as ref
from _data import LOG_EVENTS, codec_payloads
from _interleave import QUICK, Peer, against, measure
from _peers import split_sse_py
from agui_fast.core import Event
from agui_fast.decoder import EVENT_DECODER, decode_event
from agui_fast.proto import convert_sse_to_protobuf, iter_protobuf
from agui_fast.sse import SseDecoder, decode_sse, iter_sse

N = LOG_EVENTS
PAYLOADS = [codec_payloads()[i % len(codec_payloads())] for i in range(N)]
LOG = b"".join(b"data: " + p + b"\n\n" for p in PAYLOADS)

# A log shaped like a live agent run: 90% streaming deltas (text, tool-call arguments,
# reasoning), 10% the other events, from the same pool.
_DELTA_TYPES = (b'"TEXT_MESSAGE_CONTENT"', b'"TOOL_CALL_ARGS"', b'"REASONING_MESSAGE_CONTENT"')
_pool = sorted(set(PAYLOADS))
_deltas = [p for p in _pool if any(t in p[:40] for t in _DELTA_TYPES)]
_others = [p for p in _pool if p not in set(_deltas)]
STREAM_PAYLOADS = [_others[(i // 10) % len(_others)] if i % 10 == 9 else _deltas[i % len(_deltas)] for i in range(N)]
STREAM_LOG = b"".join(b"data: " + p + b"\n\n" for p in STREAM_PAYLOADS)

ADAPTER = TypeAdapter(ref.Event)
EVENT_LIST = msgspec.json.Decoder(List[Event], strict=False)


def pure_python_pydantic(data: bytes):
    validate = ADAPTER.validate_json
    return [validate(p) for p in split_sse_py(data)]


def msgspec_loop(payloads):
    dec = EVENT_DECODER.decode
    return [dec(p) for p in payloads]


def test_sse_log(benchmark):
    """A log of the codec vectors' valid events (every kind), cycled, into typed events:
    ``decode_sse(log)``; the floors are bare msgspec per pre-split payload and one msgspec
    call on the pre-joined array."""
    benchmark.group = "decode/sse_typed_log"
    array = b"[" + b",".join(PAYLOADS) + b"]"
    out = against(benchmark, lambda: decode_sse(LOG),
                  {"pure Python + pydantic": Peer(lambda: pure_python_pydantic(LOG), every=5),
                   "msgspec per payload (floor)": lambda: msgspec_loop(PAYLOADS),
                   "msgspec, one array (floor)": lambda: EVENT_LIST.decode(array)},
                  rounds=10, min_round=0, settle=0.01, events=N,
                  readme={"pure Python + pydantic": f"decode a {N // 1000}k-event SSE log into typed events",
                          "msgspec per payload (floor)": f"decode a {N // 1000}k-event SSE log into typed events"})
    assert out == msgspec_loop(PAYLOADS)


def test_sse_live_run(benchmark):
    """The same on a log shaped like a live run (90% deltas)."""
    benchmark.group = "decode/sse_typed_live_run_log"
    against(benchmark, lambda: decode_sse(STREAM_LOG),
            {"pure Python + pydantic": Peer(lambda: pure_python_pydantic(STREAM_LOG), every=5),
             "msgspec per payload (floor)": lambda: msgspec_loop(STREAM_PAYLOADS)},
            rounds=10, min_round=0, settle=0.01, events=N)


def incremental(data: bytes, chunk: int = 64 * 1024):
    dec = SseDecoder()
    out = []
    for i in range(0, len(data), chunk):
        out.extend(dec.feed(data[i:i + chunk]))
    out.extend(dec.close())
    return out


def test_sse_incremental(benchmark):
    """``SseDecoder.feed`` with 64 KiB chunks of the log."""
    benchmark.group = "decode/sse_typed_64k_chunks"
    out = against(benchmark, lambda: incremental(LOG),
                  {"pure Python + pydantic": Peer(lambda: pure_python_pydantic(LOG), every=5),
                   "decode_sse (whole log)": lambda: decode_sse(LOG)},
                  rounds=10, min_round=0, settle=0.01, events=N)
    assert len(out) == N


LIVE_CHUNKS = [b"data: " + p + b"\n\n" for p in STREAM_PAYLOADS[:2000]]


def live_ours(chunks):
    dec = SseDecoder()
    out = []
    for c in chunks:
        out.extend(dec.feed(c))
    return out


def live_peer(chunks):
    validate = ADAPTER.validate_json
    out = []
    for c in chunks:  # each chunk is one whole frame: the simplest correct parser
        out.extend(validate(p) for p in split_sse_py(c))
    return out


def test_sse_live_chunks(benchmark):
    """A live stream, one small event per network chunk (how a UI client receives a reply),
    2,000 chunks through ``SseDecoder.feed``."""
    benchmark.group = "decode/sse_live_2000_chunks"
    out = against(benchmark, lambda: live_ours(LIVE_CHUNKS), {"pure Python + pydantic": lambda: live_peer(LIVE_CHUNKS)},
                  rounds=20, min_round=0, events=len(LIVE_CHUNKS),
                  readme={"pure Python + pydantic": "decode a live stream, one small event per chunk (`SseDecoder.feed`)"})
    assert len(out) == len(LIVE_CHUNKS)


PAYLOAD = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_1","delta":"word 17 of the reply, "}'
ONE_FRAME = b"data: " + PAYLOAD + b"\n\n"


def test_sse_one_frame(benchmark):
    """``decode_sse`` of one frame (a request body, a live chunk), against msgspec's decode of
    its payload into the event Structs (the floor: no framing) and ``decode_event`` of the
    payload framed by a slice."""
    benchmark.group = "decode/sse_one_frame"
    out = against(benchmark, lambda: decode_sse(ONE_FRAME),
                  {"msgspec decode of the payload (floor)": lambda: EVENT_DECODER.decode(PAYLOAD),
                   "decode_event + slice": lambda: [decode_event(ONE_FRAME[6:-2])]})
    assert out == [EVENT_DECODER.decode(PAYLOAD)]


def test_sse_one_frame_feed(benchmark):
    """``SseDecoder.feed`` of one frame."""
    benchmark.group = "decode/sse_one_frame_feed"
    dec = SseDecoder()
    out = against(benchmark, lambda: dec.feed(ONE_FRAME), {"msgspec decode of the payload (floor)": lambda: EVENT_DECODER.decode(PAYLOAD)})
    assert out == [EVENT_DECODER.decode(PAYLOAD)]


class _Plain(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True, dict=True, rename="camel"):
    """The Structs' options, without the JSON Pointer check of ``path`` and ``from``."""


class _PlainAdd(_Plain, kw_only=True, tag_field="op", tag="add"):
    path: str
    value: Any


class _PlainReplace(_Plain, kw_only=True, tag_field="op", tag="replace"):
    path: str
    value: Any


class _PlainDelta(_Plain, kw_only=True, tag_field="type", tag="STATE_DELTA"):
    timestamp: Optional[int] = None
    raw_event: Any = msgspec.field(default=None, name="rawEvent")
    metadata: Optional[Dict[str, Any]] = None
    subagent_run_id: Optional[str] = msgspec.field(default=None, name="subagentRunId")
    delta: List[Union[_PlainAdd, _PlainReplace]]


def test_state_deltas(benchmark):
    """A log of 10,000 ``STATE_DELTA`` events (two operations each) into typed events, whose
    pointers are checked, against msgspec decoding the same payloads into Structs of the same
    shape without the check: payload by payload, and all of them as one array (the floor)."""
    benchmark.group = "decode/sse_state_deltas_10k"
    payloads = [json.dumps({"type": "STATE_DELTA", "delta": [
        {"op": "replace", "path": "/counters/tokens", "value": i},
        {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": i, "title": f"step {i}"}},
    ]}, separators=(",", ":")).encode() for i in range(10_000)]
    log = b"".join(b"data: " + p + b"\n\n" for p in payloads)
    array = b"[" + b",".join(payloads) + b"]"
    one, many = msgspec.json.Decoder(_PlainDelta, strict=False), msgspec.json.Decoder(List[_PlainDelta], strict=False)
    out = against(benchmark, lambda: decode_sse(log),
                  {"msgspec per payload, unchecked": lambda: [one.decode(p) for p in payloads],
                   "msgspec, one array, unchecked (floor)": lambda: many.decode(array)},
                  rounds=15, min_round=0, settle=0.002, events=len(payloads))
    assert len(out) == len(payloads) and out[0].delta[0].path == "/counters/tokens"


def test_sse_with_extras(benchmark):
    """Every valid vector event, the ~11% with unknown members included (the decoders keep
    them, on their exact and slower path)."""
    benchmark.group = "decode/sse_typed_with_extras"
    pool = codec_payloads(with_extras=True)
    log = b"".join(b"data: " + pool[i % len(pool)] + b"\n\n" for i in range(N))
    against(benchmark, lambda: decode_sse(log), {"pure Python + pydantic": Peer(lambda: pure_python_pydantic(log), every=5)},
            rounds=10, min_round=0, settle=0.01, events=N)


def test_sse_dict(benchmark):
    """``raw="dict"``: plain Python objects, against msgspec per payload and ``json.loads``
    behind the pure-Python parser."""
    benchmark.group = "decode/sse_dict"
    against(benchmark, lambda: decode_sse(LOG, raw="dict"),
            {"msgspec per payload": lambda: [msgspec.json.decode(p) for p in PAYLOADS],
             "pure Python + json.loads": lambda: [json.loads(p) for p in split_sse_py(LOG)]},
            rounds=10, min_round=0, settle=0.01, events=N)


def test_sse_bytes(benchmark):
    """``raw="bytes"``: framing and the JSON check, against the pure-Python splitter."""
    benchmark.group = "decode/sse_bytes"
    against(benchmark, lambda: decode_sse(LOG, raw="bytes"),
            {"pure Python split": lambda: [p.encode() for p in split_sse_py(LOG)]}, rounds=10, min_round=0, events=N)


# -- files: streamed from disk -------------------------------------------------------------------


@pytest.fixture(scope="module")
def log_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("decode")
    sse = d / "log.sse"
    sse.write_bytes(LOG)
    pb = d / "log.pb"
    convert_sse_to_protobuf(sse, pb)
    return sse, pb


def test_iter_files(benchmark, log_files):
    """``iter_sse(path)`` over the log on disk (framed on a Rust thread while events are
    built), against the pure-Python peer reading the file, and ``iter_protobuf`` of the
    same events as a protobuf log, for scale."""
    benchmark.group = "decode/iter_sse_file"
    sse, pb = log_files

    def count(it):
        n = 0
        for _ in it:
            n += 1
        return n

    assert against(benchmark, lambda: count(iter_sse(sse)),
                   {"pure Python + pydantic": Peer(lambda: len(pure_python_pydantic(sse.read_bytes())), every=5),
                    "iter_protobuf (same events)": lambda: count(iter_protobuf(pb))},
                   rounds=10, min_round=0, settle=0.01, events=N) == N


# -- memory: streaming a log much larger than memory needs --------------------------------------


_STREAM_CHILD = r"""
import re, sys
from agui_fast.sse import iter_sse
n = 0
for _ in iter_sse(sys.argv[1]):
    n += 1
print(n, int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024)
"""


def _write_log(path, mib: int) -> int:
    block = b"".join(b"data: " + p + b"\n\n" for p in codec_payloads())
    blocks = max(1, mib * 2**20 // len(block))
    with open(path, "wb") as f:
        for _ in range(blocks):
            f.write(block)
    return blocks * len(codec_payloads())


@pytest.mark.skipif(sys.platform != "linux", reason="the peak RSS from /proc/self/status (VmHWM)")
def test_memory_iter_sse(benchmark, tmp_path):
    """Peak RSS of a process streaming a large SSE log with ``iter_sse`` (typed events),
    against the same process on a log an eighth of its size: flat means constant memory."""
    benchmark.group = "decode/memory_iter_sse"
    big_mib = 128 if QUICK else 1024
    sizes = {"big": big_mib, "small": big_mib // 8}
    counts = {k: _write_log(tmp_path / f"{k}.sse", mib) for k, mib in sizes.items()}

    def run():
        figures = {}
        for k in sizes:
            out = subprocess.run([sys.executable, "-c", _STREAM_CHILD, str(tmp_path / f"{k}.sse")],
                                 check=True, capture_output=True, text=True).stdout.split()
            assert int(out[0]) == counts[k]
            figures[f"peak_rss_mib_{k}"] = float(out[1])
        return figures

    figures = measure(benchmark, run, rounds=2, log_mib=sizes, readme=True,
                      compare={"label": f"stream a {big_mib:,} MiB SSE log (`iter_sse`): peak RSS",
                              "ours": "peak_rss_mib_big", "peer": "peak_rss_mib_small", "unit": "MiB",
                              "peer_label": f"the same on a {sizes['small']:,} MiB log"})
    for size in ("big", "small"):
        (tmp_path / f"{size}.sse").unlink()
    assert max(figures["peak_rss_mib_big"]) < 4 * max(figures["peak_rss_mib_small"])
