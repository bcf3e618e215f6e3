import json
from pathlib import Path

import pytest

VECTORS = Path(__file__).parent / "vectors"


def load_jsonl(relpath):
    with open(VECTORS / relpath, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def case_input(case):
    """The case's input as JSON text: ``event_json`` when given (number spellings,
    duplicate keys ...), else the ``event`` object."""
    if case.get("event_json") is not None:
        return case["event_json"]
    return json.dumps(case["event"], ensure_ascii=False)


def by_name(cases):
    return pytest.mark.parametrize("case", cases, ids=[c["name"] for c in cases])
