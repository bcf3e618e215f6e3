"""Hypothesis strategies for valid AG-UI events, derived from the Struct types themselves
(msgspec.inspect), so every field and constraint of every event is exercised."""

import functools
import random
import typing

import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

import agui_fast.core as core
from agui_fast.core._pointer import PointerSyntax
from agui_fast.errors import DecodeError

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


@functools.lru_cache(maxsize=None)
def is_pointer(cls: type, name: str) -> bool:
    """Is field ``name`` of ``cls`` a JSON Pointer (``core._base.JsonPointer``)? msgspec's
    inspection does not show it: the Structs check pointers natively, not by a pattern.
    Cached: resolving a class's hints costs more than making an event."""
    hint = typing.get_type_hints(cls, include_extras=True)[name]
    return typing.get_origin(hint) is typing.Annotated and any(isinstance(m, PointerSyntax) for m in hint.__metadata__)


def for_struct(t: mi.StructType) -> st.SearchStrategy:
    required = {}
    optional = {}
    for f in t.fields:
        s = pointers if is_pointer(t.cls, f.name) else for_type(f.type)
        (required if f.required else optional)[f.name] = s
    return st.fixed_dictionaries(required, optional=optional).map(lambda kw: t.cls(**kw))


events = st.one_of([for_type(mi.type_info(cls)) for cls in core.Event.__args__])
"""Any valid event Struct."""


# -- a fast seeded generator (random.Random), for batches of thousands of events ---------------
# Hypothesis shrinks but draws a few hundred examples per second through the Struct types; the
# batch properties (10k events per run, on four interpreters in CI) need a generator that makes
# 10,000 events in well under a second. A failing seed reproduces exactly.

# Strings that break naive framing or text handling: SSE field prefixes and line ends (JSON text
# escapes them, a hand-written framer would not), the JavaScript line separators, NUL, emoji
# (4 UTF-8 bytes, a surrogate pair in JSON), combining marks, the BOM, empty.
AWKWARD = [
    "", "\r\n", "\r", "\n", "\n\n", "data: ", "data: x\n\ndata: y", "event: e\nid: 1\n", ":",
    "\u2028", "\u2029", "\x00", "\x7f", "\\", '"', "\ufeff", "é", "e\u0301", "😀", "👩‍👩‍👧",
    "\U0010ffff", "\ud7ff\ue000", "[DONE]", "{", "null", " ",
]


def _unicode_pool(rng: random.Random, n: int) -> str:
    # any code point but the surrogates (a lone surrogate is not valid event text: the
    # encoders refuse it, as the reference does); mostly ASCII, then 2-, 3- and 4-byte UTF-8
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.6:
            out.append(chr(rng.randrange(0x20, 0x7F)))
        elif r < 0.8:
            out.append(chr(rng.randrange(0x80, 0x800)))
        elif r < 0.95:
            c = rng.randrange(0x800, 0x10000 - 0x800)
            out.append(chr(c + 0x800 if c >= 0xD800 else c))
        else:
            out.append(chr(rng.randrange(0x10000, 0x110000)))
    return "".join(out)


# Random text is a slice of one pool: one random draw per string, not one per character.
_POOL = _unicode_pool(random.Random(0), 1 << 16)


def _random_unicode(rng: random.Random, n: int) -> str:
    start = rng.randrange(len(_POOL) - n)
    return _POOL[start : start + n]


def random_text(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.3:
        return rng.choice(AWKWARD)
    if r < 0.6:
        return "".join(rng.choice(AWKWARD) + _random_unicode(rng, rng.randrange(3)) for _ in range(rng.randrange(1, 4)))
    if r < 0.98:
        return _random_unicode(rng, rng.randrange(12))
    return _random_unicode(rng, rng.randrange(1000, 5000)) + rng.choice(AWKWARD)  # long


def random_number(rng: random.Random):
    r = rng.random()
    if r < 0.4:
        return rng.randrange(-1000, 1000)
    if r < 0.5:
        return rng.randrange(-(2**53), 2**53 + 1)  # exact as a double: survives protobuf
    if r < 0.6:
        return rng.choice([0.0, -0.0, 0.1, 1e-300, 5e-324, 1.7976931348623157e308, -2.5, 1e16, 123456.789])
    return rng.uniform(-1e6, 1e6)


def random_json(rng: random.Random, depth: int = 0):
    """A nested JSON value (as the ``Any`` fields hold)."""
    r = rng.random()
    if depth < 4 and r < 0.3:
        if rng.random() < 0.5:
            return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
        return {random_text(rng): random_json(rng, depth + 1) for _ in range(rng.randrange(4))}
    if r < 0.4:
        return rng.choice([None, True, False])
    if r < 0.7:
        return random_number(rng)
    return random_text(rng)


def random_pointer(rng: random.Random) -> str:
    toks = ["".join(rng.choice("ab~/0-é") for _ in range(rng.randrange(4))) for _ in range(rng.randrange(4))]
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in toks)


