"""The extras-preserving converter of the Struct layer: Python data or JSON text into a
Struct type, the way the reference's pydantic validation reads it.

Unknown members are kept as extras (instance ``__dict__``) at every level, snake_case
attribute names are accepted where the camelCase key is absent, dicts given for nested
models are converted, and members given at their default (the tag included) are recorded
for ``model_fields_set`` (``_given``). The codec modules build on this; it imports none of them.
"""

from __future__ import annotations

import json
import re
import typing
from typing import Any, Dict, List, Optional, Tuple, Union

import msgspec

from ..errors import EventValidationError, InvalidJsonError
from . import _given

__all__ = ["convert_value", "convert_fast", "decode_json", "parse_json", "json_decoder", "exact", "validation_error", "FAST_PATH_ERRORS"]


#: What a typed msgspec decoder raises for input the exact path may still take.
FAST_PATH_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, UnicodeEncodeError, RecursionError)

# msgspec errors that mean "valid for the reference, needs the exact path".
_SLOW_PATH_ERRORS = ("Object contains unknown field", "Number out of range")


# Per type, by its id (an entry holds its type, so the id stays that type's): hashing a
# union or a generic walks its arguments (~2.5 µs for ``List[Event]``).
_DECODERS: Dict[int, Tuple[Any, "msgspec.json.Decoder[Any]"]] = {}
_CONVERTERS: Dict[int, Tuple[Any, Any]] = {}


def _for_type(cache: Dict[int, Tuple[Any, Any]], tp: Any, make: Any) -> Any:
    entry = cache.get(id(tp))
    if entry is None or entry[0] is not tp:
        entry = cache[id(tp)] = (tp, make(tp))
    return entry[1]


def json_decoder(tp: Any) -> "msgspec.json.Decoder[Any]":
    """The one msgspec JSON decoder of ``tp`` (``strict=False``, as pydantic's lax mode)."""
    return _for_type(_DECODERS, tp, _new_decoder)


def _new_decoder(tp: Any) -> "msgspec.json.Decoder[Any]":
    return msgspec.json.Decoder(tp, strict=False)


def decode_json(data: Union[bytes, bytearray, memoryview, str], tp: Any) -> Any:
    """Decode JSON ``data`` into type ``tp`` (an event class, ``Event``, a message ...)."""
    try:
        return json_decoder(tp).decode(data)
    except FAST_PATH_ERRORS as exc:
        return exact(data, tp, exc)


def _converter(tp: Any) -> Any:
    """A one-field Struct holding a ``tp``. msgspec keeps what it learns of a Struct class
    on the class, but learns a union or a generic (``List[Message]``, the ``Event`` union)
    anew on every ``convert`` call (10–60 µs); through this Struct it learns it once."""
    return _for_type(_CONVERTERS, tp, _new_converter)


def _new_converter(tp: Any) -> Any:
    return msgspec.defstruct("Converted", [("value", tp)])


def convert_fast(values: Any, tp: Any) -> Any:
    """Plain values (as JSON text decodes) into type ``tp``, as :func:`decode_json` would
    decode their text: msgspec's conversion, and :func:`convert_value` for what it refuses
    (extras, lone surrogates)."""
    try:
        if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
            return msgspec.convert(values, tp, strict=False)
        return msgspec.convert({"value": values}, _converter(tp), strict=False).value
    except FAST_PATH_ERRORS:
        return convert_value(values, tp)


def noun(tp: Any) -> str:
    """What errors call a value of ``tp``: "event" for events (and unions), else the class's
    name (``RunAgentInput``, ``UserMessage``)."""
    config = getattr(tp, "__struct_config__", None)
    return tp.__name__ if config is not None and config.tag_field != "type" else "event"


_plain_decode = msgspec.json.Decoder().decode
_UNSET = object()


def exact(data: Any, tp: Any, exc: BaseException) -> Any:
    """After the fast path failed with ``exc``: raise our error, or take the exact path."""
    if isinstance(exc, RecursionError):
        raise InvalidJsonError("invalid JSON: nested too deeply") from None
    # msgspec's ValidationError has no structured kind: its text is the only signal.
    if isinstance(exc, msgspec.ValidationError) and not str(exc).startswith(_SLOW_PATH_ERRORS):
        raise validation_error(exc, what=noun(tp)) from None
    # Extras, or JSON msgspec refuses but Python reads (1e400, unpaired surrogates).
    return convert_value(parse_json(data), tp)


