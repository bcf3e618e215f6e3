"""Encoding the reference's pydantic events: ag_ui's EventEncoder vs agui_fast._native.

Run (release build: ``maturin develop --release``):

    pytest benches/bench_encode_pydantic.py --benchmark-only -p no:cacheprovider
    pytest benches/bench_encode_pydantic.py -s -k ratios      # prints the ratios only

Groups: ``small`` (TextMessageContentEvent(message_id="m1", delta="hello")) and ``big``
(MESSAGES_SNAPSHOT with a few hundred messages taken from the vectors). In each group:
ag_ui's ``EventEncoder().encode``, ``_native.encode_sse`` (str) and
``_native.encode_sse_bytes``, and ``msgspec.json.encode`` on an equivalent plain dict as
the floor (what a general-purpose fast encoder takes for the same JSON, with no model
walking at all).
"""

from __future__ import annotations

import json
import timeit
from pathlib import Path

import msgspec
import pydantic
import pytest

import ag_ui.core as core
from ag_ui.encoder import EventEncoder
from agui_fast import _native

VECTORS = Path(__file__).resolve().parent.parent / "tests" / "vectors" / "codec" / "events.jsonl"
ENCODER = EventEncoder()


def _small():
    return core.TextMessageContentEvent(message_id="m1", delta="hello")


def _big(n_messages: int = 300):
    adapter = pydantic.TypeAdapter(core.Event)
    messages = []
    with open(VECTORS, encoding="utf-8") as f:
        for line in f:
            case = json.loads(line)
            if case.get("py_error") or case.get("event") is None:
                continue
            if case["event"].get("type") != "MESSAGES_SNAPSHOT":
                continue
            ev = adapter.validate_python(case["event"])
            messages.extend(ev.messages)
    assert messages, "no MESSAGES_SNAPSHOT vectors"
    out = []
    while len(out) < n_messages:
        out.extend(messages)
    return core.MessagesSnapshotEvent(messages=out[:n_messages])


SMALL = _small()
BIG = _big()
SMALL_DICT = json.loads(_native.dumps(SMALL))
BIG_DICT = json.loads(_native.dumps(BIG))

assert _native.encode_sse(SMALL) == ENCODER.encode(SMALL)
assert _native.encode_sse(BIG) == ENCODER.encode(BIG)
assert msgspec.json.encode(SMALL_DICT) == _native.dumps(SMALL)


@pytest.mark.benchmark(group="small")
def test_small_ag_ui_encoder(benchmark):
    benchmark(ENCODER.encode, SMALL)


@pytest.mark.benchmark(group="small")
def test_small_native_encode_sse(benchmark):
    benchmark(_native.encode_sse, SMALL)


@pytest.mark.benchmark(group="small")
def test_small_native_encode_sse_bytes(benchmark):
    benchmark(_native.encode_sse_bytes, SMALL)


@pytest.mark.benchmark(group="small")
def test_small_msgspec_dict_floor(benchmark):
    benchmark(msgspec.json.encode, SMALL_DICT)


@pytest.mark.benchmark(group="big")
def test_big_ag_ui_encoder(benchmark):
    benchmark(ENCODER.encode, BIG)


@pytest.mark.benchmark(group="big")
def test_big_native_encode_sse(benchmark):
    benchmark(_native.encode_sse, BIG)


@pytest.mark.benchmark(group="big")
def test_big_native_encode_sse_bytes(benchmark):
    benchmark(_native.encode_sse_bytes, BIG)


@pytest.mark.benchmark(group="big")
def test_big_msgspec_dict_floor(benchmark):
    benchmark(msgspec.json.encode, BIG_DICT)


def _best(fn, arg, number):
    return min(timeit.repeat(lambda: fn(arg), number=number, repeat=7)) / number


def test_ratios():
    """Measure all of them in one run and print the ratios (use -s to see them)."""
    rows = []
    for label, ev, d, n in (("small", SMALL, SMALL_DICT, 20000), ("big", BIG, BIG_DICT, 50)):
        ag = _best(ENCODER.encode, ev, max(1, n // 10))
        nat = _best(_native.encode_sse, ev, n)
        natb = _best(_native.encode_sse_bytes, ev, n)
        floor = _best(msgspec.json.encode, d, n)
        rows.append((label, ag, nat, natb, floor))
    print()
    print(f"{'event':6} {'ag_ui':>11} {'encode_sse':>11} {'sse_bytes':>11} {'msgspec':>11} "
          f"{'ag_ui/native':>13} {'native/msgspec':>15}")
    for label, ag, nat, natb, floor in rows:
        print(f"{label:6} {ag*1e6:9.2f}us {nat*1e6:9.2f}us {natb*1e6:9.2f}us {floor*1e6:9.2f}us "
              f"{ag/nat:12.1f}x {nat/floor:14.2f}x")
    small = rows[0]
    # goal: >= 10x on the small event (asserted loosely: shared CI machines are noisy)
    assert small[1] / small[2] >= 5
