"""Stream semantics of the reference client (``@ag-ui/client`` 1.0): what a consumer does
with a decoded event stream or a recorded log. The engine is ``agui_core::stream`` (Rust);
this module types its results.

- :func:`expand_chunks` / :class:`ChunkExpander`: ``*_CHUNK`` events become explicit
  START / CONTENT (ARGS) / END (``transformChunks``);
- :func:`verify_events` / :class:`EventVerifier`: the sequence rules R01-R31
  (``verifyEvents``), a violation raises :class:`~agui_fast.errors.VerificationError`;
- :func:`replay` / :class:`EventApplier`: events applied to messages and state as the
  reference client runs them (0.x compatibility boundary and an older peer's shims, the
  schema stage, chunk expansion, optional verification, ``defaultApplyEvents``);
- :func:`compact_events` (``compactEvents``);
- :func:`replay_log` / :func:`replay_logs`: whole SSE logs replayed inside Rust with the
  GIL released, without a Python object per event (several logs on Rust threads).

Events may be our Structs, ``ag_ui`` pydantic models, plain dicts (any JSON object, like
the TypeScript client takes) or JSON text (``bytes``/``str``). Events and messages come
back as typed Structs, or as plain JSON values with ``raw=True``. 0.x input is converted
by the decoders (typed events are already 1.0) and, for dicts and JSON text, by the
engine's compatibility boundary.

Warnings (what the reference prints with ``console.warn``) are collected, never issued
through :mod:`warnings`: ``Replay.warnings`` and ``EventApplier.warnings`` hold
:class:`StreamWarning` values (``(index, message)`` pairs that also carry ``kind``,
``ids`` and ``path``), ``Change.warnings`` the messages of one event.

Every entry point takes ``max_depth=`` (default ``DEFAULT_MAX_DEPTH``, 512:
``agui_core::limits``): the deepest nesting an event's JSON may have, the event object
included, and the limit of the values its state and activity patches build. Replays and
compaction take ``max_patch_bytes=`` (default ``DEFAULT_MAX_PATCH_BYTES``, 128 MiB): the
most one state or activity patch may build (the values it adds and copies, about their
bytes in memory), and the most the ``copy`` operations of all of them may copy together;
a patch past it fails as any failing patch does (a warning, the state unchanged).

Errors: an unreadable event (not JSON, not an object, nested deeper than ``max_depth``)
raises :class:`~agui_fast.errors.InvalidJsonError` (with ``frame_index``), a malformed
value in a known field :class:`~agui_fast.errors.EventValidationError` (``frame_index``,
``field``), a rule violation :class:`~agui_fast.errors.VerificationError`, and an
event the engine rejects as the reference throws (a chunk stream it cannot expand, an
event the reducer cannot apply) :class:`~agui_fast.errors.StreamError`. Replays keep what
was applied before the error: the exception's ``replay`` attribute.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, Union, get_args

import msgspec

from . import _native, _report_page
from ._native import DEFAULT_MAX_PATCH_BYTES
from ._plumbing import DEFAULT_MAX_DEPTH
from .core import (
    AddOperation,
    CopyOperation,
    Event,
    Message,
    MoveOperation,
    RemoveOperation,
    ReplaceOperation,
    StateDeltaEvent,
    TestOperation,
    ToolCall,
)
from .core._convert import convert_fast
from .core._given import given
from ._typed import EVENT_LIST, MESSAGE_LIST, nested_call
from .decoder import decode_as
from .errors import AguiError, StreamError, VerificationError

__all__ = [
    "expand_chunks",
    "ChunkExpander",
    "verify_events",
    "EventVerifier",
    "replay",
    "Replay",
    "EventApplier",
    "Change",
    "StreamWarning",
    "compact_events",
    "replay_log",
    "replay_logs",
    "StreamError",
    "VerificationError",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_PATCH_BYTES",
]

_plain = msgspec.json.Decoder().decode


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _finite(value: Any, max_depth: int) -> Any:
    """A copy of ``value`` (plain JSON values) with each non-finite float as None."""
    root = [value]
    stack: List[Tuple[Any, Any, int]] = [(root, 0, 0)]
    while stack:
        box, key, depth = stack.pop()
        v = box[key]
        if isinstance(v, float) and not math.isfinite(v):
            box[key] = None
        elif isinstance(v, (dict, list, tuple)):
            if depth >= max_depth:
                raise ValueError(f"nested deeper than {max_depth} levels")
            if isinstance(v, dict):
                v = box[key] = dict(v)
                stack.extend((v, k, depth + 1) for k in v)
            else:
                v = box[key] = list(v)
                stack.extend((v, i, depth + 1) for i in range(len(v)))
    return root[0]


def _json_text(value: Any, indent: Optional[int] = None) -> str:
    """``value`` (plain JSON values) as JSON text as ``JSON.stringify`` and the native writer
    write it: a non-finite float as null, a lone surrogate as its ``\\udXXX`` escape
    (``json.dumps`` writes ``Infinity``, which JSON readers refuse, and keeps the lone
    surrogate, which UTF-8 cannot hold)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent)
    except ValueError:  # a non-finite float (rare)
        text = json.dumps(_finite(value, _native.MAX_DEPTH_CAP), ensure_ascii=False, indent=indent)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _surrogate_json(obj: Any) -> bytes:
    """JSON text of an event the native writer refuses (a ``str`` with a lone surrogate,
    which the decoders keep): escaped as ``\\udXXX``, which the engine keeps and joins as
    the reference does; the rest as the native writer writes it. Rare, so the slow route is
    fine."""
    if hasattr(obj, "model_dump"):  # a pydantic model (whose JSON mode refuses the surrogate)
        obj = obj.model_dump(by_alias=True, exclude_none=True)
    return _json_text(msgspec.to_builtins(obj)).encode()


