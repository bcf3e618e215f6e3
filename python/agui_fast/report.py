"""A recorded run as one self-contained HTML page (``agui-fast report LOG -o run.html``).

``render(source)`` returns the page; ``build(source)`` returns a :class:`Report` (the page's
data, ``html()``, ``save(path)``; in a notebook it shows itself). ``source`` is a log (a path
or ``bytes``: SSE, length-prefixed protobuf or JSON Lines, gzip or not) or an iterable of
events (Structs, ``ag_ui`` models, dicts or JSON text).

The page shows what the stream engine computed, event by event: each event goes through
:class:`agui_fast.stream.EventApplier` (0.x boundary, chunk expansion, verification, the
reducer); messages, tool calls and results are read from the applier's messages, the state
after each event from :meth:`~agui_fast.stream.EventApplier.state_view` (a delta is shown as
the difference between the state before and after it), warnings and errors at the event
that caused them. This module only groups events into timeline items and shortens long
values; the rules are the engine's.

Size: a streamed message or tool call is one item (its text assembled once; of its events
the first and last ``raw_events`` are kept for the raw view); every string is cut at
``max_string`` characters (message text, arguments and results at ``max_text``), every value
at about ``max_value`` characters of JSON, every delta's difference at ``max_changes``
entries; once the page's data passes ``max_bytes``, later items keep only their kind,
position and title (the page says where).
"""

from __future__ import annotations

import gc
import json
import math
import os
from itertools import compress, count, islice
from operator import is_not
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import msgspec

from . import _native, stream
from ._report_page import Clip, frame, page, warning_parts
from .core import TokenUsage
from .decoder import convert_value
from .errors import AguiError, DecodeError, StreamError, VerificationError
from .logs import LogProgress, detect_format, iter_log
from .proto import DEFAULT_MAX_FRAME_SIZE

__all__ = ["Report", "build", "render"]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Iterable[Any]]

_decode = msgspec.json.Decoder().decode

# Event types grouped into one timeline item per stream: (item kind, the member naming it).
_STREAMS = {
    "TEXT_MESSAGE_START": ("text", "messageId"),
    "TEXT_MESSAGE_CONTENT": ("text", "messageId"),
    "TEXT_MESSAGE_END": ("text", "messageId"),
    "TEXT_MESSAGE_CHUNK": ("text", "messageId"),
    "REASONING_MESSAGE_START": ("reasoning", "messageId"),
    "REASONING_MESSAGE_CONTENT": ("reasoning", "messageId"),
    "REASONING_MESSAGE_END": ("reasoning", "messageId"),
    "REASONING_MESSAGE_CHUNK": ("reasoning", "messageId"),
    "TOOL_CALL_START": ("tool", "toolCallId"),
    "TOOL_CALL_ARGS": ("tool", "toolCallId"),
    "TOOL_CALL_END": ("tool", "toolCallId"),
    "TOOL_CALL_CHUNK": ("tool", "toolCallId"),
}
_ENDS = {"TEXT_MESSAGE_END", "REASONING_MESSAGE_END", "TOOL_CALL_END"}
# Spans opened and closed by a pair of events: (item kind, the member naming it, opens).
_SPANS = {
    "STEP_STARTED": ("step", "stepName", True),
    "STEP_FINISHED": ("step", "stepName", False),
    "REASONING_START": ("phase", "messageId", True),
    "REASONING_END": ("phase", "messageId", False),
}
# Events that are an item of their own.
_SINGLE = {
    "STATE_SNAPSHOT": "state", "STATE_DELTA": "state", "MESSAGES_SNAPSHOT": "messages",
    "ACTIVITY_SNAPSHOT": "activity", "ACTIVITY_DELTA": "activity", "CUSTOM": "custom", "RAW": "raw",
    "RUN_FINISHED": "finish", "RUN_ERROR": "error", "SUBAGENT_STARTED": "subagent",
    "SUBAGENT_FINISHED": "subagent", "SUBAGENT_ERROR": "error", "TOOL_CALL_RESULT": "result",
}
_NOT_AN_OBJECT = "(not an object)"
_NO_TYPE = "(no type)"


