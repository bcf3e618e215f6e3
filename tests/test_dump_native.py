"""``model_dump`` made by the native walk (``_native.dump_python``, ``dump_json``) against
the Python loop it replaced, kept here as the reference of the rules (``reference_dump``,
the loop as it was), and against the reference SDK's pydantic ``model_dump``.

Outputs are compared strictly (``same``): the same types at every level (an ``EventType``
member is not its ``str``, a tuple is not a list), the same keys in the same order, equal
values (NaN as NaN). Random events (``strategies.EventGen``) get exotic members: extras
holding datetimes, tuples, sets, Enum members, str/int/dict/list subclasses, big ints,
lone surrogates, NaN, nested Structs; None members; extras named like fields.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import math
import random
import uuid
from typing import Any, Dict, List, Tuple

import msgspec
import pytest

from agui_fast import _native
from agui_fast.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    EventType,
    FunctionCall,
    MessagesSnapshotEvent,
    RunAgentInput,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    ToolCall,
    UserMessage,
)
from agui_fast.core import _dump
from agui_fast.core._pydantic import _Drop, _filter
from agui_fast.decoder import decode_event
from agui_fast.encoder import to_builtins
from agui_fast.errors import EncodeError

from strategies import EventGen

# -- the reference: the Python loop as it was ------------------------------------------------

MAX_DEPTH = 100_000


def reference_dump(obj: Any, *, by_alias: bool = True, enums: bool = False) -> Any:
    top: List[Any] = [None]
    stack: List[Tuple[Any, Any, Any, int]] = [(obj, top, 0, 0)]
    while stack:
        value, parent, slot, depth = stack.pop()
        if isinstance(value, msgspec.Struct):
            members: Dict[str, Any] = {}
            for attr, wire, omit in _dump.fields_of(type(value)):
                v = getattr(value, attr)
                if v is None and omit:
                    continue
                members[wire if by_alias or attr == "from_" else attr] = v
            members.update(value.__dict__)
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
            raise EncodeError(f"nested deeper than {MAX_DEPTH} levels (or cyclic)")
        parent[slot] = out
        stack.extend([(v, out, k, depth + 1) for k, v in items][::-1])
    return top[0]


def reference_model_dump(obj: Any, *, by_alias: bool = False, exclude_none: bool = False) -> Any:
    """``model_dump`` in Python mode as it was: the loop, then the exclude_none filter."""
    data = reference_dump(obj, by_alias=by_alias, enums=True)
    if exclude_none:
        data = _filter(obj, data, None, None, by_alias, _Drop(True, False, False))
    return data


def same(a: Any, b: Any) -> None:
    """Strict equality (types, key order, values); a loop, for values of any depth."""
    stack = [(a, b, "$")]
    while stack:
        a, b, path = stack.pop()
        if isinstance(a, enum.Enum) and isinstance(b, enum.Enum) and type(a) is not type(b):
            # the reference's own EventType: the same member of a class of the same name
            assert (type(a).__name__, a.name, a.value) == (type(b).__name__, b.name, b.value), path
            continue
        assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__} ({a!r} / {b!r})"
        if isinstance(a, dict):
            assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
            stack.extend((a[k], b[k], f"{path}[{k!r}]") for k in a)
        elif isinstance(a, list):
            assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
            stack.extend((x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
        elif isinstance(a, float) and math.isnan(a):
            assert math.isnan(b), path
        else:
            assert a == b, f"{path}: {a!r} != {b!r}"


def no_fallback(*args: Any) -> Any:
    raise AssertionError(f"the native walk left {args[0]!r} to the Python loop")


def native(obj: Any, *, by_alias: bool, exclude_none: bool = False, enums: bool = True) -> Any:
    """The native walk alone: it must not hand these values to the Python loop."""
    return _native.dump_python(obj, by_alias, enums, exclude_none, no_fallback)


# -- exotic values ---------------------------------------------------------------------------


class Colour(enum.Enum):
    RED = (1, 2)  # a tuple value: kept as it is (not walked) without enums
    BLUE = "blue"


class Name(str):
    pass


class Count(int):
    pass


class Mapping(dict):
    pass


class Items(list):
    pass


def exotic(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth < 3 and r < 0.25:
        kind = rng.randrange(5)
        n = rng.randrange(4)
        if kind == 0:
            return {f"k{i}": exotic(rng, depth + 1) for i in range(n)}
        if kind == 1:
            return [exotic(rng, depth + 1) for _ in range(n)]
        if kind == 2:
            return tuple(exotic(rng, depth + 1) for _ in range(n))
        if kind == 3:
            return Mapping({f"m{i}": exotic(rng, depth + 1) for i in range(n)})
        return Items(exotic(rng, depth + 1) for _ in range(n))
    return rng.choice(
        [
            None,
            True,
            0,
            2**80,
            -(2**70),
            1.5,
            float("nan"),
            float("inf"),
            "text",
            "lone \ud800 surrogate",
            "é\U0001f600",
            Name("sub"),
            Count(7),
            datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
            datetime.date(2024, 1, 2),
            uuid.UUID(int=5),
            decimal.Decimal("1.25"),
            b"bytes",
            frozenset({1}),
            {1, 2},
            Colour.RED,
            Colour.BLUE,
            EventType.RAW,
            TextMessageContentEvent(message_id="n", delta="d"),
            FunctionCall(name="f", arguments="{}"),
            msgspec.UNSET,
        ]
    )


def with_exotics(event: Any, rng: random.Random) -> Any:
    """``event`` with extras (and Any-typed members) holding exotic values."""
    for i in range(rng.randrange(4)):
        setattr(event, f"extra{i}", exotic(rng))
    if rng.random() < 0.2:
        setattr(event, "extraNone", None)
    if hasattr(event, "raw_event") and rng.random() < 0.5:
        event.raw_event = exotic(rng)
    return event


def events(seed: int, n: int) -> list:
    rng = random.Random(seed)
    out = EventGen(seed).events(n)
    return [with_exotics(e, rng) if rng.random() < 0.5 else e for e in out]


# -- the native walk against the loop ----------------------------------------------------------


@pytest.mark.parametrize("by_alias", [False, True])
@pytest.mark.parametrize("exclude_none", [False, True])
def test_random_events_match_the_python_loop(by_alias, exclude_none):
    for e in events(32, 620):
        expected = reference_model_dump(e, by_alias=by_alias, exclude_none=exclude_none)
        same(native(e, by_alias=by_alias, exclude_none=exclude_none), expected)
        same(e.model_dump(by_alias=by_alias, exclude_none=exclude_none), expected)


@pytest.mark.parametrize("by_alias", [False, True])
def test_to_builtins_matches_the_python_loop(by_alias):
    for e in events(33, 310):
        same(to_builtins(e, by_alias=by_alias), reference_dump(e, by_alias=by_alias))
        same(native(e, by_alias=by_alias, enums=False), reference_dump(e, by_alias=by_alias))
        same(_dump.to_builtins_loop(e, by_alias=by_alias), reference_dump(e, by_alias=by_alias))


def test_values_are_kept_as_the_same_objects():
    big, text, when = 2**90, "lone \udc00", datetime.datetime(2024, 1, 1)
    e = CustomEvent(name="n", value=[big, text, when, Colour.RED])
    out = e.model_dump()
    assert out["type"] is EventType.CUSTOM
    assert [x is y for x, y in zip(out["value"], e.value)] == [True] * 4
    assert out["value"] is not e.value  # lists are copied
    assert to_builtins(e)["value"][3] == (1, 2)  # an Enum member's value, not walked


def test_containers_are_copied_as_plain_dicts_and_lists():
    e = CustomEvent(name="n", value=Mapping(a=Items([(1, 2)]), b=(3,)))
    same(e.model_dump(), {"type": EventType.CUSTOM, "name": "n", "value": {"a": [[1, 2]], "b": [3]}})


def test_nested_structs_extras_and_none():
    m = AssistantMessage(id="a", content=None, tool_calls=[ToolCall(id="c", function=FunctionCall(name="f", arguments="{}"))])
    m.toolNote = None
    snap = MessagesSnapshotEvent(messages=[UserMessage(id="u", content="hi"), m], timestamp=None)
    snap.trace = {"x": None, "y": [TextMessageContentEvent(message_id="m", delta="d")]}
    for by_alias in (False, True):
        for exclude_none in (False, True):
            expected = reference_model_dump(snap, by_alias=by_alias, exclude_none=exclude_none)
            same(native(snap, by_alias=by_alias, exclude_none=exclude_none), expected)
    out = snap.model_dump(exclude_none=True)
    assert "toolNote" not in out["messages"][1] and out["trace"]["x"] is None  # a dict's None stays


def test_extras_named_like_fields_take_their_place():
    ref = pytest.importorskip("ag_ui.core")
    extras = {"messageId": "extra", "delta": None, "message_id": None}
    e = TextMessageContentEvent(message_id="m", delta="d")
    e.__dict__.update(extras)
    theirs = ref.TextMessageContentEvent(message_id="m", delta="d")
    theirs.__pydantic_extra__.update(extras)
    for by_alias in (False, True):
        for exclude_none in (False, True):
            want = theirs.model_dump(by_alias=by_alias, exclude_none=exclude_none)
            same(native(e, by_alias=by_alias, exclude_none=exclude_none), want)
            same(_dump.to_builtins_loop(e, by_alias=by_alias, enums=True, exclude_none=exclude_none), want)
    # exclude_none skips a None extra: the field of its key stays
    assert e.model_dump(exclude_none=True)["message_id"] == "m"


def test_from_is_keyed_from_without_alias():
    from agui_fast.core import JsonPatchOperation  # noqa: F401  (the union's members below)

    ev = StateDeltaEvent.model_validate({"type": "STATE_DELTA", "delta": [{"op": "move", "from": "/a", "path": "/b"}]})
    for by_alias in (False, True):
        same(native(ev, by_alias=by_alias), reference_model_dump(ev, by_alias=by_alias))
    assert "from" in ev.model_dump()["delta"][0]


def test_base_event_and_run_input():
    b = BaseEvent(type=EventType.RAW, timestamp=None)
    inp = RunAgentInput(thread_id="t", run_id="r", state={"k": (1, 2)}, messages=[UserMessage(id="u", content="c")], tools=[], context=[], forwarded_props=None)
    for obj in (b, inp):
        for by_alias in (False, True):
            for exclude_none in (False, True):
                same(native(obj, by_alias=by_alias, exclude_none=exclude_none), reference_model_dump(obj, by_alias=by_alias, exclude_none=exclude_none))


# -- what the walk leaves to the loop ---------------------------------------------------------


def test_non_str_keys_foreign_structs_and_depth_go_to_the_loop():
    class Plain(msgspec.Struct):
        a: int = 1

    class WithDict(msgspec.Struct, dict=True):
        a: int = 1

    nested: Any = "leaf"
    for _ in range(600):  # past the walker's 512 levels
        nested = [nested]
    for value in ({1: "a", (2, 3): [4]}, {Name("k"): 1}, WithDict(), nested):
        e = CustomEvent(name="n", value=value)
        calls = []

        def loop(*args: Any) -> Any:
            calls.append(args)
            return _dump.to_builtins_loop(args[0], by_alias=args[1], enums=args[2])

        same(_native.dump_python(e, True, True, False, loop), reference_dump(e, by_alias=True, enums=True))
        assert len(calls) == 1
        same(e.model_dump(), reference_dump(e, by_alias=False, enums=True))
    # A Struct without dict=True (no extras, no __dict__): its fields, as one with extras
    # (msgspec.to_builtins's data), whichever option set takes the loop or the filter.
    e = CustomEvent(name="n", value=[Plain(), Plain(a=2)])
    value = [{"a": 1}, {"a": 2}]
    same(e.model_dump(), {"type": EventType.CUSTOM, "name": "n", "value": value})
    same(e.model_dump(by_alias=True, exclude_none=True), {"type": EventType.CUSTOM, "name": "n", "value": value})
    same(e.model_dump(mode="json"), {"type": "CUSTOM", "name": "n", "value": value})
    same(e.model_dump(exclude_unset=True), {"name": "n", "value": [{}, {"a": 2}]})
    same(e.model_dump(include={"value"}), {"value": value})
    assert e.model_dump_json() == '{"type":"CUSTOM","name":"n","value":[{"a":1},{"a":2}]}'
    assert msgspec.to_builtins(e.value) == value


def test_deep_values_up_to_the_limits():
    for levels in (1, 100, 511, 600, 5_000):
        nested: Any = {"x": None}
        for _ in range(levels):
            nested = {"a": [nested]}
        e = StateSnapshotEvent(snapshot=nested)
        same(e.model_dump(), reference_dump(e, by_alias=False, enums=True))
        same(e.model_dump(by_alias=True, exclude_none=True), reference_model_dump(e, by_alias=True, exclude_none=True))


class Counted(list):
    """A list that counts how often the Python loop reads its items."""

    reads = 0

    def __iter__(self) -> Any:
        Counted.reads += 1
        return super().__iter__()


def test_a_cycle_is_an_error_where_it_repeats():
    value = Counted()
    value.append({"again": value})
    e = CustomEvent(name="n", value=value)
    e.loop = [e]  # a Struct in a cycle too
    dumps = [
        e.model_dump,
        lambda: e.model_dump(by_alias=True, exclude_none=True),
        lambda: e.model_dump(mode="json"),
        lambda: e.model_dump(mode="json", exclude_none=True),
        e.model_dump_json,
        lambda: e.model_dump(include={"value"}),
        lambda: to_builtins(e),
        lambda: _dump.to_builtins_loop(e),
    ]
    for dump in dumps:
        Counted.reads = 0
        with pytest.raises(EncodeError, match="circular reference: a Counted contains itself"):
            dump()
        assert Counted.reads <= 2  # (the loop met it twice, not 100,000 levels deep)
    e.value = None
    with pytest.raises(EncodeError, match="circular reference: a CustomEvent contains itself"):
        e.model_dump()


def test_a_value_met_twice_is_no_cycle():
    shared = {"k": [1, (2,)]}
    nested: Any = [shared, shared]
    for _ in range(600):  # past the walk's 512 levels: the Python loop's work
        nested = [nested, shared]
    e = CustomEvent(name="n", value=nested)
    same(e.model_dump(), reference_dump(e, by_alias=False, enums=True))
    same(_dump.to_builtins_loop(e), reference_dump(e))


def test_getter_errors_pass_unchanged():
    class Broken(TextMessageContentEvent, tag="BROKEN_DUMP"):
        @property
        def note(self) -> str:
            raise KeyError("boom")

        __agui_fields__ = (*TextMessageContentEvent.__agui_fields__, ("note", "note", False))

    e = Broken(message_id="m", delta="d")
    with pytest.raises(KeyError):
        reference_dump(e)
    with pytest.raises(KeyError):
        e.model_dump()


# -- JSON mode by attribute name ----------------------------------------------------------------


def test_json_mode_by_name_matches_the_old_path():
    for e in events(34, 310):
        old = msgspec.json.decode(_native.dumps(reference_dump(e, by_alias=False))) if _plain_json(e) else None
        if old is None:
            continue
        same(e.model_dump(mode="json"), old)
        assert e.model_dump_json() == _native.dumps(reference_dump(e, by_alias=False)).decode()


def old_json_mode(e: Any, *, by_alias: bool, exclude_none: bool) -> Any:
    """``model_dump(mode="json", ...)`` as it was: the JSON of the loop's data (or of the
    Struct by alias) read back, the Python-mode data where the writer refused; then the
    exclude_none filter."""
    try:
        data = msgspec.json.decode(_native.dumps(e if by_alias else reference_dump(e, by_alias=False)))
    except EncodeError:
        data = reference_dump(e, by_alias=by_alias)
    if exclude_none:
        data = _filter(e, data, None, None, by_alias, _Drop(True, False, False))
    return data


@pytest.mark.parametrize("by_alias", [False, True])
def test_json_mode_exclude_none_matches_the_old_path(by_alias):
    for e in events(36, 620):
        if not by_alias and not _plain_json(e):
            continue
        same(e.model_dump(mode="json", by_alias=by_alias, exclude_none=True), old_json_mode(e, by_alias=by_alias, exclude_none=True))
        same(e.model_dump(mode="json", by_alias=by_alias), old_json_mode(e, by_alias=by_alias, exclude_none=False))


def test_json_exclude_none_reaches_structs_as_the_filter_does():
    inner = TextMessageContentEvent(message_id="m", delta="d", timestamp=None)
    inner.note = None
    e = CustomEvent(name="n", value={"a": [inner, (inner,)], "b": None, "c": float("nan")})
    e.top = None
    e.nan = float("nan")
    for by_alias in (False, True):
        got = e.model_dump(mode="json", by_alias=by_alias, exclude_none=True)
        same(got, old_json_mode(e, by_alias=by_alias, exclude_none=True))
        assert "top" not in got and "nan" not in got and got["value"]["b"] is None
        assert "note" not in got["value"]["a"][0] and "note" not in got["value"]["a"][1][0]
    assert _native.dump_json(e, True, True) == b'{"type":"CUSTOM","name":"n","value":{"a":[{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"},[{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}]],"b":null,"c":null}}'


def _plain_json(e: Any) -> bool:
    """Events whose old JSON path wrote them (no lone surrogate, no refused value) and
    held no non-finite float in an omittable field or a None extra named like one, where
    the walk follows the reference (it leaves those out) and the old path wrote null."""
    try:
        _native.dumps(reference_dump(e, by_alias=False))
        _native.dumps(e)
    except EncodeError:
        return False
    for attr, _, omit in _dump.fields_of(type(e)):
        v = getattr(e, attr)
        if omit and isinstance(v, float) and not math.isfinite(v):
            return False
    return True


# -- against the reference SDK ------------------------------------------------------------------

OPTIONS = [
    {},
    {"by_alias": True},
    {"by_alias": True, "exclude_none": True},
    {"exclude_none": True},
    {"mode": "json"},
    {"mode": "json", "by_alias": True},
    {"mode": "json", "by_alias": True, "exclude_none": True},
    {"by_alias": True, "exclude": {"delta"}},
    {"by_alias": True, "include": {"type", "messageId", "message_id", "messages"}},
]


@pytest.mark.parametrize("kw", OPTIONS, ids=[str(k) for k in OPTIONS])
def test_random_events_match_the_reference(kw):
    pytest.importorskip("ag_ui")
    from agui_fast.interop import to_ag_ui

    for e in EventGen(35, extras=False).events(310):
        theirs = to_ag_ui(e)
        same(e.model_dump(**kw), theirs.model_dump(**kw))


# -- extras named like fields, against the reference SDK -----------------------------------------

NAMED_BASES = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "d"},
    {"type": "RUN_STARTED", "threadId": "th", "runId": "r", "parentRunId": "pr"},
    {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "a", "role": "assistant", "content": "c", "name": "x"}]},
]
# the other spelling of required and optional fields (kept as extras), a plain extra
NAMED_KEYS = ["message_id", "messageId", "raw_event", "rawEvent", "timestamp", "parent_run_id", "name", "foo"]


def named_like_fields() -> List[Dict[str, Any]]:
    """Events as dicts with members named like fields, holding None or a value: the other
    spelling of a field beside it (``message_id`` beside ``messageId`` is kept as an extra,
    by both packages), for the event and for a snapshot's message."""
    out = []
    for base in NAMED_BASES:
        for k1 in NAMED_KEYS:
            for k2 in (None, *NAMED_KEYS):
                for v1, v2 in ((None, None), (None, "x"), ("x", None)):
                    d = json.loads(json.dumps(base))
                    target = d["messages"][0] if "messages" in d else d
                    target[k1] = v1
                    if k2 is not None:
                        target[k2] = v2
                    out.append(d)
    return out


