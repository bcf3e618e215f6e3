"""EventEncoder: drop-in behaviour, batch encoding and Accept negotiation."""

import pytest

from ag_ui.encoder import AGUI_MEDIA_TYPE as REF_MEDIA_TYPE
from ag_ui.encoder import EventEncoder as RefEncoder

from agui_fast.core import CustomEvent, TextMessageContentEvent, TextMessageStartEvent
from agui_fast.decoder import decode_event
from agui_fast.encoder import AGUI_MEDIA_TYPE, SSE_MEDIA_TYPE, EventEncoder, negotiate
from agui_fast.errors import EncodeError
from agui_fast.interop import to_ag_ui

from conftest import load_jsonl

EVENTS = [c for c in load_jsonl("codec/events.jsonl") if c["py_sse"] is not None]


def test_media_type_constant_matches_reference():
    assert AGUI_MEDIA_TYPE == REF_MEDIA_TYPE == "application/vnd.ag-ui.event+proto"


@pytest.mark.parametrize(
    "accept, expected",
    [
        (None, SSE_MEDIA_TYPE),
        ("", SSE_MEDIA_TYPE),
        ("text/event-stream", SSE_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto", AGUI_MEDIA_TYPE),
        ("APPLICATION/VND.AG-UI.EVENT+PROTO", AGUI_MEDIA_TYPE),
        ("application/x-ag-ui", AGUI_MEDIA_TYPE),  # the pre-1.0 name
        # deliberate deviations from the TypeScript reference (it says protobuf):
        ("*/*", SSE_MEDIA_TYPE),
        ("application/*", SSE_MEDIA_TYPE),
        ("text/event-stream, application/vnd.ag-ui.event+proto;q=0.1", SSE_MEDIA_TYPE),
        # ties give SSE
        ("application/vnd.ag-ui.event+proto, text/event-stream", SSE_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto;q=0.5, */*;q=0.5", SSE_MEDIA_TYPE),
        # explicit preference for protobuf
        ("application/vnd.ag-ui.event+proto, text/event-stream;q=0.5", AGUI_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto;q=0.9, */*;q=0.8", AGUI_MEDIA_TYPE),
        ("text/*;q=0.2, application/vnd.ag-ui.event+proto;q=0.3", AGUI_MEDIA_TYPE),
        # the most specific range decides text/event-stream's q (RFC 9110)
        ("text/event-stream;q=0.1, */*, application/vnd.ag-ui.event+proto;q=0.5", AGUI_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto;q=0", SSE_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto; charset=utf-8", AGUI_MEDIA_TYPE),
        ('application/vnd.ag-ui.event+proto;foo="a,b;q=0";q=0.7, text/event-stream;q=0.6', AGUI_MEDIA_TYPE),
        ("application/vnd.ag-ui.event+proto;q=abc", SSE_MEDIA_TYPE),
        ("application/x-protobuf", SSE_MEDIA_TYPE),
        ("garbage, ,;;", SSE_MEDIA_TYPE),
    ],
)
def test_negotiation(accept, expected):
    assert negotiate(accept) == expected
    enc = EventEncoder(accept)
    assert enc.get_binary_content_type() == expected
    assert enc.accepts_protobuf == (expected == AGUI_MEDIA_TYPE)
    # the reference's server pattern (encode + get_content_type) says SSE
    assert EventEncoder(accept).get_content_type() == SSE_MEDIA_TYPE
    ev = TextMessageStartEvent(message_id="m1")
    assert EventEncoder(accept).encode(ev).startswith("data: ")
    # the binary pair: bytes and media type come together
    binary, many = enc.encode_binary(ev), enc.encode_many([ev, ev])
    if expected == AGUI_MEDIA_TYPE:
        assert binary == enc.encode_protobuf(ev) and many == binary * 2
    else:
        assert binary == EventEncoder(accept).encode(ev).encode() and many == binary * 2


LABELS = ("get_content_type", "get_binary_content_type")
WRITERS = ("encode", "encode_sse", "_encode_sse", "encode_binary", "encode_many", "encode_protobuf")


def _write(enc, name, events):
    if name == "encode_many":
        return enc.encode_many(events)
    out = b""
    for ev in events:
        chunk = getattr(enc, name)(ev)
        out += chunk.encode() if isinstance(chunk, str) else chunk
    return out


def _read(label, data):
    from agui_fast.decoder import decode_protobuf, decode_sse

    return decode_sse(data) if label == SSE_MEDIA_TYPE else decode_protobuf(data)


@pytest.mark.parametrize("accept", [None, AGUI_MEDIA_TYPE])
@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("label_first", [True, False], ids=["label-first", "bytes-first"])
def test_no_pairing_mislabels(accept, label, writer, label_first):
    """Every pairing of a label method with a writing method, in either order: the bytes are
    what the label says, or the first call that would break that raises
    EncoderFormatError (and nothing was written under a wrong label before it)."""
    from agui_fast.errors import EncoderFormatError

    events = [TextMessageStartEvent(message_id="m1"), TextMessageContentEvent(message_id="m1", delta="hi")]
    enc = EventEncoder(accept)
    try:
        if label_first:
            media = getattr(enc, label)()
            data = _write(enc, writer, events)
        else:
            data = _write(enc, writer, events[:1])
            media = getattr(enc, label)()
            data += _write(enc, writer, events[1:])
    except EncoderFormatError:
        # refused only where the two cannot agree: protobuf bytes where the first call fixed
        # SSE, SSE text where it fixed protobuf
        negotiated = negotiate(accept)
        first = {"get_content_type": SSE_MEDIA_TYPE, "get_binary_content_type": negotiated}[label] if label_first else {
            "encode_protobuf": AGUI_MEDIA_TYPE, "encode_binary": negotiated, "encode_many": negotiated}.get(writer, SSE_MEDIA_TYPE)
        text = writer in ("encode", "encode_sse", "_encode_sse")
        assert (writer == "encode_protobuf" and first == SSE_MEDIA_TYPE) or (text and first == AGUI_MEDIA_TYPE)
        return
    assert media in (SSE_MEDIA_TYPE, AGUI_MEDIA_TYPE)
    assert _read(media, data) == events
    # and the encoder keeps saying so
    assert enc.get_content_type() == enc.get_binary_content_type() == media
    # the reference's own pairs keep their meaning
    if label == "get_content_type" and label_first:
        assert media == SSE_MEDIA_TYPE
    if label == "get_binary_content_type" and label_first and writer in ("encode_binary", "encode_many"):
        assert media == negotiate(accept)


def test_a_user_subclass_keeps_its_methods_in_every_state():
    from agui_fast.errors import EncoderFormatError

    class Tagged(EventEncoder):
        def encode(self, event):
            return super().encode(event).replace("data:", "data:", 1)

        def extra(self):
            return "mine"

    ev = TextMessageStartEvent(message_id="m1")
    enc = Tagged(AGUI_MEDIA_TYPE)
    assert isinstance(enc, Tagged) and enc.extra() == "mine"
    assert enc.encode_binary(ev) == EventEncoder(AGUI_MEDIA_TYPE).encode_protobuf(ev)
    assert isinstance(enc, Tagged) and enc.get_content_type() == AGUI_MEDIA_TYPE
    with pytest.raises(EncoderFormatError):
        enc.encode(ev)
    enc = Tagged(AGUI_MEDIA_TYPE)
    assert enc.get_content_type() == SSE_MEDIA_TYPE
    assert enc.encode_binary(ev) == enc.encode(ev).encode() and enc.extra() == "mine"


def test_negotiation_is_memoised_and_bounded():
    from agui_fast import encoder as module

    for i in range(module._NEGOTIATED_MAX * 3):
        assert negotiate(f"text/event-stream;x={i}") == SSE_MEDIA_TYPE
    assert 0 < len(module._NEGOTIATED) <= module._NEGOTIATED_MAX
    assert negotiate("application/vnd.ag-ui.event+proto") is AGUI_MEDIA_TYPE
    with pytest.raises(TypeError):
        EventEncoder(accept=b"application/vnd.ag-ui.event+proto")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        negotiate(["text/event-stream"])  # type: ignore[arg-type]


def test_drop_in_surface():
    ref, ours = RefEncoder(), EventEncoder()
    ev = TextMessageStartEvent(message_id="m1")
    assert ours.get_content_type() == ref.get_content_type() == "text/event-stream"
    assert ours.encode(ev) == ours.encode_sse(ev) == ref.encode(to_ag_ui(ev))
    assert ours.encode_binary(ev) == ours.encode(ev).encode()


def test_pydantic_events_encode_identically():
    for case in EVENTS[:200]:
        ours = decode_event(case["py_sse"][6:-2])
        theirs = to_ag_ui(ours)
        assert EventEncoder().encode(theirs) == case["py_sse"]


def test_encode_many_is_the_concatenation():
    events = [decode_event(c["py_sse"][6:-2]) for c in EVENTS[:100]]
    expected = "".join(c["py_sse"] for c in EVENTS[:100]).encode()
    assert EventEncoder().encode_many(events) == expected
    assert EventEncoder().encode_many(iter(events)) == expected
    assert EventEncoder().encode_many([to_ag_ui(e) for e in events]) == expected
    assert EventEncoder().encode_many([]) == b""


def test_unencodable_values_raise_encode_error():
    with pytest.raises(EncodeError):
        EventEncoder().encode(CustomEvent(name="x", value="\ud800"))
    with pytest.raises(EncodeError):
        EventEncoder().encode(CustomEvent(name="x", value=object()))
    # issue 11 §2: what the reference writes is written (pydantic's JSON mode), not refused
    assert EventEncoder().encode(CustomEvent(name="x", value={1: "k"})) == (
        'data: {"type":"CUSTOM","name":"x","value":{"1":"k"}}\n\n'
    )
    assert issubclass(EncodeError, ValueError)


def test_extras_are_written_after_declared_fields():
    ev = TextMessageContentEvent(message_id="m1", delta="x", extra_field=1, anotherOne=None)
    assert EventEncoder().encode(ev) == (
        'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"x","extra_field":1,"anotherOne":null}\n\n'
    )
