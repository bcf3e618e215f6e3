"""SSE decoding: the recorded reference streams (recorded and random chunkings), the
events.jsonl SSE payloads, raw modes, errors, limits, iterators and the async adapter."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import random

import pytest

from agui_fast import _native
from agui_fast.errors import (
    BufferLimitError,
    DecodeError,
    EventValidationError,
    InvalidJsonError,
)
from agui_fast.sse import SseDecoder, aiter_sse, decode_sse, iter_sse
from conftest import examples, load_jsonl



STREAMS = load_jsonl("codec/sse_streams.jsonl")
EVENTS = load_jsonl("codec/events.jsonl")


def _typed_available() -> bool:
    try:
        from agui_fast import decoder  # noqa: F401
        from agui_fast.core import Event  # noqa: F401
    except ImportError:
        return False
    return True


TYPED = _typed_available()
needs_typed = pytest.mark.skipif(not TYPED, reason="agui_fast.core/decoder not merged yet")


# -- an independent model of the expected result --------------------------------------


def _spec_events(stream: bytes):
    """A small pure-Python WHATWG parser (plus the final-event rule), used to derive the
    expected events where the reference fails on CRLF / CR line ends. Returns
    (values, error_happened)."""
    text = stream.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    out, data, has = [], [], False
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if line == "":
            if not last and has:
                payload = "\n".join(data)
                try:
                    out.append(json.loads(payload))
                except ValueError:
                    return out, True
            if not last:
                data, has = [], False
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
            has = True
    if has:
        try:
            out.append(json.loads("\n".join(data)))
        except ValueError:
            return out, True
    return out, False


def _norm(v):
    """JSON values as the TypeScript reference sees them: numbers as doubles."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        f = float(v)
        return None if math.isinf(f) else f
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return {k: _norm(x) for k, x in v.items()}


def _expected(case):
    """(events, error_expected) for a stream case, per this project's rules."""
    stream = base64.b64decode(case["stream_b64"])
    if case["name"].startswith("crlf/"):
        # Deviation: the reference finds no boundary in CRLF / CR-only streams; we parse
        # them per the specification.
        return _spec_events(stream)
    return case["events"], case["error"] is not None


def _chunk(stream: bytes, sizes):
    pos = 0
    for n in sizes:
        yield stream[pos : pos + n]
        pos += n
    assert pos == len(stream)


def _random_sizes(n: int, rng: random.Random):
    sizes, left = [], n
    top = 4096 if n > 20000 else max(1, min(n, 64))
    while left > 0:
        k = rng.randint(0, top)
        k = min(k, left)
        sizes.append(k)
        left -= k
    return sizes


def _feed_all(stream: bytes, sizes, **kw):
    """The natural loop of the error contract (keep ``e.events``, go on feeding); returns
    (events, first error or None, every error)."""
    dec = SseDecoder(**kw)
    got, errors = [], []
    for c in [*_chunk(stream, sizes), None]:
        try:
            got.extend(dec.close() if c is None else dec.feed(c))
        except DecodeError as e:
            got.extend(e.events)
            errors.extend(e.errors)
            if isinstance(e, BufferLimitError):
                break  # the stream cannot go on: the decoder stays failed
    return got, (errors[0] if errors else None), errors


@pytest.mark.parametrize("case", STREAMS, ids=[c["name"] for c in STREAMS])
def test_reference_streams_dict_mode(case):
    stream = base64.b64decode(case["stream_b64"])
    expected, should_fail = _expected(case)
    rng = random.Random(case["name"])
    chunkings = [case["chunk_sizes"]] + [_random_sizes(len(stream), rng) for _ in range(3)]
    outcomes = []
    for sizes in chunkings:
        got, err, errors = _feed_all(stream, sizes, raw="dict")
        # The reference stops at a bad frame; we deliver the frames after it too.
        assert _norm(got)[: len(expected)] == _norm(expected)
        assert (err is not None) == should_fail, err
        if err is not None:
            assert isinstance(err, InvalidJsonError)
            assert err.frame_index == len(expected)
            assert isinstance(err.offset, int) and 0 <= err.offset <= len(stream)
        else:
            assert len(got) == len(expected)
        outcomes.append((_norm(got), [(e.frame_index, e.offset) for e in errors]))
    assert all(o == outcomes[0] for o in outcomes)  # chunking-independent
    # Whole buffer: the same events and errors.
    try:
        got, errors = decode_sse(stream, raw="dict"), []
    except DecodeError as e:
        got, errors = e.events, e.errors
    assert (_norm(got), [(e.frame_index, e.offset) for e in errors]) == outcomes[0]


@pytest.mark.parametrize(
    "case",
    [c for c in STREAMS if c["name"].startswith(("framing/", "data/", "bom/", "utf8", "errors/"))],
    ids=lambda c: c["name"],
)
def test_reference_streams_bytes_mode(case):
    stream = base64.b64decode(case["stream_b64"])
    expected, should_fail = _expected(case)
    got, err, _ = _feed_all(stream, case["chunk_sizes"], raw="bytes")
    assert all(isinstance(x, bytes) for x in got)
    assert _norm([json.loads(x) for x in got])[: len(expected)] == _norm(expected)
    assert (err is not None) == should_fail


