"""The official client conformance corpus (tests/vectors/conformance, and the corpus folder
beside the repository when present) through every client lane of the project:

- ``http-async`` / ``http-sync``: a real local HTTP server (uvicorn) serves the fixture's
  stream as SSE frames to ``HttpAgent.run_agent`` / ``SyncHttpAgent.run_agent``;
- ``replay`` / ``applier``: the same events through ``stream.replay(verify=True)`` and
  ``stream.EventApplier(verify=True)`` one event at a time;
- ``replay_log``: ``stream.replay_log`` of the SSE bytes.

Each lane checks every ``expect`` key it can observe (tests/conformance.py reads them) and
skips, naming the reason, the keys it cannot (a replay sends no request).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, Dict, List

import pytest

from agui_fast import _native, stream
from agui_fast.errors import AgentRunError, AguiError

import conformance
from conformance import Fixture, Observation

FIXTURES = conformance.load_fixtures()
LANES = ["http-async", "http-sync", "replay", "applier", "replay_log"]


def _wire(value: Any) -> Any:
    return json.loads(_native.dumps(value))


def _start(fixture: Fixture) -> Dict[str, Any]:
    """The run input a fixture starts from."""
    return {"threadId": f"t-{fixture.name}", "runId": "r-conformance", "messages": [], **fixture.input}


# -- HTTP lanes ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server():
    pytest.importorskip("httpx")
    from servers import serve

    import httpx

    app = conformance.FixtureServer()
    with serve(app) as url, httpx.Client(verify=False) as client:
        yield app, url, client


#: The protocol version the lanes declare and compare (the corpus is 1.1's).
PROTOCOL_VERSION = "1.1"


def http_lane(fixture: Fixture, server: Any, asynchronous: bool) -> Observation:
    import httpx

    from agui_fast.client import HttpAgent, SyncHttpAgent

    app, url, sync_client = server
    token = uuid.uuid4().hex
    app.add(token, fixture.sse())
    obs = Observation()
    options = {"max_protocol_version": fixture.era, "protocol_version": PROTOCOL_VERSION}
    delivered: List[Any] = []

    async def run_async() -> Any:
        # A client of our own without TLS: an agent's default client loads the CA bundle
        # (~0.1 s a run); the lane is about the stream, not the client's construction.
        async with httpx.AsyncClient(verify=False) as client:
            agent = HttpAgent(f"{url}/{token}", client=client, **options)
            return await agent.run_agent(_start(fixture), on_event=delivered.append)

    try:
        if asynchronous:
            result = asyncio.run(run_async())
        else:
            agent = SyncHttpAgent(f"{url}/{token}", client=sync_client, **options)
            result = agent.run_agent(_start(fixture), on_event=delivered.append)
    except AgentRunError as exc:
        obs.run_error = exc.event.message
        obs.messages, obs.state, obs.warnings = _wire(exc.messages), exc.state, [w.message for w in exc.warnings]
    except AguiError as exc:
        obs.error = exc
        obs.warnings = [w.message for w in exc.warnings]
        obs.why["messages"] = obs.why["messageCount"] = obs.why["state"] = "run_agent raised: no result"
    else:
        obs.messages, obs.state, obs.warnings = _wire(result.messages), result.state, [w.message for w in result.warnings]
        assert all(isinstance(w.kind, str) for w in result.warnings)
    obs.events = [_wire(e) for e in delivered]
    if token in app.requests:
        obs.request = json.loads(app.requests[token])
    else:
        obs.why["request"] = obs.why["requestAbsentPaths"] = "nothing was sent"
    return obs


# -- replay lanes --------------------------------------------------------------------------


def _replay_start(fixture: Fixture) -> Dict[str, Any]:
    start = fixture.input
    return {"messages": start.get("messages", []), "state": start.get("state", {})}


def _no_request(obs: Observation, fixture: Fixture) -> Observation:
    obs.why["request"] = obs.why["requestAbsentPaths"] = "a replay sends no request"
    if {"request", "requestAbsentPaths"} & set(fixture.expect):
        # The fixture is about what a client sends: its warnings may be about the request.
        obs.why["warnings"] = obs.why["noWarnings"] = "the fixture's warnings may be about the request a replay does not send"
    return obs


def _run_error(obs: Observation) -> None:
    """The run's own failure, as a replay shows it: a RUN_ERROR reaching the reducer."""
    errors = [e for e in obs.events if e.get("type") == "RUN_ERROR"]
    obs.run_error = errors[-1].get("message") if errors else None


