"""``SyncHttpAgent.run_agent`` on the generated 100k-event run (``_stream_log.py``) served by
an httpx mock transport in 64 KiB chunks (no sockets: the client's own cost), against what a
Python user writes today with httpx and the pure-Python replayer (``_py_replayer.py``: the
body read, parsed with pydantic, applied in place), and against ``replay_log`` of the same
bytes (no HTTP at all: the floor). Group ``client_run_agent_100k`` (the ratio table of
conftest.py prints peer time / our time). ``run_agent`` verifies the sequence rules (its
default); the peer does not.
"""

from __future__ import annotations

import pytest

from _py_replayer import replay_sse_bytes
from _stream_log import generate_events, to_sse
from agui_fast import stream

httpx = pytest.importorskip("httpx")

from agui_fast.client import SyncHttpAgent  # noqa: E402

N = 100_000
CHUNK = 65536
RUN = {"threadId": "t", "runId": "r", "messages": []}


@pytest.fixture(scope="module")
def log() -> bytes:
    return to_sse(generate_events(N))


def _client(log: bytes) -> "httpx.Client":
    chunks = [log[i : i + CHUNK] for i in range(0, len(log), CHUNK)]

    def handler(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(chunks))

    return httpx.Client(transport=httpx.MockTransport(handler))


def _slow(benchmark, fn, rounds):
    return benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=0)


def test_run_agent_agui_fast(benchmark, log):
    benchmark.group = "client_run_agent_100k"
    agent = SyncHttpAgent("http://agent.test/run", client=_client(log))
    r = _slow(benchmark, lambda: agent.run_agent(RUN), 7)
    assert [m.id for m in r.messages] == [m.id for m in stream.replay_log(log).messages]


def test_run_agent_httpx_pure_python(benchmark, log):
    benchmark.group = "client_run_agent_100k"
    client = _client(log)

    def peer():
        with client.stream("POST", "http://agent.test/run", json=RUN) as response:
            return replay_sse_bytes(response.read(), atomic=False)

    _slow(benchmark, peer, 3)


def test_run_agent_replay_log_floor(benchmark, log):
    benchmark.group = "client_run_agent_100k"
    _slow(benchmark, lambda: stream.replay_log(log), 7)
