"""Consuming AG-UI agents over HTTP: :class:`HttpAgent` (async) and :class:`SyncHttpAgent`.

The Python counterpart of ``@ag-ui/client``'s ``HttpAgent``, on httpx (``pip install
'agui-fast[client]'``)::

    agent = HttpAgent("http://127.0.0.1:8000/agent")
    async for event in agent.run(run_input):       # typed events, as they arrive
        ...
    result = await agent.run_agent(run_input)      # applied: result.messages, result.state

``run`` posts the ``RunAgentInput`` (an ``agui_fast.core`` Struct, an ``ag_ui.core`` model or
a dict) and decodes the response with our incremental decoders, SSE or protobuf as the
response's ``Content-Type`` says (``accept="protobuf"`` only asks for protobuf). The stream
is checked as it goes:

* an HTTP error status raises :class:`~agui_fast.errors.HttpStatusError` (status and the
  body's first bytes), another media type :class:`~agui_fast.errors.ContentTypeError`;
* a bad frame raises its ``DecodeError`` after every event decoded before it was yielded;
  a stream cut inside a frame raises too;
* a stream that ends without ``RUN_FINISHED`` or ``RUN_ERROR`` raises
  :class:`~agui_fast.errors.IncompleteRunError`: a cut connection is not a success;
* ``RUN_ERROR`` is an event from ``run`` and an :class:`~agui_fast.errors.AgentRunError`
  from ``run_agent``;
* an event type this version does not know (a newer protocol) is skipped with a warning;
* leaving the loop early (``break``, cancellation) closes the connection.
"""

from __future__ import annotations

import warnings
from typing import Any, AsyncIterator, Iterator, List, Mapping, Optional, Tuple

import msgspec

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the optional dependency
    raise ImportError("agui_fast.client needs httpx: pip install 'agui-fast[client]'") from exc

from . import _native
from .core import EventType, RunAgentInput
from .decoder import convert_value
from .encoder import AGUI_LEGACY_MEDIA_TYPE, AGUI_MEDIA_TYPE, SSE_MEDIA_TYPE
from .errors import (
    AgentRunError,
    ContentTypeError,
    DecodeError,
    EventValidationError,
    HttpStatusError,
    IncompleteRunError,
)
from .proto import ProtoDecoder
from .sse import SseDecoder
from .stream import EventApplier

__all__ = ["HttpAgent", "SyncHttpAgent", "RunAgentResult", "DEFAULT_TIMEOUT"]

#: Connect/write/pool 30 s; a read may wait 5 minutes (an agent can think silently).
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=300.0)

_ACCEPT = {
    "sse": SSE_MEDIA_TYPE,
    # SSE stays acceptable: a server that cannot send protobuf answers SSE, read as such.
    "protobuf": f"{AGUI_MEDIA_TYPE}, {SSE_MEDIA_TYPE};q=0.5",
}
_ERROR_BODY_BYTES = 1024
_TERMINAL = (EventType.RUN_FINISHED, EventType.RUN_ERROR)


class RunAgentResult(msgspec.Struct, kw_only=True):
    """What ``run_agent`` returns: the final ``messages`` and ``state``, the messages that
    the run added (``new_messages``, as ``@ag-ui/client``'s ``newMessages``) and the
    ``RUN_FINISHED`` event's ``result``."""

    messages: List[Any]
    state: Any
    new_messages: List[Any]
    result: Any = None


class _Run:
    """The request of one run (what both agents send)."""

    __slots__ = ("url", "headers", "body")

    def __init__(self, agent: "_BaseAgent", run_input: Any) -> None:
        self.url = agent.url
        self.headers = agent._request_headers
        self.body = _native.dumps(_as_input(run_input))


class _Reader:
    """Decodes one response body chunk by chunk and checks the run (one engine for both
    agents). ``feed``/``close`` are generators: the events come out before an error is
    raised."""

    __slots__ = ("decoder", "terminal")

    def __init__(self, response: httpx.Response, max_buffer_size: Optional[int]) -> None:
        media = _media_type(response)
        if media == SSE_MEDIA_TYPE:
            self.decoder: Any = SseDecoder() if max_buffer_size is None else SseDecoder(max_frame_size=max_buffer_size)
        elif media in (AGUI_MEDIA_TYPE, AGUI_LEGACY_MEDIA_TYPE):
            self.decoder = ProtoDecoder() if max_buffer_size is None else ProtoDecoder(max_frame_size=max_buffer_size)
        else:
            raise ContentTypeError(
                f"expected {SSE_MEDIA_TYPE} or {AGUI_MEDIA_TYPE}, got {response.headers.get('content-type')!r}",
                status_code=response.status_code,
                content_type=response.headers.get("content-type"),
            )
        self.terminal: Any = None

    def feed(self, chunk: bytes) -> Iterator[Any]:
        yield from self._checked(self.decoder.feed, chunk)

    def close(self) -> Iterator[Any]:
        yield from self._checked(lambda _: self.decoder.close(), b"")
        if self.terminal is None:
            raise IncompleteRunError("the stream ended without RUN_FINISHED or RUN_ERROR")

    def _checked(self, step, chunk: bytes) -> Iterator[Any]:
        # The decoders' contract: a call that meets bad frames still decodes every good one
        # and raises once, with all of them on ``events`` and every frame error on ``errors``.
        try:
            events = step(chunk)
        except DecodeError as exc:
            yield from self._seen(exc.events)
            errors = exc.errors or [exc]
            if not all(_unknown_type(e) for e in errors):
                raise
            for e in errors:
                warnings.warn(f"skipped an event of a type this version does not know: {e}", stacklevel=4)
            return
        yield from self._seen(events)

    def _seen(self, events: List[Any]) -> Iterator[Any]:
        for event in events:
            if event.type in _TERMINAL and self.terminal is None:
                self.terminal = event
            yield event


