"""agui_fast.asgi.EventStreamResponse, driven as a plain ASGI app (no server): headers,
negotiation, coalescing, keep-alives, disconnects, errors."""

import asyncio
import time

import pytest

from agui_fast.asgi import EventStream, EventStreamResponse
from agui_fast.core import RunFinishedEvent, RunStartedEvent, TextMessageContentEvent
from agui_fast.decoder import decode_protobuf, decode_sse
from agui_fast.encoder import AGUI_MEDIA_TYPE, SSE_MEDIA_TYPE
from agui_fast.errors import EncodeError

SCOPE = {"type": "http", "method": "POST", "path": "/", "headers": []}


def ev(i):
    return TextMessageContentEvent(message_id="m1", delta=f"d{i}")


class Harness:
    """Records what the app sends; ``send_delay`` makes each body send take that long
    (a slow client); ``disconnect_after`` bodies make ``receive`` report a disconnect."""

    def __init__(self, send_delay=0.0, disconnect_after=None, fail_after=None):
        self.messages = []
        self.send_delay = send_delay
        self.disconnect_after = disconnect_after
        self.fail_after = fail_after
        self.bodies_seen = asyncio.Event()
        self._disconnect = asyncio.Event()

    async def send(self, message):
        if message["type"] == "http.response.body":
            if self.fail_after is not None and len(self.bodies) >= self.fail_after:
                raise OSError("client gone")
            if self.send_delay:
                await asyncio.sleep(self.send_delay)
        self.messages.append(message)
        self.bodies_seen.set()
        if self.disconnect_after is not None and len(self.bodies) >= self.disconnect_after:
            self._disconnect.set()

    async def receive(self):
        await self._disconnect.wait()
        return {"type": "http.disconnect"}

    @property
    def start(self):
        return self.messages[0]

    @property
    def bodies(self):
        return [m for m in self.messages if m["type"] == "http.response.body"]

    @property
    def body(self):
        return b"".join(m["body"] for m in self.bodies)

    @property
    def data_sends(self):
        return [m for m in self.bodies if m["body"] and not m["body"].startswith(b":")]


def serve(response, harness=None, timeout=10):
    harness = harness or Harness()

    async def main():
        await asyncio.wait_for(response(SCOPE, harness.receive, harness.send), timeout)

    asyncio.run(main())
    return harness


async def agen(n, delay=0.0):
    for i in range(n):
        if delay:
            await asyncio.sleep(delay)
        yield ev(i)


