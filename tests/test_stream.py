"""``agui_fast.stream`` through its Python API: the reference client's recorded vectors
(``tests/vectors/client``: chunks, verify, apply, compact), the incremental classes
against the whole-sequence functions, typed results, whole logs, and errors."""

from __future__ import annotations

import gzip
import json
import pickle
import sys
from pathlib import Path

import pytest

from agui_fast import stream
from agui_fast.core import AssistantMessage, EventType, TextMessageContentEvent, UserMessage
from agui_fast.decoder import decode_event, decode_sse
from agui_fast.errors import AguiError, EventValidationError, InvalidJsonError, StreamError, VerificationError
from conftest import load_jsonl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

from _stream_log import generate_events, to_sse  # noqa: E402


def _text(events):
    """Events as JSON text: the vectors hold lone UTF-16 surrogates, which a Python
    ``str`` keeps but no JSON writer of a Python object accepts."""
    return [json.dumps(e).encode() for e in events]


CHUNKS = load_jsonl("client/chunks.jsonl")
VERIFY = load_jsonl("client/verify.jsonl")
COMPACT = load_jsonl("client/compact.jsonl")
APPLY = load_jsonl("client/apply.jsonl.gz")
# fast-json-patch dialect cases: the engine's one patch door (stream::patch_json) is
# switched to that dialect when the patch branch lands; `cargo test` skips them too.


# -- vectors ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CHUNKS, ids=[c["name"] for c in CHUNKS])
def test_chunks_vectors(case):
    if case["error"] is None:
        assert stream.expand_chunks(_text(case["input"]), raw=True) == case["output"]
    else:
        with pytest.raises(StreamError) as info:
            stream.expand_chunks(_text(case["input"]), raw=True)
        assert info.value.stage == "chunks"
        assert info.value.events == case["output"]  # what was expanded before the error


@pytest.mark.parametrize("case", CHUNKS[::7], ids=[c["name"] for c in CHUNKS[::7]])
def test_chunk_expander_matches_whole(case):
    x = stream.ChunkExpander(raw=True)
    out = []
    try:
        for e in _text(case["input"]):
            out.extend(x.push(e))
    except StreamError:
        assert case["error"] is not None
    else:
        assert case["error"] is None
    if case["error"] is None:
        assert out == case["output"]
    if case.get("warnings") is not None:
        assert len(x.warnings) == len(case["warnings"])


@pytest.mark.parametrize("case", VERIFY, ids=[c["name"] for c in VERIFY])
def test_verify_vectors(case):
    events = _text(case["input"])
    if case["error"] is None:
        stream.verify_events(events)
        v = stream.EventVerifier()
        for e in events:
            v.push(e)
        return
    with pytest.raises(VerificationError) as info:
        stream.verify_events(events)
    err = info.value
    assert err.index == len(case["passed"])
    assert err.rule and err.rule.startswith("R")
    assert err.events == events[: err.index]
    assert isinstance(err, AguiError) and isinstance(err, ValueError)
    v = stream.EventVerifier()
    with pytest.raises(VerificationError) as again:
        for e in events:
            v.push(e)
    assert (again.value.index, again.value.rule) == (err.index, err.rule)


@pytest.mark.parametrize("case", COMPACT, ids=[c["name"] for c in COMPACT])
def test_compact_vectors(case):
    assert stream.compact_events(_text(case["input"]), raw=True) == case["output"]


@pytest.mark.parametrize("case", APPLY, ids=[c["name"] for c in APPLY])
def test_apply_vectors(case):
    """The reducer alone (``defaultApplyEvents``), final messages and state, the error
    on the same event and the same number of warnings."""
    initial = case["initial"]
    kw = dict(messages=initial["messages"], state=initial["state"], expand=False, compat=False, schema=False, raw=True)
    try:
        r = stream.replay(_text(case["events"]), **kw)
    except StreamError as exc:
        assert case["error"] is not None, exc
        assert exc.index == case["error_after_event"]
        assert exc.stage == "apply"
        r = exc.replay
    else:
        assert case["error"] is None
    assert r.messages == case["final"]["messages"]
    assert r.state == case["final"]["state"]
    if case.get("warnings") is not None:  # recorded for the hand-written cases
        # the reducer's words are compared up to the first colon: after it comes the
        # patch engine's error, worded by fast-json-patch in the reference
        assert [i for i, _ in r.warnings] == [w["after_event"] for w in case["warnings"]]
        assert [m.split(":")[0] for _, m in r.warnings] == [w["warning"].split(":")[0] for w in case["warnings"]]


