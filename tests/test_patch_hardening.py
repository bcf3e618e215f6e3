"""Regression tests for the JSON Patch findings of the hardening issue: one depth limit on
every path, linear in-place removes and rollback, one set of value rules for
StateDocument and apply_patch, and no panic when user code mutates a document."""

from __future__ import annotations

import json

import pytest

from agui_fast.errors import AguiError
from agui_fast.patch import JsonPatchError, JsonPatchTestFailed, StateDocument, apply_patch

MAX_DEPTH = 512  # agui_core::limits::DEFAULT_MAX_DEPTH


def nested_list(depth: int):
    v: list = []
    for _ in range(depth - 1):
        v = [v]
    return v


def nested_text(depth: int) -> str:
    return "[" * depth + "]" * depth


# ----------------------------------------------------------------------------------------
# Finding 1: StateDocument depth (no crash on any path)
# ----------------------------------------------------------------------------------------


def test_state_document_copy_doubling_is_bounded_not_a_crash():
    # Copying the root into its deepest node doubles the depth each time (17 times
    # overflowed the Rust stack in to_python, repr, clone and drop).
    sd = StateDocument({"a": {}})
    deepest = ["a"]
    failed = False
    for _ in range(20):
        patch = json.dumps([{"op": "copy", "from": "", "path": "/" + "/".join(deepest + ["a"])}])
        try:
            sd.apply(patch)
        except JsonPatchError as e:
            assert "deeper than 512" in str(e)
            failed = True
            break
        deepest = deepest + ["a"] + deepest
    assert failed and len(deepest) > 200
    # every recursive path still works on the (bounded) document
    out = sd.to_python()
    assert isinstance(out, dict)
    assert repr(sd).startswith("StateDocument(")
    sd2 = StateDocument(out)
    del sd, sd2


def test_state_document_depth_boundary_everywhere():
    ok, deep = nested_list(MAX_DEPTH), nested_list(MAX_DEPTH + 1)
    assert StateDocument(ok).to_python() == ok
    with pytest.raises(JsonPatchError, match="deeper than 512"):
        StateDocument(deep)
    # a value at /x sits one level down: 511 levels fit, 512 do not
    sd = StateDocument({})
    sd.apply([{"op": "add", "path": "/x", "value": nested_list(MAX_DEPTH - 1)}])
    with pytest.raises(JsonPatchError, match="deeper than 512"):
        sd.apply([{"op": "add", "path": "/y", "value": nested_list(MAX_DEPTH)}])
    # JSON text: the same limit (it was ~125 levels: serde_json's own recursion limit)
    sd = StateDocument({})
    sd.apply('[{"op": "add", "path": "/x", "value": %s}]' % nested_text(MAX_DEPTH - 1))
    assert sd.to_python("/x") == nested_list(MAX_DEPTH - 1)
    with pytest.raises(JsonPatchError, match="deeper than 512"):
        sd.apply('[{"op": "add", "path": "/y", "value": %s}]' % nested_text(MAX_DEPTH))
    with pytest.raises(JsonPatchError):
        sd.apply("[" * 100_000)  # far too deep: refused before parsing
    assert sd.to_python("/x") == nested_list(MAX_DEPTH - 1)


def test_move_deeper_than_the_limit_is_refused_and_rolled_back():
    sd = StateDocument({"a": nested_list(MAX_DEPTH - 1), "b": {"c": {}}})
    with pytest.raises(JsonPatchError, match="deeper than"):
        sd.apply([{"op": "move", "from": "/a", "path": "/b/c/a"}])
    assert sd.to_python("/a") == nested_list(MAX_DEPTH - 1) and sd.to_python("/b") == {"c": {}}


