"""Regression cases of the differential test against the official client
(tests/interop/test_semantics_diff.py), without Node: each case of
``tests/vectors/semantics/divergences.jsonl`` holds a sequence on which we once diverged
and the outcome the reference produced for it (semantics_run.js), compared stage by
stage as the differential test compares (tests/interop/semantics_diff.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "interop"))

from semantics_diff import compare  # noqa: E402

CASES = [json.loads(line) for line in (ROOT / "vectors" / "semantics" / "divergences.jsonl").read_text("utf-8").splitlines()
         if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_agrees_with_the_reference_outcome(case):
    assert compare(case["case"], case["reference"]) == []


def test_the_cases_reach_each_fixed_divergence():
    names = {c["name"].split("/")[0] for c in CASES}
    assert {"verify", "patch", "compact", "activity", "pipeline", "boundary", "random"} <= names
