"""Large events to SSE: our walker against the fastest general JSON writers on the same data.

Groups (issue 9's "large events at least as fast as orjson"):
* encode_messages_snapshot_300: a MESSAGES_SNAPSHOT of 300 messages (user, assistant with
  tool calls, tool results; prose with newlines, quotes and non-ASCII) as our Struct through
  ``EventEncoder.encode_binary`` (SSE bytes); ``orjson.dumps`` of the same data as plain
  dicts/lists plus the SSE framing; ``msgspec.json.encode`` of the Struct (no framing).
* encode_state_snapshot_100k: a STATE_SNAPSHOT whose ~100 KB state is nested dicts/lists of
  strings, numbers and booleans: the same three.
* encode_str_*: the same through ``EventEncoder.encode`` (a ``str``, the reference's API)
  against orjson's bytes decoded to ``str``: building a str of non-ASCII text costs CPython a
  UTF-8 decode whoever wrote the bytes.
* proto_encode_messages_snapshot_300: the snapshot as one protobuf frame (no peer writes
  this format from Python: our own trend line, compared before/after a change).

Every peer writes the same bytes' worth of JSON (the test asserts equal JSON values).
"""

import json
import random

import msgspec
import orjson
import pytest

from agui_fast import proto
from agui_fast.core import MessagesSnapshotEvent, StateSnapshotEvent
from agui_fast.decoder import decode_event
from agui_fast.encoder import EventEncoder

ENC = EventEncoder()
RNG = random.Random(9)
# Prose as an LLM writes it: mostly ASCII words and punctuation, a paragraph break every
# ~20 words, a quoted phrase or a path now and then, some non-ASCII, rarely an emoji.
WORDS = (
    "the agent calls a tool to search for the answer and then writes it back to the user "
    "with a short summary of what it found, including numbers like 42 and 3.14, code, "
    "résumé naïve café"
).split()
SPECIAL = ["\n\n", '"quoted"', "C:\\path", "→", "😀", "\t"]


def _text(n):
    out = []
    for _ in range(n):
        r = RNG.random()
        out.append(RNG.choice(SPECIAL[:2]) if r < 0.06 else RNG.choice(SPECIAL[2:]) if r < 0.08 else RNG.choice(WORDS))
    return " ".join(out)


def _messages(n):
    out = []
    for i in range(n):
        k = i % 3
        if k == 0:
            out.append({"id": f"m{i}", "role": "user", "content": _text(40)})
        elif k == 1:
            out.append(
                {
                    "id": f"m{i}",
                    "role": "assistant",
                    "content": _text(60),
                    "toolCalls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": "search", "arguments": json.dumps({"q": _text(5), "k": i})},
                        }
                    ],
                }
            )
        else:
            out.append({"id": f"m{i}", "role": "tool", "content": _text(30), "toolCallId": f"call_{i - 1}"})
    return out


def _state(size):
    def node(depth):
        if depth == 0 or RNG.random() < 0.3:
            return RNG.choice([_text(6), RNG.randint(-(10**6), 10**6), RNG.random() * 1000, True, None])
        if RNG.random() < 0.5:
            return [node(depth - 1) for _ in range(RNG.randint(1, 6))]
        return {f"key_{RNG.randint(0, 999)}": node(depth - 1) for _ in range(RNG.randint(1, 6))}

    state = {}
    while len(json.dumps(state)) < size:
        state[f"section_{len(state)}"] = node(5)
    return state


SNAPSHOT_JSON = json.dumps({"type": "MESSAGES_SNAPSHOT", "messages": _messages(300)}, ensure_ascii=False)
SNAPSHOT = decode_event(SNAPSHOT_JSON)
SNAPSHOT_PLAIN = json.loads(SNAPSHOT_JSON)
STATE_JSON = json.dumps({"type": "STATE_SNAPSHOT", "snapshot": _state(100_000)}, ensure_ascii=False)
STATE = decode_event(STATE_JSON)
STATE_PLAIN = json.loads(STATE_JSON)
assert isinstance(SNAPSHOT, MessagesSnapshotEvent) and isinstance(STATE, StateSnapshotEvent)


def _orjson_sse(plain):
    return b"data: " + orjson.dumps(plain) + b"\n\n"


@pytest.mark.parametrize("ours, plain", [(SNAPSHOT, SNAPSHOT_PLAIN), (STATE, STATE_PLAIN)], ids=["snapshot", "state"])
def test_same_json(ours, plain):
    assert json.loads(ENC.encode(ours)[6:-2]) == plain == json.loads(_orjson_sse(plain)[6:-2])


CASES = {"messages_snapshot_300": (SNAPSHOT, SNAPSHOT_PLAIN), "state_snapshot_100k": (STATE, STATE_PLAIN)}


@pytest.mark.parametrize("case", CASES)
def test_encode_large__agui_fast(benchmark, case):
    benchmark.group = f"encode_{case}"
    benchmark(ENC.encode_binary, CASES[case][0])


@pytest.mark.parametrize("case", CASES)
def test_encode_large__orjson(benchmark, case):
    benchmark.group = f"encode_{case}"
    benchmark(_orjson_sse, CASES[case][1])


@pytest.mark.parametrize("case", CASES)
def test_encode_large__msgspec(benchmark, case):
    benchmark.group = f"encode_{case}"
    benchmark(msgspec.json.encode, CASES[case][0])


@pytest.mark.parametrize("case", CASES)
def test_encode_large_str__agui_fast(benchmark, case):
    benchmark.group = f"encode_str_{case}"
    benchmark(ENC.encode, CASES[case][0])


@pytest.mark.parametrize("case", CASES)
def test_encode_large_str__orjson(benchmark, case):
    benchmark.group = f"encode_str_{case}"
    benchmark(lambda plain: _orjson_sse(plain).decode(), CASES[case][1])


def test_proto_encode_messages_snapshot_300__agui_fast(benchmark):
    benchmark.group = "proto_encode_messages_snapshot_300"
    benchmark(proto.encode_protobuf_frame, SNAPSHOT)
