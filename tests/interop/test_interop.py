"""Interop with the official TypeScript packages (@ag-ui/client, @ag-ui/encoder 1.0.0, run
with Node 20 from ``node_modules`` here, see node_env.py), and with the Python reference's
encoder:

* the official HttpAgent reads our EventStreamResponse servers (the example server, and
  coalescing on and off) over SSE and protobuf: every event, the final messages and state
  equal what the server meant;
* the official @ag-ui/encoder writes SSE and protobuf streams (a tiny Node server): our
  HttpAgent reads them, events equal;
* our HttpAgent reads the example server and a server written with ``ag_ui.encoder``;
* the official HttpAgent reads ``examples/fastapi_server.py`` (FastAPI, written the
  reference's way: ``encode`` + ``get_content_type``) under uvicorn, with an SSE and a
  protobuf Accept: the reference's pattern answers SSE to both, labelled so;
* every pairing of ``EventEncoder``'s label methods with its writing methods (a server
  written the Python or the TypeScript way) is read intact by the official HttpAgent, or
  refused by the encoder before any byte is sent.
"""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("fastapi")
RefEncoder = pytest.importorskip("ag_ui.encoder").EventEncoder

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent / "examples"))

import fastapi_server  # noqa: E402
import server as example  # noqa: E402
from node_env import ensure_node_modules  # noqa: E402
from servers import serve  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from agui_fast import core  # noqa: E402
from agui_fast.asgi import EventStreamResponse  # noqa: E402
from agui_fast.client import HttpAgent, SyncHttpAgent  # noqa: E402
from agui_fast.decoder import decode_as, decode_event  # noqa: E402
from agui_fast.encoder import EventEncoder, event_to_json_bytes, to_builtins  # noqa: E402
from agui_fast.errors import EncoderFormatError  # noqa: E402
from agui_fast.interop import to_ag_ui  # noqa: E402

NODE_TIMEOUT = 30
RUN = core.RunAgentInput(thread_id="t1", run_id="r1", messages=[core.UserMessage(id="u1", content="hi \u2028 there")])
MEANT = example.script(RUN)


async def _events(source):
    for event in source:
        yield event
        await asyncio.sleep(0)


def _run_of(request_body: bytes) -> core.RunAgentInput:
    return decode_as(request_body, core.RunAgentInput)


async def coalesced(request):
    run = _run_of(await request.body())
    # A source that never waits: everything it makes while a send is in flight is batched.
    return EventStreamResponse(example.script(run), accept=request.headers.get("accept"))


async def single(request):
    run = _run_of(await request.body())
    return EventStreamResponse(_events(example.script(run)), accept=request.headers.get("accept"), coalesce=False)


async def idle(request):
    """Pauses longer than the keep-alive interval: the stream carries SSE comments."""
    run = _run_of(await request.body())

    async def slow():
        for i, event in enumerate(example.script(run)):
            if i % 9 == 1:
                await asyncio.sleep(0.12)
            yield event

    return EventStreamResponse(slow(), accept=request.headers.get("accept"), keepalive=0.05)


async def reference(request):
    """The Python reference's server pattern: ag_ui events, ag_ui's encoder, one chunk each."""
    run = _run_of(await request.body())
    encoder = RefEncoder(accept=request.headers.get("accept"))

    async def gen():
        for event in example.script(run):
            yield encoder.encode(to_ag_ui(event))

    return StreamingResponse(gen(), media_type=encoder.get_content_type())


async def pairing(request):
    """A server that labels its response with ``label`` (first, as servers do) and writes
    each event with ``writer``."""
    run = _run_of(await request.body())
    label, writer = request.query_params["label"], request.query_params["writer"]
    encoder = EventEncoder(accept=request.headers.get("accept"))
    media_type = getattr(encoder, label)()
    events = example.script(run)
    write = getattr(encoder, writer)
    try:
        first = encoder.encode_many(events) if writer == "encode_many" else write(events[0])
    except EncoderFormatError as e:
        return StreamingResponse(iter([str(e)]), status_code=500, media_type="text/plain")

    def gen():
        yield first
        if writer != "encode_many":
            for event in events[1:]:
                yield write(event)

    return StreamingResponse(gen(), media_type=media_type)


APP = Starlette(routes=[
    Route("/pairing", pairing, methods=["POST"]),
    Route("/agent", example.agent, methods=["POST"]),
    Route("/coalesced", coalesced, methods=["POST"]),
    Route("/single", single, methods=["POST"]),
    Route("/idle", idle, methods=["POST"]),
    Route("/reference", reference, methods=["POST"]),
])


@pytest.fixture(scope="module")
def base_url():
    with serve(APP) as url:
        yield url


@pytest.fixture(scope="module")
def node():
    why = ensure_node_modules()
    if why:
        pytest.skip(f"official TypeScript packages unavailable: {why}")
    return "node"


def official_client(node, url, fmt):
    return official_client_with(node, url, fmt, RUN)


def official_client_with(node, url, fmt, run):
    proc = subprocess.run([node, str(HERE / "client_run.js"), url, fmt], input=event_to_json_bytes(run),
                          capture_output=True, timeout=NODE_TIMEOUT, cwd=HERE)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("path", ["/agent", "/coalesced", "/single", "/idle"])
@pytest.mark.parametrize("fmt", ["sse", "protobuf"])
def test_official_client_reads_our_server(node, base_url, path, fmt):
    got = official_client(node, base_url + path, fmt)
    assert got["contentType"] == ("text/event-stream" if fmt == "sse" else "application/vnd.ag-ui.event+proto")
    assert [decode_event(json.dumps(e)) for e in got["events"]] == MEANT
    assert got["messages"] == [to_builtins(m) for m in example.meant_messages(RUN)]
    assert got["state"] == example.meant_state