_LARGE = sorted(APPLY, key=lambda c: len(c["events"]))[-4:]


@pytest.mark.parametrize("case", _LARGE, ids=[c["name"] for c in _LARGE])
def test_event_applier_matches_replay_on_large_cases(case):
    initial = case["initial"]
    kw = dict(expand=False, compat=False, schema=False, raw=True)
    ap = stream.EventApplier(initial["messages"], initial["state"], **kw)
    for e in _text(case["events"]):
        change = ap.apply(e)
        if change.message is not None:
            assert ap.message(change.message) == ap.messages[change.message]
    assert ap.messages == case["final"]["messages"]
    assert ap.state == case["final"]["state"]


# -- typed events and messages ---------------------------------------------------------


def _log(n=3000):
    return to_sse(generate_events(n, seed=3))


def test_replay_of_typed_events_matches_raw():
    data = _log()
    typed = decode_sse(data)
    r = stream.replay(typed)
    raw = stream.replay(_text(json.loads(b"[" + b",".join(f[6:] for f in data.split(b"\n\n") if f) + b"]")), raw=True)
    assert [m.id for m in r.messages] == [m["id"] for m in raw.messages]
    assert all(not isinstance(m, dict) for m in r.messages)
    assert r.state == raw.state
    # the same replay from bytes in one call, from a file and on threads
    assert stream.replay_log(data, raw=True) == raw


def test_replay_log_paths_and_threads(tmp_path):
    logs = [to_sse(generate_events(2000, seed=s)) for s in (1, 2)]
    paths = []
    for i, log in enumerate(logs):
        p = tmp_path / f"run{i}.sse"
        p.write_bytes(log)
        paths.append(p)
    one = [stream.replay_log(p, raw=True) for p in paths]
    assert one == [stream.replay_log(log, raw=True) for log in logs]
    assert stream.replay_logs(paths, threads=2, raw=True) == one
    assert stream.replay_logs([str(p) for p in paths], threads=1, raw=True) == one
    assert stream.replay_log(paths[0], verify=True).state == one[0].state


def test_replay_log_reads_protobuf_and_gzip_through_the_one_log_reader(tmp_path):
    """format="auto": SSE or length-prefixed protobuf, gzip or not (agui_core::log), the same
    final messages and state; a cut protobuf log is a decode error with what was applied."""
    import gzip

    from agui_fast.decoder import decode_sse
    from agui_fast.errors import DecodeError
    from agui_fast.proto import encode_protobuf_many

    sse = to_sse(generate_events(2000, seed=3))
    pb = encode_protobuf_many(decode_sse(sse))
    want = stream.replay_log(sse, raw=True)
    assert stream.replay_log(pb, raw=True) == want
    assert stream.replay_log(pb, format="protobuf", raw=True) == want
    assert stream.replay_log(gzip.compress(sse), raw=True) == want
    path = tmp_path / "run.bin.gz"
    path.write_bytes(gzip.compress(pb))
    assert stream.replay_log(path, raw=True) == want
    assert stream.replay_logs([path, path], threads=2, raw=True) == [want, want]
    with pytest.raises(DecodeError) as info:
        stream.replay_log(pb[:-3], raw=True)
    assert info.value.replay.messages  # the events before the cut were applied


