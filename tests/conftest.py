import json
from pathlib import Path

import pytest

VECTORS = Path(__file__).parent / "vectors"
ROOT = Path(__file__).resolve().parent.parent


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


def pytest_collection_modifyitems(config, items):
    if "long" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="long run: select with -m long")
    for item in items:
        if item.get_closest_marker("long"):
            item.add_marker(skip)