@pytest.fixture(scope="module")
def node_encoder_url(node, tmp_path_factory):
    events_file = tmp_path_factory.mktemp("interop") / "events.json"
    events_file.write_text(json.dumps([to_builtins(e) for e in MEANT]))
    proc = subprocess.Popen([node, str(HERE / "encoder_server.js"), str(events_file)], cwd=HERE,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()  # the port (the server prints it once listening)
        if not line.strip():
            pytest.fail(f"node encoder server did not start: {proc.stderr.read().decode()[-1000:]}")
        yield f"http://127.0.0.1:{int(line)}/"
    finally:
        proc.stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.mark.parametrize("fmt", ["sse", "protobuf"])
def test_our_client_reads_the_official_encoder(node_encoder_url, fmt):
    agent = SyncHttpAgent(node_encoder_url, accept=fmt)
    assert list(agent.run(RUN)) == MEANT
    result = asyncio.run(HttpAgent(node_encoder_url, accept=fmt).run_agent(RUN))
    assert result.messages == example.meant_messages(RUN) and result.state == example.meant_state


@pytest.mark.parametrize("path", ["/agent", "/idle", "/reference"])
@pytest.mark.parametrize("fmt", ["sse", "protobuf"])
def test_our_client_reads_our_and_the_reference_server(base_url, path, fmt):
    agent = HttpAgent(base_url + path, accept=fmt)

    async def main():
        return [e async for e in agent.run(RUN)], await agent.run_agent(RUN)

    events, result = asyncio.run(main())
    assert events == MEANT
    assert result.messages == example.meant_messages(RUN) and result.state == example.meant_state


# -- examples/fastapi_server.py: the reference's server pattern, after the one-import swap ------

FASTAPI_RUN = core.RunAgentInput(thread_id="t1", run_id="r1", messages=[core.UserMessage(id="u1", content="hi")])


@pytest.fixture(scope="module")
def fastapi_url():
    with serve(fastapi_server.app) as url:
        yield url + "/"


@pytest.mark.parametrize("fmt", ["sse", "protobuf"])
def test_official_client_reads_the_fastapi_example(node, fastapi_url, fmt):
    got = official_client_with(node, fastapi_url, fmt, FASTAPI_RUN)
    # encode() + get_content_type() always agree: SSE, even for a protobuf Accept.
    assert got["contentType"].startswith("text/event-stream")
    meant = fastapi_server.script(FASTAPI_RUN)
    # What each event means on the wire: the Python reference's bytes for the same event
    # (pydantic's JSON mode for the datetime and the UUID in the state).
    ref = RefEncoder()
    assert got["events"] == [json.loads(ref.encode(to_ag_ui(e))[len("data: "):]) for e in meant]
    assert got["state"] == fastapi_server.meant_state()
    assert got["messages"] == [to_builtins(m) for m in fastapi_server.meant_messages(FASTAPI_RUN)]


# -- EventEncoder: every pairing of a label with a writer -----------------------------------------

PAIRING_WRITERS = ["encode", "encode_binary", "encode_many", "encode_protobuf"]
PAIRINGS = [(label, writer, fmt) for label in ("get_content_type", "get_binary_content_type")
            for writer in PAIRING_WRITERS for fmt in ("sse", "protobuf")]


def test_official_client_reads_every_encoder_pairing(node, base_url):
    """Each pairing, label first (as servers do), with an SSE and a protobuf Accept: the
    official HttpAgent reads every event and the same final messages and state, or the
    encoder refused the pairing at its first write, before any byte was sent (only
    protobuf bytes under an SSE label, SSE text under a protobuf one)."""
    import httpx

    run_input = json.loads(event_to_json_bytes(RUN))
    runs = []
    for label, writer, fmt in PAIRINGS:
        url = f"{base_url}/pairing?label={label}&writer={writer}"
        accept = "text/event-stream" if fmt == "sse" else "application/vnd.ag-ui.event+proto"
        answer = httpx.post(url, content=event_to_json_bytes(RUN), headers={"accept": accept})
        labelled = "text/event-stream" if label == "get_content_type" or fmt == "sse" else "application/vnd.ag-ui.event+proto"
        refused = answer.status_code == 500
        sse = labelled == "text/event-stream"
        assert refused == ((writer == "encode_protobuf" and sse) or (writer == "encode" and not sse)), (label, writer, fmt)
        if refused:
            assert answer.text.startswith("this encoder's output is")
        else:
            runs.append((label, writer, fmt, labelled))
    proc = subprocess.run([node, str(HERE / "client_runs.js")], capture_output=True, timeout=NODE_TIMEOUT, cwd=HERE,
                          input=json.dumps({"input": run_input, "runs": [[f"{base_url}/pairing?label={la}&writer={w}", f]
                                                                         for la, w, f, _ in runs]}).encode())
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    results = json.loads(proc.stdout)
    assert len(results) == len(runs) == 12
    for (label, writer, fmt, labelled), got in zip(runs, results):
        assert "error" not in got, (label, writer, fmt, got["error"])
        assert got["contentType"].split(";")[0] == labelled, (label, writer, fmt)
        assert [decode_event(json.dumps(e)) for e in got["events"]] == MEANT, (label, writer, fmt)
        assert got["messages"] == [to_builtins(m) for m in example.meant_messages(RUN)]
        assert got["state"] == example.meant_state
