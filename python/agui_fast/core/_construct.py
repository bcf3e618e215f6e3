"""Validating construction of the Structs (docs/design.md, "Construction").

The Structs' metaclass is native (``agui_fast._native.struct_meta``, construct.rs): calling
a class checks each keyword against a per-class *plan* and, when every keyword is a
declared field holding a plainly valid value, builds the instance with msgspec's own
constructor, without a Python frame. This module supplies the two Python halves:

* :func:`plan_of` — the plan spec of a class, read once from msgspec's field metadata
  (types and ``Meta`` constraints, which ``tools/gen_core.py`` takes from the reference);
* :func:`lenient` — everything the fast path does not take: camelCase names, unknown
  keywords (kept as extras), dicts for nested models, values that need coercion (pydantic
  lax mode ≈ msgspec ``strict=False``), and every invalid or missing field, which raises
  :class:`agui_fast.errors.ValidationError` naming the field.
"""

from __future__ import annotations

import re
import typing
from typing import Any, Callable, Dict, Literal, Tuple, Type, TypeVar, Union, cast

import msgspec

from .. import _native
from ..errors import EventValidationError, InvalidJsonError, ValidationError
from . import _given, _pydantic
from ._convert import _plan, _resolve, convert_value
from ._dump import fields_of
from ._pointer import JSON_POINTER_PATTERN, PointerSyntax

__all__ = ["plan_of", "plain", "converted", "lenient", "with_type", "validation_error", "raising_validation_error"]


_ANY = ("any",)
_NEVER = ("never",)
_I64 = (-(2**63), 2**63 - 1)


def plan_of(cls: Type[msgspec.Struct]) -> Tuple[Any, Tuple[Tuple[str, bool, tuple, Any, str], ...]]:
    """``(tag, fields)``: ``tag`` is ``(tag field, tag value)`` or None; each field is
    ``(attribute, required, check, default, wire name)`` with ``check`` a nested tuple read
    by construct.rs and ``default`` the value (None or a literal ``str``) that, given
    explicitly, must be recorded for ``model_fields_set`` (None for required fields)."""
    config = cls.__struct_config__  # a new object per access: read once
    tag = (config.tag_field, config.tag) if config.tag_field is not None else None
    defaults = _given.defaults(cls)
    # A class with a required `type` that is no field (BaseEvent), or with pydantic
    # validators (a user's subclass): every call goes to `lenient`, which runs them (each
    # field "required" and never taken natively: routing only).
    if not plain(cls):
        return tag, tuple((f.name, True, _NEVER, None, f.encode_name) for f in msgspec.structs.fields(cls))
    fields = tuple(
        (f.name, f.required, _check(f.type), None if f.required else defaults[f.name], f.encode_name)
        for f in msgspec.structs.fields(cls)
    )
    return tag, fields


_PLAIN: Dict[type, bool] = {}


def plain(cls: Any) -> bool:
    """Does ``cls`` validate as msgspec converts, with nothing of its own around it (no
    untagged ``type`` to keep, as ``BaseEvent`` has; no pydantic validators of a user's
    subclass)? Construction's native route and ``model_validate``'s fast path take only
    such classes."""
    out = _PLAIN.get(cls)
    if out is None:
        out = _PLAIN[cls] = _type_enum(cls) is None and _pydantic.validators(cls) is None
    return out


#: What msgspec raises for data the exact path may still take, or must word the error of.
_CONVERT_ERRORS = (msgspec.ValidationError, UnicodeEncodeError, RecursionError, TypeError, ValueError)
_msgspec_convert = msgspec.convert
_record_given = _native.record_given


def converted(cls: Any, data: Dict[str, Any]) -> Any:
    """``cls.model_validate(data)`` for a dict ``data`` (``cls``: :func:`plain`) in one
    msgspec conversion, then the members given at their default and the tags given recorded
    at every level (``_native.record_given``: ``model_fields_set`` stays exact); None for
    data msgspec refuses (extras, snake_case names, values to coerce or report), which the
    exact path takes."""
    try:
        obj = _msgspec_convert(data, cls, strict=False)
    except _CONVERT_ERRORS:
        return None
    return obj if _record_given(obj, data) else None


def _type_enum(cls: Any) -> Any:
    """The enum of the required, untagged ``type`` of ``BaseEvent`` and its untagged
    subclasses (the reference's ``type: EventType``), or None."""
    if cls.__struct_config__.tag_field is not None:
        return None
    return getattr(cls, "__agui_type_enum__", None)


