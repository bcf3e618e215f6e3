"""Encode: events to SSE, as an agent server does per event, against ``ag_ui.encoder``
(pydantic), and large events against the fastest general JSON writers on the same data."""

import json
import random

import msgspec
import orjson
import pytest

from ag_ui.encoder import EventEncoder as RefEncoder
from _data import large_events, vector_events
from _interleave import against
from agui_fast import _native
from agui_fast.core import TextMessageContentEvent
from agui_fast.encoder import EventEncoder
from agui_fast.interop import to_ag_ui

ENC = EventEncoder()
REF = RefEncoder()
SMALL = TextMessageContentEvent(message_id="msg_1", delta="Hello, world")
SMALL_REF = to_ag_ui(SMALL)


def test_small(benchmark):
    """One TEXT_MESSAGE_CONTENT, a Struct to an SSE ``str``; the floor is bare
    ``msgspec.json.encode`` of the Struct (no framing, ``bytes``)."""
    benchmark.group = "encode/small"
    out = against(benchmark, lambda: ENC.encode(SMALL),
                  {"ag_ui.encoder": lambda: REF.encode(SMALL_REF), "msgspec (floor)": lambda: msgspec.json.encode(SMALL)},
                  readme={"ag_ui.encoder": "encode one small event (Struct → SSE `str`)"})
    assert out == REF.encode(SMALL_REF)


def test_small_pydantic(benchmark):
    """The reference's own pydantic event through our encoder (same bytes)."""
    benchmark.group = "encode/small_pydantic"
    out = against(benchmark, lambda: ENC.encode(SMALL_REF), {"ag_ui.encoder": lambda: REF.encode(SMALL_REF)})
    assert out == REF.encode(SMALL_REF)


ACCEPT = "text/event-stream, application/vnd.ag-ui.event+proto;q=0.5"


def test_encoder_per_request(benchmark):
    """What frameworks do per event: an encoder for the request's Accept header (two media
    ranges), then one small event."""
    benchmark.group = "encode/encoder_per_event"
    against(benchmark, lambda: EventEncoder(accept=ACCEPT).encode(SMALL),
            {"ag_ui.encoder": lambda: RefEncoder(accept=ACCEPT).encode(SMALL_REF)})


def test_many(benchmark):
    """``encode_many`` of 1,000 mixed events (every kind of the codec vectors) into one
    buffer, against the reference encoder in a loop."""
    benchmark.group = "encode/many_1000"
    events = vector_events()[:1000]
    theirs = [to_ag_ui(e) for e in events]
    out = against(benchmark, lambda: ENC.encode_many(events),
                  {"ag_ui.encoder": lambda: "".join(REF.encode(e) for e in theirs).encode()}, events=len(events))
    assert out == "".join(REF.encode(e) for e in theirs).encode()


def _orjson_sse(plain):
    return b"data: " + orjson.dumps(plain) + b"\n\n"


@pytest.mark.parametrize("name", ["messages_snapshot_300", "state_snapshot_100kb"])
def test_large(benchmark, name):
    """A large event to SSE bytes (``encode_binary``) against ``orjson.dumps`` of the same
    data as plain dicts plus the framing (the same JSON value, the test checks), bare
    ``msgspec.json.encode`` of the Struct, and the reference encoder."""
    benchmark.group = f"encode/{name}"
    event, plain = large_events()[name]
    assert json.loads(ENC.encode(event)[6:-2]) == plain == json.loads(_orjson_sse(plain)[6:-2])
    theirs = to_ag_ui(event)
    peers = {"orjson + framing": lambda: _orjson_sse(plain), "msgspec": lambda: msgspec.json.encode(event),
             "ag_ui.encoder": lambda: REF.encode(theirs)}
    readme = {"orjson + framing": "encode a 300-message `MESSAGES_SNAPSHOT` to SSE bytes"}
    against(benchmark, lambda: ENC.encode_binary(event), peers, rounds=20,
            readme=readme if name.startswith("messages") else None)


def _kinds():
    rng = random.Random(1)
    words = ["the", "agent", "calls", "tool", "search", "answer"]
    return {
        "floats": [rng.random() * 1000 for _ in range(10_000)],
        "ints": [rng.randint(-(10**6), 10**6) for _ in range(10_000)],
        "none_and_bools": [rng.choice([None, True, False]) for _ in range(10_000)],
        "short_strings": [f"key_{rng.randint(0, 999)}" for _ in range(10_000)],
        "strings_35b": [" ".join(rng.choice(words) for _ in range(6)).ljust(35, "x")[:35] for _ in range(10_000)],
        "small_dicts": [{f"key_{i % 1000}": i} for i in range(10_000)],
        "small_lists": [[i] for i in range(10_000)],
    }


KINDS = _kinds()


@pytest.mark.parametrize("kind", list(KINDS))
def test_value_kind(benchmark, kind):
    """The JSON writer's cost per kind of value: a list of 10,000 values of one kind through
    ``agui_fast._native.dumps`` (the walker every encoder uses) against ``orjson.dumps`` and
    ``msgspec.json.encode`` of the same list."""
    benchmark.group = f"encode/kind_{kind}"
    values = KINDS[kind]
    out = against(benchmark, lambda: _native.dumps(values),
                  {"orjson": lambda: orjson.dumps(values), "msgspec": lambda: msgspec.json.encode(values)},
                  rounds=20, values=len(values))
    assert json.loads(out) == values
