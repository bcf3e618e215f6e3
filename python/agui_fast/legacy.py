"""Conversion of legacy (0.x) AG-UI input to 1.0, as the reference client's
``CompatibilityBoundary`` middleware does it (``vectors/client/legacy.jsonl``).

- ``THINKING_START`` → ``REASONING_START`` with a fresh ``messageId`` (``title`` is
  dropped, other members kept); ``THINKING_TEXT_MESSAGE_START`` →
  ``REASONING_MESSAGE_START`` with a fresh ``messageId`` and ``role: "reasoning"``;
  ``THINKING_TEXT_MESSAGE_CONTENT``/``_END`` → ``REASONING_MESSAGE_CONTENT``/``_END``
  with the current message id; ``THINKING_END`` → ``REASONING_END`` with the current
  span id. ``_END`` clears the current id; a continuation without one gets a fresh id
  (not remembered, like the reference).
- Removed legacy ``null``s: ``rawEvent`` on any event; ``result`` on ``RUN_FINISHED`` /
  ``SUBAGENT_FINISHED``; ``outcome`` on ``RUN_FINISHED``; ``parentMessageId`` on
  ``TOOL_CALL_START`` / ``TOOL_CALL_CHUNK``; ``metadata`` on media content parts; in
  ``RUN_STARTED.input``: ``forwardedProps``, ``tools[].parameters``,
  ``resume[].payload``. Other nulls are kept.
- Retired ``{"type": "binary", mimeType, data|url|id, filename?}`` content parts in
  ``MESSAGES_SNAPSHOT`` and ``RUN_STARTED.input`` messages become image / audio / video /
  document parts (by mime-type prefix) with a ``data`` (preferred) or ``url`` source and
  ``metadata: {filename}``; a part with only an ``id`` stays as it is; a binary part
  that mirrors a modern part already in the message is dropped.

The converter works on plain JSON values (dicts) before typing. It is stateful (the
current reasoning ids), so use one :class:`LegacyConverter` per stream. Dicts are
modified in place where that is enough; always use the returned value.
"""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, Optional

__all__ = ["LegacyConverter", "convert_messages", "convert_content_parts"]

_MEDIA = ("image", "audio", "video", "document")

_THINKING_RENAMES = {
    "THINKING_START": "REASONING_START",
    "THINKING_END": "REASONING_END",
    "THINKING_TEXT_MESSAGE_START": "REASONING_MESSAGE_START",
    "THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
    "THINKING_TEXT_MESSAGE_END": "REASONING_MESSAGE_END",
}


def _new_id() -> str:
    return str(uuid.uuid4())


def _binary_to_media(part: dict) -> Optional[dict]:
    """The modern part for a legacy binary part, or ``None`` if it cannot convert."""
    mime = part.get("mimeType")
    if not isinstance(mime, str):
        return None
    if part.get("data") is not None:
        source = {"type": "data", "value": part["data"], "mimeType": mime}
    elif part.get("url") is not None:
        source = {"type": "url", "value": part["url"], "mimeType": mime}
    else:
        return None  # only an id: a 1.0 peer cannot use it; kept as is
    kind = "document"
    for prefix in ("image", "audio", "video"):
        if mime.startswith(prefix + "/"):
            kind = prefix
            break
    out = {"type": kind, "source": source}
    filename = part.get("filename")
    if filename is not None:
        out["metadata"] = {"filename": filename}
    return out


def _frozen(v: Any) -> Any:
    """A hashable value equal (``==``) exactly when ``v`` is: JSON dicts and lists frozen."""
    if isinstance(v, dict):
        return frozenset((k, _frozen(x)) for k, x in v.items())
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    return v


def _media_key(part: Dict[str, Any]) -> Any:
    """What makes two media parts the same: type, source and filename (a set key, so
    finding the mirror of a binary part is one lookup, not a scan of the message)."""
    meta = part.get("metadata")
    filename = meta.get("filename") if isinstance(meta, dict) else None
    try:
        return (part.get("type"), _frozen(part.get("source")), _frozen(filename))
    except TypeError:  # not JSON data (an unhashable leaf): it mirrors nothing
        return object()


