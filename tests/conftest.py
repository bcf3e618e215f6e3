import gzip
import json
import os
from pathlib import Path

import pytest

VECTORS = Path(__file__).parent / "vectors"
ROOT = Path(__file__).resolve().parent.parent

# AGUI_TEST_LIGHT=1: the suite for a second interpreter testing the same abi3 binary (CI runs
# the full suite on the newest CPython and a light one on the others): the property tests run
# with a quarter of their examples, and the time-complexity tests (marked `complexity`: a
# property of the algorithms, the same binary and sources on every interpreter) are skipped.
# With AGUI_TEST_SHARD=i/n as well (CI: one share per light interpreter), a light run keeps
# share i of n of the tests (`shard`): a test function with at least n parametrized cases gives
# each share every n-th case, a smaller one goes whole to one share, so the n light runs
# together run every case once (the full run, all of them). Each interpreter thus takes the
# native paths (ffi/layout.rs reads per-version CPython structs) in a third of the suite, not
# once per test; the tests of those reads themselves (marked `every_interpreter`) run in
# every share. Every other test runs as in the full suite.
LIGHT = os.environ.get("AGUI_TEST_LIGHT", "") not in ("", "0")


def shard_spec(text):
    """``(i, n)`` from AGUI_TEST_SHARD's ``i/n`` (0 <= i < n); ``(0, 1)`` (everything) if empty."""
    if not text:
        return 0, 1
    i, _, n = text.partition("/")
    i, n = int(i), int(n)
    if not 0 <= i < n:
        raise ValueError(f"AGUI_TEST_SHARD={text!r}: want i/n with 0 <= i < n")
    return i, n


def shard(nodeids, i, n, everywhere=frozenset()):
    """The node ids of share ``i`` of ``n``. Of each test function's cases (``path::name[id]``,
    grouped by what precedes the ``[``, sorted by id, not by collection order, which could
    depend on hashing): every n-th from the i-th where the function has at least n of them;
    the functions with fewer go whole to one share, all of a module's to the same one (the
    modules taken in name order, each to the share with the fewest such cases so far); one
    named in ``everywhere`` whole to every share. The n shares of the others are disjoint
    and cover them."""
    groups = {}
    for nodeid in nodeids:
        groups.setdefault(nodeid.split("[", 1)[0], []).append(nodeid)
    kept = set()
    modules = {}  # module -> its small functions' cases
    for function in sorted(groups):
        cases = groups[function]
        if function in everywhere:
            kept.update(cases)
        elif len(cases) >= n:
            kept.update(sorted(cases)[i::n])
        else:
            modules.setdefault(function.split("::", 1)[0], []).extend(cases)
    # A module's small functions stay together (its module-scoped set-ups, a cluster or a
    # server, start in one share, not in each), the modules going to the least-filled share.
    load = [0] * n
    for module in sorted(modules):
        share = load.index(min(load))
        load[share] += len(modules[module])
        if share == i:
            kept.update(modules[module])
    return kept


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
    """The JSON lines of a vector file below tests/vectors (``client/apply.jsonl.gz``:
    gzip-compressed when its name ends in ``.gz``)."""
    opener = gzip.open if str(relpath).endswith(".gz") else open
    with opener(VECTORS / relpath, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def sse_frames(texts):
    """JSON texts (bytes) as an SSE log, one ``data:`` frame each."""
    return b"".join(b"data: " + t + b"\n\n" for t in texts)


def sse_log(events):
    """Events (JSON values) as an SSE log, one ``data:`` frame each; ``json.dumps``
    escapes the lone surrogates some vectors hold."""
    return sse_frames(json.dumps(e).encode() for e in events)


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
    config.addinivalue_line("markers", "every_interpreter: in every light run's share (AGUI_TEST_SHARD)")


def pytest_collection_modifyitems(config, items):
    i, n = shard_spec(os.environ.get("AGUI_TEST_SHARD", "") if LIGHT else "")
    if n > 1:
        # Deselected, not skipped: a skipped case still costs its set-up and report.
        everywhere = {item.nodeid.split("[", 1)[0] for item in items if item.get_closest_marker("every_interpreter")}
        kept = shard([item.nodeid for item in items], i, n, everywhere)
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in kept])
        items[:] = [item for item in items if item.nodeid in kept]
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
