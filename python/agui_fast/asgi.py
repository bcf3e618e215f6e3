"""Serving AG-UI event streams over ASGI: :class:`EventStreamResponse`.

``EventStreamResponse(events, accept=request.headers.get("accept"))`` streams an iterable or
async iterable of events (``agui_fast.core`` Structs or ``ag_ui.core`` pydantic events) as SSE
or, when the Accept header asks for it (:func:`agui_fast.encoder.negotiate`), as framed
protobuf. It is a plain ASGI application (``await response(scope, receive, send)``, no
Starlette needed) and, when Starlette is installed, a ``starlette.responses.Response`` that
FastAPI and Starlette endpoints can return.

Why not ``StreamingResponse``: one ASGI ``send`` costs a server ~4 us of CPU whatever it
carries, more than encoding a small event. So sends are **coalesced**: events that become
ready while the previous ``send`` is still in flight (the socket's buffer is full and the
server is waiting for the client to read) go out together in the next ``send``, encoded in
one batch call. An event that is ready while the transport is idle is sent as soon as the
source pauses (awaits anything), never held back waiting for company; a source that never
pauses (a sync iterable, a generator with no real await) gets its events sent at least every
millisecond, in batches of at most ``max_batch``. ``coalesce=False`` sends one event per
``send``.

Every mode yields to the event loop between sends (a batch, or each event with
``coalesce=False``), so one stream never holds up the server's other requests, and a client
that goes away (``http.disconnect``, or a failed ``send``) ends the stream at once: the
source is closed (``aclose()``/``close()``) on every way out. Each item of the source must be
an AG-UI event (an ``agui_fast.core`` event, an ``ag_ui.core`` event, or a mapping whose
``type`` names an event type); anything else ends the stream with an ``EncodeError``, in
either format.

Runs on asyncio (uvicorn, hypercorn's asyncio worker). A synchronous iterable is iterated on
the event loop, so it must not block (give an async iterable for events that wait on I/O).
"""

from __future__ import annotations

import asyncio
import reprlib
from time import perf_counter as _clock
from collections import deque
from typing import (
    Any, AsyncIterable, AsyncIterator, Awaitable, Callable, Deque, Iterable, Iterator, List, Mapping, MutableMapping,
    Optional, Union,
)

from . import _native
from .core import BaseEvent, EventType, RunAgentInput
from .core._convert import noun
from .decoder import decode_as
from .encoder import AGUI_MEDIA_TYPE, SSE_MEDIA_TYPE, negotiate
from .errors import DecodeError, EncodeError, InvalidJsonError, RequestBodyError
from .proto import encode_protobuf_many

__all__ = ["EventStream", "EventStreamResponse", "read_input", "DEFAULT_KEEPALIVE", "DEFAULT_MAX_BATCH"]

#: Seconds without any event after which an SSE stream gets a keep-alive comment.
DEFAULT_KEEPALIVE: Optional[float] = 15.0
#: Most events one ``send`` carries; the source is not read further until they are sent
#: (back-pressure: a fast source never buffers more than this).
DEFAULT_MAX_BATCH = 512

_KEEPALIVE = b": keep-alive\n\n"
_MAX_KEEPALIVE = 86400.0  # a day: the longest silence between keep-alives
# Most events a batch may hold: the producer reads that far ahead of the client.
_MAX_MAX_BATCH = 1 << 20
# Longest an event waits on an idle transport while a source that never suspends (a sync
# iterable, an async generator with no real await) keeps producing: a batch goes out when
# the source awaits I/O, fills ``max_batch``, or with the first event made this many seconds
# after the previous batch (a source slower than that gets each event sent alone).
_MAX_HOLD = 0.001
# coalesce=False: sends between two turns of the loop. The loop notices a vanished client
# (the transport's connection_lost callback) when it runs; until then each write to the dead
# socket counts, and asyncio logs "socket.send() raised exception." from the 5th on
# (LOG_THRESHOLD_FOR_CONNLOST_WRITES, uvloop alike). Four sends (~25 us) is also a short
# turn for the server's other requests, and saves three loop iterations out of four.
_SENDS_PER_YIELD = 4

Events = Union[Iterable[Any], AsyncIterable[Any]]
Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]  # ASGI messages are dicts


# The one byte producer per format (a batch of events -> one body chunk).
def _encode_sse(events: List[Any]) -> bytes:
    return _native.encode_sse_many(events)


def _encode_protobuf(events: List[Any]) -> bytes:
    return encode_protobuf_many(events)


_ENCODERS = {SSE_MEDIA_TYPE: _encode_sse, AGUI_MEDIA_TYPE: _encode_protobuf}


