"""Round trip: random valid events → our SSE encoder → random chunks → SseDecoder."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings, strategies as st

from agui_fast import _native
from agui_fast.sse import SseDecoder, decode_sse

from strategies import events
from conftest import examples


def _same(a, b) -> bool:
    # Compare through JSON values (floats such as -0.0 compare as numbers).
    return msgspec.to_builtins(a) == msgspec.to_builtins(b)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(events, min_size=1, max_size=8), st.lists(st.integers(0, 10_000), max_size=6), st.booleans())
def test_encode_decode_round_trip(evs, cuts, crlf):
    stream = _native.encode_sse_many(evs)
    if crlf:
        # Same events with CRLF line ends (JSON text never holds a raw CR or LF).
        stream = stream.replace(b"\n", b"\r\n")
    whole = decode_sse(stream)
    assert len(whole) == len(evs)
    assert all(_same(a, b) for a, b in zip(whole, evs))
    cuts = sorted({c % (len(stream) + 1) for c in cuts})
    dec, got, prev = SseDecoder(), [], 0
    for c in cuts + [len(stream)]:
        got.extend(dec.feed(stream[prev:c]))
        prev = c
    got.extend(dec.close())
    assert got == whole