def test_max_depth_is_configurable():
    v = nested_list(20)
    with pytest.raises(JsonPatchError, match="deeper than 10"):
        StateDocument(v, max_depth=10)
    with pytest.raises(JsonPatchError, match="deeper than 10"):
        apply_patch({}, [{"op": "add", "path": "/a", "value": v}], max_depth=10)
    assert apply_patch({}, [{"op": "add", "path": "/a", "value": v}], max_depth=21) == {"a": v}
    deep = nested_list(600)
    assert StateDocument(deep, max_depth=600).to_python() == deep
    with pytest.raises(ValueError):
        StateDocument({}, max_depth=10**9)


def test_apply_patch_depth_boundary():
    assert apply_patch({}, [{"op": "add", "path": "/x", "value": nested_list(MAX_DEPTH - 1)}])["x"] == nested_list(MAX_DEPTH - 1)
    with pytest.raises(JsonPatchError, match="deeper than 512"):
        apply_patch({}, [{"op": "add", "path": "/x", "value": nested_list(MAX_DEPTH)}])


# ----------------------------------------------------------------------------------------
# Finding 5: in-place removes and rollback are linear
# ----------------------------------------------------------------------------------------


# (Linear time of removes and rollback: tests/test_props_linear.py.)


def test_rollback_restores_order_with_adds_removes_and_moves():
    doc = {"a": 1, "b": 2, "c": 3, "d": {"x": 1, "y": 2}}
    before = json.dumps(doc)
    ids = (id(doc), id(doc["d"]))
    patch = [
        {"op": "add", "path": "/z", "value": 0},
        {"op": "remove", "path": "/b"},
        {"op": "add", "path": "/b", "value": 9},
        {"op": "move", "from": "/a", "path": "/d/a"},
        {"op": "remove", "path": "/d/x"},
        {"op": "test", "path": "/c", "value": 0},
    ]
    with pytest.raises(JsonPatchTestFailed):
        apply_patch(doc, patch, in_place=True)
    assert json.dumps(doc) == before and (id(doc), id(doc["d"])) == ids


# ----------------------------------------------------------------------------------------
# Finding 10: StateDocument values follow one set of rules
# ----------------------------------------------------------------------------------------


def test_state_document_refuses_lone_surrogates():
    with pytest.raises(JsonPatchError, match="surrogate"):
        StateDocument({"s": "\ud800"})
    with pytest.raises(JsonPatchError, match="surrogate"):
        StateDocument({"\udc00": 1})
    sd = StateDocument({})
    with pytest.raises(JsonPatchError, match="surrogate"):
        sd.apply([{"op": "add", "path": "/s", "value": "x\ud800"}])
    assert sd.to_python() == {}


def test_state_document_refuses_huge_integers_at_apply_time():
    huge = 10**5000
    with pytest.raises(JsonPatchError, match="too large"):
        StateDocument({"n": huge})
    sd = StateDocument({})
    with pytest.raises(JsonPatchError, match="too large"):
        sd.apply([{"op": "add", "path": "/n", "value": huge}])
    with pytest.raises(JsonPatchError, match="too large"):
        sd.apply('[{"op": "add", "path": "/n", "value": %s}]' % ("9" * 5000))
    assert sd.to_python() == {}  # still convertible
    big = 10**4000
    sd.apply([{"op": "add", "path": "/n", "value": big}])
    assert sd.to_python("/n") == big


def test_state_document_refuses_out_of_range_floats():
    sd = StateDocument({})
    for text in ("1e400", "-1e400"):
        with pytest.raises(JsonPatchError, match="out of range"):
            sd.apply('[{"op": "add", "path": "/x", "value": %s}]' % text)
    with pytest.raises(JsonPatchError):
        sd.apply([{"op": "add", "path": "/x", "value": float("inf")}])
    assert sd.to_python() == {}


