"""pydantic and FastAPI interop of the Structs (docs/design.md, "pydantic and FastAPI").

pydantic is optional: nothing here imports it unless it is installed.

* ``__get_pydantic_core_schema__``: a Struct class is a pydantic type (``TypeAdapter``,
  fields of pydantic models, FastAPI request and response models). Validation goes through
  msgspec (``model_validate``: instances pass as they are, dicts are converted); dumping
  goes through ``model_dump``; the JSON schema is that of a TypedDict of the fields under
  their wire names, so OpenAPI documents show the real shape.
* ``__dataclass_fields__``: real ``dataclasses.Field`` objects for the declared fields, so
  ``dataclasses.is_dataclass`` is true. FastAPI infers a request body only for pydantic
  models, dataclasses, mappings and sequences; this is what makes
  ``async def run(input_data: RunAgentInput)`` a body parameter after the one-import swap.
* ``__pydantic_validator__`` (with ``__pydantic_core_schema__`` and
  ``__pydantic_serializer__``): what ``TypeAdapter(cls)`` uses as they are, as it does a
  pydantic model's. ``validate_json`` decodes the JSON text with the class's msgspec
  decoder and records the members given at their default by reading the text beside the
  result (no Python values built for it); anything that path does not take (extras,
  snake_case names, values to coerce, errors) goes to pydantic's validator of the core
  schema above, so the results and the errors are the same. All three are built on
  first use: importing the Structs builds no pydantic schema.
* ``model_fields`` (pydantic ``FieldInfo`` with annotation, alias, default),
  ``model_json_schema`` and the include/exclude parameters of ``model_dump``
  (``model_fields_set``: ``_given``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Literal, Optional, Tuple, Type, cast

import msgspec

from . import _given
from ._convert import json_decoder
from ._dump import fields_of
from ._pointer import PointerSyntax

try:
    import pydantic
    from pydantic._internal._decorators import PydanticDescriptorProxy  # pydantic's own marker of a decorated member
    from pydantic_core import PydanticCustomError, PydanticUndefined
    from pydantic_core import core_schema as cs
except ImportError:  # pragma: no cover - exercised by the no-pydantic test
    _WITH_PYDANTIC = False
else:
    _WITH_PYDANTIC = True

if TYPE_CHECKING:
    from ._base import _Model

__all__ = [
    "get_pydantic_core_schema",
    "validators",
    "call_field_validator",
    "ModelFields",
    "DataclassFields",
    "model_json_schema",
    "with_include_exclude",
]


# -- the core schema ----------------------------------------------------------------------


def get_pydantic_core_schema(
    cls: Type[_Model], source: Any, handler: Any, *, plain: Callable[[type], bool], converted: Callable[[type, dict], Any]
) -> Any:
    """pydantic's hook (bound as a classmethod of ``_Model``, with construction's
    ``plain`` and ``converted``: a dict's validation in one msgspec conversion)."""
    fields = {}
    config = cls.__struct_config__
    if config.tag_field is not None:
        fields[config.tag_field] = cs.typed_dict_field(
            cs.literal_schema([config.tag]), required=False, serialization_alias=config.tag_field
        )
    for f in msgspec.structs.fields(cls):
        schema = handler.generate_schema(_pydantic_annotation(f.type))
        if not f.required:
            default = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
            schema = cs.with_default_schema(schema, default=default)
        fields[f.name] = cs.typed_dict_field(
            schema, required=f.required, validation_alias=f.encode_name, serialization_alias=f.encode_name
        )
    shape = cs.typed_dict_schema(fields, extra_behavior="allow", config=cs.CoreConfig(title=cls.__name__))

    # A wrap validator whose inner schema (never run) is `shape`: the same validation as a
    # plain one, but pydantic can read the tag literal from it, so the class may be a member
    # of a user's own `Annotated[Union[...], Field(discriminator="type")]`.
    fast = plain(cls)

    def validate(value: Any, _inner: Any) -> Any:
        # A request body (a dict from JSON) first, in one msgspec conversion; what that
        # refuses, and the errors, as model_validate gives them.
        if fast and type(value) is dict:
            built = converted(cls, value)
            if built is not None:
                return built
            return cls.model_validate(value)
        if isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return cls.model_validate(value)
        raise PydanticCustomError(
            "model_type", "Input should be a valid dictionary or instance of {class_name}", {"class_name": cls.__name__}
        )

    # Returns the fields under their attribute names: `shape` (the return schema) then
    # writes them under the wire names when by_alias, and its tag literal is what picks
    # the member when the Struct sits in a union. Nested Structs arrive already dumped.
    def serialize(value: Any, info: Any) -> Any:
        if isinstance(value, msgspec.Struct):
            return cast("_Model", value).model_dump()  # every Struct here is a _Model
        return value

    return cs.no_info_wrap_validator_function(
        validate,
        shape,
        serialization=cs.plain_serializer_function_ser_schema(serialize, info_arg=True, return_schema=shape),
        ref=f"{cls.__module__}.{cls.__qualname__}:{id(cls)}",
    )


