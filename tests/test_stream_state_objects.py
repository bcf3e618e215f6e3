"""The state path of ``replay`` / ``EventApplier`` fed with Python objects: the state is a
document of Python values (``patch::StateDocument``) and ``STATE_DELTA`` objects in their
plain form reach it without JSON text. Everything must be as on the bytes path
(``replay_log``) and as events given as JSON text: state, messages, warnings word for word,
errors, depth limits, lone surrogates, pydantic events."""

from __future__ import annotations

import datetime
import json
import random
from typing import Optional

import pytest

from agui_fast import _native, stream
from agui_fast.core import AddOperation, Event, StateDeltaEvent
from agui_fast.decoder import decode_as
from agui_fast.errors import AguiError, EventValidationError, InvalidJsonError
from conftest import load_jsonl, sse_frames

APPLY = load_jsonl("client/apply.jsonl.gz")
STATEFUL = [c for c in APPLY if any(e.get("type") in ("STATE_DELTA", "STATE_SNAPSHOT") for e in c["events"])]


def _texts(events):
    return [json.dumps(e).encode() for e in events]


def _outcome(run):
    """(messages, state, warnings, error index or None) of a replay, raising or not."""
    try:
        r = run()
        error = None
    except AguiError as exc:
        r, error = exc.replay, (type(exc).__name__, getattr(exc, "index", None))
    return r.messages, r.state, r.warnings, error


def _replay_log(data, messages=None, state=None, max_depth=512, schema=True):
    """The bytes path (the core's reducer on a JSON state), from these messages and state."""
    return stream._replay(_native.replay_log(data, messages, state, max_depth=max_depth, schema=schema, typed=False), True)


def _typed(events):
    try:
        return [decode_as(json.dumps(e), Event) for e in events]
    except (AguiError, ValueError):
        return None


@pytest.mark.parametrize("case", STATEFUL, ids=[c["name"] for c in STATEFUL])
def test_objects_text_and_bytes_paths_agree_on_every_vector(case):
    initial = case["initial"]
    texts = _texts(case["events"])
    kw = dict(messages=initial["messages"], state=initial["state"], raw=True)
    want = _outcome(lambda: _replay_log(sse_frames(texts), initial["messages"], initial["state"]))
    assert _outcome(lambda: stream.replay(texts, **kw)) == want
    # dicts (the vectors' lone surrogates included: json.loads keeps them)
    assert _outcome(lambda: stream.replay([json.loads(t) for t in texts], **kw)) == want
    typed = _typed(case["events"])
    if typed is not None:
        assert _outcome(lambda: stream.replay(typed, **kw)) == want


def _ptr(key):
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _generated(seed, n=400):
    """Random deltas against a small state: many fail (missing paths, failing tests,
    bad indices), as objects of every form."""
    rnd = random.Random(seed)
    keys = ["a", "b", "c", "list", "x~y", "s/t"]
    ops = []
    for _ in range(n):
        k = rnd.choice(keys)
        op = rnd.choice(["add", "replace", "remove", "test", "move", "copy", "add-list", "bad"])
        path = _ptr(k)
        if op == "add":
            ops.append([{"op": "add", "path": path, "value": rnd.choice([1, "v", None, {"n": [1, 2]}, [True], 2.5])}])
        elif op == "replace":
            ops.append([{"op": "replace", "path": path, "value": rnd.randint(0, 3)}])
        elif op == "remove":
            ops.append([{"op": "remove", "path": path}])
        elif op == "test":
            ops.append([{"op": "test", "path": path, "value": rnd.randint(0, 3)}, {"op": "add", "path": "/t", "value": 1}])
        elif op in ("move", "copy"):
            ops.append([{"op": op, "from": path, "path": _ptr(rnd.choice(keys))}])
        elif op == "add-list":
            ops.append([{"op": "add", "path": "/list/" + rnd.choice(["-", "0", "1", "01", "9"]), "value": rnd.randint(0, 9)}])
        else:
            ops.append([{"op": "add", "path": "a/no-slash", "value": 1}])
    return ops


