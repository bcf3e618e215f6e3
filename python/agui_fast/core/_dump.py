"""Plain Python data for a Struct tree (the ``model_dump`` rules), re-exported by
``agui_fast.encoder``: made natively by the one object walker (``_native.dump_python``);
the Python loop here is the reference of the rules and takes what the walk leaves to it
(a dict key that is not an exact ``str``, a msgspec Struct that is not one of ours,
nesting past the walker's depth limit, a value that contains itself)."""

from __future__ import annotations

import enum
from typing import Any, Dict, List, Set, Tuple

import msgspec

from .. import _native
from ..errors import EncodeError

__all__ = ["to_builtins", "to_builtins_loop", "fields_of"]

_FIELDS: Dict[type, Tuple[Tuple[str, str, bool], ...]] = {}
_OMIT: Dict[type, frozenset] = {}

# The deepest nesting ``to_builtins`` walks (pydantic's python mode takes values far
# deeper than any ``max_depth=`` of the encoders).
MAX_DEPTH = 100_000


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


def omit_keys(cls: type) -> frozenset:
    """The keys of a Struct class's omittable fields, names and wire keys both (the
    reference's ``_omittable_keys``): a member under one of them holding None is left
    out, whether a field or an extra wrote it."""
    out = _OMIT.get(cls)
    if out is None:
        out = _OMIT[cls] = frozenset(k for attr, wire, omit in fields_of(cls) if omit for k in (attr, wire))
    return out


def to_builtins(obj: Any, *, by_alias: bool = True, enums: bool = False) -> Any:
    """Plain Python data (dicts in the reference's key order) for a Struct tree: the
    rules of :func:`to_builtins_loop`, made natively."""
    return _native.dump_python(obj, by_alias, enums, False, _loop)


def _loop(obj: Any, by_alias: bool, enums: bool, exclude_none: bool) -> Any:
    return to_builtins_loop(obj, by_alias=by_alias, enums=enums, exclude_none=exclude_none)


def to_builtins_loop(obj: Any, *, by_alias: bool = True, enums: bool = False, exclude_none: bool = False) -> Any:
    """Plain Python data (dicts in the reference's key order) for a Struct tree.

    Optional fields that are None are left out, extras follow the declared fields (one
    named like a field takes its place), and a member under an optional field's name or
    wire key that ends up None is left out — the same rules as the reference's
    ``model_dump(by_alias=...)``. ``enums``: Enum members (the events' ``type``) are
    kept, as pydantic's python mode keeps them. ``exclude_none``: every None member of a
    Struct left out (a None extra is skipped, so a field of its key stays), as pydantic's.

    A loop, not recursion: values of any depth up to ``MAX_DEPTH``, as pydantic's python
    mode takes them (deeper: :class:`~agui_fast.errors.EncodeError`). A value that
    contains itself is an ``EncodeError`` when the loop meets it again below itself.
    """
    top: List[Any] = [None]
    # (value, where its copy goes, depth); depth first, as a recursion would walk
    stack: List[Tuple[Any, Any, Any, int]] = [(obj, top, 0, 0)]
    # The containers being copied, outermost first (held, so that their ids stay theirs),
    # and their ids: the containers above the value taken from the stack are the first
    # `depth` of them.
    path: List[Any] = []
    above: Set[int] = set()
    while stack:
        value, parent, slot, depth = stack.pop()
        if isinstance(value, msgspec.Struct):
            members: Dict[str, Any] = {}
            # (a msgspec Struct without dict=True has no extras, nor a __dict__)
            extras = getattr(value, "__dict__", None) or {}
            for attr, wire, omit in fields_of(type(value)):
                v = getattr(value, attr)
                key = wire if by_alias or attr == "from_" else attr
                if v is None and (omit or exclude_none):
                    if not exclude_none and extras and extras.get(key) is not None:
                        members[key] = None  # the place of the extra that replaces it
                    continue
                members[key] = v
            if exclude_none:
                members.update((k, v) for k, v in extras.items() if v is not None)
            else:
                members.update(extras)
                if any(v is None for v in extras.values()):
                    omitted = omit_keys(type(value))
                    members = {k: v for k, v in members.items() if v is not None or k not in omitted}
            items: Any = members.items()
            out: Any = dict.fromkeys(members)
        elif isinstance(value, enum.Enum):
            parent[slot] = value if enums else value.value
            continue
        elif isinstance(value, dict):
            items, out = value.items(), dict.fromkeys(value)
        elif isinstance(value, (list, tuple)):
            items, out = enumerate(value), [None] * len(value)
        else:
            parent[slot] = value
            continue
        if depth >= MAX_DEPTH:
            raise EncodeError(f"nested deeper than {MAX_DEPTH} levels")
        while len(path) > depth:
            above.discard(id(path.pop()))
        if id(value) in above:
            raise EncodeError(f"circular reference: a {type(value).__name__} contains itself")
        path.append(value)
        above.add(id(value))
        parent[slot] = out
        stack.extend([(v, out, k, depth + 1) for k, v in items][::-1])
    return top[0]
