"""``tools/reference_tests.py``: test files written against ``ag_ui`` run twice, as written
and with ``ag_ui`` aliased to ``agui_fast``; the outcomes are compared test by test."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ag_ui")

TOOL = Path(__file__).resolve().parent.parent / "tools" / "reference_tests.py"

TESTS = '''
import pydantic
from ag_ui.core import EventType, TextMessageContentEvent
from ag_ui.core.events import RunStartedEvent
from ag_ui.encoder import EventEncoder


def test_same_on_both():
    e = TextMessageContentEvent(message_id="m", delta="d")
    assert EventEncoder().encode(e) == 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}\\n\\n'
    assert RunStartedEvent(thread_id="t", run_id="r").type == EventType.RUN_STARTED


def test_pydantic_model():  # the Structs are no pydantic models: passes on the reference only
    assert isinstance(TextMessageContentEvent(message_id="m", delta="d"), pydantic.BaseModel)


def test_module_names():  # the alias gives our modules: fails on the reference only
    assert TextMessageContentEvent.__module__.startswith("agui_fast")


def test_fails_on_both():
    TextMessageContentEvent(message_id=None, delta="d")  # refused by both
'''


def test_the_tool_compares_outcomes(tmp_path):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(TESTS))
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, str(TOOL), str(tmp_path / "test_sample.py"), "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a regression was found
    result = json.loads(out.read_text())
    assert result["total"] == 4
    assert (result["passed_reference"], result["passed_ours"]) == (2, 2)
    assert result["regressions"] == ["test_pydantic_model"]
    assert result["fixed"] == ["test_module_names"]
    assert result["failing_both"] == ["test_fails_on_both"]
    assert "reference: 2/4 passed" in proc.stdout and "agui_fast: 2/4 passed" in proc.stdout
