"""Base classes shared by every generated Struct in ``_models.py``.

Design (see docs/design.md):

* Members of discriminated unions (events, messages, parts, sources, outcomes, patch
  operations) are msgspec *tagged* Structs, so one C-level ``msgspec`` call decodes and
  validates a whole event. The tag is a class attribute (``event.type``, ``message.role``,
  ``op.op``), not a field.
* ``_AguiMeta.__call__`` makes construction behave like the reference's pydantic models:
  the tag may be passed (``TextMessageStartEvent(type=EventType.TEXT_MESSAGE_START, ...)``),
  camelCase names are accepted, unknown keywords become *extra* members (kept and
  re-emitted, like pydantic's ``extra="allow"``), and dicts given for nested model fields
  are converted. msgspec's decoder does not go through ``__call__``, so decoding pays
  nothing for this.
* Extras live in the instance ``__dict__`` (``dict=True``); the encoders write them after
  the declared fields, as the reference does.
* ``forbid_unknown_fields=True`` turns "this JSON has extra members" into a decode error
  that the decoders catch to take the (rare) extras-preserving path (``_convert``); the
  common case stays a single msgspec call.
* This layer imports no codec module: conversion (``_convert``), plain data (``_dump``)
  and the native JSON writer are all it needs.
"""

from __future__ import annotations

import copy
import enum
import typing
from typing import Annotated, Any, ClassVar, Dict, Optional, Tuple, Union

import msgspec
from msgspec import Meta, field

from .. import _native
from ._convert import convert_value, decode_json
from ._dump import to_builtins

__all__ = ["EventType", "BaseEvent", "_Model", "_AguiMeta"]


class EventType(str, enum.Enum):
    """The discriminator carried by every event (same members and order as ag_ui.core)."""

    TEXT_MESSAGE_START = "TEXT_MESSAGE_START"
    TEXT_MESSAGE_CONTENT = "TEXT_MESSAGE_CONTENT"
    TEXT_MESSAGE_END = "TEXT_MESSAGE_END"
    TEXT_MESSAGE_CHUNK = "TEXT_MESSAGE_CHUNK"
    TOOL_CALL_START = "TOOL_CALL_START"
    TOOL_CALL_ARGS = "TOOL_CALL_ARGS"
    TOOL_CALL_END = "TOOL_CALL_END"
    TOOL_CALL_CHUNK = "TOOL_CALL_CHUNK"
    TOOL_CALL_RESULT = "TOOL_CALL_RESULT"
    STATE_SNAPSHOT = "STATE_SNAPSHOT"
    STATE_DELTA = "STATE_DELTA"
    MESSAGES_SNAPSHOT = "MESSAGES_SNAPSHOT"
    ACTIVITY_SNAPSHOT = "ACTIVITY_SNAPSHOT"
    ACTIVITY_DELTA = "ACTIVITY_DELTA"
    RAW = "RAW"
    CUSTOM = "CUSTOM"
    RUN_STARTED = "RUN_STARTED"
    RUN_FINISHED = "RUN_FINISHED"
    RUN_ERROR = "RUN_ERROR"
    STEP_STARTED = "STEP_STARTED"
    STEP_FINISHED = "STEP_FINISHED"
    REASONING_START = "REASONING_START"
    REASONING_MESSAGE_START = "REASONING_MESSAGE_START"
    REASONING_MESSAGE_CONTENT = "REASONING_MESSAGE_CONTENT"
    REASONING_MESSAGE_END = "REASONING_MESSAGE_END"
    REASONING_MESSAGE_CHUNK = "REASONING_MESSAGE_CHUNK"
    REASONING_END = "REASONING_END"
    REASONING_ENCRYPTED_VALUE = "REASONING_ENCRYPTED_VALUE"
    SUBAGENT_STARTED = "SUBAGENT_STARTED"
    SUBAGENT_FINISHED = "SUBAGENT_FINISHED"
    SUBAGENT_ERROR = "SUBAGENT_ERROR"


_StructMeta = msgspec.StructMeta


_struct_call = _StructMeta.__call__

# Per class: (tag field, tag, fields whose type holds a Struct). A plain dict keyed by the
# class: the cheapest lookup on the construction path.
_CLASS_INFO: Dict[type, Tuple[Optional[str], Any, Tuple[Tuple[str, Any], ...]]] = {}


