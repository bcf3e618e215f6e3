"""The official AG-UI client conformance corpus as data: loading the fixtures, reading their
``expect`` keys against what a lane observed, and the local HTTP server that serves a
fixture's stream as SSE frames (tests/test_conformance.py runs the lanes).

A fixture (tests/vectors/conformance/README.md) is one event stream, an optional starting
point (``input``), an optional peer era (``client.maxProtocolVersion``) and ``expect``: what
any client must show after consuming the stream. Every key is read here; a key this module
does not know fails the fixture (a new rule must be taught, never skipped in silence).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
VECTORS = HERE / "vectors" / "conformance" / "streams.jsonl"
# The corpus folder beside the repository (read when present: it may hold fixtures the
# project's own copy does not).
SHARED = HERE.parent.parent / "shared" / "conformance" / "streams"

#: Top-level keys of a fixture file. Prose and per-client overrides are read by no lane.
TOP_KEYS = {"name", "area", "description", "specPage", "kill", "stream", "expect", "expectOverrides", "client", "input", "commit"}
#: What ``client`` may pin.
CLIENT_KEYS = {"maxProtocolVersion"}
#: ``expect`` keys, with their level: SHOULD-level keys hold the client's warnings.
MUST_KEYS = {
    "outcome",
    "errorContains",
    "runError",
    "eventTypes",
    "eventTypesAbsent",
    "eventPaths",
    "eventAbsentPaths",
    "messageCount",
    "messages",
    "state",
    "request",
    "requestAbsentPaths",
}
SHOULD_KEYS = {"warnings", "noWarnings"}

#: Where the corpus pins the reference TypeScript client against the specification (its
#: README names the fixture): the project follows the specification, so the fixture's
#: whole ``expect`` is replaced by the specification's reading of the same stream.
SPEC_OVER_REFERENCE: Dict[str, Dict[str, Any]] = {
    # An unrecognised member of a closed string set (a message role) is stripped with a
    # warning, as the spec's processing rules say; TEXT_MESSAGE_START.role is optional, so
    # the message opens with the default role.
    "unknown-enum-value-role-fatal": {
        "outcome": "completed",
        "warnings": ["/role"],
        "messageCount": 1,
        "messages": [{"role": "assistant", "content": "the role above is the only defect in this stream"}],
    },
}


@dataclass
class Fixture:
    name: str
    source: str  # "vectors" or "shared"
    data: Dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.source}:{self.name}"

    @property
    def stream(self) -> List[Any]:
        return self.data["stream"]

    @property
    def expect(self) -> Dict[str, Any]:
        return dict(SPEC_OVER_REFERENCE.get(self.name, self.data["expect"]))

    @property
    def era(self) -> Optional[str]:
        return (self.data.get("client") or {}).get("maxProtocolVersion")

    @property
    def input(self) -> Dict[str, Any]:
        return dict(self.data.get("input") or {})

    def sse(self) -> List[bytes]:
        """The stream as SSE frames, one an event, each event's JSON as written."""
        return [b"data: " + json.dumps(e).encode() + b"\n\n" for e in self.stream]

    def problems(self) -> List[str]:
        """Keys no lane knows how to read: a fixture using one fails loudly."""
        out = [f"unknown top-level key {k!r}" for k in self.data if k not in TOP_KEYS]
        out += [f"unknown client key {k!r}" for k in (self.data.get("client") or {}) if k not in CLIENT_KEYS]
        out += [f"unknown expect key {k!r}" for k in self.data["expect"] if k not in MUST_KEYS | SHOULD_KEYS]
        if self.data["expect"].get("outcome") not in ("completed", "failed"):
            out.append(f"unknown outcome {self.data['expect'].get('outcome')!r}")
        return out