def test_spec_model_agrees_with_reference():
    """The helper parser used for the CRLF cases reproduces every LF-only case."""
    for case in STREAMS:
        if case["name"].startswith("crlf/"):
            continue
        got, failed = _spec_events(base64.b64decode(case["stream_b64"]))
        assert _norm(got) == _norm(case["events"]), case["name"]
        assert failed == (case["error"] is not None), case["name"]


def test_crlf_deviation_documented_cases():
    by_name = {c["name"]: c for c in STREAMS}
    for name in ("crlf/two_events", "crlf/cr_only"):
        case = by_name[name]
        assert case["error_kind"] == "json"  # the reference fails ...
        got = decode_sse(base64.b64decode(case["stream_b64"]), raw="dict")
        assert len(got) == 2  # ... we follow the specification
        assert got[0] == got[1] or got[0]["type"] == "TEXT_MESSAGE_CONTENT"


@pytest.mark.parametrize("field", ["sse", "py_sse"])
def test_events_jsonl_payloads_decode_raw(field):
    stream = bytearray()
    expected = []
    for case in EVENTS:
        sse = case.get(field)
        if sse is None:
            continue
        stream += sse.encode("utf-8")
        expected.append(json.loads(sse[len("data: ") : -2]))
        # Each event alone, too.
        assert decode_sse(sse.encode("utf-8"), raw="dict") == [expected[-1]]
    assert decode_sse(bytes(stream), raw="dict") == expected
    assert [json.loads(b) for b in decode_sse(bytes(stream), raw="bytes")] == expected


@needs_typed
@pytest.mark.parametrize("field", ["sse", "py_sse"])
def test_events_jsonl_payloads_decode_typed(field):
    from agui_fast.decoder import decode_event

    stream = bytearray()
    expected = []
    for case in EVENTS:
        sse = case.get(field)
        if sse is None:
            continue
        data = sse.encode("utf-8")
        stream += data
        one = decode_sse(data)
        assert len(one) == 1, case["name"]
        expected.append(one[0])
        assert one[0] == decode_event(data[len(b"data: ") : -2]), case["name"]
    got = decode_sse(bytes(stream))
    assert got == expected
    # Incrementally, in odd chunk sizes.
    dec = SseDecoder()
    inc = []
    for i in range(0, len(stream), 7777):
        inc.extend(dec.feed(bytes(stream[i : i + 7777])))
    inc.extend(dec.close())
    assert inc == expected


@needs_typed
@pytest.mark.parametrize(
    "case",
    [c for c in STREAMS if c["error"] is None and not c["name"].startswith(("data/json_scalars", "data/event_without_type"))],
    ids=lambda c: c["name"],
)
def test_reference_streams_typed(case):
    from agui_fast.decoder import decode_event

    stream = base64.b64decode(case["stream_b64"])
    expected, _ = _expected(case)
    got, err, _ = _feed_all(stream, case["chunk_sizes"])
    assert err is None, err
    assert len(got) == len(expected)
    assert decode_sse(stream) == got
    rng = random.Random(case["name"])
    assert _feed_all(stream, _random_sizes(len(stream), rng))[:2] == (got, None)
    # The same events as decoding each expected value on its own.
    for ev, exp in zip(got, expected):
        assert ev == decode_event(json.dumps(exp).encode())


@needs_typed
def test_typed_non_object_frame_raises_validation_error():
    with pytest.raises(EventValidationError) as ei:
        decode_sse(b"data: 42\n\n")
    assert ei.value.frame_index == 0 and ei.value.offset == 0


@needs_typed
def test_typed_validation_error_names_field_and_keeps_events():
    good = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}\n\n'
    bad = (
        b'data: {"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"nope","content":"x"}]}\n\n'
    )
    dec = SseDecoder()
    first = dec.feed(good)
    assert len(first) == 1
    with pytest.raises(EventValidationError) as ei:
        dec.feed(good + bad + good)
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.frame_index == 2
    assert e.offset == 2 * len(good)
    assert e.field and "messages" in e.field
    # Every event of the call, also the one after the bad frame; nothing is queued.
    assert len(e.events) == 2 and e.errors == [e]
    assert dec.close() == []


# -- raw modes, errors ---------------------------------------------------------------


def test_raw_dict_yields_any_json():
    assert decode_sse(b"data: 42\n\ndata: \"s\"\n\ndata: null\n\ndata: [1]\n\n", raw="dict") == [
        42,
        "s",
        None,
        [1],
    ]


