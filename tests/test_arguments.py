"""Every numeric argument of the public API, systematically: an int out of range is a
ValueError naming the argument, anything but an int (a float, a str, None where it is not
allowed, a bool) a TypeError; never OverflowError, a panic, or a value taken as given (a
depth past the stack's reach, a thread count past the OS's). A size limit or budget has no
upper end: past the machine's sizes it means no limit."""

import asyncio
import io
import warnings

import pytest

from agui_fast import _native, arrow, asgi, client, decoder, encoder, jsonl, logs, patch, proto, sse, stream
from agui_fast.core import RunStartedEvent
from agui_fast.errors import AguiError

EV = RunStartedEvent(thread_id="t", run_id="r")
SSE = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
JSONL = SSE[6:]
PB = proto.encode_protobuf_many([EV])


def drain(x):
    if hasattr(x, "__aiter__"):
        async def main():
            return [e async for e in x]
        return asyncio.run(main())
    return list(x) if hasattr(x, "__next__") else x


async def _chunks():
    yield SSE


@pytest.fixture(scope="module")
def log_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("logs") / "a.sse"
    path.write_bytes(SSE)
    return str(path)


# (name, call(arg, value), argument, lo, hi): the public callable, the numeric argument and
# its range (hi LIMIT: a limit, any int from lo up).
DEPTH = _native.MAX_DEPTH_CAP
SIZE = LIMIT = None
CHUNK = _native.MAX_CHUNK_SIZE
THREADS = _native.MAX_THREADS
CASES = [
    ("to_arrow", lambda a, v, p: arrow.to_arrow(SSE, **{a: v}), "threads", 1, THREADS),
    ("to_arrow", lambda a, v, p: arrow.to_arrow(SSE, **{a: v}), "max_buffer_size", 0, SIZE),
    ("to_arrow", lambda a, v, p: arrow.to_arrow(SSE, **{a: v}), "max_frame_size", 0, SIZE),
    ("to_arrow", lambda a, v, p: arrow.to_arrow(SSE, **{a: v}), "max_depth", 0, DEPTH),
    ("to_arrow", lambda a, v, p: arrow.to_arrow(SSE, **{a: v}), "max_errors", 0, LIMIT),
    ("EventStream", lambda a, v, p: asgi.EventStream([EV], **{a: v}), "status_code", 100, 599),
    ("EventStream", lambda a, v, p: asgi.EventStream([EV], **{a: v}), "max_batch", 1, 1 << 20),
    ("HttpAgent", lambda a, v, p: client.HttpAgent("http://x", **{a: v}), "max_buffer_size", 0, SIZE),
    ("SyncHttpAgent", lambda a, v, p: client.SyncHttpAgent("http://x", **{a: v}), "max_buffer_size", 0, SIZE),
    ("decode_event", lambda a, v, p: decoder.decode_event(JSONL, **{a: v}), "max_depth", 0, DEPTH),
    ("decode_event(dict)", lambda a, v, p: decoder.decode_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, **{a: v}), "max_depth", 0, DEPTH),
    ("convert_sse_to_protobuf", lambda a, v, p: proto.convert_sse_to_protobuf(p, io.BytesIO(), **{a: v}), "chunk_size", 1, CHUNK),
    ("convert_protobuf_to_sse", lambda a, v, p: proto.convert_protobuf_to_sse(PB, io.BytesIO(), **{a: v}), "chunk_size", 1, CHUNK),
    ("convert_protobuf_to_sse", lambda a, v, p: proto.convert_protobuf_to_sse(PB, io.BytesIO(), **{a: v}), "max_frame_size", 0, SIZE),
    ("EventEncoder.encode_protobuf", lambda a, v, p: encoder.EventEncoder().encode_protobuf(EV, **{a: v}), "max_depth", 0, DEPTH),
    ("event_to_json_bytes", lambda a, v, p: encoder.event_to_json_bytes(EV, **{a: v}), "max_depth", 0, DEPTH),
    ("encode_protobuf_many", lambda a, v, p: proto.encode_protobuf_many([EV], **{a: v}), "max_depth", 0, DEPTH),
    ("apply_patch", lambda a, v, p: patch.apply_patch({}, [], **{a: v}), "max_depth", 0, DEPTH),
    ("apply_patch", lambda a, v, p: patch.apply_patch({}, [], **{a: v}), "max_patch_bytes", 0, LIMIT),
    ("replay", lambda a, v, p: stream.replay([EV], **{a: v}), "max_patch_bytes", 0, LIMIT),
    ("StateDocument", lambda a, v, p: patch.StateDocument({}, **{a: v}), "max_depth", 0, DEPTH),
    ("expand_chunks", lambda a, v, p: stream.expand_chunks([EV], **{a: v}), "max_depth", 0, DEPTH),
    ("ChunkExpander", lambda a, v, p: stream.ChunkExpander(**{a: v}), "max_depth", 0, DEPTH),
    ("verify_events", lambda a, v, p: stream.verify_events([EV], **{a: v}), "max_depth", 0, DEPTH),
    ("EventVerifier", lambda a, v, p: stream.EventVerifier(**{a: v}), "max_depth", 0, DEPTH),
    ("replay", lambda a, v, p: stream.replay([EV], **{a: v}), "max_depth", 0, DEPTH),
    ("EventApplier", lambda a, v, p: stream.EventApplier(**{a: v}), "max_depth", 0, DEPTH),
    ("compact_events", lambda a, v, p: stream.compact_events([EV], **{a: v}), "max_depth", 0, DEPTH),
    ("replay_log", lambda a, v, p: stream.replay_log(SSE, **{a: v}), "max_depth", 0, DEPTH),
    ("replay_log(path)", lambda a, v, p: stream.replay_log(p, **{a: v}), "max_depth", 0, DEPTH),
    ("replay_logs", lambda a, v, p: stream.replay_logs([p], **{a: v}), "threads", 1, THREADS),
    ("replay_logs", lambda a, v, p: stream.replay_logs([p], **{a: v}), "max_depth", 0, DEPTH),
    ("iter_log", lambda a, v, p: drain(logs.iter_log(p)), None, None, None),
]
for _name, _mod, _cls, _data in [
    ("sse", sse, sse.SseDecoder, SSE), ("jsonl", jsonl, jsonl.JsonlDecoder, JSONL),
    ("protobuf", proto, proto.ProtoDecoder, PB),
]:
    one_shot = getattr(_mod, f"decode_{_name}")
    many = getattr(_mod, f"iter_{_name}")
    for _arg, _hi in (("max_frame_size", SIZE), ("max_depth", DEPTH)):
        CASES += [
            (_cls.__name__, lambda a, v, p, c=_cls, d=_data: c(**{a: v}).feed(d), _arg, 0, _hi),
            (f"decode_{_name}", lambda a, v, p, f=one_shot, d=_data: f(d, **{a: v}), _arg, 0, _hi),
            (f"iter_{_name}", lambda a, v, p, f=many, d=_data: drain(f(d, **{a: v})), _arg, 0, _hi),
        ]
    CASES.append((f"iter_{_name}(path)", lambda a, v, p, f=many, d=_data, n=_name: drain(f(_write(p, n, d), **{a: v})),
                  "chunk_size", 1, CHUNK))
    if _name != "jsonl":  # the deprecated spelling of max_frame_size
        CASES.append((f"decode_{_name}", lambda a, v, p, f=one_shot, d=_data: f(d, **{a: v}), "max_buffer_size", 0, SIZE))
        CASES.append((_cls.__name__, lambda a, v, p, c=_cls, d=_data: c(**{a: v}).feed(d), "max_buffer_size", 0, SIZE))
