"""JSON Patch properties over thousands of random patches (issue 14): a patch whose
operation ``k`` fails leaves the document exactly as it was (values, member order, container
identity) and names ``k``, for ``apply_patch`` in copy and in-place mode and for
``StateDocument``; a patch that succeeds gives ``jsonpatch``'s result. And ``StateDocument``
driven by random call sequences against a pure-Python model (``jsonpatch`` applying each
patch to a deep copy: atomic by construction).

Patches come from a seeded generator (``PatchGen``) so that thousands run in seconds; the
hypothesis variants feed it hypothesis' own ``Random`` so a failure shrinks.
"""

from __future__ import annotations

import copy
import json
import random

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_fast.errors import JsonPatchError
from agui_fast.patch import StateDocument, apply_patch

from strategies import all_paths, esc, random_json
from conftest import examples

N_PATCHES = 3_000
# keys that need escaping, collide often, and look like indices; no "-" (jsonpatch reads an
# object member "-" as the end of an array)
KEYS = ["a", "b", "0", "1", "a/b", "~", "~1", "é", "", " ", "😀"]
NEVER = "\x00never in a document"


def proper_prefix(a: str, b: str) -> bool:
    return b.startswith(a + "/")


def dump(doc) -> str:
    """Values and member order (``json.dumps`` keeps insertion order)."""
    return json.dumps(doc, ensure_ascii=False)


def containers(x, out=None):
    """The identity of every container, in walk order."""
    out = [] if out is None else out
    if isinstance(x, (dict, list)):
        out.append(id(x))
        for v in x.values() if isinstance(x, dict) else x:
            containers(v, out)
    return out


def model_apply(doc, patch):
    """The pure-Python model: jsonpatch on a deep copy (so the model itself is atomic)."""
    return jsonpatch.apply_patch(copy.deepcopy(doc), copy.deepcopy(patch))


class PatchGen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def value(self):
        v = random_json(self.rng, 2)
        # no bools: jsonpatch's `test` compares with Python's ==, where True == 1
        return self._nobool(v)

    def _nobool(self, v):
        if isinstance(v, bool):
            return int(v) + 10
        if isinstance(v, dict):
            return {k: self._nobool(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self._nobool(x) for x in v]
        return v

    def doc(self):
        rng = self.rng
        doc = {}
        for _ in range(rng.randrange(6)):
            doc[rng.choice(KEYS)] = self.value()
        if rng.random() < 0.5:
            doc[rng.choice(KEYS)] = [self.value() for _ in range(rng.randrange(5))]
        return doc

    def new_location(self, state):
        """A path where ``add`` inserts (a new member, or a list position; no '-')."""
        rng = self.rng
        conts = [(p, v) for p, v in all_paths(state) if isinstance(v, (dict, list))]
        path, cont = rng.choice(conts)
        if isinstance(cont, dict):
            return path + "/" + esc(rng.choice(KEYS))  # new, or an existing member (replaced)
        return f"{path}/{rng.randrange(len(cont) + 1)}"

    def valid_op(self, state):
        rng = self.rng
        paths = list(all_paths(state))
        nonroot = [(p, v) for p, v in paths if p]
        kind = rng.choice(["add", "add", "replace", "test", "copy"] + (["remove", "remove", "move"] if nonroot else []))
        if kind == "add":
            return {"op": "add", "path": self.new_location(state), "value": self.value()}
        if kind == "replace" and nonroot:
            return {"op": "replace", "path": rng.choice(nonroot)[0], "value": self.value()}
        if kind in ("test", "replace"):
            path, v = rng.choice(paths)
            return {"op": "test", "path": path, "value": copy.deepcopy(v)}
        if kind == "remove":
            return {"op": "remove", "path": rng.choice(nonroot)[0]}
        if kind == "copy":
            frm = rng.choice(nonroot or paths)[0]
            return {"op": "copy", "from": frm, "path": self.new_location(state)}
        frm = rng.choice(nonroot)[0]
        after = model_apply(state, [{"op": "remove", "path": frm}])
        path = self.new_location(after)
        if proper_prefix(frm, path):
            return {"op": "test", "path": frm, "value": copy.deepcopy(dict(paths)[frm])}
        return {"op": "move", "from": frm, "path": path}

    def failing_op(self, state):
        """An operation that fails on ``state`` (the root is an object)."""
        rng = self.rng
        paths = list(all_paths(state))
        missing = "/" + esc(next(k + "x" for k in KEYS if k + "x" not in state))
        lists = [(p, v) for p, v in paths if isinstance(v, list)]
        conts = [p for p, v in paths if isinstance(v, (dict, list)) and p]
        choices = [
            lambda: {"op": "test", "path": rng.choice(paths)[0], "value": NEVER},
            lambda: {"op": "remove", "path": missing},
            lambda: {"op": "replace", "path": missing + "/a", "value": 1},
            lambda: {"op": "add", "path": missing + "/a", "value": 1},
            lambda: {"op": "move", "from": missing, "path": "/a"},
            lambda: {"op": "copy", "from": missing + "/0", "path": "/a"},
            lambda: {"op": "frobnicate", "path": ""},
            lambda: {"op": "add", "path": "/a"},  # no value
            lambda: {"op": "remove", "path": "a"},  # not a pointer
        ]
        if lists:
            lp, lv = rng.choice(lists)
            choices += [
                lambda: {"op": "add", "path": f"{lp}/{len(lv) + 1}", "value": 1},
                lambda: {"op": "remove", "path": f"{lp}/{len(lv)}"},
                lambda: {"op": "replace", "path": f"{lp}/01", "value": 1},
            ]
        if conts:
            c = rng.choice(conts)
            choices.append(lambda: {"op": "move", "from": c, "path": c + "/0"})
        return rng.choice(choices)()

    def patch(self, state, n_ops, fail_at=None):
        """``n_ops`` operations valid in sequence on ``state``; with ``fail_at``, a failing
        operation at that index (the ones after it are valid on the state before it)."""
        ops = []
        for i in range(n_ops):
            if i == fail_at:
                ops.append(self.failing_op(state))
                continue
            op = self.valid_op(state)
            state = model_apply(state, [op])
            ops.append(op)
        return ops


def _model_raises(doc, patch):
    try:
        model_apply(doc, patch)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError, TypeError):
        return True
    return False


