"""What a server's paths cost around the encoder, against the reference (``ag_ui``,
pydantic) or msgspec in the same run, rounds interleaved (``_interleave.pedantic_against``):
the conftest summary prints peer time / our time (> 1: ours is faster).

Groups:

* ``server_state_deltas_10k``: ``decode_sse`` of a log of 10k ``STATE_DELTA`` events (two
  operations each) vs msgspec decoding the same payloads into Structs of the same shape
  whose pointers carry no check: each payload (``msgspec_plain_loop``), and all of them
  joined as one array (``msgspec_plain_array``, the floor; no framing). Goal: ours within
  1.5x, a ratio >= 0.67.
* ``server_one_frame_sse`` / ``server_one_frame_feed`` / ``server_one_frame_protobuf``: one
  small event through ``decode_sse(frame)``, ``SseDecoder.feed(frame)`` and
  ``decode_protobuf(frame)``, 1,000 calls a round, vs msgspec's decode of the same JSON
  payload into the event Structs (goal: ratio >= 0.67).

* ``server_build_encode`` / ``server_build_encode_tagged``: 100 events built and encoded to
  SSE a round (``TextMessageContentEvent(message_id=..., delta=...)``, then the same with
  ``type=EventType.TEXT_MESSAGE_CONTENT``, as ported code writes it) vs ``ag_ui``'s classes and
  ``EventEncoder`` (goal: ratio >= 25 for both).

* ``server_body_validate_python_{1,100,10k}`` / ``server_body_validate_json_{1,100,10k}``:
  ``TypeAdapter(RunAgentInput).validate_python(body)`` / ``.validate_json(text)`` for bodies
  of 1, 100 and 10,000 messages vs the same with ``ag_ui``'s class (goal: ratio >= 2).
* ``server_body_fastapi_{1,100,10k}``: the same bodies POSTed to a FastAPI endpoint under
  uvicorn (its own process, ``body_apps.py``) with httpx, ours vs the reference's class in
  the same server; the summary also prints the server's CPU time per request, which is
  what the endpoint costs the server (the round trip adds the client and the transport).

Run: ``pytest benches/bench_server.py --benchmark-only`` after ``maturin develop --release``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import httpx
import pytest
from pydantic import TypeAdapter

import msgspec
from msgspec import field

from _interleave import pedantic_against

import ag_ui.core as ref
from ag_ui.encoder import EventEncoder as RefEncoder

import agui_fast.core as ours
from agui_fast.encoder import EventEncoder
from agui_fast._typed import EVENT_DECODER
from agui_fast.proto import decode_protobuf, encode_protobuf_frame
from agui_fast.sse import SseDecoder, decode_sse


def _against(benchmark: Any, group: str, ours: Any, peers: Dict[str, Any], rounds: int = 15) -> Any:
    benchmark.group = group
    return pedantic_against(benchmark, ours, (), peers, rounds=rounds, warmup_rounds=2, settle=0.002)


# -- a log of state deltas -----------------------------------------------------------------


class _Plain(msgspec.Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True, dict=True, rename="camel"):
    """The Structs' options, without the pointer check."""


class PlainAdd(_Plain, kw_only=True, tag_field="op", tag="add"):
    path: str
    value: Any


class PlainReplace(_Plain, kw_only=True, tag_field="op", tag="replace"):
    path: str
    value: Any


class PlainRemove(_Plain, kw_only=True, tag_field="op", tag="remove"):
    path: str


class PlainMove(_Plain, kw_only=True, tag_field="op", tag="move"):
    from_: str = field(name="from")
    path: str


class PlainDelta(_Plain, kw_only=True, tag_field="type", tag="STATE_DELTA"):
    timestamp: Optional[int] = None
    raw_event: Any = field(default=None, name="rawEvent")
    metadata: Optional[Dict[str, Any]] = None
    subagent_run_id: Optional[str] = field(default=None, name="subagentRunId")
    delta: List[Union[PlainAdd, PlainReplace, PlainRemove, PlainMove]]