def test_invalid_json_error_attributes():
    s = b'data: {"a":1}\n\n: c\nevent: x\ndata: {not json}\n\ndata: {"b":2}\n\n'
    for raw in ("dict", "bytes"):
        with pytest.raises(InvalidJsonError) as ei:
            decode_sse(s, raw=raw)
        e = ei.value
        assert isinstance(e, DecodeError) and isinstance(e, ValueError)
        assert e.frame_index == 1
        assert e.offset == s.index(b"data: {not")
        assert len(e.events) == 2
        assert "frame 1" in str(e)


def test_error_keeps_events_and_decoder_continues():
    dec = SseDecoder(raw="dict")
    assert dec.feed(b'data: {"a":1}\n\n') == [{"a": 1}]
    with pytest.raises(InvalidJsonError) as ei:
        dec.feed(b'data: {"a":2}\n\ndata: [DONE]\n\ndata: {"a":3}\n\ndata: {"a"')
    assert ei.value.events == [{"a": 2}, {"a": 3}]  # also the frame after the bad one
    assert ei.value.frame_index == 2
    # The decoder goes on; nothing was queued.
    assert dec.feed(b":4}\n\n") == [{"a": 4}]
    assert dec.close() == []


def test_two_bad_frames_in_one_chunk():
    """One error per call carries all of the call's errors and events (issue 14 #3)."""
    dec = SseDecoder(raw="dict")
    with pytest.raises(InvalidJsonError) as ei:
        dec.feed(b"data: x\n\ndata: y\n\ndata: 1\n\n")
    assert ei.value.frame_index == 0
    assert [e.frame_index for e in ei.value.errors] == [0, 1]
    assert ei.value.events == [1]
    assert dec.feed(b"") == [] and dec.close() == []


def test_empty_data_is_invalid_json():
    with pytest.raises(InvalidJsonError):
        decode_sse(b"data:\n\n", raw="dict")


@pytest.mark.filterwarnings("ignore:max_buffer_size is deprecated:DeprecationWarning")  # the old name, on purpose
def test_buffer_limit():
    big = b"data: " + b'"' + b"x" * 100 + b'"' + b"\n\n"
    with pytest.raises(BufferLimitError) as ei:
        decode_sse(b"data: 1\n\n" + big, raw="dict", max_buffer_size=50)
    e = ei.value
    assert isinstance(e, DecodeError) and isinstance(e, ValueError)
    assert e.events == [1]
    assert e.frame_index == 1 and e.offset == 9
    # Streaming: raised as soon as the buffered event exceeds the limit.
    dec = SseDecoder(raw="dict", max_buffer_size=50)
    assert dec.feed(b"data: 1\n\ndata: ") == [1]
    dec.feed(b"x" * 40)
    with pytest.raises(BufferLimitError):
        dec.feed(b"x" * 40)
    with pytest.raises(BufferLimitError):  # stays failed
        dec.feed(b"\n\n")
    # Default is 10 MiB, like the reference.
    from agui_fast.sse import DEFAULT_MAX_FRAME_SIZE

    assert DEFAULT_MAX_FRAME_SIZE == 10 * 1024 * 1024
    # Exactly at the limit is allowed.
    line = b"data: " + b"1" * 44
    assert decode_sse(line + b"\n\n", raw="bytes", max_buffer_size=50) == [b"1" * 44]


def test_last_event_id_and_retry():
    dec = SseDecoder(raw="dict")
    dec.feed(b"retry: 2500\nid: ev-1\nevent: agui\ndata: 1\n\n")
    assert dec.last_event_id == "ev-1" and dec.retry == 2500
    dec.feed(b"data: 2\n\nid: ev-2\n")
    assert dec.last_event_id == "ev-1"
    dec.feed(b"data: 3\n\n")
    assert dec.last_event_id == "ev-2"


def test_line_endings_and_bom_and_utf8_split():
    lf = b'\xef\xbb\xbfdata: {"d":"\xf0\x9f\x98\x80\xe2\x82\xac"}\n\n: c\ndata: 2\n\n'
    expected = [{"d": "\U0001F600\u20ac"}, 2]
    for variant in (lf, lf.replace(b"\n", b"\r\n"), lf.replace(b"\n", b"\r")):
        assert decode_sse(variant, raw="dict") == expected
        for k in range(len(variant) + 1):
            got, err, _ = _feed_all(variant, [k, len(variant) - k], raw="dict")
            assert err is None and got == expected, (variant, k)
        got, err, _ = _feed_all(variant, [1] * len(variant), raw="dict")
        assert got == expected


def test_invalid_utf8_replaced():
    got = decode_sse(b'data: {"d":"a\xff\xc3(b"}\n\n', raw="dict")
    assert got == [{"d": "a\ufffd\ufffd(b"}]
    assert decode_sse(b'data: "a\xffb"\n\n', raw="bytes") == ['"a\ufffdb"'.encode()]


def test_final_event_without_blank_line():
    assert decode_sse(b"data: 1\n\ndata: 2", raw="dict") == [1, 2]
    dec = SseDecoder(raw="dict")
    assert dec.feed(b"data: 1\n\ndata: 2") == [1]
    assert dec.close() == [2]
    with pytest.raises(ValueError):
        dec.feed(b"data: 3\n\n")