def _pointer(path: str, key: Any) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def _hints(ops: Any) -> Optional[Dict[str, Any]]:
    """Where a patch's operations point (``path`` and ``from``), as a tree of tokens (a
    ``None`` leaf: everything below), to guide :class:`_Diff`; ``None``: anywhere."""
    if type(ops) is not list:
        return None
    root: Dict[str, Any] = {}
    for op in ops:
        if type(op) is not dict:
            return None
        for member in ("path", "from"):
            pointer = op.get(member)
            if pointer is None and member == "from":
                continue
            if type(pointer) is not str or not pointer.startswith("/"):
                return None  # the root, or a pointer the engine refuses: look everywhere
            node: Optional[Dict[str, Any]] = root
            tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
            for t in tokens[:-1]:
                if node is None:
                    break
                if t not in node:
                    node[t] = {}
                node = node[t]
            if node is not None:
                node[tokens[-1]] = None
    return root


class _Diff:
    """The difference between two states as ``[sign, pointer, before, after]`` entries
    (``+`` added, ``-`` removed, ``~`` replaced). Subtrees that the engine's copy-on-write
    states share (the same object) are skipped, objects are looked into only where the
    patch points (``hints``; everywhere if that finds nothing), lists are scanned for the
    first and last difference at C speed. ``work`` counts the members looked at (and so
    the engine's copying for the next view)."""

    __slots__ = ("out", "limit", "more", "clip", "work")

    def __init__(self, clip: Clip, limit: int) -> None:
        self.clip = clip
        self.limit = limit
        self.out: List[List[Any]] = []
        self.more = False
        self.work = 0

    def add(self, sign: str, path: str, before: Any, after: Any) -> None:
        if len(self.out) >= self.limit:
            self.more = True
            return
        c = self.clip.value
        self.out.append([sign, self.clip.text(path), None if sign == "+" else c(before), None if sign == "-" else c(after)])

    def walk(self, a: Any, b: Any, hints: Optional[Dict[str, Any]] = None, path: str = "", depth: int = 0) -> None:
        if a is b or self.more:
            return
        ta, tb = type(a), type(b)
        if depth < 64 and ta is dict and tb is dict:
            self.work += len(a) + len(b)
            if hints:
                found = len(self.out)
                for k, sub in hints.items():
                    if k in a:
                        if k in b:
                            self.walk(a[k], b[k], sub, _pointer(path, k), depth + 1)
                        else:
                            self.add("-", _pointer(path, k), a[k], None)
                    elif k in b:
                        self.add("+", _pointer(path, k), None, b[k])
                if len(self.out) > found or self.more or a == b:
                    return  # else the change is elsewhere (a pointer read otherwise): look everywhere
            for k, va in a.items():
                if k in b:
                    vb = b[k]
                    if va is not vb:
                        self.walk(va, vb, None, _pointer(path, k), depth + 1)
                else:
                    self.add("-", _pointer(path, k), va, None)
            for k, vb in b.items():
                if k not in a:
                    self.add("+", _pointer(path, k), None, vb)
        elif depth < 64 and ta is list and tb is list:
            self.list(a, b, hints, path, depth)
        elif not _same(a, b):
            self.add("~", path, a, b)

    def list(self, a: List[Any], b: List[Any], hints: Optional[Dict[str, Any]], path: str, depth: int) -> None:
        n, m = len(a), len(b)
        self.work += 4 * (n + m)
        # The common head and tail: positions where the items differ (by identity: the
        # engine's states share what did not change) found by C loops, checked by value.
        head = min(n, m)
        for k in compress(count(), map(is_not, a, b)):
            if not _same(a[k], b[k]):
                head = k
                break
        room = min(n, m) - head
        tail = room
        for k in compress(count(), map(is_not, reversed(a), reversed(b))):
            if k >= room:
                break
            if not _same(a[n - 1 - k], b[m - 1 - k]):
                tail = k
                break
        if n == m:  # changed in place
            middle = compress(range(head, n - tail), map(is_not, islice(a, head, n - tail), islice(b, head, n - tail)))
            for k in middle:
                self.walk(a[k], b[k], hints.get(str(k)) if hints else None, _pointer(path, k), depth + 1)
                if self.more:
                    return
            return
        for k in range(head, n - tail):  # removed, then inserted, between the head and the tail
            self.add("-", _pointer(path, k), a[k], None)
            if self.more:
                return
        for k in range(head, m - tail):
            self.add("+", _pointer(path, k), None, b[k])
            if self.more:
                return


