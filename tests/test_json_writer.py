"""The Rust JSON writer (`agui_fast._native.dumps` / `encode_sse*`) against the Python
reference: ag_ui's `EventEncoder` (pydantic) output byte for byte, and
`pydantic_core.to_json` for plain JSON-like values."""

from __future__ import annotations

import enum
import json
import math
import sys
from pathlib import Path
from typing import Any, ClassVar, Dict, List, Optional, Tuple

import msgspec
import pydantic
import pydantic_core
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import ag_ui.core as core
from ag_ui.encoder import EventEncoder
from agui_fast import _native
from agui_fast import core as fast
from agui_fast.errors import AguiError, EncodeError
from conftest import examples, load_jsonl

EVENT_ADAPTER = pydantic.TypeAdapter(core.Event)


def _validate(case: Dict[str, Any]):
    if case.get("event_json") is not None:
        return EVENT_ADAPTER.validate_json(case["event_json"])
    return EVENT_ADAPTER.validate_python(case["event"])


EVENT_CASES = load_jsonl("codec/events.jsonl")
ACCEPTED_INVALID_CASES = [c for c in load_jsonl("codec/invalid_events.jsonl") if c.get("py_rejects") is False]


# ---------------------------------------------------------------------------
# The vectors: byte-for-byte equality with the Python reference's SSE
# ---------------------------------------------------------------------------


def _check_case(case: Dict[str, Any]) -> None:
    model = _validate(case)
    if case.get("py_error"):
        assert case.get("py_stage", "encode") == "encode"
        with pytest.raises(EncodeError, match="surrogate"):
            _native.encode_sse(model)
        with pytest.raises(EncodeError):
            _native.dumps(model)
        return
    expected = case["py_sse"]
    got = _native.encode_sse(model)
    assert type(got) is str
    assert got == expected
    assert _native.encode_sse_bytes(model) == expected.encode("utf-8")
    assert _native.dumps(model) == expected[len("data: ") : -2].encode("utf-8")


@pytest.mark.parametrize("case", EVENT_CASES, ids=[c["name"] for c in EVENT_CASES])
def test_events_vectors(case):
    _check_case(case)


@pytest.mark.parametrize(
    "case", ACCEPTED_INVALID_CASES, ids=[c["name"] for c in ACCEPTED_INVALID_CASES]
)
def test_accepted_invalid_events_vectors(case):
    _check_case(case)


def test_vector_counts():
    assert len(EVENT_CASES) == 598
    assert len(ACCEPTED_INVALID_CASES) > 0
    assert sum(1 for c in EVENT_CASES if c.get("py_error")) == 5


def test_encode_sse_many_all_vectors():
    models, expected = [], []
    for case in EVENT_CASES + ACCEPTED_INVALID_CASES:
        if case.get("py_error"):
            continue
        models.append(_validate(case))
        expected.append(case["py_sse"])
    assert _native.encode_sse_many(models) == "".join(expected).encode("utf-8")
    assert _native.encode_sse_many(iter(models)) == "".join(expected).encode("utf-8")
    assert _native.encode_sse_many(m for m in models[:3]) == "".join(expected[:3]).encode()
    assert _native.encode_sse_many([]) == b""


def test_encode_sse_many_error_propagates():
    good = core.TextMessageStartEvent(message_id="m")
    bad = core.TextMessageContentEvent(message_id="m", delta="\ud800")
    with pytest.raises(EncodeError):
        _native.encode_sse_many([good, bad])
    with pytest.raises(TypeError):
        _native.encode_sse_many(5)


# ---------------------------------------------------------------------------
# Reference models built directly (the verified table of events-1.0.md §1.4 and more)
# ---------------------------------------------------------------------------


def _ref_models():
    c = core
    return [
        c.TextMessageStartEvent(message_id="m1"),
        c.TextMessageStartEvent(
            message_id="m1",
            role="assistant",
            name="n",
            subagent_run_id="s",
            timestamp=1,
            raw_event={"a": None},
            metadata={"k": None},
        ),
        c.TextMessageContentEvent(message_id="m1", delta="x", extra_field=1, anotherOne=None),
        c.CustomEvent(name="n", value=None),
        c.StateDeltaEvent(
            delta=[{"op": "move", "from": "/a", "path": "/b"}, {"op": "add", "path": "/x", "value": None}]
        ),
        c.RunFinishedEvent(thread_id="t", run_id="r", outcome={"type": "cancelled"}, usage=[]),
        c.ActivitySnapshotEvent(message_id="m", activity_type="A", content={}, replace=False),
        c.ReasoningMessageStartEvent(message_id="m"),
        c.SubagentFinishedEvent(subagent_run_id="s", outcome={"type": "suspended"}),
        c.MessagesSnapshotEvent(
            messages=[
                c.AssistantMessage(
                    id="a",
                    tool_calls=[c.ToolCall(id="tc", function=c.FunctionCall(name="f", arguments="{}"))],
                ),
                c.ToolMessage(id="t", content="c", tool_call_id="tc", subagent_run_id="s"),
                c.ActivityMessage(id="x", activity_type="PLAN", content={}),
                c.UserMessage(id="u", content="hi"),
            ]
        ),
        # NaN / inf: null inside values; an omittable field holding NaN is left out.
        c.TextMessageContentEvent.model_validate(
            {"messageId": "m", "delta": "x", "rawEvent": float("nan"), "metadata": {"a": float("inf")}}
        ),
        c.RawEvent(event=float("-inf")),
        c.RawEvent(event=[1.5, -0.0, 1e16, 1e-7, 2**80, -(2**70), True, None, "é\u2028"]),
        # snake_case duplicate kept as an extra; an extra named like an omittable field is
        # dropped when None.
        c.TextMessageContentEvent.model_validate(
            {"messageId": "m", "message_id": "x", "delta": "d", "raw_event": None, "rawEvent": 1}
        ),
        c.TextMessageContentEvent.model_validate(
            {"messageId": "m", "delta": "d", "raw_event": None, "zzz": None}
        ),
        c.CustomEvent(name="n", value={"z": 1, "a": 2, "10": 3, "2": 4}),
        c.StateSnapshotEvent(snapshot=(1, "two", (3,))),
    ]


@pytest.mark.parametrize("model", _ref_models(), ids=lambda m: type(m).__name__)
def test_reference_models(model):
    assert _native.encode_sse(model) == EventEncoder().encode(model)


def test_reference_enum_and_nested_models_directly():
    assert _native.dumps(core.EventType.RUN_STARTED) == b'"RUN_STARTED"'
    assert _native.dumps(core.FunctionCall(name="f", arguments="{}")) == b'{"name":"f","arguments":"{}"}'
    msg = core.UserMessage(id="u", content="hi")
    assert _native.dumps(msg) == msg.model_dump_json(by_alias=True).encode()