class _AguiMeta(msgspec.StructMeta):
    """Metaclass adding pydantic-style construction on top of msgspec's fast ``__init__``."""

    def __call__(cls, *args: Any, **kwargs: Any):
        info = _CLASS_INFO.get(cls)
        if info is None:
            info = _class_info(cls)
        tag_field, tag, nested = info
        if tag_field is not None and tag_field in kwargs:
            given = kwargs.pop(tag_field)
            given = given.value if isinstance(given, enum.Enum) else given
            if given != tag:
                raise ValueError(f"{cls.__name__}: {tag_field} must be {tag!r}, got {given!r}")
        try:
            obj = _struct_call(cls, *args, **kwargs)
        except TypeError:
            if args:
                raise
            obj = _construct_lenient(cls, kwargs)
        for name, tp in nested:
            value = getattr(obj, name)
            if isinstance(value, (dict, list)):
                setattr(obj, name, _convert_nested(value, tp, cls, name))
        return obj


def _class_info(cls):
    config = cls.__struct_config__
    nested = tuple((f.name, f.type) for f in msgspec.structs.fields(cls) if _mentions_struct(f.type))
    info = _CLASS_INFO[cls] = (config.tag_field, config.tag, nested)
    return info


def _construct_lenient(cls, kwargs: Dict[str, Any]):
    """Accept camelCase names and keep unknown keywords as extras (pydantic extra="allow")."""
    by_wire = {wire: attr for attr, wire, _ in cls.__agui_fields__}
    fields = set(cls.__struct_fields__)
    known: Dict[str, Any] = {}
    extras: Dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in fields:
            known[key] = value
    for key, value in kwargs.items():
        if key in fields:
            continue
        attr = by_wire.get(key)
        if attr is not None and attr in fields and attr not in known:
            known[attr] = value
        else:
            extras[key] = value
    obj = _StructMeta.__call__(cls, **known)
    obj.__dict__.update(extras)
    return obj


def _mentions_struct(tp) -> bool:
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return True
    return any(_mentions_struct(a) for a in typing.get_args(tp) if not isinstance(a, msgspec.Meta))


def _convert_nested(value: Any, tp: Any, cls: type, name: str) -> Any:
    return convert_value(value, tp, path=f"{cls.__name__}.{name}")


class _Model(
    msgspec.Struct,
    metaclass=_AguiMeta,
    kw_only=True,
    omit_defaults=True,
    forbid_unknown_fields=True,
    dict=True,
    repr_omit_defaults=True,
):
    """Base of every AG-UI Struct (the msgspec counterpart of ``GeneratedBaseModel``)."""

    __agui_fields__: ClassVar[tuple] = ()

    # -- pydantic-compatible conveniences (not hot paths) ---------------------------------

    @property
    def model_extra(self) -> Dict[str, Any]:
        """Members that are not declared fields (kept on decode, written on encode)."""
        return self.__dict__

    def model_dump(self, *, by_alias: bool = False, mode: str = "python", **_: Any) -> Dict[str, Any]:
        """The model as plain Python data, omitting optional fields that are None."""
        return to_builtins(self, by_alias=by_alias)

    def model_dump_json(self, *, by_alias: bool = False, **_: Any) -> str:
        """JSON text exactly as the reference's ``model_dump_json`` writes it."""
        if by_alias:
            return _native.dumps(self).decode()
        return _native.dumps(to_builtins(self, by_alias=False)).decode()

    @classmethod
    def model_validate(cls, obj: Any):
        """Validate a dict (or an instance) into this class."""
        if isinstance(obj, cls):
            return obj
        return convert_value(obj, cls, path=cls.__name__)

    @classmethod
    def model_validate_json(cls, data: Union[bytes, bytearray, memoryview, str]) -> Any:
        return decode_json(data, cls)

    def model_copy(self, *, update: Optional[Dict[str, Any]] = None, deep: bool = False) -> Any:
        new = copy.deepcopy(self) if deep else msgspec.structs.replace(self)
        if not deep:
            new.__dict__.update(self.__dict__)
        for key, value in (update or {}).items():
            if key in self.__struct_fields__:
                setattr(new, key, value)
            else:
                new.__dict__[key] = value
        return new


Timestamp = Annotated[int, Meta(ge=-9007199254740991, le=9007199254740991)]


class BaseEvent(_Model):
    """The fields every event carries, whatever its type."""

    timestamp: Optional[Timestamp] = None
    raw_event: Any = field(default=None, name="rawEvent")
    metadata: Optional[Dict[str, Any]] = None
    __agui_fields__: ClassVar[tuple] = (
        ("type", "type", False),
        ("timestamp", "timestamp", True),
        ("raw_event", "rawEvent", True),
        ("metadata", "metadata", True),
    )