@pytest.mark.parametrize("seed", range(6))
def test_failed_deltas_warn_identically_and_leave_the_state_unchanged(seed):
    deltas = _generated(seed)
    state = {"a": 1, "list": [0, 1], "b": {"n": 1}}
    dicts = [{"type": "STATE_DELTA", "delta": d} for d in deltas]
    structs = [StateDeltaEvent(delta=d) for d in deltas if all(o["path"].startswith("/") for o in d)]
    plain = [e for e in dicts if all(o["path"].startswith("/") for o in e["delta"])]
    # The reducer's warnings: without the schema stage, which refuses a path that is no
    # pointer before any patch runs.
    want = _replay_log(sse_frames(_texts(dicts)), state=state, schema=False)
    got = stream.replay(dicts, state=state, raw=True, schema=False)
    assert (got.state, got.warnings) == (want.state, want.warnings)
    assert any(w for w in want.warnings)  # failures happen
    want = _replay_log(sse_frames(_texts(plain)), state=state)
    got = stream.replay(structs, state=state, raw=True)
    assert (got.state, got.warnings) == (want.state, want.warnings)
    # event by event: the same Change and the same words; a failed delta changes nothing
    a, b = stream.EventApplier(state=state, schema=False), stream.EventApplier(state=state, schema=False)
    for e in dicts:
        before = a.state
        ca, cb = a.apply(e), b.apply(json.dumps(e))
        assert ca == cb
        assert a.state == b.state
        if ca.warnings:
            assert not ca.state and a.state == before
    assert state == {"a": 1, "list": [0, 1], "b": {"n": 1}}  # the caller's state is never written