def test_bad_mode():
    with pytest.raises(ValueError):
        SseDecoder(raw="json")


def test_bytes_like_inputs():
    s = b"data: 1\n\n"
    assert decode_sse(bytearray(s), raw="dict") == [1]
    assert decode_sse(memoryview(s), raw="dict") == [1]
    dec = SseDecoder(raw="dict")
    assert dec.feed(bytearray(s)) + dec.feed(memoryview(s)) == [1, 1]


def test_merged_frames_are_not_confused():
    """`[1` and `2]` must not decode as one element `[1,2]` of the joined array."""
    with pytest.raises(InvalidJsonError) as ei:
        decode_sse(b"data: [1\n\ndata: 2]\n\n", raw="dict")
    assert ei.value.frame_index == 0
    with pytest.raises(InvalidJsonError):
        decode_sse(b'data: "a\n\ndata: b"\n\n', raw="bytes")
    with pytest.raises(InvalidJsonError) as ei:
        decode_sse(b"data: 1,2\n\ndata: [3\n\ndata: 4]\n\n", raw="dict")
    assert ei.value.frame_index == 0


def test_json_edge_cases():
    # Valid JSON msgspec refuses but the reference reads.
    assert decode_sse(b'data: 1e400\n\ndata: "\\ud800"\n\n', raw="dict") == [float("inf"), "\ud800"]
    # Not JSON.
    for bad in (b"data: NaN\n\n", b"data: Infinity\n\n", b"data: {'a': 1}\n\n"):
        for raw in ("dict", "bytes") + ((None,) if TYPED else ()):
            with pytest.raises(InvalidJsonError):
                decode_sse(bad, raw=raw)
    # NaN / Infinity inside an event: typed decoding reads them where the reference's
    # pydantic does (a value of any type), refuses them in a number field; the plain
    # modes refuse them.
    nan_value = b'data: {"type":"CUSTOM","name":"x","value":[NaN,-Infinity]}\n\n'
    nan_field = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r","timestamp":NaN}\n\n'
    if TYPED:
        (event,) = decode_sse(nan_value)
        assert math.isnan(event.value[0]) and event.value[1] == -math.inf
        with pytest.raises(InvalidJsonError):
            decode_sse(nan_field)
    for raw in ("dict", "bytes"):
        for bad in (nan_value, nan_field):
            with pytest.raises(InvalidJsonError):
                decode_sse(bad, raw=raw)
    # An escaped unpaired surrogate in an event (JSON.parse reads it; pydantic refuses).
    split = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\\ud83d"}\n\n'
    assert decode_sse(split, raw="dict")[0]["delta"] == "\ud83d"
    if TYPED:
        assert decode_sse(split)[0].delta == "\ud83d"
    # Nesting deeper than the JSON parsers allow: still one of our errors.
    for payload in (b"[" * 5000 + b"]" * 5000, b"[" * 100000):
        for raw in ("dict", "bytes") + ((None,) if TYPED else ()):
            with pytest.raises(DecodeError):
                decode_sse(b"data: " + payload + b"\n\n", raw=raw)


def test_only_project_exceptions_on_garbage():
    rng = random.Random(7)
    alphabet = [b"data:", b" ", b"\n", b"\r", b"{", b"}", b"[", b"]", b'"', b":", b",", b"1", b"\xff", b"\xef\xbb\xbf", b"id:", b"null", b"\\"]
    for _ in range(300):
        s = b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        for raw in ("dict", "bytes") + ((None,) if TYPED else ()):
            try:
                decode_sse(s, raw=raw)
            except DecodeError:
                pass


# -- iterators -----------------------------------------------------------------------


def _stream_of(n):
    return b"".join(
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"%d"}\n\n' % i for i in range(n)
    )


def test_iter_sse_path_file_and_iterable(tmp_path):
    s = _stream_of(500)
    p = tmp_path / "log.sse"
    p.write_bytes(s)
    expected = decode_sse(s, raw="dict")
    assert list(iter_sse(p, raw="dict", chunk_size=333)) == expected
    assert list(iter_sse(str(p), raw="dict")) == expected
    with open(p, "rb") as f:
        assert list(iter_sse(f, raw="dict", chunk_size=1000)) == expected
    assert list(iter_sse(io.BytesIO(s), raw="dict", chunk_size=7)) == expected
    assert list(iter_sse([s[:100], s[100:]], raw="dict")) == expected


def test_iter_sse_error_yields_the_chunks_events_first(tmp_path):
    p = tmp_path / "bad.sse"
    p.write_bytes(b"data: 1\n\ndata: 2\n\ndata: oops\n\ndata: 3\n\n")
    got = []
    with pytest.raises(InvalidJsonError) as ei:
        for ev in iter_sse(p, raw="dict"):
            got.append(ev)
    assert got == [1, 2, 3]  # every event of the failing chunk, then the error
    assert ei.value.frame_index == 2
    got = []
    with pytest.raises(InvalidJsonError):
        for ev in iter_sse(p, raw="dict", chunk_size=15):
            got.append(ev)
    assert got == [1, 2]  # the chunk holding the bad frame ends the iteration


