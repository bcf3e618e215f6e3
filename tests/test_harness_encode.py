"""A hypothesis-driven harness for the encoders on adversarial objects (issue 14): cycles,
huge ints, NaN, lone surrogates, objects whose ``__eq__``/``__hash__``/``__str__`` raise or
mutate, subclasses of the builtins, nesting at the depth limit, containers mutated while
they are encoded (by the encode's own callbacks and by other threads).

The promise under test: every encoder (SSE text and bytes, one and many, ``dumps``, the
protobuf message, frame and stream) returns or raises ``EncodeError`` / ``TypeError`` only
-- never a crash, a ``SystemError``, a PyO3 ``PanicException`` or another stray type; the
SSE and protobuf encoders accept the same objects; and what the SSE encoder writes is what
pydantic (the reference's serializer) writes for the same value.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import sys
import threading
import time
import uuid

import pydantic
import pytest
from ag_ui.core import CustomEvent as RefCustom, StateSnapshotEvent as RefSnapshot
from ag_ui.encoder import EventEncoder as RefEncoder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_fast import _native
from agui_fast.core import CustomEvent, RawEvent, StateSnapshotEvent
from agui_fast.encoder import EventEncoder
from agui_fast.errors import EncodeError
from agui_fast.proto import encode_event_message, encode_protobuf_frame, encode_protobuf_many

from strategies import text
from conftest import examples

MAX_DEPTH = _native.DEFAULT_MAX_DEPTH
SSE = EventEncoder()
REF = RefEncoder()


class Boom(Exception):
    pass


# -- adversarial leaves ----------------------------------------------------------------------------


class RaisingStr:
    """A dict key whose __str__/__hash__/__eq__ raise."""

    def __init__(self, what):
        self.what = what

    def __hash__(self):
        if self.what == "hash":
            raise Boom("hash")
        return 1

    def __eq__(self, other):
        if self.what == "eq":
            raise Boom("eq")
        return self is other

    def __str__(self):
        if self.what == "str":
            raise Boom("str")
        return "key"

    __repr__ = __str__


class StrSub(str):
    def __str__(self):
        raise Boom("str of a str subclass")


class IntSub(int):
    def __str__(self):
        return "not the number"

    __repr__ = __str__


class FloatSub(float):
    def __repr__(self):
        return "nope"


class DictSub(dict):
    def items(self):
        raise Boom("items")

    def __iter__(self):
        raise Boom("iter")


class ListSub(list):
    def __iter__(self):
        raise Boom("iter")

    def __len__(self):
        return 10**6


class Color(enum.Enum):
    RED = "red"
    ODD = float("nan")


class Weird(pydantic.BaseModel):
    a: int = 1

    @pydantic.computed_field
    @property
    def b(self) -> int:
        raise Boom("computed")


def _armed(what):
    """A dict whose key raises from ``what`` once it is in the dict."""
    key = RaisingStr(None)
    d = {key: 1, "other": 2}
    key.what = what
    return d


def _cycle_list():
    a = []
    a.append(a)
    return a


def _cycle_dict():
    d = {}
    d["d"] = [d]
    return d


def _nested(depth, leaf=None):
    v = leaf
    for _ in range(depth):
        v = [v]
    return v


LEAVES = [
    lambda: 10**400,
    lambda: -(10**400),
    lambda: 2**64,
    lambda: float("nan"),
    lambda: float("inf"),
    lambda: -float("inf"),
    lambda: "a\ud800b",
    lambda: "\udfff",
    lambda: {"\ud800": 1},
    lambda: _cycle_list(),
    lambda: _cycle_dict(),
    lambda: _armed("hash"),
    lambda: _armed("eq"),
    lambda: _armed("str"),
    lambda: _armed(None),
    lambda: StrSub("s"),
    lambda: {StrSub("k"): StrSub("v")},
    lambda: IntSub(5),
    lambda: {IntSub(5): 1},
    lambda: FloatSub(1.5),
    lambda: DictSub(a=1),
    lambda: ListSub([1, 2]),
    lambda: Color.RED,
    lambda: Color.ODD,
    lambda: {1: "int key", 2.5: "float key", None: "none key", True: "bool key"},
    lambda: {(1, 2): "tuple key"},
    lambda: {1, 2, 3},
    lambda: frozenset(["a"]),
    lambda: b"bytes\xff",
    lambda: bytearray(b"x"),
    lambda: memoryview(b"x"),
    lambda: datetime.datetime(2020, 1, 2, 3, 4, 5),
    lambda: decimal.Decimal("1.10"),
    lambda: decimal.Decimal("nan"),
    lambda: uuid.UUID(int=5),
    lambda: complex(1, 2),
    lambda: object(),
    lambda: lambda: 1,
    lambda: Weird(),
    lambda: type,
    lambda: _nested(MAX_DEPTH - 3),
    lambda: _nested(MAX_DEPTH - 2),
    lambda: _nested(MAX_DEPTH - 1),
    lambda: _nested(MAX_DEPTH),
    lambda: _nested(MAX_DEPTH + 1),
    lambda: _nested(100_000),
]

# hypothesis cannot print a value nested thousands deep: those are in the per-leaf test only
leaves = st.sampled_from(LEAVES[:-6]).map(lambda make: make())
values = st.recursive(
    leaves | st.integers() | text | st.floats() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3) | st.tuples(inner, inner),
    max_leaves=6,
)


def wrap(v, how):
    if how == 0:
        return CustomEvent(name="n", value=v)
    if how == 1:
        return StateSnapshotEvent(snapshot=v)
    if how == 2:
        return RawEvent(event={"k": v}, source="s")
    if how == 3:
        return {"type": "CUSTOM", "name": "n", "value": v}
    ev = CustomEvent(name="n", value=1)
    ev.__dict__["extraMember"] = v  # an extra: written after the declared fields
    return ev


ENCODERS = {
    "sse": SSE.encode,
    "sse_bytes": lambda e: _native.encode_sse_bytes(e),
    "sse_many": lambda e: _native.encode_sse_many([e, e]),
    "dumps": lambda e: _native.dumps(e),
    "proto_message": encode_event_message,
    "proto_frame": encode_protobuf_frame,
    "proto_many": lambda e: encode_protobuf_many([e]),
}


def outcome(fn, arg):
    """``("ok", result)`` or ``("error", exception class)``; any other exception fails."""
    try:
        return "ok", fn(arg)
    except (EncodeError, TypeError) as e:
        assert type(e) in (EncodeError, TypeError), repr(e)
        return "error", type(e)


def check_value(v, how, reference=True):
    event = wrap(v, how)
    results = {name: outcome(fn, event) for name, fn in ENCODERS.items()}
    kinds = {name: r[0] for name, r in results.items()}
    # one set of rules: the SSE and protobuf encoders accept the same objects (but for lone
    # surrogates, which @ag-ui/proto writes as U+FFFD and pydantic refuses)
    families = [{k for n, k in kinds.items() if n.startswith(("sse", "dumps"))}, {k for n, k in kinds.items() if n.startswith("proto")}]
    assert all(len(f) == 1 for f in families), kinds
    if not has_surrogate(v):
        assert families[0] == families[1], kinds
    if kinds["sse"] == "ok":
        text_ = results["sse"][1]
        assert text_.startswith("data: ") and text_.endswith("\n\n")
        json.loads(text_[6:-2])
        assert results["sse_bytes"][1] == text_.encode()
        assert results["dumps"][1] == text_[6:-2].encode()
        assert results["proto_frame"][1][4:] == results["proto_message"][1]
    if how in (0, 1) and reference:
        # the reference (pydantic) encodes the same event: the same text, or both refuse
        ref_event = (RefCustom(name="n", value=v) if how == 0 else RefSnapshot(snapshot=v))
        try:
            ref = REF.encode(ref_event)
        except Exception:
            ref = None
        assert (results["sse"][1] if kinds["sse"] == "ok" else None) == ref


def has_surrogate(v) -> bool:
    """Whether a lone surrogate is in ``v`` (iterative: values nest 100,000 deep)."""
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            if any("\ud800" <= c <= "\udfff" for c in x):
                return True
        elif id(x) not in seen:
            seen.add(id(x))
            if isinstance(x, dict):
                for k, y in dict.items(x):  # not a subclass's items()
                    stack += (k, y)
            elif isinstance(x, list):
                stack.extend(list.__iter__(x))
            elif isinstance(x, tuple):
                stack.extend(x)
    return False


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(values, st.integers(0, 4))
def test_adversarial_values_encode_or_raise_our_errors(v, how):
    check_value(v, how)


@pytest.mark.parametrize("make", LEAVES, ids=range(len(LEAVES)))
@pytest.mark.parametrize("how", range(5))
def test_each_adversarial_leaf(make, how):
    # pydantic (the reference) stops at its own recursion limit, below ours (512 levels)
    check_value(make(), how, reference=make not in LEAVES[-6:])


def test_user_exceptions_raised_during_an_encode_are_encode_errors():
    """A property, a computed field or a key's ``__hash__`` that raises: an EncodeError
    caused by it (pydantic wraps it in its serialization error), not the user's exception
    escaping from every encoder (found by this harness)."""
    for make in (Weird, lambda: _armed("hash"), lambda: Mutator(lambda: 1 / 0)):
        for name, fn in ENCODERS.items():
            with pytest.raises(EncodeError) as info:
                fn(CustomEvent(name="n", value=[make()]))
            assert isinstance(info.value.__cause__, (Boom, ZeroDivisionError)), name
    # what is not the input's fault passes unchanged
    with pytest.raises(KeyboardInterrupt):
        _native.dumps(Mutator(_interrupt))
    with pytest.raises(MemoryError):
        _native.dumps(Mutator(_no_memory))


def _interrupt():
    raise KeyboardInterrupt


def _no_memory():
    raise MemoryError


def test_depth_limit_boundary_is_the_same_for_every_encoder():
    # the event object is level 1, the CustomEvent value's own list level 2 ...
    ok = CustomEvent(name="n", value=_nested(MAX_DEPTH - 1, 0))
    bad = CustomEvent(name="n", value=_nested(MAX_DEPTH, 0))
    for name, fn in ENCODERS.items():
        assert outcome(fn, ok)[0] == "ok", name
        assert outcome(fn, bad) == ("error", EncodeError), name


# -- mutation during the encode ------------------------------------------------------------------


class Mutator:
    """Encoded through its ``__agui_fields__``: reading ``x`` runs ``action`` mid-encode."""

    __agui_fields__ = (("x", "x", False),)

    def __init__(self, action):
        self.action = action

    @property
    def x(self):
        self.action()
        return 1


def _mutations():
    out = []
    for what in ("clear", "extend", "pop", "replace", "del_dict", "add_dict", "clear_dict"):
        lst = ["a", {"k": "v"}, 3]
        d = {"a": 1, "b": [1, 2], "c": "c"}

        def act(what=what, lst=lst, d=d):
            if what == "clear":
                lst.clear()
            elif what == "extend":
                lst.extend(range(1000))
            elif what == "pop":
                if lst:
                    lst.pop()
            elif what == "replace":
                lst[:] = [object()]
            elif what == "del_dict":
                d.pop("b", None)
            elif what == "add_dict":
                for i in range(100):
                    d[f"n{i}"] = i
            else:
                d.clear()

        m = Mutator(act)
        lst.insert(1, m)
        d["m"] = m
        d["z"] = lst
        out.append((what, {"l": lst, "d": d}))
    return out


@pytest.mark.parametrize("what, value", _mutations(), ids=[w for w, _ in _mutations()])
def test_containers_mutated_by_the_encode_itself(what, value):
    for name, fn in ENCODERS.items():
        kind, result = outcome(fn, CustomEvent(name="n", value=value))
        assert kind in ("ok", "error"), (name, kind)
        if kind == "ok" and name.startswith("sse"):
            json.loads(result if isinstance(result, str) else result.decode())


def test_threads_mutating_containers_during_encode():
    """Another thread grows, shrinks, clears and replaces a list and a dict while they are
    being encoded (the encode yields to it in a user property): no crash; each encode is an
    EncodeError/TypeError or valid JSON."""
    shared_list = [{"i": i} for i in range(50)]
    shared_dict = {f"k{i}": [i] for i in range(50)}

    class Yield:
        __agui_fields__ = (("y", "y", False),)

        @property
        def y(self):
            time.sleep(0)  # let the mutator run in the middle of the walk
            return 0

    stop = threading.Event()
    failures = []

    def mutate():
        i = 0
        while not stop.is_set():
            i += 1
            try:
                shared_list.append(Yield() if i % 3 else {"i": i})
                shared_dict[f"n{i % 97}"] = Yield()
                if i % 7 == 0:
                    shared_list.clear()
                    shared_dict.clear()
                elif i % 5 == 0:
                    shared_list[:] = [Yield()] * 20
                    if shared_dict:
                        shared_dict.popitem()
            except Exception as e:  # pragma: no cover - reported below
                failures.append(e)

    def encode():
        for j in range(60):
            ev = CustomEvent(name="n", value={"l": shared_list, "d": shared_dict, "y": Yield()})
            for name, fn in ENCODERS.items():
                try:
                    kind, result = outcome(fn, ev)
                    if kind == "ok" and name == "dumps":
                        json.loads(result)
                except BaseException as e:  # pragma: no cover - reported below
                    failures.append((name, e))

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        mutators = [threading.Thread(target=mutate) for _ in range(2)]
        encoders = [threading.Thread(target=encode) for _ in range(2)]
        for t in mutators + encoders:
            t.start()
        for t in encoders:
            t.join()
        stop.set()
        for t in mutators:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not failures, failures[:5]


@pytest.mark.long
@settings(max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(values, st.integers(0, 4))
def test_long_adversarial_values(v, how):
    check_value(v, how)