def with_type(cls: Any, kwargs: Dict[str, Any], build: Callable[[Dict[str, Any]], Any]) -> Any:
    """``build(kwargs)``, with what the class adds around it: a user subclass's pydantic
    validators (``_pydantic.validators``: before-model, before-field, the build,
    after-field, after-model, as pydantic orders them), and the required, untagged ``type``
    of ``BaseEvent`` (``_type_enum``) checked and kept, as the enum member, in the
    instance's extras (where the encoders and ``model_dump`` read it, first)."""
    enum_type = _type_enum(cls)
    checks = _pydantic.validators(cls)
    if enum_type is None and checks is None:
        return build(kwargs)
    title = cls.__name__
    rest = dict(kwargs)
    if checks is not None:
        for fn in checks.model_before:
            rest = _run(title, (), fn, rest)
        wires = {attr: wire for attr, wire, _ in fields_of(cls)}
        for names, fn in checks.fields_before:
            for name in names:
                key = name if name in rest else wires.get(name, name)
                if key in rest:
                    rest[key] = _run(title, (key,), _pydantic.call_field_validator, fn, rest[key], name, rest)
    if enum_type is not None:
        rest = _typed(title, enum_type, rest)
        member = rest.pop("type")
    obj = build(rest)
    if enum_type is not None:
        obj.__dict__["type"] = member
    if checks is not None:
        wires = {attr: wire for attr, wire, _ in fields_of(cls)}
        for names, fn in checks.fields_after:
            for name in names:
                data = {f: getattr(obj, f) for f in cls.__struct_fields__}
                value = _run(title, (wires.get(name, name),), _pydantic.call_field_validator, fn, getattr(obj, name), name, data)
                msgspec.Struct.__setattr__(obj, name, value)
        for fn in checks.model_after:
            result = _run(title, (), fn, obj)
            obj = obj if result is None else result
    return obj


def _typed(title: str, enum_type: Any, rest: Dict[str, Any]) -> Dict[str, Any]:
    """``rest`` with its ``type`` as the enum member, or the reference's ValidationError."""
    if "type" not in rest:
        detail = "Object missing required field `type`"
        raise ValidationError.build(title, f"invalid {title}: {detail} - at `{title}.type`", field=f"{title}.type", loc=("type",), detail=detail)
    given = rest["type"]
    try:
        rest["type"] = enum_type(given)
    except (ValueError, TypeError):
        detail = f"Invalid enum value {given!r}"
        raise ValidationError.build(
            title, f"invalid {title}: {detail} - at `{title}.type`", field=f"{title}.type", loc=("type",), input=given, detail=detail
        ) from None
    return rest


def _run(title: str, loc: tuple, fn: Callable[..., Any], *args: Any) -> Any:
    """A user's validator; its ``ValueError`` / ``AssertionError`` becomes a
    ValidationError, as pydantic reports it ("Value error, ...")."""
    try:
        return fn(*args)
    except ValidationError:
        raise
    except (ValueError, AssertionError) as exc:
        kind = "Assertion failed" if isinstance(exc, AssertionError) else "Value error"
        detail = f"{kind}, {exc}"
        where = f" - at `{title}.{loc[0]}`" if loc else ""
        raise ValidationError.build(
            title, f"invalid {title}: {detail}{where}", field=f"{title}.{loc[0]}" if loc else title, loc=loc, detail=detail
        ) from None


def _check(tp: Any) -> tuple:
    """The fast-path check for a field type (``never``: always the lenient path)."""
    if tp is Any:
        return _ANY
    if tp is str:
        return ("str",)
    if tp is bool:
        return ("bool",)
    if tp is int:
        return ("int", *_I64)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return ("structs", (tp,))
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        if args[0] is str and any(isinstance(m, PointerSyntax) for m in args[1:]):
            return ("json_pointer",)  # the patch engine's RFC 6901 parser, natively
        return _constrained(args[0], [m for m in args[1:] if isinstance(m, msgspec.Meta)])
    if origin is Union:
        members = [a for a in args if a is not type(None)]
        checks = [_check(a) for a in members]
        if all(c[0] == "structs" for c in checks):
            inner = ("structs", tuple(c for chk in checks for c in chk[1]))
        else:
            inner = checks[0] if len(checks) == 1 else ("union", tuple(checks))
        return ("optional", inner) if len(members) < len(args) else inner
    if origin is Literal:
        return ("literal", args) if all(type(a) is str for a in args) else _NEVER
    if origin is list:
        return ("list", _check(args[0]) if args else _ANY, 0)
    if origin is dict and args and args[0] is str and args[1] is Any:
        return ("dict",)
    return _NEVER