# ---------------------------------------------------------------------------
# Plain values against pydantic_core.to_json
# ---------------------------------------------------------------------------

FLOAT_EDGES = [
    0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308,
    2.2250738585072014e-308, 1e16, 9999999999999998.0, 1e15, 1e-5, 9.999999999999999e-6,
    1e-6, 1e-7, 0.1, 0.2, 0.30000000000000004, 1.0, 100.0, 1e20, 1e21, 1e22, 1e100,
    1.5e-7, 123456789.123, 1700000000000.0, 2.0**53, 2.0**63, 2.0**64, 0.5, 1 / 3,
]


@pytest.mark.parametrize("x", FLOAT_EDGES, ids=repr)
def test_float_edges(x):
    assert _native.dumps(x) == pydantic_core.to_json(x)
    assert _native.dumps(-x) == pydantic_core.to_json(-x)


# The plain-value properties draw their values in lists, each value checked on its own: as
# many values as one example each would be, for a tenth of the CPU (hypothesis's cost is per
# example, not per value drawn).
@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=30, max_size=30))
def test_floats_match_pydantic(xs):
    for x in xs:
        assert _native.dumps(x) == pydantic_core.to_json(x), x


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=20, max_size=20))
def test_float_bit_patterns_match_pydantic(patterns):
    import struct

    for bits in patterns:
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isfinite(x):
            assert _native.dumps(x) == pydantic_core.to_json(x), x
        else:
            assert _native.dumps(x) == b"null"


def test_many_floats_in_one_buffer_match_pydantic():
    """Floats are formatted in place at the end of the output (zmij writing into the spare
    capacity): many of them in one document, at every offset and across the buffer's
    growth, each kind of text (fixed, exponent, subnormal, signed zero, integral)."""
    import random
    import struct

    rng = random.Random(19)
    xs = FLOAT_EDGES + [-x for x in FLOAT_EDGES]
    xs += [rng.random() * 1000 for _ in range(3000)]  # the state snapshot's kind
    xs += [rng.random() * 10.0 ** rng.randint(-330, 308) for _ in range(3000)]
    xs += [float(rng.randint(-(2**63), 2**63)) for _ in range(1000)]  # big ints as floats
    xs += [float(rng.randint(-(10**6), 10**6)) for _ in range(1000)]
    xs += [rng.randint(1, 2**52) * 5e-324 for _ in range(500)]  # subnormals
    bits = (struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(5000))
    xs += [x for x in bits if math.isfinite(x)]
    for start in range(4):  # every alignment of the text in the buffer
        doc = ["x" * start, *xs, {"k": xs[:50]}]
        assert _native.dumps(doc) == pydantic_core.to_json(doc)
    assert _native.encode_sse_bytes(xs) == b"data: " + pydantic_core.to_json(xs) + b"\n\n"


def test_many_ints_in_one_buffer_match_pydantic():
    """Integers are written in place too: every digit count and sign, around each power
    of ten, the in-place small-int reads (< 2**60) and the API's (up to i64), and beyond."""
    ns = [0]
    for d in range(0, 20):
        for p in (10**d - 1, 10**d, 10**d + 1):
            ns += [p, -p]
    ns += [2**60 - 1, 2**60, -(2**60), 2**63 - 1, -(2**63), 2**63, 2**64, -(2**64) - 1]
    assert _native.dumps(ns) == pydantic_core.to_json(ns) == json.dumps(ns, separators=(",", ":")).encode()


@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf, -math.nan])
def test_non_finite_floats_are_null(x):
    assert _native.dumps(x) == b"null"
    assert _native.dumps(x) == pydantic_core.to_json(x, inf_nan_mode="null")
    assert _native.dumps([x, {"k": x}]) == b'[null,{"k":null}]'


@settings(max_examples=examples(500), deadline=None)
@given(st.integers(min_value=-(2**300), max_value=2**300))
@example(2**63 - 1)
@example(2**63)
@example(-(2**63))
@example(-(2**63) - 1)
@example(2**64 - 1)
@example(2**64)
def test_ints_match_pydantic(n):
    assert _native.dumps(n) == pydantic_core.to_json(n) == str(n).encode()


def test_huge_int():
    n = 7**2000
    assert _native.dumps(n) == str(n).encode()


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.text(), min_size=15, max_size=15))
@example(["".join(chr(i) for i in range(0x80)), '\u2028\u2029/\\"\x7f\U0001f600'])
def test_strings_match_pydantic(strings):
    for s in strings:
        assert _native.dumps(s) == pydantic_core.to_json(s), s


def test_control_characters_each():
    for i in range(0x80):
        ch = chr(i)
        assert _native.dumps(ch) == pydantic_core.to_json(ch), hex(i)


# Every kind of character the escaper treats differently: the escapes, other control
# characters, DEL and `/` (raw), 2-, 3- and 4-byte UTF-8 (U+2028 raw, as pydantic writes it).
_ESCAPE_ALPHABET = '"\\/\n\r\t\b\f\x00\x01\x1b\x1f\x7f\x80éa Z~\u2028\u2029\uffff\U0001f600'


def _random_strings():
    import random

    rng = random.Random(20)
    for length in range(0, 141):  # across 16/32/64-byte blocks and 128-byte chunks
        for _ in range(8):
            plain = rng.random() < 0.5
            yield "".join(
                "x" if plain and rng.random() < 0.9 else rng.choice(_ESCAPE_ALPHABET) for _ in range(length)
            )


def test_strings_at_every_length_match_the_reference():
    """The SIMD escaper (its kernel picked at run time) against the byte-by-byte rules
    (`json.dumps` without ASCII escapes spells them as pydantic does) and pydantic itself:
    alone, in one list (strings back to back in the buffer, many ending near page
    boundaries of the heap), and as dict keys."""
    strings = list(_random_strings())
    for s in strings:
        want = json.dumps(s, ensure_ascii=False).encode()
        assert _native.dumps(s) == want == pydantic_core.to_json(s), repr(s)
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    assert _native.dumps(strings) == json.dumps(strings, **compact).encode()
    keyed = {s: i for i, s in enumerate(strings)}
    assert _native.dumps(keyed) == json.dumps(keyed, **compact).encode()


