"""Server: streaming a response of small events built per request, against the reference's
documented server pattern (``ag_ui`` events, ``ag_ui.encoder.EventEncoder.encode`` per
event, Starlette's ``StreamingResponse``): in process (the server's CPU alone), end to end
(uvicorn in its own process, read by httpx), and inside a real framework's AG-UI endpoint
(pydantic-ai, our encoder swapped in). And the request body a server validates first:
``RunAgentInput`` through pydantic's ``TypeAdapter`` and through a FastAPI endpoint, against
the reference's class."""

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import json

import httpx
import pytest
from pydantic import TypeAdapter

import ag_ui.core as ref_core
import agui_fast.core as core

from _data import ROOT
from _interleave import QUICK, against
from _body_app import body
from _serve_app import ours, ours_single, reference
from agui_fast.decoder import decode_sse

N = 2000


class _Request:
    headers: dict = {}
    query_params = {"n": str(N)}


def _serve(endpoint):
    """One response through the ASGI app, to a ``send`` that takes every message at once."""
    scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": f"n={N}".encode()}

    async def main():
        response = await endpoint(_Request())
        sent = []

        async def send(message):
            sent.append(message)

        async def receive():
            await asyncio.Event().wait()  # the client never goes away

        await response(scope, receive, send)
        return sent

    return asyncio.run(main())


def test_in_process(benchmark):
    """2,000 events a response, in process (no sockets): ``EventStreamResponse`` (coalesced
    sends) against the reference pattern, and against itself with ``coalesce=False`` (one
    send per event)."""
    benchmark.group = "server/in_process_2000"
    sent = against(benchmark, lambda: _serve(ours),
                   {"ag_ui encoder + StreamingResponse": lambda: _serve(reference),
                    "EventStreamResponse(coalesce=False)": lambda: _serve(ours_single)},
                   rounds=15, min_round=0, events=N)
    assert b"".join(m.get("body", b"") for m in sent).count(b"data: ") == N


# -- end to end: uvicorn in a process of its own ------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _uvicorn(app: str):
    """``app`` (``module:attribute`` in ``benches/``) served by uvicorn in its own process:
    yields its base URL and pid."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning", "--no-access-log"],
        cwd=ROOT / "benches",
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("uvicorn did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def uvicorn_server():
    with _uvicorn("_serve_app:app") as served:
        yield served


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the server's CPU time from /proc")
def test_end_to_end(benchmark, uvicorn_server):
    """20,000 small events a request (5,000 in a quick run), uvicorn on 127.0.0.1 in its own
    process, read by httpx in this one: the time of a whole request (so the events/s ratio)
    and the server's CPU per event (``/proc``, whole requests)."""
    benchmark.group = "server/end_to_end"
    base, pid = uvicorn_server
    n = 5_000 if QUICK else 20_000
    cpu = {}

    def request(variant):
        def run():
            c0 = _cpu_seconds(pid)
            size = 0
            with client.stream("GET", f"/{variant}?n={n}") as r:
                r.raise_for_status()
                for chunk in r.iter_raw(1 << 16):
                    size += len(chunk)
            time.sleep(0.02)  # the server's bookkeeping after the last byte, before its CPU is read
            cpu.setdefault(variant, []).append((_cpu_seconds(pid) - c0) / n)
            return size

        return run

    with httpx.Client(base_url=base, timeout=120) as client:
        for v in ("ours", "ours-single", "reference"):  # every variant sends every event
            assert len(decode_sse(client.get(f"/{v}?n={n}").content)) == n
        against(benchmark, request("ours"),
                {"ag_ui encoder + StreamingResponse": request("reference"),
                 "EventStreamResponse(coalesce=False)": request("ours-single")},
                rounds=9, warmup=1, min_round=0, events=n,
                readme={"ag_ui encoder + StreamingResponse":
                        f"serve {n:,} small events end to end (uvicorn, httpx reading), events/s"})
    benchmark.extra_info["server_cpu_us_per_event"] = {k: [c * 1e6 for c in v] for k, v in cpu.items()}


# -- a real framework: pydantic-ai's AG-UI endpoint --------------------------------------------


@pytest.fixture(scope="module")
def pydantic_ai_app():
    if sys.version_info < (3, 11):
        pytest.skip("pydantic-ai-slim[ag-ui] needs Python >= 3.11")
    pytest.importorskip("pydantic_ai.ui.ag_ui", reason="pydantic-ai-slim[ag-ui] is not installed")
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import pydantic_ai_server as example
    finally:
        sys.path.pop(0)
    return example


def test_framework(benchmark, pydantic_ai_app):
    """pydantic-ai's AG-UI endpoint (``examples/pydantic_ai_server.py``: FastAPI, an offline
    ``FunctionModel`` run of 28 events) serving one whole request through httpx's in-process
    ASGI transport, our encoder swapped in against ``ag_ui.encoder``: the framework's own
    work per event dominates."""
    benchmark.group = "server/framework_pydantic_ai"
    example = pydantic_ai_app
    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=example.app), base_url="http://agent")

    def request(ours_encoder):
        def run():
            example.use_agui_fast_encoder(ours_encoder)
            r = loop.run_until_complete(client.post("/", json=example.RUN_BODY, headers={"accept": "text/event-stream"}))
            assert r.status_code == 200
            return r.text

        return run

    try:
        body = against(benchmark, request(True), {"ag_ui.encoder": request(False)}, rounds=30, min_round=0,
                       readme={"ag_ui.encoder": "pydantic-ai's AG-UI endpoint, a whole request, our encoder swapped in"})
    finally:
        example.use_agui_fast_encoder(False)
        loop.run_until_complete(client.aclose())
        loop.close()
    benchmark.extra_info["events"] = body.count("\n\n")


