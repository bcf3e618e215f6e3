"""Property tests over 10,000 random valid events (issue 14): SSE and protobuf round trips,
the reference encoder's bytes, and chunking invariance of every stream decoder on streams
with bad frames mixed in.

The events come from ``strategies.EventGen`` (seeded, every 1.0 event type, awkward
strings, nested ``Any`` values, optional fields present or absent, extras): a failure names
its seed and reproduces exactly. The batch runs in seconds (a light run takes a quarter of
it); ``-m long`` runs more seeds.
"""

from __future__ import annotations

import functools
import os
import random
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ag_ui.encoder import EventEncoder as RefEncoder

from agui_fast import _native
from agui_fast.core import TextMessageContentEvent
from agui_fast.decoder import ProtoDecoder, SseDecoder, decode_protobuf, decode_sse, iter_protobuf, iter_sse
from agui_fast.encoder import EventEncoder, to_builtins
from agui_fast.errors import DecodeError
from agui_fast.interop import to_ag_ui
from agui_fast.proto import encode_protobuf_frame, encode_protobuf_many

from strategies import EventGen, error_key, natural_loop, normalise
from conftest import examples

N = examples(10_000)  # a light run (another interpreter, the same binary): a quarter
SEEDS = [int(os.environ.get("AGUI_PROPS_SEED", "14"))]
LONG_SEEDS = list(range(100, 108))


@functools.lru_cache(maxsize=4)
def batch(seed: int, *, extras: bool = True) -> list:
    return EventGen(seed, extras=extras).events(N)


# -- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_sse_round_trip_of_10k_events(seed):
    events = batch(seed)
    stream = _native.encode_sse_many(events)
    decoded = decode_sse(stream)
    assert len(decoded) == N
    assert decoded == events
    # Exactly the same bytes again: extras, number spellings (-0.0, 1e16, 5e-324) and
    # strings survive, not only what Struct equality compares.
    assert _native.encode_sse_many(decoded) == stream
    assert decode_sse(stream, raw="dict") == [to_builtins(e) for e in events]


@pytest.mark.parametrize("seed", SEEDS)
def test_protobuf_round_trip_of_10k_events(seed):
    events = batch(seed, extras=False)  # protobuf has no slot for unknown members
    stream = encode_protobuf_many(events)
    assert stream == b"".join(encode_protobuf_frame(e) for e in events[:500]) + encode_protobuf_many(events[500:])
    decoded = decode_protobuf(stream)
    assert len(decoded) == N
    # the mapping's documented losses (numbers are doubles, empty optional lists vanish)
    assert [normalise(to_builtins(e)) for e in decoded] == [normalise(to_builtins(e)) for e in events]
    # and what survives protobuf survives it again unchanged
    assert encode_protobuf_many(decoded) == stream


def test_reference_encoder_bytes_decode_to_the_same_events():
    events = EventGen(7).events(1_000)  # the reference's pydantic models: a sample
    ours, ref = EventEncoder(), RefEncoder()
    texts = [ref.encode(to_ag_ui(e)) for e in events]
    assert texts == [ours.encode(e) for e in events]
    assert decode_sse("".join(texts).encode()) == events


# -- streams with bad frames mixed in ------------------------------------------------------------

