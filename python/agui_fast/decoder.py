"""Decoding AG-UI events into ``agui_fast.core`` Structs.

Single events: :func:`decode_event` (JSON ``bytes``/``str`` or a ``dict``).
Streams: :class:`SseDecoder`, :func:`decode_sse`, :func:`iter_sse`, :func:`aiter_sse`
(see ``agui_fast.sse``) and :class:`ProtoDecoder`, :func:`decode_protobuf`,
:func:`iter_protobuf` (see ``agui_fast.proto``), re-exported here.

How a single event is decoded: one msgspec call validates and builds the whole event
(the fast path). Three rarer inputs need more and take a slower, still exact path:
unknown members (kept as extras and written back on encode), snake_case member names
(accepted like the reference's ``populate_by_name``), and numbers or strings msgspec
refuses but the Python reference reads (``1e400`` → ``inf``, unpaired surrogate escapes).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple, Union

import msgspec

from .core import Event
from .errors import EventValidationError, InvalidJsonError

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
]

EVENT_DECODER = msgspec.json.Decoder(Event, strict=False)
"""The fast path: one C-level call from JSON bytes to a validated event Struct."""

EVENT_LIST_DECODER = msgspec.json.Decoder(List[Event], strict=False)

_DECODERS: Dict[Any, msgspec.json.Decoder] = {}

# msgspec errors that mean "valid for the reference, needs the exact path".
_SLOW_PATH_ERRORS = ("Object contains unknown field", "Number out of range")


def decode_event(data: Union[bytes, bytearray, memoryview, str, Dict[str, Any]]) -> Event:
    """Decode and validate one event given as JSON text/bytes or as a dict.

    Raises :class:`~agui_fast.errors.InvalidJsonError` for malformed JSON and
    :class:`~agui_fast.errors.EventValidationError` (``.field`` is the JSON path, e.g.
    ``$.messages[0].role``) for an invalid event. Both are ``ValueError`` subclasses.
    """
    if isinstance(data, dict):
        return convert_value(data, Event)
    try:
        return EVENT_DECODER.decode(data)  # the fast path, inlined (hashing a Union is slow)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeEncodeError):
        return decode_as(data, Event)


def decode_as(data: Union[bytes, bytearray, memoryview, str], tp: Any = Event) -> Any:
    """Decode JSON ``data`` into type ``tp`` (an event class, ``Event``, a message ...)."""
    decoder = EVENT_DECODER if tp is Event else _DECODERS.get(tp)
    if decoder is None:
        decoder = _DECODERS.setdefault(tp, msgspec.json.Decoder(tp, strict=False))
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        if not str(exc).startswith(_SLOW_PATH_ERRORS):
            raise validation_error(exc) from None
    except (msgspec.DecodeError, UnicodeEncodeError):
        pass  # maybe JSON msgspec refuses but Python reads (unpaired surrogates)
    try:
        obj = json.loads(data)
    except (ValueError, TypeError) as exc:
        raise InvalidJsonError(f"invalid JSON: {exc}") from None
    return convert_value(obj, tp)


_AT = re.compile(r" - at `([^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `([^`]*)`")


def validation_error(exc: Exception, prefix: str = "$") -> EventValidationError:
    """Turn a msgspec ValidationError into ours, with ``field`` set to the JSON path."""
    message = str(exc)
    m = _AT.search(message)
    path = m.group(1) if m else "$"
    missing = _MISSING.match(message)
    if missing:
        path = f"{path}.{missing.group(1)}"
    if prefix != "$" and path.startswith("$"):
        path = prefix + path[1:]
    text = message if m and not missing else f"{_AT.sub('', message)} - at `{path}`"
    return EventValidationError(f"invalid event: {text}", field=path)


# -- the exact path: extras, snake_case names, Python-only numbers -----------------------


def convert_value(value: Any, tp: Any, path: str = "$") -> Any:
    """Convert Python data into ``tp`` like the reference's pydantic validation does.

    Unknown members are kept as extras (instance ``__dict__``) at every level, snake_case
    attribute names are accepted where the camelCase key is absent, and dicts given for
    nested models are converted. Raises :class:`EventValidationError` naming the field.
    """
    cleaned, extras = _strip(value, tp)
    try:
        obj = msgspec.convert(cleaned, tp, strict=False)
    except msgspec.ValidationError as exc:
        raise validation_error(exc, "$" if path.startswith("$") else path) from None
    if extras is not None:
        _attach(obj, extras)
    return obj


_FIELDS_CACHE: Dict[type, Tuple[Tuple[str, str, Any], ...]] = {}


def _struct_fields(cls: type) -> Tuple[Tuple[str, str, Any], ...]:
    fields = _FIELDS_CACHE.get(cls)
    if fields is None:
        fields = tuple((f.name, f.encode_name, f.type) for f in msgspec.structs.fields(cls))
        _FIELDS_CACHE[cls] = fields
    return fields


def _candidates(tp: Any) -> Tuple[List[type], Optional[Any]]:
    """Struct classes and the list element type reachable at this position of ``tp``."""
    import typing

    structs: List[type] = []
    list_item = None
    stack = [tp]
    while stack:
        t = stack.pop()
        origin = typing.get_origin(t)
        if isinstance(t, type) and issubclass(t, msgspec.Struct):
            structs.append(t)
        elif origin is typing.Annotated:
            stack.append(typing.get_args(t)[0])
        elif origin is Union:
            stack.extend(typing.get_args(t))
        elif origin in (list, List):
            list_item = typing.get_args(t)[0]
    return structs, list_item


def _pick(structs: List[type], value: Dict[str, Any]) -> Optional[type]:
    if len(structs) == 1 and structs[0].__struct_config__.tag_field is None:
        return structs[0]
    for cls in structs:
        config = cls.__struct_config__
        if config.tag_field is not None and value.get(config.tag_field) == config.tag:
            return cls
    return None


def _strip(value: Any, tp: Any):
    """Split ``value`` into (what msgspec should validate, extras tree or None)."""
    if isinstance(value, dict):
        structs, _ = _candidates(tp)
        if not structs:
            return value, None
        cls = _pick(structs, value)
        if cls is None:
            return value, None  # msgspec reports the bad or missing tag
        cleaned: Dict[str, Any] = {}
        children: Dict[str, Any] = {}
        used = set()
        tag_field = cls.__struct_config__.tag_field
        if tag_field is not None:
            cleaned[tag_field] = cls.__struct_config__.tag  # a str Enum member compares equal
            used.add(tag_field)
        for name, wire, ftype in _struct_fields(cls):
            if wire in value:
                key = wire
            elif name != wire and name in value:
                key = name  # populate_by_name: the attribute name also works
            else:
                continue
            used.add(key)
            sub, ext = _strip(value[key], ftype)
            cleaned[wire] = sub
            if ext is not None:
                children[name] = ext
        extras = {k: v for k, v in value.items() if k not in used}
        if not extras and not children:
            return cleaned, None
        return cleaned, ("o", extras, children)
    if isinstance(value, list):
        _, item = _candidates(tp)
        if item is None:
            return value, None
        out = []
        children_l: Dict[int, Any] = {}
        for i, v in enumerate(value):
            sub, ext = _strip(v, item)
            out.append(sub)
            if ext is not None:
                children_l[i] = ext
        return out, (("l", children_l) if children_l else None)
    if isinstance(value, msgspec.Struct):
        return value, None
    return value, None


def _attach(obj: Any, tree) -> None:
    if tree[0] == "o":
        _, extras, children = tree
        if extras:
            obj.__dict__.update(extras)
        for name, sub in children.items():
            _attach(getattr(obj, name), sub)
    else:
        for i, sub in tree[1].items():
            _attach(obj[i], sub)


# -- stream decoders (their own modules; imported here for one import path) --------------


def __getattr__(name: str):
    # Lazy so that agui_fast.sse / agui_fast.proto can import this module at load time.
    if name in ("SseDecoder", "decode_sse", "iter_sse", "aiter_sse"):
        from . import sse

        return getattr(sse, name)
    if name in ("ProtoDecoder", "decode_protobuf", "iter_protobuf"):
        from . import proto

        return getattr(proto, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
