"""Consuming AG-UI agents over HTTP: :class:`HttpAgent` (async) and :class:`SyncHttpAgent`.

The Python counterpart of ``@ag-ui/client``'s ``HttpAgent``, on httpx (``pip install
'agui-fast[client]'``)::

    agent = HttpAgent("http://127.0.0.1:8000/agent")
    async for event in agent.run(run_input):       # typed events, as they arrive
        ...
    result = await agent.run_agent(run_input)      # applied: result.messages, result.state

``run`` posts the ``RunAgentInput`` (an ``agui_fast.core`` Struct, an ``ag_ui.core`` model or
a dict) and reads the response as SSE or protobuf as its ``Content-Type`` says
(``accept="protobuf"`` only asks for protobuf). ``run_agent`` runs the response through
the client pipeline of ``agui_fast.stream`` (in Rust: the 0.x compatibility boundary and
an older peer's shims, the schema stage, chunk expansion, the sequence rules, the
reducer) into messages and state. The stream is checked as it goes:

* an HTTP error status raises :class:`~agui_fast.errors.HttpStatusError` (status and the
  body's first bytes), another media type :class:`~agui_fast.errors.ContentTypeError`;
* the first bad frame ends the stream: what came before it was delivered (and applied),
  nothing after it, also not the frames of the same network chunk; ``run`` raises the
  decoders' errors, ``run_agent`` the pipeline's (``EventValidationError`` naming a
  malformed field, ``VerificationError`` naming a broken rule, ...);
* a stream that ends before its last run is over (no ``RUN_FINISHED`` or ``RUN_ERROR``
  after the last ``RUN_STARTED``), that is cut or cannot be decompressed, raises
  :class:`~agui_fast.errors.IncompleteRunError`; ``deadline`` (seconds) bounds the whole
  run, :class:`~agui_fast.errors.RunTimeoutError` past it;
* ``RUN_ERROR`` is an event from ``run`` and an :class:`~agui_fast.errors.AgentRunError`
  from ``run_agent``;
* ``run`` skips an event type this version does not know (a newer protocol) with a
  warning; ``run_agent``'s schema stage drops it (and strips unknown material), its
  warnings on the result;
* leaving the loop early (``break``, cancellation) closes the connection.

The request: the input as the reference client sends it (``stream`` docs, "The run input a
client sends"): legacy ``binary`` content parts upgraded, the era's shims for an older peer
(``max_protocol_version``), ``protocolVersion`` declared when ``protocol_version`` is set.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, AsyncIterator, Callable, Iterator, List, Mapping, Optional

import msgspec

try:
    import anyio
    import httpx
except ImportError as exc:  # pragma: no cover - the optional dependency
    raise ImportError("agui_fast.client needs httpx: pip install 'agui-fast[client]'") from exc

from . import _native
from .core import Event, Message
from ._typed import EVENT_LIST, MESSAGE_LIST
from .decoder import decode_as, decode_event
from .encoder import AGUI_LEGACY_MEDIA_TYPE, AGUI_MEDIA_TYPE, SSE_MEDIA_TYPE
from .errors import (
    AgentRunError,
    AguiError,
    ContentTypeError,
    DecodeError,
    EventValidationError,
    HttpStatusError,
    IncompleteRunError,
    RunTimeoutError,
)
from .stream import StreamWarning, _warnings

__all__ = ["HttpAgent", "SyncHttpAgent", "RunAgentResult", "DEFAULT_TIMEOUT"]

#: Connect/write/pool 30 s; a read may wait 5 minutes (an agent can think silently).
DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=300.0)

_ACCEPT = {
    "sse": SSE_MEDIA_TYPE,
    # SSE stays acceptable: a server that cannot send protobuf answers SSE, read as such.
    "protobuf": f"{AGUI_MEDIA_TYPE}, {SSE_MEDIA_TYPE};q=0.5",
}
_ERROR_BODY_BYTES = 1024


class RunAgentResult(msgspec.Struct, kw_only=True):
    """What ``run_agent`` returns: the final ``messages`` and ``state``, the messages that
    the run added (``new_messages``, as ``@ag-ui/client``'s ``newMessages``), the last
    successful ``RUN_FINISHED`` event's ``result``, the ``pending_interrupts`` of a run
    that finished with an interrupt outcome, and the ``warnings`` of the run
    (:class:`~agui_fast.stream.StreamWarning`: about the request, the stream's
    unrecognised material, the reducer ...)."""

    messages: List[Any]
    state: Any
    new_messages: List[Any]
    result: Any = None
    pending_interrupts: List[Any] = msgspec.field(default_factory=list)
    warnings: List[StreamWarning] = msgspec.field(default_factory=list)


class _Run:
    """The request of one run (what both agents send) and the messages it starts from."""

    __slots__ = ("url", "headers", "body", "messages", "state", "warnings", "timeout", "deadline", "reader")

    def __init__(self, agent: "_BaseAgent", run_input: Any) -> None:
        self.url = agent.url
        self.headers = agent._request_headers
        self.body, messages, warnings_ = _native.prepare_run_input(
            _as_input(run_input),
            max_protocol_version=agent.max_protocol_version,
            protocol_version=agent.protocol_version,
        )
        self.messages = messages
        self.state = _input_state(run_input)
        self.warnings: List[StreamWarning] = _warnings(warnings_)
        self.deadline = None if agent.deadline is None else time.monotonic() + agent.deadline
        self.timeout = agent._timeout_within(agent.deadline)
        self.reader: Optional[_Reader] = None  # the response's, once it is read

    def failed(self, exc: AguiError) -> None:
        """Give what ``run_agent`` raises the run's warnings so far (an ``AgentRunError``
        carries the result, warnings included, already)."""
        if isinstance(exc, AgentRunError):
            return
        exc.warnings = self.warnings + ([] if self.reader is None else _warnings(self.reader.native.take_warnings()))

    def result(self) -> RunAgentResult:
        assert self.reader is not None
        return self.reader.result(self)

    def remaining(self) -> Optional[float]:
        """Seconds left before the deadline (None: no deadline); past it raises."""
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RunTimeoutError("the run did not finish within its deadline")
        return left


class _Reader:
    """One response read chunk by chunk through the native run reader (one engine for both
    agents): framing, the first error ending the stream, the run's completion. Without a
    pipeline (``run``) the frames come out as typed events; with one (``run_agent``) they
    are applied."""

    __slots__ = ("native", "pipeline", "on_event")

    def __init__(self, response: httpx.Response, agent: "_BaseAgent", run: _Run, pipeline: bool,
                 on_event: Optional[Callable[[Any], Any]] = None) -> None:
        media = _media_type(response)
        if media == SSE_MEDIA_TYPE:
            wire = "sse"
        elif media in (AGUI_MEDIA_TYPE, AGUI_LEGACY_MEDIA_TYPE):
            wire = "protobuf"
        else:
            raise ContentTypeError(
                f"expected {SSE_MEDIA_TYPE} or {AGUI_MEDIA_TYPE}, got {response.headers.get('content-type')!r}",
                status_code=response.status_code,
                content_type=response.headers.get("content-type"),
            )
        options: dict = {}
        if agent.max_buffer_size is not None:
            options["max_frame_size"] = agent.max_buffer_size
        if pipeline:
            options.update(
                verify=agent.verify,
                schema=agent.schema,
                max_protocol_version=agent.max_protocol_version,
                protocol_version=agent.protocol_version,
                record=on_event is not None,
            )
            self.native = _native.RunReader(wire, run.messages, run.state, **options)
        else:
            self.native = _native.RunReader(wire, pipeline=False, **options)
        self.pipeline = pipeline
        self.on_event = on_event

    def feed(self, chunk: bytes) -> Iterator[Any]:
        """The events of a chunk (``run``; with ``run_agent`` none: they are applied and
        handed to ``on_event``), then what ended the stream, raised."""
        return self._out(*self.native.feed(chunk))

    def close(self) -> Iterator[Any]:
        return self._out(*self.native.finish())

    def _out(self, delivered: Any, error: Optional[BaseException]) -> Iterator[Any]:
        if self.pipeline:
            if delivered is not None and self.on_event is not None:
                for event in decode_as(delivered, EVENT_LIST):
                    self.on_event(event)
            if error is not None:
                raise error
            return
        typed = _typed(self.native.take_frames())
        for w in self.native.take_warnings():
            warnings.warn(w[1], stacklevel=4)
        yield from typed.events
        failure = typed.error or error
        if failure is not None:
            if isinstance(failure, DecodeError):
                failure.events = typed.events  # what the call decoded before it
            raise failure

    def result(self, run: _Run) -> RunAgentResult:
        native = self.native
        warnings_ = run.warnings + _warnings(native.take_warnings())
        messages = decode_as(native.messages(), MESSAGE_LIST)
        initial = {m.id for m in decode_as(run.messages, MESSAGE_LIST)}
        result, run_error = native.run_outcome()
        state = native.state(shared=True)
        interrupts = msgspec.json.decode(native.pending_interrupts())
        if run_error is not None:
            exc = AgentRunError(decode_event(run_error), messages=messages, state=state)
            exc.warnings = warnings_
            raise exc
        return RunAgentResult(
            messages=messages,
            state=state,
            new_messages=[m for m in messages if m.id not in initial],
            result=None if result is None else msgspec.json.decode(result),
            pending_interrupts=interrupts,
            warnings=warnings_,
        )


class _Typed:
    """The typed events of one chunk's frames, up to the first one that is no event."""

    __slots__ = ("events", "error")

    def __init__(self) -> None:
        self.events: List[Any] = []
        self.error: Optional[DecodeError] = None