_native.set_surrogate_writer(_surrogate_json)
# A STATE_DELTA given as one of these goes to the state without JSON text.
_native.set_state_delta_types(
    StateDeltaEvent, [AddOperation, RemoveOperation, ReplaceOperation, MoveOperation, CopyOperation, TestOperation]
)
# A whole-log replay builds these itself when msgspec's conversion would keep its values as they are.
_native.set_message_types(list(get_args(Message)))


def _load(data: bytes) -> Any:
    """Plain JSON values (a lone surrogate escape, which msgspec refuses, via json)."""
    try:
        return _plain(data)
    except msgspec.DecodeError:
        return json.loads(data)


def _events(data: bytes, raw: bool) -> List[Any]:
    return nested_call(_load, data) if raw else nested_call(_typed_events, data)


def _typed_events(data: bytes) -> List[Any]:
    return decode_as(data, EVENT_LIST)


def _messages(values: List[Any], raw: bool) -> List[Any]:
    # (a whole-log replay hands over Structs already when it could build them all)
    if raw or not values or type(values[0]) is not dict:
        return values
    return convert_fast(values, MESSAGE_LIST)


class StreamWarning(Tuple[Optional[int], str]):
    """One warning of the stream pipeline: an ``(index, message)`` pair (it unpacks and
    compares as one) that also says ``kind`` — what warned: ``"compat"`` (the 0.x
    boundary, an older peer's shims), ``"schema"`` (unrecognised material stripped, an
    event dropped), ``"chunks"``, ``"apply"`` (the reducer: a failed patch, an id
    clash), ``"version"`` (the producer's protocol version), ``"transport"`` (frames
    skipped), ``"request"`` (the run input a client sends; ``index`` is then None) —
    ``ids`` (the ids it names, a tuple) and ``path`` (where the material it is about sat
    in the event, ``"/delta/0"``, or None). ``index`` is the input event's position."""

    kind: str
    ids: Tuple[str, ...]
    path: Optional[str]

    def __new__(cls, index: Optional[int], message: str, kind: str = "apply", ids: Tuple[str, ...] = (), path: Optional[str] = None) -> "StreamWarning":
        self = tuple.__new__(cls, (index, message))
        self.kind = kind
        self.ids = tuple(ids)
        self.path = path
        return self

    # The event's position, as the pair's first item (replacing the tuple's ``index()``
    # search, which a warning has no use for).
    @property
    def index(self) -> Optional[int]:  # type: ignore[override]
        return self[0]

    @property
    def message(self) -> str:
        return self[1]

    def __repr__(self) -> str:
        return f"StreamWarning(index={self[0]!r}, kind={self.kind!r}, message={self[1]!r}, ids={self.ids!r}, path={self.path!r})"

    def __reduce__(self) -> Any:
        return (StreamWarning, (self[0], self[1], self.kind, self.ids, self.path))


