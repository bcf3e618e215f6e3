"""Patch: JSON Patch (RFC 6902) on agent states, ``agui_fast.patch`` against ``jsonpatch``,
in place and in copy mode (all-or-nothing: the document given is left as it was), and
replays of many patches; how the cost grows with the document's size."""

from __future__ import annotations

import copy
import json
import time

import jsonpatch

from _data import APPEND_BIG_LIST, ONE_OP, THREE_OPS, make_state, two_op_deltas
from _interleave import QUICK, against, measure
from agui_fast.patch import StateDocument, apply_patch

SMALL = make_state(1_000)
STATE_70K = make_state(70_000)


def test_one_op_in_place(benchmark):
    """One ``replace`` on a 1 KB state, in place."""
    benchmark.group = "patch/one_op_in_place"
    ours, theirs = copy.deepcopy(SMALL), copy.deepcopy(SMALL)
    against(benchmark, lambda: apply_patch(ours, ONE_OP, in_place=True),
            {"jsonpatch": lambda: jsonpatch.apply_patch(theirs, ONE_OP, in_place=True)},
            readme={"jsonpatch": "JSON Patch, one operation in place"})


def test_three_ops_copy(benchmark):
    """Three operations on a 70 KB state in copy mode: ours shares every untouched subtree,
    ``jsonpatch`` deep-copies the document first."""
    benchmark.group = "patch/three_ops_copy_70kb"
    out = against(benchmark, lambda: apply_patch(STATE_70K, THREE_OPS),
                  {"jsonpatch": lambda: jsonpatch.apply_patch(STATE_70K, THREE_OPS)},
                  readme={"jsonpatch": "JSON Patch, three operations on a 70 KB state, copy mode"})
    assert out == jsonpatch.apply_patch(STATE_70K, THREE_OPS)


def test_two_ops_in_place(benchmark):
    """Two replaces on the 70 KB state, in place."""
    benchmark.group = "patch/two_ops_in_place_70kb"
    patch = THREE_OPS[:1] + THREE_OPS[2:]
    ours, theirs = copy.deepcopy(STATE_70K), copy.deepcopy(STATE_70K)
    against(benchmark, lambda: apply_patch(ours, patch, in_place=True),
            {"jsonpatch": lambda: jsonpatch.apply_patch(theirs, patch, in_place=True)})


def test_append_big_list_copy(benchmark):
    """An append to the list that grows with the document, copy mode (that list is copied:
    one pointer per item)."""
    benchmark.group = "patch/append_big_list_copy_70kb"
    against(benchmark, lambda: apply_patch(STATE_70K, APPEND_BIG_LIST),
            {"jsonpatch": lambda: jsonpatch.apply_patch(STATE_70K, APPEND_BIG_LIST)})


REPLAY = two_op_deltas(1000)
REPLAY_TEXT = [json.dumps(p).encode() for p in REPLAY]


def test_replay_patches(benchmark):
    """A replay's whole path: a document from the 70 KB state, 1,000 patches, the result as
    Python data: ``StateDocument.apply_many`` against an ``apply_patch(in_place=True)``
    loop and a ``jsonpatch`` loop."""
    benchmark.group = "patch/replay_1000"

    def ours():
        sd = StateDocument(STATE_70K)
        sd.apply_many(REPLAY)
        return sd.to_python()

    def loop(apply):
        def run():
            doc = copy.deepcopy(STATE_70K)
            for p in REPLAY:
                doc = apply(doc, p, in_place=True)
            return doc

        return run

    out = against(benchmark, ours, {"apply_patch loop": loop(apply_patch), "jsonpatch loop": loop(jsonpatch.apply_patch)},
                  rounds=20, min_round=0)
    assert out == loop(jsonpatch.apply_patch)()


def test_replay_patches_text(benchmark):
    """The same from JSON text (``apply_many`` parses it in Rust with the GIL released)."""
    benchmark.group = "patch/replay_1000_text"

    def ours():
        sd = StateDocument(STATE_70K)
        sd.apply_many(REPLAY_TEXT)
        return sd.to_python()

    def loop(apply):
        def run():
            doc = copy.deepcopy(STATE_70K)
            for p in REPLAY_TEXT:
                doc = apply(doc, json.loads(p), in_place=True)
            return doc

        return run

    against(benchmark, ours, {"apply_patch loop": loop(apply_patch), "jsonpatch loop": loop(jsonpatch.apply_patch)},
            rounds=20, min_round=0)


SIZES = [1_000, 10_000, 100_000, 1_000_000] + ([] if QUICK else [10_000_000])


def _per_call(fn, budget: float) -> float:
    """Seconds a call, best of a few timed loops within about ``budget`` seconds."""
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-9)
    number = max(1, int(budget / 5 / one))
    best = float("inf")
    for _ in range(max(2, min(5, int(budget / (one * number))))):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def test_scaling(benchmark):
    """Microseconds an apply by document size (1 KB to 10 MB): ours flat where the patch
    touches fixed-size parts, ``jsonpatch``'s copy mode linear. The runner draws
    ``docs/patch_scaling.svg``."""
    benchmark.group = "patch/scaling"

    def run():
        figures = {}
        for size in SIZES:
            state = make_state(size)
            ours, theirs = copy.deepcopy(state), copy.deepcopy(state)
            row = {
                "agui_fast copy, 3 ops": lambda: apply_patch(state, THREE_OPS),
                "agui_fast in place, 1 op": lambda: apply_patch(ours, ONE_OP, in_place=True),
                "agui_fast copy, append to the growing list": lambda: apply_patch(state, APPEND_BIG_LIST),
                "jsonpatch copy, 3 ops": lambda: jsonpatch.apply_patch(state, THREE_OPS),
                "jsonpatch in place, 1 op": lambda: jsonpatch.apply_patch(theirs, ONE_OP, in_place=True),
            }
            for name, fn in row.items():
                figures[f"{name} @ {len(json.dumps(state))}"] = _per_call(fn, 0.3 if QUICK else 1.0) * 1e6
        return figures

    measure(benchmark, run, rounds=1, chart="patch_scaling")