def test_aiter_sse():
    s = _stream_of(100)

    async def chunks():
        for i in range(0, len(s), 37):
            await asyncio.sleep(0)
            yield s[i : i + 37]

    async def collect(**kw):
        return [ev async for ev in aiter_sse(chunks(), **kw)]

    assert asyncio.run(collect(raw="dict")) == decode_sse(s, raw="dict")
    assert asyncio.run(collect(raw="bytes")) == decode_sse(s, raw="bytes")

    async def bad():
        yield b"data: 1\n\ndata: {"
        yield b"\n\n"

    async def collect_bad():
        got = []
        with pytest.raises(InvalidJsonError):
            async for ev in aiter_sse(bad(), raw="dict"):
                got.append(ev)
        return got

    assert asyncio.run(collect_bad()) == [1]


def test_aiter_sse_takes_what_iter_sse_takes(tmp_path):
    """Every source of ``iter_sse`` (bytes-likes, a path as str or PathLike, a binary file
    object, an iterable of bytes or str chunks) gives ``aiter_sse`` the same events, with
    ``chunk_size`` too; async iterables of str chunks are encoded as sync ones are."""
    s = _stream_of(50)
    p = tmp_path / "run.sse"
    p.write_bytes(s)
    text = s.decode()
    sources = [
        lambda: s, lambda: bytearray(s), lambda: memoryview(s), lambda: str(p), lambda: p,
        lambda: open(p, "rb"), lambda: io.BytesIO(s), lambda: [s[:40], s[40:]],
        lambda: iter([text[:40], text[40:]]),
    ]

    async def achunks():
        yield text[:40]
        yield s[40:].decode()

    async def collect(src, **kw):
        return [ev async for ev in aiter_sse(src, raw="dict", **kw)]

    want = decode_sse(s, raw="dict")
    for make in sources:
        assert asyncio.run(collect(make(), chunk_size=33)) == list(iter_sse(make(), raw="dict", chunk_size=33)) == want
    assert asyncio.run(collect(achunks())) == want
    with pytest.raises(ValueError, match="chunk_size"):
        aiter_sse(s, chunk_size=0)


def test_native_decoder_state_and_test_helpers():
    dec = SseDecoder(raw="dict")
    assert dec.feed(b"data: 1\n\ndata: [2]\n\nda") == [1, [2]]
    assert dec.frame_count == 2 and dec.position == 22
    assert dec.close() == [] and dec.close() == []
    with pytest.raises(ValueError, match="after close"):
        dec.feed(b"data: 3\n\n")
    assert _native._testing.sse_event(b'{"a":\n1}') == b'data: {"a":\ndata: 1}\n\n'


# -- property: chunking never changes the result --------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

_PIECES = [b"data:", b"data: ", b"{", b"}", b'"a"', b":", b"1", b",", b"[", b"]", b"\n", b"\r", b"\r\n",
           b": c", b"id: 7", b"event: e", b"retry: 5", b"\xef\xbb\xbf", b"\xf0\x9f\x98\x80", b"\xe2\x82", b"\xff"]


def _outcome(chunks, **kw):
    got, _, errors = _feed_all(b"".join(chunks), [len(c) for c in chunks], **kw)
    return got, [(type(e), e.frame_index, e.offset) for e in errors]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40), st.lists(st.integers(0, 200), max_size=8))
def test_chunking_invariance(pieces, cuts):
    stream = b"".join(pieces)
    cuts = sorted({c % (len(stream) + 1) for c in cuts})
    chunks, prev = [], 0
    for c in cuts + [len(stream)]:
        chunks.append(stream[prev:c])
        prev = c
    for raw in ("dict", "bytes"):
        whole = _outcome([stream], raw=raw)
        assert _outcome(chunks, raw=raw) == whole
        # The whole-buffer function agrees with feeding: same events, same errors.
        try:
            events, errs = decode_sse(stream, raw=raw), []
        except DecodeError as e:
            events, errs = e.events, [(type(x), x.frame_index, x.offset) for x in e.errors]
        assert (events, errs) == whole