def parse_json(data: Any) -> Any:
    """JSON text as plain Python data, as the reference reads it (msgspec, ~3x faster than
    json, then json for what msgspec refuses: 1e400, unpaired surrogates)."""
    obj: Any
    try:
        obj = _plain_decode(data)
    except (ValueError, TypeError, RecursionError):  # json.loads decides (and words the error)
        obj = _UNSET
    try:
        if obj is _UNSET:
            obj = json.loads(data)
    except (ValueError, TypeError) as err:
        raise InvalidJsonError(f"invalid JSON: {err}") from None
    except RecursionError:
        raise InvalidJsonError("invalid JSON: nested too deeply") from None
    return obj


_AT = re.compile(r" - at `([^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `([^`]*)`")


def validation_error(exc: Exception, prefix: str = "$", what: str = "event") -> EventValidationError:
    """Turn a msgspec ValidationError into ours, with ``field`` set to the JSON path."""
    message = str(exc)
    m = _AT.search(message)
    path = m.group(1) if m else "$"
    inner = _AT.search(message, 0, m.start()) if m else None
    if m and inner and inner.end() == m.start() and inner.group(1).startswith("$."):
        # A field's check in a class's __post_init__ (the JSON Pointers, check_pointers)
        # names the field inside the object msgspec locates: one path.
        path += inner.group(1)[1:]
        message = f"{message[: inner.start()]} - at `{path}`"
    missing = _MISSING.match(message)
    if missing:
        path = f"{path}.{missing.group(1)}"
    if prefix != "$" and path.startswith("$"):
        path = prefix + path[1:]
    text = message if m and not missing else f"{_AT.sub('', message)} - at `{path}`"
    return EventValidationError(f"invalid {what}: {text}", field=path)


def convert_value(value: Any, tp: Any, path: str = "$") -> Any:
    """Convert Python data into ``tp`` like the reference's pydantic validation does.

    Unknown members are kept as extras (instance ``__dict__``) at every level, snake_case
    attribute names are accepted where the camelCase key is absent, and dicts given for
    nested models are converted. Raises :class:`EventValidationError` naming the field.
    """
    pos = _position_of(tp)
    what = noun(tp)
    try:
        cleaned, extras = _strip(value, pos)
    except RecursionError:
        raise InvalidJsonError(f"invalid {what}: nested too deeply") from None
    # Converting to the concrete class (not the Union) uses msgspec's per-class cache.
    target = _resolve(pos, cleaned) or tp
    try:
        obj = msgspec.convert(cleaned, target, strict=False)
    except msgspec.ValidationError as exc:
        raise validation_error(exc, "$" if path.startswith("$") else path, what) from None
    except UnicodeEncodeError as exc:  # an unpaired surrogate where an enum/literal is due
        raise EventValidationError(f"invalid {what}: {exc.reason} in a str field", field=path) from None
    except RecursionError:
        raise InvalidJsonError(f"invalid {what}: nested too deeply") from None
    if extras is not None:
        _attach(obj, extras)
    return obj


class _Position:
    """What may appear at one place of the schema: Structs (by tag) and/or a list."""

    __slots__ = ("single", "tag_field", "by_tag", "item")

    def __init__(
        self, single: Optional[type], tag_field: Optional[str], by_tag: Dict[Any, type], item: Optional["_Position"]
    ) -> None:
        self.single = single
        self.tag_field = tag_field
        self.by_tag = by_tag
        self.item = item


def _position(tp: Any) -> Optional[_Position]:
    """Build the position for a type annotation (once per class field; never per value)."""
    structs: List[type] = []
    item = None
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
            item = typing.get_args(t)[0]
    item_pos = _position(item) if item is not None else None
    if not structs and item_pos is None:
        return None
    configs = [(c, c.__struct_config__) for c in structs]  # type: ignore[attr-defined]
    tagged = [(c, cfg) for c, cfg in configs if cfg.tag_field is not None]
    single = structs[0] if len(structs) == 1 else None
    tag_field = tagged[0][1].tag_field if tagged else None
    by_tag = {cfg.tag: c for c, cfg in tagged}
    return _Position(single, tag_field, by_tag, item_pos)


