"""Generate ``python/agui_fast/core/_models.py`` (msgspec Structs) from the reference
pydantic models of ``ag-ui-protocol`` 1.0.0.

The reference SDK's models are themselves generated from the 1.0 JSON schema, so reading
them is the most faithful way to get every class, field, alias, default, constraint and
the declared field order (which decides the JSON key order of the Python reference).

Run:  python tools/gen_core.py            (rewrites the file)
      python tools/gen_core.py --check    (exit 1 if the checked-in file is stale)
``tests/test_schema_agreement.py`` runs the check, so the Structs cannot drift from the
reference silently.
"""

from __future__ import annotations

import enum
import sys
import typing
from pathlib import Path

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

import ag_ui.core as ref_core
from ag_ui._generated import models as ref_models
from ag_ui.core import deprecated as ref_deprecated

OUT = Path(__file__).resolve().parent.parent / "python" / "agui_fast" / "core" / "_models.py"

# Unions that are discriminated (pydantic `discriminator=`) become msgspec tagged unions:
# the tag is the discriminator field, which msgspec always writes first.
UNION_NAMES = {
    # discriminator field -> name used in generated code for the Union alias
}


def model_classes() -> list[type[BaseModel]]:
    """Every pydantic model reachable from ag_ui.core, in dependency order."""
    seen: dict[type, None] = {}

    def visit_type(tp) -> None:
        for sub in walk_types(tp):
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                visit(sub)

    def visit(cls: type[BaseModel]) -> None:
        if cls in seen or cls.__name__ in ("GeneratedBaseModel", "Attributable"):
            return
        for base in cls.__bases__:  # a Struct's parent must be defined before it
            if issubclass(base, BaseModel) and base is not BaseModel:
                visit(base)
        for f in cls.model_fields.values():
            visit_type(f.annotation)
        seen[cls] = None

    for name in ref_core.__all__:
        obj = getattr(ref_core, name)
        if isinstance(obj, type) and issubclass(obj, BaseModel):
            visit(obj)
        else:
            visit_type(obj)
    visit(ref_deprecated.BinaryInputContent)
    return list(seen)


def walk_types(tp):
    yield tp
    for arg in typing.get_args(tp):
        if isinstance(arg, FieldInfo):
            continue
        yield from walk_types(arg)


def discriminator_of(tp) -> str | None:
    """The discriminator of an Annotated[Union[...], Field(discriminator=...)]."""
    if typing.get_origin(tp) is typing.Annotated:
        for meta in typing.get_args(tp)[1:]:
            if isinstance(meta, FieldInfo) and meta.discriminator:
                return meta.discriminator
    return None


def tag_of(cls: type[BaseModel]) -> tuple[str, str] | None:
    """(tag field, tag value) when ``cls`` is a member of a discriminated union."""
    return TAGS.get(cls)


TAGS: dict[type, tuple[str, str]] = {}


def collect_tags(classes) -> None:
    for cls in classes:
        for f in cls.model_fields.values():
            if f.discriminator:
                # pydantic moves a top-level Annotated discriminator into the FieldInfo.
                register_members(f.annotation, f.discriminator)
            for sub in walk_types(f.annotation):
                disc = discriminator_of(sub)
                if disc:
                    register_union(sub, disc)
    # The top-level Event union (a module attribute, not a field type).
    register_union(ref_models.Event, "type")


def register_union(annotated, disc: str) -> None:
    register_members(typing.get_args(annotated)[0], disc)


def register_members(union, disc: str) -> None:
    for member in typing.get_args(union):
        if member is type(None):
            continue
        default = member.model_fields[disc].default
        value = default.value if isinstance(default, enum.Enum) else default
        TAGS[member] = (disc, value)


JSON_POINTER_PATTERN = "^(/([^/~]|~[01])*)*$"


def py_type(tp, metadata=()) -> str:
    """Translate a pydantic field annotation into msgspec-compatible annotation text."""
    if tp is str and [getattr(m, "pattern", None) for m in metadata] == [JSON_POINTER_PATTERN]:
        return "JsonPointer"  # checked natively (the class's __post_init__), not by a regex
    constraints = constraint_text(metadata)
    text = _py_type(tp)
    if constraints:
        # Constraints apply to the non-None part of Optional[...].
        if text.startswith("Optional[") and text.endswith("]"):
            return f"Optional[Annotated[{text[9:-1]}, Meta({constraints})]]"
        return f"Annotated[{text}, Meta({constraints})]"
    return text