def _unknown_type(exc: DecodeError) -> bool:
    """A frame whose ``type`` is a string this version does not know (a newer protocol's
    event), as opposed to a malformed one. (Protobuf's decoder already skips unknown
    variants with a warning.)"""
    return isinstance(exc, EventValidationError) and exc.field == "$.type" and "Invalid value '" in str(exc)


def _media_type(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _status_error(response: httpx.Response, body: bytes) -> HttpStatusError:
    return HttpStatusError(
        f"HTTP {response.status_code} from {response.request.url}: {body[:200]!r}",
        status_code=response.status_code,
        content_type=response.headers.get("content-type"),
        body=body[:_ERROR_BODY_BYTES],
    )


def _as_input(run_input: Any) -> Any:
    if isinstance(run_input, RunAgentInput):
        return run_input
    if isinstance(run_input, Mapping):
        return convert_value(dict(run_input), RunAgentInput)
    if type(run_input).__name__ == "RunAgentInput" and hasattr(run_input, "model_dump"):
        return run_input  # the reference's pydantic model: the native writer knows it
    raise TypeError(f"input must be a RunAgentInput or a dict, not {type(run_input).__name__}")


def _input_parts(run_input: Any) -> Tuple[List[Any], Any]:
    """The input's messages (as our Structs) and state: where ``run_agent`` starts from."""
    ours = _as_input(run_input)
    if not isinstance(ours, RunAgentInput):
        ours = convert_value(msgspec.json.decode(_native.dumps(ours)), RunAgentInput)
    return list(ours.messages), ours.state


class _BaseAgent:
    __slots__ = ("url", "headers", "accept", "timeout", "max_buffer_size", "client", "_request_headers")
    _client_class: Any = None  # httpx.AsyncClient or httpx.Client

    def __init__(
        self,
        url: str,
        *,
        client: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        accept: str = "sse",
        timeout: Any = httpx.USE_CLIENT_DEFAULT,
        max_buffer_size: Optional[int] = None,
    ) -> None:
        if not isinstance(url, (str, httpx.URL)):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        if accept not in _ACCEPT:
            raise ValueError(f"accept must be 'sse' or 'protobuf', not {accept!r}")
        if client is not None and not isinstance(client, self._client_class):
            raise TypeError(f"client must be an httpx.{self._client_class.__name__}, not {type(client).__name__}")
        self.client = client
        self.url = url
        self.headers = dict(headers or {})
        self.accept = accept
        # Per request; an agent's own client is made with DEFAULT_TIMEOUT, a given client
        # keeps its own unless ``timeout`` is given.
        self.timeout = timeout
        if max_buffer_size is not None:
            _native.check_limit("max_buffer_size", max_buffer_size)
        self.max_buffer_size = max_buffer_size
        # Ours last: like @ag-ui/client, the Accept header is the agent's own.
        self._request_headers = {
            **{k.lower(): v for k, v in self.headers.items()},
            "content-type": "application/json",
            "accept": _ACCEPT[accept],
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}, accept={self.accept!r})"

    @property
    def _client_timeout(self) -> Any:
        return DEFAULT_TIMEOUT if self.timeout is httpx.USE_CLIENT_DEFAULT else self.timeout