class _Adapted:
    """pydantic's own adapter of one Struct class (``TypeAdapter(Annotated[cls, ...])``: the
    core schema above), built on first use; the three ``__pydantic_*__`` attributes of the
    class reach it through here."""

    __slots__ = ("cls", "_adapter")

    def __init__(self, cls: type) -> None:
        self.cls: type = cls
        self._adapter: Any = None

    @property
    def adapter(self) -> Any:
        if self._adapter is None:
            # Annotated: pydantic's generic path (the class's own attributes would name this).
            forms: Any = typing
            self._adapter = pydantic.TypeAdapter(forms.Annotated[self.cls, _OWN_SCHEMA])
        return self._adapter


_OWN_SCHEMA = "agui_fast: the class's own core schema"


class CoreSchema(typing.Mapping):
    """``__pydantic_core_schema__``: the class's core schema, read on first use."""

    __slots__ = ("_of",)

    def __init__(self, of: _Adapted) -> None:
        self._of = of

    def __getitem__(self, key: str) -> Any:
        return self._of.adapter.core_schema[key]

    def __iter__(self) -> Any:
        return iter(self._of.adapter.core_schema)

    def __len__(self) -> int:
        return len(self._of.adapter.core_schema)


class Serializer:
    """``__pydantic_serializer__``: pydantic's serializer of the core schema."""

    __slots__ = ("_of",)

    def __init__(self, of: _Adapted) -> None:
        self._of = of

    def __getattr__(self, name: str) -> Any:
        return getattr(self._of.adapter.serializer, name)


_JSON_TEXT = (bytes, str)


class Validator:
    """``__pydantic_validator__``: pydantic's validator of the core schema, with the JSON
    text of a plain class (``plain``: no validators of its own) decoded by msgspec first."""

    __slots__ = ("_of", "_plain", "_record", "_decode")

    def __init__(self, of: _Adapted, plain: Callable[[type], bool], record: Callable[[Any, Any], bool]) -> None:
        self._of, self._plain, self._record, self._decode = of, plain, record, _UNDECIDED

    def validate_json(self, input: Any, *, strict: Any = None, context: Any = None, **options: Any) -> Any:
        decode = self._decode
        if decode is _UNDECIDED:  # on the first call: the class is complete by then
            cls = self._of.cls
            decode = self._decode = json_decoder(cls).decode if self._plain(cls) else None
        if decode is not None and strict is None and context is None and not any(options.values()) and type(input) in _JSON_TEXT:
            try:
                obj = decode(input)
            except _FAST_JSON_ERRORS:
                pass
            else:
                if self._record(obj, input):
                    return obj
        return self._of.adapter.validator.validate_json(input, strict=strict, context=context, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._of.adapter.validator, name)


_UNDECIDED: Any = object()

#: What the typed decoder raises for text the exact path may still take, or words the error of.
_FAST_JSON_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, UnicodeEncodeError, RecursionError, ValueError, TypeError)


def adapter_attributes(cls: type, *, plain: Callable[[type], bool], record: Callable[[Any, Any], bool]) -> None:
    """Give ``cls`` (a Struct class, in its own ``__dict__``) the three attributes
    ``TypeAdapter(cls)`` takes as they are. Nothing is built until they are used."""
    if not _WITH_PYDANTIC:
        return
    of = _Adapted(cls)
    type.__setattr__(cls, "__pydantic_core_schema__", CoreSchema(of))
    type.__setattr__(cls, "__pydantic_serializer__", Serializer(of))
    type.__setattr__(cls, "__pydantic_validator__", Validator(of, plain, record))


