"""What a server's paths cost around the encoder, against the reference (``ag_ui``,
pydantic) or msgspec in the same run, rounds interleaved (``_interleave.pedantic_against``):
the conftest summary prints peer time / our time (> 1: ours is faster).

Groups:

* ``server_state_deltas_10k``: ``decode_sse`` of a log of 10k ``STATE_DELTA`` events (two
  operations each) vs msgspec decoding the same payloads into Structs of the same shape
  whose pointers carry no check: each payload (``msgspec_plain_loop``), and all of them
  joined as one array (``msgspec_plain_array``, the floor; no framing). Goal: ours within
  1.5x, a ratio >= 0.67.
* ``server_one_frame_sse`` / ``server_one_frame_feed`` / ``server_one_frame_protobuf``: one
  small event through ``decode_sse(frame)``, ``SseDecoder.feed(frame)`` and
  ``decode_protobuf(frame)``, 1,000 calls a round, vs msgspec's decode of the same JSON
  payload into the event Structs (goal: ratio >= 0.67).

Run: ``pytest benches/bench_server.py --benchmark-only`` after ``maturin develop --release``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Union

import msgspec
from msgspec import field

from _interleave import pedantic_against

from agui_fast._typed import EVENT_DECODER
from agui_fast.proto import decode_protobuf, encode_protobuf_frame
from agui_fast.sse import SseDecoder, decode_sse


def _against(benchmark: Any, group: str, ours: Any, peers: Dict[str, Any], rounds: int = 15) -> Any:
    benchmark.group = group
    return pedantic_against(benchmark, ours, (), peers, rounds=rounds, warmup_rounds=2, settle=0.002)


# -- a log of state deltas -----------------------------------------------------------------


class _Plain(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True, dict=True, rename="camel"):
    """The Structs' options, without the pointer check."""


class PlainAdd(_Plain, kw_only=True, tag_field="op", tag="add"):
    path: str
    value: Any


class PlainReplace(_Plain, kw_only=True, tag_field="op", tag="replace"):
    path: str
    value: Any


class PlainRemove(_Plain, kw_only=True, tag_field="op", tag="remove"):
    path: str


class PlainMove(_Plain, kw_only=True, tag_field="op", tag="move"):
    from_: str = field(name="from")
    path: str


class PlainDelta(_Plain, kw_only=True, tag_field="type", tag="STATE_DELTA"):
    timestamp: Optional[int] = None
    raw_event: Any = field(default=None, name="rawEvent")
    metadata: Optional[Dict[str, Any]] = None
    subagent_run_id: Optional[str] = field(default=None, name="subagentRunId")
    delta: List[Union[PlainAdd, PlainReplace, PlainRemove, PlainMove]]


PLAIN_DELTA = msgspec.json.Decoder(PlainDelta, strict=False)
PLAIN_DELTAS = msgspec.json.Decoder(List[PlainDelta], strict=False)

DELTA_PAYLOADS = [
    json.dumps(
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/counters/tokens", "value": i},
                {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": i, "title": f"step {i}"}},
            ],
        },
        separators=(",", ":"),
    ).encode()
    for i in range(10_000)
]
DELTA_LOG = b"".join(b"data: " + p + b"\n\n" for p in DELTA_PAYLOADS)
DELTA_ARRAY = b"[" + b",".join(DELTA_PAYLOADS) + b"]"


def _plain_deltas() -> list:
    dec = PLAIN_DELTA.decode
    return [dec(p) for p in DELTA_PAYLOADS]


def test_state_deltas__agui_fast(benchmark):
    got = _against(
        benchmark, "server_state_deltas_10k", lambda: decode_sse(DELTA_LOG), {"msgspec_plain_loop": _plain_deltas, "msgspec_plain_array": lambda: PLAIN_DELTAS.decode(DELTA_ARRAY)},
    )
    assert len(got) == len(DELTA_PAYLOADS) and got[0].delta[0].path == "/counters/tokens"


# -- one frame ---------------------------------------------------------------------------------

CALLS = 1_000
PAYLOAD = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_1","delta":"word 17 of the reply, "}'
FRAME = b"data: " + PAYLOAD + b"\n\n"
PB_FRAME = encode_protobuf_frame(EVENT_DECODER.decode(PAYLOAD))


def _msgspec_one() -> None:
    dec = EVENT_DECODER.decode
    for _ in range(CALLS):
        dec(PAYLOAD)


def test_one_frame_sse__agui_fast(benchmark):
    def ours() -> None:
        for _ in range(CALLS):
            decode_sse(FRAME)

    _against(benchmark, "server_one_frame_sse", ours, {"msgspec_decode": _msgspec_one})
    assert decode_sse(FRAME) == [EVENT_DECODER.decode(PAYLOAD)]


def test_one_frame_feed__agui_fast(benchmark):
    dec = SseDecoder()

    def ours() -> None:
        feed = dec.feed
        for _ in range(CALLS):
            feed(FRAME)

    _against(benchmark, "server_one_frame_feed", ours, {"msgspec_decode": _msgspec_one})
    assert dec.feed(FRAME) == [EVENT_DECODER.decode(PAYLOAD)]


def test_one_frame_protobuf__agui_fast(benchmark):
    def ours() -> None:
        for _ in range(CALLS):
            decode_protobuf(PB_FRAME)

    _against(benchmark, "server_one_frame_protobuf", ours, {"msgspec_decode": _msgspec_one})
    assert decode_protobuf(PB_FRAME) == [EVENT_DECODER.decode(PAYLOAD)]