def test_sse_headers_and_body():
    events = [ev(i) for i in range(50)]
    h = serve(EventStream(events))
    start = h.start
    assert start["type"] == "http.response.start" and start["status"] == 200
    headers = dict(start["headers"])
    assert headers[b"content-type"] == b"text/event-stream"
    assert headers[b"cache-control"] == b"no-cache"
    assert headers[b"x-accel-buffering"] == b"no"
    assert decode_sse(h.body) == events
    assert h.bodies[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert all(m["more_body"] for m in h.bodies[:-1])


@pytest.mark.parametrize(
    "accept, media",
    [
        (None, SSE_MEDIA_TYPE),
        ("text/event-stream", SSE_MEDIA_TYPE),
        ("*/*", SSE_MEDIA_TYPE),
        (AGUI_MEDIA_TYPE, AGUI_MEDIA_TYPE),
        (f"{AGUI_MEDIA_TYPE}, text/event-stream;q=0.5", AGUI_MEDIA_TYPE),
    ],
)
def test_negotiation(accept, media):
    events = [ev(i) for i in range(5)]
    h = serve(EventStream(agen(5), accept=accept))
    assert dict(h.start["headers"])[b"content-type"] == media.encode()
    decode = decode_sse if media == SSE_MEDIA_TYPE else decode_protobuf
    assert decode(h.body) == events


def test_media_type_and_headers_arguments():
    resp = EventStream([ev(0)], media_type=AGUI_MEDIA_TYPE, headers={"X-Run": "r1", "Cache-Control": "no-store"},
                       status_code=201)
    h = serve(resp)
    assert h.start["status"] == 201
    headers = h.start["headers"]
    assert (b"x-run", b"r1") in headers
    assert [v for k, v in headers if k == b"cache-control"] == [b"no-store"]
    assert decode_protobuf(h.body) == [ev(0)]


def test_bad_arguments():
    with pytest.raises(TypeError):
        EventStream(42)
    with pytest.raises(TypeError):
        EventStream("data: {}\n\n")
    with pytest.raises(ValueError, match="media_type"):
        EventStream([], media_type="application/json")
    with pytest.raises(ValueError, match="keepalive"):
        EventStream([], keepalive=0)
    with pytest.raises(ValueError, match="max_batch"):
        EventStream([], max_batch=0)
    with pytest.raises(TypeError, match="max_batch"):
        EventStream([], max_batch=1.5)


def test_coalesces_while_a_send_is_in_flight():
    n = 300
    h = serve(EventStream(agen(n), keepalive=None), Harness(send_delay=0.002))
    assert decode_sse(h.body) == [ev(i) for i in range(n)]
    # The source is never slowed down by the client, so nearly all events wait for a send.
    assert len(h.data_sends) < n / 5


def test_coalesce_off_sends_one_event_per_send():
    n = 40
    h = serve(EventStream(agen(n), coalesce=False), Harness(send_delay=0.001))
    assert len(h.data_sends) == n
    assert [decode_sse(m["body"]) for m in h.data_sends] == [[ev(i)] for i in range(n)]


def test_max_batch_bounds_each_send():
    h = serve(EventStream([ev(i) for i in range(100)], max_batch=7), Harness(send_delay=0.001))
    sizes = [len(decode_sse(m["body"])) for m in h.data_sends]
    assert sum(sizes) == 100 and max(sizes) <= 7


def test_an_event_ready_on_an_idle_transport_is_not_held_back():
    # The source yields one event and then waits until the client has received it: if the
    # response held the event back (waiting for more to fill a batch) this deadlocks.
    harness = Harness()

    async def gated():
        for i in range(3):
            harness.bodies_seen.clear()
            yield ev(i)
            await asyncio.wait_for(harness.bodies_seen.wait(), 2)

    h = serve(EventStream(gated()), harness)
    assert [decode_sse(m["body"]) for m in h.data_sends] == [[ev(0)], [ev(1)], [ev(2)]]


def test_a_source_that_never_suspends_is_flushed_within_the_hold_time():
    # A slow synchronous source (5 ms per event, never yielding to the loop): slower than
    # _MAX_HOLD per event, so each event goes out alone before the next one is made.
    stamps = []

    def slow():
        for i in range(4):
            time.sleep(0.005)
            stamps.append(time.perf_counter())
            yield ev(i)

    class Timed(Harness):
        async def send(self, message):
            if message["type"] == "http.response.body" and message["body"]:
                message = dict(message, at=time.perf_counter())
            await super().send(message)

    h = serve(EventStream(slow()), Timed())
    sends = h.data_sends
    assert [decode_sse(m["body"]) for m in sends] == [[ev(i)] for i in range(4)]
    for i, m in enumerate(sends[:-1]):
        assert m["at"] < stamps[i + 1]


def test_a_fast_source_that_never_suspends_is_batched():
    h = serve(EventStream([ev(i) for i in range(2000)], max_batch=500))
    sizes = [len(decode_sse(m["body"])) for m in h.data_sends]
    assert sum(sizes) == 2000 and len(sizes) <= 8


def test_sync_generator_is_streamed_and_closed():
    closed = []

    def gen():
        try:
            for i in range(10):
                yield ev(i)
        finally:
            closed.append(True)

    h = serve(EventStream(gen()))
    assert decode_sse(h.body) == [ev(i) for i in range(10)]
    assert closed == [True]


@pytest.mark.parametrize("coalesce", [True, False])
def test_keepalive_comments_while_idle(coalesce):
    async def slow():
        yield ev(0)
        await asyncio.sleep(0.35)
        yield ev(1)
        for i in range(2, 30):  # events keep flowing: no keep-alive needed
            await asyncio.sleep(0.02)
            yield ev(i)

    h = serve(EventStream(slow(), keepalive=0.1, coalesce=coalesce))
    body = h.body
    assert 2 <= body.count(b": keep-alive\n\n") <= 4
    # none while events flow (one at most if this machine stalls the loop for 80 ms)
    assert body[body.index(b'"d2"'):].count(b": keep-alive") <= 1
    assert decode_sse(body) == [ev(i) for i in range(30)]


def test_no_keepalive_for_protobuf():
    async def slow():
        yield ev(0)
        await asyncio.sleep(0.2)
        yield ev(1)

    h = serve(EventStream(slow(), accept=AGUI_MEDIA_TYPE, keepalive=0.05))
    assert decode_protobuf(h.body) == [ev(0), ev(1)]


@pytest.mark.parametrize("coalesce", [True, False])
@pytest.mark.parametrize("how", ["receive", "send"])
def test_disconnect_closes_the_generator(how, coalesce):
    closed = []

    async def endless():
        try:
            i = 0
            while True:
                yield ev(i)
                i += 1
                await asyncio.sleep(0.001)
        finally:
            closed.append(True)

    harness = Harness(disconnect_after=3) if how == "receive" else Harness(fail_after=3)
    h = serve(EventStream(endless(), coalesce=coalesce), harness)
    assert closed == [True]
    assert not any(m.get("more_body") is False for m in h.bodies)  # no clean end after a disconnect


@pytest.mark.parametrize("coalesce", [True, False])
def test_source_error_after_flushing_the_events_before_it(coalesce):
    async def failing():
        for i in range(5):
            yield ev(i)
        raise RuntimeError("agent crashed")

    harness = Harness()
    with pytest.raises(RuntimeError, match="agent crashed"):
        serve(EventStream(failing(), coalesce=coalesce), harness)
    assert decode_sse(harness.body) == [ev(i) for i in range(5)]
    assert not any(m.get("more_body") is False for m in harness.bodies)


@pytest.mark.parametrize("coalesce", [True, False])
def test_encode_error_sends_the_good_events_of_the_batch_first(coalesce):
    bad = TextMessageContentEvent(message_id="m1", delta="\ud800")  # unpaired surrogate
    harness = Harness()
    with pytest.raises(EncodeError):
        serve(EventStream([ev(0), ev(1), bad, ev(3)], coalesce=coalesce), harness)
    assert decode_sse(harness.body) == [ev(0), ev(1)]


def test_reference_pydantic_events():
    core = pytest.importorskip("ag_ui.core")
    events = [
        core.RunStartedEvent(type=core.EventType.RUN_STARTED, thread_id="t", run_id="r"),
        core.TextMessageContentEvent(type=core.EventType.TEXT_MESSAGE_CONTENT, message_id="m", delta="hi"),
        core.RunFinishedEvent(type=core.EventType.RUN_FINISHED, thread_id="t", run_id="r"),
    ]
    ours = [
        RunStartedEvent(thread_id="t", run_id="r"),
        TextMessageContentEvent(message_id="m", delta="hi"),
        RunFinishedEvent(thread_id="t", run_id="r"),
    ]
    assert decode_sse(serve(EventStream(events)).body) == ours
    assert decode_protobuf(serve(EventStream(iter(events), accept=AGUI_MEDIA_TYPE)).body) == ours


def test_starlette_response():
    pytest.importorskip("starlette")
    httpx = pytest.importorskip("httpx")
    from starlette.applications import Starlette
    from starlette.background import BackgroundTask
    from starlette.responses import Response
    from starlette.routing import Route

    assert issubclass(EventStreamResponse, Response)
    done = []

    async def endpoint(request):
        return EventStreamResponse(agen(20), accept=request.headers.get("accept"),
                                   background=BackgroundTask(done.append, 1))

    app = Starlette(routes=[Route("/", endpoint, methods=["POST"])])

    async def main():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            r = await client.post("/", headers={"accept": AGUI_MEDIA_TYPE})
            assert r.status_code == 200 and r.headers["content-type"] == AGUI_MEDIA_TYPE
            assert r.headers["x-accel-buffering"] == "no"
            assert decode_protobuf(r.content) == [ev(i) for i in range(20)]
            r = await client.post("/")
            assert r.headers["content-type"] == SSE_MEDIA_TYPE
            assert decode_sse(r.content) == [ev(i) for i in range(20)]

    asyncio.run(main())
    assert done == [1, 1]


@pytest.mark.parametrize("media", [SSE_MEDIA_TYPE, AGUI_MEDIA_TYPE])
@pytest.mark.parametrize("coalesce", [True, False])
@pytest.mark.parametrize(
    "item", [5, None, "RUN_STARTED", [1], {"a": 1}, {"type": "NOT_AN_EVENT"}, {"type": 3}, object()],
    ids=["int", "none", "str", "list", "dict-no-type", "dict-unknown-type", "dict-int-type", "object"],
)
def test_a_non_event_is_refused_in_both_formats(item, coalesce, media):
    harness = Harness()
    with pytest.raises(EncodeError, match="not an AG-UI event"):
        serve(EventStream([ev(0), ev(1), item, ev(3)], media_type=media, coalesce=coalesce), harness)
    decode = decode_sse if media == SSE_MEDIA_TYPE else decode_protobuf
    assert decode(harness.body) == [ev(0), ev(1)]  # what came before is sent, nothing after
    assert not any(m.get("more_body") is False for m in harness.bodies)


@pytest.mark.parametrize("media", [SSE_MEDIA_TYPE, AGUI_MEDIA_TYPE])
def test_mapping_events_are_sent_in_both_formats(media):
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "d0"}]
    h = serve(EventStream(events, media_type=media))
    decode = decode_sse if media == SSE_MEDIA_TYPE else decode_protobuf
    assert decode(h.body) == [RunStartedEvent(thread_id="t", run_id="r"), ev(0)]