def convert_content_parts(parts: list) -> list:
    """Upgrade binary parts and drop ``metadata: null`` of media parts in a content list."""
    if not any(isinstance(p, dict) and (p.get("type") == "binary" or (
            p.get("type") in _MEDIA and "metadata" in p and p["metadata"] is None)) for p in parts):
        return parts
    modern = {_media_key(p) for p in parts if isinstance(p, dict) and p.get("type") in _MEDIA}
    out = []
    for p in parts:
        if isinstance(p, dict):
            t = p.get("type")
            if t == "binary":
                m = _binary_to_media(p)
                if m is not None:
                    if _media_key(m) in modern:
                        continue  # a mirror of a modern part already present
                    out.append(m)
                    continue
            elif t in _MEDIA and "metadata" in p and p["metadata"] is None:
                p = {k: v for k, v in p.items() if k != "metadata"}
        out.append(p)
    return out


def convert_messages(messages: Any) -> Any:
    """Upgrade the content parts of a list of message dicts (in place; returned)."""
    if isinstance(messages, list):
        for m in messages:
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                m["content"] = convert_content_parts(m["content"])
    return messages


def _convert_run_input(inp: Any) -> None:
    if not isinstance(inp, dict):
        return
    if "forwardedProps" in inp and inp["forwardedProps"] is None:
        del inp["forwardedProps"]
    for key, member in (("tools", "parameters"), ("resume", "payload")):
        items = inp.get(key)
        if isinstance(items, list):
            for it in items:
                if isinstance(it, dict) and member in it and it[member] is None:
                    del it[member]
    convert_messages(inp.get("messages"))


class LegacyConverter:
    """Per-stream converter of legacy event dicts (see the module docstring)."""

    __slots__ = ("_new_id", "_span_id", "_message_id")

    def __init__(self, id_factory: Optional[Callable[[], str]] = None) -> None:
        self._new_id = id_factory or _new_id
        self._span_id: Optional[str] = None
        self._message_id: Optional[str] = None

    def convert(self, event: Any) -> Any:
        """Return ``event`` converted to its 1.0 shape (non-dicts are returned as is)."""
        if not isinstance(event, dict):
            return event
        t = event.get("type")
        if isinstance(t, str) and t.startswith("THINKING_") and t in _THINKING_RENAMES:
            event = self._thinking(t, event)
            t = event["type"]
        if "rawEvent" in event and event["rawEvent"] is None:
            del event["rawEvent"]
        if t == "RUN_FINISHED":
            for k in ("result", "outcome"):
                if k in event and event[k] is None:
                    del event[k]
        elif t == "SUBAGENT_FINISHED":
            if "result" in event and event["result"] is None:
                del event["result"]
        elif t in ("TOOL_CALL_START", "TOOL_CALL_CHUNK"):
            if "parentMessageId" in event and event["parentMessageId"] is None:
                del event["parentMessageId"]
        elif t == "MESSAGES_SNAPSHOT":
            convert_messages(event.get("messages"))
        elif t == "RUN_STARTED":
            _convert_run_input(event.get("input"))
        return event

    def _thinking(self, t: str, event: dict) -> dict:
        out = {"type": _THINKING_RENAMES[t]}
        for k, v in event.items():
            if k == "type" or (k == "title" and t == "THINKING_START"):
                continue
            out[k] = v
        if t == "THINKING_START":
            self._span_id = mid = self._new_id()
        elif t == "THINKING_END":
            mid = self._span_id if self._span_id is not None else self._new_id()
            self._span_id = None
        elif t == "THINKING_TEXT_MESSAGE_START":
            self._message_id = mid = self._new_id()
        elif t == "THINKING_TEXT_MESSAGE_END":
            mid = self._message_id if self._message_id is not None else self._new_id()
            self._message_id = None
        else:  # THINKING_TEXT_MESSAGE_CONTENT
            mid = self._message_id if self._message_id is not None else self._new_id()
        out["messageId"] = mid
        if t == "THINKING_TEXT_MESSAGE_START":
            out["role"] = "reasoning"
        if t == "THINKING_TEXT_MESSAGE_CONTENT" and "delta" in out:
            out["delta"] = out.pop("delta")  # reference order: messageId, delta
        return out