def _pydantic_annotation(tp: Any) -> Any:
    """``tp`` with msgspec ``Meta`` constraints as pydantic's (for the JSON schema)."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    # The forms are subscripted with values computed at run time, which mypy cannot
    # read as type expressions: reached through an Any.
    forms: Any = typing
    if origin is typing.Annotated:
        metas = [_field_of(m) for m in args[1:] if isinstance(m, (msgspec.Meta, PointerSyntax))]
        if not metas:
            return _pydantic_annotation(args[0])
        params = (_pydantic_annotation(args[0]), *metas)
        return forms.Annotated[params]
    if origin is typing.Union:
        return forms.Union[tuple(_pydantic_annotation(a) for a in args)]
    if origin is list:
        return forms.List[_pydantic_annotation(args[0])]
    return tp


def _field_of(meta: Any) -> Any:
    """A msgspec ``Meta`` (or the JSON Pointer marker) as a pydantic ``Field``."""
    kwargs = {k: getattr(meta, k, None) for k in ("ge", "le", "gt", "lt", "min_length", "max_length", "pattern")}
    return pydantic.Field(**{k: v for k, v in kwargs.items() if v is not None})


# -- pydantic validators declared on a user's subclass -------------------------------------


class Validators(typing.NamedTuple):
    """A class's ``@model_validator`` / ``@field_validator`` functions, bound, by mode."""

    model_before: tuple  # (function(data) -> data)
    fields_before: tuple  # ((field names, function(value, info) -> value))
    fields_after: tuple
    model_after: tuple  # (function(instance) -> instance)


_VALIDATORS: Dict[type, Optional[Validators]] = {}


def validators(cls: type) -> Optional[Validators]:
    """The pydantic validators on ``cls`` and its bases (None when there are none), which
    construction and ``model_validate`` run as pydantic would: before-model, before-field,
    the build, after-field, after-model. Modes without a counterpart here (``wrap``,
    ``plain``) and v1 ``@validator`` are refused, not ignored."""
    if cls in _VALIDATORS:
        return _VALIDATORS[cls]
    found: Dict[str, Any] = {}
    if _WITH_PYDANTIC:
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                if isinstance(member, PydanticDescriptorProxy):
                    found[name] = member
    out = None
    if found:
        groups: Dict[str, list] = {"mb": [], "fb": [], "fa": [], "ma": []}
        for name, proxy in found.items():
            info, fn = proxy.decorator_info, _bound(cls, proxy.wrapped)
            kind = type(info).__name__
            if kind == "ModelValidatorDecoratorInfo" and info.mode in ("before", "after"):
                groups["mb" if info.mode == "before" else "ma"].append(fn)
            elif kind == "FieldValidatorDecoratorInfo" and info.mode in ("before", "after"):
                groups["fb" if info.mode == "before" else "fa"].append((tuple(info.fields), fn))
            elif kind in ("FieldSerializerDecoratorInfo", "ModelSerializerDecoratorInfo", "ComputedFieldInfo"):
                raise TypeError(f"{cls.__name__}.{name}: pydantic serializers are not supported on agui_fast Structs")
            else:
                mode = getattr(info, "mode", "?")
                raise TypeError(f"{cls.__name__}.{name}: pydantic {kind} (mode {mode!r}) is not supported on agui_fast Structs")
        out = Validators(tuple(groups["mb"]), tuple(groups["fb"]), tuple(groups["fa"]), tuple(groups["ma"]))
    _VALIDATORS[cls] = out
    return out


def _bound(cls: type, fn: Any) -> Any:
    if isinstance(fn, classmethod):
        return fn.__get__(None, cls)
    if isinstance(fn, staticmethod):
        return fn.__func__
    return fn


class _Info(typing.NamedTuple):
    """What a validator taking ``info`` reads (pydantic's ``ValidationInfo``)."""

    data: Dict[str, Any]
    field_name: Optional[str]
    context: Any = None
    config: Any = None
    mode: str = "python"


def call_field_validator(fn: Any, value: Any, field: str, data: Dict[str, Any]) -> Any:
    """One field validator: ``fn(value)`` or ``fn(value, info)``, as it declares."""
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return fn(value, _Info(data, field)) if len(params) >= 2 else fn(value)


# -- class-level attributes ---------------------------------------------------------------

#: ``model_config`` as the reference's ``GeneratedBaseModel`` declares it (a plain dict, as
#: pydantic's ``ConfigDict`` is), for code that reads it.
MODEL_CONFIG: Dict[str, Any] = {"extra": "allow", "populate_by_name": True}
if _WITH_PYDANTIC:
    from pydantic.alias_generators import to_camel

    MODEL_CONFIG["alias_generator"] = to_camel


def deprecated(old: str, new: str) -> None:
    """The warning pydantic 2 gives for a v1 method name (a ``DeprecationWarning``)."""
    category: Any = pydantic.warnings.PydanticDeprecatedSince20 if _WITH_PYDANTIC else DeprecationWarning
    warnings.warn(f"`{old}` is deprecated; use `{new}` instead.", category, stacklevel=3)


_FILTERS = ("include", "exclude", "exclude_none", "exclude_unset", "exclude_defaults")


