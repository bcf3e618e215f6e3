"""Run the reference SDK's own test files against agui_fast, and against the reference.

    python tools/reference_tests.py DIR_OR_FILE [...] [--json OUT]

The reference's tests (``ag-ui-protocol``'s ``python-sdk/tests`` or ``sdks/python/tests`` of
the ag-ui repository; the PyPI package does not ship them) import ``ag_ui.core[.*]`` and
``ag_ui.encoder[.*]``. The tool runs them twice with pytest, each run in its own
interpreter:

* **reference**: as written, against the installed ``ag-ui-protocol``;
* **ours**: with ``ag_ui`` aliased to ``agui_fast`` before collection
  (``sys.modules["ag_ui"] = agui_fast``: every submodule below it resolves to ours, see
  ``agui_fast._alias``), and the reference's private ``ag_ui._generated.models`` to
  ``agui_fast.core``.

It prints both pass counts and every test whose outcome differs. It exits 1 when a test
passes on the reference but not on ours (a regression of the drop-in promise), else 0:
tests that fail on the reference itself test behaviour the pinned release does not have,
and are reported, not counted against us.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from typing import Dict, List

# Installed in the "ours" interpreter before pytest collects anything.
_ALIAS = textwrap.dedent(
    """
    import sys, types
    import agui_fast, agui_fast.core, agui_fast.encoder
    sys.modules["ag_ui"] = agui_fast
    generated = types.ModuleType("ag_ui._generated")
    generated.models = agui_fast.core
    sys.modules["ag_ui._generated"] = generated
    sys.modules["ag_ui._generated.models"] = agui_fast.core
    """
)

_RUN = textwrap.dedent(
    """
    import sys
    {alias}
    import pytest
    sys.exit(pytest.main(sys.argv[1:]))
    """
)


def run(paths: List[str], ours: bool) -> Dict[str, str]:
    """``{test id: "passed" | "failed" | "error" | "skipped"}`` of one pytest run."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.xml")
        code = _RUN.format(alias=_ALIAS if ours else "")
        args = [sys.executable, "-c", code, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", f"--junitxml={report}"]
        # The reference's tests sit in their own tree: no conftest or rootdir of this project.
        proc = subprocess.run([*args, "--rootdir", tmp, *paths], capture_output=True, text=True, cwd=tmp)
        if not os.path.exists(report):
            raise RuntimeError(f"pytest produced no report (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return outcomes(report)


def outcomes(report: str) -> Dict[str, str]:
    out = {}
    for case in ET.parse(report).iter("testcase"):
        classname = case.get("classname")  # empty for a module's functions outside the rootdir
        name = f"{classname}::{case.get('name')}" if classname else str(case.get("name"))
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            out[name] = "failed"
        elif "error" in kinds:
            out[name] = "error"
        elif "skipped" in kinds:
            out[name] = "skipped"
        else:
            out[name] = "passed"
    return out


def compare(reference: Dict[str, str], ours: Dict[str, str]) -> Dict[str, object]:
    names = sorted(set(reference) | set(ours))
    return {
        "total": len(names),
        "passed_reference": sum(reference.get(n) == "passed" for n in names),
        "passed_ours": sum(ours.get(n) == "passed" for n in names),
        "regressions": [n for n in names if reference.get(n) == "passed" and ours.get(n) != "passed"],
        "fixed": [n for n in names if reference.get(n) != "passed" and ours.get(n) == "passed"],
        "failing_both": [n for n in names if reference.get(n) != "passed" and ours.get(n) != "passed"],
    }


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="test files or directories of the reference SDK")
    parser.add_argument("--json", help="write the comparison as JSON to this file")
    opts = parser.parse_args(argv)
    paths = [os.path.abspath(p) for p in opts.paths]
    result = compare(run(paths, ours=False), run(paths, ours=True))
    print(f"reference: {result['passed_reference']}/{result['total']} passed")
    print(f"agui_fast: {result['passed_ours']}/{result['total']} passed")
    for key in ("regressions", "fixed", "failing_both"):
        for name in result[key]:  # type: ignore[attr-defined]
            print(f"  {key}: {name}")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(result, f, indent=2)
    return 1 if result["regressions"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