def _constrained(tp: Any, metas: list) -> tuple:
    base = _check(tp)
    lo, hi, pattern, min_length = None, None, None, None
    for meta in metas:
        for name in ("gt", "lt", "multiple_of", "max_length", "tz"):
            if getattr(meta, name) is not None:
                return _NEVER  # not modelled natively: the lenient path checks it
        lo = meta.ge if meta.ge is not None else lo
        hi = meta.le if meta.le is not None else hi
        pattern = meta.pattern if meta.pattern is not None else pattern
        min_length = meta.min_length if meta.min_length is not None else min_length
    if base[0] == "int":
        return ("int", max(_I64[0], lo if lo is not None else _I64[0]), min(_I64[1], hi if hi is not None else _I64[1]))
    if base[0] == "str" and pattern is not None and min_length is None and lo is None and hi is None:
        return ("pattern", re.compile(pattern).search)  # msgspec matches with re.search too
    if base[0] == "list" and min_length is not None and pattern is None and lo is None and hi is None:
        return ("list", base[1], min_length)
    return _NEVER


def lenient(cls: Type[msgspec.Struct], kwargs: Dict[str, Any]) -> Any:
    """Build ``cls`` from keywords the way the reference's pydantic models do."""
    config = cls.__struct_config__
    tag_field = config.tag_field
    if tag_field is not None and tag_field in kwargs:
        given = kwargs[tag_field]
        if not (isinstance(given, str) and given == config.tag):
            raise ValidationError.build(
                cls.__name__,
                f"invalid {cls.__name__}: `{tag_field}` must be {config.tag!r}, got {given!r}",
                field=f"{cls.__name__}.{tag_field}",
                loc=(tag_field,),
                input=given,
            )
    try:
        return with_type(cls, kwargs, lambda rest: convert_value(rest, cls, path=cls.__name__))
    except EventValidationError as exc:
        raise validation_error(exc, cls.__name__, kwargs, cls) from None


_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def validation_error(exc: EventValidationError, title: str, value: Any = None, cls: Any = None) -> ValidationError:
    """The same error as a :class:`ValidationError` (a pydantic one when pydantic is there).
    ``cls``: the class validated, to spell ``loc`` through discriminated unions as pydantic does."""
    if isinstance(exc, ValidationError):
        return exc
    field = exc.field or title
    rest = field[len(title):] if field.startswith(title) else field.lstrip("$")
    if field.startswith("$"):
        field = title + rest
    loc = tuple(m.group(1) if m.group(1) is not None else int(m.group(2)) for m in _STEP.finditer(rest))
    detail = _AT.sub("", _WHAT.sub("", exc.message, count=1))
    loc, given, tag_error = _locate(cls, value, loc)
    kind, ctx = tag_error if tag_error is not None else _pydantic_kind(detail, given)
    return ValidationError.build(title, f"invalid {title}: {detail} - at `{field}`", field=field, loc=loc, input=given, detail=detail, kind=kind, ctx=ctx)


_AT = re.compile(r" - at `[^`]*`$")
_WHAT = re.compile(r"^invalid (?:event|[A-Z]\w*): ")  # _convert.validation_error's words

# msgspec's wording of an error -> pydantic's error type (and its context), where pydantic
# has one for the same failure: FastAPI's 422 then reads as the reference's.
_EXPECTED = re.compile(r"^Expected `(str|int|bool|float|array|object)(?: \| null)?`, got `(\w+)`$")
_BOUND = re.compile(r"^Expected `int` (>=|<=) (-?\d+)$")
_MIN_ITEMS = re.compile(r"^Expected `array` of length >= (\d+)$")
_PATTERN = re.compile(r"^Expected `str` matching regex '(.*)'$")
_TYPE_ERRORS = {"str": "string_type", "int": "int_type", "bool": "bool_type", "float": "float_type", "array": "list_type", "object": "dict_type"}
_PARSING = {("int", "str"): "int_parsing", ("int", "float"): "int_from_float", ("bool", "str"): "bool_parsing", ("float", "str"): "float_parsing"}


