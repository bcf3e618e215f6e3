"""Protobuf: agui_fast vs google ``protobuf`` (upb) classes generated from the same .proto files.

The google classes are generated at import time with ``grpc_tools.protoc`` into a temp dir
(nothing generated is committed). Peers, per group (``__<impl>`` suffix, see conftest.py):

* ``agui_fast``: our typed path — an ``agui_fast.core`` Struct in, protobuf bytes out
  (``encode_protobuf_frame``), and bytes in, Struct out (``decode_event_message`` /
  ``decode_protobuf``);
* ``upb_dict``: what a Python user of the generated classes does with event dicts:
  ``json_format.ParseDict`` + ``SerializeToString`` / ``FromString`` + ``MessageToDict``;
* ``upb_floor``: bare ``SerializeToString`` of a prebuilt message / ``FromString`` (the C
  floor: no conversion to or from Python data at all);
* ``sse_decode`` (log group only): the SSE decode of the same log (agui_fast), for the
  "protobuf log decodes faster than SSE" goal.

Run: ``python -m pytest benches/bench_proto.py`` (after ``maturin develop --release``);
``python benches/report_proto.py`` prints the goal ratios in one table.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile

import pytest

from agui_fast import _native, proto
from agui_fast.decoder import decode_event

from conftest import ROOT, load_jsonl

# -- google protobuf classes generated from proto/*.proto -----------------------------------------


def generate_google_classes():
    import grpc_tools
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="agui_pb_")
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["protoc", f"-I{ROOT / 'proto'}", f"-I{include}", f"--python_out={out}"]
    args += [str(p) for p in sorted((ROOT / "proto").glob("*.proto"))]
    if protoc.main(args) != 0:
        raise RuntimeError("grpc_tools.protoc failed")
    sys.path.insert(0, out)
    return importlib.import_module("events_pb2")


pb = generate_google_classes()
from google.protobuf import json_format  # noqa: E402
from google.protobuf.internal import api_implementation  # noqa: E402

IMPL = api_implementation.Type()  # "upb" expected

CASES = load_jsonl("codec/events.jsonl")

# Typical streaming event (the bulk of any real log).
SMALL_CASE = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_1", "delta": "Hello, world"}
SMALL = decode_event(_native.dumps(SMALL_CASE))
SMALL_FRAME = proto.encode_protobuf_frame(SMALL)
SMALL_MSG = SMALL_FRAME[4:]

# A mixed set: every valid vector event the typed layer reads, frames under 4 KB.
MIXED = []
for c in CASES:
    if c.get("py_sse") and len(c["proto_frame_hex"]) < 8192 and not c["name"].startswith("numbers/"):
        MIXED.append(decode_event(c["py_sse"][6:-2]))


def pb_from_msg(msg: bytes):
    return pb.Event.FromString(msg)


def _upb_reads(msg: bytes) -> bool:
    try:
        pb_from_msg(msg)
        return True
    except Exception:  # upb's depth limit (100) rejects the 50-deep nesting vectors
        return False


MIXED = [e for e in MIXED if _upb_reads(proto.encode_event_message(e))]
MIXED_MSGS = [proto.encode_event_message(e) for e in MIXED]


# The dict a user of the generated classes holds: the protobuf-JSON form of the event.
SMALL_PB = pb_from_msg(SMALL_MSG)
SMALL_PB_DICT = json_format.MessageToDict(SMALL_PB)
MIXED_PB = [pb_from_msg(m) for m in MIXED_MSGS]
MIXED_PB_DICTS = [json_format.MessageToDict(m) for m in MIXED_PB]


def _check_same_bytes():
    # Same schema, same bytes: the google classes re-serialise our frames identically
    # (Struct entries aside, whose order upb does not keep — not used for this check).
    assert SMALL_PB.SerializeToString() == SMALL_MSG


_check_same_bytes()

# -- single small event -----------------------------------------------------------------------------


def test_encode_small__agui_fast(benchmark):
    benchmark.group = "proto_encode_small"
    assert benchmark(proto.encode_event_message, SMALL) == SMALL_MSG


def test_encode_small__upb_dict(benchmark):
    benchmark.group = "proto_encode_small"
    parse, Event = json_format.ParseDict, pb.Event
    benchmark(lambda: parse(SMALL_PB_DICT, Event()).SerializeToString())


def test_encode_small__upb_floor(benchmark):
    benchmark.group = "proto_encode_small"
    benchmark(SMALL_PB.SerializeToString)


def test_decode_small__agui_fast(benchmark):
    benchmark.group = "proto_decode_small"
    assert benchmark(proto.decode_event_message, SMALL_MSG) == SMALL


def test_decode_small__upb_dict(benchmark):
    benchmark.group = "proto_decode_small"
    to_dict, from_string = json_format.MessageToDict, pb.Event.FromString
    benchmark(lambda: to_dict(from_string(SMALL_MSG)))


def test_decode_small__upb_floor(benchmark):
    benchmark.group = "proto_decode_small"
    benchmark(pb.Event.FromString, SMALL_MSG)


SMALL_FRAME = proto.encode_protobuf_frame(SMALL)
SMALL_JSON = _native.dumps(SMALL)


def test_decode_one_frame__agui_fast(benchmark):
    benchmark.group = "proto_decode_one_frame"
    assert benchmark(proto.decode_protobuf, SMALL_FRAME) == [SMALL]


def test_decode_one_frame__agui_fast_via_decoder_module(benchmark):
    benchmark.group = "proto_decode_one_frame"
    import agui_fast.decoder

    assert benchmark(lambda: agui_fast.decoder.decode_protobuf(SMALL_FRAME)) == [SMALL]


def test_decode_one_frame__decode_event_plus_framing(benchmark):
    """The floor: decode_event on the same event's JSON, framed by a slice."""
    benchmark.group = "proto_decode_one_frame"
    framed = len(SMALL_JSON).to_bytes(4, "big") + SMALL_JSON
    assert benchmark(lambda: [decode_event(framed[4:])]) == [SMALL]