def test_framework_encoding(benchmark, pydantic_ai_app):
    """Only the encoding of that request: the ``ag_ui`` events of one run (recorded as the
    adapter hands them to its encoder), an encoder built per event as pydantic-ai does, then
    ``encode``. Beside the whole request's ratio, this says the encoder's share of it."""
    from ag_ui.encoder import EventEncoder as RefEncoder

    from agui_fast.encoder import EventEncoder

    benchmark.group = "server/framework_pydantic_ai_encoding"
    example = pydantic_ai_app
    recorded = []

    class Recorder(RefEncoder):
        def encode(self, event):
            recorded.append(event)
            return super().encode(event)

    loop = asyncio.new_event_loop()
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=example.app), base_url="http://agent")
    example.adapter_stream.EventEncoder = Recorder
    try:
        loop.run_until_complete(client.post("/", json=example.RUN_BODY, headers={"accept": "text/event-stream"}))
    finally:
        example.use_agui_fast_encoder(False)
        loop.run_until_complete(client.aclose())
        loop.close()
    accept = "text/event-stream"

    def encode_all(cls):
        return lambda: [cls(accept=accept).encode(e) for e in recorded]

    out = against(benchmark, encode_all(EventEncoder), {"ag_ui.encoder": encode_all(RefEncoder)}, events=len(recorded))
    assert out == encode_all(RefEncoder)()


# -- request bodies: RunAgentInput validated, as FastAPI and pydantic users do ------------------

BODY_SIZES = {"1": 1, "100": 100, "10k": 10_000}
OURS_INPUT, REF_INPUT = TypeAdapter(core.RunAgentInput), TypeAdapter(ref_core.RunAgentInput)


@pytest.mark.parametrize("size", list(BODY_SIZES))
def test_body_validate_python(benchmark, size):
    """``TypeAdapter(RunAgentInput).validate_python`` of a request body (1, 100 and 10,000
    messages: user, assistant with a tool call, tool), what FastAPI calls for a body
    parameter, against the reference's class."""
    benchmark.group = f"server/body_validate_python_{size}"
    data = body(BODY_SIZES[size])
    out = against(benchmark, lambda: OURS_INPUT.validate_python(data), {"ag_ui.core": lambda: REF_INPUT.validate_python(data)},
                  min_round=0.01, messages=BODY_SIZES[size],
                  readme={"ag_ui.core": f"validate a request body of {size} messages (`TypeAdapter.validate_python`, what FastAPI calls)"} if size == "100" else None)
    assert out.model_dump(by_alias=True) == REF_INPUT.validate_python(data).model_dump(by_alias=True, exclude_none=True)


@pytest.mark.parametrize("size", list(BODY_SIZES))
def test_body_validate_json(benchmark, size):
    """``TypeAdapter(RunAgentInput).validate_json`` of the same bodies as JSON text."""
    benchmark.group = f"server/body_validate_json_{size}"
    text = json.dumps(body(BODY_SIZES[size])).encode()
    against(benchmark, lambda: OURS_INPUT.validate_json(text), {"ag_ui.core": lambda: REF_INPUT.validate_json(text)},
            min_round=0.01, messages=BODY_SIZES[size])


@pytest.fixture(scope="module")
def body_server():
    with _uvicorn("_body_app:app") as (base, pid):
        with httpx.Client(base_url=base, timeout=120) as client:
            yield client, pid


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the server's CPU time from /proc")
@pytest.mark.parametrize("size", list(BODY_SIZES))
def test_body_fastapi(benchmark, body_server, size):
    """The same bodies POSTed to a FastAPI endpoint (``input_data: RunAgentInput``) under
    uvicorn (its own process), by httpx in this one: the time of a whole request, and the
    server's CPU per request (``/proc``), ours against the reference's class in the same
    server. Small bodies cost mostly what uvicorn and FastAPI do with any request."""
    benchmark.group = f"server/body_fastapi_{size}"
    client, pid = body_server
    n = BODY_SIZES[size]
    content, headers = json.dumps(body(n)).encode(), {"content-type": "application/json"}
    cpu: dict = {}

    def post(path):
        def run():
            c0 = _cpu_seconds(pid)
            r = client.post(path, content=content, headers=headers)
            assert r.status_code == 200 and r.text == str(n), r.text
            cpu.setdefault(path, []).append(_cpu_seconds(pid) - c0)

        return run

    for path in ("/ours", "/reference"):
        post(path)()
    cpu.clear()
    against(benchmark, post("/ours"), {"ag_ui.core": post("/reference")}, min_round=0.02, messages=n)
    benchmark.extra_info["server_cpu_ms_per_request"] = {k: 1e3 * sum(v) / len(v) for k, v in cpu.items()}