@needs_typed
def test_bulk_resume_around_slow_frames_and_errors():
    """Frames needing the exact path (unknown members), legacy frames and a bad frame in
    one batch: the result equals frame-by-frame decoding and the error is located."""
    from agui_fast.decoder import decode_event

    good = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"%d"}'
    extra = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x","zzz - at `$[0]`":1}'
    lone = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\\ud800"}'
    thinking = b'{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"t"}'
    bad = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":5,"delta":"x"}'
    frames = []
    for i in range(300):
        frames.append(good % i)
        if i % 7 == 3:
            frames.append(extra)
        if i % 11 == 5:
            frames.append(lone)
        if i % 13 == 6:
            frames.append(thinking)
    stream = b"".join(b"data: " + f + b"\n\n" for f in frames)
    got = decode_sse(stream)
    assert len(got) == len(frames)
    for f, ev in zip(frames, got):
        if f is thinking:
            assert ev.type.value == "REASONING_MESSAGE_CONTENT"
        else:
            assert ev == decode_event(f)
    # A bad frame in the middle: located, every other event delivered with the error.
    k = 250
    with_bad = frames[:k] + [bad] + frames[k:]
    stream = b"".join(b"data: " + f + b"\n\n" for f in with_bad)
    dec = SseDecoder()
    with pytest.raises(EventValidationError) as ei:
        dec.feed(stream)
    e = ei.value
    assert e.frame_index == k and e.field == "$.messageId"
    assert stream[e.offset :].startswith(b"data: " + bad)
    assert len(e.events) == len(frames)
    assert dec.close() == []


@pytest.mark.parametrize("legacy", [True, False])
def test_modes_with_and_without_legacy(legacy):
    s = b"".join(b'data: {"type":"RAW","event":%d,"rawEvent":null}\n\n' % i for i in range(600))
    assert decode_sse(s, raw="bytes", legacy=legacy) == [
        b'{"type":"RAW","event":%d,"rawEvent":null}' % i for i in range(600)
    ]
    dicts = decode_sse(s, raw="dict", legacy=legacy)
    assert dicts[7] == ({"type": "RAW", "event": 7} if legacy else {"type": "RAW", "event": 7, "rawEvent": None})


def test_aiter_sse_with_httpx_stream():
    """The adapter on a real `httpx` response body (mock transport, chunked content)."""
    httpx = pytest.importorskip("httpx")
    body = _stream_of(300)

    async def content():
        for i in range(0, len(body), 101):
            yield body[i : i + 101]

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content())

    async def run():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            async with client.stream("GET", "http://agent.invalid/run") as resp:
                return [ev async for ev in aiter_sse(resp.aiter_bytes(), raw="dict")]

    assert asyncio.run(run()) == decode_sse(body, raw="dict")


@needs_typed
def test_invalid_events_agree_with_decode_event():
    """invalid_events.jsonl through SSE: the stream decoder accepts or rejects each frame
    exactly like decode_event (legacy off: a pure typing question), with the frame
    located; all of them together in one stream fail at the first rejected frame."""
    from agui_fast.decoder import decode_event

    cases = [c for c in load_jsonl("codec/invalid_events.jsonl") if c.get("sse")]
    assert cases
    for case in cases:
        data = case["sse"].encode("utf-8")
        payload = data[len(b"data: ") : -2]
        try:
            expected, exp_err = [decode_event(payload)], None
        except DecodeError as e:
            expected, exp_err = None, e
        try:
            got, err = decode_sse(data, legacy=False), None
        except DecodeError as e:
            got, err = None, e
        assert (err is None) == (exp_err is None), case["name"]
        if err is None:
            assert got == expected, case["name"]
        else:
            assert type(err) is type(exp_err), case["name"]
            assert (err.frame_index, err.offset, err.field) == (0, 0, exp_err.field), case["name"]
    # All in one stream, decoded through the bulk path and its fallback: one error for
    # the call, carrying every rejected frame and every accepted event.
    stream = b"".join(c["sse"].encode("utf-8") for c in cases)
    rejected = []
    for i, c in enumerate(cases):
        try:
            decode_event(c["sse"].encode("utf-8")[len(b"data: ") : -2])
        except DecodeError:
            rejected.append(i)
    dec = SseDecoder(legacy=False)
    with pytest.raises(DecodeError) as ei:
        dec.feed(stream)
    assert [e.frame_index for e in ei.value.errors] == rejected
    assert len(ei.value.events) == len(cases) - len(rejected)
    assert dec.close() == []


# Numbers with huge exponents: msgspec parses them on a slow exact path, so a batch
# with enough of them is decoded with Python's float() as the float parser instead
# (SseBatch.float_hook). Either way the values must be the reference's.
HARD_NUMBERS = ["1.5e+300", "1.7976931348623157e+308", "5e-324", "-1E300", "1e400", "-1e400", "1e-400", "2.5e-320"]


def _hard_stream(extra_plain_floats: int) -> bytes:
    frames = []
    for i, num in enumerate(HARD_NUMBERS):
        value = "[" + ",".join([num, "0.1", "-0.0", "3"] + ["1.25"] * extra_plain_floats) + "]"
        frames.append(
            '{"type":"CUSTOM","name":"n%d","value":%s,"rawEvent":{"x":%s,"s":"1e999 in a string"}}'
            % (i, value, num)
        )
    return "".join(f"data: {f}\n\n" for f in frames).encode()


