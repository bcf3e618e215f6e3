"""A real framework's AG-UI endpoint end to end, with our encoder vs the reference's
(issue 11 §5; the README's migration note quotes it).

pydantic-ai's adapter (``examples/pydantic_ai_server.py``: FastAPI, ``AGUIAdapter``, an
offline ``FunctionModel`` run of 28 events) serves one whole request per round through
httpx's in-process ASGI transport — request validation, the agent run, the adapter's event
building, one ``EventEncoder(accept=...)`` per event as pydantic-ai makes it, the response.

Groups:
* framework_pydantic_ai_run: the whole request, our encoder swapped in vs ag_ui's;
* framework_pydantic_ai_encode: only what the encoder does in that request — the same
  events (``ag_ui`` pydantic objects, recorded from one run), an encoder built per event
  and ``encode`` — so that its share of the request can be read off: the encoder is a few
  per cent of the framework's per-event work, which is why swapping it gains little there.
"""

import asyncio
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):
    pytest.skip("pydantic-ai-slim[ag-ui] 2.68 needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("pydantic_ai.ui.ag_ui", reason="pydantic-ai-slim[ag-ui] is not installed")
httpx = pytest.importorskip("httpx")

from ag_ui.encoder import EventEncoder as RefEncoder  # noqa: E402

from agui_fast.encoder import EventEncoder  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import pydantic_ai_server as example  # noqa: E402

sys.path.pop(0)

ACCEPT = "text/event-stream"


def _request(ours: bool):
    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=example.app), base_url="http://agent")
    headers = {"accept": ACCEPT}

    def run():
        example.use_agui_fast_encoder(ours)
        r = loop.run_until_complete(client.post("/", json=example.RUN_BODY, headers=headers))
        assert r.status_code == 200
        return r

    return run


class _Recorder(RefEncoder):
    events: list = []

    def encode(self, event):
        _Recorder.events.append(event)
        return super().encode(event)


def _events():
    """The ag_ui events of one run, as the adapter hands them to its encoder."""
    _Recorder.events = []
    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=example.app), base_url="http://agent")
    example.adapter_stream.EventEncoder = _Recorder
    try:
        loop.run_until_complete(client.post("/", json=example.RUN_BODY, headers={"accept": ACCEPT}))
    finally:
        example.use_agui_fast_encoder(False)
        loop.close()
    return list(_Recorder.events)


EVENTS = _events()


def test_framework_pydantic_ai_run__agui_fast(benchmark):
    benchmark.group = "framework_pydantic_ai_run"
    r = benchmark(_request(True))
    benchmark.extra_info["events"] = r.text.count("\n\n")  # frame ends (JSON escapes newlines in text)


def test_framework_pydantic_ai_run__ag_ui_encoder(benchmark):
    benchmark.group = "framework_pydantic_ai_run"
    r = benchmark(_request(False))
    benchmark.extra_info["events"] = r.text.count("\n\n")  # frame ends (JSON escapes newlines in text)


def _encode_all(cls):
    def run():
        for event in EVENTS:
            cls(accept=ACCEPT).encode(event)

    return run


def test_framework_pydantic_ai_encode__agui_fast(benchmark):
    benchmark.group = "framework_pydantic_ai_encode"
    benchmark.extra_info["events"] = len(EVENTS)
    benchmark(_encode_all(EventEncoder))


def test_framework_pydantic_ai_encode__ag_ui_encoder(benchmark):
    benchmark.group = "framework_pydantic_ai_encode"
    benchmark.extra_info["events"] = len(EVENTS)
    benchmark(_encode_all(RefEncoder))
