"""The protobuf codec (agui_fast.proto, agui_fast._native proto_*): conformance with the
reference vectors, streaming, limits, errors, round trips and layer agreement."""

from __future__ import annotations

import base64
import io
import json
import random
import re
import typing
import warnings

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_fast import _native, proto, sse
from agui_fast.errors import (
    DecodeError,
    EncodeError,
    FrameTooLargeError,
    ProtobufDecodeError,
    TruncatedStreamError,
)

from conftest import by_name, case_input, examples, load_jsonl, repo_file

# This module keeps the protobuf API's original spelling raw=True (plain dicts) on purpose, as
# its first callers wrote it; the DeprecationWarning it gives is asserted in test_decoder_api.
pytestmark = pytest.mark.filterwarnings("ignore:raw=False/True is deprecated:DeprecationWarning")

EVENTS = load_jsonl("codec/events.jsonl")
STREAMS = load_jsonl("codec/proto_streams.jsonl")
INVALID = load_jsonl("codec/invalid_events.jsonl")

try:
    import agui_fast.core as core
    from agui_fast.decoder import decode_event
except ImportError:  # pragma: no cover - the typed layer lands separately
    core = None


def input_bytes(case) -> bytes:
    """The case's input JSON as UTF-8; raw unpaired surrogates (only ever inside JSON
    strings) are written as \\uXXXX escapes so the text stays encodable."""
    text = case_input(case)
    return re.sub("[\ud800-\udfff]", lambda m: "\\u%04x" % ord(m.group()), text).encode()


def as_doubles(v):
    """JSON value with every number as a double (the vectors' comparison rule)."""
    if isinstance(v, dict):
        return {k: as_doubles(x) for k, x in v.items()}
    if isinstance(v, list):
        return [as_doubles(x) for x in v]
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


def frame_of(case) -> bytes:
    return bytes.fromhex(case["proto_frame_hex"])


# -- events.jsonl: byte-exact frames and reference decoding ------------------------------------


@by_name(EVENTS)
def test_encode_frame_is_byte_exact(case):
    assert _native.proto_encode_json(input_bytes(case), True).hex() == case["proto_frame_hex"]


@by_name(EVENTS)
def test_decode_frame_gives_reference_json(case):
    got = proto.decode_event_message(frame_of(case)[4:], raw=True)
    assert as_doubles(got) == as_doubles(case["proto_decoded"])


TYPED = [c for c in EVENTS if c.get("py_sse")]

# Typed-path differences that follow from the Python reference itself (docs/protobuf.md).
TYPED_DIFFS = {
    # `1e400` is float('inf') in Python; the JSON writer (like pydantic) writes null for it,
    # so the Struct path sends null_value where the TypeScript encoder sends an Infinity double.
    "numbers/integers_beyond_2^53",
}


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
@by_name(TYPED)
def test_typed_encode_is_byte_exact(case):
    """From the Struct the Python reference would build, the frame is still the reference's."""
    if case["name"] in TYPED_DIFFS:
        pytest.skip("documented typed-path difference")
    event = decode_event(case["py_sse"][len("data: ") : -2])
    assert proto.encode_protobuf_frame(event).hex() == case["proto_frame_hex"]
    assert proto.encode_event_message(event).hex() == case["proto_frame_hex"][8:]


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
@by_name([c for c in TYPED if c["proto_lossless"]])
def test_typed_decode_matches_reference_struct(case):
    from agui_fast.encoder import to_builtins

    decoded = proto.decode_event_message(frame_of(case)[4:])
    expected = decode_event(json.dumps(case["parsed"]))
    assert type(decoded) is type(expected)
    assert as_doubles(to_builtins(decoded)) == as_doubles(to_builtins(expected))


def test_lossy_cases_are_the_documented_ones():
    """Cases not lossless in the reference are listed (and counted) in docs/protobuf.md."""
    lossy = [c["name"] for c in EVENTS if not c["proto_lossless"]]
    doc = repo_file("docs", "protobuf.md").read_text(encoding="utf-8")
    assert f"{len(lossy)} of {len(EVENTS)}" in doc


