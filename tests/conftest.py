import json
import os
from pathlib import Path

import pytest

VECTORS = Path(__file__).parent / "vectors"
ROOT = Path(__file__).resolve().parent.parent

# AGUI_TEST_LIGHT=1: the suite for a second interpreter testing the same abi3 binary (CI runs
# the full suite on the newest CPython and a light one on the others): the property tests run
# with a quarter of their examples, and the time-complexity tests (marked `complexity`: a
# property of the algorithms, the same binary and sources on every interpreter) are skipped;
# every other test runs as in the full suite.
LIGHT = os.environ.get("AGUI_TEST_LIGHT", "") not in ("", "0")


def examples(n):
    """A property test's ``max_examples``: ``n``, a quarter of it in a light run."""
    return max(25, n // 4) if LIGHT else n


def repo_file(*parts):
    """A repository file outside tests/ (README, docs, proto, tools, .ci), or a skip that names it
    when these tests run without it (from an unpacked sdist, or copied elsewhere)."""
    path = ROOT.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs the repository file {'/'.join(parts)}, absent from {ROOT}")
    return path


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


# Long variants of the property tests and the harness (`pytest -m long`, minutes each): off
# unless selected, so the default suite stays fast.
def pytest_configure(config):
    config.addinivalue_line("markers", "long: long fuzzing/property runs, only with -m long")
    config.addinivalue_line("markers", "complexity: time-complexity tests, skipped in a light run (AGUI_TEST_LIGHT)")


def pytest_collection_modifyitems(config, items):
    if LIGHT:
        light = pytest.mark.skip(reason="time-complexity test: run by the full suite (AGUI_TEST_LIGHT)")
        for item in items:
            if item.get_closest_marker("complexity"):
                item.add_marker(light)
    if "long" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="long run: select with -m long")
    for item in items:
        if item.get_closest_marker("long"):
            item.add_marker(skip)
