"""Serving a stream, in process: the server-side CPU of one response of 2,000 small events
built per request, through the ASGI app with a ``send`` that accepts every message at once
(no sockets: the transport's own cost is measured end to end by ``benches/serve_e2e.py``).

Group serve_2000: ``EventStreamResponse`` over an async generator of our events, against
the reference server pattern (``ag_ui`` events, ``ag_ui.encoder.EventEncoder.encode`` per
event, Starlette's ``StreamingResponse``), and ``EventStreamResponse`` with
``coalesce=False`` (one send per event) for scale.
"""

import asyncio
import os
import sys

import pytest

pytest.importorskip("starlette")
sys.path.insert(0, os.path.dirname(__file__))

from serve_apps import ours, ours_single, reference  # noqa: E402

N = 2000
SCOPE = {"type": "http", "method": "GET", "path": "/", "headers": [], "query_string": f"n={N}".encode()}


class _Request:
    headers: dict = {}
    query_params = {"n": str(N)}


def _serve(endpoint):
    async def main():
        response = await endpoint(_Request())
        sent = []

        async def send(message):
            sent.append(message)

        async def receive():
            await asyncio.Event().wait()  # the client never goes away

        await response(SCOPE, receive, send)
        return sent

    return asyncio.run(main())


def _bench(benchmark, endpoint):
    benchmark.group = "serve_2000"
    sent = benchmark.pedantic(_serve, args=(endpoint,), rounds=15, warmup_rounds=2)
    body = b"".join(m.get("body", b"") for m in sent)
    assert body.count(b"data: ") == N


def test_serve_2000__agui_fast(benchmark):
    _bench(benchmark, ours)


def test_serve_2000__agui_fast_single(benchmark):
    _bench(benchmark, ours_single)


def test_serve_2000__ag_ui_streaming_response(benchmark):
    _bench(benchmark, reference)
