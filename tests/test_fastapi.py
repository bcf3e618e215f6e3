"""FastAPI with the one-import swap (issue 11 §3): ``RunAgentInput`` and the other Structs
as request bodies (valid → 200, invalid → 422) and response models, and the app's
OpenAPI document, through Starlette's TestClient."""

from typing import List

import pytest

fastapi = pytest.importorskip("fastapi")
from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import StreamingResponse  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from agui_fast.core import (  # noqa: E402
    EventType,
    Message,
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    UserMessage,
)
import agui_fast.core as ours_core  # noqa: E402
from agui_fast.decoder import decode_sse  # noqa: E402
from agui_fast.encoder import EventEncoder  # noqa: E402

app = FastAPI()


@app.post("/run")
async def run(input_data: RunAgentInput, request: Request):
    # the reference's server pattern, after `from agui_fast.core import ...`
    encoder = EventEncoder(accept=request.headers.get("accept"))

    async def events():
        yield encoder.encode(RunStartedEvent(type=EventType.RUN_STARTED, thread_id=input_data.thread_id, run_id=input_data.run_id))
        for m in input_data.messages:
            yield encoder.encode(TextMessageContentEvent(message_id=m.id, delta=f"{m.role}: {m.content}"))
        yield encoder.encode(RunFinishedEvent(thread_id=input_data.thread_id, run_id=input_data.run_id))

    return StreamingResponse(events(), media_type=encoder.get_content_type())


@app.post("/echo")
async def echo(message: UserMessage) -> UserMessage:
    return message


@app.post("/messages", response_model=List[Message])
async def messages(items: List[Message]):
    return list(reversed(items))


@app.post("/input")
async def echo_input(input_data: RunAgentInput) -> RunAgentInput:
    return input_data


client = TestClient(app)
BODY = {
    "threadId": "t1",
    "runId": "r1",
    "state": {"n": 1},
    "messages": [{"id": "u1", "role": "user", "content": "hello"}],
    "tools": [],
    "context": [],
    "forwardedProps": {},
}


