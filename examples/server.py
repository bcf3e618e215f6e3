"""A small AG-UI agent server streaming a scripted run with ``EventStreamResponse``.

    pip install ".[server]" uvicorn                # Starlette, and an ASGI server to run it
    uvicorn examples.server:app --port 8000        # or: python examples/server.py [port]

POST a ``RunAgentInput`` to ``/agent``: the reply is SSE, or protobuf when the Accept header
asks for ``application/vnd.ag-ui.event+proto``. The run has awkward text deltas (CR/LF,
``data:`` inside the text, U+2028, emoji, a long delta), a tool call and its result,
reasoning, a state snapshot and deltas, and a messages snapshot; ``meant_messages`` and
``meant_state`` are what any client applying it must end with (the interop tests check the
official TypeScript client and ours against them).
"""

import asyncio
import sys
from typing import Any, List

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from agui_fast import core
from agui_fast.asgi import EventStreamResponse, read_input

AWKWARD = ["Hello", ",\r\nworld", " data: not a frame\n\n", "\u2028line\u2029sep", " \U0001F600\U0001F680", "x" * 5000]
STATE = {"count": 0, "items": [], "user": {"name": "ada"}}


def script(run: core.RunAgentInput) -> List[Any]:
    """The run's events for ``run`` (its thread and run ids, its messages echoed first)."""
    t, r = run.thread_id, run.run_id
    return [
        core.RunStartedEvent(thread_id=t, run_id=r),
        core.MessagesSnapshotEvent(messages=list(run.messages)),
        core.StateSnapshotEvent(snapshot=STATE),
        core.ReasoningStartEvent(message_id="think1"),
        core.ReasoningMessageStartEvent(message_id="think1", role="reasoning"),
        core.ReasoningMessageContentEvent(message_id="think1", delta="The user wants "),
        core.ReasoningMessageContentEvent(message_id="think1", delta="a greeting."),
        core.ReasoningMessageEndEvent(message_id="think1"),
        core.ReasoningEndEvent(message_id="think1"),
        core.TextMessageStartEvent(message_id="a1", role="assistant"),
        *[core.TextMessageContentEvent(message_id="a1", delta=d) for d in AWKWARD],
        core.TextMessageEndEvent(message_id="a1"),
        core.ToolCallStartEvent(tool_call_id="call1", tool_call_name="lookup", parent_message_id="a1"),
        core.ToolCallArgsEvent(tool_call_id="call1", delta='{"q": "we'),
        core.ToolCallArgsEvent(tool_call_id="call1", delta='ather \\u2028"}'),
        core.ToolCallEndEvent(tool_call_id="call1"),
        core.ToolCallResultEvent(message_id="tool1", tool_call_id="call1", content="sunny, 21\u00b0C", role="tool"),
        core.StateDeltaEvent(delta=[
            {"op": "replace", "path": "/count", "value": 1},
            {"op": "add", "path": "/items/-", "value": {"id": 1, "text": "\U0001F600"}},
        ]),
        core.StateDeltaEvent(delta=[{"op": "add", "path": "/user/seen", "value": True}]),
        core.StepStartedEvent(step_name="finish"),
        core.StepFinishedEvent(step_name="finish"),
        core.RunFinishedEvent(thread_id=t, run_id=r),
    ]


def meant_messages(run: core.RunAgentInput) -> List[Any]:
    return [
        *run.messages,
        core.ReasoningMessage(id="think1", content="The user wants a greeting."),
        core.AssistantMessage(id="a1", content="".join(AWKWARD), tool_calls=[
            core.ToolCall(id="call1", function=core.FunctionCall(name="lookup", arguments='{"q": "weather \\u2028"}')),
        ]),
        core.ToolMessage(id="tool1", content="sunny, 21\u00b0C", tool_call_id="call1"),
    ]


meant_state = {"count": 1, "items": [{"id": 1, "text": "\U0001F600"}], "user": {"name": "ada", "seen": True}}


async def events(run: core.RunAgentInput):
    for event in script(run):
        yield event
        await asyncio.sleep(0)  # a real agent awaits its model between events


async def agent(request: Request):
    run = await read_input(request)  # a bad body is answered 422, naming the field
    return EventStreamResponse(events(run), accept=request.headers.get("accept"))


app = Starlette(routes=[Route("/agent", agent, methods=["POST"])])

if __name__ == "__main__":
    try:
        import uvicorn
    except ImportError:
        sys.exit("examples/server.py runs under uvicorn: pip install uvicorn")

    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