BAD = TextMessageContentEvent(message_id="m1", delta="\ud800")  # cannot be encoded


def item(i, bad_at):
    return BAD if i == bad_at else ev(i)


class ClosingIterator:
    """A plain (non-generator) iterator with ``close``."""

    def __init__(self, n, fail=False, bad_at=None):
        self.i, self.n, self.fail, self.bad_at, self.closed = 0, n, fail, bad_at, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            if self.fail:
                raise RuntimeError("agent crashed")
            raise StopIteration
        self.i += 1
        return item(self.i - 1, self.bad_at)

    def close(self):
        self.closed += 1


class AsyncClosingIterator(ClosingIterator):
    """A plain async iterator with ``aclose``."""

    def __aiter__(self):
        return self

    async def __anext__(self):
        await asyncio.sleep(0)
        try:
            return self.__next__()
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self):
        self.closed += 1


class Reiterable:
    """A re-iterable source: ``__iter__`` (or, ``aio``, only ``__aiter__``) makes a generator,
    and that generator is what the response must close."""

    def __init__(self, n, fail=False, bad_at=None):
        self.n, self.fail, self.bad_at, self.closed = n, fail, bad_at, 0

    def __iter__(self):
        try:
            yield from (item(i, self.bad_at) for i in range(self.n))
            if self.fail:
                raise RuntimeError("agent crashed")
        finally:
            self.closed += 1


