"""The typed msgspec decoders: one place for ``decode_event`` and the JSON / MessagePack
decoders the stream decoders are built with.

How a single event is decoded: one msgspec call validates and builds the whole event
(the fast path). Three rarer inputs need more and take a slower, still exact path
(``core._convert``): unknown members (kept as extras and written back on encode),
snake_case member names (accepted like the reference's ``populate_by_name``), and numbers
or strings msgspec refuses but the Python reference reads (``1e400`` -> ``inf``, unpaired
surrogate escapes).

The ``exact_*`` functions are the last step of the native stream decoders' fallback
chain (``rust/agui-py/src/decoder.rs``): one frame (already converted from 0.x there, when
the stream converts legacy input), raising only our ``DecodeError``s.
"""

from __future__ import annotations

from json import loads as _stdlib_loads
from typing import Any, Callable, Dict, List, NoReturn, Union

import msgspec

from . import _native
from .core import Event, Message
from .core._convert import FAST_PATH_ERRORS, convert_value, decode_json, exact, json_decoder
from .errors import DecodeError, EventValidationError, InvalidJsonError

__all__ = ["decode_event", "decode_as", "EVENT_DECODER", "EVENT_LIST_DECODER"]

# The list types, made once: typing builds and hashes ``List[Event]`` anew (~1 µs) on
# every subscription.
EVENT_LIST: Any = List[Event]
MESSAGE_LIST: Any = List[Message]

EVENT_DECODER: "msgspec.json.Decoder[Event]" = json_decoder(Event)
"""The fast path: one C-level call from JSON bytes to a validated event Struct."""
EVENT_LIST_DECODER = msgspec.json.Decoder(EVENT_LIST, strict=False)
# The same, parsing floats with Python's ``float``: for SSE batches with huge exponents,
# which msgspec parses on a slow exact path (see ``Batch::prefer_float_hook``). Same values.
EVENT_DECODER_FH = msgspec.json.Decoder(Event, strict=False, float_hook=float)
EVENT_LIST_DECODER_FH = msgspec.json.Decoder(EVENT_LIST, strict=False, float_hook=float)
# Plain JSON values (the dict mode), and the structural check of the bytes mode.
VALUE_DECODER = msgspec.json.Decoder()
VALUE_DECODER_FH = msgspec.json.Decoder(float_hook=float)
RAW_LIST_DECODER = msgspec.json.Decoder(List[msgspec.Raw])
# Events from the protobuf decoder arrive as MessagePack: nothing to escape or parse.
MP_EVENT_DECODER = msgspec.msgpack.Decoder(Event, strict=False)
MP_EVENT_LIST_DECODER = msgspec.msgpack.Decoder(EVENT_LIST, strict=False)

JsonInput = Union[bytes, bytearray, memoryview, str]


_DEFAULT_DEPTH: int = _native.DEFAULT_MAX_DEPTH  # the default, by identity: checked once here

# msgspec's decoders recurse as deep as the text nests (a few hundred bytes of stack a
# level): any thread's stack takes this many levels; deeper text is decoded on a stack
# with room for it.
_SHALLOW = 64


def nested_call(f: Callable[[Any], Any], data: JsonInput) -> Any:
    """``f(data)`` for JSON text, on a stack with room for its nesting when that is deep."""
    if len(data) > 2 * _SHALLOW and _native.json_exceeds_depth(data, _SHALLOW):
        return _native.call_nested(f, data)
    return f(data)


def _decode_event_text(data: JsonInput) -> Event:
    try:
        return EVENT_DECODER.decode(data)  # the fast path, inlined (hashing a Union is slow)
    except FAST_PATH_ERRORS as exc:
        return exact(data, Event, exc)