def filters(kwargs: Dict[str, Any]) -> bool:
    """Does a ``model_dump_json`` call ask for any of ``model_dump``'s filters?"""
    return any(kwargs.get(k) for k in _FILTERS)


class _PerClass:
    """A class attribute computed once per class (read on the class or an instance)."""

    def __init__(self) -> None:
        self._cache: Dict[type, Any] = {}

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, obj: Any, owner: type) -> Any:
        try:
            return self._cache[owner]
        except KeyError:
            value = self._cache[owner] = self.compute(owner)
            return value

    def compute(self, cls: type) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class LiteFieldInfo:
    """``model_fields`` values when pydantic is not installed."""

    annotation: Any
    alias: Optional[str]
    default: Any
    default_factory: Any = None

    def is_required(self) -> bool:
        return self.default is _REQUIRED and self.default_factory is None


_REQUIRED = object()


class ModelFields(_PerClass):
    """``model_fields``: field name -> FieldInfo (annotation, alias, default), in the
    reference's declared order, the tag field included, like ``ag_ui.core``."""

    def compute(self, cls: Type[_Model]) -> Dict[str, Any]:
        by_name = {f.name: f for f in msgspec.structs.fields(cls)}
        config = cls.__struct_config__
        out: Dict[str, Any] = {}
        for attr, wire, _ in fields_of(cls):
            if attr == config.tag_field:
                member = getattr(cls, attr)
                out[attr] = _field_info(Literal[member], wire, member, None)
                continue
            f = by_name[attr]
            factory = None if f.default_factory is msgspec.NODEFAULT else f.default_factory
            default = _REQUIRED if f.required or factory is not None else f.default
            out[attr] = _field_info(f.type, wire, default, factory)
        return out


class V1Fields(ModelFields):
    """``__fields__``: pydantic v1's name of ``model_fields``, deprecated as pydantic 2 has it."""

    def __get__(self, obj: Any, owner: type) -> Any:
        deprecated("__fields__", "model_fields")
        return super().__get__(obj, owner)


def _field_info(annotation: Any, alias: Optional[str], default: Any, factory: Any) -> Any:
    if not _WITH_PYDANTIC:
        return LiteFieldInfo(annotation, alias, default, factory)
    kwargs: Dict[str, Any] = {"annotation": annotation, "alias": alias}
    if factory is not None:
        kwargs["default_factory"] = factory
    else:
        kwargs["default"] = PydanticUndefined if default is _REQUIRED else default
    return pydantic.fields.FieldInfo(**kwargs)


class DataclassFields(_PerClass):
    """``__dataclass_fields__``: what makes FastAPI infer a request body (see module doc)."""

    def compute(self, cls: type) -> Dict[str, dataclasses.Field]:
        out = {}
        for f in msgspec.structs.fields(cls):
            kwargs: Dict[str, Any] = {"kw_only": True}
            if f.default is not msgspec.NODEFAULT:
                kwargs["default"] = f.default
            elif f.default_factory is not msgspec.NODEFAULT:
                kwargs["default_factory"] = f.default_factory
            dc = dataclasses.field(**kwargs)
            dc.name, dc.type = f.name, f.type
            dc._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # private, not in typeshed; what dataclasses.fields() selects on
            out[f.name] = dc
        return out


def model_json_schema(cls: Type[_Model], by_alias: bool = True, ref_template: str = "#/$defs/{model}", mode: str = "validation", **kwargs: Any) -> Dict[str, Any]:
    """The class's JSON schema, as ``pydantic.BaseModel.model_json_schema`` gives it."""
    if not _WITH_PYDANTIC:
        raise ImportError("model_json_schema needs pydantic (pip install pydantic)")
    return _adapter(cls).json_schema(by_alias=by_alias, ref_template=ref_template, mode=mode, **kwargs)


@functools.lru_cache(maxsize=None)
def _adapter(cls: type) -> Any:
    return pydantic.TypeAdapter(cls)


# -- model_dump(include=..., exclude=...) ----------------------------------------------------


def with_include_exclude(dump):
    """Add pydantic's ``include``, ``exclude``, ``exclude_none``, ``exclude_unset`` and
    ``exclude_defaults`` to ``model_dump``."""

    @functools.wraps(dump)
    def model_dump(
        self,
        *,
        include: Any = None,
        exclude: Any = None,
        by_alias: Optional[bool] = False,
        exclude_none: bool = False,
        exclude_unset: bool = False,
        exclude_defaults: bool = False,
        **kwargs: Any,
    ):
        # exclude_none by the dump itself: pydantic's rules of extras named like fields
        data = dump(self, by_alias=bool(by_alias), exclude_none=exclude_none, **kwargs)
        if include is None and exclude is None and not (exclude_unset or exclude_defaults):
            return data
        drop = _Drop(False, exclude_unset, exclude_defaults)
        return _filter(self, data, _spec(include), _spec(exclude), bool(by_alias), drop)

    return model_dump