def _warnings(native: List[Tuple[Any, ...]]) -> List[StreamWarning]:
    """The native ``(index, message, kind, ids, path)`` tuples as :class:`StreamWarning`."""
    return [StreamWarning(*w) for w in native]


class Replay(msgspec.Struct, kw_only=True):
    """The outcome of a replay: final ``messages`` (typed, or dicts with ``raw=True``),
    ``state``, ``pending_interrupts`` (of the last ``RUN_FINISHED`` with an interrupt
    outcome) and ``warnings`` (:class:`StreamWarning`: ``(index, message)`` pairs)."""

    messages: List[Any]
    state: Any
    pending_interrupts: List[Any]
    warnings: List[StreamWarning]

    def _repr_html_(self) -> str:
        """A notebook's view: the messages, state, pending interrupts and warnings."""
        page = _report_page.replay_page(self.messages, self.state, self.pending_interrupts, self.warnings)
        return _report_page.frame(page)


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """What one event changed, as the reference's mutations report it: ``messages`` /
    ``state`` changed, ``message`` the position of the one message it touched (or None),
    ``interrupts`` the pending interrupts were replaced, ``warnings`` what it warned."""

    messages: bool
    state: bool
    message: Optional[int]
    interrupts: bool
    warnings: Tuple[str, ...] = ()


def _depth(max_depth: int) -> int:
    """A ``max_depth=`` argument, checked as every numeric argument is (``_native.check_int``)."""
    return _native.check_int("max_depth", max_depth, 0, _native.MAX_DEPTH_CAP)


def _replay(parts: Tuple[List[Any], Any, List[Any], list, Any], raw: bool) -> Replay:
    """A whole-log replay's result from the native tuple (raises its error, if any)."""
    messages, state, interrupts, warnings, error = parts
    result = Replay(
        messages=_messages(messages, raw), state=state, pending_interrupts=interrupts, warnings=_warnings(warnings)
    )
    if error is not None:
        error.replay = result  # what was applied before the error
        raise error
    return result


# -- chunk expansion -------------------------------------------------------------------


def expand_chunks(events: Iterable[Any], *, raw: bool = False, max_depth: int = DEFAULT_MAX_DEPTH) -> List[Any]:
    """Expand ``*_CHUNK`` events as the reference ``transformChunks`` does. Raises
    :class:`StreamError` where it throws; the error's ``events`` are those expanded before."""
    data, _warnings, error = _native.expand_chunks(events, max_depth=_depth(max_depth))
    out = _events(data, raw)
    if error is not None:
        error.events = out
        raise error
    return out