CASES.append(("aiter_sse", lambda a, v, p: drain(sse.aiter_sse(_chunks(), **{a: v})), "max_frame_size", 0, SIZE))
CASES.append(("aiter_sse", lambda a, v, p: drain(sse.aiter_sse(_chunks(), **{a: v})), "max_depth", 0, DEPTH))
CASES = [c for c in CASES if c[2] is not None]


def _write(path, name, data):
    out = f"{path}.{name}"
    with open(out, "wb") as f:
        f.write(data)
    return out


IDS = [f"{name}-{arg}" for name, _, arg, _, _ in CASES]

OUT_OF_RANGE = [-1, -(2**64), 2**63, 2**64, 2**200]
WRONG_TYPES = [1.5, float("nan"), float("inf"), "10", b"10", True, [], object()]


def call(case, value, log_path):
    name, fn, arg, lo, hi = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return fn(arg, value, log_path)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_in_range_values_are_taken(case, log_path):
    name, fn, arg, lo, hi = case
    values = {lo, max(lo, 1), 4096, 2**63, 2**64, 10**100} if hi is LIMIT else {lo, max(lo, 1), min(hi, 4096)}
    for value in values:
        try:
            call(case, value, log_path)
        except AguiError:  # a tiny limit the input breaks: the argument was taken
            pass


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_out_of_range_ints_are_value_errors_naming_the_argument(case, log_path):
    name, fn, arg, lo, hi = case
    values = [v for v in OUT_OF_RANGE if v < lo or (hi is not LIMIT and v > hi)] + [lo - 1]
    values += [] if hi is LIMIT else [hi + 1]
    for value in values:
        with pytest.raises(ValueError, match=arg) as info:
            call(case, value, log_path)
        # a plain ValueError of the argument check (not a decode error of the input)
        assert type(info.value) is ValueError, (value, info.value)
        assert len(str(info.value)) < 200


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wrong_types_are_type_errors(case, log_path):
    name, fn, arg, lo, hi = case
    for value in WRONG_TYPES + [None] * (arg not in ("threads", "max_buffer_size", "max_patch_bytes")):
        if name in ("HttpAgent", "SyncHttpAgent") and value is None:
            continue
        with pytest.raises(TypeError):
            call(case, value, log_path)


