"""Base classes shared by every generated Struct in ``_models.py``.

Design (see docs/design.md):

* Members of discriminated unions (events, messages, parts, sources, outcomes, patch
  operations) are msgspec *tagged* Structs, so one C-level ``msgspec`` call decodes and
  validates a whole event. The tag is a class attribute (``event.type``, ``message.role``,
  ``op.op``), not a field.
* Construction validates like the reference's pydantic models, natively (``_AguiMeta`` is
  made by ``_native.struct_meta``; see ``_construct``): types, required fields, literals and
  constraints are checked; the tag may be passed
  (``TextMessageStartEvent(type=EventType.TEXT_MESSAGE_START, ...)``), camelCase names are
  accepted, unknown keywords become *extra* members (kept and re-emitted, like pydantic's
  ``extra="allow"``), and dicts given for nested model fields are converted. Errors are
  ``agui_fast.errors.ValidationError`` (also pydantic's when pydantic is installed).
  msgspec's decoder does not call the class, so decoding pays nothing for this.
* Extras live in the instance ``__dict__`` (``dict=True``); the encoders write them after
  the declared fields, as the reference does. ``model_fields_set`` is exact (``_given``);
  pickling and copying keep the extras and that record.
* ``forbid_unknown_fields=True`` turns "this JSON has extra members" into a decode error
  that the decoders catch to take the (rare) extras-preserving path (``_convert``); the
  common case stays a single msgspec call.
* This layer imports no codec module: conversion (``_convert``), plain data (``_dump``)
  and the native JSON writer are all it needs.
"""

from __future__ import annotations

import copy
import enum
import functools
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Dict, Optional, Union

import msgspec
from msgspec import Meta, field

from .. import _native
from ..errors import EncodeError
from . import _construct, _given, _pydantic
from ._convert import convert_value, parse_json
from ._dump import fields_of, to_builtins, to_builtins_loop
from ._pointer import POINTER

__all__ = ["EventType", "BaseEvent", "_Model", "_AguiMeta", "JsonPointer", "check_pointers"]


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

# The metaclass is native (construct.rs): calling a Struct class checks the keywords against
# a per-class plan (`_construct.plan_of`) and builds the instance with msgspec's constructor;
# everything else (camelCase names, extras, nested dicts, coercions, errors) goes to
# `_construct_lenient`, which raises agui_fast.errors.ValidationError naming the field.
_construct_lenient = _construct.lenient


class _Probe(msgspec.Struct):
    """A plain msgspec Struct: where construct.rs finds msgspec's own vectorcall."""


if TYPE_CHECKING:  # to type checkers, the native metaclass is the msgspec one it extends
    _AguiMeta = _StructMeta
else:
    _AguiMeta = _native.struct_meta(_StructMeta, _Probe, _construct.plan_of, _construct_lenient, _given.Extras, _given.Shared)
_struct_setattr = msgspec.Struct.__setattr__
_instance_dict = _native.instance_dict


_json_decode = msgspec.json.Decoder().decode


def _json_mode(obj: Any, by_alias: Any, exclude_none: bool = False) -> Any:
    """``model_dump(mode="json")``: what the model's JSON reads back as."""
    try:
        if exclude_none:
            return _json_decode(_native.dump_json(obj, by_alias, True))
        return _json_decode(_native.dumps(obj) if by_alias else _native.dump_json(obj, False, False))
    except EncodeError:
        return _json_refused(obj, by_alias, exclude_none)


def _json_refused(obj: Any, by_alias: Any, exclude_none: bool) -> Any:
    """JSON mode where the JSON walk refused: the Python mode's data written as JSON (an
    extra repeating a field's name, a foreign Struct ...)."""
    data = _native.dump_python(obj, by_alias, False, exclude_none, _dump_loop)
    if not by_alias:
        try:
            return _json_decode(_native.dumps(data))
        except EncodeError:
            pass
    # What the writer refuses — a str with a lone surrogate (the decoders keep them;
    # pydantic's json mode keeps the str too), a member assigned a value of the wrong
    # kind — is given as it is: agui_fast.stream reads such events through this (its JSON
    # path).
    return data


def _dump_loop(obj: Any, by_alias: bool, enums: bool, exclude_none: bool) -> Any:
    """Python mode by the Python loop (what the native walk leaves to it)."""
    return to_builtins_loop(obj, by_alias=by_alias, enums=enums, exclude_none=exclude_none)


def _model_dump_unfiltered(
    self: Any, *, by_alias: bool = False, mode: str = "python", exclude_none: bool = False, **_: Any
) -> Dict[str, Any]:
    if mode == "json":
        return _json_mode(self, by_alias, exclude_none)
    return _native.dump_python(self, by_alias, True, exclude_none, _dump_loop)