class _Item(dict):
    """One row of the timeline (a dict: it is the page's data) and what building it needs."""

    __slots__ = ("idx", "tail", "last_t", "msg", "epoch", "key")
    idx: int  # its position in the items
    tail: List[Any]  # its last raw events
    last_t: Optional[float]  # its last event's timestamp
    msg: Optional[int]  # the engine's message it is about
    epoch: int  # the messages snapshots before ``msg`` was taken
    key: Any  # the id naming it (a stream's or span's)


class _Unreadable:
    """An event that is not JSON (the engine reports it)."""

    __slots__ = ()


_UNREADABLE = _Unreadable()


class Report:
    """A run prepared for viewing. ``data``: what the page shows (plain JSON values);
    ``html()``: the self-contained page; ``save(path)``; ``events``: how many events were
    read; ``findings``: the errors and warnings, each with its event index ``i``."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self.data = data

    @property
    def events(self) -> int:
        return int(self.data["events"])

    @property
    def findings(self) -> List[Dict[str, Any]]:
        return list(self.data["findings"])

    def html(self) -> str:
        return page(self.data, str(self.data["title"]))

    def save(self, path: Union[str, "os.PathLike[str]"]) -> int:
        """Write the page to ``path``; returns its size in bytes."""
        text = self.html().encode("utf-8")
        with open(path, "wb") as f:
            f.write(text)
        return len(text)

    def _repr_html_(self) -> str:
        return frame(self.html())

    def __repr__(self) -> str:
        errors = sum(f["level"] == "error" for f in self.data["findings"])
        return (f"<Report {self.data['title']!r}: {self.events:,} events, {len(self.data['runs'])} runs, "
                f"{len(self.data['items']):,} items, {errors} errors, {len(self.data['findings']) - errors} warnings>")


def _getter(ev: Any) -> Any:
    return ev.get if type(ev) is dict else (lambda key, default=None: default)


class _Builder:
    """Feeds events one by one to an :class:`~agui_fast.stream.EventApplier` and gathers
    the page's data from what it computed."""

    def __init__(self, *, verify: bool, max_string: int, max_text: int, max_value: int, max_changes: int,
                 raw_events: int, max_bytes: int, max_compare: int) -> None:
        self.ap = stream.EventApplier(raw=True, verify=verify)
        self.clip = Clip(max_string, max_value)
        self.max_text = max_text
        self.max_changes = max_changes
        self.head = raw_events - raw_events // 2
        self.tail = raw_events // 2
        self.max_bytes = max_bytes
        self.detail = True  # False once the data passed max_bytes
        self.max_compare = max_compare
        self.work = 0  # members compared and read so far (see max_compare)
        self.tracking = True  # False once work passed max_compare
        self.untracked: Optional[int] = None  # the first event not tracked
        self.cut: Optional[int] = None  # the first event whose item has no details
        self.items: List[_Item] = []
        self.findings: List[Dict[str, Any]] = []
        self.types: Dict[str, int] = {}
        self.runs: List[Dict[str, Any]] = []
        self.run: Optional[int] = None
        self.lanes: List[Dict[str, Any]] = [{"id": None, "name": "main"}]
        self.lane_of: Dict[str, int] = {}
        self.open: Dict[Tuple[str, int, Any], _Item] = {}  # streams and spans by (kind, lane, id)
        self.dirty: Dict[int, _Item] = {}  # streams changed since their message was last read
        self.epoch = 0  # messages snapshots so far: a stream's message index is of its epoch
        self.chunked: List[_Item] = []  # streams of chunk events (the next other event ends them)
        self.last_open: Dict[Tuple[str, int], _Item] = {}  # the latest stream of each kind, per lane
        self.calls: Dict[Any, _Item] = {}  # tool call items by id
        self.activities: Dict[Any, Any] = {}  # the last content of each activity message, by id
        self.state: Any = self.ap.state_view()
        self.t0: Optional[float] = None
        self.t1: Optional[float] = None
        self.last_t: Optional[float] = None
        self.stopped = False  # a verification error was found (the reference client stops there)
        self.n = 0
        self.usage: List[Any] = []

    # -- items ------------------------------------------------------------------------------

    def item(self, kind: str, i: int, lane: int, **fields: Any) -> _Item:
        it = _Item(k=kind, i=i, j=i, n=0, run=self.run, lane=lane, ty=[], **fields)
        it.idx = len(self.items)
        it.tail = []
        it.last_t = None
        it.msg = None
        it.epoch = 0
        it.key = None
        if self.detail:
            it["raw"] = []
        else:
            it["stub"] = True
        self.items.append(it)
        return it

    def attach(self, it: _Item, i: int, ty: str, data: bytes, ev: Any, t: Optional[float]) -> None:
        """Event ``i`` belongs to item ``it``: its type, time and raw form."""
        it["j"] = i
        it["n"] += 1
        if ty not in it["ty"]:
            it["ty"].append(ty)
        if t is not None:
            if "t" not in it:
                it["t"] = t
                if self.last_t is not None and t - self.last_t >= 1000:
                    it["gap"] = t - self.last_t
            elif it.last_t is not None and t - it.last_t > it.get("pause", 0):
                it["pause"] = t - it.last_t
            it["te"] = t
            it.last_t = t
        if "raw" not in it:
            return
        if len(it["raw"]) < self.head:
            it["raw"].append([i, self.raw(data, ev)])
        elif self.tail:
            it.tail.append([i, self.raw(data, ev)])
            if len(it.tail) > self.tail:
                it.tail.pop(0)
                it["more"] = it.get("more", 0) + 1
        else:
            it["more"] = it.get("more", 0) + 1

    def raw(self, data: bytes, ev: Any) -> Any:
        """The event as the page shows it: its JSON text as it is when short, else shortened."""
        if ev is _UNREADABLE:
            return self.clip.text(data.decode("utf-8", "replace"))
        if len(data) <= self.clip.max_string:
            self.clip.used += len(data)
            return msgspec.Raw(data)
        return self.clip.value(ev)

    def finding(self, it: Optional[_Item], i: int, level: str, message: str, *, stage: Optional[str] = None,
                rule: Optional[str] = None, ids: Any = (), **details: Any) -> Dict[str, Any]:
        f: Dict[str, Any] = {"i": i, "level": level, "msg": self.clip.text(message), "item": it.idx if it else None}
        if stage:
            f["stage"] = stage
        if rule:
            f["rule"] = rule
        if ids:
            f["ids"] = [self.clip.text(x) for x in ids]
        for k, v in details.items():
            f[k] = self.clip.value(v)
        if it is not None:
            it.setdefault("f", []).append(len(self.findings))
        self.findings.append(f)
        return f

    def lane(self, ev: Any) -> int:
        sub = ev.get("subagentRunId") if type(ev) is dict else None
        if type(sub) is not str:
            return 0
        n = self.lane_of.get(sub)
        if n is None:
            n = self.lane_of[sub] = len(self.lanes)
            self.lanes.append({"id": self.clip.text(sub), "name": self.clip.text(sub)})
        return n

    # -- engine reads -----------------------------------------------------------------------

    def message(self, index: Optional[int]) -> Any:
        if index is None:
            return None
        try:
            return self.ap.message(index)
        except IndexError:
            return None

    def settle(self, it: _Item) -> None:
        """A stream item's text (or tool call) from the engine's message."""
        if "raw" not in it or it.epoch != self.epoch:
            return
        text = self.clip.text
        if it["k"] == "tool":
            # The call alone, found by its id as the reducer finds it: the same work however
            # many calls its message holds.
            found = self.ap.tool_call(it.key) if type(it.key) is str else None
            if found is None:
                return
            _, parent, call = found
            fn = call.get("function") if type(call) is dict else None
            if type(fn) is dict:
                it["name"] = text(fn.get("name"))
                it["args"] = text(fn.get("arguments"), self.max_text)
                it["parent"] = text(parent)
            return
        m = self.message(it.msg)
        if type(m) is not dict:
            return
        content = m.get("content")
        it["text"] = text(content, self.max_text) if type(content) is str else self.clip.value(content)
        it["role"] = text(m.get("role"))
        if m.get("name") is not None:
            it["name"] = text(m.get("name"))
        if it.get("id") is None:
            it["id"] = text(m.get("id"))

    def spend(self, work: int, i: int) -> None:
        """Count comparison work; past ``max_compare``, later events are no longer
        compared (state and activity differences)."""
        self.work += work
        if self.tracking and self.work > self.max_compare:
            self.tracking = False
            self.untracked = i + 1
            self.state = None
            self.activities.clear()

    def settle_open(self) -> None:
        """Read the streams changed since they were last read (each once: linear)."""
        for it in self.dirty.values():
            self.settle(it)
        self.dirty.clear()

    # -- one event --------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        i = self.n
        self.n += 1
        try:
            ev: Any = _decode(data)
        except msgspec.DecodeError:
            try:  # a lone surrogate escape, which msgspec refuses
                ev = json.loads(data)
            except ValueError:
                ev = _UNREADABLE
        ty = ev.get("type") if type(ev) is dict else None
        name = ty if type(ty) is str else (_NO_TYPE if type(ev) is dict else _NOT_AN_OBJECT)
        self.types[name] = self.types.get(name, 0) + 1
        t: Any = ev.get("timestamp") if type(ev) is dict else None
        if type(t) not in (int, float) or not math.isfinite(t):
            t = None
        elif self.t0 is None:
            self.t0 = self.t1 = t
        else:
            self.t0, self.t1 = min(self.t0, t), max(self.t1, t)

        if self.chunked and not name.endswith("_CHUNK"):
            for it in self.chunked:
                self.end(it)
            self.chunked = []
        if name == "MESSAGES_SNAPSHOT":
            # The snapshot replaces the messages the open streams point at: read them now,
            # and find them again by their next change.
            self.settle_open()
            self.epoch += 1
        seen = len(self.ap.warnings)
        change: Optional[stream.Change] = None
        error: Optional[AguiError] = None
        try:
            change = self.ap.apply(data)
        except AguiError as exc:
            error = exc
        it = self.place(i, name, ev, change)
        self.attach(it, i, name, data, ev, t)
        if t is not None:
            self.last_t = t
        for w in self.ap.warnings[seen:]:
            _, message, details = warning_parts(w)
            self.finding(it, i, "warning", message, stage="apply", **details)
        if isinstance(error, StreamError):
            message = error.message
            for prefix in (f"event {i} ({error.event_type}): ", f"event {i}: ", f"{error.rule}: "):
                message = message[len(prefix):] if message.startswith(prefix) else message
            f = self.finding(it, i, "error", message, stage=error.stage, rule=error.rule, ids=error.ids)
            if isinstance(error, VerificationError) and not self.stopped:
                self.stopped = True
                f["stop"] = True
        elif error is not None:
            self.finding(it, i, "error", getattr(error, "message", None) or str(error), stage="decode")
        if change is not None:
            self.after(it, name, ev, change)
        if self.detail and self.clip.used > self.max_bytes:
            self.detail = False
            self.cut = self.n
            self.state = None  # no more views: the engine need not copy what it changes

    def place(self, i: int, name: str, ev: Any, change: Optional[stream.Change]) -> _Item:
        """The item event ``i`` belongs to: an open stream's, or a new one."""
        lane = self.lane(ev)
        get = _getter(ev)
        text = self.clip.text
        family = _STREAMS.get(name)
        if family is not None:
            kind, member = family
            key = get(member)
            it = None
            if type(key) is str:
                it = self.open.get((kind, lane, key))
            elif name.endswith("_CHUNK"):  # a chunk without an id continues the open stream
                it = self.last_open.get((kind, lane))
                key = it.key if it is not None else None
            if it is None:
                chunk = name.endswith("_CHUNK")
                it = self.item(kind, i, lane, open=not chunk)
                if chunk:
                    self.chunked.append(it)
                if type(key) is str:
                    it["id"] = text(key)
                if kind == "tool" and get("toolCallName") is not None:
                    it["name"] = text(get("toolCallName"))
                it.key = key
                self.open[(kind, lane, key)] = it
                if kind == "tool" and type(key) is str:
                    self.calls[key] = it
            self.last_open[(kind, lane)] = it
            if change is not None and change.message is not None:
                it.msg = change.message
                it.epoch = self.epoch
                self.dirty[it.idx] = it
            if name in _ENDS:
                self.end(it)
            return it
        span = _SPANS.get(name)
        if span is not None:
            kind, member, opens = span
            key = get(member)
            if not opens:
                it = self.open.pop((kind, lane, key), None)
                if it is not None:
                    it["open"] = False
                    return it
            it = self.item(kind, i, lane, id=text(key))
            if opens:
                it["open"] = True
                self.open[(kind, lane, key)] = it
            return it
        if name == "RUN_STARTED":
            self.settle_open()
            self.run = len(self.runs)
            run = {"id": text(get("runId")), "thread": text(get("threadId")), "i": i}
            if get("parentRunId") is not None:
                run["parent"] = text(get("parentRunId"))
            self.runs.append(run)
            it = self.item("run", i, lane, r=self.run, id=run["id"], thread=run["thread"])
            if get("input") is not None and "raw" in it:
                it["input"] = self.clip.value(get("input"))
            return it
        kind = _SINGLE.get(name, "event")
        it = self.item(kind, i, lane)
        if name == "TOOL_CALL_RESULT":
            it["id"] = text(get("toolCallId"))
            call = self.calls.get(get("toolCallId"))
            if call is not None:
                it["call"] = call.idx
                call["res"] = it.idx
        elif kind == "subagent" or name == "SUBAGENT_ERROR":
            info = self.lanes[lane]
            if name == "SUBAGENT_STARTED":
                if type(get("name")) is str:
                    info["name"] = text(get("name"))
                for k in ("description", "parentSubagentRunId", "parentToolCallId", "parentMessageId"):
                    if get(k) is not None:
                        info[k] = text(get(k))
                info["i"] = i
            elif name == "SUBAGENT_FINISHED":
                info["j"] = i
                outcome = get("outcome")
                info["outcome"] = self.clip.value(outcome) if outcome is not None else {"type": "success"}
            it["name"] = info["name"]
            if name == "SUBAGENT_FINISHED":
                it["outcome"] = info["outcome"]
        elif name in ("ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"):
            it["id"] = text(get("messageId"))
            it["atype"] = text(get("activityType"))
        elif name == "CUSTOM":
            it["name"] = text(get("name"))
        elif name == "RAW" and get("source") is not None:
            it["source"] = text(get("source"))
        if kind == "error":
            it["message"] = text(get("message"))
            if get("code") is not None:
                it["code"] = text(get("code"))
        return it

    def end(self, it: _Item) -> None:
        """A stream ended: its text (or tool call) as the engine assembled it."""
        if self.dirty.pop(it.idx, None) is not None:
            self.settle(it)
        it["open"] = False
        kind, lane = it["k"], it["lane"]
        if self.open.get((kind, lane, it.key)) is it:
            del self.open[(kind, lane, it.key)]
        if self.last_open.get((kind, lane)) is it:
            del self.last_open[(kind, lane)]

    def after(self, it: _Item, name: str, ev: Any, change: stream.Change) -> None:
        """What the engine computed for the event, on its item."""
        get = _getter(ev)
        clip = self.clip.value
        detail = "raw" in it
        k = it["k"]
        if change.state and detail and self.tracking:
            # The state before and after the event, as the engine holds them (views share
            # what did not change), and their difference.
            state = self.ap.state_view()
            diff = _Diff(self.clip, self.max_changes)
            diff.walk(self.state, state, _hints(get("delta")) if name == "STATE_DELTA" else None)
            it["diff"] = diff.out
            if diff.more:
                it["dmore"] = True
            if name == "STATE_SNAPSHOT":
                it["after"] = clip(state)
            self.state = state
            self.spend(diff.work, it["i"])
        if k == "state":
            it["changed"] = change.state
        elif k == "result" and detail:
            m = self.message(change.message)
            if type(m) is dict:
                content = m.get("content")
                it["content"] = self.clip.text(content, self.max_text) if type(content) is str else clip(content)
                if m.get("error") is not None:
                    it["error"] = self.clip.text(m.get("error"))
                it["mid"] = self.clip.text(m.get("id"))
        elif k == "activity" and detail and self.tracking:
            m = self.message(change.message)
            if type(m) is dict:
                mid = m.get("id")
                content = m.get("content")
                it["content"] = clip(content)
                before = self.activities.get(mid)
                if before is not None:
                    diff = _Diff(self.clip, self.max_changes)
                    diff.walk(before, content, _hints(get("patch")) if name == "ACTIVITY_DELTA" else None)
                    it["diff"] = diff.out
                    if diff.more:
                        it["dmore"] = True
                    self.spend(diff.work, it["i"])
                self.activities[mid] = content
        elif k == "messages" and detail:
            msgs = self.ap.messages
            it["count"] = len(msgs)
            it["messages"] = [clip(m) for m in msgs[:200]]
        elif name in ("RUN_FINISHED", "RUN_ERROR"):
            if self.run is not None:
                run = self.runs[self.run]
                run["j"] = it["i"]
                if name == "RUN_FINISHED":
                    outcome = get("outcome")
                    run["outcome"] = clip(outcome) if outcome is not None else {"type": "success"}
                    it["outcome"] = run["outcome"]
                    if get("result") is not None and detail:
                        it["result"] = clip(get("result"))
                else:
                    run["error"] = it.get("message")
                usage = self.tokens(it, get("usage"))
                if usage:
                    run["usage"] = it["usage"] = usage
                it["r"] = self.run
            if change.interrupts:
                interrupts = self.ap.pending_interrupts
                it["interrupts"] = clip(interrupts)
                if self.run is not None:
                    self.runs[self.run]["interrupts"] = len(interrupts)
            self.settle_open()
            self.run = None
        elif k == "custom" and detail:
            it["value"] = clip(get("value"))
        elif k == "raw" and detail:
            it["value"] = clip(get("event"))

    def tokens(self, it: _Item, usage: Any) -> List[Dict[str, Any]]:
        """Token counts of a RUN_FINISHED / RUN_ERROR, summed per provider and model."""
        if type(usage) is not list:
            return []
        entries = []
        for entry in usage:
            try:
                entries.append(convert_value(entry, TokenUsage))
            except (AguiError, TypeError) as exc:
                self.finding(it, it["i"], "warning", f"token usage not counted: {exc}", stage="usage")
        self.usage.extend(entries)
        return _sum_usage(entries)

    def finish(self, title: str, fmt: Optional[str], decode_error: Optional[DecodeError]) -> Dict[str, Any]:
        self.settle_open()
        if decode_error is not None:
            self.finding(None, self.n, "error", f"reading stopped: {decode_error.message or decode_error}", stage="decode")
        for it in self.items:
            if it.tail:
                it["raw"].extend(it.tail)
        final = self.ap.result()
        clip = self.clip.value
        return {
            "v": 1,
            "kind": "report",
            "title": title,
            "format": fmt,
            "events": self.n,
            "generator": f"agui-fast {_native.__version__}",
            "span": [self.t0, self.t1] if self.t0 is not None else None,
            "types": sorted(self.types.items(), key=lambda kv: (-kv[1], kv[0])),
            "runs": self.runs,
            "lanes": self.lanes,
            "items": self.items,
            "findings": self.findings,
            "usage": _sum_usage(self.usage),
            "final": {"messages": clip(final.messages), "state": clip(final.state), "interrupts": clip(final.pending_interrupts)},
            "limits": {"maxString": self.clip.max_string, "maxText": self.max_text, "maxValue": self.clip.max_value,
                       "maxChanges": self.max_changes, "rawEvents": self.head + self.tail, "maxBytes": self.max_bytes},
            "cut": self.cut,
            "untracked": self.untracked,
        }