def test_lone_surrogates_at_every_position_are_refused():
    for length in (0, 1, 15, 16, 31, 32, 33, 64, 127, 128, 129):
        for pos in range(0, length + 1, max(1, length // 7)):
            for sur in ("\ud800", "\udfff"):
                s = "a" * pos + sur + "b" * (length - pos)
                with pytest.raises(EncodeError, match="surrogate"):
                    _native.dumps(s)
                with pytest.raises(EncodeError, match="surrogate"):
                    _native.dumps({s: 1})


JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**100), max_value=2**100)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES)
def test_json_values_match_pydantic(x):
    assert _native.dumps(x) == pydantic_core.to_json(x)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.text(max_size=8), st.integers()), max_size=20))
def test_dict_key_order_preserved(items):
    d = dict(items)
    assert _native.dumps(d) == pydantic_core.to_json(d)
    assert list(json.loads(_native.dumps(d))) == list(d)


def test_simple_values():
    assert _native.dumps(None) == b"null"
    assert _native.dumps(True) == b"true"
    assert _native.dumps(False) == b"false"
    assert _native.dumps([]) == b"[]"
    assert _native.dumps({}) == b"{}"
    assert _native.dumps(()) == b"[]"
    assert _native.dumps((1, [2, (3,)])) == b"[1,[2,[3]]]"
    assert _native.dumps({"a": [1, {"b": None}]}) == b'{"a":[1,{"b":null}]}'
    assert type(_native.dumps(1)) is bytes


class Color(str, enum.Enum):
    RED = "red"


class Num(enum.IntEnum):
    ONE = 1


class Plain(enum.Enum):
    A = "a"
    B = 2.5


class MyStr(str):
    def __str__(self):
        return "not this"


class MyInt(int):
    def __repr__(self):
        return "not this"


class MyFloat(float):
    pass


class MyDict(dict):
    pass


class MyList(list):
    pass


def test_enums_and_subclasses():
    assert _native.dumps(Color.RED) == b'"red"'
    assert _native.dumps(Num.ONE) == b"1"
    assert _native.dumps(Plain.A) == b'"a"'
    assert _native.dumps(Plain.B) == b"2.5"
    assert _native.dumps({Color.RED: Num.ONE}) == b'{"red":1}'
    assert _native.dumps(MyStr("x\n")) == b'"x\\n"'
    assert _native.dumps({MyStr("k"): 1}) == b'{"k":1}'
    assert _native.dumps(MyInt(5)) == b"5"
    assert _native.dumps(MyInt(2**70)) == str(2**70).encode()
    assert _native.dumps(MyFloat(1.0)) == b"1.0"
    assert _native.dumps(MyDict(a=1)) == b'{"a":1}'
    assert _native.dumps(MyList([1, 2])) == b"[1,2]"
    for v in [Color.RED, Num.ONE, Plain.A, MyStr("k"), MyInt(5), MyFloat(1.0), MyDict(a=1)]:
        assert _native.dumps(v) == pydantic_core.to_json(v)


# ---------------------------------------------------------------------------
# msgspec Structs with a field plan (__agui_fields__)
# ---------------------------------------------------------------------------


class Inner(msgspec.Struct, dict=True):
    __agui_fields__: ClassVar[Tuple[Tuple[str, str, bool], ...]] = (
        ("name", "name", False),
        ("call_id", "callId", True),
    )
    name: str
    call_id: Optional[str] = None


class Outer(msgspec.Struct, dict=True, kw_only=True):
    __agui_fields__: ClassVar[Tuple[Tuple[str, str, bool], ...]] = (
        ("type", "type", False),
        ("timestamp", "timestamp", True),
        ("raw_event", "rawEvent", True),
        ("message_id", "messageId", False),
        ("value", "value", False),
        ("children", "children", True),
    )
    type: core.EventType = core.EventType.CUSTOM
    timestamp: Optional[int] = None
    raw_event: Any = None
    message_id: str
    value: Any = None
    children: Optional[List[Inner]] = None


class NoDict(msgspec.Struct):
    __agui_fields__: ClassVar[Tuple[Tuple[str, str, bool], ...]] = (("b", "B", False), ("a", "A", False))
    a: int = 1
    b: int = 2


def test_struct_fields_in_plan_order_and_omission():
    o = Outer(message_id="m")
    assert _native.dumps(o) == b'{"type":"CUSTOM","messageId":"m","value":null}'
    o = Outer(message_id="m", timestamp=5, raw_event={"x": None}, value=[1], children=[Inner("n")])
    assert _native.dumps(o) == (
        b'{"type":"CUSTOM","timestamp":5,"rawEvent":{"x":null},"messageId":"m","value":[1],'
        b'"children":[{"name":"n"}]}'
    )
    assert _native.dumps(NoDict()) == b'{"B":2,"A":1}'
    assert _native.encode_sse(NoDict()) == 'data: {"B":2,"A":1}\n\n'


def test_struct_extras_from_dict():
    o = Outer(message_id="m")
    o.__dict__["extra_field"] = 1
    o.__dict__["anotherOne"] = None
    o.__dict__["z"] = {"é": [1.5]}
    assert _native.dumps(o) == (
        b'{"type":"CUSTOM","messageId":"m","value":null,"extra_field":1,"anotherOne":null,'
        b'"z":{"\xc3\xa9":[1.5]}}'
    )
    i = Inner("n", call_id="c")
    i.__dict__["k"] = "v"
    assert _native.dumps(i) == b'{"name":"n","callId":"c","k":"v"}'


def test_struct_extras_named_like_omittable_fields_follow_reference_rule():
    o = Outer(message_id="m")
    o.__dict__["raw_event"] = None  # same name as an omittable field: dropped when None
    o.__dict__["rawEvent"] = None
    o.__dict__["message_id"] = None  # required field's name: kept
    assert _native.dumps(o) == b'{"type":"CUSTOM","messageId":"m","value":null,"message_id":null}'
    o.__dict__["raw_event"] = 3
    assert _native.dumps(o) == (
        b'{"type":"CUSTOM","messageId":"m","value":null,"raw_event":3,"message_id":null}'
    )


def test_struct_omittable_non_finite_float_is_omitted():
    o = Outer(message_id="m", raw_event=float("nan"), value=float("inf"))
    assert _native.dumps(o) == b'{"type":"CUSTOM","messageId":"m","value":null}'