def _pydantic_kind(detail: str, given: Any) -> Tuple[Any, Any]:
    """``(pydantic error type, its context)`` for msgspec's ``detail``, or ``(None, None)``
    (our own ``agui_validation`` type, ``missing`` for a missing member)."""
    m = _EXPECTED.match(detail)
    if m:
        return _PARSING.get((m.group(1), m.group(2)), _TYPE_ERRORS[m.group(1)]), None
    m = _BOUND.match(detail)
    if m:
        bound = int(m.group(2))
        return ("greater_than_equal", {"ge": bound}) if m.group(1) == ">=" else ("less_than_equal", {"le": bound})
    m = _MIN_ITEMS.match(detail)
    if m and isinstance(given, (list, tuple)):
        return "too_short", {"field_type": "List", "min_length": int(m.group(1)), "actual_length": len(given)}
    m = _PATTERN.match(detail)
    if m:
        return "string_pattern_mismatch", {"pattern": m.group(1)}
    return None, None


def _locate(cls: Any, value: Any, loc: tuple) -> Tuple[tuple, Any, Any]:
    """One walk of the input along msgspec's ``loc``, with the schema beside it while ``cls``
    lasts, giving what pydantic reports:

    * ``loc`` with each key as the input spelled it (a member given by its attribute name,
      ``thread_id=1``, is located by that name) and the member's tag after each
      discriminated union it passes through (``("messages", 0, "user", "id")``; msgspec's
      path has no such step);
    * the input there, or None when it is not there; a member missing from an object is
      reported with that object as the input, as pydantic's ``missing`` error does (FastAPI's
      422 shows it);
    * ``(kind, ctx)`` when the error is a union member's tag that is unknown or absent, which
      pydantic reports at the union (``union_tag_invalid``/``_not_found``), else None."""
    out = []
    pos = None
    for i, step in enumerate(loc):
        if isinstance(value, dict) and isinstance(step, str) and step not in value and _snake(step) in value:
            step = _snake(step)
        out.append(step)
        # The schema's position of this step: a field of a Struct, or the item of a list field.
        if isinstance(step, str):
            struct = isinstance(cls, type) and issubclass(cls, msgspec.Struct)
            pos = next((p for name, wire, p, _ in _plan(cls)[2] if step in (name, wire)), None) if struct else None
        else:
            pos = pos.item if pos is not None and isinstance(value, list) else None
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            missing = i == len(loc) - 1 and isinstance(value, dict) and isinstance(step, str)
            return tuple(out) + loc[i + 1:], (value if missing else None), None
        if pos is None or isinstance(value, list):
            cls = None  # past the schema, or a list whose next step is an index into it
            continue
        cls = _resolve(pos, value)
        if len(pos.by_tag) < 2 or not isinstance(value, dict) or i == len(loc) - 1:
            continue
        if cls is not None:
            out.append(cls.__struct_config__.tag)
        elif loc[i + 1:] == (pos.tag_field,):
            disc = {"discriminator": repr(pos.tag_field)}
            if pos.tag_field not in value:
                return tuple(out), value, ("union_tag_not_found", disc)
            # by_tag holds the members in reverse order of the Union (see _convert._position)
            expected = ", ".join(repr(t) for t in reversed(list(pos.by_tag)))
            return tuple(out), value, ("union_tag_invalid", {**disc, "tag": str(value[pos.tag_field]), "expected_tags": expected})
    return tuple(out), value, None


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


_F = TypeVar("_F", bound=Callable[..., Any])


def raising_validation_error(fn: _F) -> _F:
    """Wrap a ``model_validate``-style classmethod body so that its validation errors are
    :class:`ValidationError` (pydantic-compatible) rather than plain EventValidationError."""

    def wrapper(cls: type, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(cls, *args, **kwargs)
        except EventValidationError as exc:
            raise validation_error(exc, cls.__name__, args[0] if args else None, cls) from None
        except InvalidJsonError as exc:  # pydantic reports bad JSON as a ValidationError too
            title = cls.__name__
            raise ValidationError.build(title, f"invalid {title}: {exc}", input=args[0] if args else None) from None

    wrapper.__name__ = fn.__name__
    wrapper.__qualname__ = fn.__qualname__
    wrapper.__doc__ = fn.__doc__
    return cast(_F, wrapper)