def test_event_applier_typed_change():
    ap = stream.EventApplier([UserMessage(id="u1", content="hi")], {"n": 0})
    ch = ap.apply({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"})
    assert ch.messages and not ch.state and ch.message == 1
    ch = ap.apply(TextMessageContentEvent(message_id="m1", delta="hel"))
    assert ch.message == 1
    ap.apply(b'{"type":"TEXT_MESSAGE_CHUNK","messageId":"m1","delta":"lo"}')
    ch = ap.apply({"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 1}]})
    assert ch.state and not ch.messages
    assert ap.state == {"n": 1}
    msg = ap.message(1)
    assert isinstance(msg, AssistantMessage) and msg.content == "hello"
    assert [type(m) for m in ap.messages] == [UserMessage, AssistantMessage]
    with pytest.raises(IndexError):
        ap.message(5)


def test_expand_chunks_typed():
    out = stream.expand_chunks([{"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}])
    # the stream stays open until an event closes it, as in the reference
    assert [e.type for e in out] == [EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT]


def test_lone_surrogates_are_joined_and_kept():
    events = [
        b'{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}',
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\\ud83d"}',
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"\\ude00b"}',
        b'{"type":"TEXT_MESSAGE_START","messageId":"k","role":"assistant"}',
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"k","delta":"\\udc00"}',
    ]
    r = stream.replay(events, raw=True)
    assert [m["content"] for m in r.messages] == ["a\U0001F600b", "\udc00"]
    assert stream.replay(events).messages[1].content == "\udc00"
    # decoded into typed events (the decoders keep lone surrogates in ``str``), and as
    # dicts: the same result through the surrogate writer
    typed = [decode_event(e) for e in events]
    assert stream.replay(typed, raw=True) == r
    assert stream.replay([json.loads(e) for e in events], raw=True) == r
    ap = stream.EventApplier(raw=True)
    for e in typed:
        ap.apply(e)
    assert ap.messages == r.messages


# -- errors ----------------------------------------------------------------------------


def test_chunk_reaching_reducer_is_a_stream_error():
    with pytest.raises(StreamError) as info:
        stream.replay([{"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"}], expand=False)
    assert info.value.stage == "apply" and info.value.index == 0
    assert info.value.event_type == "TEXT_MESSAGE_CHUNK"
    assert not isinstance(info.value, VerificationError)


def test_verification_error_names_rule_index_ids_and_pickles():
    events = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"},
    ]
    with pytest.raises(VerificationError) as info:
        stream.replay(events, verify=True)
    err = info.value
    assert err.index == 1 and "nope" in err.ids and err.rule.startswith("R")
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), back.rule, back.index, back.ids, back.stage) == (VerificationError, err.rule, 1, err.ids, "verify")


def test_replay_log_decode_error_keeps_what_was_applied():
    data = (
        b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"ok"}\n\n'
        b"data: {not json\n\n"
    )
    with pytest.raises(InvalidJsonError) as info:
        stream.replay_log(data, raw=True)
    assert info.value.frame_index == 2
    assert info.value.replay.messages == [{"id": "m", "role": "assistant", "content": "ok"}]


def test_replay_logs_error_names_the_path(tmp_path):
    good, bad = tmp_path / "good.sse", tmp_path / "bad.sse"
    good.write_bytes(_log(200))
    bad.write_bytes(b'data: {"type":"TEXT_MESSAGE_CHUNK"}\n\ndata: [1]\n\n')
    with pytest.raises(AguiError) as info:
        stream.replay_logs([good, bad])
    assert info.value.path == bad


def _snapshot(depth):
    """A STATE_SNAPSHOT whose JSON nests ``depth`` levels, the event object included."""
    n = depth - 1
    return b'{"type":"STATE_SNAPSHOT","snapshot":' + b"[" * n + b"]" * n + b"}"


def test_nesting_limit_boundary_and_deep_input_is_a_decode_error_not_a_crash():
    # The project's depth limit (agui_core::limits, docs/stream.md): 512 levels pass, 513 do not
    assert stream.replay([_snapshot(512)], raw=True).state is not None
    for depth in (513, 5000):
        with pytest.raises(InvalidJsonError) as info:
            stream.replay([_snapshot(depth)])
        assert info.value.frame_index == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda: stream.replay_log(123),
        lambda: stream.replay(None),
        lambda: stream.expand_chunks({"type": "RUN_STARTED"}),
        lambda: stream.compact_events(b"[]"),
    ],
)
def test_wrong_argument_types_are_type_errors(call):
    with pytest.raises(TypeError):
        call()


def test_bad_format_and_threads():
    with pytest.raises(ValueError, match="'sse', 'protobuf' or 'jsonl'"):
        stream.replay_log(b"", format="xml")
    with pytest.raises(ValueError):
        stream.replay_logs([], threads=0)
    assert stream.replay_logs([]) == []


def test_warnings_are_structured_and_still_index_message_pairs():
    import pickle

    r = stream.replay([
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "futureProp": 1},
        {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/missing"}]},
        {"type": "FUTURE_EVENT"},
    ])
    stripped, failed, dropped = r.warnings
    index, message = stripped
    assert (index, stripped.kind, stripped.path, stripped.ids) == (0, "schema", "/futureProp", ())
    assert stripped == (0, message) and "Removed unrecognised material at '/futureProp'" in message
    assert (failed.index, failed.kind) == (1, "apply") and failed.message.startswith("Failed to apply state patch")
    assert (dropped.index, dropped.kind, dropped.path) == (2, "schema", None)
    back = pickle.loads(pickle.dumps(stripped))
    assert back == stripped and (back.kind, back.path) == ("schema", "/futureProp")
    assert isinstance(stripped, stream.StreamWarning) and "kind='schema'" in repr(stripped)