def test_struct_matches_reference_output():
    ref = core.TextMessageContentEvent(message_id="m1", delta="x", extra_field=1, anotherOne=None)

    class TMC(msgspec.Struct, dict=True, kw_only=True):
        __agui_fields__: ClassVar[Tuple[Tuple[str, str, bool], ...]] = (
            ("type", "type", False),
            ("timestamp", "timestamp", True),
            ("raw_event", "rawEvent", True),
            ("metadata", "metadata", True),
            ("subagent_run_id", "subagentRunId", True),
            ("message_id", "messageId", False),
            ("delta", "delta", False),
        )
        type: core.EventType = core.EventType.TEXT_MESSAGE_CONTENT
        timestamp: Optional[int] = None
        raw_event: Any = None
        metadata: Optional[Dict[str, Any]] = None
        subagent_run_id: Optional[str] = None
        message_id: str
        delta: str

    s = TMC(message_id="m1", delta="x")
    s.__dict__["extra_field"] = 1
    s.__dict__["anotherOne"] = None
    assert _native.encode_sse(s) == EventEncoder().encode(ref)
    assert _native.encode_sse_many([s, ref]) == (EventEncoder().encode(ref) * 2).encode()


def test_struct_bad_plan():
    class Bad(msgspec.Struct):
        __agui_fields__: ClassVar[Any] = (("a", 1, False),)
        a: int = 0

    with pytest.raises(EncodeError, match="__agui_fields__"):
        _native.dumps(Bad())


def test_struct_missing_attribute_raises():
    class Missing(msgspec.Struct):
        __agui_fields__: ClassVar[Any] = (("nope", "nope", False),)

    # an EncodeError caused by the AttributeError (encoders raise the project's errors only)
    with pytest.raises(EncodeError) as info:
        _native.dumps(Missing())
    assert isinstance(info.value.__cause__, AttributeError)


def test_struct_unset_slot_raises_attribute_error():
    # Fields are read straight from the instance slots; an unset slot (a Struct made
    # without __init__) must still raise like getattr does, not crash.
    blank = NoDict()
    del blank.a
    with pytest.raises(EncodeError) as info:
        _native.dumps(blank)
    assert isinstance(info.value.__cause__, AttributeError)


def test_struct_subclass_and_slotted_class_and_property_override():
    class Sub(NoDict):
        __agui_fields__: ClassVar[Any] = (("c", "C", False), ("b", "B", False), ("a", "A", False))
        c: str = "x"

    assert _native.dumps(Sub(a=3)) == b'{"C":"x","B":2,"A":3}'

    class Slotted:  # a plain __slots__ class with a plan: same direct read
        __slots__ = ("p", "q")
        __agui_fields__ = (("p", "p", False), ("q", "q", True))

        def __init__(self, p, q=None):
            self.p, self.q = p, q

    assert _native.dumps(Slotted([1], None)) == b'{"p":[1]}'
    assert _native.dumps(Slotted("s", 2.5)) == b'{"p":"s","q":2.5}'
    half = Slotted.__new__(Slotted)
    half.p = 1  # q never set
    with pytest.raises(EncodeError) as info:
        _native.dumps(half)
    assert isinstance(info.value.__cause__, AttributeError)

    class Prop(NoDict):  # a property shadowing a field in a subclass wins, as for getattr
        __agui_fields__: ClassVar[Any] = (("b", "B", False), ("a", "A", False))

        @property
        def b(self):  # type: ignore[override]
            return "from-property"

    assert _native.dumps(Prop()) == b'{"B":"from-property","A":1}'


def test_a_struct_class_changed_after_its_plan_was_built_is_encoded_as_it_is_now():
    """The walker's cached plan is trusted only under the class's version tag: a field
    replaced by a property after the plan was built is read through the property (as
    getattr reads it), by every encoder, without anything else rebuilding the plan."""
    if not _native._testing.direct_reads()["version"]:
        pytest.skip("class version tags are not read on this interpreter: changes are not seen")
    from agui_fast.encoder import EventEncoder as FastEncoder

    class Delta(fast.StateDeltaEvent):  # a class of its own: no other test's plan is touched
        pass

    enc = FastEncoder()
    ev = Delta(delta=[fast.AddOperation(path="/v", value=1)])
    before = enc.encode(ev)
    assert '"path":"/v"' in before and _native.dumps(ev) == before[6:-2].encode()
    slot = Delta.__dict__.get("delta")
    Delta.delta = property(lambda self: [fast.AddOperation(path="/p", value=2)])
    try:
        assert '"path":"/p"' in enc.encode(ev)
        assert b'"path":"/p"' in _native.dumps(ev)
        assert '"path":"/p"' in _native.encode_sse(ev)
        # the base class's own plan is untouched
        assert '"path":"/v"' in enc.encode(fast.StateDeltaEvent(delta=[fast.AddOperation(path="/v", value=1)]))
    finally:
        if slot is None:
            del Delta.delta
        else:
            Delta.delta = slot
    assert enc.encode(ev) == before  # back to the slot


def test_encoding_a_struct_makes_no_instance_dict():
    """A Struct with an instance `__dict__` (for extras) has none until an extra is set:
    the walker reads it without making an empty one per Struct written."""
    import gc

    from agui_fast.decoder import decode_event

    if not _native._testing.direct_reads()["managed_dict"]:
        pytest.skip("instance dicts are read through the API on this interpreter")

    def has_dict(o):
        return any(type(r) is dict for r in gc.get_referents(o))

    for ev in (
        decode_event(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}'),
        fast.TextMessageContentEvent(message_id="m", delta="hi"),
    ):
        assert not has_dict(ev)
        want = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}'
        assert _native.dumps(ev) == want
        assert _native.encode_sse_event(ev) == "data: " + want.decode() + "\n\n"
        assert not has_dict(ev)
        ev.trace = "t"  # an extra: written after the declared fields
        assert _native.dumps(ev) == want[:-1] + b',"trace":"t"}'



def test_instances_of_one_class_keep_their_own_extras():
    """Whether a class's instance dicts are read in place is decided once per class (its
    plan); whether an instance has one, per instance: instances with and without extras,
    of a Struct and of a subclass with a field of its own, written alternately."""

    class Sub(fast.TextMessageContentEvent, kw_only=True):  # a class of its own: a fresh plan
        note: str = "n"

    base = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"'
    plain, extra = Sub(message_id="m", delta="hi"), Sub(message_id="m", delta="hi", note="x")
    extra.trace = "t"
    for _ in range(3):
        assert _native.dumps(plain) == base + b',"note":"n"}'
        assert _native.dumps(extra) == base + b',"note":"x","trace":"t"}'
        assert _native.encode_sse_event(extra) == "data: " + (base + b',"note":"x","trace":"t"}').decode() + "\n\n"
    plain.later = [1]  # an instance dict made after the plan was: read too
    assert _native.dumps(plain) == base + b',"note":"n","later":[1]}'
    del plain.later  # an empty dict now: no extras
    assert _native.dumps(plain) == base + b',"note":"n"}'



