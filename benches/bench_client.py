"""Client: reading an agent's response as ``HttpAgent`` does, against what a Python user
writes with httpx today (``client.stream``, an httpx-sse style line parser,
``TypeAdapter(ag_ui.core.Event)`` per event, and the pure-Python replayer for the run's
messages and state). The response comes from httpx's ``MockTransport`` in 16 KiB chunks,
so both sides pay the same transport and the client's own work is what differs."""

from __future__ import annotations

import httpx

from _data import LOG_EVENTS, generate_events, to_sse
from _interleave import against
from _py_replayer import EVENT, PyReplayer
from agui_fast.client import SyncHttpAgent
from agui_fast.core import RunAgentInput
from agui_fast.sse import decode_sse

N = LOG_EVENTS // 5
K = f"{N // 1000}k"
BODY = to_sse(generate_events(N, seed=3))
CHUNK = 16 * 1024
INPUT = RunAgentInput(thread_id="thread-bench", run_id="run-1", state={}, messages=[], tools=[], context=[],
                      forwarded_props={})


def _client() -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        chunks = (BODY[i:i + CHUNK] for i in range(0, len(BODY), CHUNK))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunks)

    return httpx.Client(transport=httpx.MockTransport(handler), base_url="http://agent")


def _peer_events(client: httpx.Client):
    """httpx-sse's rules: ``data:`` lines joined, a blank line dispatches."""
    validate = EVENT.validate_json
    with client.stream("POST", "/", json=INPUT.model_dump(mode="json", by_alias=True)) as r:
        data = []
        for line in r.iter_lines():
            if not line:
                if data:
                    yield validate("\n".join(data))
                    data = []
            elif line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
        if data:
            yield validate("\n".join(data))


def test_run_events(benchmark):
    """``SyncHttpAgent.run``: the events of a response as they arrive, typed."""
    benchmark.group = "client/run_events"
    client = _client()
    agent = SyncHttpAgent("http://agent/", client=client)
    out = against(benchmark, lambda: list(agent.run(INPUT)), {"httpx + pure Python + pydantic": lambda: list(_peer_events(client))},
                  rounds=10, min_round=0, events=N)
    assert len(out) == len(decode_sse(BODY))


def test_run_agent(benchmark):
    """``SyncHttpAgent.run_agent``: the run applied (messages and state), against the same
    peer applying its events with the pure-Python replayer (patches in place)."""
    benchmark.group = "client/run_agent"
    client = _client()
    agent = SyncHttpAgent("http://agent/", client=client)

    def peer():
        r = PyReplayer([], {}, atomic=False)
        for e in _peer_events(client):
            r.push(e)
        return r

    result = against(benchmark, lambda: agent.run_agent(INPUT), {"httpx + pure Python replayer": peer},
                     rounds=10, min_round=0, events=N,
                     readme={"httpx + pure Python replayer": f"`SyncHttpAgent.run_agent`: a {K}-event run, messages and state"})
    assert [m.id for m in result.messages] == [m["id"] for m in peer().dump_messages()]