# -- mixed events (every kind, nested messages, JSON payloads) ---------------------------------------


def test_encode_mixed__agui_fast(benchmark):
    benchmark.group = "proto_encode_mixed"
    enc = proto.encode_event_message
    benchmark(lambda: [enc(e) for e in MIXED])


def test_encode_mixed__upb_dict(benchmark):
    benchmark.group = "proto_encode_mixed"
    parse, Event = json_format.ParseDict, pb.Event
    benchmark(lambda: [parse(d, Event()).SerializeToString() for d in MIXED_PB_DICTS])


def test_encode_mixed__upb_floor(benchmark):
    benchmark.group = "proto_encode_mixed"
    benchmark(lambda: [m.SerializeToString() for m in MIXED_PB])


def test_decode_mixed__agui_fast(benchmark):
    benchmark.group = "proto_decode_mixed"
    dec = proto.decode_event_message
    benchmark(lambda: [dec(m) for m in MIXED_MSGS])


def test_decode_mixed__upb_dict(benchmark):
    benchmark.group = "proto_decode_mixed"
    to_dict, from_string = json_format.MessageToDict, pb.Event.FromString
    benchmark(lambda: [to_dict(from_string(m)) for m in MIXED_MSGS])


def test_decode_mixed__upb_floor(benchmark):
    benchmark.group = "proto_decode_mixed"
    from_string = pb.Event.FromString
    benchmark(lambda: [from_string(m) for m in MIXED_MSGS])


# -- batch encode into one framed stream -----------------------------------------------------------


def test_encode_many__agui_fast(benchmark):
    benchmark.group = "proto_encode_many"
    benchmark(proto.encode_protobuf_many, MIXED)


def test_encode_many__upb_floor(benchmark):
    benchmark.group = "proto_encode_many"

    def run():
        out = bytearray()
        for m in MIXED_PB:
            b = m.SerializeToString()
            out += len(b).to_bytes(4, "big")
            out += b
        return bytes(out)

    benchmark(run)


# -- a 100k-event log: protobuf decode vs SSE decode of the same log --------------------------------

N_LOG = 100_000


def _plain(e) -> bool:
    """No unknown members (the SSE fast path and protobuf agree on these events)."""
    from agui_fast.decoder import EVENT_DECODER

    try:
        return EVENT_DECODER.decode(_native.dumps(e)) == e
    except Exception:
        return False


LOG_BASE = [e for e in MIXED if _plain(e)]
# Mostly small streaming events, every tenth one from the mixed set.
LOG_EVENTS = [LOG_BASE[(i // 10) % len(LOG_BASE)] if i % 10 == 0 else SMALL for i in range(N_LOG)]
LOG_PROTO = proto.encode_protobuf_many(LOG_EVENTS)
LOG_SSE = _native.encode_sse_many(LOG_EVENTS)


def _sse_decode(data: bytes):
    try:
        from agui_fast.decoder import decode_sse  # feat-sse, once merged
    except ImportError:
        decode_sse = None
    if decode_sse is not None:
        return decode_sse(data)
    # Until the SSE decoder lands: split frames and decode all events in one msgspec call
    # (a lower bound for any SSE decoder producing the same Structs).
    from agui_fast.decoder import EVENT_LIST_DECODER

    body = data[6:-2].replace(b"\n\ndata: ", b",")
    return EVENT_LIST_DECODER.decode(b"[" + body + b"]")


def test_decode_log_100k__agui_fast(benchmark):
    benchmark.group = "proto_decode_log_100k"
    out = benchmark.pedantic(proto.decode_protobuf, (LOG_PROTO,), rounds=5, iterations=1)
    assert len(out) == N_LOG


def test_decode_log_100k__sse_decode(benchmark):
    benchmark.group = "proto_decode_log_100k"
    out = benchmark.pedantic(_sse_decode, (LOG_SSE,), rounds=5, iterations=1)
    assert len(out) == N_LOG


def test_decode_log_100k__upb_floor(benchmark):
    benchmark.group = "proto_decode_log_100k"

    def run():
        mv = memoryview(LOG_PROTO)
        pos, out, from_string = 0, [], pb.Event.FromString
        while pos < len(mv):
            n = int.from_bytes(mv[pos : pos + 4], "big")
            out.append(from_string(mv[pos + 4 : pos + 4 + n]))
            pos += 4 + n
        return out

    out = benchmark.pedantic(run, rounds=5, iterations=1)
    assert len(out) == N_LOG


def upb_dict_log(data: bytes) -> list:
    """A framed log the way a user of the generated classes reads it: event dicts."""
    mv = memoryview(data)
    pos, out = 0, []
    to_dict, from_string = json_format.MessageToDict, pb.Event.FromString
    while pos < len(mv):
        n = int.from_bytes(mv[pos : pos + 4], "big")
        out.append(to_dict(from_string(mv[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    return out


def test_decode_log_100k__upb_dict(benchmark):
    benchmark.group = "proto_decode_log_100k"

    def run():
        return upb_dict_log(LOG_PROTO)

    out = benchmark.pedantic(run, rounds=1, iterations=1)
    assert len(out) == N_LOG