# model_dump with include / exclude / exclude_unset / exclude_defaults (and exclude_none
# in JSON mode): the data of the unfiltered dump, filtered in Python.
_model_dump_filtered = _pydantic.with_include_exclude(_model_dump_unfiltered)


class _Model(
    msgspec.Struct,
    metaclass=_AguiMeta,
    kw_only=True,
    omit_defaults=True,
    forbid_unknown_fields=True,
    dict=True,
    repr_omit_defaults=True,
    rename="camel",  # the generated fields name their wire keys; a user's subclass's fields get camelCase ones, as with to_camel
):
    """Base of every AG-UI Struct (the msgspec counterpart of ``GeneratedBaseModel``)."""

    __agui_fields__: ClassVar[tuple] = ()

    # -- pydantic-compatible conveniences (not hot paths) ---------------------------------

    @property
    def model_extra(self) -> Dict[str, Any]:
        """Members that are not declared fields (kept on decode, written on encode)."""
        return self.__dict__

    def model_dump(
        self,
        *,
        mode: str = "python",
        include: Any = None,
        exclude: Any = None,
        by_alias: Optional[bool] = False,
        exclude_unset: bool = False,
        exclude_defaults: bool = False,
        exclude_none: bool = False,
        **kwargs: Any,
    ) -> Dict[str, Any]:
        """The model as plain Python data, omitting optional fields that are None; the
        ``type`` an ``EventType`` member unless ``mode="json"``, where every value is what
        its JSON reads back as (datetimes as ISO text ...), as pydantic gives it.
        ``include``, ``exclude``, ``exclude_none``, ``exclude_unset`` and
        ``exclude_defaults`` as in pydantic."""
        if include is None and exclude is None and not (exclude_unset or exclude_defaults):
            # The common calls: one native walk (exclude_none applied by it in Python mode).
            if mode != "json":
                return _native.dump_python(self, by_alias, True, exclude_none, _dump_loop)
            try:
                if not exclude_none:
                    return _json_decode(_native.dumps(self) if by_alias else _native.dump_json(self, False, False))
                return _json_decode(_native.dump_json(self, by_alias, True))
            except EncodeError:
                return _json_refused(self, by_alias, exclude_none)
        return _model_dump_filtered(
            self,
            mode=mode,
            include=include,
            exclude=exclude,
            by_alias=by_alias,
            exclude_unset=exclude_unset,
            exclude_defaults=exclude_defaults,
            exclude_none=exclude_none,
            **kwargs,
        )

    def model_dump_json(self, *, by_alias: bool = False, indent: Optional[int] = None, **kwargs: Any) -> str:
        """JSON text exactly as the reference's ``model_dump_json`` writes it (``include``,
        ``exclude``, ``exclude_unset``, ``exclude_defaults`` too)."""
        if _pydantic.filters(kwargs):
            data = _native.dumps(self.model_dump(by_alias=by_alias, **kwargs))
        elif by_alias:
            data = _native.dumps(self)
        else:
            try:
                data = _native.dump_json(self, False, False)
            except EncodeError:
                # What the walk by name refuses is written as the plain data of the Python
                # mode would be (an extra repeating a field's name, a foreign Struct ...).
                data = _native.dumps(to_builtins(self, by_alias=False))
        if indent:  # msgspec's layout is pydantic's (", " and ": " with newlines)
            data = msgspec.json.format(data, indent=indent)
        return data.decode()

    @classmethod
    def model_construct(cls, _fields_set: Optional[Any] = None, **values: Any) -> Any:
        """pydantic's unvalidated constructor; here the values are validated all the same
        (a Struct is never left holding a value of the wrong type)."""
        return cls(**values)

    def __iter__(self) -> Any:
        """``(name, value)`` pairs in declared order, the tag first, then the extras, as
        iterating a pydantic model gives them (``dict(event)``)."""
        seen = set()
        for attr, _, _ in fields_of(type(self)):
            seen.add(attr)
            yield attr, getattr(self, attr)
        for item in self.__dict__.items():
            if item[0] not in seen:
                yield item

    # Their validation errors are agui_fast.errors.ValidationError (pydantic's too, when
    # pydantic is installed), as for construction. pydantic's options are accepted; the
    # validation is the same whatever they say (lax, by name and by alias; see README).
    @classmethod
    @_construct.raising_validation_error
    def model_validate(cls, obj: Any, **_options: Any) -> Any:
        """Validate a dict (or an instance) into this class."""
        if isinstance(obj, cls):
            return obj
        if isinstance(obj, dict):
            if _construct.plain(cls):
                built = _construct.converted(cls, obj)
                if built is not None:
                    return built
            return _construct.with_type(cls, obj, lambda rest: convert_value(rest, cls, path=cls.__name__))
        return convert_value(obj, cls, path=cls.__name__)

    @classmethod
    @_construct.raising_validation_error
    def model_validate_json(cls, data: Union[bytes, bytearray, memoryview, str], **_options: Any) -> Any:
        # Parsed, then converted (not msgspec's typed decoder, which cannot tell which
        # members were present): model_fields_set counts those given at their default.
        return cls.model_validate(parse_json(data))

    @classmethod
    def model_rebuild(cls, **_: Any) -> None:
        """Nothing to rebuild (pydantic returns None when the model is complete)."""
        return None

    # The pydantic v1 names, still served (deprecated) by pydantic 2's BaseModel.
    def dict(self, **kwargs: Any) -> Dict[str, Any]:
        _pydantic.deprecated("dict", "model_dump")
        return self.model_dump(**kwargs)

    def json(self, **kwargs: Any) -> str:
        _pydantic.deprecated("json", "model_dump_json")
        return self.model_dump_json(**kwargs)

    def copy(self, *, update: Optional[Dict[str, Any]] = None, deep: bool = False, **_: Any) -> Any:
        _pydantic.deprecated("copy", "model_copy")
        return self.model_copy(update=update, deep=deep)

    @classmethod
    def parse_obj(cls, obj: Any) -> Any:
        _pydantic.deprecated("parse_obj", "model_validate")
        return cls.model_validate(obj)

    @classmethod
    def parse_raw(cls, data: Union[bytes, str], **_: Any) -> Any:
        _pydantic.deprecated("parse_raw", "model_validate_json")
        return cls.model_validate_json(data)

    # -- pydantic and FastAPI interop (see _pydantic) ------------------------------------

    __get_pydantic_core_schema__ = classmethod(
        functools.partial(_pydantic.get_pydantic_core_schema, plain=_construct.plain, converted=_construct.converted)
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # TypeAdapter(cls) takes these as they are (validate_json through msgspec).
        _pydantic.adapter_attributes(cls, plain=_construct.plain, record=_native.record_given_json)

    __dataclass_fields__ = _pydantic.DataclassFields()  # FastAPI: a request body
    model_fields = _pydantic.ModelFields()
    __fields__ = _pydantic.V1Fields()  # pydantic v1's name
    model_computed_fields: ClassVar[Dict[str, Any]] = {}
    model_config: ClassVar[Dict[str, Any]] = _pydantic.MODEL_CONFIG
    model_fields_set = property(_given.fields_set)
    model_json_schema = classmethod(_pydantic.model_json_schema)

    def model_copy(self, *, update: Optional[Dict[str, Any]] = None, deep: bool = False) -> Any:
        new = copy.deepcopy(self) if deep else copy.copy(self)
        for key, value in (update or {}).items():
            if key in self.__struct_fields__:
                setattr(new, key, value)  # recorded as given, like pydantic's update
            else:
                new.__dict__[key] = value
        return new

    # -- attribute assignment, pickling, copying: extras and the fields-set record kept ---

    # The instance dict is never a shared record when code sees it (_given.Shared).
    __dict__ = property(_native.instance_dict, _native.set_instance_dict)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__struct_fields__:
            _instance_dict(self)  # an extra goes into a dict of this instance's own
        _struct_setattr(self, name, value)
        # Assigning a field gives it (pydantic); one set to its default must be recorded.
        default = _given.defaults(type(self)).get(name, _given.REQUIRED)
        if default is not _given.REQUIRED and _given.at_default(value, default):
            _given.mark(self, (name,))

    __reduce__ = _given.reduce

    def __copy__(self) -> Any:
        restore, args = self.__reduce__()
        return restore(*args)


Timestamp = Annotated[int, Meta(ge=-9007199254740991, le=9007199254740991)]

JsonPointer = Annotated[str, POINTER]
"""A ``str`` holding an RFC 6901 JSON Pointer (a patch operation's ``path``, ``from``),
checked natively rather than by msgspec's regex: by construction's plan, and after
decoding and conversion by the class's ``__post_init__`` (``check_pointers``)."""
check_pointers = _native.check_pointers


class BaseEvent(_Model):
    """The fields every event carries, whatever its type.

    Built directly (``BaseEvent(type=EventType.RAW, ...)``, as the reference's own tests
    do), its ``type`` is required and kept as an ``EventType`` member among the extras
    (``_construct.with_type``); the events' ``type`` is their msgspec tag."""

    __agui_type_enum__: ClassVar[type] = EventType

    timestamp: Optional[Timestamp] = None
    raw_event: Any = field(default=None, name="rawEvent")
    metadata: Optional[Dict[str, Any]] = None
    __agui_fields__: ClassVar[tuple] = (
        ("type", "type", False),
        ("timestamp", "timestamp", True),
        ("raw_event", "rawEvent", True),
        ("metadata", "metadata", True),
    )