@pytest.mark.parametrize("plain", [0, 5000])
def test_huge_exponents_decode_like_the_reference(plain):
    import ag_ui.core as ref
    import pydantic

    # Few hard numbers among many ordinary floats: msgspec's own parser is used (the
    # choice is Batch::prefer_float_hook, tested in the core crate); same values.
    log = _hard_stream(plain)
    adapter = pydantic.TypeAdapter(ref.Event)
    payloads = [line[6:] for line in log.decode().split("\n\n") if line]
    want = [adapter.validate_json(p) for p in payloads]
    typed = decode_sse(log)
    dicts = decode_sse(log, raw="dict")
    for got, d, w in zip(typed, dicts, want):
        for a, b in ((got.value, w.value), (got.raw_event["x"], w.raw_event["x"]), (d["value"], w.value)):
            a = a if isinstance(a, list) else [a]
            b = b if isinstance(b, list) else [b]
            assert len(a) == len(b)
            for x, y in zip(a, b):
                assert type(x) is type(y)
                assert x == y and math.copysign(1, x) == math.copysign(1, y)
    # Chunked feeding takes the same decision per chunk and gives the same events.
    dec = SseDecoder()
    out = []
    for i in range(0, len(log), 97):
        out.extend(dec.feed(log[i : i + 97]))
    out.extend(dec.close())
    assert out == typed


def test_dict_mode_after_a_failed_bulk_call_keeps_legacy_conversion_and_order():
    """Dict mode: a bad frame makes the bulk call fail; the frames are then decoded one
    by one, legacy candidates still converted in stream order (ids stay consistent)."""
    frames = []
    for i in range(400):
        if i % 50 == 10:
            frames.append(b'{"type":"THINKING_TEXT_MESSAGE_START"}')
            frames.append(b'{"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"t%d"}' % i)
            frames.append(b'{"type":"THINKING_TEXT_MESSAGE_END"}')
        frames.append(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"%d","rawEvent":null}' % i)
    bad_at = 300
    with_bad = frames[:bad_at] + [b'{"type": nope}'] + frames[bad_at:]
    stream = b"".join(b"data: " + f + b"\n\n" for f in with_bad)
    clean = decode_sse(b"".join(b"data: " + f + b"\n\n" for f in frames), raw="dict")
    dec = SseDecoder(raw="dict")
    with pytest.raises(InvalidJsonError) as ei:
        dec.feed(stream)
    assert ei.value.frame_index == bad_at
    rest = dec.close()
    got = list(ei.value.events) + rest

    def ids_normalised(events):
        # Generated reasoning ids are random: compare their pattern, not their value.
        seen: dict = {}
        return [
            {k: (seen.setdefault(v, len(seen)) if k == "messageId" and e["type"].startswith("REASONING") else v) for k, v in e.items()}
            for e in events
        ]

    assert ids_normalised(got) == ids_normalised(clean)
    assert len({e["messageId"] for e in got if e["type"].startswith("REASONING")}) == 8
    assert not any(str(d.get("type", "")).startswith("THINKING_") for d in got)
    assert all("rawEvent" not in d for d in got if d["type"] == "TEXT_MESSAGE_CONTENT")


# -- big inputs: many batches, frames cut at every kind of boundary --------------------


