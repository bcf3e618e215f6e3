"""The pure-Python peer of ``agui_fast``'s stream replay: what a Python user writes today.

Events are ``ag_ui.core`` pydantic models (``TypeAdapter(Event)``), messages are
``ag_ui.core`` message models, the state is plain Python data patched with ``jsonpatch``.
It follows the reference client (``@ag-ui/client`` 1.0 ``transformChunks`` +
``defaultApplyEvents``) rule for rule on ordinary streams; it does not reproduce the
JavaScript-specific corners (string coercion of non-string deltas, UTF-16 surrogate
halves, fast-json-patch's lenient pointers), which ``tests/test_py_replayer.py`` lists.

A ``STATE_DELTA`` is applied with ``jsonpatch.apply_patch(state, delta)`` (a deep copy,
then the patch): the reference's patches are all-or-nothing, and an in-place apply would
leave half a patch behind on failure. That copy dominates on a large state, so
``atomic=False`` is also offered: ``in_place=True``, what a user who accepts half-applied
patches writes (the benches report both).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional

import jsonpatch
from ag_ui.core import (
    ActivityMessage,
    AssistantMessage,
    Event,
    FunctionCall,
    Message,
    ReasoningMessage,
    ToolCall,
    ToolMessage,
)
from pydantic import TypeAdapter

EVENT = TypeAdapter(Event)
MESSAGE = TypeAdapter(Message)

_PASS = {"RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED"}
_CLOSE_ALL = {"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"}
_CHUNKS = {
    "TEXT_MESSAGE_CHUNK": ("message_id", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"),
    "TOOL_CALL_CHUNK": ("tool_call_id", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"),
    "REASONING_MESSAGE_CHUNK": ("message_id", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"),
}
_ID_KEY = {"message_id": "messageId", "tool_call_id": "toolCallId"}


class ChunkExpander:
    """``transformChunks``: one pending chunk stream per lane (the subagent tag)."""

    def __init__(self) -> None:
        self.lanes: Dict[Optional[str], dict] = {}

    def _end(self, lane) -> List[Any]:
        pending = self.lanes.pop(lane, None)
        if pending is None:
            return []
        end = {"type": pending["end"], _ID_KEY[pending["id_field"]]: pending["id"]}
        if pending["tag"] is not None:
            end["subagentRunId"] = pending["tag"]
        return [EVENT.validate_python(end)]

    def push(self, event) -> List[Any]:
        t = event.type.value
        if t in _CHUNKS:
            return self._chunk(event, t)
        if t in _CLOSE_ALL:
            out = [e for lane in list(self.lanes) for e in self._end(lane)]
            return out + [event]
        if t in _PASS or not t.startswith(("TEXT", "TOOL", "STATE", "CUSTOM", "STEP", "REASONING", "SUBAGENT")):
            return [event]
        tag = getattr(event, "subagent_run_id", None)
        if t in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR") and tag is None:
            return [event]
        return self._end(tag) + [event]

    def _chunk(self, chunk, t) -> List[Any]:
        id_field, start_t, content_t, end_t = _CHUNKS[t]
        cid = getattr(chunk, id_field)
        tag = chunk.subagent_run_id
        lane = tag
        if cid is not None:
            for owner, p in self.lanes.items():
                if p["start"] == start_t and p["id"] == cid:
                    if tag is not None and tag != owner:
                        raise ValueError(f"{t}: subagent does not match the open stream")
                    lane = owner
                    break
        elif tag is None:
            holders = [o for o, p in self.lanes.items() if p["start"] == start_t]
            if None in holders:
                lane = None
            elif len(holders) > 1:
                raise ValueError(f"Ambiguous {t}")
            elif holders:
                lane = holders[0]
        out: List[Any] = []
        pending = self.lanes.get(lane)
        extra = dict(chunk.model_extra or {})
        if pending is None or pending["start"] != start_t or (cid is not None and cid != pending["id"]):
            out += self._end(lane)
            if cid is None:
                raise ValueError(f"First {t} must have a {_ID_KEY[id_field]}")
            start: Dict[str, Any] = {"type": start_t, _ID_KEY[id_field]: cid}
            if t == "TOOL_CALL_CHUNK":
                if chunk.tool_call_name is None:
                    raise ValueError("First TOOL_CALL_CHUNK must have a toolCallName")
                start["toolCallName"] = chunk.tool_call_name
                if chunk.parent_message_id is not None:
                    start["parentMessageId"] = chunk.parent_message_id
                opener = {"tool_call_name": chunk.tool_call_name, "parent_message_id": chunk.parent_message_id}
            elif t == "TEXT_MESSAGE_CHUNK":
                start["role"] = chunk.role or "assistant"
                if chunk.name is not None:
                    start["name"] = chunk.name
                opener = {"role": start["role"], "name": chunk.name}
            else:
                start["role"] = "reasoning"
                opener = {}
            if tag is not None:
                start["subagentRunId"] = tag
            if chunk.metadata is not None:
                start["metadata"] = chunk.metadata
            pending = {"start": start_t, "end": end_t, "id": cid, "id_field": id_field, "tag": tag, "opener": opener}
            self.lanes[lane] = pending
            out.append(start)
        else:
            for field, established in pending["opener"].items():
                incoming = getattr(chunk, field)
                if incoming is not None and incoming != established:
                    raise ValueError(f"Cannot continue {pending['id']}: chunk {field} does not match the open stream")
        if chunk.delta is not None or chunk.raw_event is not None or (not out and (chunk.metadata is not None or extra)):
            content: Dict[str, Any] = {**extra, "type": content_t, _ID_KEY[id_field]: pending["id"], "delta": chunk.delta or ""}
            owner = tag if tag is not None else pending["tag"]
            if owner is not None:
                content["subagentRunId"] = owner
            if chunk.metadata is not None:
                content["metadata"] = chunk.metadata
            if chunk.raw_event is not None:
                content["rawEvent"] = chunk.raw_event
            out.append(content)
        elif extra and out and isinstance(out[-1], dict):
            out[-1] = {**extra, **out[-1]}
        return [EVENT.validate_python(e) if isinstance(e, dict) else e for e in out]


def _ops(patch) -> List[dict]:
    """The typed operations as the plain dicts ``jsonpatch`` takes."""
    return [op.model_dump(mode="json", by_alias=True, exclude_unset=True) for op in patch]


def _merge_metadata(target, event) -> bool:
    if event.metadata is None:
        return False
    target.metadata = {**(target.metadata or {}), **event.metadata}
    return True


class PyReplayer:
    """``defaultApplyEvents`` over pydantic messages and a plain state."""

    def __init__(self, messages: Optional[List[Any]] = None, state: Any = None, atomic: bool = True) -> None:
        self.atomic = atomic
        self.messages: List[Any] = [MESSAGE.validate_python(m) if isinstance(m, dict) else m for m in (messages or [])]
        self.state: Any = {} if state is None else state
        self.pending_interrupts: List[Any] = []
        self.warnings: List[str] = []
        self.expander = ChunkExpander()

    def _find(self, mid):
        for m in self.messages:
            if m.id == mid:
                return m
        return None

    def _find_tool(self, tcid, assistant_only=False):
        for i, m in enumerate(self.messages):
            if assistant_only and m.role != "assistant":
                continue
            for tc in getattr(m, "tool_calls", None) or []:
                if tc.id == tcid:
                    return i, m, tc
        return None, None, None

    def push(self, event) -> None:
        """Expand chunks, then apply."""
        for e in self.expander.push(event):
            self.apply(e)

    def apply(self, e) -> None:  # noqa: C901 - one branch per event type, like the reference
        t = e.type.value
        if t in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            m = self._find(e.message_id)
            if m is not None and m.role == "activity":
                self.warnings.append(f"{t}: activity message")
                return
            if m is None:
                tag = e.subagent_run_id
                if t == "TEXT_MESSAGE_START":
                    fields: Dict[str, Any] = {"id": e.message_id, "role": e.role or "assistant", "content": ""}
                    if e.name is not None:
                        fields["name"] = e.name
                else:
                    fields = {"id": e.message_id, "role": "reasoning", "content": ""}
                if tag is not None:
                    fields["subagentRunId"] = tag
                m = MESSAGE.validate_python(fields)
                self.messages.append(m)
            _merge_metadata(m, e)
        elif t in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "REASONING_MESSAGE_END"):
            m = self._find(e.message_id)
            if m is None or m.role == "activity":
                self.warnings.append(f"{t}: No message found with ID '{e.message_id}'")
                return
            if t.endswith("CONTENT"):
                m.content = (m.content if isinstance(m.content, str) else "") + e.delta
            _merge_metadata(m, e)
        elif t == "TOOL_CALL_START":
            _, owner, tc = self._find_tool(e.tool_call_id)
            if tc is not None:
                tc.function.name = e.tool_call_name
                _merge_metadata(tc, e)
                return
            target = None
            new_id = e.tool_call_id
            if e.parent_message_id:
                parent = self._find(e.parent_message_id)
                if parent is not None and parent.role == "assistant":
                    target = parent
                elif parent is None:
                    new_id = e.parent_message_id
            if target is None:
                existed = self._find(new_id) is not None
                target = AssistantMessage(id=new_id, role="assistant", tool_calls=[])
                if not existed and e.subagent_run_id is not None:
                    target.subagent_run_id = e.subagent_run_id
                self.messages.append(target)
            if target.tool_calls is None:
                target.tool_calls = []
            tc = ToolCall(id=e.tool_call_id, type="function", function=FunctionCall(name=e.tool_call_name, arguments=""))
            _merge_metadata(tc, e)
            target.tool_calls.append(tc)
        elif t in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            _, _, tc = self._find_tool(e.tool_call_id)
            if tc is None:
                self.warnings.append(f"{t}: No message found containing tool call with ID '{e.tool_call_id}'")
                return
            if t == "TOOL_CALL_ARGS":
                tc.function.arguments += e.delta
            _merge_metadata(tc, e)
        elif t == "TOOL_CALL_RESULT":
            fields = {"id": e.message_id, "toolCallId": e.tool_call_id, "role": e.role or "tool", "content": e.content}
            if e.subagent_run_id is not None:
                fields["subagentRunId"] = e.subagent_run_id
            msg = ToolMessage.model_validate(fields)
            _merge_metadata(msg, e)
            i, _, _ = self._find_tool(e.tool_call_id, assistant_only=True)
            if i is None:
                self.messages.append(msg)
            else:
                at = i + 1
                while at < len(self.messages) and self.messages[at].role == "tool":
                    at += 1
                self.messages.insert(at, msg)
        elif t == "STATE_SNAPSHOT":
            self.state = e.snapshot
        elif t == "STATE_DELTA":
            try:
                self.state = jsonpatch.apply_patch(self.state, _ops(e.delta), in_place=not self.atomic)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError) as exc:
                self.warnings.append(f"Failed to apply state patch: {exc}")
        elif t == "MESSAGES_SNAPSHOT":
            new = list(e.messages)
            snap = {m.id: m for m in new}
            meta = (e.metadata or {}).get("@ag-ui/client") if isinstance(e.metadata, dict) else None
            owned = ...
            if isinstance(e.metadata, dict) and "@ag-ui/client" in e.metadata:
                if not isinstance(meta, dict):
                    owned = []
                elif "authoritativeActivityTypes" in meta:
                    types = meta["authoritativeActivityTypes"]
                    owned = None if types is None else (types if isinstance(types, list) and all(isinstance(x, str) for x in types) else [])
            has_activity = any(m.role == "activity" for m in new)
            has_reasoning = any(m.role == "reasoning" for m in new)

            def preserved(m) -> bool:
                if m.role == "activity":
                    if owned is ...:
                        return not has_activity
                    return owned is not None and m.activity_type not in owned
                return m.role == "reasoning" and not has_reasoning

            kept = [snap.get(m.id, m) for m in self.messages if m.id in snap or preserved(m)]
            ids = {m.id for m in kept}
            self.messages = kept + [m for m in new if m.id not in ids]
        elif t == "ACTIVITY_SNAPSHOT":
            m = self._find(e.message_id)
            replace = e.replace is None or e.replace
            fresh = ActivityMessage(id=e.message_id, role="activity", activity_type=e.activity_type, content=e.content)
            if e.subagent_run_id is not None:
                fresh.subagent_run_id = e.subagent_run_id
            if m is None:
                self.messages.append(fresh)
                _merge_metadata(fresh, e)
            elif m.role == "activity":
                if replace:
                    m.activity_type, m.content, m.subagent_run_id = e.activity_type, e.content, e.subagent_run_id
                _merge_metadata(m, e)
            elif replace:
                self.messages[self.messages.index(m)] = fresh
                _merge_metadata(fresh, e)
        elif t == "ACTIVITY_DELTA":
            m = self._find(e.message_id)
            if m is None or m.role != "activity":
                return
            _merge_metadata(m, e)
            try:
                m.content = jsonpatch.apply_patch(m.content if m.content is not None else {}, _ops(e.patch or []))
                m.activity_type = e.activity_type
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError) as exc:
                self.warnings.append(f"Failed to apply activity patch: {exc}")
        elif t == "RUN_STARTED":
            inp = e.input
            if inp is not None and inp.messages:
                for m in inp.messages:
                    if self._find(m.id) is None:
                        self.messages.append(m)
        elif t == "RUN_FINISHED":
            outcome = e.outcome
            self.pending_interrupts = list(outcome.interrupts) if outcome is not None and outcome.type == "interrupt" else []
        elif t == "REASONING_ENCRYPTED_VALUE":
            if e.subtype == "tool-call":
                _, _, tc = self._find_tool(e.entity_id, assistant_only=True)
                if tc is not None:
                    tc.encrypted_value = e.encrypted_value
            else:
                m = self._find(e.entity_id)
                if m is not None and m.role != "activity":
                    m.encrypted_value = e.encrypted_value
        elif t in _CHUNKS:
            raise ValueError(f"{t} must be transformed before being applied")

    def dump_messages(self) -> List[dict]:
        return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in self.messages]


def replay_events(events: Iterable[Any], messages=None, state=None, atomic=True) -> PyReplayer:
    """Replay already-decoded pydantic events."""
    r = PyReplayer(messages, state, atomic)
    for e in events:
        r.push(e)
    return r


def iter_sse_payloads(data: bytes):
    """The data of each SSE event (a plain line parser: ``data:`` lines, blank-line ends)."""
    buf: List[bytes] = []
    for line in data.split(b"\n"):
        line = line.rstrip(b"\r")
        if not line:
            if buf:
                yield b"\n".join(buf)
                buf = []
        elif line.startswith(b"data:"):
            v = line[5:]
            buf.append(v[1:] if v.startswith(b" ") else v)
    if buf:
        yield b"\n".join(buf)


def replay_sse_bytes(data: bytes, messages=None, state=None, atomic=True) -> PyReplayer:
    """Bytes in, messages and state out: parse, validate with pydantic, expand, apply."""
    r = PyReplayer(messages, state, atomic)
    validate = EVENT.validate_json
    for payload in iter_sse_payloads(data):
        r.push(validate(payload))
    return r


def dumps_state(state: Any) -> str:
    return json.dumps(state, sort_keys=True)