def _subclasses(cls: type) -> List[type]:
    out: List[type] = []
    subs: List[type] = cls.__subclasses__()
    for sub in subs:
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


# Every event class of ours: one set lookup per event on the common path.
_OUR_EVENTS = frozenset(_subclasses(BaseEvent))
_EVENT_TYPES = frozenset(t.value for t in EventType)


def _not_an_event(item: Any) -> bool:
    """True unless ``item`` is an event both formats can carry: ours, a model with an event
    ``type`` (``ag_ui.core``'s pydantic events), or a mapping whose ``type`` is one."""
    if isinstance(item, BaseEvent):
        return False
    kind = item.get("type") if isinstance(item, Mapping) else getattr(item, "type", None)
    return not (isinstance(kind, str) and kind in _EVENT_TYPES)


def _refuse(item: Any) -> EncodeError:
    return EncodeError(
        f"the event source yielded {type(item).__name__} {reprlib.repr(item)}, not an AG-UI event (an agui_fast.core "
        f"or ag_ui.core event, or a mapping whose 'type' is an event type)"
    )


class _Disconnected(Exception):
    """The client went away (``http.disconnect``, or ``send`` failed)."""


class EventStream:
    """A streaming AG-UI response as a plain ASGI application (no Starlette needed).

    ``events``: an iterable or async iterable of events. ``accept``: the request's Accept
    header (SSE unless it asks for protobuf, see :func:`agui_fast.encoder.negotiate`), or
    ``media_type`` to choose directly (``SSE_MEDIA_TYPE`` or ``AGUI_MEDIA_TYPE``).
    ``keepalive``: seconds of silence after which an SSE stream gets a ``: keep-alive``
    comment (``None``: never; protobuf has no comments). ``coalesce``: events ready while a
    send is in flight share the next send (default); ``False`` sends one event per send.
    ``max_batch``: most events per send.

    When the client disconnects, the event source is closed (``aclose()``/``close()``, so a
    generator's ``finally`` runs) and the response ends quietly. An exception from the
    source is raised after every event before it was sent (the server then drops the
    connection, so the client sees an unfinished stream, not a clean end).
    """

    def __init__(
        self,
        events: Events,
        *,
        accept: Optional[str] = None,
        media_type: Optional[str] = None,
        status_code: int = 200,
        headers: Optional[Mapping[str, str]] = None,
        keepalive: Optional[float] = DEFAULT_KEEPALIVE,
        coalesce: bool = True,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        if isinstance(events, (str, bytes, bytearray)) or not isinstance(events, (AsyncIterable, Iterable)):
            raise TypeError(f"events must be an iterable or async iterable, not {type(events).__name__}")
        if media_type is None:
            media_type = negotiate(accept)
        elif media_type not in _ENCODERS:
            raise ValueError(f"media_type must be {SSE_MEDIA_TYPE!r} or {AGUI_MEDIA_TYPE!r}, not {media_type!r}")
        if keepalive is not None:
            if isinstance(keepalive, bool) or not isinstance(keepalive, (int, float)):
                raise TypeError(f"keepalive must be a number of seconds or None, not {type(keepalive).__name__}")
            if not 0 < keepalive <= _MAX_KEEPALIVE:
                raise ValueError(f"keepalive must be between 0 (excluded) and {_MAX_KEEPALIVE} seconds, not {keepalive!r}")
        _native.check_int("max_batch", max_batch, 1, _MAX_MAX_BATCH)
        _native.check_int("status_code", status_code, 100, 599)
        self.events = events
        self.media_type = media_type
        self.status_code = status_code
        self.keepalive = keepalive if media_type == SSE_MEDIA_TYPE else None
        self.coalesce = coalesce
        self.max_batch = max_batch if coalesce else 1
        self._encode = _ENCODERS[media_type]
        raw = [
            (b"content-type", media_type.encode("latin-1")),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        if headers:  # the caller's headers win over ours
            extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
            names = {k for k, _ in extra}
            raw = [h for h in raw if h[0] not in names] + extra
        self.raw_headers = raw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _Pump(self, receive, send).run()


class _Pump:
    """One response in flight: a producer task reads the source into ``buf``; the sender
    (the ASGI task itself) sends what ``buf`` holds each time the previous send is done,
    and the keep-alives. With ``coalesce=False`` the producer sends each event itself (no
    task switch per event), then lets the loop run once, and the sender only keeps the
    stream alive."""

    __slots__ = (
        "resp", "receive", "send", "buf", "wake", "room", "lock", "idle", "since", "last_send", "ping", "done",
        "stop", "error", "disconnected", "source", "unyielded",
    )

    def __init__(self, resp: EventStream, receive: Receive, send: Send) -> None:
        self.resp = resp
        self.receive = receive
        self.send = send
        self.buf: Deque[Any] = deque()
        self.wake = asyncio.Event()  # the sender has something to do
        self.room = asyncio.Event()  # the producer may read on
        self.lock = asyncio.Lock()  # one send at a time (keep-alives vs the producer's sends)
        self.idle = False  # the sender is waiting for events
        self.since = _clock()  # when the sender last took a batch
        self.last_send = _clock()
        self.ping = False  # the keep-alive timer fired
        self.done = False  # the source is exhausted (or failed)
        self.stop = False  # an event could not be encoded: nothing more is sent
        self.error: Optional[BaseException] = None
        self.disconnected = False
        self.unyielded = 0  # sends since the loop last ran (coalesce=False)
        # The iterator read (closed on every way out); the source itself until it is made.
        self.source: Any = resp.events

    async def run(self) -> None:
        try:
            await self.stream()
        finally:
            await _close(self.source)
        if self.error is not None and not self.disconnected:
            raise self.error

    async def stream(self) -> None:
        resp = self.resp
        try:
            await self.send(
                {"type": "http.response.start", "status": resp.status_code, "headers": resp.raw_headers}
            )
        except OSError:
            self.disconnected = True
            return
        producer = asyncio.ensure_future(self.produce())
        watcher = asyncio.ensure_future(self.watch())
        try:
            await self.deliver()
            if not self.disconnected and self.error is None:
                await self.send({"type": "http.response.body", "body": b"", "more_body": False})
        except _Disconnected:
            self.disconnected = True
        finally:
            watcher.cancel()
            producer.cancel()
            # The producer is done before the source is closed (a generator cannot be closed
            # while it runs).
            await asyncio.gather(producer, watcher, return_exceptions=True)

    async def produce(self) -> None:
        events, added = self.resp.events, self._added
        pause = self._pause if self.resp.coalesce else self._send_now
        try:
            if isinstance(events, AsyncIterable):
                asource = self.source = aiter(events)
                async for event in asource:
                    if added(event) and await pause():
                        return
            else:
                source = self.source = iter(events)
                for event in source:
                    if added(event) and await pause():
                        return
        except asyncio.CancelledError:
            raise
        except _Disconnected:
            self.disconnected = True
        except Exception as exc:  # noqa: BLE001 - re-raised by run() after the flush
            self.error = exc
        finally:
            self.done = True
            self.wake.set()

    def _added(self, event: Any) -> bool:
        """Queue one event; True when the producer must pause (a full batch, or an idle
        sender that has waited ``_MAX_HOLD`` for a source that never suspends)."""
        buf = self.buf
        buf.append(event)
        if len(buf) >= self.resp.max_batch:
            return True
        if self.idle:
            # The sender runs as soon as the source suspends (awaits I/O) ...
            self.wake.set()
            # ... or, for a source that never does, _MAX_HOLD after the last batch.
            return _clock() - self.since >= _MAX_HOLD
        return False

    async def _pause(self) -> bool:
        """Wait until the sender has taken what is queued (a mere ``sleep(0)`` is not
        enough: waking a task waiting with a timeout takes several loop iterations).
        True when the stream is over (the client left, or nothing more can be sent)."""
        self.wake.set()
        self.room.clear()
        await self.room.wait()
        return self.disconnected or self.stop

    async def _send_now(self) -> bool:
        """``coalesce=False``: the producer sends the one queued event itself, and lets the
        loop run every ``_SENDS_PER_YIELD`` sends: a send that does not suspend (the socket
        took the bytes) would otherwise keep the loop from every other request, and from
        noticing the client leave."""
        batch = list(self.buf)
        self.buf.clear()
        await self._send(self._encoded(batch, self.resp._encode))
        self.unyielded += 1
        if self.unyielded >= _SENDS_PER_YIELD:
            self.unyielded = 0
            await asyncio.sleep(0)
        return self.disconnected or self.stop

    async def watch(self) -> None:
        while True:
            message = await self.receive()
            if message.get("type") == "http.disconnect":
                self.disconnected = True
                self.wake.set()
                return

    async def deliver(self) -> None:
        buf, wake, room = self.buf, self.wake, self.room
        keepalive, limit, encode = self.resp.keepalive, self.resp.max_batch, self.resp._encode
        loop = asyncio.get_running_loop()
        while True:
            if self.disconnected or self.stop:
                return
            if not buf:
                if self.done:
                    return
                self.idle = True
                wake.clear()
                # A timer, not wait_for: wait_for makes a task per wait (~10 us per idle period).
                timer = None
                if keepalive is not None:
                    timer = loop.call_later(max(keepalive - (_clock() - self.last_send), 0.001), self._ping)
                try:
                    await wake.wait()
                finally:
                    self.idle = False
                    if timer is not None:
                        timer.cancel()
                if self.ping:
                    self.ping = False
                    silent = keepalive is not None and _clock() - self.last_send >= keepalive
                    if silent and not buf and not self.done and not self.disconnected:
                        await self._send(_KEEPALIVE)
                continue
            if len(buf) <= limit:
                batch = list(buf)
                buf.clear()
            else:
                batch = [buf.popleft() for _ in range(limit)]
            self.since = _clock()
            room.set()
            await self._send(self._encoded(batch, encode))

    def _ping(self) -> None:
        self.ping = True
        self.wake.set()

    def _encoded(self, batch: List[Any], encode: Callable[[List[Any]], bytes]) -> bytes:
        """The batch's bytes. At an item that cannot be sent (not an event, or an event the
        format cannot carry), the bytes of the events before it: they are sent, then the
        error is raised and nothing more is sent."""
        if not _OUR_EVENTS.issuperset(map(type, batch)):
            for i, item in enumerate(batch):
                if type(item) not in _OUR_EVENTS and _not_an_event(item):
                    self.error, self.stop = _refuse(item), True
                    batch = batch[:i]
                    break
        try:
            return encode(batch)
        except EncodeError:
            pass
        good = []
        for event in batch:
            try:
                good.append(encode([event]))
            except EncodeError as exc:
                self.error, self.stop = exc, True  # before any item refused above
                break
        return b"".join(good)

    async def _send(self, body: bytes) -> None:
        if not body:  # nothing could be encoded (the stream stops)
            return
        try:
            async with self.lock:
                await self.send({"type": "http.response.body", "body": body, "more_body": True})
        except OSError as exc:  # the server's "client disconnected" (uvicorn, Starlette)
            raise _Disconnected() from exc
        self.last_send = _clock()


async def _close(source: Any) -> None:
    """Close the iterator read (runs a generator's ``finally``); a re-iterable source (a
    list) is left alone."""
    if isinstance(source, AsyncIterator):
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
    elif isinstance(source, Iterator):
        close = getattr(source, "close", None)
        if close is not None:
            close()


def request_body_error(body_error: DecodeError, tp: Any) -> RequestBodyError:
    """The error of a request body that is not a ``tp``: what was wrong, where (the field's
    JSON path), said of the request body."""
    reason = str(body_error).split(": ", 1)[-1]
    what = "not JSON" if isinstance(body_error, InvalidJsonError) else f"not a {noun(tp) if noun(tp) != 'event' else 'valid event'}"
    return _BodyError(f"invalid request body ({what}): {reason}")


async def read_input(request: Any, tp: Any = RunAgentInput) -> Any:
    """The request's JSON body as a ``tp`` (default :class:`~agui_fast.core.RunAgentInput`),
    decoded natively from the bytes. A body that is not one raises
    :class:`~agui_fast.errors.RequestBodyError` saying what is wrong and where; Starlette and
    FastAPI answer it with ``422`` and that message (FastAPI: ``{"detail": "..."}``).
    ``request`` is a Starlette/FastAPI ``Request`` (anything with an async ``body()``)."""
    body = await request.body()
    try:
        return decode_as(body, tp)
    except DecodeError as e:
        raise request_body_error(e, tp) from None


try:  # optional dependency: the Starlette/FastAPI response class
    from starlette.exceptions import HTTPException as _HTTPException
    from starlette.responses import Response as _StarletteResponse
except ImportError:  # pragma: no cover - exercised without the server extra
    EventStreamResponse = EventStream
    _BodyError = RequestBodyError
else:

    class _BodyError(RequestBodyError, _HTTPException):  # type: ignore[no-redef]
        """A RequestBodyError that Starlette's and FastAPI's HTTP error handlers answer."""

        def __init__(self, message: str) -> None:
            RequestBodyError.__init__(self, message)
            _HTTPException.__init__(self, 422, message)

        def __str__(self) -> str:
            return str(self.detail)

        __repr__ = ValueError.__repr__

    # misc: Starlette's Response.media_type is inferred as None (its `media_type = None`).
    class EventStreamResponse(EventStream, _StarletteResponse):  # type: ignore[no-redef, misc]
        """:class:`EventStream` as a ``starlette.responses.Response`` (return it from a
        FastAPI or Starlette endpoint). ``background`` runs after the stream, as in
        Starlette."""

        def __init__(self, events: Events, *, background: Any = None, **kwargs: Any) -> None:
            EventStream.__init__(self, events, **kwargs)
            self.background = background
            self.body = b""

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await EventStream.__call__(self, scope, receive, send)
            if self.background is not None:
                await self.background()