def constraint_text(metadata) -> str:
    parts = []
    for meta in metadata:
        if isinstance(meta, annotated_types.Ge):
            parts.append(f"ge={meta.ge}")
        elif isinstance(meta, annotated_types.Le):
            parts.append(f"le={meta.le}")
        elif isinstance(meta, annotated_types.MinLen):
            parts.append(f"min_length={meta.min_length}")
        elif getattr(meta, "pattern", None):
            parts.append(f"pattern={meta.pattern!r}")
        else:
            raise SystemExit(f"unhandled constraint {meta!r}")
    return ", ".join(parts)


def _py_type(tp) -> str:
    if tp is typing.Any:
        return "Any"
    if tp is type(None):
        return "None"
    if tp in (str, int, float, bool):
        return tp.__name__
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp.__name__
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp.__name__
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        inner = args[0]
        extra = [a for a in args[1:] if not isinstance(a, FieldInfo)]
        pattern = [getattr(a, "pattern", None) for a in args[1:] if isinstance(a, FieldInfo)]
        meta = [m for a in args[1:] if isinstance(a, FieldInfo) for m in a.metadata]
        if extra:
            raise SystemExit(f"unhandled Annotated extras {extra!r}")
        text = _py_type(inner)
        if inner is str and pattern == [JSON_POINTER_PATTERN] and not meta:
            return "JsonPointer"
        c = constraint_text(meta)
        if any(pattern) and not c:
            c = f"pattern={pattern[0]!r}"
        return f"Annotated[{text}, Meta({c})]" if c else text
    if origin is typing.Union:
        non_none = [a for a in args if a is not type(None)]
        inner = ", ".join(_py_type(a) for a in non_none)
        inner = inner if len(non_none) == 1 else f"Union[{inner}]"
        return f"Optional[{inner}]" if len(non_none) < len(args) else inner
    if origin is typing.Literal:
        vals = [a.value if isinstance(a, enum.Enum) else a for a in args]
        return f"Literal[{', '.join(repr(v) for v in vals)}]"
    if origin in (list, typing.List):
        return f"List[{_py_type(args[0])}]"
    if origin in (dict, typing.Dict):
        return f"Dict[{_py_type(args[0])}, {_py_type(args[1])}]"
    raise SystemExit(f"unhandled type {tp!r}")


def default_text(f: FieldInfo) -> str | None:
    if f.is_required():
        return None
    d = f.default
    if d is None:
        return "None"
    if isinstance(d, enum.Enum):
        d = d.value
    # A non-None default is always emitted by the reference; msgspec's omit_defaults would
    # drop it, so it is given as a factory (msgspec never omits factory-made scalars).
    return f"field(default_factory=lambda: {d!r}{{name}})"


def generate() -> str:
    classes = model_classes()
    collect_tags(classes)
    out: list[str] = [HEADER]
    for cls in classes:
        if cls is ref_models.BaseEvent:
            continue  # hand-written in _base.py (the events' common parent)
        out.append(render_class(cls))
    out.append(render_unions())
    return "\n".join(out)