def _options(fixture: Fixture) -> Dict[str, Any]:
    return {"verify": True, "max_protocol_version": fixture.era, "protocol_version": PROTOCOL_VERSION}


def replay_lane(fixture: Fixture) -> Observation:
    obs = _no_request(Observation(), fixture)
    delivered: List[Any] = []
    try:
        r = stream.replay(fixture.stream, raw=True, on_event=delivered.append, **_options(fixture), **_replay_start(fixture))
    except AguiError as exc:
        obs.error = exc
        r = exc.replay
    obs.messages, obs.state = r.messages, r.state
    obs.warnings = [w.message for w in r.warnings]
    obs.events = delivered
    _run_error(obs)
    return obs


def applier_lane(fixture: Fixture) -> Observation:
    obs = _no_request(Observation(), fixture)
    start = _replay_start(fixture)
    delivered: List[Any] = []
    ap = stream.EventApplier(start["messages"], start["state"], raw=True, on_event=delivered.append, **_options(fixture))
    try:
        for event in fixture.stream:
            ap.apply(event)
    except AguiError as exc:
        obs.error = exc
    obs.messages, obs.state = ap.messages, ap.state
    obs.warnings = [w.message for w in ap.warnings]
    obs.events = delivered
    _run_error(obs)
    return obs


def replay_log_lane(fixture: Fixture) -> Observation:
    obs = _no_request(Observation(), fixture)
    for key in ("runError", "eventTypes", "eventTypesAbsent", "eventPaths", "eventAbsentPaths"):
        obs.why[key] = "replay_log hands out no events"
    if fixture.input.get("messages") or fixture.input.get("state") is not None:
        obs.why["messages"] = obs.why["messageCount"] = obs.why["state"] = "replay_log starts from no messages and state"
    try:
        r = stream.replay_log(b"".join(fixture.sse()), raw=True, **_options(fixture))
    except AguiError as exc:
        obs.error = exc
        r = exc.replay
    obs.messages, obs.state = r.messages, r.state
    obs.warnings = [w.message for w in r.warnings]
    return obs


def observe(lane: str, fixture: Fixture, server: Any) -> Observation:
    if lane == "http-async":
        return http_lane(fixture, server, True)
    if lane == "http-sync":
        return http_lane(fixture, server, False)
    return {"replay": replay_lane, "applier": applier_lane, "replay_log": replay_log_lane}[lane](fixture)


@pytest.mark.parametrize("lane", LANES)
@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_fixture(request: Any, lane: str, fixture: Fixture) -> None:
    srv = request.getfixturevalue("server") if lane.startswith("http") else None
    failures, skipped = conformance.check(fixture, observe(lane, fixture, srv))
    assert not failures, "\n".join(failures)


def test_the_corpus_is_read_whole() -> None:
    """The project's copy holds every fixture the corpus folder had when it was taken, and
    every fixture names only keys the lanes read."""
    assert len([f for f in FIXTURES if f.source == "vectors"]) >= 68
    problems = {f.id: f.problems() for f in FIXTURES if f.problems()}
    assert not problems


def tally(server: Any) -> Dict[str, Dict[str, int]]:
    """Pass counts per lane (all keys; MUST keys of non-era fixtures), for reports."""
    out: Dict[str, Dict[str, int]] = {}
    for lane in LANES:
        c = {"fixtures": 0, "pass": 0, "must_fixtures": 0, "must_pass": 0, "era": 0, "era_pass": 0}
        for f in FIXTURES:
            failures, _ = conformance.check(f, observe(lane, f, server if lane.startswith("http") else None))
            must_fail = [x for x in failures if x.split(":")[0] not in conformance.SHOULD_KEYS]
            c["fixtures"] += 1
            c["pass"] += not failures
            if conformance.level(f) == "era":
                c["era"] += 1
                c["era_pass"] += not failures
            else:
                c["must_fixtures"] += 1
                c["must_pass"] += not must_fail
        out[lane] = c
    return out


def failing(lane: str, server: Any) -> List[str]:
    out = []
    for f in FIXTURES:
        failures, _ = conformance.check(f, observe(lane, f, server if lane.startswith("http") else None))
        if failures:
            out.append(f"{f.name}: {failures}")
    return out