def _sum_usage(entries: List[TokenUsage]) -> List[Dict[str, Any]]:
    """Token counts summed per provider and model (first seen first; a count no entry of
    the group reports left out), as ``aggregate_token_usage`` sums them, but unbounded: a
    sum past the wire's largest count (2**53 - 1) is shown, not refused as an invalid
    ``TokenUsage``."""
    groups: Dict[Tuple[Any, Any], Dict[str, Any]] = {}
    for entry in entries:
        counts = msgspec.to_builtins(entry)
        labels = {k: counts.pop(k) for k in ("provider", "model") if k in counts}
        group = groups.setdefault((labels.get("provider"), labels.get("model")), labels)
        for name, value in counts.items():
            group[name] = group.get(name, 0) + value
    return list(groups.values())


def _event_bytes(event: Any) -> bytes:
    """An event given as an object or text, as the JSON text the engine reads."""
    if isinstance(event, (bytes, bytearray, memoryview)):
        return bytes(event)
    if isinstance(event, str):
        return event.encode("utf-8", "surrogatepass")
    return _native.dumps(event)


_LIMITS = ("max_string", "max_text", "max_value", "max_changes", "raw_events", "max_bytes", "max_compare")


def build(
    source: Source,
    *,
    format: str = "auto",
    title: Optional[str] = None,
    verify: bool = True,
    max_string: int = 2_000,
    max_text: int = 20_000,
    max_value: int = 20_000,
    max_changes: int = 50,
    raw_events: int = 5,
    max_bytes: int = 50_000_000,
    max_compare: int = 300_000_000,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    progress: Optional[LogProgress] = None,
) -> Report:
    """Replay ``source`` (a log path or ``bytes``, or an iterable of events) through the
    stream engine and gather what the page shows. ``format``: the log's (default:
    detected). ``verify``: check the reference client's sequence rules (an event that
    breaks one is shown with the error and, as the reference client refuses it, not
    applied). Limits: see the module's documentation. An unreadable log frame ends the
    report there (the error is on the page); a source of another type is a ``TypeError``.
    ``max_frame_size``: the largest event of a log, in bytes (as :func:`agui_fast.logs.iter_log`).
    ``progress``: a :data:`agui_fast.logs.LogProgress` counting the log's bytes read."""
    limits = dict(zip(_LIMITS, (max_string, max_text, max_value, max_changes, raw_events, max_bytes, max_compare)))
    for key, value in limits.items():
        if type(value) is not int:
            raise TypeError(f"{key} must be an int, not {type(value).__name__}")
        if value < (0 if key == "raw_events" else 1):
            raise ValueError(f"{key} must be at least {0 if key == 'raw_events' else 1}, not {value}")
    b = _Builder(verify=verify, **limits)
    fmt: Optional[str] = None
    events: Iterable[Any]
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "log"
        if isinstance(name, bytes):
            name = os.fsdecode(name)
        events = iter_log(source, format, raw="bytes", progress=progress, max_frame_size=max_frame_size)
        fmt = detect_format(source) if format == "auto" else format
    elif isinstance(source, Iterable):
        name = "events"
        events = (_event_bytes(e) for e in source)
    else:
        raise TypeError(f"source must be a log (a path or bytes) or an iterable of events, not {type(source).__name__}")
    decode_error: Optional[DecodeError] = None
    # The items hold no reference cycles: the collector would only walk them (and the
    # states) over and over, half the time of a large log.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for data in events:
            b.feed(data)
    except DecodeError as exc:
        decode_error = exc
    finally:
        if collecting:
            gc.enable()
    return Report(b.finish(title or name, fmt, decode_error))


def render(source: Source, **options: Any) -> str:
    """The report of ``source`` as one self-contained HTML page (options: see :func:`build`)."""
    return build(source, **options).html()
