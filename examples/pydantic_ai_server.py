"""pydantic-ai's own AG-UI endpoint, with agui-fast's encoder swapped in.

pydantic-ai's adapter (``pydantic_ai.ui.ag_ui``) builds ``ag_ui.core`` events and encodes
each one with ``ag_ui.encoder.EventEncoder``, which it imports into
``pydantic_ai.ui.ag_ui._event_stream``. ``use_agui_fast_encoder()`` replaces that one name;
agui-fast's ``EventEncoder`` encodes the reference's pydantic events too, byte for byte the
same (``tests/test_framework_pydantic_ai.py`` checks it, state holding a ``datetime``, a
``UUID``, a ``set`` and a ``Decimal`` included). The events themselves stay ``ag_ui``
objects: the adapter builds them and checks ``isinstance(x, ag_ui.core.BaseEvent)``.

The agent runs offline on pydantic-ai's ``FunctionModel``: it thinks, streams awkward text
deltas (CR LF, ``data: `` inside text, U+2028, emoji, a long delta), calls a tool whose
result carries AG-UI state events, then answers.

Needs ``pip install 'pydantic-ai-slim[ag-ui]'`` (Python >= 3.11).

Run:  python examples/pydantic_ai_server.py [--port 8000] [--reference]
      curl -N -X POST localhost:8000/ -H 'content-type: application/json' \\
           -d '{"threadId":"t1","runId":"r1","state":{},"messages":[{"id":"u1","role":"user","content":"hi"}],"tools":[],"context":[],"forwardedProps":{}}'
"""

from __future__ import annotations

import argparse
import datetime
import uuid
from decimal import Decimal
from typing import Any, AsyncIterator, Dict, List, Union

import uvicorn
from ag_ui.core import CustomEvent, StateDeltaEvent, StateSnapshotEvent
from ag_ui.encoder import EventEncoder as ReferenceEncoder
from fastapi import FastAPI, Request
from fastapi.responses import Response
from pydantic_ai import Agent, ToolReturn
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingCalls,
    DeltaThinkingPart,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
)
from pydantic_ai.ui.ag_ui import AGUIAdapter
from pydantic_ai.ui.ag_ui import _event_stream as adapter_stream

from agui_fast.encoder import EventEncoder

AT = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc)
SESSION = uuid.UUID("12345678-1234-5678-1234-567812345678")
FIRST_TEXT = ["Hello!\r\nThis line ended with CR LF; ", "data: this is text, not a new SSE field\n\n",
              "line\u2028separator, ", "emoji 🎉 👩‍💻 🇫🇷, ", "a long delta: " + "lorem ipsum " * 500]
FINAL_TEXT = ["Found ", "3 results", " \u2029 done."]


def use_agui_fast_encoder(enabled: bool = True) -> None:
    """Make pydantic-ai's AG-UI adapter encode with agui-fast (or, False, the reference)."""
    adapter_stream.EventEncoder = EventEncoder if enabled else ReferenceEncoder


use_agui_fast_encoder()  # at import, so `uvicorn pydantic_ai_server:app` serves with it too


async def model(messages: List[ModelMessage], info: AgentInfo) -> AsyncIterator[Union[str, DeltaToolCalls, DeltaThinkingCalls]]:
    """A scripted streaming model: reason, talk, call ``lookup``; after its result, answer."""
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
        for delta in FINAL_TEXT:
            yield delta
        return
    yield {0: DeltaThinkingPart(content="The user said hi; ")}
    yield {0: DeltaThinkingPart(content="look something up.")}
    for delta in FIRST_TEXT:
        yield delta
    yield {1: DeltaToolCall(name="lookup", json_args='{"query": "AG-UI', tool_call_id="call-1")}
    yield {1: DeltaToolCall(json_args=' protocol", "limit": 3}')}


agent = Agent(FunctionModel(stream_function=model))


@agent.tool_plain
def lookup(query: str, limit: int) -> ToolReturn:
    """Search; the result also updates the UI's state (values pydantic writes in JSON mode)."""
    return ToolReturn(
        return_value={"query": query, "limit": limit, "at": AT},
        metadata=[
            StateSnapshotEvent(snapshot={"started_at": AT, "session": SESSION, "tags": {"search"}, "cost": Decimal("0.50"), "steps": []}),
            StateDeltaEvent(delta=[{"op": "add", "path": "/steps/-", "value": {"name": "lookup", "on": AT.date(), "id": SESSION}}]),
            CustomEvent(name="progress", value={"took": datetime.timedelta(seconds=1.5), "run": SESSION}),
        ],
    )


app = FastAPI(title="pydantic-ai AG-UI agent (agui-fast encoder)")


@app.post("/")
async def run_agent(request: Request) -> Response:
    # pydantic-ai's documented endpoint: it validates the body (invalid: 422) and streams.
    return await AGUIAdapter.dispatch_request(request, agent=agent)


RUN_BODY: Dict[str, Any] = {
    "threadId": "t1", "runId": "r1", "state": {}, "messages": [{"id": "u1", "role": "user", "content": "hi"}],
    "tools": [], "context": [], "forwardedProps": {},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--reference", action="store_true", help="encode with ag_ui's EventEncoder instead")
    args = parser.parse_args()
    use_agui_fast_encoder(not args.reference)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
