"""Which fields an instance was given — pydantic's ``model_fields_set`` — and pickling that
keeps it and the extras (docs/design.md, "Fields set").

pydantic records the fields given at construction and ``model_validate``, equal to their
default or not, and adds a field on attribute assignment. The Structs record nothing on the
common path: every default is None or a literal ``str``, so a field holding any other value
was given (or assigned); only the fields given *at* their default, and the tag when it is
passed (``type=EventType.RUN_STARTED``), need recording. They are kept in the instance's
``__dict__``, which then becomes an :class:`Extras` — a ``dict`` (the extras, unchanged)
with one slot for the recorded names. The encoders read the ``__dict__``'s items only, so
the record never reaches the wire.

Who records: the native constructor (construct.rs: :func:`mark` for a new instance,
natively), the converter
behind lenient construction and ``model_validate[_json]`` (``_convert``), attribute
assignment and ``model_copy`` (``_base``). Instances from the stream decoders record
nothing: a member sent as ``null`` (or as a literal's default, the tag included) is not
counted for them.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Set, Tuple

import msgspec

__all__ = ["Extras", "Shared", "mark", "given", "defaults", "at_default", "fields_set", "reduce", "restore", "REQUIRED"]

#: The ``default`` of a required field in :func:`defaults` and the converter's plans.
REQUIRED: Any = msgspec.NODEFAULT


class Extras(dict):
    """An instance ``__dict__``: the extras, plus the fields given at their default."""

    __slots__ = ("given",)
    given: Tuple[str, ...]


class Shared(Extras):
    """A record without extras that the instances built natively with the same names share
    (construct.rs: per class and combination of names), so that recording costs no
    allocation. It is never changed: the Structs' ``__dict__`` (``_native.instance_dict``)
    gives an instance holding one a record of its own first, and so does assigning an
    extra (``_Model.__setattr__``); the encoders read its (no) items as they are."""

    __slots__ = ()


def mark(obj: Any, names: Tuple[str, ...]) -> None:
    """Record that ``obj`` was given ``names`` (attribute names, the tag field included)."""
    d = obj.__dict__
    if type(d) is Extras:
        d.given = d.given + tuple(n for n in names if n not in d.given)
    else:
        new = Extras(d)
        new.given = names
        obj.__dict__ = new


def given(obj: Any) -> Tuple[str, ...]:
    d = obj.__dict__
    return d.given if type(d) is Extras else ()


_DEFAULTS: Dict[type, Dict[str, Any]] = {}


def defaults(cls: type) -> Dict[str, Any]:
    """Field name -> default value (``REQUIRED`` for required fields), in field order."""
    out = _DEFAULTS.get(cls)
    if out is None:
        out = _DEFAULTS[cls] = {
            f.name: REQUIRED if f.required else (f.default if f.default is not msgspec.NODEFAULT else f.default_factory())
            for f in msgspec.structs.fields(cls)
        }
    return out


def at_default(value: Any, default: Any) -> bool:
    """Whether ``value`` is the field's default (None, or a literal ``str``)."""
    return value is default or (type(default) is str and value == default)


def _by_value(obj: Any) -> Dict[str, Any]:
    """The fields whose value shows they were given: required, or not at their default."""
    out = {}
    for name, default in defaults(type(obj)).items():
        value = getattr(obj, name)
        if default is REQUIRED or not at_default(value, default):
            out[name] = value
    return out


def fields_set(obj: Any) -> Set[str]:
    """pydantic's ``model_fields_set``: the fields given (by value or as recorded), plus the
    extras, by attribute name."""
    names = set(_by_value(obj))
    d = getattr(obj, "__dict__", None)  # (none on a msgspec Struct without dict=True)
    if d is None:
        return names
    names.update(d)
    if type(d) is Extras:
        names.update(d.given)
    return names


def reduce(obj: Any) -> Tuple[Any, tuple]:
    """``obj.__reduce__()``: the class and the fields not at their default (the class is
    called with them, as msgspec's own pickling does, so that nothing is recorded but the
    saved record), the extras and the record."""
    return restore, (type(obj), _by_value(obj), dict(obj.__dict__) or None, given(obj) or None)


def restore(cls: type, values: Dict[str, Any], extras: Optional[dict], names: Optional[Iterable[str]]) -> Any:
    """Unpickle (and copy) a Struct: its fields, then its extras and record."""
    obj = cls(**values)
    if extras:
        obj.__dict__.update(extras)
    if names:
        mark(obj, tuple(names))
    return obj