def test_a_class_changed_during_a_walk_is_planned_anew_for_its_next_object():
    """A walk keeps the plans of the classes it met (no shared-cache lookup per nested
    object) only under the class's version tag: a class changed mid-walk (a field replaced
    by a property) is planned anew for its next instance."""
    if not _native._testing.direct_reads()["version"]:
        pytest.skip("class version tags are not read on this interpreter: changes are not seen")

    class K:
        __slots__ = ("x",)
        __agui_fields__ = (("x", "x", False),)

        def __init__(self, x):
            self.x = x

    class Changer:
        __slots__ = ()
        __agui_fields__ = (("y", "y", False),)

        @property
        def y(self):
            K.x = property(lambda self: "changed")
            return 1

    assert _native.dumps([K("a"), K("b")]) == b'[{"x":"a"},{"x":"b"}]'
    assert _native.dumps([K("a"), Changer(), K("b")]) == b'[{"x":"a"},{"y":1},{"x":"changed"}]'


def test_struct_field_values_survive_mutation_during_encoding():
    class Box(msgspec.Struct):
        __agui_fields__: ClassVar[Any] = (("a", "a", False), ("b", "b", False))
        a: Any = None
        b: Any = None

    class Mutator:
        __slots__ = ("box",)
        __agui_fields__ = (("x", "x", False),)

        def __init__(self, box):
            self.box = box

        @property
        def x(self):  # drops the box's references to its values mid-write
            self.box.a = None
            self.box.b = None
            return 1

    box = Box()
    box.a = [Mutator(box), ["still", "here"]]
    box.b = {"k": "v" * 10}
    # b is read from its slot after the property ran: null by then.
    assert _native.dumps(box) == b'{"a":[{"x":1},["still","here"]],"b":null}'


# ---------------------------------------------------------------------------
# Other pydantic models
# ---------------------------------------------------------------------------


class PModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True)
    a: int
    b: Optional[str] = None
    c: Optional[int] = pydantic.Field(default=None, serialization_alias="cee")
    d: Optional[int] = 5
    e: Optional[str] = pydantic.Field(default=None, alias="eAlias")


def test_plain_pydantic_model_plan():
    # not an ag_ui model: no omission, exactly pydantic's own by_alias dump
    m = PModel(a=1, d=None, x=None, y=[1])
    assert _native.dumps(m) == b'{"a":1,"b":null,"cee":null,"d":null,"eAlias":null,"x":null,"y":[1]}'
    assert _native.dumps(m) == m.model_dump_json(by_alias=True).encode()
    m = PModel(a=1, b="s", c=2, eAlias="e")
    assert _native.dumps(m) == b'{"a":1,"b":"s","cee":2,"d":5,"eAlias":"e"}'
    assert _native.dumps(m) == m.model_dump_json(by_alias=True).encode()


def test_user_pydantic_model_inside_an_event():
    ev = core.StateSnapshotEvent(snapshot={"m": PModel(a=1, z=float("nan"))}, timestamp=None)
    assert _native.encode_sse(ev) == EventEncoder().encode(ev)
    ev = core.CustomEvent(name="n", value=[PModel(a=2, b="x")])
    assert _native.encode_sse(ev) == EventEncoder().encode(ev)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


def test_encode_error_is_value_error():
    assert issubclass(EncodeError, AguiError)
    assert issubclass(EncodeError, ValueError)


@pytest.mark.parametrize("key", [1, 1.5, None, True, (1,), Num.ONE, b"k"])
def test_non_str_keys_rejected_in_strict_mode(key):
    with pytest.raises(EncodeError, match="dict keys must be str"):
        _native.dumps({key: 1}, pydantic_fallback=False)
    # default: pydantic's JSON-mode key rules, byte for byte
    assert _native.dumps({key: 1}) == pydantic_core.to_json({key: 1}, by_alias=True, inf_nan_mode="null")


@pytest.mark.parametrize(
    "value",
    ["\ud800", "a\udfffb", "\ude00\ud83d", {"k": "\ud83d"}, {"\ud83d": 1}, ["ok", "\udc00"]],
)
def test_lone_surrogates_rejected(value):
    with pytest.raises(EncodeError, match="surrogates not allowed"):
        _native.dumps(value)
    with pytest.raises(EncodeError):
        _native.encode_sse(value)


def test_surrogate_pair_in_python_str_is_fine():
    # a real astral character is one code point in Python
    assert _native.dumps("\U0001f600") == "\"\U0001f600\"".encode()


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", bytearray(b"x"), 1j, Ellipsis, type])
def test_unknown_objects_rejected(value):
    with pytest.raises(EncodeError, match="Unable to serialize unknown type"):
        _native.dumps(value, pydantic_fallback=False)
    with pytest.raises(EncodeError):
        _native.dumps({"nested": [value]}, pydantic_fallback=False)
    # default: exactly what pydantic writes, or EncodeError where pydantic refuses too
    try:
        want = pydantic_core.to_json({"nested": [value]}, by_alias=True, inf_nan_mode="null")
    except Exception:
        with pytest.raises(EncodeError, match="Unable to serialize unknown type"):
            _native.dumps({"nested": [value]})
    else:
        assert _native.dumps({"nested": [value]}) == want


def _nested_list(n):
    x: Any = []
    for _ in range(n):
        x = [x]
    return x


def _nested_dict(n):
    x: Any = {}
    for _ in range(n):
        x = {"a": x}
    return x


def test_depth_limit():
    limit = _native.ENCODE_MAX_DEPTH
    assert limit == 512  # agui_core::limits::DEFAULT_MAX_DEPTH
    assert _native.dumps(_nested_list(limit - 1)) == b"[" * limit + b"]" * limit
    assert _native.dumps(_nested_dict(limit - 1)).startswith(b'{"a":{"a":')
    for deep in (_nested_list(limit), _nested_dict(limit), _nested_list(100_000)):
        with pytest.raises(EncodeError, match="depth"):
            _native.dumps(deep)
    # configurable per call, the same boundary
    assert _native.dumps(_nested_list(9), max_depth=10) == b"[" * 10 + b"]" * 10
    with pytest.raises(EncodeError, match="depth"):
        _native.encode_sse(_nested_list(10), max_depth=10)


def test_recursive_objects_rejected():
    a: List[Any] = []
    a.append(a)
    with pytest.raises(EncodeError, match="depth"):
        _native.dumps(a)
    d: Dict[str, Any] = {}
    d["d"] = d
    with pytest.raises(EncodeError, match="depth"):
        _native.encode_sse(d)
    ev = core.RawEvent(event=None)
    ev.__dict__["event"] = [ev]
    with pytest.raises(EncodeError, match="depth"):
        _native.encode_sse(ev)