def _big_stream(n: int, bad_at: int = -1) -> bytes:
    frames = []
    for i in range(n):
        if i == bad_at:
            frames.append(b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":5,"delta":"x"}\n\n')
        # CRLF line ends and multi-line data on some frames, ids on others: every kind
        # of frame ends up cut by a part boundary somewhere.
        elif i % 3 == 0:
            frames.append(b'id: %d\r\ndata: {"type":"TEXT_MESSAGE_CONTENT",\r\ndata: "messageId":"m","delta":"%d"}\r\n\r\n' % (i, i))
        else:
            frames.append(b'data: {"type":"CUSTOM","name":"n","value":{"i":%d,"pad":"%s"}}\n\n' % (i, b"x" * (i % 97)))
    return b"".join(frames)


def _reference_decode(stream: bytes, **kw):
    dec = SseDecoder(**kw)
    out = []
    for i in range(0, len(stream), 65536):
        out.extend(dec.feed(stream[i : i + 65536]))
    out.extend(dec.close())
    return out, dec.last_event_id


@pytest.mark.parametrize("raw", [None, "dict", "bytes"])
def test_big_decode_sse_matches_feeding(raw):
    stream = _big_stream(40_000)
    want, _ = _reference_decode(stream, raw=raw)
    got = decode_sse(stream, raw=raw)
    assert len(got) == 40_000 and got == want
    assert decode_sse(memoryview(stream), raw=raw) == want


def test_big_decode_sse_error_keeps_every_event():
    stream = _big_stream(40_000, bad_at=31_000)
    with pytest.raises(EventValidationError) as ei:
        decode_sse(stream)
    e = ei.value
    assert e.frame_index == 31_000 and e.field == "$.messageId"
    assert stream[e.offset :].startswith(b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":5')
    assert len(e.events) == 39_999  # every frame but the bad one, across all parts
    assert e.events[30_999] == decode_sse(_big_stream(31_000))[-1]


@pytest.mark.filterwarnings("ignore:max_buffer_size is deprecated:DeprecationWarning")  # the old name, on purpose
def test_big_buffer_limit():
    stream = _big_stream(30_000) + b"data: " + b"y" * 5000 + b"\n\n" + _big_stream(10)
    with pytest.raises(BufferLimitError) as ei:
        decode_sse(stream, max_buffer_size=4096)
    assert ei.value.frame_index == 30_000
    assert len(ei.value.events) == 30_000


def test_iter_sse_big_file_is_read_ahead_and_errors_after_the_events(tmp_path):
    stream = _big_stream(6_000, bad_at=5_000)
    path = tmp_path / "big.sse"
    path.write_bytes(stream)
    got = []
    with pytest.raises(EventValidationError) as ei:
        for ev in iter_sse(path, chunk_size=16 * 1024):  # many chunks
            got.append(ev)
    assert ei.value.frame_index == 5_000
    assert len(got) >= 5_000  # up to the end of the chunk holding the bad frame
    assert got[:5_000] == _reference_decode(_big_stream(5_000))[0]
    good = _big_stream(6_000)
    path.write_bytes(good)
    with open(path, "rb") as f:
        via_file = list(iter_sse(f, chunk_size=16 * 1024))
    assert via_file == list(iter_sse(path, chunk_size=16 * 1024)) == _reference_decode(good)[0]
    # Stopping early is fine.
    it = iter_sse(path, chunk_size=16 * 1024)
    assert [next(it) for _ in range(3)] == via_file[:3]
    it.close()


@pytest.mark.parametrize("raw", [None, "dict"])
def test_large_feeds_are_pipelined_like_small_ones(raw):
    """Chunks of 1 MiB or more are framed in parts on a Rust thread by the decoder's own
    parser: frames spanning chunks and parts, a bad frame and a buffer-limit error come
    out as with small chunks (every event, located errors)."""
    stream = _big_stream(60_000, bad_at=41_000)
    want, errs = [], []
    dec = SseDecoder(raw=raw)
    for i in range(0, len(stream), 65536):
        try:
            want += dec.feed(stream[i : i + 65536])
        except EventValidationError as e:
            want += e.events
            errs.append((e.frame_index, e.offset))
    want += dec.close()
    assert len(stream) > 3 << 20 and len(want) + len(errs) == 60_000
    assert [i for i, _ in errs] == ([41_000] if raw is None else [])  # dict mode: valid JSON
    dec = SseDecoder(raw=raw)
    got, big_errs = [], []
    for a, b in ((0, 1_400_007), (1_400_007, 2_900_011), (2_900_011, len(stream))):
        try:
            got += dec.feed(stream[a:b])
        except EventValidationError as e:
            got += e.events
            big_errs.append((e.frame_index, e.offset))
    assert got + dec.close() == want and big_errs == errs
    assert dec.frame_count == 60_000
    # the buffer limit inside a pipelined feed: the frames before it, then it
    over = _big_stream(30_000) + b"data: " + b"y" * 5000 + b"\n\n" + _big_stream(10)
    dec = SseDecoder(raw=raw, max_frame_size=4096)
    with pytest.raises(BufferLimitError) as ei:
        dec.feed(over)
    assert ei.value.frame_index == 30_000 and len(ei.value.events) == 30_000


def test_big_decode_restores_the_gc():
    import gc

    assert gc.isenabled()
    assert len(decode_sse(_big_stream(40_000))) == 40_000
    assert gc.isenabled()
    with pytest.raises(EventValidationError):
        decode_sse(_big_stream(40_000, bad_at=20_000))
    assert gc.isenabled()


@pytest.mark.filterwarnings("ignore:max_buffer_size is deprecated:DeprecationWarning")  # the old name, on purpose
def test_iter_sse_file_edges(tmp_path):
    """Paths are read in chunks: same events as feeding, a final frame without its blank
    line kept, the buffer limit and I/O errors raised."""
    for n, chunk_sizes in ((200, (1, 7)), (3_000, (4096, 1 << 20))):
        stream = _big_stream(n) + b'data: {"type":"RAW","event":1}'  # no final blank line
        path = tmp_path / "log.sse"
        path.write_bytes(stream)
        want, _ = _reference_decode(stream)
        for chunk_size in chunk_sizes:
            assert list(iter_sse(path, chunk_size=chunk_size)) == want, chunk_size
    assert list(iter_sse(str(path), chunk_size=4096, raw="bytes")) == _reference_decode(stream, raw="bytes")[0]
    big = tmp_path / "limit.sse"
    big.write_bytes(_big_stream(100) + b"data: " + b"z" * 9000 + b"\n\n")
    got = []
    with pytest.raises(BufferLimitError) as ei:
        for ev in iter_sse(big, chunk_size=1024, max_buffer_size=4096):
            got.append(ev)
    assert ei.value.frame_index == 100 and len(got) == 100
    with pytest.raises(OSError):
        list(iter_sse(tmp_path, chunk_size=16))  # a directory: reading it fails
    with pytest.raises(OSError):
        list(iter_sse(tmp_path / "missing.sse", chunk_size=16))