BAD_SSE = [
    b"data: {oops\n\n",  # not JSON
    b"data: \n\n",  # empty payload
    b"data: [DONE]\n\n",
    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":5,"delta":"x"}\n\n',  # not a 1.0 event
    b'data: {"type":"NOPE"}\n\n',
    b'data: {"type":"STATE_SNAPSHOT","snapshot":' + b"[" * 600 + b"]" * 600 + b"}\n\n",  # too deep
    b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"\\ud800"}\n\n',  # lone surrogate enum
    b"data: 42\n\n",
]
# Frames a naive parser gets wrong, and the events they are (WHATWG: the stream is decoded
# as UTF-8 with replacement characters; data lines are joined by LF; one leading space goes).
ODD_GOOD_SSE = [
    (b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\xff\xfe"}\n\n', "\ufffd\ufffd"),
    (b'data: {"type":"TEXT_MESSAGE_CONTENT",\ndata: "messageId":"m",\ndata:"delta":"a\\nb"}\n\n', "a\nb"),
    (b'data:{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":" "}\n\n', " "),
]

# Lines that are not data: they move offsets and must not count as frames.
NOISE_SSE = [b": comment\n", b"event: agui\n", b"id: 7\n", b"retry: 100\n", b": \xe2\x80\xa8 x\n", b"\n"]

BAD_PROTO = [
    b"\0\0\0\x03\xff\xff\xff",  # not a message
    bytes.fromhex("0000000e420c0a0208071206086312022f61"),  # STATE_DELTA with op enum 99
    b"\0\0\0\x02\x0a\x00",  # an empty envelope arm
]


def sse_stream(rng, events, n_bad, eol=b"\n"):
    """``(stream, good, bad)``: the events' frames with ``n_bad`` bad frames (and about
    half as many odd but good ones) and some noise lines mixed in; ``good`` are the
    stream's events in order, ``bad`` the ``(frame_index, offset)`` of each bad frame
    (offset: its first data line)."""
    frames = [(_native.encode_sse_bytes(e), e) for e in events]
    for _ in range(n_bad):
        frames.insert(rng.randrange(len(frames) + 1), (rng.choice(BAD_SSE), None))
    for _ in range(n_bad // 2):
        frame, delta = rng.choice(ODD_GOOD_SSE)
        frames.insert(rng.randrange(len(frames) + 1), (frame, TextMessageContentEvent(message_id="m", delta=delta)))
    out, good, bad, pos = [], [], [], 0
    for index, (frame, event) in enumerate(frames):
        if rng.random() < 0.05:
            noise = rng.choice(NOISE_SSE).replace(b"\n", eol)
            out.append(noise)
            pos += len(noise)
        if event is None:
            bad.append((index, pos))
        else:
            good.append(event)
        frame = frame.replace(b"\n", eol)
        out.append(frame)
        pos += len(frame)
    return b"".join(out), good, bad


def proto_stream(rng, events, n_bad):
    frames = [(encode_protobuf_frame(e), True) for e in events]
    for _ in range(n_bad):
        frames.insert(rng.randrange(len(frames) + 1), (rng.choice(BAD_PROTO), False))
    bad, pos = [], 0
    for index, (frame, ok) in enumerate(frames):
        if not ok:
            bad.append((index, pos))
        pos += len(frame)
    return b"".join(f for f, _ in frames), bad


def cut_points(rng, stream, kind):
    """Split positions: random (small and large chunks), inside CRLF pairs, inside UTF-8
    sequences, inside protobuf length prefixes (``frame_starts``)."""
    n = len(stream)
    if kind == "random":
        cuts, pos = [], 0
        while pos < n:
            pos += rng.choice([1, 2, 3, 7, 64, 1000, 4096, 65536, rng.randrange(1, 300_000)])
            cuts.append(min(pos, n))
        return cuts
    if kind == "crlf":
        return [i + 1 for i in range(n - 1) if stream[i : i + 2] == b"\r\n" and rng.random() < 0.5]
    if kind == "utf8":
        return [i for i in range(1, n) if 0x80 <= stream[i] < 0xC0 and rng.random() < 0.3]
    raise ValueError(kind)


def chunks_at(stream, cuts):
    prev, out = 0, []
    for c in sorted(set(cuts)) + [len(stream)]:
        if c > prev:
            out.append(stream[prev:c])
            prev = c
    return out


def one_shot(decode, stream):
    try:
        return decode(stream), []
    except DecodeError as e:
        return e.events, [error_key(x) for x in e.errors]


def check_iterator(it, whole_events, whole_errors):
    """``iter_*`` yields the failing chunk's events, then raises its first error: what it
    yields is a prefix of the stream's events holding every event before that error."""
    got = []
    try:
        for ev in it:
            got.append(ev)
    except DecodeError as e:
        first = whole_errors[0]
        assert error_key(e) == first
        assert [error_key(x) for x in e.errors] == whole_errors[: len(e.errors)]
        assert got == whole_events[: len(got)]
        return len(got)
    assert not whole_errors and got == whole_events
    return len(got)


def check_ground_truth(events, errors, good, bad):
    # every good event delivered exactly once, in order; every bad frame named by its position
    assert events == good
    assert [(fi, off) for _, fi, off, _, _ in errors] == bad


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
@pytest.mark.parametrize("seed", SEEDS)
def test_sse_chunking_invariance_with_bad_frames(seed, eol):
    rng = random.Random(seed)
    stream, good, bad = sse_stream(rng, batch(seed)[: 3_000 if eol != b"\n" else N], 60, eol)
    whole = one_shot(decode_sse, stream)
    check_ground_truth(*whole, good, bad)
    kinds = ["random", "utf8"] + (["crlf"] if eol == b"\r\n" else [])
    for kind in kinds:
        chunks = chunks_at(stream, cut_points(rng, stream, kind))
        assert natural_loop(SseDecoder(), chunks) == whole, kind
        check_iterator(iter_sse(chunks), *whole)
    # one byte at a time (a slice of the stream: 1-byte feeds cost a call per byte)
    head = stream[: 40_000]
    assert natural_loop(SseDecoder(), [head[i : i + 1] for i in range(len(head))]) == natural_loop(SseDecoder(), [head])
    # the dict mode: any JSON is an event there, so only the JSON errors remain
    events, errors = natural_loop(SseDecoder(raw="dict"), chunks_at(stream, cut_points(rng, stream, "random")))
    assert one_shot(lambda s: decode_sse(s, raw="dict"), stream) == (events, errors)
    assert len(events) + len(errors) == len(good) + len(bad) and len(errors) < len(bad)


@pytest.mark.parametrize("seed", SEEDS)
def test_protobuf_chunking_invariance_with_bad_frames(seed):
    rng = random.Random(seed)
    good = batch(seed, extras=False)
    stream, bad = proto_stream(rng, good, 60)
    expected = decode_protobuf(encode_protobuf_many(good))
    whole = one_shot(decode_protobuf, stream)
    check_ground_truth(*whole, expected, bad)
    starts, pos = [], 0
    while pos < len(stream):
        starts.append(pos)
        pos += 4 + int.from_bytes(stream[pos : pos + 4], "big")
    prefix_cuts = [s + rng.randrange(1, 4) for s in starts if rng.random() < 0.3]
    for cuts in (cut_points(rng, stream, "random"), cut_points(rng, stream, "utf8"), prefix_cuts):
        chunks = chunks_at(stream, cuts)
        assert natural_loop(ProtoDecoder(), chunks) == whole
        check_iterator(iter_protobuf(chunks), *whole)
    head = stream[: starts[min(300, len(starts) - 1)]]
    assert natural_loop(ProtoDecoder(), [head[i : i + 1] for i in range(len(head))]) == natural_loop(ProtoDecoder(), [head])
    # a stream cut inside its last frame: the same TruncatedStreamError, however cut
    cut = stream[: starts[-1] + 2]
    whole_cut = one_shot(decode_protobuf, cut)
    assert whole_cut[1][-1][0].__name__ == "TruncatedStreamError"
    assert natural_loop(ProtoDecoder(), chunks_at(cut, cut_points(rng, cut, "random"))) == whole_cut


def test_a_later_versions_frames_are_skipped_whatever_the_chunking():
    rng = random.Random(3)
    good = EventGen(3, extras=False).events(500)
    future = b"\0\0\0\x03\xa2\x06\x00"  # an envelope holding only an unknown arm (field 100)
    frames = [encode_protobuf_frame(e) for e in good]
    for _ in range(20):
        frames.insert(rng.randrange(len(frames)), future)
    stream = b"".join(frames)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = one_shot(decode_protobuf, stream)
        assert whole == (decode_protobuf(encode_protobuf_many(good)), [])
        for _ in range(5):
            dec = ProtoDecoder()
            assert natural_loop(dec, chunks_at(stream, cut_points(rng, stream, "random"))) == whole
            assert dec.skipped_frames == 20


# -- the same, hypothesis-driven (a failure shrinks to a few frames and cuts) ----------------------


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False), st.integers(1, 30), st.integers(0, 6), st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_error_recovery_of_random_good_and_bad_mixes(rng, n_good, n_bad, eol):
    stream, good, bad = sse_stream(rng, EventGen(rng.randrange(1 << 30)).events(n_good), n_bad, eol)
    chunks = chunks_at(stream, [rng.randrange(len(stream) + 1) for _ in range(rng.randrange(8))])
    check_ground_truth(*natural_loop(SseDecoder(), chunks), good, bad)
    assert one_shot(decode_sse, stream) == natural_loop(SseDecoder(), chunks)
    good = EventGen(rng.randrange(1 << 30), extras=False).events(n_good)
    stream, bad = proto_stream(rng, good, n_bad)
    chunks = chunks_at(stream, [rng.randrange(len(stream) + 1) for _ in range(rng.randrange(8))])
    whole = natural_loop(ProtoDecoder(), chunks)
    check_ground_truth(*whole, decode_protobuf(encode_protobuf_many(good)), bad)
    assert one_shot(decode_protobuf, stream) == whole


# -- long variants (``pytest -m long``): more seeds ------------------------------------------------


@pytest.mark.long
@pytest.mark.parametrize("seed", LONG_SEEDS)
def test_long_round_trips_and_chunking(seed):
    test_sse_round_trip_of_10k_events(seed)
    test_protobuf_round_trip_of_10k_events(seed)
    test_sse_chunking_invariance_with_bad_frames(seed, b"\r\n")
    test_protobuf_chunking_invariance_with_bad_frames(seed)