def test_depth_limit_in_small_thread_stack():
    import threading

    result: List[Any] = []

    def run():
        try:
            result.append(_native.dumps(_nested_list(5000)))
        except EncodeError as e:
            result.append(e)

    old = threading.stack_size(512 * 1024)
    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    assert isinstance(result[0], EncodeError)


def test_buffer_reuse_and_reentrancy():
    class Weird:
        __agui_fields__ = (("inner", "inner", False),)

        @property
        def inner(self):  # runs Python code (another dumps) in the middle of a dumps call
            return _native.dumps({"inner": [1, 2]}).decode()

    big = {"k": "x" * (3 << 20)}
    assert len(_native.dumps(big)) == (3 << 20) + 8
    assert _native.dumps([1]) == b"[1]"
    assert _native.dumps(["a", Weird(), "b"]) == b'["a",{"inner":"{\\"inner\\":[1,2]}"},"b"]'


def test_clear_cache():
    m = core.TextMessageStartEvent(message_id="m1")
    before = _native.dumps(m)
    _native.clear_encode_cache()
    assert _native.dumps(m) == before


class WithComputed(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="allow")
    a: int = 1

    @pydantic.computed_field(alias="bee")
    @property
    def b(self) -> int:
        return self.a + 1

    @pydantic.computed_field
    @property
    def c(self) -> Optional[str]:
        return None


class Root(pydantic.RootModel[List[Any]]):
    pass


def test_pydantic_computed_fields_and_root_models():
    m = WithComputed(a=5, x=3)
    assert _native.dumps(m) == m.model_dump_json(by_alias=True).encode() == b'{"a":5,"x":3,"bee":6,"c":null}'
    r = Root([1, {"k": core.EventType.RAW}, core.FunctionCall(name="f", arguments="")])
    assert _native.dumps(r) == r.model_dump_json().encode()
    assert _native.dumps({"r": Root([])}) == b'{"r":[]}'


# ---------------------------------------------------------------------------
# pydantic_fallback=True: what the writer does not handle itself goes to
# pydantic_core.to_json (by_alias=True, inf_nan_mode="null"), the reference's own path.
# ---------------------------------------------------------------------------


def _fallback_values():
    import dataclasses
    import datetime
    import decimal
    import pathlib
    import uuid

    @dataclasses.dataclass
    class DC:
        a: int
        b: float = float("nan")

    return [
        datetime.datetime(2024, 1, 2, 3, 4, 5, 600000, tzinfo=datetime.timezone.utc),
        datetime.date(2024, 1, 2),
        datetime.timedelta(seconds=90),
        uuid.UUID(int=5),
        decimal.Decimal("1.50"),
        b"bytes",
        {1, 2},
        frozenset(["a"]),
        pathlib.Path("/x"),
        DC(1),
        {1: "intkey"},
        {(1, 2): 3},
        {None: 1, "s": 2},
        {1.5: 2},
        {True: [float("inf")]},
        {"ok": {"nested": {7: core.FunctionCall(name="f", arguments="")}}},
    ]


@pytest.mark.parametrize("value", _fallback_values(), ids=lambda v: type(v).__name__)
def test_pydantic_fallback_matches_reference(value):
    ev = core.CustomEvent(name="n", value=value, metadata={"m": value})
    assert _native.encode_sse(ev, pydantic_fallback=True) == EventEncoder().encode(ev)
    assert _native.encode_sse_bytes(ev, pydantic_fallback=True) == EventEncoder().encode(ev).encode()
    assert _native.encode_sse_many([ev], pydantic_fallback=True) == EventEncoder().encode(ev).encode()
    with pytest.raises(EncodeError):
        _native.encode_sse(ev, pydantic_fallback=False)  # strict mode
    assert _native.encode_sse(ev) == EventEncoder().encode(ev)  # pydantic's rules by default


def test_pydantic_fallback_still_rejects_the_unserialisable():
    with pytest.raises(EncodeError, match="Unable to serialize unknown type"):
        _native.dumps(object(), pydantic_fallback=True)
    with pytest.raises(EncodeError, match="surrogates"):
        _native.dumps({1: "\ud800"}, pydantic_fallback=True)
    # a Struct with a plan is written by the walker, under pydantic's key rule
    assert _native.dumps({1: NoDict()}, pydantic_fallback=True) == b'{"1":' + _native.dumps(NoDict()) + b"}"
    assert _native.dumps([{"a": {1: 2}}, {3: 4}], pydantic_fallback=True) == b'[{"a":{"1":2}},{"3":4}]'


def test_struct_unset_fields_are_left_out():
    class U(msgspec.Struct):
        __agui_fields__: ClassVar[Any] = (("a", "a", False), ("b", "b", False), ("c", "c", True))
        a: Any = msgspec.UNSET
        b: Any = None
        c: Any = msgspec.UNSET

    assert _native.dumps(U()) == b'{"b":null}'
    assert _native.dumps(U(a=1, c=None)) == b'{"a":1,"b":null}'
    with pytest.raises(EncodeError, match="UnsetType"):
        _native.dumps({"k": msgspec.UNSET})


ANY_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats()  # NaN and infinities included: the reference writes null (or omits)
    | st.text(max_size=12)
)
ANY_VALUES = st.recursive(
    ANY_LEAVES,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
EXTRA_KEYS = st.sampled_from(
    ["raw_event", "rawEvent_", "message_id", "subagent_run_id", "timestamp_", "x", "é", "a b", ""]
) | st.text(max_size=6)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    raw=ANY_VALUES,
    metadata=st.none() | st.dictionaries(st.text(max_size=6), ANY_VALUES, max_size=4),
    extras=st.dictionaries(EXTRA_KEYS, ANY_VALUES, max_size=4),
    timestamp=st.none() | st.integers(min_value=-(2**53), max_value=2**53),
    snake=st.booleans(),
)
def test_random_reference_events(raw, metadata, extras, timestamp, snake):
    data = {"messageId": "m", "delta": "d", "rawEvent": raw, "metadata": metadata, "timestamp": timestamp}
    if snake:
        data = {"message_id": "m", "delta": "d", "raw_event": raw, "metadata": metadata, "timestamp": timestamp}
    for k, v in extras.items():
        data.setdefault(k, v)
    try:
        ev = core.TextMessageContentEvent.model_validate(data)
    except pydantic.ValidationError:
        return
    try:
        expected = EventEncoder().encode(ev)
    except pydantic_core.PydanticSerializationError:
        with pytest.raises(EncodeError):
            _native.encode_sse(ev)
        return
    assert _native.encode_sse(ev) == expected


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=ANY_VALUES, state=ANY_VALUES)
def test_random_custom_and_state_events(value, state):
    for ev in (
        core.CustomEvent(name="n", value=value),
        core.StateSnapshotEvent(snapshot=state),
        core.RawEvent(event=value, source=None),
    ):
        assert _native.encode_sse(ev) == EventEncoder().encode(ev)
        # and through JSON text, as a server would receive it
        again = EVENT_ADAPTER.validate_json(_native.dumps(ev))
        assert _native.encode_sse(again) == EventEncoder().encode(again)


