"""Encoding events to SSE: agui_fast vs ag_ui.encoder (pydantic) vs the bare msgspec floor.

Groups:
* encode_small: one TEXT_MESSAGE_CONTENT — our Struct via EventEncoder.encode, the reference
  encoder on its pydantic event, and ``msgspec.json.encode`` of the Struct (the floor: no
  SSE framing, no str).
* encode_small_stream: the same kind of event, 100 distinct ones (a streamed reply's
  deltas) encoded in a plain ``for`` loop per round, as a server's send loop does: the
  per-call harness cost of pytest-benchmark (~40 ns, paid by every peer alike) is paid
  once per 100 events, so the ratio is that of the encoders themselves.
* encode_small_pydantic: the *reference's* pydantic event through our encoder vs its own.
* encode_snapshot: a MESSAGES_SNAPSHOT of a few hundred messages.
* encode_many: a batch of 1,000 mixed events into one buffer.
* encoder_construct_encode: what frameworks do per event: build an encoder for the request's
  Accept header (two media ranges), then encode one small event.
"""

import msgspec
import pytest
from pydantic import TypeAdapter

import ag_ui.core as ref
from ag_ui.encoder import EventEncoder as RefEncoder

from agui_fast.core import TextMessageContentEvent
from agui_fast.decoder import decode_event
from agui_fast.encoder import EventEncoder
from agui_fast.interop import to_ag_ui

from conftest import load_jsonl

ENC = EventEncoder()
REF = RefEncoder()
SMALL = TextMessageContentEvent(message_id="msg_1", delta="Hello, world")
SMALL_REF = to_ag_ui(SMALL)
_msgspec_encode = msgspec.json.encode

CASES = {c["name"]: c for c in load_jsonl("codec/events.jsonl")}
SNAPSHOT = decode_event(CASES["structure/many_messages"]["sse"][6:-2]) if "structure/many_messages" in CASES else None
MIXED = [decode_event(c["py_sse"][6:-2]) for c in CASES.values() if c["py_sse"]][:1000]
MIXED_REF = [to_ag_ui(e) for e in MIXED]


def test_encode_small__agui_fast(benchmark):
    benchmark.group = "encode_small"
    assert benchmark(ENC.encode, SMALL) == REF.encode(SMALL_REF)


def test_encode_small__ag_ui(benchmark):
    benchmark.group = "encode_small"
    benchmark(REF.encode, SMALL_REF)


def test_encode_small__msgspec_floor(benchmark):
    benchmark.group = "encode_small"
    benchmark(_msgspec_encode, SMALL)


STREAM = [TextMessageContentEvent(message_id="msg_1", delta=f"word {i} of the reply, ") for i in range(100)]
STREAM_REF = [to_ag_ui(e) for e in STREAM]


def _loop(encode, events):
    def run():
        for e in events:
            encode(e)

    return run


def test_encode_small_stream__agui_fast(benchmark):
    benchmark.group = "encode_small_stream"
    assert [ENC.encode(e) for e in STREAM] == [REF.encode(e) for e in STREAM_REF]
    benchmark(_loop(ENC.encode, STREAM))


def test_encode_small_stream__ag_ui(benchmark):
    benchmark.group = "encode_small_stream"
    benchmark(_loop(REF.encode, STREAM_REF))


def test_encode_small_stream__msgspec_floor(benchmark):
    benchmark.group = "encode_small_stream"
    benchmark(_loop(_msgspec_encode, STREAM))


def test_encode_small_pydantic__agui_fast(benchmark):
    benchmark.group = "encode_small_pydantic"
    assert benchmark(ENC.encode, SMALL_REF) == REF.encode(SMALL_REF)


def test_encode_small_pydantic__ag_ui(benchmark):
    benchmark.group = "encode_small_pydantic"
    benchmark(REF.encode, SMALL_REF)


@pytest.mark.skipif(SNAPSHOT is None, reason="no snapshot vector")
def test_encode_snapshot__agui_fast(benchmark):
    benchmark.group = "encode_snapshot"
    benchmark(ENC.encode, SNAPSHOT)


@pytest.mark.skipif(SNAPSHOT is None, reason="no snapshot vector")
def test_encode_snapshot__ag_ui(benchmark):
    benchmark.group = "encode_snapshot"
    theirs = to_ag_ui(SNAPSHOT)
    benchmark(REF.encode, theirs)


def test_encode_many__agui_fast(benchmark):
    benchmark.group = "encode_many_1000"
    benchmark(ENC.encode_many, MIXED)


def test_encode_many__ag_ui(benchmark):
    benchmark.group = "encode_many_1000"
    benchmark(lambda: "".join(REF.encode(e) for e in MIXED_REF).encode())


ACCEPT = "text/event-stream, application/vnd.ag-ui.event+proto;q=0.5"


def test_encoder_construct_encode__agui_fast(benchmark):
    benchmark.group = "encoder_construct_encode"
    benchmark(lambda: EventEncoder(accept=ACCEPT).encode(SMALL))


def test_encoder_construct_encode__ag_ui(benchmark):
    benchmark.group = "encoder_construct_encode"
    benchmark(lambda: RefEncoder(accept=ACCEPT).encode(SMALL_REF))
