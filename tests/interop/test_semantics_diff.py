"""Differential test of the stream semantics against the official client (``@ag-ui/client``
1.0.0 under Node 20, semantics_run.js): random sequences (semantics_gen.py: valid runs and
near-valid ones) through ``transformChunks``, ``verifyEvents``, ``defaultApplyEvents``,
``compactEvents`` and the whole ``runAgent`` pipeline, and through ours
(semantics_diff.py): the same events out, the error on the same event, the same final
messages, state, pending interrupts, mutations per event and warnings.

``AGUI_SEMDIFF_CASES`` / ``AGUI_SEMDIFF_SEED`` change the number of cases (default 2,000; a
quarter in a light run, ``AGUI_TEST_LIGHT``) and the seed. Divergences found by it are fixed in the core and kept as Node-free
regression vectors in ``tests/vectors/semantics`` (test_stream_semdiff_vectors.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import examples
from node_env import ensure_node_modules
from semantics_diff import compare
from semantics_gen import cases

HERE = Path(__file__).resolve().parent
N = int(os.environ.get("AGUI_SEMDIFF_CASES", str(examples(2000))))
SEED = int(os.environ.get("AGUI_SEMDIFF_SEED", "20"))


def reference(batch, tmp_path):
    src = tmp_path / "cases.jsonl"
    src.write_text("".join(json.dumps(c) + "\n" for c in batch), encoding="utf-8")
    with open(src, "rb") as stdin:
        proc = subprocess.run(["node", str(HERE / "semantics_run.js")], cwd=HERE, stdin=stdin, capture_output=True,
                              timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    refs = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    assert len(refs) == len(batch)
    return refs


def test_stream_stages_agree_with_the_official_client(tmp_path):
    why = ensure_node_modules()
    if why:
        pytest.skip(why)
    batch = cases(SEED, N)
    refs = reference(batch, tmp_path)
    failures = []
    for i, (case, ref) in enumerate(zip(batch, refs)):
        found = compare(case, ref)
        if found:
            failures.append(f"case {i}: {json.dumps(case)}\n" + "\n".join(found))
    assert not failures, f"{len(failures)} of {len(batch)} cases diverge:\n\n" + "\n\n".join(failures[:5])
    # the sequences reach the edges: errors in every stage and in the reducer's warnings
    assert sum(r["chunks"]["error"] is not None for r in refs) > N // 50
    assert sum(r["verify"]["error"] is not None for r in refs) > N // 5
    assert sum(r["verify"]["error"] is None for r in refs) > N // 10
    assert sum(bool(r["apply"]["warnings"]) for r in refs) > N // 10
    assert sum(r["pipeline"]["error"] is None for r in refs) > N // 4  # whole runs replayed and compared