def test_threads_share_the_plan_cache_safely():
    import threading

    _native.clear_encode_cache()
    models = [_validate(c) for c in EVENT_CASES if not c.get("py_error")][:150]
    expected = [EventEncoder().encode(m) for m in models]
    errors: List[Any] = []

    def run(offset):
        try:
            for _ in range(5):
                for i in range(len(models)):
                    j = (i + offset) % len(models)
                    assert _native.encode_sse(models[j]) == expected[j]
                    if i % 50 == 0:
                        # a Python-level switch point inside an encode
                        _native.dumps([Weird() for Weird in ()])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(k * 37,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors


def test_encode_sse_event_is_encode_sse_without_options():
    # The METH_O entry behind EventEncoder.encode: same text, same errors.
    values = [core.TextMessageContentEvent(message_id="m", delta="é\n"), {"a": [1, 2.5, None]}, "s"]
    for v in values:
        assert _native.encode_sse_event(v) == _native.encode_sse(v)
    with pytest.raises(EncodeError):
        _native.encode_sse_event(object())
    with pytest.raises(TypeError):
        _native.encode_sse_event()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _native.encode_sse_event(1, 2)  # type: ignore[call-arg]
    from agui_fast.encoder import EventEncoder as Ours

    assert Ours.encode is _native.encode_sse_event


# ---------------------------------------------------------------------------
# Plans from msgspec's own metadata: subclasses encode every field (issue 9)
# ---------------------------------------------------------------------------


def test_user_subclass_with_extra_fields_encodes_them_like_the_reference():
    ref = core

    class MyEvent(fast.TextMessageContentEvent, kw_only=True):
        trace: str
        note: Optional[str] = None

    class RefMyEvent(ref.TextMessageContentEvent):
        trace: str
        note: Optional[str] = None

    ours = MyEvent(message_id="m1", delta="d", trace="t-1")
    theirs = RefMyEvent(message_id="m1", delta="d", trace="t-1")
    want = EventEncoder().encode(theirs)
    assert want == 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"d","trace":"t-1"}\n\n'
    assert _native.encode_sse(ours) == want
    assert b'"trace":"t-1"' in msgspec.json.encode(ours)  # msgspec agrees it is a field
    ours.note, theirs.note = "n", "n"
    assert _native.encode_sse(ours) == EventEncoder().encode(theirs)


def test_plain_msgspec_structs_follow_msgspec_metadata():
    class Plain(msgspec.Struct, rename="camel", tag="plain", tag_field="kind"):
        some_value: int
        maybe_none: Optional[int] = None
        items: List[str] = msgspec.field(default_factory=list)

    class Omitting(msgspec.Struct, omit_defaults=True):
        a: int
        b: Optional[int] = None

    for obj in (Plain(1), Plain(2, 3, ["x"]), Omitting(1), Omitting(1, 2)):
        assert _native.dumps(obj) == msgspec.json.encode(obj)


# ---------------------------------------------------------------------------
# pydantic's JSON mode inside Any fields, against the reference (issue 11 §2)
# ---------------------------------------------------------------------------


def _reference_types():
    import dataclasses
    import datetime
    import uuid

    from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_serializer, model_serializer

    class Color(enum.Enum):
        RED = "red"
        ONE = 1

    @dataclasses.dataclass
    class DC:
        a: int
        when: datetime.date

    class Hidden(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        secret: str = Field(alias="secretAlias")
        n: int = 0

        @field_serializer("secret")
        def _hide(self, v: str) -> str:
            return "***"

    class Aliased(BaseModel):
        x: int = Field(serialization_alias="X")
        when: datetime.datetime
        tags: set = set()

    class Whole(BaseModel):
        a: int

        @model_serializer
        def _only(self) -> Dict[str, Any]:
            return {"only": self.a}

    tz = st.none() | st.just(datetime.timezone.utc) | st.builds(
        datetime.timezone, st.timedeltas(min_value=datetime.timedelta(hours=-23), max_value=datetime.timedelta(hours=23))
    )
    text = st.text(max_size=6)
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        text,
        st.datetimes(timezones=tz),
        st.dates(),
        st.times(),
        st.timedeltas(),
        st.uuids(),
        st.decimals(allow_nan=False, allow_infinity=False),
        text.map(str.encode),
        st.sets(st.integers(), max_size=3),
        st.frozensets(text, max_size=3),
        st.sampled_from(Color),
        st.builds(SecretStr, text),
        st.builds(DC, st.integers(), st.dates()),
        st.builds(Hidden, secretAlias=text, n=st.integers()),
        st.builds(Aliased, x=st.integers(), when=st.datetimes(), tags=st.sets(st.integers(), max_size=2)),
        st.builds(Whole, a=st.integers()),
    )
    keys = st.one_of(text, st.integers(), st.booleans(), st.floats(allow_nan=False), st.none(), st.dates(), st.uuids())
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3) | st.tuples(inner, inner),
        max_leaves=8,
    )


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_reference_types())
def test_any_fields_write_what_the_reference_writes(value):
    ref = core
    ours = fast.CustomEvent(name="n", value=value)
    try:
        want = EventEncoder().encode(ref.CustomEvent(name="n", value=value))
    except Exception:
        with pytest.raises(EncodeError):
            _native.encode_sse(ours)
        with pytest.raises(EncodeError):
            _native.proto_encode_event(ours)
        return
    assert _native.encode_sse(ours) == want
    assert _native.encode_sse(fast.RawEvent(event={"v": value})).startswith("data: ")
    # the protobuf encoders accept the same values and map the same JSON
    assert _native.proto_encode_event(ours) == _native.proto_encode_json(want[6:-2].encode())


