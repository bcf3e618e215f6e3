"""Hypothesis strategies for valid AG-UI events, derived from the Struct types themselves
(msgspec.inspect), so every field and constraint of every event is exercised."""

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

import agui_fast.core as core

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
json_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(
    allow_nan=False, allow_infinity=False
) | text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
pointer_token = st.text(alphabet="ab~/0-é", max_size=4).map(
    lambda s: s.replace("~", "~0").replace("/", "~1")
)
pointers = st.lists(pointer_token, max_size=3).map(lambda toks: "".join("/" + t for t in toks))


def for_type(t: mi.Type) -> st.SearchStrategy:
    if isinstance(t, mi.AnyType):
        return json_values
    if isinstance(t, mi.NoneType):
        return st.none()
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.IntType):
        return st.integers(min_value=t.ge, max_value=t.le)
    if isinstance(t, mi.FloatType):
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(t, mi.StrType):
        return pointers if t.pattern else text
    if isinstance(t, mi.LiteralType):
        return st.sampled_from(t.values)
    if isinstance(t, mi.EnumType):
        return st.sampled_from(list(t.cls))
    if isinstance(t, mi.ListType):
        return st.lists(for_type(t.item_type), min_size=t.min_length or 0, max_size=3)
    if isinstance(t, mi.DictType):
        return st.dictionaries(text, for_type(t.value_type), max_size=3)
    if isinstance(t, mi.UnionType):
        return st.one_of([for_type(x) for x in t.types])
    if isinstance(t, mi.StructType):
        return for_struct(t)
    raise NotImplementedError(repr(t))


def for_struct(t: mi.StructType) -> st.SearchStrategy:
    required = {}
    optional = {}
    for f in t.fields:
        s = for_type(f.type)
        (required if f.required else optional)[f.name] = s
    return st.fixed_dictionaries(required, optional=optional).map(lambda kw: t.cls(**kw))


events = st.one_of([for_type(mi.type_info(cls)) for cls in core.Event.__args__])
"""Any valid event Struct."""