@functools.lru_cache(maxsize=None)
def _event_types() -> list:
    return [mi.type_info(cls) for cls in core.Event.__args__]


class EventGen:
    """``EventGen(seed).events(n)``: ``n`` random valid 1.0 event Structs, every type in turn
    (so each of the 31 appears n/31 times), optional fields present or absent, nested ``Any``
    values, awkward strings; ``extras`` adds unknown members (kept by the Structs and the SSE
    path, not representable in protobuf) to about one event in twenty."""

    def __init__(self, seed: int, *, extras: bool = True) -> None:
        self.rng = random.Random(seed)
        self.extras = extras
        self.types = _event_types()

    def events(self, n: int) -> list:
        return [self.struct(self.types[i % len(self.types)], top=True) for i in range(n)]

    def struct(self, t: mi.StructType, top: bool = False):
        rng = self.rng
        kw = {}
        for f in t.fields:
            if f.required or rng.random() < 0.5:
                kw[f.name] = random_pointer(rng) if is_pointer(t.cls, f.name) else self.value(f.type)
        if self.extras and rng.random() < 0.05:
            kw["x_extra" if top else "extraMember"] = random_json(rng)
        return t.cls(**kw)

    def value(self, t: mi.Type):
        rng = self.rng
        if isinstance(t, mi.AnyType):
            return random_json(rng)
        if isinstance(t, mi.NoneType):
            return None
        if isinstance(t, mi.BoolType):
            return rng.random() < 0.5
        if isinstance(t, mi.IntType):
            lo = -(2**53) if t.ge is None else t.ge
            hi = 2**53 if t.le is None else t.le
            return rng.choice([lo, hi, rng.randint(lo, hi), rng.randint(max(lo, 0), min(hi, 2**41))])
        if isinstance(t, mi.FloatType):
            return float(random_number(rng))
        if isinstance(t, mi.StrType):
            if t.pattern:
                return random_pointer(rng)
            s = random_text(rng)
            return s if len(s) >= (t.min_length or 0) else s + "x" * t.min_length
        if isinstance(t, mi.LiteralType):
            return rng.choice(t.values)
        if isinstance(t, mi.EnumType):
            return rng.choice(list(t.cls))
        if isinstance(t, mi.ListType):
            return [self.value(t.item_type) for _ in range(rng.randrange(t.min_length or 0, 4))]
        if isinstance(t, mi.DictType):
            return {random_text(rng): self.value(t.value_type) for _ in range(rng.randrange(4))}
        if isinstance(t, mi.UnionType):
            options = [x for x in t.types if not isinstance(x, mi.NoneType)] or list(t.types)
            return self.value(rng.choice(options))
        if isinstance(t, mi.StructType):
            return self.struct(t)
        raise NotImplementedError(repr(t))


# -- comparing through protobuf ------------------------------------------------------------------

EMPTY_LIST_DROPPED = {"toolCalls", "pendingToolCallIds", "usage", "interruptIds"}


def normalise(v, key=None):
    """Apply the reference mapping's documented losses (docs/protobuf.md) to plain data."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if x == [] and k in EMPTY_LIST_DROPPED:
                continue  # empty optional lists disappear
            if k == "__proto__":
                continue  # never encoded inside opaque JSON (JavaScript semantics)
            out[k] = normalise(x, k)
        if key == "input" and "threadId" in out:  # RUN_STARTED input: lists always present
            for k in ("tools", "context", "resume"):
                out.setdefault(k, [])
        return out
    if isinstance(v, list):
        return [normalise(x) for x in v]
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return float(v)  # numbers travel as doubles
    return v


# -- stream decoders: the natural loop of docs/sse.md ("Errors") -----------------------------------


def error_key(e):
    """What identifies an error: its class (one of ours), frame, offset, field and text."""
    assert isinstance(e, DecodeError) and type(e).__module__ == "agui_fast.errors", repr(e)
    return (type(e), e.frame_index, e.offset, e.field, str(e))


def natural_loop(dec, chunks):
    """Every event and every error of the stream, through the loop docs/sse.md gives."""
    events, errors = [], []
    for c in [*chunks, None]:
        try:
            events.extend(dec.close() if c is None else dec.feed(c))
        except DecodeError as e:
            assert e.errors[0] is e
            events.extend(e.events)
            errors.extend(error_key(x) for x in e.errors)
    return events, errors


# -- JSON Pointer paths ------------------------------------------------------------------------------


def esc(k: str) -> str:
    return k.replace("~", "~0").replace("/", "~1")


def all_paths(x, path=""):
    """Every ``(pointer, value)`` of a JSON document, the root first."""
    yield path, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from all_paths(v, path + "/" + esc(k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from all_paths(v, f"{path}/{i}")