def test_fast_paths_for_common_types_match_pydantic():
    import datetime as dt
    import decimal
    import uuid

    class MyDate(dt.date):  # a subclass: pydantic's own spelling, through the fallback
        pass

    utc, tz = dt.timezone.utc, dt.timezone
    values = [
        dt.datetime(2024, 1, 2, 3, 4, 5),
        dt.datetime(2024, 1, 2, 3, 4, 5, 600000, tzinfo=utc),  # "Z"
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=tz(dt.timedelta(0))),
        dt.datetime(2024, 1, 2, 3, 4, 5, 123, tzinfo=tz(dt.timedelta(hours=-5, minutes=-30))),
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=tz(dt.timedelta(seconds=61))),  # offset with seconds
        dt.datetime(1, 1, 1),
        dt.date(2024, 1, 2),
        MyDate(2024, 1, 2),
        dt.time(1, 2, 3),
        dt.time(1, 2, 3, 400, tzinfo=utc),
        uuid.UUID(int=5),
        decimal.Decimal("1.50"),
        decimal.Decimal("-0E-7"),
        decimal.Decimal("NaN"),
    ]
    for v in values:
        want = pydantic_core.to_json(v)
        assert _native.dumps(v) == want, v
        assert _native.dumps({"k": [v]}) == b'{"k":[' + want + b"]}"
        with pytest.raises(EncodeError, match="Unable to serialize unknown type"):
            _native.dumps(v, pydantic_fallback=False)


def test_keys_spelled_alike_merge_like_the_reference():
    # The reference's model serializer returns JSON-mode Python dicts: keys spelled alike
    # merge there (first position, last value). Found by the hypothesis test above.
    class C(str, enum.Enum):
        RED = "red"

    for value in ({None: 1, float("inf"): 2}, {C.RED: 1, "red": 2, "x": {1: "a", "1": "b"}}, {"1": 0, 1: 1, True: 2}):
        want = EventEncoder().encode(core.CustomEvent(name="n", value=value))
        assert _native.encode_sse(fast.CustomEvent(name="n", value=value)) == want
        assert _native.proto_encode_event(fast.CustomEvent(name="n", value=value)) == _native.proto_encode_json(
            want[6:-2].encode()
        )


# --- direct reads of object memory (rust/agui-py/src/layout.rs) ---------------------------


@pytest.mark.every_interpreter
def test_direct_reads_are_on_where_the_layout_is_known():
    """On the CPython versions whose layouts layout.rs knows, every read passed its check
    against the API at import (a failed check silently falls back to the slower API path:
    this test makes such a regression visible). `AGUI_FAST_PUBLIC_API=1` turns them all off."""
    import os
    import platform
    import struct
    import sys

    from agui_fast import _native

    reads = _native._testing.direct_reads()
    known = (
        platform.python_implementation() == "CPython"
        and (3, 10) <= sys.version_info[:2] <= (3, 13)
        and struct.calcsize("P") == 8
        and sys.byteorder == "little"
        and os.environ.get("AGUI_FAST_PUBLIC_API") != "1"
    )
    dict_known = known and sys.version_info[:2] >= (3, 11)
    # Reference counts in place: not on a debug build (it also keeps a global total).
    refcnt_known = known and not hasattr(sys, "gettotalrefcount")
    assert reads == {
        "str": known, "seq": known, "float": known, "int": known, "member": known, "dict": dict_known,
        "refcnt": refcnt_known, "version": known, "managed_dict": dict_known,
    }


@pytest.mark.parametrize(
    "value",
    [
        0, 1, -1, 2**30 - 1, -(2**30 - 1), 2**30, -(2**30), 2**60 - 1, -(2**60 - 1), 2**60, -(2**60),
        2**63 - 1, -(2**63), 2**64, -(2**100), True, False,
        0.0, -0.0, 1.5, 1e300, 5e-324, float("inf"),
    ],
)
def test_numbers_at_the_direct_read_boundaries(value):
    from agui_fast import _native

    assert _native.dumps(value) == pydantic_core.to_json(value, inf_nan_mode="null")
    assert _native.dumps([value, (value,)]) == pydantic_core.to_json([value, [value]], inf_nan_mode="null")


def test_strings_of_every_representation():
    """Compact ASCII, Latin-1, BMP and astral str; UTF-8 not cached yet (made at run time);
    str subclasses (not compact); the same through a tuple and a list, as keys and values."""
    from agui_fast import _native

    class S(str):
        pass

    n = 3  # built at run time: no UTF-8 cached on them yet
    texts = ["", "plain", "caf\u00e9" * n, "\u2192 arrow" * n, "\U0001f600" * n, "a\"b\\c\n" * n, S("sub"), S("s\u00e9")]
    for t in texts:
        fresh = "".join(list(t))  # a new object, nothing cached
        want = pydantic_core.to_json({str(t): t})
        assert _native.dumps({fresh: fresh}) == want
        assert _native.dumps((t,)) == pydantic_core.to_json([t])


def test_list_changed_while_walked():
    """Items are read in place with the size read again at each step: a list that a value's
    own serializer shrinks is walked to its new end, never past it."""
    from agui_fast import _native

    data: List[Any] = []

    class Shrinker(pydantic.BaseModel):
        @pydantic.model_serializer
        def ser(self) -> str:
            del data[1:]
            return "x"

    data.extend([Shrinker(), 2, 3])
    assert _native.dumps(data) == b'["x"]'


def test_dicts_of_every_table_kind():
    """Combined tables with str keys (a deleted entry too), other keys, large index tables,
    and split tables (instance ``__dict__``): the same JSON as pydantic writes."""
    from agui_fast import _native

    class O:
        pass

    o = O()
    o.a, o.b = 1, "two"
    d = {"a": 1, "b": 2, "c": 3}
    del d["b"]
    big = {f"k{i}": i for i in range(5000)}
    for value in [d, {1: "x", "y": None}, big, o.__dict__, {"nested": [o.__dict__, {}]}]:
        assert _native.dumps(value) == pydantic_core.to_json(value)


def test_dict_changed_while_walked():
    from agui_fast import _native

    data: Dict[str, Any] = {}

    class Dropper(pydantic.BaseModel):
        @pydantic.model_serializer
        def ser(self) -> str:
            data.clear()
            return "x"

    data.update(a=Dropper(), b=2, c=3)
    assert _native.dumps(data) == b'{"a":"x"}'


@pytest.mark.every_interpreter
def test_the_public_api_switch_turns_every_direct_read_off():
    """`AGUI_FAST_PUBLIC_API=1`, read once at import: every read through the API and
    construction through `tp_call`, the paths of interpreters whose layouts are not known
    (CI runs the whole suite so too). Answers are the same (the rest of the suite)."""
    import os
    import subprocess
    import sys

    code = (
        "import agui_fast.core as c; from agui_fast import _native; from agui_fast.encoder import EventEncoder;"
        "print(sorted(k for k, v in _native._testing.direct_reads().items() if v), _native.struct_meta_vectorcall());"
        "print(EventEncoder().encode(c.TextMessageContentEvent(message_id='m', delta='d')), end='')"
    )
    env = dict(os.environ, AGUI_FAST_PUBLIC_API="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out == '[] False\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}\n\n'