def decode_event(data: Union[JsonInput, Dict[str, Any]], *, max_depth: int = _DEFAULT_DEPTH) -> Event:
    """Decode and validate one event given as JSON text/bytes or as a dict.

    Raises :class:`~agui_fast.errors.InvalidJsonError` for malformed JSON and
    :class:`~agui_fast.errors.EventValidationError` (``.field`` is the JSON path, e.g.
    ``$.messages[0].role``) for an invalid event. Both are ``ValueError`` subclasses.
    ``max_depth``: deepest nesting of arrays and objects accepted (the project's limit,
    512 by default, the same on every interpreter); deeper raises ``InvalidJsonError``.
    """
    if max_depth is not _DEFAULT_DEPTH:
        _native.check_int("max_depth", max_depth, 0, _native.MAX_DEPTH_CAP)
    if isinstance(data, dict):
        return convert_value(data, Event)
    # The project's depth limit (``max_depth``), the same on every interpreter: nesting
    # deeper than that needs more than that many brackets, so short inputs skip the scan.
    if len(data) > 2 * max_depth and _native.json_exceeds_depth(data, max_depth):
        raise InvalidJsonError(f"invalid JSON: nested deeper than {max_depth} levels")
    if len(data) > 2 * _SHALLOW and _native.json_exceeds_depth(data, _SHALLOW):
        return _native.call_nested(_decode_event_text, data)
    try:
        return EVENT_DECODER.decode(data)  # the fast path, inlined (hashing a Union is slow)
    except FAST_PATH_ERRORS as exc:
        return exact(data, Event, exc)


def decode_as(data: JsonInput, tp: Any = Event) -> Any:
    """Decode JSON ``data`` into type ``tp`` (an event class, ``Event``, a message ...)."""
    return decode_json(data, tp)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"invalid JSON literal {name}")


def loads(payload: bytes) -> Any:
    """JSON text to Python values, as leniently as the reference; InvalidJsonError else."""
    try:
        return VALUE_DECODER.decode(payload)
    except msgspec.DecodeError as e:
        first = e
    except RecursionError:
        raise InvalidJsonError("JSON is nested too deeply") from None
    # msgspec refuses some valid JSON that the reference reads: escaped unpaired
    # surrogates ("\\ud800") and numbers beyond double range (1e400 -> inf). The stdlib
    # parser takes those; its NaN/Infinity extensions are not JSON and stay rejected.
    try:
        return _stdlib_loads(payload.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        pass
    raise InvalidJsonError(str(first)) from None


def exact_event(payload: bytes, legacy: bool) -> Event:
    """One SSE frame -> event, after the fast decoders refused it: the exact path. With
    ``legacy`` (the stream converts 0.x input; the frame is already converted) the frame
    is read as lenient JSON too, so text that is no JSON is an ``InvalidJsonError``."""
    try:
        return decode_event(payload)
    except DecodeError as e:
        first = e
    if not isinstance(first, InvalidJsonError) and not legacy:
        raise first
    obj = loads(payload)  # msgspec refuses escaped lone surrogates that JSON accepts
    if not isinstance(obj, dict):
        if not isinstance(first, InvalidJsonError):
            raise first
        raise EventValidationError("invalid event: Expected `object` - at `$`", field="$")
    return decode_event(obj)


def exact_value(payload: bytes, legacy: bool) -> Any:
    """One SSE frame -> plain JSON value (dict mode)."""
    return loads(payload)


def exact_bytes(payload: bytes, legacy: bool) -> bytes:
    """One SSE frame, checked to be JSON (bytes mode)."""
    loads(payload)
    return payload


def exact_mp_event(item: bytes, legacy: bool) -> Event:
    """One decoded protobuf event (MessagePack) that msgspec refused -> event, through
    the exact path (for the precise, located error of an event outside the 1.0 schema)."""
    return decode_event(msgspec.json.encode(msgspec.msgpack.decode(item)))


def exact_mp_value(item: bytes, legacy: bool) -> Any:
    """One decoded protobuf event (MessagePack) -> plain value (dict mode)."""
    return msgspec.msgpack.decode(item)