class AsyncReiterable(Reiterable):
    __iter__ = None  # type: ignore[assignment]

    async def _agen(self):
        try:
            for i in range(self.n):
                await asyncio.sleep(0)
                yield item(i, self.bad_at)
            if self.fail:
                raise RuntimeError("agent crashed")
        finally:
            self.closed += 1

    def __aiter__(self):
        return self._agen()


SOURCES = {"iterator": ClosingIterator, "async-iterator": AsyncClosingIterator, "iterable": Reiterable,
           "async-iterable": AsyncReiterable}


@pytest.mark.parametrize("coalesce", [True, False])
@pytest.mark.parametrize("kind", list(SOURCES))
@pytest.mark.parametrize("exit", ["end", "source-error", "encode-error", "receive-disconnect", "send-fails",
                                  "start-fails", "cancelled"])
def test_the_source_is_closed_on_every_way_out(exit, kind, coalesce):
    endless = exit in ("receive-disconnect", "send-fails", "cancelled")
    source = SOURCES[kind](10**6 if endless else 20, fail=exit == "source-error",
                          bad_at=5 if exit == "encode-error" else None)
    harness = {"receive-disconnect": Harness(disconnect_after=3), "send-fails": Harness(fail_after=3)}.get(
        exit, Harness())
    if exit == "start-fails":
        async def failing_send(message):
            raise OSError("client gone")
        harness.send = failing_send

    async def main():
        task = asyncio.ensure_future(EventStream(source, coalesce=coalesce)(SCOPE, harness.receive, harness.send))
        if exit == "cancelled":  # e.g. the server shutting down
            while len(harness.bodies) < 3:
                await asyncio.sleep(0.001)
            task.cancel()
        try:
            await asyncio.wait_for(task, 10)
        except (asyncio.CancelledError, RuntimeError, EncodeError):
            pass

    asyncio.run(main())
    # A re-iterable source that was never read (the response could not even start) opened
    # nothing to close.
    never_read = exit == "start-fails" and kind.endswith("iterable")
    assert source.closed == (0 if never_read else 1)
