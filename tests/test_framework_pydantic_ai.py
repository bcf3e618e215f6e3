"""A real framework's AG-UI endpoint with our encoder swapped in (issue 11 §5): pydantic-ai's
adapter (``examples/pydantic_ai_server.py``, offline ``FunctionModel``) streams the same
bytes with ``agui_fast.encoder.EventEncoder`` as with ``ag_ui.encoder.EventEncoder`` —
reasoning, awkward text deltas, a tool call and its result, state events holding a
``datetime``, a ``UUID``, a ``set``, a ``Decimal``, a ``date``, a custom event with a
``timedelta`` — for every Accept header, and its invalid request bodies still get 422."""

import asyncio
import itertools
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

if sys.version_info < (3, 11):
    pytest.skip("pydantic-ai-slim[ag-ui] 2.68 needs Python >= 3.11 (the dev extra installs it from 3.11 on)",
                allow_module_level=True)
pytest.importorskip("pydantic_ai.ui.ag_ui", reason="pydantic-ai-slim[ag-ui] is not installed (pip install -e '.[dev]')")
httpx = pytest.importorskip("httpx")

from pydantic_ai.ui import _event_stream as ui_stream  # noqa: E402
from pydantic_ai.ui.ag_ui import AGUIEventStream  # noqa: E402
from pydantic_ai.ui.ag_ui import _event_stream as adapter_stream  # noqa: E402

import agui_fast.encoder  # noqa: E402
from agui_fast.core import EventType  # noqa: E402
from agui_fast.decoder import decode_sse  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import pydantic_ai_server as example  # noqa: E402

sys.path.pop(0)


@pytest.fixture
def deterministic(monkeypatch):
    """Ids and timestamps that do not change between two runs (the adapter mints them)."""

    def reset():
        counter = itertools.count(1)
        monkeypatch.setattr(adapter_stream, "uuid4", lambda: uuid.UUID(int=next(counter)))
        monkeypatch.setattr(adapter_stream, "uuid7", lambda: uuid.UUID(int=next(counter)))
        monkeypatch.setattr(ui_stream, "uuid4", lambda: uuid.UUID(int=next(counter)))
        monkeypatch.setattr(adapter_stream, "now_utc", lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))

    monkeypatch.setattr(adapter_stream, "EventEncoder", adapter_stream.EventEncoder)  # restored after
    return reset


def post(body, accept):
    async def go():
        transport = httpx.ASGITransport(app=example.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as client:
            headers = {"accept": accept} if accept is not None else {}
            return await client.post("/", json=body, headers=headers)

    return asyncio.run(go())


def run_with(ours: bool, deterministic, body=example.RUN_BODY, accept="text/event-stream"):
    example.use_agui_fast_encoder(ours)
    deterministic()
    return post(body, accept)


@pytest.mark.parametrize("accept", ["text/event-stream", "application/vnd.ag-ui.event+proto", "*/*", None])
def test_the_stream_is_byte_identical_to_the_reference_encoders(deterministic, accept):
    ref = run_with(False, deterministic, accept=accept)
    ours = run_with(True, deterministic, accept=accept)
    assert ref.status_code == ours.status_code == 200, ours.text
    # The adapter really used our encoder (it builds one per event from the module's name).
    assert isinstance(AGUIEventStream(run_input=None)._event_encoder, agui_fast.encoder.EventEncoder)
    assert ours.headers["content-type"] == ref.headers["content-type"]
    assert ours.headers["content-type"].startswith("text/event-stream")
    assert ours.content == ref.content

    events = decode_sse(ours.content)
    types = [e.type for e in events]
    for t in ("RUN_STARTED", "REASONING_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS",
              "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA", "CUSTOM", "RUN_FINISHED"):
        assert EventType(t) in types, t
    text = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "".join(example.FIRST_TEXT + example.FINAL_TEXT)
    snapshot = next(e.snapshot for e in events if e.type == EventType.STATE_SNAPSHOT)
    assert snapshot == {"started_at": "2026-01-02T03:04:05.678000Z", "session": str(example.SESSION),
                        "tags": ["search"], "cost": "0.50", "steps": []}
    delta = next(e.delta for e in events if e.type == EventType.STATE_DELTA)
    assert delta[0].value == {"name": "lookup", "on": "2026-01-02", "id": str(example.SESSION)}
    custom = next(e for e in events if e.type == EventType.CUSTOM)
    assert custom.value == {"took": "PT1.5S", "run": str(example.SESSION)}


@pytest.mark.parametrize(
    "body",
    [
        {k: v for k, v in example.RUN_BODY.items() if k != "runId"},
        {**example.RUN_BODY, "threadId": 5},
        {**example.RUN_BODY, "messages": "hi"},
        {**example.RUN_BODY, "tools": [{"name": 5}]},
        [1, 2],
    ],
)
@pytest.mark.parametrize("ours", [True, False])
def test_invalid_bodies_still_get_422(deterministic, body, ours):
    r = run_with(ours, deterministic, body=body)
    assert r.status_code == 422, r.text
