"""EventStreamResponse under a real uvicorn server: a stream never holds up the server's other
requests, in every send mode and for sources that never suspend; a client that leaves ends
the stream at once, closes the source and leaves no trail in the logs."""

import asyncio
import itertools
import logging
import socket
import threading
import time

import pytest

from agui_fast.asgi import EventStream
from agui_fast.core import TextMessageContentEvent

from servers import serve

httpx = pytest.importorskip("httpx")

MODES = [pytest.param(True, id="coalesce"), pytest.param(False, id="single")]
SOURCES = ["sync", "async-never-awaiting"]


class Source:
    """An endless source that never suspends (a sync generator, or an async generator with
    no await), counting what it made and recording when it was closed."""

    def __init__(self, kind):
        self.kind = kind
        self.made = 0
        self.closed = threading.Event()

    def __call__(self):
        return self._sync() if self.kind == "sync" else self._async()

    def _sync(self):
        try:
            for i in itertools.count():
                self.made += 1
                yield TextMessageContentEvent(message_id="m1", delta=f"d{i}")
        finally:
            self.closed.set()

    async def _async(self):
        try:
            for i in itertools.count():
                self.made += 1
                yield TextMessageContentEvent(message_id="m1", delta=f"d{i}")
        finally:
            self.closed.set()


def app_for(source, coalesce):
    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        if scope["path"] == "/stream":
            await EventStream(source(), coalesce=coalesce, keepalive=None)(scope, receive, send)
        else:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"pong"})

    return app


class Reader:
    """A client reading the stream as fast as it comes, on a raw socket in a thread (the
    server's socket buffer never fills: its sends never suspend)."""

    def __init__(self, url):
        host, port = url.rsplit("//", 1)[1].split(":")
        self.sock = socket.create_connection((host, int(port)))
        self.sock.sendall(b"GET /stream HTTP/1.1\r\nhost: test\r\n\r\n")
        self.received = 0
        self.first = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while True:
                data = self.sock.recv(1 << 20)
                if not data:
                    return
                self.received += len(data)
                self.first.set()
        except OSError:
            return

    def leave(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(5)


class LogCounter(logging.Handler):
    """Counts the records of the server's and asyncio's loggers (uvicorn's do not propagate)."""

    NAMES = ("asyncio", "uvicorn", "uvicorn.error")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())

    def __enter__(self):
        for name in self.NAMES:
            logging.getLogger(name).addHandler(self)
        return self

    def __exit__(self, *exc):
        for name in self.NAMES:
            logging.getLogger(name).removeHandler(self)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("coalesce", MODES)
def test_other_requests_are_served_while_a_never_suspending_stream_runs(coalesce, kind):
    source = Source(kind)
    with serve(app_for(source, coalesce)) as url:
        reader = Reader(url)
        try:
            assert reader.first.wait(10)
            for _ in range(3):
                before = source.made
                r = httpx.get(url + "/ping", timeout=10)
                assert r.text == "pong"
                assert source.made > before  # the stream ran meanwhile: it was not paused
        finally:
            reader.leave()
        assert source.closed.wait(10)


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("coalesce", MODES)
def test_a_client_that_leaves_ends_the_stream_and_closes_the_source(coalesce, kind):
    source = Source(kind)
    with LogCounter() as logs, serve(app_for(source, coalesce)) as url:
        reader = Reader(url)
        assert reader.first.wait(10)
        time.sleep(0.2)
        reader.leave()
        assert source.closed.wait(10), "the source was not closed after the client left"
        made = source.made
        time.sleep(0.3)
        assert source.made == made  # nothing is made after the close
        assert httpx.get(url + "/ping", timeout=10).text == "pong"  # the server is alive
    # Writes to a closed transport log "socket.send() raised exception." from the 5th on.
    assert logs.records == []


def test_harness_loop_is_yielded_to_by_single_sends():
    """Without a server: a send that never suspends and a source that never does, and another
    task on the loop still runs while the stream is going (each send yields the loop)."""
    made = []
    ran_at = []

    def source():
        for i in range(20000):
            made.append(i)
            yield TextMessageContentEvent(message_id="m1", delta="x")

    async def send(message):
        pass

    async def receive():
        await asyncio.Event().wait()

    async def other():
        for _ in range(10):
            await asyncio.sleep(0)
        ran_at.append(len(made))

    async def main():
        task = asyncio.ensure_future(other())
        await EventStream(source(), coalesce=False, keepalive=None)({"type": "http"}, receive, send)
        await task

    asyncio.run(main())
    assert ran_at and ran_at[0] < 1000