@pytest.mark.parametrize(
    "case", [c for c in INVALID if c.get("proto_frame_hex")], ids=lambda c: c["name"]
)
def test_invalid_events_encode_best_effort_without_crashing(case):
    """The reference warns and encodes invalid events best-effort; we never crash on them
    (byte equality is only promised for valid events: it writes `"undefined"` strings)."""
    text = case.get("event_json") or json.dumps(case["event"])
    try:
        out = _native.proto_encode_json(text.encode(), True)
    except ValueError:  # EncodeError where the reference throws too
        return
    assert int.from_bytes(out[:4], "big") == len(out) - 4


def test_unknown_type_encodes_to_empty_message_like_the_reference():
    assert _native.proto_encode_json(b'{"type":"THINKING_START"}', True) == b"\0\0\0\0"
    with pytest.raises(ProtobufDecodeError):
        proto.decode_protobuf(b"\0\0\0\0")


def test_reference_examples_section_7():
    ex = {
        '{"type":"TEXT_MESSAGE_START","messageId":"m1"}': "0a060a0012026d31",
        '{"type":"CUSTOM","name":"n","value":null}': "5a0b0a02080a12016e1a020800",
        '{"type":"ACTIVITY_SNAPSHOT","messageId":"m","activityType":"PLAN","content":{},"replace":false}':
            "ba01110a0208161a016d2204504c414e2a003000",
    }
    for text, hexed in ex.items():
        assert _native.proto_encode_json(text.encode(), False).hex() == hexed


# -- streams ----------------------------------------------------------------------------------

ERRORS = {"decode": ProtobufDecodeError, "truncated": TruncatedStreamError, "frame_too_large": FrameTooLargeError}


FATAL = (TruncatedStreamError, FrameTooLargeError)


def run_chunks(data: bytes, sizes):
    """The natural loop of the error contract: keep each failing call's ``events`` and go
    on feeding; a framing error (too large, truncated) ends the stream."""
    dec = proto.ProtoDecoder(raw="dict")
    events, errors = [], []
    pos = 0
    for n in list(sizes) + [None]:
        try:
            got = dec.close() if n is None else dec.feed(data[pos : pos + n])
        except DecodeError as exc:
            got = exc.events
            assert exc.errors[0] is exc
            errors.extend(exc.errors)
        events.extend(got)
        if errors and isinstance(errors[-1], FATAL):
            break
        pos += n or 0
    return events, errors


def random_sizes(n, rng):
    sizes = []
    while n > 0:
        k = min(n, rng.choice([0, 1, 2, 3, 4, 5, 7, 16, 64, 1000]))
        sizes.append(k)
        n -= k
    return sizes


@by_name(STREAMS)
def test_proto_streams_recorded_and_random_chunkings(case):
    """Any chunking gives the same events and the same errors. The reference stops at the
    first bad frame; we deliver its events and go on past a bad message (not past a
    framing error), so the vector's events are a prefix of ours."""
    data = base64.b64decode(case["stream_b64"])
    rng = random.Random(case["name"])
    chunkings = [case["chunk_sizes"], [len(data)]] + [random_sizes(len(data), rng) for _ in range(4)]
    if len(data) < 5000:
        chunkings.append([1] * len(data))
    outcomes = set()
    for sizes in chunkings:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            events, errors = run_chunks(data, sizes)
        expected = as_doubles(case["events"])
        assert as_doubles(events)[: len(expected)] == expected
        if case["error_kind"] is None:
            assert errors == [] and len(events) == len(expected)
        else:
            assert isinstance(errors[0], ERRORS[case["error_kind"]]), errors
            assert all(e.frame_index is not None and e.offset is not None for e in errors)
        # one warning per decoder and kind, however many frames
        kinds = {str(w.message) for w in caught if issubclass(w.category, UserWarning)}
        assert len(kinds) == len([w for w in caught if issubclass(w.category, UserWarning)])
        assert bool(kinds) == bool(case.get("warnings"))
        outcomes.add((json.dumps(events, sort_keys=True, default=repr), tuple((type(e), e.frame_index, e.offset) for e in errors)))
    assert len(outcomes) == 1


