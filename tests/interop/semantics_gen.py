"""Random event sequences for the differential test against the official client
(test_semantics_diff.py): valid runs and near-valid ones, seeded, biased to the edges.

A case is ``{"events": [...], "messages": [...], "state": ...}`` (the initial messages and
state of the reducer). Small pools of ids make collisions common: a message id reused by a
tool result, a chunk naming an explicitly started message, a subagent lane reopened. A case
is built as a plausible stream (open entities are tracked so most continuations are legal),
then usually mutated: an event dropped, duplicated, moved, retagged, or events appended
after the run ended.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Dict, List, Optional

# "\ud83d" / "\ude00": an emoji split across two deltas (lone surrogates, joined as in JS)
TEXTS = ["hi", "", " ", "café ", "日本語", "emoji😀", "quote\" ", "back\\slash", "new\nline", "{\"a\":", "1}", "x" * 40,
         "\ud83d", "\ude00"]
ROLES = ["assistant", "user", "system", "developer", "tool"]


class SequenceGen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self.clean = False

    # -- small helpers -----------------------------------------------------------------

    def p(self, prob: float) -> bool:
        return self.r.random() < prob

    def pick(self, seq):
        return self.r.choice(seq)

    def mid(self) -> str:
        return self.pick(["m1", "m2", "m3", "m4", "m5", ""] if self.p(0.05) else ["m1", "m2", "m3", "m4", "m5"])

    def cid(self) -> str:
        return self.pick(["c1", "c2", "c3", "c4"])

    def sub(self) -> Optional[str]:
        """A subagent tag: mostly none, sometimes a lane, rarely the edges ("" and null)."""
        x = self.r.random()
        if x < 0.6:
            return None
        if x < 0.93:
            return self.pick(["s1", "s2"])
        return self.pick(["", "NULL"])

    def tag(self, ev: Dict[str, Any], sub: Optional[str]) -> Dict[str, Any]:
        if sub == "NULL":
            ev["subagentRunId"] = None
        elif sub is not None:
            ev["subagentRunId"] = sub
        return ev

    def meta(self, ev: Dict[str, Any]) -> Dict[str, Any]:
        if self.p(0.1):
            ev["metadata"] = self.pick([{"k": self.r.randint(0, 3)}, {"k": {"n": 1}}, {"a": 1, "k": None}, {}])
        return ev

    def text(self) -> str:
        return self.pick(TEXTS)

    def value(self, depth: int = 0) -> Any:
        x = self.r.random()
        if depth > 2 or x < 0.4:
            return self.pick([0, 1, -2.5, "s", "", True, None, "日本"])
        if x < 0.7:
            return {self.pick(["a", "b", "c", "list", "~k", "/k", ""]): self.value(depth + 1) for _ in range(self.r.randint(0, 3))}
        return [self.value(depth + 1) for _ in range(self.r.randint(0, 3))]

    # -- state ---------------------------------------------------------------------------

    def state(self) -> Any:
        x = self.r.random()
        if x < 0.5:
            return {"a": 1, "list": [1, 2, 3], "obj": {"b": "x", "c": [True]}}
        if x < 0.8:
            return {}
        return self.pick([None, [], 0, "s", [1, {"a": 2}], {"~k": 1, "/k": 2, "": 3}])

    def pointer(self) -> str:
        return self.pick([
            "/a", "/list/0", "/list/-", "/list/1", "/list/01", "/list/9", "/obj/b", "/obj/c/0", "/obj",
            "/new", "", "/~0k", "/~1k", "/", "/missing/x", "/a/b", "/list/-1", "/__proto__/x", "/obj/c/-",
        ])

    def op(self) -> Dict[str, Any]:
        kind = self.pick(["add", "add", "replace", "remove", "test", "move", "copy", "_get", "bogus"] if self.p(0.1)
                         else ["add", "add", "replace", "replace", "remove", "test", "move", "copy"])
        o: Dict[str, Any] = {"op": kind, "path": self.pointer()}
        if kind in ("add", "replace", "test", "_get", "bogus"):
            o["value"] = self.value()
            if kind == "test" and self.p(0.5):
                o["value"] = self.pick([1, [1, 2, 3], "x", {"b": "x", "c": [True]}])
        if kind in ("move", "copy"):
            o["from"] = self.pointer()
        if self.p(0.03):
            del o["path"]
        return o

    def patch(self) -> List[Dict[str, Any]]:
        return [self.op() for _ in range(self.pick([0, 1, 1, 2, 3]))]

    # -- messages -------------------------------------------------------------------------

    def message(self) -> Dict[str, Any]:
        role = self.pick(["user", "assistant", "assistant", "tool", "system", "reasoning", "activity", "developer"])
        m: Dict[str, Any] = {"id": self.mid(), "role": role}
        if role == "tool":
            m.update(toolCallId=self.cid(), content=self.text())
        elif role == "activity":
            m.update(activityType="PLAN", content={"steps": [1]})
        elif role == "assistant":
            if self.p(0.8):
                m["content"] = self.text()
            if self.p(0.4):
                m["toolCalls"] = [{"id": self.cid(), "type": "function", "function": {"name": "f", "arguments": "{}"}}]
        elif role == "user" and self.p(0.2):
            m["content"] = [{"type": "text", "text": "hi"}]
        else:
            m["content"] = self.text()
        sub = self.sub()
        if sub is not None and sub != "NULL":
            m["subagentRunId"] = sub
        return m

    def messages(self) -> List[Dict[str, Any]]:
        out, seen = [], set()
        for _ in range(self.pick([0, 0, 1, 2, 3])):
            m = self.message()
            if m["id"] not in seen:
                seen.add(m["id"])
                out.append(m)
        return out

    # -- one event of each kind ----------------------------------------------------------

    def run_started(self, run: int) -> Dict[str, Any]:
        ev: Dict[str, Any] = {"type": "RUN_STARTED", "threadId": "t", "runId": f"r{run}"}
        if self.p(0.15):
            ev["input"] = {"threadId": "t", "runId": f"r{run}", "state": {}, "messages": self.messages(), "tools": [],
                           "context": [], "forwardedProps": {}}
        return ev

    def run_finished(self, run: int) -> Dict[str, Any]:
        ev: Dict[str, Any] = {"type": "RUN_FINISHED", "threadId": "t", "runId": f"r{run}"}
        if self.p(0.03):
            ev = {"type": "RUN_FINISHED"}  # no ids: verification does not compare them
        x = self.r.random()
        if x < 0.1:
            ev["outcome"] = {"type": "interrupt", "interrupts": [
                self.tag({"id": f"i{i}", "reason": "approval"}, self.pick([None, None, "s1", "NULL"])) for i in range(self.r.randint(1, 2))]}
        elif x < 0.2:
            ev["outcome"] = {"type": "success"}
            if self.p(0.3):
                ev["result"] = {"ok": True}
        return ev

    def run_error(self) -> Dict[str, Any]:
        ev = {"type": "RUN_ERROR", "message": "failed"}
        if self.p(0.3):
            ev["code"] = "rate_limit"
        return ev

    def random_event(self) -> Dict[str, Any]:
        """Any event at all, with ids from the pools: the near-valid mutations insert these."""
        kind = self.pick([
            "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TEXT_MESSAGE_CHUNK", "TOOL_CALL_START",
            "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_CHUNK", "TOOL_CALL_RESULT", "REASONING_START",
            "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
            "REASONING_MESSAGE_CHUNK", "REASONING_ENCRYPTED_VALUE", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT",
            "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "STEP_STARTED", "STEP_FINISHED", "SUBAGENT_STARTED",
            "SUBAGENT_FINISHED", "SUBAGENT_ERROR", "CUSTOM", "RAW", "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR",
            "THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT", "THINKING_TEXT_MESSAGE_END",
            "THINKING_END", "SOMETHING_NEW", "RUN_SUSPENDED",
        ])
        sub = self.sub()
        m, c = self.mid(), self.cid()
        if kind == "TEXT_MESSAGE_START":
            ev = {"type": kind, "messageId": m}
            if self.p(0.8):
                ev["role"] = self.pick(ROLES[:4])
            if self.p(0.1):
                ev["name"] = "n"
        elif kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            ev = {"type": kind, "messageId": m, "delta": self.text()}
        elif kind in ("TEXT_MESSAGE_END", "REASONING_MESSAGE_END", "REASONING_START", "REASONING_END"):
            ev = {"type": kind, "messageId": m}
        elif kind == "REASONING_MESSAGE_START":
            ev = {"type": kind, "messageId": m, "role": "reasoning"}
        elif kind in ("TEXT_MESSAGE_CHUNK", "REASONING_MESSAGE_CHUNK"):
            ev = self.chunk_text(kind, m if self.p(0.7) else None, first=self.p(0.5))
        elif kind == "TOOL_CALL_START":
            ev = {"type": kind, "toolCallId": c, "toolCallName": "f"}
            if self.p(0.5):
                ev["parentMessageId"] = m
        elif kind == "TOOL_CALL_ARGS":
            ev = {"type": kind, "toolCallId": c, "delta": self.pick(["{", "\"a\":1", "}", ""])}
        elif kind == "TOOL_CALL_END":
            ev = {"type": kind, "toolCallId": c}
        elif kind == "TOOL_CALL_CHUNK":
            ev = self.chunk_tool(c if self.p(0.7) else None, first=self.p(0.5), parent=m if self.p(0.4) else None)
        elif kind == "TOOL_CALL_RESULT":
            ev = {"type": kind, "messageId": m, "toolCallId": c, "content": self.text()}
            if self.p(0.3):
                ev["role"] = "tool"
        elif kind == "REASONING_ENCRYPTED_VALUE":
            ev = {"type": kind, "subtype": self.pick(["tool-call", "message"]), "entityId": self.pick([m, c]),
                  "encryptedValue": "enc"}
        elif kind == "STATE_SNAPSHOT":
            ev = {"type": kind, "snapshot": self.state()}
        elif kind == "STATE_DELTA":
            ev = {"type": kind, "delta": self.patch()}
        elif kind == "MESSAGES_SNAPSHOT":
            ev = {"type": kind, "messages": self.messages()}
        elif kind == "ACTIVITY_SNAPSHOT":
            ev = {"type": kind, "messageId": m, "activityType": self.pick(["PLAN", "SEARCH"]),
                  "content": self.pick([{"steps": []}, {"steps": [1, 2]}, {"q": "x"}])}
            if self.p(0.4):
                ev["replace"] = self.p(0.5)
        elif kind == "ACTIVITY_DELTA":
            ev = {"type": kind, "messageId": m, "activityType": self.pick(["PLAN", "SEARCH"]),
                  "patch": self.pick([[{"op": "add", "path": "/steps/-", "value": 3}], [{"op": "replace", "path": "/q", "value": "y"}],
                                      [{"op": "remove", "path": "/nope"}], []])}
        elif kind in ("STEP_STARTED", "STEP_FINISHED"):
            ev = {"type": kind, "stepName": self.pick(["plan", "tools"])}
        elif kind == "SUBAGENT_STARTED":
            ev = {"type": kind, "subagentRunId": self.pick(["s1", "s2", ""]), "name": "helper"}
            if self.p(0.2):
                ev["parentToolCallId"] = c
            sub = None
        elif kind == "SUBAGENT_FINISHED":
            ev = {"type": kind, "subagentRunId": self.pick(["s1", "s2"])}
            if self.p(0.3):
                ev["outcome"] = self.pick([{"type": "success"}, {"type": "suspended", "interruptIds": ["i1"]}])
            sub = None
        elif kind == "SUBAGENT_ERROR":
            ev = {"type": kind, "subagentRunId": self.pick(["s1", "s2"]), "message": "boom"}
            sub = None
        elif kind == "CUSTOM":
            ev = {"type": kind, "name": "note", "value": {"n": 1}}
        elif kind == "RAW":
            ev = {"type": kind, "event": {"provider": "x"}}
        elif kind == "RUN_STARTED":
            return self.run_started(self.r.randint(1, 3))
        elif kind == "RUN_FINISHED":
            return self.run_finished(self.r.randint(1, 3))
        elif kind == "RUN_ERROR":
            return self.run_error()
        elif kind == "THINKING_START":
            ev = {"type": kind, "title": "plan"}
        elif kind == "THINKING_TEXT_MESSAGE_CONTENT":
            ev = {"type": kind, "delta": self.text()}
        elif kind.startswith("THINKING_"):
            ev = {"type": kind}
        else:
            ev = {"type": kind, "payload": 1}
        return self.meta(self.tag(ev, sub))

    def chunk_text(self, kind: str, mid: Optional[str], first: bool) -> Dict[str, Any]:
        ev: Dict[str, Any] = {"type": kind}
        if mid is not None:
            ev["messageId"] = mid
        if kind == "TEXT_MESSAGE_CHUNK" and first and self.p(0.4):
            ev["role"] = self.pick(["assistant", "user", "developer", None])
        if kind == "TEXT_MESSAGE_CHUNK" and self.p(0.05):
            ev["name"] = "n"
        if self.p(0.85):
            ev["delta"] = self.text() if self.p(0.97) else None
        if self.p(0.05):
            ev["rawEvent"] = {"raw": 1}
        if self.p(0.04):
            ev["extra"] = 7  # an unrecognised property
        return ev

    def chunk_tool(self, cid: Optional[str], first: bool, parent: Optional[str]) -> Dict[str, Any]:
        ev: Dict[str, Any] = {"type": "TOOL_CALL_CHUNK"}
        if cid is not None:
            ev["toolCallId"] = cid
        if first or self.p(0.1):
            if self.p(0.93):
                ev["toolCallName"] = self.pick(["f", "f", "g"])
            if parent is not None:
                ev["parentMessageId"] = parent
        if self.p(0.85):
            ev["delta"] = self.pick(["{", "\"a\":", "1", "}", ""])
        if self.p(0.04):
            ev["extra"] = 7
        return ev

    # -- a plausible stream ---------------------------------------------------------------

    def body(self, run: int, n: int) -> List[Dict[str, Any]]:
        """Events inside one run, closing what they open (mostly)."""
        out: List[Dict[str, Any]] = []
        lane = self.pick([None, None, None, "s1", "s2"])
        started_sub = lane is not None and self.p(0.7)
        if started_sub:
            out.append({"type": "SUBAGENT_STARTED", "subagentRunId": lane, "name": "helper"})

        def t(ev):
            return self.meta(self.tag(ev, lane if self.clean or self.p(0.9) else self.sub()))

        while len(out) < n:
            kind = self.pick(["text", "text", "chunks", "chunks", "tool", "tool_chunks", "reasoning", "reasoning_chunks",
                              "state", "state", "activity", "step", "snapshot", "misc", "random", "legacy", "result"])
            if self.clean and kind == "random":
                kind = "text"
            m, c = self.mid(), self.cid()
            if kind == "text":
                start = {"type": "TEXT_MESSAGE_START", "messageId": m, "role": self.pick(["assistant", "assistant", "user"])}
                out.append(t(start))
                for _ in range(self.r.randint(0, 4)):
                    out.append(t({"type": "TEXT_MESSAGE_CONTENT", "messageId": m, "delta": self.text()}))
                out.append(t({"type": "TEXT_MESSAGE_END", "messageId": m}))
            elif kind == "chunks":
                out.append(self.tag(self.chunk_text("TEXT_MESSAGE_CHUNK", m, first=True), lane))
                for _ in range(self.r.randint(0, 4)):
                    ev = self.chunk_text("TEXT_MESSAGE_CHUNK", m if self.p(0.3) else None, first=False)
                    out.append(self.tag(ev, lane if self.p(0.5) else self.sub()))
            elif kind == "tool":
                start = {"type": "TOOL_CALL_START", "toolCallId": c, "toolCallName": "f"}
                if self.p(0.6):
                    start["parentMessageId"] = m
                out.append(t(start))
                for d in self.pick([["{", "\"a\":", "1}"], ["{}"], [], ["{\"q\":\"x"]]):
                    out.append(t({"type": "TOOL_CALL_ARGS", "toolCallId": c, "delta": d}))
                out.append(t({"type": "TOOL_CALL_END", "toolCallId": c}))
                if self.p(0.6):
                    out.append(t({"type": "TOOL_CALL_RESULT", "messageId": self.mid(), "toolCallId": c, "content": "ok"}))
            elif kind == "tool_chunks":
                out.append(self.tag(self.chunk_tool(c, first=True, parent=m if self.p(0.5) else None), lane))
                for _ in range(self.r.randint(0, 3)):
                    ev = self.chunk_tool(c if self.p(0.3) else None, first=False, parent=None)
                    out.append(self.tag(ev, lane if self.p(0.6) else self.sub()))
            elif kind == "reasoning":
                span = self.p(0.6)
                if span:
                    out.append(t({"type": "REASONING_START", "messageId": m}))
                rm = self.mid() if self.p(0.5) else m
                out.append(t({"type": "REASONING_MESSAGE_START", "messageId": rm, "role": "reasoning"}))
                for _ in range(self.r.randint(0, 3)):
                    out.append(t({"type": "REASONING_MESSAGE_CONTENT", "messageId": rm, "delta": self.text()}))
                out.append(t({"type": "REASONING_MESSAGE_END", "messageId": rm}))
                if self.p(0.3):
                    out.append(t({"type": "REASONING_ENCRYPTED_VALUE", "subtype": self.pick(["message", "tool-call"]),
                                  "entityId": self.pick([rm, c]), "encryptedValue": "enc"}))
                if span:
                    out.append(t({"type": "REASONING_END", "messageId": m}))
            elif kind == "reasoning_chunks":
                out.append(self.tag(self.chunk_text("REASONING_MESSAGE_CHUNK", m, first=True), lane))
                for _ in range(self.r.randint(0, 3)):
                    out.append(self.tag(self.chunk_text("REASONING_MESSAGE_CHUNK", None, first=False), lane))
            elif kind == "state":
                if self.p(0.3):
                    out.append(self.meta({"type": "STATE_SNAPSHOT", "snapshot": self.state()}))
                for _ in range(self.r.randint(1, 3)):
                    out.append(self.meta({"type": "STATE_DELTA", "delta": self.patch()}))
            elif kind == "activity":
                snap = {"type": "ACTIVITY_SNAPSHOT", "messageId": m, "activityType": "PLAN", "content": {"steps": []}}
                if self.p(0.3):
                    snap["replace"] = self.p(0.5)
                out.append(t(snap))
                for _ in range(self.r.randint(0, 2)):
                    out.append(t({"type": "ACTIVITY_DELTA", "messageId": m, "activityType": "PLAN",
                                  "patch": self.pick([[{"op": "add", "path": "/steps/-", "value": 1}], [{"op": "test", "path": "/x", "value": 1}]])}))
            elif kind == "step":
                name = self.pick(["plan", "tools"])
                out.append(t({"type": "STEP_STARTED", "stepName": name}))
                out.append(t({"type": "CUSTOM", "name": "note", "value": 1}))
                out.append(t({"type": "STEP_FINISHED", "stepName": name}))
            elif kind == "snapshot":
                out.append(self.meta({"type": "MESSAGES_SNAPSHOT", "messages": self.messages()}))
            elif kind == "result":
                out.append(t({"type": "TOOL_CALL_RESULT", "messageId": m, "toolCallId": c, "content": self.text()}))
            elif kind == "legacy":
                out.append({"type": "THINKING_START", "title": "x"})
                out.append({"type": "THINKING_TEXT_MESSAGE_START"})
                out.append({"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": self.text()})
                out.append({"type": "THINKING_TEXT_MESSAGE_END"})
                out.append({"type": "THINKING_END"})
            elif kind == "misc":
                out.append(self.pick([{"type": "RAW", "event": {"x": 1}}, {"type": "CUSTOM", "name": "n", "value": None}]))
            else:
                out.append(self.random_event())
        if started_sub:
            out.append(self.pick([
                {"type": "SUBAGENT_FINISHED", "subagentRunId": lane},
                {"type": "SUBAGENT_FINISHED", "subagentRunId": lane, "outcome": {"type": "success"}},
                {"type": "SUBAGENT_ERROR", "subagentRunId": lane, "message": "boom"},
            ]))
        return out

    def case(self) -> Dict[str, Any]:
        # A quarter of the cases are meant to pass the whole pipeline: no random events,
        # one tag per run, no mutations (their chunk streams and ids still collide).
        self.clean = self.p(0.25)
        events: List[Dict[str, Any]] = []
        runs = self.pick([1, 1, 1, 2, 3])
        size = self.pick([2, 4, 8, 8, 16, 30])
        if self.p(0.08):  # a fragment: no run events at all (what compactEvents is often given)
            events = self.body(0, self.r.randint(1, size))
            runs = 0
        for run in range(1, runs + 1):
            events.append(self.run_started(run))
            events.extend(self.body(run, self.r.randint(0, size)))
            events.append(self.run_error() if self.p(0.1) else self.run_finished(run))
        for _ in range(0 if self.clean else self.pick([0, 0, 1, 1, 2, 3])):
            self.mutate(events)
        return {"events": events, "messages": self.messages(), "state": self.state()}

    def mutate(self, events: List[Dict[str, Any]]) -> None:
        how = self.pick(["drop", "duplicate", "swap", "retag", "insert", "after_end", "restart", "truncate"])
        n = len(events)
        i = self.r.randrange(n)
        if how == "drop" and n > 1:
            del events[i]
        elif how == "duplicate":
            events.insert(i, copy.deepcopy(events[i]))
        elif how == "swap" and n > 1:
            j = min(n - 1, i + 1)
            events[i], events[j] = events[j], events[i]
        elif how == "retag":
            ev = events[i]
            x = self.sub()
            if x is None:
                ev.pop("subagentRunId", None)
            else:
                self.tag(ev, x)
        elif how == "insert":
            events.insert(i, self.random_event())
        elif how == "after_end":
            events.append(self.random_event())
        elif how == "restart":
            events.insert(i, self.run_started(9))
        elif how == "truncate" and n > 2:
            del events[self.r.randrange(1, n):]


def cases(seed: int, n: int) -> List[Dict[str, Any]]:
    g = SequenceGen(seed)
    return [g.case() for _ in range(n)]
