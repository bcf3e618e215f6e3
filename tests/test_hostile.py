"""Hostile inputs that once gave way, each a cheap regression test: what a small input
may make the library hold is bounded, and bad values end in the project's own errors."""

import gzip
import json

import httpx

from agui_fast import stream
from agui_fast.client import SyncHttpAgent
from agui_fast.core import RunAgentInput

UNKNOWN = b'data: {"type":"X"}\n\n'


def test_a_flood_of_warnings_keeps_the_first_hundred_thousand():
    # A few KB of gzip held millions of events that each warn: every warning was kept
    # (about 250 bytes each in Python) until the process ran out of memory.
    n = 100_050
    log = gzip.compress(UNKNOWN * n)
    assert len(log) < 20_000
    for r in (stream.replay_log(log), stream.replay([b'{"type":"X"}'] * n)):
        assert len(r.warnings) == 100_001
        assert r.warnings[0][0] == 0 and "Dropping unrecognised event 'X'" in r.warnings[0][1]
        assert r.warnings[-1] == (100_000, "more than 100000 warnings: the later ones are not kept (max_warnings=100000)")
    # An incremental replay counts across its calls.
    ap = stream.EventApplier()
    for _ in range(2):
        ap.apply_many([{"type": "X"}] * (n // 2))
    assert len(ap.warnings) == 100_001 and ap.warnings[-1][1].startswith("more than 100000 warnings")
    assert ap.apply({"type": "X"}).warnings == ()


def test_a_str_state_is_sent_as_a_string():
    sent = []

    def handler(request):
        sent.append(json.loads(request.content))
        body = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    agent = SyncHttpAgent("http://agent.test/run", client=httpx.Client(transport=httpx.MockTransport(handler)))
    result = agent.run_agent(RunAgentInput(thread_id="t", run_id="r", state="hello", messages=[], tools=[], context=[], forwarded_props=None))
    assert sent[0]["state"] == "hello"
    assert result.state == "hello"