def load_fixtures() -> List[Fixture]:
    """The project's copy, then the corpus folder beside the repository (a fixture already in
    the copy with the same content runs once)."""
    out: List[Fixture] = []
    seen: Dict[str, Any] = {}
    for line in VECTORS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            data = json.loads(line)
            out.append(Fixture(data["name"], "vectors", data))
            seen[data["name"]] = _comparable(data)
    if SHARED.is_dir():
        for path in sorted(SHARED.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            name = data.get("name", path.stem)
            if seen.get(name) != _comparable(data):
                out.append(Fixture(name, "shared", data))
    return out


def _comparable(data: Dict[str, Any]) -> Any:
    return {k: data.get(k) for k in ("client", "input", "stream", "expect")}


@dataclass
class Observation:
    """What a lane saw; ``why`` names the keys the lane cannot observe (skipped, with the
    reason)."""

    error: Optional[BaseException] = None  # the client's rejection of the stream
    run_error: Optional[str] = None  # the run's own failure (a RUN_ERROR), its message
    events: List[Dict[str, Any]] = field(default_factory=list)  # delivered events, wire form
    warnings: List[str] = field(default_factory=list)
    messages: List[Dict[str, Any]] = field(default_factory=list)  # wire form
    state: Any = None
    request: Dict[str, Any] = field(default_factory=dict)
    why: Dict[str, str] = field(default_factory=dict)  # unobservable key -> reason


def _same(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 == 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def subset(expected: Any, actual: Any) -> bool:
    """The corpus's subset match: objects on the keys named, arrays of equal length item by
    item, anything else equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(subset(e, a) for e, a in zip(expected, actual))
    return _same(expected, actual)


_MISSING = object()


def resolve(value: Any, dotted: str) -> Any:
    """A dotted path (array items by index) in a JSON value, or ``_MISSING``."""
    for step in dotted.split(".") if dotted else []:
        if isinstance(value, dict):
            value = value.get(step, _MISSING)
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _event_path(events: List[Dict[str, Any]], key: str) -> Any:
    index, _, rest = key.partition(".")
    if not index.isdigit() or int(index) >= len(events):
        return _MISSING
    return resolve(events[int(index)], rest)


def check(fixture: Fixture, obs: Observation) -> Tuple[List[str], List[str]]:
    """``(failures, skipped)`` of every ``expect`` key against ``obs``."""
    failures = list(fixture.problems())
    skipped: List[str] = []
    expect = fixture.expect
    failed = obs.error is not None

    for key, want in expect.items():
        if key in obs.why:
            skipped.append(f"{key}: {obs.why[key]}")
            continue
        if key == "outcome":
            if (want == "failed") != failed:
                failures.append(f"outcome: expected {want}, got {'failed: ' + repr(obs.error) if failed else 'completed'}")
        elif key == "errorContains":
            if not failed or want not in str(obs.error):
                failures.append(f"errorContains: {want!r} not in {str(obs.error)!r}")
        elif key == "runError":
            if obs.run_error is None or (isinstance(want, str) and want not in obs.run_error):
                failures.append(f"runError: expected {want!r}, got {obs.run_error!r}")
        elif key in ("eventTypes", "eventTypesAbsent", "eventPaths", "eventAbsentPaths"):
            types = [e.get("type") for e in obs.events]
            if key == "eventTypes" and types != want:
                failures.append(f"eventTypes: expected {want}, got {types}")
            elif key == "eventTypesAbsent" and set(want) & set(types):
                failures.append(f"eventTypesAbsent: {sorted(set(want) & set(types))} delivered")
            elif key == "eventPaths":
                for path, value in want.items():
                    got = _event_path(obs.events, path)
                    if got is _MISSING or not _same(value, got):
                        failures.append(f"eventPaths: {path} expected {value!r}, got {'<missing>' if got is _MISSING else repr(got)}")
            elif key == "eventAbsentPaths":
                for path in want:
                    if _event_path(obs.events, path) is not _MISSING:
                        failures.append(f"eventAbsentPaths: {path} present")
        elif key == "warnings":
            for text in want:
                if not any(text in w for w in obs.warnings):
                    failures.append(f"warnings: {text!r} in none of {obs.warnings}")
        elif key == "noWarnings":
            if want and obs.warnings:
                failures.append(f"noWarnings: got {obs.warnings}")
        elif key == "messageCount":
            if len(obs.messages) != want:
                failures.append(f"messageCount: expected {want}, got {len(obs.messages)}")
        elif key == "messages":
            if not subset(want, obs.messages):
                failures.append(f"messages: expected {want}, got {obs.messages}")
        elif key == "state":
            if not subset(want, obs.state):
                failures.append(f"state: expected {want!r}, got {obs.state!r}")
        elif key == "request":
            if not subset(want, obs.request):
                failures.append(f"request: expected {want}, got {obs.request}")
        elif key == "requestAbsentPaths":
            for path in want:
                if resolve(obs.request, path) is not _MISSING:
                    failures.append(f"requestAbsentPaths: {path} sent")
    return failures, skipped


def level(fixture: Fixture) -> str:
    """``era`` (the compatibility fixtures: a peer of another era), else ``must``. Within a
    fixture, ``warnings`` / ``noWarnings`` are SHOULD-level keys (see ``SHOULD_KEYS``)."""
    return "era" if fixture.era is not None or fixture.name.startswith("era-") else "must"


class FixtureServer:
    """An ASGI app serving fixtures: ``POST /<token>`` answers the stream registered under
    ``token`` as SSE, one body message a frame, and keeps the request body."""

    def __init__(self) -> None:
        self.streams: Dict[str, List[bytes]] = {}
        self.requests: Dict[str, bytes] = {}

    def add(self, token: str, frames: List[bytes]) -> None:
        self.streams[token] = frames

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        token = scope["path"].strip("/")
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests[token] = body
        frames = self.streams.get(token)
        if frames is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"no such fixture"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for frame in frames:
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

