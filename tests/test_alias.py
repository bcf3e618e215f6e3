"""``ag_ui`` module aliases: with the reference's module names pointed at ours, every
submodule import public frameworks use gives our module objects (no second copy loaded under
the alias's name). Each case runs in a fresh interpreter (aliases change ``sys.modules``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# The submodule imports of ag-ui-langgraph, ag-ui-adk, CopilotKit, pydantic-ai and the
# reference's own tests (from ag_ui.core.X import ..., import ag_ui.core.X as m).
IMPORTS = """
from ag_ui.core.types import RunAgentInput, UserMessage, AssistantMessage, BaseMessage
from ag_ui.core.events import BaseEvent, EventType, TextMessageContentEvent, CustomEvent
from ag_ui.core.capabilities import AgentCapabilities
from ag_ui.core.token_usage import aggregate_token_usage
from ag_ui.core.version import *
from ag_ui.core.deprecated import *
from ag_ui.core import RunStartedEvent, Tool
from ag_ui.encoder import EventEncoder
from ag_ui.encoder.encoder import EventEncoder as EE2, AGUI_MEDIA_TYPE
import ag_ui.core.types as types_mod
import agui_fast.core, agui_fast.core.types, agui_fast.encoder.encoder
assert RunAgentInput is agui_fast.core.RunAgentInput
assert TextMessageContentEvent is agui_fast.core.TextMessageContentEvent
assert EventEncoder is EE2 is agui_fast.encoder.EventEncoder
assert types_mod is agui_fast.core.types
assert sys.modules["ag_ui.core.events"] is agui_fast.core.events
assert agui_fast.core.types.__spec__.name == "agui_fast.core.types"
ev = TextMessageContentEvent(type=EventType.TEXT_MESSAGE_CONTENT, message_id="m", delta="x")
assert EventEncoder().encode(ev) == 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}\\n\\n'
print("ok")
"""


@pytest.mark.parametrize("alias", [
    # The reference installed, its two public packages swapped.
    "import ag_ui\nsys.modules['ag_ui.core'] = agui_fast.core\nsys.modules['ag_ui.encoder'] = agui_fast.encoder",
    # The whole top-level name swapped.
    "sys.modules['ag_ui'] = agui_fast",
], ids=["core-and-encoder", "top-level"])
def test_submodules_resolve_to_ours(alias):
    assert run("import sys, agui_fast, agui_fast.core, agui_fast.encoder\n" + alias + "\n" + IMPORTS) == "ok\n"


def test_alias_of_a_missing_submodule_fails_as_usual():
    out = run("""
        import sys, agui_fast.core
        sys.modules['ag_ui'] = __import__('agui_fast')
        try:
            import ag_ui.core.nonexistent
        except ModuleNotFoundError as e:
            print(type(e).__name__, e.name)
    """)
    assert out == "ModuleNotFoundError ag_ui.core.nonexistent\n"


def test_pydantic_ai_under_the_alias():
    """pydantic-ai's AG-UI adapter imported with the alias in place builds and encodes our
    events."""
    pytest.importorskip("pydantic_ai.ui.ag_ui")
    out = run("""
        import sys, ag_ui, agui_fast.core, agui_fast.encoder
        sys.modules['ag_ui.core'] = agui_fast.core
        sys.modules['ag_ui.encoder'] = agui_fast.encoder
        from pydantic_ai.ui.ag_ui import _event_stream as es
        assert es.EventEncoder is agui_fast.encoder.EventEncoder
        assert es.RunStartedEvent is agui_fast.core.RunStartedEvent
        print("ok")
    """)
    assert out == "ok\n"
