"""A small client using the README's imports, type-checked with ``mypy --strict`` by
``tests/test_decoder_api.py::test_readme_imports_type_check_strictly``: none of the names
may be ``Any`` to a type checker."""

from agui_fast.core import EventType, TextMessageContentEvent
from agui_fast.decoder import (
    ProtoDecoder, SseDecoder, aiter_sse, decode_event, decode_protobuf, decode_sse, iter_protobuf, iter_sse,
)
from agui_fast.encoder import EventEncoder
from agui_fast.errors import DecodeError
from agui_fast.patch import StateDocument, apply_patch
from agui_fast.proto import convert_protobuf_to_sse, convert_sse_to_protobuf

reveal_type(EventEncoder)  # noqa: F821
reveal_type(EventType)  # noqa: F821
reveal_type(TextMessageContentEvent)  # noqa: F821
reveal_type(decode_event)  # noqa: F821
reveal_type(decode_sse)  # noqa: F821
reveal_type(iter_sse)  # noqa: F821
reveal_type(aiter_sse)  # noqa: F821
reveal_type(SseDecoder)  # noqa: F821
reveal_type(decode_protobuf)  # noqa: F821
reveal_type(iter_protobuf)  # noqa: F821
reveal_type(ProtoDecoder)  # noqa: F821
reveal_type(convert_sse_to_protobuf)  # noqa: F821
reveal_type(convert_protobuf_to_sse)  # noqa: F821
reveal_type(apply_patch)  # noqa: F821
reveal_type(StateDocument)  # noqa: F821


def run(chunks: list[bytes]) -> int:
    enc = EventEncoder()
    data = enc.encode_many([TextMessageContentEvent(message_id="m", delta="d")])
    dec = SseDecoder(raw="dict", max_frame_size=1 << 20)
    count = 0
    for chunk in chunks:
        try:
            count += len(dec.feed(chunk))
        except DecodeError as e:
            count += len(e.events) + 0 * len(e.errors)
    count += len(decode_sse(data)) + len(decode_protobuf(b"", raw="bytes"))
    count += len(list(iter_sse(data, chunk_size=4096))) + len(ProtoDecoder().close())
    return count + len(list(iter_protobuf(b"")))