def test_lone_surrogates_in_state_deltas_and_the_initial_state():
    lone = "x\ud83d"
    events = [
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/s", "value": lone}]},
        {"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/s", "value": lone}, {"op": "add", "path": "/ok", "value": 1}]},
        StateDeltaEvent(delta=[AddOperation(path="/t", value={"k": lone})]),
        {"type": "STATE_SNAPSHOT", "snapshot": {"snap": lone, "s": lone}},
        {"type": "STATE_DELTA", "delta": [{"op": "copy", "from": "/snap", "path": "/c"}]},
    ]
    text = [json.dumps(e if isinstance(e, dict) else {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/t", "value": {"k": lone}}]}).encode() for e in events]
    want = _replay_log(sse_frames(text), state={"init": lone})
    got = stream.replay(events, state={"init": lone}, raw=True)
    assert got.state == want.state == {"snap": lone, "s": lone, "c": lone}
    assert got.warnings == want.warnings == []
    assert stream.replay(events[:3], state={"init": lone}).state == {"init": lone, "s": lone, "ok": 1, "t": {"k": lone}}


def test_pydantic_events_and_values_only_json_takes():
    ag_core = pytest.importorskip("ag_ui.core")
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    events = [
        ag_core.StateSnapshotEvent(snapshot={"a": 1}),
        ag_core.StateDeltaEvent(delta=[{"op": "add", "path": "/when", "value": when}]),
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/d", "value": when}]},
        StateDeltaEvent(delta=[AddOperation(path="/e", value=when)]),
    ]
    r = stream.replay(events, state={"start": when})
    iso = "2026-01-02T03:04:05Z"
    assert r.state == {"a": 1, "when": iso, "d": iso, "e": iso}
    assert stream.replay(events[1:], state={"start": when}).state["start"] == iso


def test_struct_deltas_with_other_members_take_the_json_path():
    op = AddOperation(path="/a", value=1, extra={"n": 1})  # an extra member is written
    ev = StateDeltaEvent(delta=[op], timestamp=5)
    assert stream.replay([ev]).state == {"a": 1}
    bad = StateDeltaEvent(delta=[AddOperation(path="/a", value=1)])
    bad.delta = None  # bypassed construction: read as JSON, as before
    want = stream.replay([json.dumps({"type": "STATE_DELTA", "delta": None})], schema=False)
    got = stream.replay([bad], schema=False)
    assert got.warnings == want.warnings == [(0, "Failed to apply state patch: a JSON Patch must be an array, not null")]
    # with the schema stage (the default), a malformed delta is refused, named
    with pytest.raises(EventValidationError) as info:
        stream.replay([bad])
    assert info.value.field == "$.delta" and info.value.frame_index == 0


@pytest.mark.parametrize("form", ["dict", "struct", "text"])
def test_depth_limit_of_delta_events_at_the_boundary(form):
    def nested(n):
        v = 0
        for _ in range(n):
            v = [v]
        return v

    # the event nests 3 levels (event, delta, operation) above the value
    for depth, ok in ((509, True), (510, False)):
        delta = [{"op": "add", "path": "/v", "value": nested(depth)}]
        ev = {"dict": {"type": "STATE_DELTA", "delta": delta}, "struct": StateDeltaEvent(delta=delta), "text": json.dumps({"type": "STATE_DELTA", "delta": delta})}[form]
        if ok:
            assert stream.replay([ev]).state["v"] == nested(depth)
        else:
            with pytest.raises(InvalidJsonError):
                stream.replay([ev])
    small = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/v", "value": nested(7)}]}
    assert _outcome(lambda: stream.replay([small], max_depth=10)) == _outcome(lambda: stream.replay([json.dumps(small)], max_depth=10))
    for md in range(0, 6):
        tiny = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/v", "value": 1}]}
        try:
            want = ("ok", stream.replay([json.dumps(tiny)], max_depth=md).state)
        except InvalidJsonError:
            want = ("error", None)
        try:
            got = ("ok", stream.replay([tiny], max_depth=md).state)
        except InvalidJsonError:
            got = ("error", None)
        assert got == want, md


def test_verify_and_pending_chunks_route_deltas_through_the_stages():
    delta = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}
    # verification on: a delta before RUN_STARTED is a rule violation (R01), as JSON text
    with pytest.raises(AguiError) as info:
        stream.replay([delta], verify=True)
    with pytest.raises(AguiError) as text_info:
        stream.replay([json.dumps(delta)], verify=True)
    assert str(info.value) == str(text_info.value)
    # a pending chunk stream is closed by the delta, as for JSON text
    chunk = {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "hi"}
    a = stream.replay([chunk, delta], raw=True)
    b = stream.replay([json.dumps(chunk), json.dumps(delta)], raw=True)
    assert (a.messages, a.state) == (b.messages, b.state) and a.state == {"a": 1}


def test_event_applier_state_is_a_copy_and_replay_state_is_never_written_again():
    ap = stream.EventApplier(state={"a": {"b": 1}})
    ap.apply({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a/c", "value": 2}]})
    s = ap.state
    s["a"]["c"] = 99
    assert ap.state == {"a": {"b": 1, "c": 2}}
    shared = ap.result().state
    ap.apply({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/a/c", "value": 3}]})
    assert shared == {"a": {"b": 1, "c": 2}} and ap.state == {"a": {"b": 1, "c": 3}}
    events = [{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/n", "value": i}]} for i in range(3)]
    r = stream.replay(events, state={"a": [1]})
    assert r.state == {"a": [1], "n": 2}


@pytest.mark.parametrize("max_depth", [0, 1, 5, 512])
def test_initial_state_depth_limit_as_json_text(max_depth):
    def nested(n):
        v = 0
        for _ in range(n):
            v = [v]
        return v

    assert stream.replay([], state=nested(max_depth), max_depth=max_depth).state == nested(max_depth)
    # (JSON text is given as bytes: a str state is a string)
    for s in (nested(max_depth + 1), json.dumps(nested(max_depth + 1)).encode()):
        with pytest.raises(InvalidJsonError):
            stream.replay([], state=s, max_depth=max_depth)


# -- which Structs take the direct path (read through the JSON writer's per-class plan) --
# A value applied without JSON stays the very object given (the document keeps immutable
# values as they are); through JSON text it is a new string. That tells the paths apart.


def _fresh(text="probe"):
    return "".join([text, "-", "value"])  # a new str object, never interned


def _direct(ev, **kw):
    """(state, taken directly): replay `ev`, whose one operation adds the fresh string at
    /v, and compare with the same event as JSON text."""
    value = _fresh()
    ev = ev(value)
    got = stream.replay([ev], raw=True, **kw)
    want = stream.replay([_native.dumps(ev)], raw=True, **kw)
    assert (got.state, got.warnings) == (want.state, want.warnings)
    return got.state, got.state.get("v") is value


def test_plain_struct_deltas_are_applied_without_json():
    # Read in place only where the class's version tag is read (else through JSON).
    if not _native._testing.direct_reads()["version"]:
        pytest.skip("class version tags are not read on this interpreter: Structs go through JSON")
    assert _direct(lambda v: StateDeltaEvent(delta=[AddOperation(path="/v", value=v)])) == ({"v": "probe-value"}, True)
    # operations of every class
    from agui_fast.core import CopyOperation, MoveOperation, RemoveOperation, ReplaceOperation, TestOperation

    def every(v):
        return StateDeltaEvent(delta=[
            AddOperation(path="/a", value=[1]), ReplaceOperation(path="/a", value={"k": 2}), TestOperation(path="/a/k", value=2),
            CopyOperation(from_="/a", path="/b"), MoveOperation(from_="/b", path="/c"), RemoveOperation(path="/a"),
            AddOperation(path="/v", value=v),
        ])

    assert _direct(every) == ({"c": {"k": 2}, "v": "probe-value"}, True)
    # plain dicts assigned in place of the Structs (the writer refuses them, construction
    # converts them) are applied as they are, as in a dict event
    value = _fresh()
    ev = StateDeltaEvent(delta=[AddOperation(path="/a", value=1)])
    ev.delta = [{"op": "add", "path": "/v", "value": value}, AddOperation(path="/w", value=2)]
    assert stream.replay([ev]).state["v"] is value
    # such a delta that fails warns as the same delta in a dict event
    ev.delta = [{"op": "remove", "path": "/missing"}]
    want = stream.replay([{"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/missing"}]}])
    got = stream.replay([ev])
    assert (got.state, got.warnings) == (want.state, want.warnings) and got.warnings


@pytest.mark.parametrize(
    "member",
    [{"timestamp": 5}, {"raw_event": {"x": 1}}, {"raw_event": 0}, {"metadata": {"m": 1}}, {"metadata": {}}, {"subagent_run_id": "sub"}],
)
def test_struct_deltas_with_a_member_set_take_the_json_path(member):
    state, direct = _direct(lambda v: StateDeltaEvent(delta=[AddOperation(path="/v", value=v)], **member))
    assert state == {"v": "probe-value"} and not direct


def test_struct_deltas_and_operations_with_extras_take_the_json_path():
    def event_extra(v):
        ev = StateDeltaEvent(delta=[AddOperation(path="/v", value=v)])
        ev.__dict__["note"] = "x"  # an extra member, written to JSON
        return ev

    def op_extra(v):
        return StateDeltaEvent(delta=[AddOperation(path="/v", value=v, note="x")])

    for make in (event_extra, op_extra):
        assert _direct(make) == ({"v": "probe-value"}, False)


def test_struct_subclasses_take_the_json_path():
    class Traced(StateDeltaEvent, kw_only=True):
        trace: Optional[str] = None

    class FromProperty(StateDeltaEvent, kw_only=True):
        @property
        def delta(self):  # never read from the slot: its JSON is the property's
            return [AddOperation(path="/p", value=1)]

    class TracedOp(AddOperation, kw_only=True):
        trace: Optional[str] = None

    assert _direct(lambda v: Traced(delta=[AddOperation(path="/v", value=v)], trace="t")) == ({"v": "probe-value"}, False)
    assert _direct(lambda v: Traced(delta=[AddOperation(path="/v", value=v)])) == ({"v": "probe-value"}, False)

    def traced_op(v):
        ev = StateDeltaEvent(delta=[AddOperation(path="/a", value=1)])
        ev.delta = [TracedOp(path="/v", value=v, trace="t")]  # construction takes the declared classes
        return ev

    assert _direct(traced_op) == ({"v": "probe-value"}, False)
    assert _direct(lambda v: FromProperty(delta=[AddOperation(path="/v", value=v)])) == ({"p": 1}, False)


def test_a_struct_class_changed_after_its_plan_was_built_is_read_as_it_is_now():
    # Read in place only where the class's version tag is read (else through JSON).
    if not _native._testing.direct_reads()["version"]:
        pytest.skip("class version tags are not read on this interpreter: Structs go through JSON")
    from agui_fast.core import ReplaceOperation

    value = _fresh()
    ev = StateDeltaEvent(delta=[AddOperation(path="/v", value=value)])
    assert stream.replay([ev]).state["v"] is value  # plans built, the direct path taken
    slot = StateDeltaEvent.__dict__["delta"]
    try:
        # a field replaced by a property on the class itself: read through it, as getattr does
        StateDeltaEvent.delta = property(lambda self: [AddOperation(path="/p", value=2)])
        assert ev.delta == [AddOperation(path="/p", value=2)]
        assert stream.replay([ev]).state == {"p": 2}
        ap = stream.EventApplier()
        ap.apply(ev)
        assert ap.state == {"p": 2}
    finally:
        StateDeltaEvent.delta = slot
    assert stream.replay([ev]).state["v"] is value  # back to the slot, directly
    # an operation class changed the same way, then restored
    op_slot = AddOperation.__dict__["value"]
    try:
        AddOperation.value = property(lambda self: "from the property")
        assert stream.replay([ev]).state == {"v": "from the property"}
    finally:
        AddOperation.value = op_slot
    assert stream.replay([ev]).state["v"] is value
    # a base class changed: its subclasses' plans are rebuilt too
    base = StateDeltaEvent.__mro__[1]
    base_slot = base.__dict__["timestamp"]
    try:
        base.timestamp = property(lambda self: 7)
        assert stream.replay([ev]).state == {"v": value} and stream.replay([ev]).state["v"] is not value
        assert _native.dumps(ev).startswith(b'{"type":"STATE_DELTA","timestamp":7,')
    finally:
        base.timestamp = base_slot
    assert stream.replay([ev]).state["v"] is value
    ops = [ReplaceOperation(path="/v", value=value)]
    assert stream.replay([StateDeltaEvent(delta=ops)], state={"v": 0}).state["v"] is value


def test_struct_fields_assigned_wrong_kinds_take_the_json_path():
    ev = StateDeltaEvent(delta=[AddOperation(path="/v", value=1)])
    # assignment is not validated: replayed as its JSON (the native writer refuses it, the
    # fallback writer writes it as it is) and the patch fails with the same warning
    for path in (5, None, "no-slash"):
        ev = StateDeltaEvent(delta=[AddOperation(path="/v", value=1)])
        ev.delta[0].path = path
        want = stream.replay([stream._surrogate_json(ev)], schema=False)
        got = stream.replay([ev], schema=False)
        assert (got.state, got.warnings) == (want.state, want.warnings) and got.warnings
        with pytest.raises(EventValidationError):  # the schema stage refuses it, named
            stream.replay([ev])


def test_decoded_struct_deltas_with_and_without_an_instance_dict():
    """A decoded Struct has no instance dict until one is asked for: the extras check reads
    "none yet" without making one, an empty one made since, and one with members."""
    # Read in place only where the class's version tag is read (else through JSON).
    if not _native._testing.direct_reads()["version"]:
        pytest.skip("class version tags are not read on this interpreter: Structs go through JSON")
    value = _fresh()
    text = json.dumps({"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/v", "value": "x"}]})
    for where in (None, "event", "operation"):
        for made in ("none", "empty", "member"):
            ev = decode_as(text, Event)
            ev.delta[0].value = value
            obj = {"event": ev, "operation": ev.delta[0]}.get(where)
            if obj is not None and made != "none":
                d = obj.__dict__  # made now
                if made == "member":
                    d["note"] = 1
            direct = where is None or made != "member"
            state = stream.replay([ev]).state
            assert state == {"v": value} and (state["v"] is value) == direct, (where, made)


# -- STATE_SNAPSHOT read as JSON text: the document built from the text, without a parsed
# value between; what that read does not take (errors, depth, lone surrogates, the kept
# range) goes through the event's parse, as every other event.

_TOKEN = "$serde_json::private::Number"
_SNAPSHOTS = [
    '{"a":1,"b":-0,"c":1.0,"d":1e400,"e":-1e400,"f":12345678901234567890,"g":-9223372036854775809,'
    '"h":9223372036854775807,"i":1E2,"j":0.1,"k":-0.0,"l":1e-400,"m":18446744073709551616}',
    '{"big":' + "9" * 4300 + '}', '{"big":-' + "9" * 4300 + '}', '{"big":' + "9" * 4301 + '}', '{"big":' + "9" * 4301 + '.5}',
    '{"a":1,"b":2,"a":3}', '{"a":{"x":1,"y":2,"x":{"z":[1,2]}},"b":[{"c":1,"c":2}]}',
    '{"s":"\\ud800"}', '{"s":"\\udc00x\\ud800"}', '{"\\ud800k":1}', '{"s":"\\ud83d\\ude00 ok"}',
    '{"s":"\U0010F800"}', '{"s":"\\udbfe\\udc00"}', '{"s":"\\udbff\\udfff"}',
    '{"a\\u0041":1,"\\n":"\\t\\u0000\\"\\\\\\/"}', '{"e":"日本語 café 😀"}',
    '{"x":{"' + _TOKEN + '":"12"}}', '{"x":{"\\u0024serde_json::private::Number":"1.5e3"}}', '[{"' + _TOKEN + '":"-0"}]',
    '{"x":{"' + _TOKEN + '":"abc"}}', '{"x":{"' + _TOKEN + '":"12","y":1}}', '{"x":{"' + _TOKEN + '":12}}',
    '[1,2,{"a":[]}]', '{}', '[]', '[[],{}]', '{"a":true,"b":false,"c":null}',
    '{"a":}', '{"a":1,}', '[1,]', '{"a":1}x', '{"a":01}', '{"a":1.}', '{"a":NaN}', '{"a":"\\x"}', '{"a":"\t"}',
]


def _snapshot_texts(snapshot, extra=""):
    return [
        b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}',
        b'{"type":"STATE_SNAPSHOT","snapshot":' + snapshot.encode() + extra.encode() + b"}",
        b'{"type":"STATE_DELTA","delta":[{"op":"add","path":"/zz","value":1}]}',
        b'{"type":"RUN_FINISHED","threadId":"t","runId":"r"}',
    ]


def _exact(run):
    """The outcome with the state's exact values (int vs float, -0.0, key order) and the
    error's class and words."""
    try:
        r = run()
        return repr(r.state), r.warnings, None
    except AguiError as exc:
        return repr(exc.replay.state), exc.replay.warnings, (type(exc).__name__, str(exc))


def _nested(n, inner="1"):
    return '{"a":' * n + inner + "}" * n


@pytest.mark.parametrize(
    "snapshot, max_depth",
    [(s, 512) for s in _SNAPSHOTS]
    + [(f(n), d) for d in (3, 4) for n in (d - 2, d - 1, d) for f in (_nested, lambda n: "[" * n + "]" * n, lambda n: _nested(n, '{"' + _TOKEN + '":"1"}'))],
)
def test_snapshots_read_from_text_as_their_parse_reads_them(snapshot, max_depth):
    texts = _snapshot_texts(snapshot)
    # the bytes path (a JSON state), the text events and the same event read as an object
    # (rawEvent: not a plain event) on the document of Python values
    want = _exact(lambda: _replay_log(sse_frames(texts), max_depth=max_depth))
    assert _exact(lambda: stream.replay(texts, max_depth=max_depth)) == want
    general = _exact(lambda: stream.replay(_snapshot_texts(snapshot, ',"rawEvent":{}'), max_depth=max_depth))
    assert general == want
    if want[2] is None and "inf" not in want[0]:  # (Structs, from the JSON they decode to)
        typed = _typed([json.loads(t) for t in texts])
        if typed is not None:
            assert _exact(lambda: stream.replay(typed, max_depth=max_depth)) == want