def render_class(cls: type[BaseModel]) -> str:
    tag = tag_of(cls)
    is_event = issubclass(cls, ref_models.BaseEvent) and cls is not ref_models.BaseEvent
    is_message = issubclass(cls, ref_models.BaseMessage) and cls is not ref_models.BaseMessage
    bases = "BaseEvent" if is_event else "BaseMessage" if is_message else "_Model"
    parent = ref_models.BaseEvent if is_event else ref_models.BaseMessage if is_message else None
    inherited = inherited_fields(cls, parent, tag) if parent else ()
    kw = ", kw_only=True"  # msgspec applies kw_only per class, not by inheritance
    if tag:
        kw += f", tag_field={tag[0]!r}, tag={tag[1]!r}"
    lines = [f"class {cls.__name__}({bases}{kw}):"]
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    if doc and cls.__doc__ != BaseModel.__doc__:
        lines.append(f'    """{" ".join(doc.split())}"""')
    plan = []
    for name, f in cls.model_fields.items():
        wire = f.serialization_alias or f.alias or name
        omit = (not f.is_required()) and f.default is None
        if cls is ref_models.BaseMessage and name == "role":
            # `role` is each message's msgspec tag, which a parent cannot declare as a field:
            # so isinstance(msg, BaseMessage) holds as in the reference, and a BaseMessage
            # built directly keeps `role` as an extra member.
            continue
        plan.append((name, wire, omit))
        if tag and name == tag[0]:
            if is_event:
                lines.append(f"    {name} = EventType.{tag[1]}")
            else:
                lines.append(f"    {name} = {tag[1]!r}")
            continue
        if name in inherited:
            continue  # inherited from the parent Struct
        ann = py_type(f.annotation, f.metadata)
        d = default_text(f)
        name_kw = f", name={wire!r}" if wire != name else ""
        if d is None:
            lines.append(f"    {name}: {ann}" + (f" = field(name={wire!r})" if name_kw else ""))
        elif d == "None":
            lines.append(f"    {name}: {ann} = " + (f"field(default=None{name_kw})" if name_kw else "None"))
        else:
            lines.append(f"    {name}: {ann} = {d.format(name=name_kw)}")
    if any(line.split(":", 1)[-1].lstrip().startswith("JsonPointer") for line in lines[1:]):
        # A native function, no Python frame (mypy's dataclass rules want a `def`).
        lines.append("    __post_init__ = check_pointers  # type: ignore[misc]")
    lines.append(f"    __agui_fields__: ClassVar[tuple] = {tuple(plan)!r}")
    return "\n".join(lines) + "\n\n"


def inherited_fields(
    cls: type[BaseModel], parent: type[BaseModel], tag: tuple[str, str] | None
) -> tuple[str, ...]:
    """The fields ``cls`` inherits from the Struct standing for ``parent`` (BaseEvent,
    BaseMessage): all of ``parent``'s but ``cls``'s tag (``type``, ``role``: each class
    declares its own). Each must be declared exactly as the parent declares it, or
    inheriting it would change the class."""
    if tag is None:  # the parent's Struct does not declare the tag: each child must
        raise SystemExit(f"{cls.__name__}: a {parent.__name__} that is no tagged union member")
    parent_fields = parent.model_fields
    names = tuple(n for n in parent_fields if n != tag[0])
    for n in names:
        mine, theirs = cls.model_fields[n], parent_fields[n]
        if (mine.annotation, mine.default, mine.alias, list(mine.metadata)) != (
            theirs.annotation, theirs.default, theirs.alias, list(theirs.metadata)
        ):
            raise SystemExit(f"{cls.__name__}.{n} differs from {parent.__name__}.{n}")
    # Inherited fields come first in a Struct: the reference's order must agree.
    if [n for n in cls.model_fields if n != tag[0]][: len(names)] != list(names):
        raise SystemExit(f"{cls.__name__}: {parent.__name__}'s fields are not its first fields")
    return names


def render_unions() -> str:
    def names(annotated) -> str:
        union = typing.get_args(annotated)[0]
        return ", ".join(m.__name__ for m in typing.get_args(union))

    return "\n".join(
        [
            f"Event = Union[{names(ref_models.Event)}]",
            f"Message = Union[{names(ref_models.Message)}]",
            f"ContentPart = Union[{names(ref_models.ContentPart)}]",
            f"PartSource = Union[{names(ref_models.PartSource)}]",
            f"JsonPatchOperation = Union[{names(ref_models.JsonPatchOperation)}]",
            f"RunFinishedOutcome = Union[{names(ref_models.RunFinishedOutcome)}]",
            f"SubagentFinishedOutcome = Union[{names(ref_models.SubagentFinishedOutcome)}]",
            "JsonPatch = List[JsonPatchOperation]",
            "",
        ]
    )


HEADER = '''\
# @generated by tools/gen_core.py from ag-ui-protocol 1.0.0 — DO NOT EDIT.
# Regenerate: python tools/gen_core.py   (tests/test_schema_agreement.py checks it is current)
"""msgspec Struct versions of every ag_ui.core 1.0 model.

Field order, camelCase wire names, defaults and constraints follow the reference models.
``__agui_fields__`` on each class is the emission plan of the Python reference:
``(attribute, wire key, omitted when None)`` in declared order, including the tag field.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Dict, List, Literal, Optional, Union

from msgspec import Meta, field


from ._base import BaseEvent, EventType, JsonPointer, _Model, check_pointers

'''


def main() -> int:
    text = generate()
    if "--check" in sys.argv:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is out of date; run python tools/gen_core.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
