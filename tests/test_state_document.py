"""StateDocument as a document of Python values (issue 10): what it shares and what it
never writes into, atomicity across copy-on-write, the value rules on every way in, and
exact numbers. The conformance suites and the model-based property tests are in
test_patch.py, test_patch_hardening.py and test_props_patch.py."""

from __future__ import annotations

import copy
import gc
import json

import pytest

from agui_fast import core as ops
from agui_fast.patch import JsonPatchError, JsonPatchTestFailed, JsonPointerError, StateDocument


def canon(x) -> str:
    """Exact JSON identity: ``True`` vs ``1`` and ``1`` vs ``1.0`` differ."""
    return json.dumps(x, ensure_ascii=False)


STATE = {"agent": {"status": "idle", "plan": {"steps": [{"id": 0, "done": False}]}}, "counters": {"tokens": 1}, "l": [1, 2]}


def test_input_is_never_written_nor_shared():
    state = copy.deepcopy(STATE)
    before = copy.deepcopy(state)
    sd = StateDocument(state)
    sd.apply([{"op": "replace", "path": "/agent/status", "value": "running"}, {"op": "add", "path": "/l/-", "value": 3}])
    assert state == before  # the input is converted, not patched
    state["counters"]["tokens"] = 99  # and not shared: the document does not see this
    assert sd.to_python("/counters/tokens") == 1


def test_handed_out_values_are_never_written():
    sd = StateDocument(STATE)
    first = sd.to_python()
    snap = canon(first)
    steps = sd.to_python("/agent/plan/steps")
    sd.apply_many(
        [
            [{"op": "add", "path": "/agent/plan/steps/-", "value": {"id": 1}}],
            [{"op": "replace", "path": "/agent/plan/steps/0/done", "value": True}],
            [{"op": "remove", "path": "/l/0"}],
            '[{"op": "move", "from": "/counters", "path": "/agent/counters"}]',
        ]
    )
    assert canon(first) == snap and len(steps) == 1  # copy-on-write: what was handed out is unchanged
    now = sd.to_python()
    assert now["agent"]["plan"]["steps"] == [{"id": 0, "done": True}, {"id": 1}]
    assert now["l"] == [2] and now["agent"]["counters"] == {"tokens": 1} and "counters" not in now
    # untouched subtrees are shared, not copied
    assert now["agent"]["plan"] is not first["agent"]["plan"]
    sd2 = StateDocument({"a": {"x": 1}, "b": {"y": 2}})
    one = sd2.to_python()
    sd2.apply([{"op": "replace", "path": "/a/x", "value": 5}])
    two = sd2.to_python()
    assert two["b"] is one["b"] and one["a"] == {"x": 1} and two["a"] == {"x": 5}


def test_failed_patch_after_hand_out_leaves_both_unchanged():
    sd = StateDocument({"a": {"b": [1, 2, 3], "c": {"d": 1}}, "e": 1})
    out = sd.to_python()
    snap = canon(out)
    bad = [
        {"op": "remove", "path": "/a/b/0"},
        {"op": "add", "path": "/a/c/z", "value": {"deep": [1]}},
        {"op": "move", "from": "/e", "path": "/a/c/e"},
        {"op": "replace", "path": "", "value": {"whole": True}},
        {"op": "add", "path": "/whole2", "value": 1},
        {"op": "test", "path": "/whole", "value": False},
    ]
    with pytest.raises(JsonPatchTestFailed) as ei:
        sd.apply(bad)
    assert ei.value.index == 5
    assert canon(out) == snap and canon(sd.to_python()) == snap  # content and member order
    with pytest.raises(JsonPatchError) as ei:
        sd.apply_many([[{"op": "remove", "path": "/e"}], bad])
    assert ei.value.patch_index == 1
    assert sd.to_python() == {"a": {"b": [1, 2, 3], "c": {"d": 1}}}
    assert canon(out) == snap


