"""The two stream decoder families share one surface: same ``raw`` spellings, same events."""

import pytest

from agui_fast.core import TextMessageContentEvent, TextMessageEndEvent
from agui_fast.decoder import (
    ProtoDecoder, SseDecoder, decode_protobuf, decode_sse, iter_protobuf, iter_sse,
)
from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder

EVENTS = [TextMessageContentEvent(message_id="m", delta=str(i)) for i in range(5)] + [
    TextMessageEndEvent(message_id="m")
]
SSE = EventEncoder().encode_many(EVENTS)
PROTO = EventEncoder(AGUI_MEDIA_TYPE).encode_many(EVENTS)


@pytest.mark.parametrize("typed", [None, False])
def test_typed_spellings(typed):
    assert decode_sse(SSE, raw=typed) == decode_protobuf(PROTO, raw=typed) == EVENTS


@pytest.mark.parametrize("as_dict", ["dict", True])
def test_dict_spellings(as_dict):
    sse, proto = decode_sse(SSE, raw=as_dict), decode_protobuf(PROTO, raw=as_dict)
    assert sse == proto and sse[0] == {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "0"}


def test_bytes_mode_and_bad_mode():
    assert decode_sse(SSE, raw="bytes")[-1] == b'{"type":"TEXT_MESSAGE_END","messageId":"m"}'
    assert len(decode_protobuf(PROTO, raw="bytes")) == len(EVENTS)
    for bad in ("xml", 3):
        with pytest.raises(ValueError):
            SseDecoder(raw=bad)
        with pytest.raises(ValueError):
            ProtoDecoder(raw=bad)


def test_iterators_stream_files(tmp_path):
    (tmp_path / "a.sse").write_bytes(SSE)
    (tmp_path / "a.pb").write_bytes(PROTO)
    assert list(iter_sse(tmp_path / "a.sse")) == list(iter_protobuf(tmp_path / "a.pb")) == EVENTS