def test_run_agent_input_is_a_request_body():
    r = client.post("/run", json=BODY, headers={"accept": "text/event-stream"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/event-stream")
    events = decode_sse(r.content)
    assert [e.type for e in events] == [EventType.RUN_STARTED, EventType.TEXT_MESSAGE_CONTENT, EventType.RUN_FINISHED]
    assert events[0].thread_id == "t1" and events[1].delta == "user: hello"


@pytest.mark.parametrize(
    "body,loc",
    [
        ({k: v for k, v in BODY.items() if k != "runId"}, ["body", "runId"]),
        # an unknown tag is pydantic's union_tag_invalid, located at the union as the reference does
        ({**BODY, "messages": [{"id": "u1", "role": "robot", "content": "x"}]}, ["body", "messages", 0]),
        ({**BODY, "threadId": 5}, ["body", "threadId"]),
    ],
)
def test_invalid_bodies_get_422_naming_the_field(body, loc):
    r = client.post("/run", json=body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert detail[0]["loc"] == loc, detail


def test_not_an_object_gets_422():
    assert client.post("/run", json=[1, 2]).status_code == 422


def _reference_client():
    import ag_ui.core as ref

    ref_app = FastAPI()

    @ref_app.post("/run")
    async def ref_run(input_data: ref.RunAgentInput):
        return {"ok": True}

    return TestClient(ref_app)


# The bodies whose 422 is the reference's: the same error types at the same locations.
SAME_422 = {
    "missing member": {k: v for k, v in BODY.items() if k != "runId"},
    "unknown message role": {**BODY, "messages": [{"id": "u1", "role": "robot", "content": "x"}]},
    "message without role": {**BODY, "messages": [{"id": "u1", "content": "x"}]},
    "int for str": {**BODY, "threadId": 5},
    "object for list": {**BODY, "messages": {"a": 1}},
    "message without id": {**BODY, "messages": [{"role": "user", "content": "x"}]},
    "int for an optional str": {**BODY, "parentRunId": 5},
    "str for list": {**BODY, "tools": "x"},
    "null": None,
}


@pytest.mark.parametrize("name", sorted(SAME_422))
def test_invalid_bodies_get_the_references_422(name):
    body = SAME_422[name]
    ours_r, ref_r = client.post("/input", json=body), _reference_client().post("/run", json=body)
    assert ours_r.status_code == ref_r.status_code == 422
    shape = lambda r: [(e["type"], e["loc"]) for e in r.json()["detail"]]  # noqa: E731
    assert shape(ours_r) == shape(ref_r)
    if ours_r.json()["detail"][0]["type"] != "missing":
        assert [e["msg"] for e in ours_r.json()["detail"]] == [e["msg"] for e in ref_r.json()["detail"]]


def test_valid_bodies_record_what_was_given():
    """A body validated in one msgspec conversion still records what pydantic counts as
    set: members given at their default (null) and the tags given, at every level."""
    import ag_ui.core as ref
    from pydantic import TypeAdapter

    body = {
        **BODY,
        "parentRunId": None,
        "messages": [
            {"id": "u1", "role": "user", "content": "hello", "name": None},
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "a2", "role": "assistant", "toolCalls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "r1", "role": "reasoning", "content": "x"},
        ],
    }

    def sets(x):
        msgs = [sorted(m.model_fields_set) for m in x.messages]
        calls = [sorted(c.model_fields_set) for m in x.messages for c in (getattr(m, "tool_calls", None) or [])]
        return sorted(x.model_fields_set), msgs, calls

    for validate in (lambda M: TypeAdapter(M.RunAgentInput).validate_python(body), lambda M: M.RunAgentInput.model_validate(body)):
        assert sets(validate(ours_core)) == sets(validate(ref))


def test_structs_as_response_models():
    r = client.post("/echo", json={"id": "u1", "role": "user", "content": "hi", "encryptedValue": "e"})
    assert r.status_code == 200 and r.json() == {"id": "u1", "role": "user", "encryptedValue": "e", "content": "hi"}
    r = client.post("/messages", json=[{"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}, {"id": "u", "role": "user", "content": "x"}])
    assert r.status_code == 200, r.text
    assert r.json() == [
        {"id": "u", "role": "user", "content": "x"},
        {"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ]
    r = client.post("/input", json=BODY)
    assert r.status_code == 200 and r.json() == BODY


def test_openapi_document_shows_the_wire_shape():
    schema = app.openapi()
    body = schema["paths"]["/run"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/RunAgentInput"}
    run_input = schema["components"]["schemas"]["RunAgentInput"]
    assert {"threadId", "runId", "messages"} <= set(run_input["properties"])
    assert set(run_input["required"]) == {"threadId", "runId", "messages"}


# -- examples/fastapi_server.py under uvicorn ---------------------------------------------

import datetime  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import httpx  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from agui_fast.core import Event, StateSnapshotEvent  # noqa: E402
from agui_fast.patch import apply_patch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fastapi_server.py"
RUN_BODY = {"threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}

@pytest.fixture(scope="module")
def example_server():
    pytest.importorskip("uvicorn")
    # The example takes --port only. The port stays reserved until the child listens on it:
    # our socket is bound (not listening) with SO_REUSEADDR, which lets only a listener that
    # also sets it (asyncio's create_server) bind beside it, and keeps the kernel from handing
    # the port to any other process, so concurrent suites never race for it.
    with socket.socket() as reserved:
        reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        reserved.bind(("127.0.0.1", 0))
        port = reserved.getsockname()[1]
        proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--port", str(port)], env=dict(os.environ),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/docs", timeout=1.0)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    raise RuntimeError(f"example server did not start: {proc.stderr.read().decode()[-2000:]}")
                time.sleep(0.2)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _expected(events):
    """What each scripted event means on the wire: pydantic's JSON mode of its values."""
    adapter = TypeAdapter(Event)
    return [adapter.dump_python(e, mode="json", by_alias=True) for e in events]


def test_example_server_streams_the_script(example_server):
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import fastapi_server as example
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    from agui_fast.core import RunAgentInput

    meant = example.script(RunAgentInput.model_validate(RUN_BODY))
    with httpx.Client(timeout=30) as client:
        r = client.post(example_server, json=RUN_BODY, headers={"accept": "text/event-stream"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    got = decode_sse(r.content)
    assert [e.model_dump(by_alias=True) for e in got] == _expected(meant)

    # what a client ends with: the text, the state after the deltas, the messages
    text = "".join(e.delta for e in got if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "".join(example.TEXT_DELTAS)
    state = None
    for e in got:
        if e.type == EventType.STATE_SNAPSHOT:
            state = e.snapshot
        elif e.type == EventType.STATE_DELTA:
            state = apply_patch(state, e.delta)
    at = example.STARTED_AT.isoformat().replace("+00:00", "Z")
    assert state == {"started_at": at, "session": str(example.SESSION), "steps": [{"name": "search", "at": at, "id": str(example.SESSION)}], "count": 1}
    messages = [e for e in got if e.type == EventType.MESSAGES_SNAPSHOT][-1].messages
    assert [(m.id, m.role) for m in messages] == [("u1", "user"), ("m-assistant", "assistant"), ("m-tool", "tool")]
    assert messages[1].content == text and json.loads(messages[1].tool_calls[0].function.arguments) == {"query": "AG-UI protocol", "limit": 3}


def test_example_server_refuses_invalid_bodies(example_server):
    r = httpx.post(example_server, json={"threadId": "t1", "messages": []}, timeout=30)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "runId"]


def test_the_encoder_writes_datetimes_inside_state():
    """Issue 11 §2: a datetime in graph state no longer stops a stream (pydantic's JSON mode)."""
    at = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    assert EventEncoder().encode(StateSnapshotEvent(snapshot={"at": at})) == 'data: {"type":"STATE_SNAPSHOT","snapshot":{"at":"2026-01-01T00:00:00Z"}}\n\n'


@pytest.mark.parametrize("accept", ["sse", "protobuf"])
def test_our_http_agent_runs_the_example(example_server, accept):
    """Our HttpAgent against the example FastAPI server written the reference's way: with a
    protobuf Accept the server (encode + get_content_type) still answers SSE, labelled so."""
    from agui_fast.client import SyncHttpAgent
    from agui_fast.core import RunAgentInput

    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import fastapi_server as example
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    result = SyncHttpAgent(example_server, accept=accept).run_agent(RunAgentInput.model_validate(RUN_BODY))
    at = example.STARTED_AT.isoformat().replace("+00:00", "Z")
    assert result.state == {"started_at": at, "session": str(example.SESSION), "steps": [{"name": "search", "at": at, "id": str(example.SESSION)}], "count": 1}
    # The reference client keeps the streamed reasoning message: the snapshot has none.
    assert [m.id for m in result.messages] == ["u1", "m-reasoning", "m-assistant", "m-tool"]
    assert result.messages[2].content == "".join(example.TEXT_DELTAS)