_POSITIONS: Dict[int, Tuple[Any, Optional[_Position]]] = {}


def _position_of(tp: Any) -> Optional[_Position]:
    # Keyed by id (hashing a typing.Union is slow); the entry keeps tp alive.
    hit = _POSITIONS.get(id(tp))
    if hit is None or hit[0] is not tp:
        hit = _POSITIONS[id(tp)] = (tp, _position(tp))
    return hit[1]


_Plan = Tuple[Any, Any, Tuple[Tuple[str, str, Optional[_Position], Any], ...]]
_PLANS: Dict[type, _Plan] = {}


def _plan(cls: Any) -> _Plan:
    """``(tag_field, tag, ((name, wire_name, position, default), ...))`` of a Struct class."""
    plan = _PLANS.get(cls)
    if plan is None:
        config = cls.__struct_config__  # a new object per access: read once
        defaults = _given.defaults(cls)
        fields = tuple((f.name, f.encode_name, _position(f.type), defaults[f.name]) for f in msgspec.structs.fields(cls))
        plan = _PLANS[cls] = (config.tag_field, config.tag, fields)
    return plan


def _resolve(pos: Optional[_Position], value: Any) -> Optional[type]:
    """The Struct class ``value`` (a dict) is meant to be at ``pos``, or None."""
    if pos is None or not isinstance(value, dict):
        return None
    if pos.tag_field is not None and pos.tag_field in value:
        try:
            return pos.by_tag.get(value[pos.tag_field])  # a wrong tag: None, msgspec reports it
        except TypeError:  # an unhashable tag value: msgspec reports it
            return None
    return pos.single  # one class here: the tag may be left out


def _strip(value: Any, pos: Optional[_Position]) -> Tuple[Any, Any]:
    """Split ``value`` into (what msgspec should validate, extras tree or None)."""
    if pos is None:
        return value, None
    if isinstance(value, dict):
        cls = _resolve(pos, value)
        if cls is None:
            return value, None  # not a model here, or a bad tag that msgspec reports
        tag_field, tag, fields = _plan(cls)
        cleaned: Dict[str, Any] = {}
        children: Dict[str, Any] = {}
        used = []
        given = []  # members given at their default: pydantic counts them as set
        if tag_field is not None:
            cleaned[tag_field] = tag  # a str Enum member compares equal
            if tag_field in value:
                used.append(tag_field)
                given.append(tag_field)
        for name, wire, sub_pos, default in fields:
            if wire in value:
                key = wire
            elif name != wire and name in value:
                key = name  # populate_by_name: the attribute name also works
            else:
                continue
            used.append(key)
            sub = value[key]
            if default is not _given.REQUIRED and _given.at_default(sub, default):
                given.append(name)
            if sub_pos is not None:
                sub, ext = _strip(sub, sub_pos)
                if ext is not None:
                    children[name] = ext
            cleaned[wire] = sub
        if len(used) == len(value) and not children and not given:
            return cleaned, None
        used_set = set(used)
        extras = {k: v for k, v in value.items() if k not in used_set}
        return cleaned, ("o", extras, children, tuple(given))
    if isinstance(value, list) and pos.item is not None:
        item = pos.item
        out = []
        children_l: Dict[int, Any] = {}
        for i, v in enumerate(value):
            sub, ext = _strip(v, item)
            out.append(sub)
            if ext is not None:
                children_l[i] = ext
        return out, (("l", children_l) if children_l else None)
    return value, None


def _attach(obj: Any, tree: Any) -> None:
    if tree[0] == "o":
        _, extras, children, given = tree
        if extras:
            obj.__dict__.update(extras)
        if given:
            _given.mark(obj, given)
        for name, sub in children.items():
            _attach(getattr(obj, name), sub)
    else:
        for i, sub in tree[1].items():
            _attach(obj[i], sub)