def run_batch(rng, n):
    gen = PatchGen(rng)
    kinds = {}
    for _ in range(n):
        doc = gen.doc()
        n_ops = rng.randrange(1, 8)
        if rng.random() < 0.5:
            patch = gen.patch(doc, n_ops)
            expected = dump(model_apply(doc, patch))
            before = dump(doc)
            assert dump(apply_patch(doc, patch)) == expected
            assert dump(doc) == before
            sd = StateDocument(doc)
            sd.apply(patch)
            assert dump(sd.to_python()) == expected
            assert dump(apply_patch(copy.deepcopy(doc), patch, in_place=True)) == expected
        else:
            fail_at = rng.randrange(n_ops)
            patch = gen.patch(doc, n_ops, fail_at)
            assert _model_raises(doc, patch), patch[fail_at]
            err = check_atomic(doc, patch, fail_at)
            kinds[type(err).__name__] = kinds.get(type(err).__name__, 0) + 1
    return kinds


def check_atomic(doc, patch, fail_at):
    before, ids = dump(doc), containers(doc)
    err = None
    for in_place in (False, True):
        try:
            apply_patch(doc, patch, in_place=in_place)
        except JsonPatchError as e:
            err = e
        else:
            raise AssertionError(f"accepted: {patch[fail_at]}")
        assert err.index == fail_at, (str(err), patch[fail_at])
        assert dump(doc) == before and containers(doc) == ids
    sd = StateDocument(doc)
    for form in (patch, json.dumps(patch)):
        try:
            sd.apply(form)
        except JsonPatchError as e:
            assert e.index == fail_at, (str(e), patch[fail_at])
        else:
            raise AssertionError(f"StateDocument accepted: {patch[fail_at]}")
        assert dump(sd.to_python()) == before
    return err


def test_random_patches_are_atomic_and_match_jsonpatch():
    kinds = run_batch(random.Random(14), N_PATCHES)
    # every kind of failure was met
    assert set(kinds) == {"JsonPatchError", "JsonPatchTestFailed", "JsonPointerError"}, kinds


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_random_patches_shrinking(rng):
    run_batch(rng, 3)


# -- StateDocument against the model -------------------------------------------------------------


def run_state_document(rng, steps):
    gen = PatchGen(rng)
    model = gen.doc()
    sd = StateDocument(model)
    handed = []  # what to_python returned: shared, so the document must never write into it
    for _ in range(steps):
        r = rng.random()
        if r < 0.35:
            patch = gen.patch(model, rng.randrange(1, 5))
            sd.apply(patch if rng.random() < 0.5 else json.dumps(patch))
            model = model_apply(model, patch)
        elif r < 0.55:
            n = rng.randrange(1, 4)
            patch = gen.patch(model, n, rng.randrange(n))
            with pytest.raises(JsonPatchError):
                sd.apply(patch)
        elif r < 0.75:
            patches, ok = [], 0
            state = model
            for _ in range(rng.randrange(5)):
                n = rng.randrange(1, 4)
                bad = rng.random() < 0.3
                p = gen.patch(state, n, rng.randrange(n) if bad else None)
                patches.append(json.dumps(p) if rng.random() < 0.5 else p)
                if not bad:
                    state = model_apply(state, p)
                    ok += 1
            assert sd.apply_many(patches, skip_errors=True) == ok
            model = state
        elif r < 0.8:
            model = gen.doc()
            sd.replace(model)
        else:
            path, value = rng.choice(list(all_paths(model)))
            out = sd.to_python(path)
            assert dump(out) == dump(value)
            handed.append((out, dump(out)))
        out = sd.to_python()
        assert dump(out) == dump(model)
        if rng.random() < 0.3:
            handed.append((out, dump(out)))
    for out, text in handed:
        assert dump(out) == text


def test_state_document_follows_the_model():
    for seed in range(20):
        run_state_document(random.Random(seed), 100)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_state_document_follows_the_model_shrinking(rng):
    run_state_document(rng, 12)


@pytest.mark.long
def test_long_patch_batches():
    for seed in range(1000, 1020):
        run_batch(random.Random(seed), 5_000)
        run_state_document(random.Random(seed), 2_000)