def test_the_schema_stage_strips_rejects_and_can_be_turned_off():
    start = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    bad = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": 42}
    with pytest.raises(EventValidationError) as info:
        stream.replay([start, bad])
    assert (info.value.field, info.value.frame_index) == ("$.delta", 1)
    assert info.value.replay.messages == []  # what was applied before it
    with pytest.raises(EventValidationError):
        stream.replay_log(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in (start, bad)))
    # schema=False: the stages take any JSON object, as the reference's stages called directly
    r = stream.replay([start, {"type": "TEXT_MESSAGE_START", "messageId": "m"}, bad], schema=False, raw=True)
    assert r.messages[0]["content"] == "42"
    # the spec's strip rule for an unknown member of a closed set (the reference rejects it)
    r = stream.replay([start, {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "narrator"}], raw=True)
    assert r.messages == [{"id": "m", "role": "assistant", "content": ""}] and r.warnings[0].path == "/role"


def test_on_event_sees_what_reaches_the_reducer():
    seen = []
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
              {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "role": "assistant", "delta": "a", "x": 1},
              {"type": "FUTURE_EVENT"}, {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    stream.replay(events, on_event=seen.append, raw=True)
    assert [e["type"] for e in seen] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert "x" not in seen[2]
    typed = []
    stream.EventApplier(on_event=typed.append).apply_many(events)
    assert [e.type.value for e in typed] == [e["type"] for e in seen]
    with pytest.raises(TypeError):
        stream.EventApplier(on_event=5)


def test_an_old_peers_era_and_the_protocol_version_in_replays():
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "draft"},
              {"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n"},
              {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"},
              {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]
    assert stream.replay(events).warnings == []
    r = stream.replay(events, max_protocol_version="0.0.57", protocol_version="1.1", verify=True)
    kinds = [(w.index, w.kind) for w in r.warnings]
    assert kinds == [(0, "version"), (1, "compat"), (2, "compat")]
    assert "cannot interpret" in r.warnings[0].message
    log = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    assert [w.kind for w in stream.replay_log(log, max_protocol_version="0.0.57", protocol_version="1.1").warnings] == ["version", "compat", "compat"]
    for bad in ({"max_protocol_version": "soon"}, {"protocol_version": "1.1.0"}):
        with pytest.raises(ValueError):
            stream.replay(events, **bad)


def test_verify_events_refuses_a_null_optional_tag_in_every_form():
    import ag_ui.core as ref

    from agui_fast import core

    start = core.RunStartedEvent(thread_id="t", run_id="r")
    cases = [
        core.TextMessageStartEvent(message_id="m", subagent_run_id=None),
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "subagentRunId": None},
        json.dumps({"type": "TEXT_MESSAGE_START", "messageId": "m", "subagentRunId": None}),
        ref.TextMessageStartEvent(message_id="m", subagent_run_id=None),
    ]
    for bad in cases:
        with pytest.raises(VerificationError) as info:
            stream.verify_events([start, bad])
        assert (info.value.rule, info.value.index) == ("R06", 1)
        with pytest.raises(VerificationError):
            v = stream.EventVerifier()
            v.push(start)
            v.push(bad)
    sub = core.SubagentStartedEvent(subagent_run_id="s", name="n", description=None)
    with pytest.raises(VerificationError, match="description: null"):
        stream.verify_events([start, sub])
    # not given: nothing to refuse
    stream.verify_events([start, core.TextMessageStartEvent(message_id="m"), core.TextMessageEndEvent(message_id="m")])


def test_state_numbers_compare_as_javascript_doubles_from_a_log_and_from_objects():
    """The replay's patches follow fast-json-patch, whose numbers are doubles: a ``test``
    of integers beyond 2**53 compares them so whether the state came from a log's JSON
    text or from Python objects (``replay`` of dicts)."""
    cases = [(2**63 - 1, 2**63, True), (2**53 + 1, 2**53, True), (2**53 + 1, float(2**53), True),
             (2**64 - 1, 2**64, True), (10, 11, False), (1, 1.0, True), (2**53, 2**53 + 2, False)]
    for state, value, passes in cases:
        events = [{"type": "STATE_SNAPSHOT", "snapshot": {"a": state}},
                  {"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/a", "value": value}, {"op": "add", "path": "/ok", "value": 1}]}]
        log = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        for r in (stream.replay(events), stream.replay_log(log)):
            assert ("ok" in r.state) is passes and bool(r.warnings) is not passes, (state, value)
