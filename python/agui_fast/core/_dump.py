"""Plain Python data for a Struct tree (the ``model_dump`` rules); moved unchanged from
``agui_fast.encoder``, which re-exports it."""

from __future__ import annotations

import enum
from typing import Any, Dict, Tuple

import msgspec

__all__ = ["to_builtins", "fields_of"]

_FIELDS: Dict[type, Tuple[Tuple[str, str, bool], ...]] = {}


def fields_of(cls: type) -> Tuple[Tuple[str, str, bool], ...]:
    """``(attribute, wire key, omit if None)`` of every field of a Struct class, in the
    order they are written: its ``__agui_fields__``, then the fields a user's subclass
    added (camelCase wire names, left out when None by default), as the encoder's plan
    writes them (plan.rs ``struct_plan``)."""
    out = _FIELDS.get(cls)
    if out is None:
        base = tuple(getattr(cls, "__agui_fields__", ()))
        known = {attr for attr, _, _ in base}
        added = tuple(
            (f.name, f.encode_name, not f.required and f.default is None)
            for f in msgspec.structs.fields(cls)
            if f.name not in known
        )
        out = _FIELDS[cls] = base + added
    return out


def to_builtins(obj: Any, *, by_alias: bool = True, enums: bool = False) -> Any:
    """Plain Python data (dicts in the reference's key order) for a Struct tree.

    Optional fields that are None are left out, extras follow the declared fields — the
    same rules as the reference's ``model_dump(by_alias=...)``. ``enums``: Enum members
    (the events' ``type``) are kept, as pydantic's python mode keeps them.
    """
    if isinstance(obj, msgspec.Struct):
        out: Dict[str, Any] = {}
        for attr, wire, omit in fields_of(type(obj)):
            value = getattr(obj, attr)
            if value is None and omit:
                continue
            out[wire if by_alias or attr == "from_" else attr] = to_builtins(value, by_alias=by_alias, enums=enums)
        for key, value in obj.__dict__.items():
            out[key] = to_builtins(value, by_alias=by_alias, enums=enums)
        return out
    if isinstance(obj, enum.Enum):
        return obj if enums else obj.value
    if isinstance(obj, dict):
        return {k: to_builtins(v, by_alias=by_alias, enums=enums) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_builtins(v, by_alias=by_alias, enums=enums) for v in obj]
    return obj