def test_value_rules_on_every_way_in():
    sd = StateDocument({"n": 0})
    for bad in (float("nan"), float("inf"), object(), {1: "int key"}, "\ud800", 10**5000 if False else None):
        if bad is None:
            continue
        with pytest.raises(JsonPatchError):
            sd.apply([{"op": "add", "path": "/x", "value": bad}])
        with pytest.raises(JsonPatchError):
            sd.apply([{"op": "test", "path": "/n", "value": bad}])
        with pytest.raises(JsonPatchError):
            sd.replace({"x": bad})
    with pytest.raises(JsonPatchError):
        sd.apply('[{"op": "add", "path": "/x", "value": 1e400}]')
    assert sd.to_python() == {"n": 0}
    # tuples become lists, Structs their JSON form, so the document holds plain JSON
    sd.apply([ops.AddOperation(path="/t", value=(1, (2, 3))), ops.ReplaceOperation(path="/n", value={"k": [True]})])
    sd.apply([ops.TestOperation(path="/t", value=[1, [2, 3]])])
    out = sd.to_python()
    assert out == {"n": {"k": [True]}, "t": [1, [2, 3]]} and type(out["t"][1]) is list


def test_numbers_exact_both_ways():
    big, neg = 2**200 + 1, -(2**70) - 3
    sd = StateDocument({"f": 0.1, "big": big})
    sd.apply([{"op": "add", "path": "/neg", "value": neg}, {"op": "add", "path": "/g", "value": 1e300}])
    sd.apply(b'[{"op": "add", "path": "/t", "value": 123456789012345678901234567890}, {"op": "add", "path": "/h", "value": 0.30000000000000004}]')
    out = sd.to_python()
    assert out["big"] == big and out["neg"] == neg and out["t"] == 123456789012345678901234567890
    assert out["f"] == 0.1 and out["g"] == 1e300 and out["h"] == 0.30000000000000004
    assert type(out["t"]) is int and type(out["h"]) is float
    # a test compares exactly: 2**53 + 1 is not 2.0**53
    sd.apply([{"op": "add", "path": "/e", "value": 2**53 + 1}])
    with pytest.raises(JsonPatchTestFailed):
        sd.apply([{"op": "test", "path": "/e", "value": float(2**53)}])
    sd.apply('[{"op": "test", "path": "/e", "value": 9007199254740993}]')


def test_depth_limit_at_the_boundary():
    def nested(d):
        v: list = []
        for _ in range(d):
            v = [v]
        return v

    sd = StateDocument({"a": {}}, max_depth=8)
    sd.apply([{"op": "add", "path": "/a/x", "value": nested(5)}])  # 1 + 1 + 6 = 8 levels
    with pytest.raises(JsonPatchError, match="deeper than 8"):
        sd.apply([{"op": "add", "path": "/a/y", "value": nested(6)}])
    with pytest.raises(JsonPatchError, match="deeper than 8"):
        sd.apply(json.dumps([{"op": "add", "path": "/a/y", "value": nested(6)}]))
    with pytest.raises(JsonPatchError, match="deeper than 8"):
        sd.apply([{"op": "copy", "from": "/a", "path": "/a/x/0/0/0/0/0/c"}])
    assert sd.to_python() == {"a": {"x": nested(5)}}


def test_owned_containers_do_not_accumulate():
    # Add and remove the same subtree many times: the containers the document copied
    # and then dropped must be freed (its owned list is pruned), not kept alive.
    sd = StateDocument({"x": {}})
    sd.to_python()
    gc.collect()
    before = len(gc.get_objects())
    for i in range(20_000):
        sd.apply([{"op": "add", "path": "/y", "value": {"k": {}}}, {"op": "add", "path": "/y/k/v", "value": i}])
        sd.apply([{"op": "remove", "path": "/y"}])
    gc.collect()
    assert len(gc.get_objects()) - before < 10_000
    assert sd.to_python() == {"x": {}}


def test_pointer_errors_and_paths():
    sd = StateDocument({"a": [1]})
    with pytest.raises(JsonPointerError) as ei:
        sd.to_python("/a/5")
    assert ei.value.path == "/a/5"
    with pytest.raises(JsonPointerError):
        sd.to_python("a")
    with pytest.raises(JsonPointerError) as ei:
        sd.apply_many([[{"op": "add", "path": "/a/1", "value": 2}], [{"op": "replace", "path": "/a/-", "value": 0}]])
    assert ei.value.patch_index == 1 and ei.value.index == 0 and ei.value.path == "/a/-"
    assert sd.to_python() == {"a": [1, 2]}
