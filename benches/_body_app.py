"""The request bodies of ``bench_server.py`` and the FastAPI app it serves them to: the same
endpoint written the documented way (``input_data: RunAgentInput``), once with
``agui_fast.core``'s class and once with ``ag_ui.core``'s, answering with the number of
messages (so the body is validated and read, and the response is the same small one)."""

from typing import Any, Dict, List

import ag_ui.core as ref
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

import agui_fast.core as ours

app = FastAPI()


@app.post("/ours")
async def run_ours(input_data: ours.RunAgentInput):
    return PlainTextResponse(str(len(input_data.messages)))


@app.post("/reference")
async def run_reference(input_data: ref.RunAgentInput):
    return PlainTextResponse(str(len(input_data.messages)))


def body(n: int) -> Dict[str, Any]:
    """A run input of ``n`` messages: user, assistant with a tool call, tool, in turn."""
    messages: List[Dict[str, Any]] = []
    for i in range(n):
        if i % 3 == 0:
            messages.append({"id": f"m{i}", "role": "user", "content": f"hello there, question {i}"})
        elif i % 3 == 1:
            call = {"id": f"tc{i}", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}}
            messages.append({"id": f"m{i}", "role": "assistant", "content": f"reply {i}", "toolCalls": [call]})
        else:
            messages.append({"id": f"m{i}", "role": "tool", "content": "result", "toolCallId": f"tc{i - 1}"})
    tool = {"name": "search", "description": "web search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
    return {"threadId": "t", "runId": "r", "state": {"step": 1}, "messages": messages, "tools": [tool], "context": [], "forwardedProps": {}}