@pytest.mark.parametrize(
    "actual, expected, equal",
    [
        (2**53 + 1, 2.0**53, False),
        (2**53, 2.0**53, True),
        (1, 1.0, True),
        (10**30, 1e30, False),
        (0, -0.0, True),
        (True, 1, False),
        (10**400, 10**400, True),
        (10**400, 10**401, False),
    ],
    ids=lambda v: repr(v)[:10],
)
def test_number_equality_is_one_rule(actual, expected, equal):
    patch = [{"op": "test", "path": "/n", "value": expected}]
    results = []
    for run in (
        lambda: apply_patch({"n": actual}, patch),
        lambda: apply_patch({"n": actual}, patch, in_place=True),
        lambda: StateDocument({"n": actual}).apply(patch),
        lambda: StateDocument({"n": actual}).apply(json.dumps(patch)),
    ):
        try:
            run()
            results.append(True)
        except JsonPatchTestFailed:
            results.append(False)
    assert results == [equal] * 4


def test_integers_too_long_for_text_compare_exactly():
    # (past int_max_str_digits: no JSON value of this library, but a dict may hold one)
    huge = 10**5000
    apply_patch({"n": huge}, [{"op": "test", "path": "/n", "value": huge}])
    for other in (huge + 1, 1, 1.5, -huge):
        with pytest.raises(JsonPatchTestFailed):
            apply_patch({"n": huge}, [{"op": "test", "path": "/n", "value": other}])


BIG = 10**400  # past the double range: fast-json-patch reads it as Infinity


@pytest.mark.parametrize(
    "actual, expected, equal",
    [
        # (checked against fast-json-patch 3.1.1: a `test` compares with `===`, numbers
        # as the doubles JSON.parse makes of them)
        (BIG, BIG, True),
        (BIG, BIG * 10, True),
        (-BIG, -BIG * 10, True),
        (BIG, -BIG, False),
        (BIG, 1.7976931348623157e308, False),
        (2**53 + 1, 2**53, True),
        (2**53 + 1, 2.0**53, True),
        (10**30, 1e30, True),
        (1, 1.0, True),
        (True, 1, False),
    ],
    ids=lambda v: repr(v)[:10],
)
def test_stream_numbers_compare_as_the_reference_client(actual, expected, equal):
    """The replay applies STATE_DELTA as the reference client does (fast-json-patch):
    the same answer from a log (the core's tree), from event objects onto a Python state,
    and with the state given as a dict."""
    from agui_fast import stream
    from agui_fast.core import StateDeltaEvent, StateSnapshotEvent

    def text(v):
        return json.dumps(v)

    delta = [{"op": "test", "path": "/n", "value": expected}, {"op": "add", "path": "/ok", "value": True}]
    log = (
        f'data: {{"type":"STATE_SNAPSHOT","snapshot":{{"n":{text(actual)}}}}}\n\n'
        f'data: {{"type":"STATE_DELTA","delta":{text(delta)}}}\n\n'
    ).encode()
    events = [StateSnapshotEvent(snapshot={"n": actual}), StateDeltaEvent(delta=delta)]
    results = [
        "ok" in stream.replay_log(log).state,
        "ok" in stream.replay(events).state,
        "ok" in stream.replay(events[1:], state={"n": actual}).state,
    ]
    assert results == [equal] * 3


# ----------------------------------------------------------------------------------------
# Finding 8: user objects mutating a document during a comparison
# ----------------------------------------------------------------------------------------


def test_user_eq_mutating_the_document_is_not_a_panic():
    doc: dict = {}

    class Mutator:
        def __eq__(self, other):
            for i in range(100):
                doc["a"][f"new{i}"] = i
                doc["l"].clear()
            return True

        __hash__ = None  # type: ignore[assignment]

    doc.update({"a": {"m": Mutator(), "k": 1}, "l": [Mutator(), 1, 2]})
    for in_place in (False, True):
        for path, value in (("/a", {"m": Mutator(), "k": 1}), ("/l", [Mutator(), 1, 2])):
            try:
                apply_patch(doc, [{"op": "test", "path": path, "value": value}], in_place=in_place)
            except AguiError:
                pass  # a clear error (or a result), never a PanicException
