"""A whole-log replay builds the ``Message`` Structs natively (``typed=True``, what
``stream.replay_log`` asks for) when msgspec's conversion of the plain values would keep
them as they are; otherwise it hands over the plain values, which ``stream.py`` converts.
Either way the messages must be what converting the plain values gives: the same classes,
the same field values, the same ``model_fields_set`` and extras, at every level."""

from __future__ import annotations

import json
import math
import random
import re
import sys
from pathlib import Path
from typing import Any, List

import msgspec
import pytest

from agui_fast import _native, stream
from agui_fast.core import Message
from agui_fast.core._convert import convert_fast
from conftest import load_jsonl, sse_log

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

from _stream_log import generate_events, to_sse  # noqa: E402

NEVER = 1 << 62
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _same(a: Any, b: Any, at: str = "$") -> None:
    assert type(a) is type(b), at
    if isinstance(a, msgspec.Struct):
        assert a.model_fields_set == b.model_fields_set, at
        assert a.__dict__ == b.__dict__ and type(a.__dict__) is type(b.__dict__), at
        for f in a.__struct_fields__:
            _same(getattr(a, f), getattr(b, f), f"{at}.{f}")
    elif isinstance(a, list):
        assert len(a) == len(b), at
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{at}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), at
        for k in a:
            _same(a[k], b[k], f"{at}.{k}")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), at
    elif isinstance(a, str):
        # (the 0.x boundary gives new messages random ids, as the reference does)
        assert UUID.sub("<uuid>", a) == UUID.sub("<uuid>", b), at
    else:
        assert a == b, at


def _check(log: bytes, *args: Any, **kw: Any) -> bool:
    """The typed replay's messages against the plain ones converted; whether they were
    built natively."""
    typed = _native.replay_log(log, *args, pipeline_min=NEVER, **kw)[0]
    plain = _native.replay_log(log, *args, pipeline_min=NEVER, typed=False, **kw)[0]
    assert all(type(m) is dict for m in plain)
    built = bool(typed) and type(typed[0]) is not dict
    if not built:
        _same(typed, plain)
        return False
    assert not any(type(m) is dict for m in typed)
    _same(typed, convert_fast(plain, List[Message]))
    return True


def test_a_run_log_builds_its_messages_natively_as_conversion_would():
    from agui_fast._bench import run_events, sse_log

    log = sse_log(run_events(3000, seed=3))
    assert _check(log)
    r = stream.replay_log(log)
    assert r.messages and r.messages[0].tool_calls[0].model_fields_set == {"id", "function"}
    assert stream.replay_log(log, raw=True).messages == _native.replay_log(log, typed=False)[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_streams(seed):
    assert _check(to_sse(generate_events(4000, seed=seed)))


def test_every_vector():
    built = plain = 0
    for name in ("chunks.jsonl", "verify.jsonl", "legacy.jsonl"):
        for case in load_jsonl(f"client/{name}"):
            if _check(sse_log(case["input"])):
                built += 1
            else:
                plain += 1
    for case in load_jsonl("client/apply.jsonl.gz"):
        init = case["initial"]
        try:
            ok = _check(sse_log(case["events"]), json.dumps(init["messages"]), json.dumps(init["state"]))
        except msgspec.ValidationError:
            continue  # messages conversion refuses: the plain path's error, typed or not
        if ok:
            built += 1
        else:
            plain += 1
    # both paths taken
    assert built > 50 and plain > 10, (built, plain)


ROLES = ["assistant", "user", "system", "developer", "reasoning", "tool", "activity"]


def _random_log(rng: random.Random) -> tuple:
    """Random messages given up front (some with extras, nulls, part lists) and random
    message, tool call and snapshot events after them."""
    def text():
        return rng.choice(["", "a", "hé", "\ud83d", "x" * rng.randint(1, 40), "\u2028"])

    initial = []
    for i in range(rng.randint(0, 3)):
        m = {"id": f"i{i}", "role": rng.choice(["assistant", "user", "system"]), "content": text()}
        if rng.random() < 0.3:
            m["name"] = rng.choice([None, "n"])
        if rng.random() < 0.2:
            m["extra"] = 1
        if m["role"] == "user" and rng.random() < 0.3:
            m["content"] = [{"type": "text", "text": "t"}]
        initial.append(m)
    events: List[dict] = []
    for n in range(rng.randint(1, 12)):
        mid, cid = f"m{rng.randint(0, 3)}", f"c{rng.randint(0, 3)}"
        kind = rng.randrange(6)
        if kind == 0:
            e = {"type": "TEXT_MESSAGE_START", "messageId": mid}
            if rng.random() < 0.5:
                e["role"] = rng.choice(["assistant", "user", "system", "developer"])
            if rng.random() < 0.3:
                e["name"] = "nm"
            events += [e] + [{"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text() or "d"} for _ in range(rng.randint(0, 3))]
            events.append({"type": "TEXT_MESSAGE_END", "messageId": mid})
        elif kind == 1:
            e = {"type": "TOOL_CALL_START", "toolCallId": cid, "toolCallName": "f"}
            if rng.random() < 0.6:
                e["parentMessageId"] = mid
            events += [e, {"type": "TOOL_CALL_ARGS", "toolCallId": cid, "delta": "{}"}, {"type": "TOOL_CALL_END", "toolCallId": cid}]
        elif kind == 2:
            events.append({"type": "TOOL_CALL_RESULT", "messageId": f"r{n}", "toolCallId": cid, "content": text() or "ok"})
        elif kind == 3:
            events.append({"type": "MESSAGES_SNAPSHOT", "messages": [dict(m) for m in initial] + [{"id": "s", "role": "assistant", "content": "s", "toolCalls": [{"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]})
        elif kind == 4:
            events += [{"type": "REASONING_MESSAGE_START", "messageId": f"z{n}", "role": "reasoning"},
                       {"type": "REASONING_MESSAGE_CONTENT", "messageId": f"z{n}", "delta": "r"},
                       {"type": "REASONING_MESSAGE_END", "messageId": f"z{n}"}]
        else:
            events.append({"type": "ACTIVITY_SNAPSHOT", "messageId": f"a{n}", "activityType": "plan", "content": {"k": [1, 2.5, None]}})
    return initial, events


def test_random_sequences():
    rng = random.Random(32)
    built = 0
    for _ in range(400):
        initial, events = _random_log(rng)
        try:
            built += _check(sse_log(events), json.dumps(initial), None)
        except (msgspec.ValidationError, Exception) as e:  # noqa: BLE001
            # the plain values' conversion refuses: the replay raises the same either way
            with pytest.raises(type(e)):
                stream._replay(_native.replay_log(sse_log(events), json.dumps(initial), None, pipeline_min=NEVER), False)
            with pytest.raises(type(e)):
                stream._replay(_native.replay_log(sse_log(events), json.dumps(initial), None, pipeline_min=NEVER, typed=False), False)
    assert built > 100, built