@by_name(STREAMS)
def test_decode_protobuf_whole_buffer(case):
    data = base64.b64decode(case["stream_b64"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case["error_kind"] is None:
            assert as_doubles(proto.decode_protobuf(data, raw="dict")) == as_doubles(case["events"])
            if core is not None:
                typed = proto.decode_protobuf(data)
                assert [msgspec.json.decode(msgspec.json.encode(e)) for e in typed] is not None
                assert len(typed) == len(case["events"])
        else:
            with pytest.raises(ERRORS[case["error_kind"]]) as info:
                proto.decode_protobuf(data, raw="dict")
            expected = as_doubles(case["events"])
            assert as_doubles(info.value.events)[: len(expected)] == expected
            assert as_doubles(info.value.events) == as_doubles(run_chunks(data, [len(data)])[0])


def test_future_arm_is_skipped_with_a_warning():
    case = next(c for c in STREAMS if c["name"] == "envelope/future_arm_dropped")
    with pytest.warns(UserWarning, match="later protocol|predates"):
        events = proto.decode_protobuf(base64.b64decode(case["stream_b64"]), raw=True)
    assert events == case["events"]
    # A single message from a later version is an error (there is no frame to skip).
    data = base64.b64decode(case["stream_b64"])
    frames, pos = [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos : pos + 4], "big")
        frames.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    future = [f for f in frames if not _decodes(f)]
    assert future
    with pytest.raises(ProtobufDecodeError, match="later protocol"):
        proto.decode_event_message(future[0])


def _decodes(msg: bytes) -> bool:
    try:
        proto.decode_event_message(msg, raw=True)
        return True
    except DecodeError:
        return False


# -- limits, truncation, garbage --------------------------------------------------------------


def small_frame():
    return _native.proto_encode_json(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"Hi"}', True)


def test_frame_too_large_is_raised_from_the_prefix_alone():
    dec = proto.ProtoDecoder(max_frame_size=100)
    assert dec.feed(small_frame()) != []
    with pytest.raises(FrameTooLargeError) as info:
        dec.feed((97).to_bytes(4, "big"))  # 4 + 97 > 100: no body needed to know
    assert (info.value.frame_index, info.value.offset) == (1, len(small_frame()))
    assert len(info.value.events) == 0
    with pytest.raises(FrameTooLargeError):  # the decoder stays failed
        dec.feed(b"")


def test_chunks_may_be_bytearray_or_memoryview():
    f = small_frame() * 2
    dec = proto.ProtoDecoder(raw=True)
    assert len(dec.feed(bytearray(f[:5])) + dec.feed(memoryview(f)[5:])) == 2
    assert len(proto.decode_protobuf(bytearray(f), raw=True)) == 2
    assert proto.decode_event_message(memoryview(f)[4 : len(f) // 2], raw=True)["delta"] == "Hi"


def test_frame_exactly_at_the_limit_is_accepted():
    f = small_frame()
    dec = proto.ProtoDecoder(max_frame_size=len(f))
    assert len(dec.feed(f)) == 1
    dec.close()
    with pytest.raises(FrameTooLargeError):
        proto.decode_protobuf(f, max_frame_size=len(f) - 1)


def test_default_limit_is_10_mib():
    assert proto.DEFAULT_MAX_FRAME_SIZE == 10 * 1024 * 1024
    with pytest.raises(FrameTooLargeError):
        proto.ProtoDecoder().feed((10 * 1024 * 1024 - 3).to_bytes(4, "big"))
    dec = proto.ProtoDecoder()
    dec.feed((10 * 1024 * 1024 - 4).to_bytes(4, "big"))
    assert dec.pending == 4


def test_truncated_stream_is_an_error_with_position_and_events():
    data = small_frame() * 3
    for cut in range(1, len(small_frame())):
        dec = proto.ProtoDecoder(raw="bytes")
        got = dec.feed(data[: len(data) - cut])
        assert len(got) == 2
        with pytest.raises(TruncatedStreamError) as info:
            dec.close()
        assert info.value.frame_index == 2
        assert info.value.offset == 2 * len(small_frame())
        assert str(len(small_frame()) - cut) in str(info.value)


def test_garbage_reports_frame_index_and_offset():
    good = small_frame()
    bad = b"\0\0\0\x03\xff\xff\xff"
    with pytest.raises(ProtobufDecodeError) as info:
        proto.decode_protobuf(good + good + bad + good, raw="dict")
    e = info.value
    assert (e.frame_index, e.offset) == (2, 2 * len(good))
    assert len(e.events) == 3  # the frame after the bad message too: the stream goes on
    assert e.errors == [e]
    assert "frame 2" in str(e) and f"offset {2 * len(good)}" in str(e)


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
def test_error_events_are_typed():
    good = small_frame()
    with pytest.raises(TruncatedStreamError) as info:
        proto.decode_protobuf(good + good[:-1])
    assert info.value.events == [core.TextMessageContentEvent(message_id="m1", delta="Hi")]


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_bytes_never_crash(data):
    for raw in (True, "bytes"):
        try:
            proto.decode_protobuf(data, raw=raw)
        except DecodeError:
            pass
    try:
        proto.decode_event_message(data, raw=True)
    except DecodeError:
        pass


@settings(max_examples=examples(200))
@given(st.sampled_from([c for c in EVENTS if len(c["proto_frame_hex"]) < 400]), st.data())
def test_mutated_frames_never_crash(case, data):
    msg = bytearray(frame_of(case)[4:])
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(msg) - 1))
        msg[i] = data.draw(st.integers(0, 255))
    try:
        proto.decode_event_message(bytes(msg), raw=True)
    except DecodeError:
        pass


# -- files and conversion -----------------------------------------------------------------------


def all_full_stream():
    return base64.b64decode(next(c for c in STREAMS if c["name"] == "all_types_full_events")["stream_b64"])


def test_iter_protobuf_path_file_and_chunks(tmp_path):
    data = all_full_stream()
    p = tmp_path / "log.bin"
    p.write_bytes(data)
    want = proto.decode_protobuf(data, raw=True)
    assert list(proto.iter_protobuf(p, chunk_size=7, raw=True)) == want
    assert list(proto.iter_protobuf(str(p), raw=True)) == want
    assert list(proto.iter_protobuf(io.BytesIO(data), chunk_size=1000, raw=True)) == want
    assert list(proto.iter_protobuf([data[:10], data[10:]], raw=True)) == want
    p.write_bytes(data[:-1])
    with pytest.raises(TruncatedStreamError):
        list(proto.iter_protobuf(p, raw=True))


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
def test_convert_sse_to_protobuf_and_back(tmp_path):
    # Python ints beyond 2^53 are rounded by the double on the wire: not part of this check.
    typed = [decode_event(c["py_sse"][6:-2]) for c in TYPED if c["proto_lossless"] and not c["name"].startswith("numbers/")]
    sse = b"".join(_native.encode_sse_bytes(e) for e in typed)
    src = tmp_path / "in.sse"
    src.write_bytes(sse)
    assert proto.convert_sse_to_protobuf(src, tmp_path / "out.bin", chunk_size=13) == len(typed)
    assert (tmp_path / "out.bin").read_bytes() == proto.encode_protobuf_many(typed)
    out = io.BytesIO()
    assert proto.convert_protobuf_to_sse(tmp_path / "out.bin", out, chunk_size=11) == len(typed)
    from agui_fast.encoder import to_builtins

    back = [decode_event(line[6:]) for line in out.getvalue().split(b"\n\n") if line]
    # RUN_STARTED input lists come back as [] where the Struct had None (documented loss).
    assert [normalise(to_builtins(e)) for e in back] == [normalise(to_builtins(e)) for e in typed]


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
def test_encoder_protobuf_methods():
    from agui_fast.encoder import EventEncoder

    ev = core.TextMessageContentEvent(message_id="m1", delta="Hi")
    enc = EventEncoder(accept="application/vnd.ag-ui.event+proto")
    assert enc.encode_protobuf(ev) == small_frame()
    assert enc.encode_binary(ev) == small_frame()
    assert enc.encode_many([ev, ev]) == small_frame() * 2


def test_pydantic_reference_events_encode_the_same():
    import ag_ui.core as ref

    ev = ref.TextMessageContentEvent(message_id="m1", delta="Hi")
    assert proto.encode_protobuf_frame(ev) == small_frame()


def test_lone_surrogates_become_replacement_characters():
    case = next(c for c in EVENTS if c["name"].startswith("unicode/lone_surrogate/"))
    assert _native.proto_encode_json(input_bytes(case), True).hex() == case["proto_frame_hex"]
    if core is not None:
        ev = core.TextMessageContentEvent(message_id="m", delta="a\ud800b")
        msg = proto.encode_event_message(ev)
        assert proto.decode_event_message(msg).delta == "a\ufffdb"


# -- property: protobuf round trip == SSE round trip where the mapping is lossless ---------------

if core is not None:
    from strategies import events as event_strategy, normalise
else:  # pragma: no cover
    event_strategy = st.nothing()


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(event_strategy)
def test_protobuf_round_trip_equals_sse_round_trip(event):
    from agui_fast.encoder import to_builtins

    via_sse = decode_event(_native.dumps(event))
    via_proto = proto.decode_protobuf(proto.encode_protobuf_frame(event))[0]
    assert normalise(to_builtins(via_proto)) == normalise(to_builtins(via_sse))


# -- layer agreement: .proto text == compiled Rust schema == agui_fast.core Structs ---------------


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def parse_proto_files():
    """message -> {field: (number, label)} from the .proto text (a small parser is enough
    for these files: no nested oneofs, options or extensions)."""
    out = {}
    for path in sorted(repo_file("proto").glob("*.proto")):
        text = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
        stack = []
        for token in re.finditer(r"(message|enum|oneof)\s+(\w+)\s*\{|\}|([^;{}]+);", text):
            kind, name, stmt = token.group(1), token.group(2), token.group(3)
            if kind:
                stack.append((kind, name))
                if kind == "message":
                    full = ".".join(n for k, n in stack if k == "message")
                    out[full] = {}
            elif token.group(0) == "}":
                stack.pop()
            elif stmt and stack:
                msgs = [n for k, n in stack if k == "message"]
                if stack[-1][0] == "enum" or not msgs:
                    continue
                m = re.match(r"\s*(optional\s+|repeated\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*$", stmt)
                if m:
                    label = (m.group(1) or "").strip() or ("oneof" if stack[-1][0] == "oneof" else "implicit")
                    out[".".join(msgs)][m.group(3)] = (int(m.group(4)), label)
    return out


def native_schema():
    raw = json.loads(_native._testing.proto_schema())
    return {
        k[len("ag_ui."):]: {f[0]: (f[1], f[2]) for f in v}
        for k, v in raw.items()
        if not k.startswith("enum ")
    }


def test_proto_files_and_compiled_rust_schema_agree():
    assert parse_proto_files() == native_schema()


def test_event_enum_and_envelope_cover_the_31_types():
    raw = json.loads(_native._testing.proto_schema())
    names = [n for n, _ in raw["enum ag_ui.EventType"]]
    assert len(names) == 31 and len(set(names)) == 31
    arms = {f[0].upper() for f in raw["ag_ui.Event"]}
    assert arms == set(names)
    if core is not None:
        assert set(names) == {m.value for m in core.EventType}


def struct_fields(cls):
    return {f.encode_name for f in msgspec.structs.fields(cls)}


BASE = {"timestamp", "rawEvent", "metadata"}

# Where the wire carries a JSON field in other fields (docs/protobuf.md, "mapping").
EVENT_RENAMES = {
    "RunFinishedEvent": {"interrupts": "outcome", "pendingToolCallIds": "outcome"},
    "SubagentFinishedEvent": {"interruptIds": "outcome"},
    "ToolCallResultEvent": {"contentParts": "content"},
}


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
@pytest.mark.parametrize("tag", sorted(core.EVENT_CLASSES) if core is not None else [])
def test_event_messages_match_structs(tag):
    cls = core.EVENT_CLASSES[tag]
    schema = native_schema()
    wire = schema[cls.__name__]
    assert wire["base_event"][0] == 1
    renames = EVENT_RENAMES.get(cls.__name__, {})
    wire_json = {renames.get(camel(f), camel(f)) for f in wire if f != "base_event"}
    assert wire_json == struct_fields(cls) - BASE
    assert {camel(f) for f in schema["BaseEvent"]} == BASE | {"type"}


def union_fields(tp):
    classes = [a for a in typing.get_args(tp) if isinstance(a, type)]
    out = set()
    for c in classes:
        out |= struct_fields(c)
        if c.__struct_config__.tag_field:
            out.add(c.__struct_config__.tag_field)
    return out


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
def test_nested_messages_match_structs():
    s = native_schema()
    j = lambda m: {camel(f) for f in s[m]}  # noqa: E731
    assert j("Message") - {"contentParts", "activityContent"} == union_fields(core.Message)
    assert j("ToolCall") == struct_fields(core.ToolCall)
    assert j("ToolCall.Function") == struct_fields(core.FunctionCall)
    assert j("Tool") == struct_fields(core.Tool)
    assert j("Context") == struct_fields(core.Context)
    assert j("ResumeEntry") == struct_fields(core.ResumeEntry)
    assert j("RunAgentInput") == struct_fields(core.RunAgentInput)
    assert j("Interrupt") == struct_fields(core.Interrupt)
    assert j("Usage") == struct_fields(core.TokenUsage)
    assert j("TextInputPart") == struct_fields(core.TextPart)
    for media in ("Image", "Audio", "Video", "Document"):
        assert j(f"{media}InputPart") == struct_fields(getattr(core, f"{media}Part"))
    assert j("InputContentDataSource") == struct_fields(core.DataSource)
    assert j("InputContentUrlSource") == struct_fields(core.UrlSource)
    assert j("InputContentFileSource") == struct_fields(core.FileSource)
    ops = typing.get_args(
        next(f.type for f in msgspec.structs.fields(core.StateDeltaEvent) if f.name == "delta")
    )[0]
    assert j("JsonPatchOperation") == union_fields(ops)
    # The part and source arms are exactly the JSON discriminator values.
    part_tags = {c.__struct_config__.tag for c in typing.get_args(core.ContentPart) if isinstance(c, type)}
    assert {f for f in s["InputContent"]} == part_tags
    source_tags = {c.__struct_config__.tag for c in (core.DataSource, core.UrlSource, core.FileSource)}
    assert set(s["InputContentSource"]) == source_tags


# -- events the wire can carry but 1.0 JSON cannot --------------------------------------------

# STATE_DELTA whose op enum number (9) has no name: the reference decodes it as "op": "9".
UNNAMED_OP = bytes.fromhex("420c0a0208071206080912022f61")


def test_unnamed_patch_op_decodes_as_its_number():
    assert proto.decode_event_message(UNNAMED_OP, raw=True) == {
        "delta": [{"op": "9", "path": "/a"}],
        "type": "STATE_DELTA",
    }


@pytest.mark.skipif(core is None, reason="agui_fast.core is not available yet")
def test_typed_decode_of_a_non_1_0_event_raises_validation_error_with_events():
    from agui_fast.errors import EventValidationError

    good = small_frame()
    bad = len(UNNAMED_OP).to_bytes(4, "big") + UNNAMED_OP
    for decode in (
        lambda d: proto.decode_protobuf(d),
        lambda d: proto.ProtoDecoder().feed(d),
        lambda d: list(proto.iter_protobuf([d])),
    ):
        with pytest.raises(EventValidationError) as info:
            decode(good + bad)
        assert info.value.events == [core.TextMessageContentEvent(message_id="m1", delta="Hi")]
    assert len(proto.decode_protobuf(good + bad, raw=True)) == 2


def test_incremental_and_whole_buffer_decoding_agree_on_all_vectors():
    frames = b"".join(frame_of(c) for c in EVENTS)
    whole = proto.decode_protobuf(frames, raw=True)
    dec = proto.ProtoDecoder(raw=True)
    rng = random.Random(7)
    inc, pos = [], 0
    while pos < len(frames):
        n = rng.randint(0, 5000)
        inc.extend(dec.feed(frames[pos : pos + n]))
        pos += n
    dec.close()
    assert inc == whole
    assert len(whole) == len(EVENTS)
    # Streams go through MessagePack, single messages through JSON: same events.
    single = [proto.decode_event_message(frame_of(c)[4:], raw=True) for c in EVENTS]
    assert as_doubles(whole) == as_doubles(single)
    assert whole == single


# -- whole-buffer decoding in pipelined parts (ProtoDecoder.decode_all) ------------------------


def _typed_frames():
    """Frames of every vector event the typed layer reads, and those events."""
    frames, events = [], []
    for c in EVENTS:
        if not c.get("py_sse"):
            continue
        try:
            events.append(proto.decode_event_message(frame_of(c)[4:]))
        except DecodeError:
            continue
        frames.append(frame_of(c))
    return frames, events


def _big(frames, events, size=600_000):
    """Repeat the frames past the pipelining threshold (256 KiB)."""
    k = -(-size // len(b"".join(frames)))
    return frames * k, events * k


BAD = b"\0\0\0\x03\xff\xff\xff"


@pytest.mark.skipif(core is None, reason="typed layer")
def test_pipelined_parts_decode_like_one_part():
    frames, events = _big(*_typed_frames())
    data = b"".join(frames)
    assert proto.decode_protobuf(data) == events
    dec = proto.ProtoDecoder()
    assert [e for i in range(0, len(data), 4096) for e in dec.feed(data[i : i + 4096])] + dec.close() == events
    dicts = proto.decode_protobuf(data, raw="dict")
    assert len(dicts) == len(events)
    assert [msgspec.json.decode(b) for b in proto.decode_protobuf(data, raw="bytes")] == dicts


@pytest.mark.skipif(core is None, reason="typed layer")
def test_pipelined_parts_errors_keep_position_and_every_event():
    frames, events = _big(*_typed_frames())
    for k in (0, 1, len(frames) // 2, len(frames) - 1):
        data = b"".join(frames[:k]) + BAD + b"".join(frames[k:])
        with pytest.raises(ProtobufDecodeError) as info:
            proto.decode_protobuf(data)
        assert info.value.frame_index == k
        assert info.value.offset == sum(map(len, frames[:k]))
        assert info.value.events == events  # also those after the bad frame
    data = b"".join(frames)
    with pytest.raises(TruncatedStreamError) as info:
        proto.decode_protobuf(data[:-3])
    assert info.value.frame_index == len(frames) - 1
    assert info.value.events == events[:-1]
    # two bad frames in different parts: one error for the call, both in .errors
    data = BAD + b"".join(frames) + BAD
    with pytest.raises(ProtobufDecodeError) as info:
        proto.decode_protobuf(data)
    assert [e.frame_index for e in info.value.errors] == [0, len(frames) + 1]
    assert info.value.events == events


@pytest.mark.skipif(core is None, reason="typed layer")
@pytest.mark.parametrize("cut", [0, 1, 2, 3, 4, 5, 977])
def test_pipelined_feeds_of_large_chunks_cut_anywhere(cut):
    """Chunks past the threshold are decoded in parts on a Rust thread by the stream's
    own decoder: a chunk may start inside a frame or its prefix (the first part then
    ends the buffered frame), and errors keep their stream positions."""
    frames, events = _big(*_typed_frames(), size=1_500_000)
    data = b"".join(frames)
    bounds = [0, 300_000 + cut, 700_000 + cut, 1_200_000 + 3 * cut, len(data)]
    dec = proto.ProtoDecoder()
    got = [e for a, b in zip(bounds, bounds[1:]) for e in dec.feed(data[a:b])] + dec.close()
    assert got == events
    k = len(frames) // 3
    bad = b"".join(frames[:k]) + BAD + b"".join(frames[k:])
    dec = proto.ProtoDecoder()
    got, errors = [], []
    for a, b in zip(bounds, bounds[1:-1] + [len(bad)]):
        try:
            got += dec.feed(bad[a:b])
        except ProtobufDecodeError as e:
            got += e.events
            errors += e.errors
    got += dec.close()
    assert got == events
    assert [(e.frame_index, e.offset) for e in errors] == [(k, sum(map(len, frames[:k])))]


def _future_frame():
    case = next(c for c in STREAMS if c["name"] == "envelope/future_arm_dropped")
    stream, pos = base64.b64decode(case["stream_b64"]), 0
    while pos < len(stream):
        n = int.from_bytes(stream[pos : pos + 4], "big")
        if not _decodes(stream[pos + 4 : pos + 4 + n]):
            return stream[pos : pos + 4 + n]
        pos += 4 + n
    raise AssertionError("no future frame in the vector")


def test_future_frames_warn_once_per_decoder_with_a_count():
    future = _future_frame()
    data = (small_frame() * 50 + future) * 2000  # pipelined: many parts
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(proto.decode_protobuf(data, raw="dict")) == 100_000
    assert len([w for w in caught if issubclass(w.category, UserWarning)]) == 1
    dec = proto.ProtoDecoder(raw="dict")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(100):
            assert len(dec.feed(small_frame() + future)) == 1
    assert len(caught) == 1 and dec.skipped_frames == 100
    assert "frame" not in str(caught[0].message).split("(")[0]  # no per-frame text


def test_a_warning_raised_as_an_error_loses_no_events():
    future = _future_frame()
    dec = proto.ProtoDecoder(raw="dict")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning) as info:
            dec.feed(small_frame() + future + small_frame())
    assert len(info.value.events) == 2
    assert len(dec.feed(small_frame() + future)) == 1  # warned once: no more warnings


@pytest.mark.skipif(core is None, reason="typed layer")
def test_decode_all_restores_the_gc():
    import gc

    frames, events = _big(*_typed_frames())
    assert gc.isenabled()
    assert proto.decode_protobuf(b"".join(frames)) == events
    assert gc.isenabled()
    with pytest.raises(ProtobufDecodeError):
        proto.decode_protobuf(b"".join(frames) + BAD)
    assert gc.isenabled()  # restored on errors too
    gc.disable()
    try:
        proto.decode_protobuf(b"".join(frames))
        assert not gc.isenabled()  # a pause never enables what the caller disabled
    finally:
        gc.enable()


@pytest.mark.skipif(core is None, reason="typed layer")
def test_iter_protobuf_files(tmp_path, recwarn):
    """A path is read in chunks: the same events as the whole-buffer decode in every
    mode; on an error, the failing chunk's events first; a cut file raises at the end."""
    frames, events = _typed_frames()
    data = b"".join(frames)
    path = tmp_path / "log.bin"
    path.write_bytes(data)
    for chunk in (61, 512, 1 << 20):
        assert list(proto.iter_protobuf(path, chunk_size=chunk)) == events, chunk
    assert list(proto.iter_protobuf(path, chunk_size=64, raw="dict")) == proto.decode_protobuf(data, raw="dict")
    with open(path, "rb") as f:
        assert list(proto.iter_protobuf(f, chunk_size=64)) == events
    assert list(proto.iter_protobuf(data)) == events  # bytes: one chunk
    path.write_bytes(data[:-3])
    got = []
    with pytest.raises(TruncatedStreamError):
        for ev in proto.iter_protobuf(path, chunk_size=100):
            got.append(ev)
    assert got == events[:-1]
    k = len(frames) // 2
    path.write_bytes(b"".join(frames[:k]) + BAD + b"".join(frames[k:]))
    got = []
    with pytest.raises(ProtobufDecodeError) as ei:
        for ev in proto.iter_protobuf(path, chunk_size=256):
            got.append(ev)
    assert got[:k] == events[:k] and ei.value.frame_index == k and got == events[: len(got)]
    path.write_bytes(b"".join(frames[:3]) + _future_frame() + b"".join(frames[3:]))
    assert list(proto.iter_protobuf(path, chunk_size=128)) == events
    assert any(issubclass(w.category, UserWarning) for w in recwarn.list)
    with pytest.raises(OSError):
        list(proto.iter_protobuf(tmp_path / "missing.bin", chunk_size=64))


@pytest.mark.parametrize("value", [2**53, -(2**53), 2**63, 2**70, -(2**70), 1e300, 10**400])
@pytest.mark.parametrize("field", ["timestamp", "usage"])
def test_an_int64_past_what_a_decoder_reads_is_refused_at_encode(value, field):
    # Clamped or written as given, the frame would be one the decoder refuses (past
    # Number.MAX_SAFE_INTEGER): refused when written, naming the field.
    ev = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    if field == "timestamp":
        ev["timestamp"] = value
    else:
        ev["usage"] = [{"inputTokens": value}]
    with pytest.raises(EncodeError, match="is outside the integers") as info:
        proto.encode_protobuf_many([ev])
    assert len(str(info.value)) < 250
    ok = dict(ev, timestamp=2**53 - 1) if field == "timestamp" else dict(ev, usage=[{"inputTokens": 2**53 - 1}])
    assert proto.decode_protobuf(proto.encode_protobuf_many([ok]), raw=True)[0] == ok