PLAIN_DELTA = msgspec.json.Decoder(PlainDelta, strict=False)
PLAIN_DELTAS = msgspec.json.Decoder(List[PlainDelta], strict=False)

DELTA_PAYLOADS = [
    json.dumps(
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/counters/tokens", "value": i},
                {"op": "add", "path": "/agent/plan/steps/-", "value": {"id": i, "title": f"step {i}"}},
            ],
        },
        separators=(",", ":"),
    ).encode()
    for i in range(10_000)
]
DELTA_LOG = b"".join(b"data: " + p + b"\n\n" for p in DELTA_PAYLOADS)
DELTA_ARRAY = b"[" + b",".join(DELTA_PAYLOADS) + b"]"


def _plain_deltas() -> list:
    dec = PLAIN_DELTA.decode
    return [dec(p) for p in DELTA_PAYLOADS]


def test_state_deltas__agui_fast(benchmark):
    got = _against(
        benchmark, "server_state_deltas_10k", lambda: decode_sse(DELTA_LOG), {"msgspec_plain_loop": _plain_deltas, "msgspec_plain_array": lambda: PLAIN_DELTAS.decode(DELTA_ARRAY)},
    )
    assert len(got) == len(DELTA_PAYLOADS) and got[0].delta[0].path == "/counters/tokens"


# -- one frame ---------------------------------------------------------------------------------

CALLS = 1_000
PAYLOAD = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_1","delta":"word 17 of the reply, "}'
FRAME = b"data: " + PAYLOAD + b"\n\n"
PB_FRAME = encode_protobuf_frame(EVENT_DECODER.decode(PAYLOAD))


def _msgspec_one() -> None:
    dec = EVENT_DECODER.decode
    for _ in range(CALLS):
        dec(PAYLOAD)


def test_one_frame_sse__agui_fast(benchmark):
    def ours() -> None:
        for _ in range(CALLS):
            decode_sse(FRAME)

    _against(benchmark, "server_one_frame_sse", ours, {"msgspec_decode": _msgspec_one})
    assert decode_sse(FRAME) == [EVENT_DECODER.decode(PAYLOAD)]


def test_one_frame_feed__agui_fast(benchmark):
    dec = SseDecoder()

    def ours() -> None:
        feed = dec.feed
        for _ in range(CALLS):
            feed(FRAME)

    _against(benchmark, "server_one_frame_feed", ours, {"msgspec_decode": _msgspec_one})
    assert dec.feed(FRAME) == [EVENT_DECODER.decode(PAYLOAD)]


def test_one_frame_protobuf__agui_fast(benchmark):
    def ours() -> None:
        for _ in range(CALLS):
            decode_protobuf(PB_FRAME)

    _against(benchmark, "server_one_frame_protobuf", ours, {"msgspec_decode": _msgspec_one})
    assert decode_protobuf(PB_FRAME) == [EVENT_DECODER.decode(PAYLOAD)]


# -- build + encode ------------------------------------------------------------------------------

DELTAS = [f"word {i} of the reply, " for i in range(100)]


def _build_encode(cls, encode, **tag):
    def run() -> None:
        for d in DELTAS:
            encode(cls(message_id="msg_1", delta=d, **tag))

    return run


def test_build_encode__agui_fast(benchmark):
    ref_run = _build_encode(ref.TextMessageContentEvent, RefEncoder().encode)
    _against(benchmark, "server_build_encode", _build_encode(ours.TextMessageContentEvent, EventEncoder().encode), {"ag_ui": ref_run})