class HttpAgent(_BaseAgent):
    """An AG-UI agent behind an HTTP endpoint, read with httpx (async).

    ``headers``: sent with every request (e.g. authorization). ``accept``: ``"sse"`` or
    ``"protobuf"`` (a preference: the response's content type decides the decoder).
    ``timeout``: httpx timeout (default: the given client's, else ``DEFAULT_TIMEOUT``). ``client``: an ``httpx.AsyncClient`` to use (its
    connection pool, proxies, transport); by default each run opens and closes its own.
    ``max_buffer_size``: the decoder's limit for one event (SSE buffer / protobuf frame).
    """

    _client_class = httpx.AsyncClient

    async def run(self, input: Any) -> AsyncIterator[Any]:
        """Post ``input`` and yield the run's events as they arrive."""
        run = _Run(self, input)
        if self.client is not None:
            async for event in self._stream(self.client, run):
                yield event
            return
        async with httpx.AsyncClient(timeout=self._client_timeout) as client:
            async for event in self._stream(client, run):
                yield event

    async def _stream(self, client: httpx.AsyncClient, run: _Run) -> AsyncIterator[Any]:
        async with client.stream("POST", run.url, content=run.body, headers=run.headers,
                                 timeout=self.timeout) as response:
            if not response.is_success:
                raise _status_error(response, await _first_bytes(response.aiter_bytes()))
            reader = _Reader(response, self.max_buffer_size)
            async for chunk in response.aiter_bytes():
                for event in reader.feed(chunk):
                    yield event
            for event in reader.close():
                yield event

    async def run_agent(self, input: Any) -> RunAgentResult:
        """Run to the end and apply the events to the input's messages and state.
        ``RUN_ERROR`` raises :class:`~agui_fast.errors.AgentRunError`."""
        applier = _applier(*_input_parts(input))
        async for event in self.run(input):
            applier.apply(event)
        return _result(applier)


class SyncHttpAgent(_BaseAgent):
    """:class:`HttpAgent` for synchronous code (``httpx.Client``); same arguments."""

    _client_class = httpx.Client

    def run(self, input: Any) -> Iterator[Any]:
        """Post ``input`` and yield the run's events as they arrive."""
        run = _Run(self, input)
        if self.client is not None:
            yield from self._stream(self.client, run)
            return
        with httpx.Client(timeout=self._client_timeout) as client:
            yield from self._stream(client, run)

    def _stream(self, client: httpx.Client, run: _Run) -> Iterator[Any]:
        with client.stream("POST", run.url, content=run.body, headers=run.headers, timeout=self.timeout) as response:
            if not response.is_success:
                raise _status_error(response, _first_bytes_sync(response.iter_bytes()))
            reader = _Reader(response, self.max_buffer_size)
            for chunk in response.iter_bytes():
                yield from reader.feed(chunk)
            yield from reader.close()

    def run_agent(self, input: Any) -> RunAgentResult:
        """Run to the end and apply the events (see :meth:`HttpAgent.run_agent`)."""
        applier = _applier(*_input_parts(input))
        for event in self.run(input):
            applier.apply(event)
        return _result(applier)


def _result(applier: "_RunApplier") -> RunAgentResult:
    if applier.error is not None:
        raise AgentRunError(applier.error, messages=applier.messages, state=applier.state)
    return RunAgentResult(
        messages=applier.messages, state=applier.state, new_messages=applier.new_messages, result=applier.result
    )


class _Head:
    """The first ``_ERROR_BODY_BYTES`` of an error response's body."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = b""

    def add(self, chunk: bytes) -> bool:
        """Keep ``chunk``; True once enough is kept."""
        self.data = (self.data + chunk)[:_ERROR_BODY_BYTES]
        return len(self.data) >= _ERROR_BODY_BYTES


async def _first_bytes(chunks: Any) -> bytes:
    head = _Head()
    async for chunk in chunks:
        if head.add(chunk):
            break
    return head.data


def _first_bytes_sync(chunks: Any) -> bytes:
    head = _Head()
    for chunk in chunks:
        if head.add(chunk):
            break
    return head.data


# -- applying events -------------------------------------------------------------------------
# The stream-semantics engine (agui_fast.stream: @ag-ui/client's compatibility boundary,
# transformChunks and defaultApplyEvents) applies the events; run_agent only keeps what
# the engine does not: the run's result and error, and which messages are new.


def _applier(messages: List[Any], state: Any) -> "_RunApplier":
    return _RunApplier(messages, state)


class _RunApplier:
    """Messages and state after each event (the engine's), plus the run's outcome."""

    __slots__ = ("_engine", "_initial_ids", "result", "error")

    def __init__(self, messages: List[Any], state: Any) -> None:
        self._engine = EventApplier(messages, state)
        self._initial_ids = {m.id for m in messages}
        self.result: Any = None
        self.error: Any = None

    @property
    def messages(self) -> List[Any]:
        return self._engine.messages

    @property
    def state(self) -> Any:
        return self._engine.state

    @property
    def new_messages(self) -> List[Any]:
        return [m for m in self.messages if m.id not in self._initial_ids]

    def apply(self, event: Any) -> None:
        self._engine.apply(event)
        t = event.type
        if t is EventType.RUN_FINISHED:
            self.result = event.result
        elif t is EventType.RUN_ERROR:
            self.error = event
