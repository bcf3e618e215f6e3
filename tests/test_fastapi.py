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
        ({**BODY, "messages": [{"id": "u1", "role": "robot", "content": "x"}]}, ["body", "messages", 0, "role"]),
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