class ChunkExpander:
    """Incremental :func:`expand_chunks`: ``push(event)`` returns the events it expands to
    (a pending chunk stream is closed by the event that ends it)."""

    __slots__ = ("_native", "_raw", "warnings")

    def __init__(self, *, raw: bool = False, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._native = _native.ChunkExpander(max_depth=_depth(max_depth))
        self._raw = raw
        self.warnings: List[StreamWarning] = []

    def push(self, event: Any) -> List[Any]:
        try:
            return _events(self._native.push(event), self._raw)
        finally:
            self.warnings.extend(_warnings(self._native.take_warnings()))


# -- verification ----------------------------------------------------------------------


def _as_verified(event: Any) -> Any:
    """An event as the verifier reads it: a Struct or pydantic model given a top-level
    optional field as ``None`` explicitly carries it as ``null`` (which the reference's
    ``verifyEvents`` rejects: "omit it entirely"), though its JSON leaves it out;
    anything else as it is."""
    if isinstance(event, (dict, bytes, bytearray, str)):
        return event
    names: Any
    if isinstance(event, msgspec.Struct):
        names = given(event)
        if not names:
            return event
        wire = {f.name: f.encode_name for f in msgspec.structs.fields(type(event))}
    else:
        names = getattr(event, "model_fields_set", None)
        if not names:
            return event
        wire = {n: (f.alias or n) for n, f in type(event).model_fields.items()}
    nulls = [wire[n] for n in names if n in wire and getattr(event, n, 0) is None]
    if not nulls:
        return event
    data = json.loads(_native.dumps(event))
    data.update(dict.fromkeys(nulls))
    return data


def verify_events(events: Iterable[Any], *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
    """Check a whole sequence against the reference ``verifyEvents`` (R01-R31). Raises
    :class:`VerificationError` at the first violation (``events``: those that passed).
    A Struct or pydantic model given an optional field as ``None`` explicitly is read with
    it as ``null``, as the reference reads a ``null``."""
    max_depth = _depth(max_depth)
    events = events if isinstance(events, (list, tuple)) else list(events)
    try:
        _native.verify_events([_as_verified(e) for e in events], max_depth=max_depth)
    except VerificationError as exc:
        exc.events = list(events[: exc.index])
        raise


class EventVerifier:
    """Incremental :func:`verify_events`: ``push(event)`` raises :class:`VerificationError`
    on a violation (the stream is then over)."""

    __slots__ = ("_native",)

    def __init__(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._native = _native.EventVerifier(max_depth=_depth(max_depth))

    def push(self, event: Any) -> None:
        self._native.push(_as_verified(event))


# -- replay ----------------------------------------------------------------------------


def replay(
    events: Iterable[Any],
    *,
    messages: Optional[Sequence[Any]] = None,
    state: Any = None,
    verify: bool = False,
    expand: bool = True,
    compat: bool = True,
    schema: bool = True,
    max_protocol_version: Optional[str] = None,
    protocol_version: Optional[str] = None,
    on_event: Optional[Callable[[Any], Any]] = None,
    raw: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
) -> Replay:
    """Apply ``events`` to ``messages`` and ``state`` (default: none and ``{}``) as the
    reference client does, and return the final :class:`Replay`. ``verify``: check the
    rules first; ``expand=False``: the reducer alone (``defaultApplyEvents``: a chunk event
    raises :class:`StreamError`); ``compat=False``: no 0.x compatibility boundary;
    ``schema=False``: events not held to the protocol's schema (unknown material and
    types pass, a malformed field reaches the stages); ``max_protocol_version``: the
    producer's era (``"0.0.57"``: its shims run, as for an old peer);
    ``protocol_version``: the version this side speaks (``"1.1"``: a ``RUN_STARTED``
    declaring a newer or an uninterpretable one warns); ``on_event(event)``: called with
    each event as it reaches the reducer (after the boundary, the schema stage, chunk
    expansion and verification)."""
    ap = EventApplier(
        messages,
        state,
        verify=verify,
        expand=expand,
        compat=compat,
        schema=schema,
        max_protocol_version=max_protocol_version,
        protocol_version=protocol_version,
        on_event=on_event,
        raw=raw,
        max_depth=max_depth,
        max_patch_bytes=max_patch_bytes,
    )
    try:
        ap.apply_many(events)
    except AguiError as exc:
        exc.replay = ap._result(shared=True)  # what was applied before the error
        raise
    return ap._result(shared=True)


class EventApplier:
    """Incremental :func:`replay` for a live stream: ``apply(event)`` returns the
    :class:`Change`. Messages and state live in Rust; ``messages``, ``message(i)``,
    ``state`` and ``pending_interrupts`` build Python values when read. An error leaves
    messages and state as before the failing event. Keywords as for :func:`replay`."""

    __slots__ = ("_native", "_raw", "_on_event", "warnings")

    def __init__(
        self,
        messages: Optional[Sequence[Any]] = None,
        state: Any = None,
        *,
        verify: bool = False,
        expand: bool = True,
        compat: bool = True,
        schema: bool = True,
        max_protocol_version: Optional[str] = None,
        protocol_version: Optional[str] = None,
        on_event: Optional[Callable[[Any], Any]] = None,
        raw: bool = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
    ) -> None:
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable, not {type(on_event).__name__}")
        self._native = _native.Replayer(
            messages,
            state,
            verify=verify,
            expand=expand,
            compat=compat,
            schema=schema,
            max_protocol_version=max_protocol_version,
            protocol_version=protocol_version,
            record=on_event is not None,
            max_depth=_depth(max_depth),
            max_patch_bytes=max_patch_bytes,
        )
        self._raw = raw
        self._on_event = on_event
        self.warnings: List[StreamWarning] = []

    def apply(self, event: Any) -> Change:
        try:
            messages, state, message, interrupts = self._native.push(event)
        finally:
            new = _warnings(self._native.take_warnings())
            self.warnings.extend(new)
            self._deliver()
        return Change(
            messages=messages, state=state, message=message, interrupts=interrupts, warnings=tuple(w[1] for w in new)
        )

    def apply_many(self, events: Iterable[Any]) -> None:
        """Apply every event (the loop runs in Rust); raises at the first error, the
        events before it applied."""
        if self._on_event is not None:
            for event in events:
                self.apply(event)
            return
        try:
            self._native.push_many(events)
        finally:
            self.warnings.extend(_warnings(self._native.take_warnings()))

    def _deliver(self) -> None:
        """Hand ``on_event`` the events that reached the reducer."""
        if self._on_event is not None:
            for event in _events(self._native.take_delivered(), self._raw):
                self._on_event(event)

    def result(self) -> Replay:
        """Messages, state, pending interrupts and warnings so far, as a :class:`Replay`."""
        return self._result(shared=False)

    def _result(self, shared: bool) -> Replay:
        # shared: the applier's own state (it never writes into it again), for a caller
        # that drops the applier; else a copy.
        return Replay(
            messages=self.messages,
            state=self._native.state(shared=shared),
            pending_interrupts=self.pending_interrupts,
            warnings=list(self.warnings),
        )

    @property
    def messages(self) -> List[Any]:
        return _messages(self._native.messages(), self._raw)

    def message(self, index: int) -> Any:
        """The message at ``index`` (as ``Change.message`` names it); a negative index counts
        from the end, as a list's does."""
        i = operator.index(index)
        count = self._native.message_count()
        if i < 0:
            i += count
        if not 0 <= i < count:
            raise IndexError(f"message index out of range ({count} messages)")
        data = self._native.message(i)
        if data is None:  # another thread replaced the messages meanwhile
            raise IndexError(f"message index out of range ({count} messages)")
        return data if self._raw else convert_fast(data, Message)

    def tool_call(self, id: str) -> Optional[Tuple[int, Any, Any]]:
        """The tool call ``id`` as the reducer finds it (the first message carrying it):
        ``(position, message_id, call)`` — the position of its message (as
        ``Change.message`` gives it), that message's id and the call (a :class:`ToolCall`,
        or a dict with ``raw=True``); None when no message carries it. It takes the same
        time however many calls the message holds (``message(position)`` reads them all)."""
        if type(id) is not str:
            raise TypeError(f"id must be a str, not {type(id).__name__}")
        found = self._native.tool_call(id)
        if found is None:
            return None
        position, message_id, call = found
        return position, message_id, call if self._raw else convert_fast(call, ToolCall)

    @property
    def state(self) -> Any:
        return self._native.state()

    def state_view(self) -> Any:
        """The state itself, not a copy: read it, never change it. The applier never writes
        into it again (later events copy what they change), so it stays the state after the
        events applied so far, and views taken after successive events share what did not
        change between them (the same objects): a cheap way to keep the state after each
        event, and to find what an event changed."""
        return self._native.state(shared=True)

    @property
    def pending_interrupts(self) -> List[Any]:
        return self._native.pending_interrupts()


# -- compaction ------------------------------------------------------------------------


def compact_events(
    events: Iterable[Any],
    *,
    raw: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
) -> List[Any]:
    """The reference ``compactEvents``: streamed messages and tool calls collapsed into
    one START / CONTENT / END each, consecutive state deltas merged."""
    data, _warnings = _native.compact_events(events, max_depth=_depth(max_depth), max_patch_bytes=max_patch_bytes)
    return _events(data, raw)


# -- whole logs ------------------------------------------------------------------------

_Source = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]


def replay_log(
    source: _Source,
    *,
    format: str = "auto",
    verify: bool = False,
    schema: bool = True,
    max_protocol_version: Optional[str] = None,
    protocol_version: Optional[str] = None,
    raw: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
) -> Replay:
    """Replay a recorded log (``bytes``, or a path; SSE, length-prefixed protobuf or JSON Lines, gzip or
    not; ``format="auto"`` detects it) inside Rust with the GIL released, through the one log
    reader (``agui_core::log``): decode, the boundary and schema stage, expand chunks,
    optionally verify, apply (options as for :func:`replay`). A file is read in chunks, in
    constant memory (state and messages aside). Returns the final :class:`Replay`; an
    unreadable frame raises :class:`~agui_fast.errors.InvalidJsonError` (``frame_index``)."""
    max_depth = _depth(max_depth)
    if isinstance(source, (bytes, bytearray, memoryview)):
        parts = _native.replay_log(
            bytes(source), format=format, verify=verify, schema=schema, max_protocol_version=max_protocol_version,
            protocol_version=protocol_version, max_depth=max_depth, max_patch_bytes=max_patch_bytes, typed=not raw,
        )
        return _replay(parts, raw)
    if isinstance(source, (str, os.PathLike)):
        parts_list = _native.replay_log_files(
            [source], format=format, verify=verify, schema=schema, max_protocol_version=max_protocol_version,
            protocol_version=protocol_version, threads=0, max_depth=max_depth, max_patch_bytes=max_patch_bytes,
            typed=not raw,
        )
        return _replay(parts_list[0], raw)
    raise TypeError(f"source must be bytes or a path, not {type(source).__name__}")


def replay_logs(
    paths: Iterable[Union[str, "os.PathLike[str]"]],
    *,
    format: str = "auto",
    verify: bool = False,
    schema: bool = True,
    max_protocol_version: Optional[str] = None,
    protocol_version: Optional[str] = None,
    threads: Optional[int] = None,
    raw: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_patch_bytes: int = DEFAULT_MAX_PATCH_BYTES,
) -> List[Replay]:
    """:func:`replay_log` of several log files on Rust threads (``threads``: at most that
    many at once, a log a thread; default the machine's cores). Results are in input
    order; the first log
    (in input order) that fails raises, with ``path`` and ``replay`` on the exception."""
    paths = list(paths)
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    native = _native.replay_log_files(
        paths,
        format=format,
        verify=verify,
        schema=schema,
        max_protocol_version=max_protocol_version,
        protocol_version=protocol_version,
        threads=threads or 0,
        max_depth=_depth(max_depth),
        max_patch_bytes=max_patch_bytes,
        typed=not raw,
    )
    out = []
    for path, parts in zip(paths, native):
        if parts[4] is not None:
            parts[4].path = path
        out.append(_replay(parts, raw))
    return out