def _spec(spec: Any) -> Any:
    """Normalise an include/exclude value to ``None`` (no filter), ``True`` (all) or a dict."""
    if spec is None or spec is True or spec is Ellipsis:
        return spec if spec is None else True
    if isinstance(spec, dict):
        return spec
    return {k: True for k in spec}


def _child(spec: Any, key: Any) -> Any:
    if spec is None or spec is True:
        return spec
    sub = spec.get(key, spec.get("__all__"))
    return _spec(sub) if sub is not None else None


class _Drop(typing.NamedTuple):
    """pydantic's ``exclude_none`` / ``exclude_unset`` / ``exclude_defaults`` (applied at every depth)."""

    none: bool
    unset: bool
    defaults: bool


def _dropped(obj: Any, name: str, drop: _Drop) -> bool:
    """Does ``exclude_unset`` / ``exclude_defaults`` leave out the declared field ``name``?
    The tag is set only when it was passed, and always at its default; extras are neither."""
    cls = type(obj)
    tag = name == cls.__struct_config__.tag_field
    if not tag and name not in cls.__struct_fields__:
        return False
    if drop.unset and name not in _given.fields_set(obj):
        return True
    if drop.defaults:
        default = _given.defaults(cls).get(name, _given.REQUIRED)
        return tag or (default is not _given.REQUIRED and _given.at_default(getattr(obj, name), default))
    return False


def _filter(obj: Any, data: Any, include: Any, exclude: Any, by_alias: bool, drop: _Drop) -> Any:
    """``data`` (``obj`` dumped) filtered; a loop, not recursion (values of any depth)."""
    top: List[Any] = [None]
    stack = [(obj, data, include, exclude, top, 0)]
    while stack:
        obj, data, include, exclude, parent, slot = stack.pop()
        children = _filter_children(obj, data, include, exclude, by_alias, drop)
        if children is None:
            parent[slot] = data
            continue
        out: Any = {key: None for key, *_ in children} if isinstance(data, dict) else [None] * len(children)
        parent[slot] = out
        for i, (key, child, value, sub_inc, sub_exc) in reversed(list(enumerate(children))):
            stack.append((child, value, sub_inc, sub_exc, out, key if isinstance(out, dict) else i))
    return top[0]


def _filter_children(obj: Any, data: Any, include: Any, exclude: Any, by_alias: bool, drop: _Drop) -> Any:
    """The members of ``data`` the filters keep, as ``(key, object, value, include,
    exclude)``; ``None`` when ``data`` is kept as it is."""
    if exclude is True:
        return None
    if isinstance(obj, msgspec.Struct) and isinstance(data, dict):
        rev: Dict[str, str] = {wire if by_alias else attr: attr for attr, wire, _ in fields_of(type(obj))}
        extras = getattr(obj, "__dict__", None) or {}
        out: List[Tuple[Any, Any, Any, Any, Any]] = []
        late: List[Tuple[Any, Any, Any, Any, Any]] = []
        for key, value in data.items():
            name = rev[key] if key in rev else key
            if include not in (None, True) and name not in include and "__all__" not in include:
                continue
            sub_exc = _child(exclude, name)
            if sub_exc is True or (drop.none and value is None):
                continue
            # (an extra wrote the member: one of this key, unless a None one that
            # exclude_none skipped and the field's value is here)
            extra = key in extras and (extras[key] is not None or value is None)
            kept = out
            if (drop.unset or drop.defaults) and _dropped(obj, name, drop):
                if not extra:
                    continue
                # An extra that took the place of this field: pydantic leaves the field out
                # and sets the extra after the fields.
                kept = late
            child = extras[key] if extra else getattr(obj, name) if name in type(obj).__struct_fields__ else None
            kept.append((key, child, value, _child(include, name), sub_exc))
        return out + late
    if isinstance(data, dict):
        items = [(k, v, obj.get(k) if isinstance(obj, dict) else None) for k, v in data.items()]
    elif isinstance(data, list) and isinstance(obj, (list, tuple)):
        items = [(i, v, obj[i]) for i, v in enumerate(data)]
    else:
        return None
    kept = []
    for key, value, child in items:
        if include not in (None, True) and key not in include and "__all__" not in include:
            continue
        sub_exc = _child(exclude, key)
        if sub_exc is True:
            continue
        kept.append((key, child, value, _child(include, key), sub_exc))
    return kept