def test_none_means_the_default_where_it_is_allowed(log_path):
    arrow.to_arrow(SSE, threads=None)
    stream.replay_logs([log_path], threads=None)
    client.HttpAgent("http://x", max_buffer_size=None)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), 86400.5, 2**64])
def test_keepalive_out_of_range(value):
    with pytest.raises(ValueError, match="keepalive"):
        asgi.EventStream([EV], keepalive=value)


@pytest.mark.parametrize("value", ["1", True, b"1", [1]])
def test_keepalive_wrong_type(value):
    with pytest.raises(TypeError, match="keepalive"):
        asgi.EventStream([EV], keepalive=value)


def test_keepalive_in_range():
    for value in (None, 0.001, 1, 15.0, 86400):
        asgi.EventStream([EV], keepalive=value)


def test_index_like_ints_are_taken():
    class Index:
        def __index__(self):
            return 4096

    sse.SseDecoder(max_frame_size=Index()).feed(SSE)
    assert stream.EventApplier(max_depth=Index()) is not None


def test_huge_int_in_the_message_is_summarised():
    with pytest.raises(ValueError) as info:
        decoder.decode_sse(SSE, max_depth=10**100)
    assert "101 digits" in str(info.value)
    with pytest.raises(ValueError) as info:
        decoder.decode_sse(SSE, max_frame_size=-(10**100))
    assert "101 digits" in str(info.value)


def test_a_depth_past_the_cap_never_reaches_the_stack():
    # A depth limit of 2**31 would let this value recurse 300,000 levels deep.
    deep = b"[" * 300_000 + b"]" * 300_000
    with pytest.raises(ValueError, match="max_depth"):
        decoder.decode_sse(b'data: {"type":"CUSTOM","name":"x","value":' + deep + b"}\n\n", max_depth=2**31)
    value = []
    for _ in range(300_000):
        value = [value]
    with pytest.raises(ValueError, match="max_depth"):
        encoder.event_to_json_bytes(value, max_depth=2**31)


def test_a_message_index_is_a_list_index():
    ap = stream.EventApplier()
    ap.apply({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
    ap.apply({"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "assistant"})
    assert ap.message(-1).id == "m2" and ap.message(-2).id == "m1" and ap.message(1).id == "m2"
    for index in (2, -3, 2**64, -(2**64), 2**200):
        with pytest.raises(IndexError, match="2 messages"):
            ap.message(index)
    for bad in (1.0, "0", None):
        with pytest.raises(TypeError):
            ap.message(bad)
