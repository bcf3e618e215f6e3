"""Shared inputs of the JSON Patch benchmarks: a realistic AG-UI agent state of a chosen
size and the patches applied to it."""

from __future__ import annotations

import json


def make_state(target_bytes: int) -> dict:
    """An agent state of roughly `target_bytes` of JSON, shaped like the states in
    tests/vectors/client/json-patch/state_deltas.jsonl (agent/plan, todo list, documents,
    counters, ui). It grows in width (more todo items and documents), like a
    long-running agent's state, while the parts the patches touch stay the same size."""
    state = {
        "agent": {
            "status": "idle",
            "step": 3,
            "plan": {"title": "Trip to Berlin", "steps": [{"id": f"s{i}", "text": "step text", "done": False} for i in range(5)]},
        },
        "todo": [],
        "done": [],
        "documents": {},
        "counters": {"tokens": 1000, "calls": 3},
        "ui": {"selected": None, "flags": [True, False]},
    }
    i = 0
    while len(json.dumps(state)) < target_bytes:
        # grow in chunks so building a 10 MB state does not re-serialize it 100k times
        for _ in range(max(1, (target_bytes - len(json.dumps(state))) // 110)):
            state["todo"].append({"id": f"t{i}", "title": f"weather search {i}", "done": i % 3 == 0})
            state["documents"][f"reports/{i}"] = {"pages": i % 50, "note": "result"}
            i += 1
    return state


# One small operation (the in-place case).
ONE_OP = [{"op": "replace", "path": "/agent/status", "value": "running"}]

# Three operations typical of a STATE_DELTA (the copy-mode case).
THREE_OPS = [
    {"op": "replace", "path": "/agent/status", "value": "running"},
    {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": "s-new", "text": "new step", "done": False}},
    {"op": "replace", "path": "/counters/tokens", "value": 1234},
]

# Appending to the list that grows with the document: copy mode must copy that list
# (a shallow copy: one pointer per element), so this case is not flat.
APPEND_BIG_LIST = [{"op": "add", "path": "/todo/-", "value": {"id": "new", "title": "new task", "done": False}}]

# 10,000 STATE_DELTA patches of two operations each (a long replay; issue 10 measured
# `StateDocument.apply_many` against an `apply_patch(in_place=True)` loop on such a log).
DELTAS_10K = [
    [
        {"op": "replace", "path": "/counters/tokens", "value": i},
        {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": f"s{i}", "done": False}},
    ]
    for i in range(10_000)
]
