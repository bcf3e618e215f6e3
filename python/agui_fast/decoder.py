"""Decoding AG-UI events into ``agui_fast.core`` Structs: one import path for every decoder.

Single events: :func:`decode_event` (JSON ``bytes``/``str`` or a ``dict``), :func:`decode_as`
(any Struct type), :func:`convert_value` (Python data, extras kept). Streams:
:class:`SseDecoder`, :func:`decode_sse`, :func:`iter_sse`, :func:`aiter_sse` (see
``agui_fast.sse``), :class:`ProtoDecoder`, :func:`decode_protobuf`,
:func:`iter_protobuf` (see ``agui_fast.proto``) and :class:`JsonlDecoder`,
:func:`decode_jsonl`, :func:`iter_jsonl` (JSON Lines logs, see ``agui_fast.jsonl``). A
facade: every name is defined in the layer below and re-exported here as is.
"""

from ._typed import EVENT_DECODER, EVENT_LIST_DECODER, decode_as, decode_event
from .core._convert import convert_value
from .jsonl import JsonlDecoder, decode_jsonl, iter_jsonl
from .proto import ProtoDecoder, decode_protobuf, iter_protobuf
from .sse import SseDecoder, aiter_sse, decode_sse, iter_sse

__all__ = [
    "decode_event",
    "decode_as",
    "convert_value",
    "SseDecoder",
    "decode_sse",
    "iter_sse",
    "aiter_sse",
    "ProtoDecoder",
    "decode_protobuf",
    "iter_protobuf",
    "JsonlDecoder",
    "decode_jsonl",
    "iter_jsonl",
    "EVENT_DECODER",
    "EVENT_LIST_DECODER",
]
