"""An AG-UI agent server written the reference SDK's way, after the one-import swap.

With ag-ui-protocol the two imports below read ``from ag_ui.core import ...`` and
``from ag_ui.encoder import EventEncoder``; nothing else changes: the request body is a
``RunAgentInput`` (FastAPI validates it: an invalid body gets 422), and every event goes out
through ``encoder.encode`` with ``media_type=encoder.get_content_type()``.

The "agent" is a script that exercises what real runs carry: awkward text deltas (CR LF,
``data: `` inside text, U+2028/U+2029, emoji, a long delta), reasoning, a tool call and its
result, a state snapshot and deltas holding a ``datetime`` and a ``UUID``, and a closing
messages snapshot.

Run:  python examples/fastapi_server.py [--host 127.0.0.1] [--port 8000]
      curl -N -X POST localhost:8000/ -H 'content-type: application/json' \\
           -d '{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}'
"""

from __future__ import annotations

import argparse
import datetime
import uuid
from typing import List

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from agui_fast.core import (  # was: from ag_ui.core import ...
    AddOperation,
    AssistantMessage,
    BaseEvent,
    BaseMessage,
    EventType,
    FunctionCall,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessage,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    ReplaceOperation,
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
)
from agui_fast.encoder import EventEncoder  # was: from ag_ui.encoder import EventEncoder

app = FastAPI(title="agui-fast example agent")

STARTED_AT = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc)
SESSION = uuid.UUID("12345678-1234-5678-1234-567812345678")
TEXT_DELTAS = [
    "Hello!\r\nThis line ended with CR LF; ",
    "data: this is text, not a new SSE field\n\n",
    "line\u2028separator and paragraph\u2029separator, ",
    "emoji 🎉 👩‍💻 🇫🇷, ",
    "a long delta: " + "lorem ipsum dolor sit amet " * 2000,
]
TOOL_ARGS = ['{"query": "AG-UI', ' protocol", ', '"limit": 3}']
REASONING = "The user said hi; look something up."


def script(input_data: RunAgentInput) -> List[BaseEvent]:
    """The events of one run, in order."""
    thread, run = input_data.thread_id, input_data.run_id
    msg_id, reasoning_id, tool_call_id, tool_msg_id = "m-assistant", "m-reasoning", "call-1", "m-tool"
    events: List[BaseEvent] = [
        RunStartedEvent(type=EventType.RUN_STARTED, thread_id=thread, run_id=run),
        StateSnapshotEvent(snapshot={"started_at": STARTED_AT, "session": SESSION, "steps": [], "count": 0}),
        StepStartedEvent(step_name="think"),
        ReasoningStartEvent(message_id=reasoning_id),
        ReasoningMessageStartEvent(message_id=reasoning_id),
        ReasoningMessageContentEvent(message_id=reasoning_id, delta=REASONING),
        ReasoningMessageEndEvent(message_id=reasoning_id),
        ReasoningEndEvent(message_id=reasoning_id),
        StepFinishedEvent(step_name="think"),
        TextMessageStartEvent(message_id=msg_id, role="assistant"),
    ]
    events += [TextMessageContentEvent(message_id=msg_id, delta=d) for d in TEXT_DELTAS]
    events += [
        TextMessageEndEvent(message_id=msg_id),
        ToolCallStartEvent(tool_call_id=tool_call_id, tool_call_name="search", parent_message_id=msg_id),
    ]
    events += [ToolCallArgsEvent(tool_call_id=tool_call_id, delta=d) for d in TOOL_ARGS]
    events += [
        ToolCallEndEvent(tool_call_id=tool_call_id),
        ToolCallResultEvent(message_id=tool_msg_id, tool_call_id=tool_call_id, content="3 results", role="tool"),
        StateDeltaEvent(
            delta=[
                AddOperation(path="/steps/-", value={"name": "search", "at": STARTED_AT, "id": SESSION}),
                ReplaceOperation(path="/count", value=1),
            ]
        ),
        MessagesSnapshotEvent(
            messages=[
                *input_data.messages,
                AssistantMessage(
                    id=msg_id,
                    content="".join(TEXT_DELTAS),
                    tool_calls=[ToolCall(id=tool_call_id, function=FunctionCall(name="search", arguments="".join(TOOL_ARGS)))],
                ),
                ToolMessage(id=tool_msg_id, tool_call_id=tool_call_id, content="3 results"),
            ]
        ),
        RunFinishedEvent(type=EventType.RUN_FINISHED, thread_id=thread, run_id=run),
    ]
    return events


def meant_state() -> dict:
    """The state a client ends with, as JSON: the snapshot and deltas applied (pydantic's JSON
    mode wrote the datetime and the UUID as strings)."""
    at, session = STARTED_AT.isoformat().replace("+00:00", "Z"), str(SESSION)
    return {"started_at": at, "session": session, "steps": [{"name": "search", "at": at, "id": session}], "count": 1}


def meant_messages(input_data: RunAgentInput) -> List[BaseMessage]:
    """The messages a client ends with: the closing snapshot's, plus the streamed reasoning
    message (the reference client keeps reasoning messages a snapshot without any omits)."""
    snapshot = script(input_data)[-2].messages
    return [*input_data.messages, ReasoningMessage(id="m-reasoning", content=REASONING), *snapshot[len(input_data.messages):]]


@app.post("/")
async def run_agent(input_data: RunAgentInput, request: Request):
    encoder = EventEncoder(accept=request.headers.get("accept"))

    async def event_generator():
        for event in script(input_data):
            yield encoder.encode(event)

    return StreamingResponse(event_generator(), media_type=encoder.get_content_type())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