def test_build_encode_tagged__agui_fast(benchmark):
    ref_run = _build_encode(ref.TextMessageContentEvent, RefEncoder().encode, type=ref.EventType.TEXT_MESSAGE_CONTENT)
    ours_run = _build_encode(ours.TextMessageContentEvent, EventEncoder().encode, type=ours.EventType.TEXT_MESSAGE_CONTENT)
    _against(benchmark, "server_build_encode_tagged", ours_run, {"ag_ui": ref_run})
    built = ours.TextMessageContentEvent(type=ours.EventType.TEXT_MESSAGE_CONTENT, message_id="m", delta="d")
    assert built.model_fields_set == {"type", "message_id", "delta"}
    assert EventEncoder().encode(built) == RefEncoder().encode(
        ref.TextMessageContentEvent(type=ref.EventType.TEXT_MESSAGE_CONTENT, message_id="m", delta="d")
    )


# -- request bodies --------------------------------------------------------------------------


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


SIZES = {"1": 1, "100": 100, "10k": 10_000}
CALLS_PER_ROUND = {"1": 200, "100": 10, "10k": 1}
OURS_ADAPTER = TypeAdapter(ours.RunAgentInput)
REF_ADAPTER = TypeAdapter(ref.RunAgentInput)


def _loop(fn: Any, arg: Any, calls: int) -> Any:
    def run() -> None:
        for _ in range(calls):
            fn(arg)

    return run


@pytest.mark.parametrize("size", list(SIZES))
def test_body_validate_python__agui_fast(benchmark, size):
    data, calls = body(SIZES[size]), CALLS_PER_ROUND[size]
    _against(benchmark, f"server_body_validate_python_{size}", _loop(OURS_ADAPTER.validate_python, data, calls),
             {"ag_ui": _loop(REF_ADAPTER.validate_python, data, calls)})
    assert OURS_ADAPTER.validate_python(data).model_dump(by_alias=True) == REF_ADAPTER.validate_python(data).model_dump(by_alias=True, exclude_none=True)


@pytest.mark.parametrize("size", list(SIZES))
def test_body_validate_json__agui_fast(benchmark, size):
    text, calls = json.dumps(body(SIZES[size])).encode(), CALLS_PER_ROUND[size]
    _against(benchmark, f"server_body_validate_json_{size}", _loop(OURS_ADAPTER.validate_json, text, calls),
             {"ag_ui": _loop(REF_ADAPTER.validate_json, text, calls)})


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module")
def body_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "body_apps:app", "--host", "127.0.0.1", "--port", str(port),
         "--log-level", "warning", "--no-access-log"],
        cwd=Path(__file__).resolve().parent,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.1)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120)
    try:
        yield client, proc.pid
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("size", list(SIZES))
def test_body_fastapi__agui_fast(benchmark, body_server, size):
    client, pid = body_server
    n, calls = SIZES[size], max(1, CALLS_PER_ROUND[size] // 4)
    content = json.dumps(body(n)).encode()
    headers = {"content-type": "application/json"}
    cpu: Dict[str, List[float]] = {"ours": [], "ag_ui": []}

    def post(path: str, name: str) -> Any:
        def run() -> None:
            c0 = _cpu_seconds(pid)
            for _ in range(calls):
                r = client.post(path, content=content, headers=headers)
                assert r.status_code == 200 and r.text == str(n), r.text
            cpu[name].append((_cpu_seconds(pid) - c0) / calls)

        return run

    for path, name in (("/ours", "ours"), ("/reference", "ag_ui")):  # warm both routes
        post(path, name)()
        cpu[name].clear()
    _against(benchmark, f"server_body_fastapi_{size}", post("/ours", "ours"), {"ag_ui": post("/reference", "ag_ui")})
    # The server's CPU time per request (clock ticks: a sum over rounds, not a per-round figure).
    per = {k: sum(v) / len(v) for k, v in cpu.items()}
    benchmark.extra_info["server_cpu_per_request"] = per
    print(f"\nserver CPU per request, {size}: ours {per['ours'] * 1e3:.3f} ms, ag_ui {per['ag_ui'] * 1e3:.3f} ms, "
          f"ratio {per['ag_ui'] / per['ours']:.2f}x")