NAMED_OPTIONS = [
    *OPTIONS,
    {"mode": "json", "exclude_none": True},
    {"exclude_none": True, "exclude": {"foo"}},
    {"exclude_unset": True},
    {"exclude_defaults": True},
]


@pytest.mark.parametrize("kw", NAMED_OPTIONS, ids=[str(k) for k in NAMED_OPTIONS])
def test_extras_named_like_fields_match_the_reference(kw):
    """The reference's model serializer leaves out every key of an optional field (its name
    or its alias) holding None, after the extras were set: an extra holding None under such
    a key goes, and takes the field it replaced with it; ``exclude_none`` skips a None extra
    (the field of its key stays); an extra that replaces a field keeps the field's place."""
    pydantic = pytest.importorskip("pydantic")
    ref = pytest.importorskip("ag_ui.core")
    adapter = pydantic.TypeAdapter(ref.Event)
    checked = 0
    for d in named_like_fields():
        try:
            theirs = adapter.validate_python(d)
        except pydantic.ValidationError:
            continue
        ours = decode_event(d)
        same(ours.model_dump(**kw), theirs.model_dump(**kw))
        if set(kw) <= {"by_alias", "exclude_none"}:
            assert ours.model_dump_json(**kw) == theirs.model_dump_json(**kw), d
            same(native(ours, by_alias=bool(kw.get("by_alias")), exclude_none=bool(kw.get("exclude_none"))), theirs.model_dump(**kw))
        checked += 1
    assert checked > 700, checked


def test_a_none_extra_named_like_an_optional_field_is_left_out():
    e = decode_event({"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "d", "message_id": None, "rawEvent": 1, "raw_event": None})
    assert e.model_extra == {"message_id": None, "raw_event": None}
    chunk = EventType.TEXT_MESSAGE_CHUNK
    same(e.model_dump(), {"type": chunk, "delta": "d"})  # the fields they replaced go too
    same(e.model_dump(by_alias=True), {"type": chunk, "rawEvent": 1, "messageId": "m", "delta": "d"})
    same(e.model_dump(exclude_none=True), {"type": chunk, "raw_event": 1, "message_id": "m", "delta": "d"})
    same(e.model_dump(mode="json"), {"type": "TEXT_MESSAGE_CHUNK", "delta": "d"})
    assert e.model_dump_json() == '{"type":"TEXT_MESSAGE_CHUNK","delta":"d"}'
    # the loop (the walk's fallback) by the same rules
    for by_alias in (False, True):
        for exclude_none in (False, True):
            same(_dump.to_builtins_loop(e, by_alias=by_alias, enums=True, exclude_none=exclude_none), e.model_dump(by_alias=by_alias, exclude_none=exclude_none))