def _typed(frames: List[bytes]) -> _Typed:
    """Frames (JSON texts) as typed events: in one decoder call, or frame by frame when
    that fails (an event type this version does not know is skipped with a warning; any
    other failure ends the chunk's events there)."""
    out = _Typed()
    if not frames:
        return out
    try:
        out.events = decode_as(b"[" + b",".join(frames) + b"]", EVENT_LIST)
        return out
    except DecodeError:
        pass
    for frame in frames:
        try:
            out.events.append(decode_event(frame))
        except EventValidationError as exc:
            if _unknown_type(exc):
                warnings.warn(f"skipped an event of a type this version does not know: {exc}", stacklevel=5)
                continue
            out.error = exc
            break
        except DecodeError as exc:
            out.error = exc
            break
    return out


def _unknown_type(exc: DecodeError) -> bool:
    """A frame whose ``type`` is a string this version does not know (a newer protocol's
    event), as opposed to a malformed one."""
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


def _cut(exc: Exception, run: _Run) -> IncompleteRunError:
    """What an httpx error while reading the body means for the run."""
    if run.deadline is not None and time.monotonic() >= run.deadline:
        error: IncompleteRunError = RunTimeoutError("the run did not finish within its deadline")
    elif isinstance(exc, httpx.DecodingError):
        error = IncompleteRunError(f"the response body could not be decoded: {exc}")
    else:
        error = IncompleteRunError(f"the stream was cut before the run was over: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _as_input(run_input: Any) -> Any:
    if isinstance(run_input, Mapping):
        return dict(run_input)
    if isinstance(run_input, (msgspec.Struct,)) or (type(run_input).__name__ == "RunAgentInput" and hasattr(run_input, "model_dump")):
        return run_input  # our Struct or the reference's pydantic model: the native writer knows both
    raise TypeError(f"input must be a RunAgentInput or a dict, not {type(run_input).__name__}")


def _input_state(run_input: Any) -> Any:
    """The state the run starts from: the input's (``{}`` when it has none)."""
    if isinstance(run_input, Mapping):
        state = run_input.get("state")
    else:
        state = getattr(run_input, "state", None)
    return {} if state is None else state


class _BaseAgent:
    __slots__ = (
        "url",
        "headers",
        "accept",
        "timeout",
        "max_buffer_size",
        "client",
        "max_protocol_version",
        "protocol_version",
        "verify",
        "schema",
        "deadline",
        "_request_headers",
    )
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
        max_protocol_version: Optional[str] = None,
        protocol_version: Optional[str] = None,
        verify: bool = True,
        schema: bool = True,
        deadline: Optional[float] = None,
    ) -> None:
        if not isinstance(url, (str, httpx.URL)):
            raise TypeError(f"url must be a str, not {type(url).__name__}")
        if accept not in _ACCEPT:
            raise ValueError(f"accept must be 'sse' or 'protobuf', not {accept!r}")
        if client is not None and not isinstance(client, self._client_class):
            raise TypeError(f"client must be an httpx.{self._client_class.__name__}, not {type(client).__name__}")
        for name, value in (("max_protocol_version", max_protocol_version), ("protocol_version", protocol_version)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        if deadline is not None:
            if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
                raise TypeError(f"deadline must be a number of seconds, not {type(deadline).__name__}")
            if not deadline > 0:
                raise ValueError(f"deadline must be > 0, not {deadline!r}")
        # The era and the version are checked here, once (a bad one is a ValueError).
        _native.prepare_run_input(
            {"threadId": "", "runId": "", "messages": []},
            max_protocol_version=max_protocol_version,
            protocol_version=protocol_version,
        )
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
        self.max_protocol_version = max_protocol_version
        self.protocol_version = protocol_version
        self.verify = verify
        self.schema = schema
        self.deadline = deadline
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

    def _timeout_within(self, deadline: Optional[float]) -> Any:
        """The request's timeout: the agent's, no longer than the deadline (so a server that
        sends nothing at all is given up on by then too)."""
        if deadline is None:
            return self.timeout
        base = self.timeout
        if base is httpx.USE_CLIENT_DEFAULT:
            base = self.client.timeout if self.client is not None else DEFAULT_TIMEOUT
        base = httpx.Timeout(base)

        def cap(t: Optional[float]) -> float:
            return deadline if t is None else min(t, deadline)

        return httpx.Timeout(connect=cap(base.connect), read=cap(base.read), write=cap(base.write), pool=cap(base.pool))


class HttpAgent(_BaseAgent):
    """An AG-UI agent behind an HTTP endpoint, read with httpx (async).

    ``headers``: sent with every request (e.g. authorization). ``accept``: ``"sse"`` or
    ``"protobuf"`` (a preference: the response's content type decides the decoder).
    ``timeout``: httpx timeout (default: the given client's, else ``DEFAULT_TIMEOUT``). ``client``: an ``httpx.AsyncClient`` to use (its
    connection pool, proxies, transport); by default each run opens and closes its own.
    ``max_buffer_size``: the limit for one event (SSE buffer / protobuf frame).
    ``deadline``: seconds the whole run may take (request to the end of the stream; keep-alive
    comments do not extend it), :class:`~agui_fast.errors.RunTimeoutError` past it.

    The peer and the pipeline (``run_agent``; the reference client's defaults):
    ``max_protocol_version``: the agent's era, when it is older than 1.0 (``"0.0.39"``:
    content flattened to text for it; ``"0.0.57"`` or older: subagent events and attribution
    dropped with a warning); ``protocol_version``: the protocol version this client declares
    on the request and compares with the producer's ``RUN_STARTED.protocolVersion`` (a
    newer or uninterpretable one warns) — off by default (``None``), ``"1.1"`` for a 1.1
    peer; ``verify=False``: the sequence rules unchecked; ``schema=False``: events not held
    to the protocol's schema.
    """

    _client_class = httpx.AsyncClient

    async def run(self, input: Any) -> AsyncIterator[Any]:
        """Post ``input`` and yield the run's events as they arrive."""
        run = _Run(self, input)
        for w in run.warnings:
            warnings.warn(w[1], stacklevel=2)
        async for event in self._with_client(run, pipeline=False):
            yield event

    async def _with_client(self, run: _Run, pipeline: bool, on_event: Any = None) -> AsyncIterator[Any]:
        if self.client is not None:
            async for event in self._stream(self.client, run, pipeline, on_event):
                yield event
            return
        async with httpx.AsyncClient(timeout=self._client_timeout) as client:
            async for event in self._stream(client, run, pipeline, on_event):
                yield event

    async def _stream(self, client: httpx.AsyncClient, run: _Run, pipeline: bool, on_event: Any) -> AsyncIterator[Any]:
        async with client.stream("POST", run.url, content=run.body, headers=run.headers, timeout=run.timeout) as response:
            if not response.is_success:
                raise _status_error(response, await _first_bytes(response.aiter_bytes()))
            reader = run.reader = _Reader(response, self, run, pipeline, on_event)
            chunks = response.aiter_bytes().__aiter__()
            while True:
                try:
                    left = run.remaining()
                    if left is None:
                        chunk = await chunks.__anext__()
                    else:
                        with anyio.fail_after(left):
                            chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise RunTimeoutError("the run did not finish within its deadline") from None
                except (httpx.TransportError, httpx.DecodingError) as exc:
                    raise _cut(exc, run) from exc
                for event in reader.feed(chunk):
                    yield event
            for event in reader.close():
                yield event

    async def run_agent(self, input: Any, *, on_event: Optional[Callable[[Any], Any]] = None) -> RunAgentResult:
        """Run to the end through the client pipeline and apply the events to the input's
        messages and state. ``on_event(event)`` is called with each event as it reaches the
        reducer (typed). ``RUN_ERROR`` raises :class:`~agui_fast.errors.AgentRunError`."""
        _check_callback(on_event)
        run = _Run(self, input)
        try:
            async for _ in self._with_client(run, pipeline=True, on_event=on_event):
                pass
            return run.result()
        except AguiError as exc:
            run.failed(exc)
            raise


class SyncHttpAgent(_BaseAgent):
    """:class:`HttpAgent` for synchronous code (``httpx.Client``); same arguments. A
    ``deadline`` is checked as each chunk arrives, and the request's timeouts are no longer
    than it."""

    _client_class = httpx.Client

    def run(self, input: Any) -> Iterator[Any]:
        """Post ``input`` and yield the run's events as they arrive."""
        run = _Run(self, input)
        for w in run.warnings:
            warnings.warn(w[1], stacklevel=2)
        yield from self._with_client(run, pipeline=False)

    def _with_client(self, run: _Run, pipeline: bool, on_event: Any = None) -> Iterator[Any]:
        if self.client is not None:
            yield from self._stream(self.client, run, pipeline, on_event)
            return
        with httpx.Client(timeout=self._client_timeout) as client:
            yield from self._stream(client, run, pipeline, on_event)

    def _stream(self, client: httpx.Client, run: _Run, pipeline: bool, on_event: Any) -> Iterator[Any]:
        with client.stream("POST", run.url, content=run.body, headers=run.headers, timeout=run.timeout) as response:
            if not response.is_success:
                raise _status_error(response, _first_bytes_sync(response.iter_bytes()))
            reader = run.reader = _Reader(response, self, run, pipeline, on_event)
            chunks = response.iter_bytes()
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    break
                except (httpx.TransportError, httpx.DecodingError) as exc:
                    raise _cut(exc, run) from exc
                run.remaining()
                yield from reader.feed(chunk)
            yield from reader.close()

    def run_agent(self, input: Any, *, on_event: Optional[Callable[[Any], Any]] = None) -> RunAgentResult:
        """Run to the end and apply the events (see :meth:`HttpAgent.run_agent`)."""
        _check_callback(on_event)
        run = _Run(self, input)
        try:
            for _ in self._with_client(run, pipeline=True, on_event=on_event):
                pass
            return run.result()
        except AguiError as exc:
            run.failed(exc)
            raise


def _check_callback(on_event: Any) -> None:
    if on_event is not None and not callable(on_event):
        raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")


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
