"""JSON Patch benchmarks: agui_fast.patch vs jsonpatch, in the same run.

    pytest benches/bench_patch.py --benchmark-group-by=group -o addopts=""

Groups pair the two implementations on the same input so ratios can be read directly
(`benches/report_patch.py` prints them).
"""

from __future__ import annotations

import copy
import json
import os
import sys

import jsonpatch
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _patch_data import APPEND_BIG_LIST, DELTAS_10K, ONE_OP, THREE_OPS, make_state  # noqa: E402

from agui_fast.patch import StateDocument, apply_patch  # noqa: E402

SMALL = make_state(1_000)
STATE_70K = make_state(70_000)

# Sub-microsecond calls are timed 100 at a time: pytest-benchmark's own per-call
# overhead (calling through *args/**kwargs) would otherwise dominate the fast side.
N = 100


@pytest.mark.benchmark(group="one op, in place (1 KB state), x100")
def test_one_op_in_place_agui_fast(benchmark):
    doc = copy.deepcopy(SMALL)

    def run():
        for _ in range(N):
            apply_patch(doc, ONE_OP, in_place=True)

    benchmark(run)


@pytest.mark.benchmark(group="one op, in place (1 KB state), x100")
def test_one_op_in_place_jsonpatch(benchmark):
    doc = copy.deepcopy(SMALL)

    def run():
        for _ in range(N):
            jsonpatch.apply_patch(doc, ONE_OP, in_place=True)

    benchmark(run)


@pytest.mark.benchmark(group="3 ops, copy mode (70 KB state)")
def test_three_ops_copy_agui_fast(benchmark):
    benchmark(apply_patch, STATE_70K, THREE_OPS)


@pytest.mark.benchmark(group="3 ops, copy mode (70 KB state)")
def test_three_ops_copy_jsonpatch(benchmark):
    benchmark(jsonpatch.apply_patch, STATE_70K, THREE_OPS)


# (the append is left out: in place, repeating it would grow the document)
@pytest.mark.benchmark(group="2 replaces, in place (70 KB state), x100")
def test_two_ops_in_place_agui_fast(benchmark):
    doc = copy.deepcopy(STATE_70K)
    patch = THREE_OPS[:1] + THREE_OPS[2:]

    def run():
        for _ in range(N):
            apply_patch(doc, patch, in_place=True)

    benchmark(run)


@pytest.mark.benchmark(group="2 replaces, in place (70 KB state), x100")
def test_two_ops_in_place_jsonpatch(benchmark):
    doc = copy.deepcopy(STATE_70K)
    patch = THREE_OPS[:1] + THREE_OPS[2:]

    def run():
        for _ in range(N):
            jsonpatch.apply_patch(doc, patch, in_place=True)

    benchmark(run)


@pytest.mark.benchmark(group="append to the big list, copy mode (70 KB state)")
def test_append_big_list_copy_agui_fast(benchmark):
    benchmark(apply_patch, STATE_70K, APPEND_BIG_LIST)


@pytest.mark.benchmark(group="append to the big list, copy mode (70 KB state)")
def test_append_big_list_copy_jsonpatch(benchmark):
    benchmark(jsonpatch.apply_patch, STATE_70K, APPEND_BIG_LIST)


REPLAY = [
    [{"op": "replace", "path": "/counters/tokens", "value": i}, {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": i}}]
    for i in range(1000)
]


# The user's whole path for a replay: construct, apply every patch, materialize; the long
# one is issue 10's StateDocument.apply_many vs apply_patch(in_place=True) loop.
REPLAYS = {"1000 patches": REPLAY, "10,000 deltas": DELTAS_10K}


@pytest.mark.parametrize("name", list(REPLAYS))
def test_replay_state_document_agui_fast(benchmark, name):
    benchmark.group = f"replay {name} (70 KB state)"
    patches = REPLAYS[name]

    def run():
        sd = StateDocument(STATE_70K)
        sd.apply_many(patches)
        return sd.to_python()

    benchmark(run)


@pytest.mark.parametrize("name", list(REPLAYS))
def test_replay_apply_patch_in_place(benchmark, name):
    benchmark.group = f"replay {name} (70 KB state)"
    patches = REPLAYS[name]

    def run():
        doc = copy.deepcopy(STATE_70K)
        for p in patches:
            doc = apply_patch(doc, p, in_place=True)
        return doc

    benchmark(run)


@pytest.mark.benchmark(group="replay 1000 patches (70 KB state)")
def test_replay_jsonpatch_in_place(benchmark):
    def run():
        doc = copy.deepcopy(STATE_70K)
        for p in REPLAY:
            doc = jsonpatch.apply_patch(doc, p, in_place=True)
        return doc

    benchmark(run)


REPLAY_TEXT = [json.dumps(p).encode() for p in REPLAY]


@pytest.mark.benchmark(group="replay 1000 patches from JSON text (70 KB state)")
def test_replay_text_state_document(benchmark):
    def run():
        sd = StateDocument(STATE_70K)
        sd.apply_many(REPLAY_TEXT)  # parsed in Rust with the GIL released
        return sd.to_python()

    benchmark(run)


@pytest.mark.benchmark(group="replay 1000 patches from JSON text (70 KB state)")
def test_replay_text_apply_patch_in_place(benchmark):
    def run():
        doc = copy.deepcopy(STATE_70K)
        for p in REPLAY_TEXT:
            doc = apply_patch(doc, json.loads(p), in_place=True)
        return doc

    benchmark(run)


@pytest.mark.benchmark(group="replay 1000 patches from JSON text (70 KB state)")
def test_replay_text_jsonpatch_in_place(benchmark):
    def run():
        doc = copy.deepcopy(STATE_70K)
        for p in REPLAY_TEXT:
            doc = jsonpatch.apply_patch(doc, json.loads(p), in_place=True)
        return doc

    benchmark(run)

