"""Legacy (0.x) input conversion against the reference's CompatibilityBoundary cases
(vectors/client/legacy.jsonl) through the SSE decoders, with it on and off. The converter
is the core's (agui_core::stream::legacy, checked case by case with its warnings by
rust/agui-core/tests/stream_vectors.rs); these tests check that the decoders apply it."""

from __future__ import annotations

import json

import pytest

from agui_fast.errors import EventValidationError
from agui_fast.sse import SseDecoder, decode_sse
from conftest import load_jsonl, sse_log

ALL = load_jsonl("client/legacy.jsonl")
BOUNDARY = [c for c in ALL if c["middleware"] == "CompatibilityBoundary"]


def _strings(v, acc):
    if isinstance(v, str):
        acc.add(v)
    elif isinstance(v, list):
        for x in v:
            _strings(x, acc)
    elif isinstance(v, dict):
        for x in v.values():
            _strings(x, acc)
    return acc


def _rename(events, known):
    """Replace ids we generated (strings not in the input) by <generated-id-N>, numbered
    by first appearance, like the vectors do."""
    mapping = {}

    def walk(v):
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k == "messageId" and isinstance(x, str) and x not in known:
                    if x not in mapping:
                        mapping[x] = f"<generated-id-{len(mapping) + 1}>"
                    x = mapping[x]
                out[k] = walk(x)
            return out
        return v

    return walk(events)


def test_boundary_cases_present():
    assert len(BOUNDARY) >= 20


@pytest.mark.parametrize("case", BOUNDARY, ids=[c["name"] for c in BOUNDARY])
def test_decoder_dict_mode_matches_reference(case):
    assert case["error"] is None
    known = _strings(case["input"], set())
    got = decode_sse(sse_log(case["input"]), raw="dict")
    assert _rename(got, known) == case["output"]
    # Incremental, byte by byte: the current-id state spans chunks.
    dec = SseDecoder(raw="dict")
    data = sse_log(case["input"])
    inc = []
    for i in range(0, len(data), 5):
        inc.extend(dec.feed(data[i : i + 5]))
    inc.extend(dec.close())
    assert _rename(inc, known) == case["output"]


@pytest.mark.parametrize("case", BOUNDARY, ids=[c["name"] for c in BOUNDARY])
def test_legacy_off_dict_mode_is_untouched(case):
    assert decode_sse(sse_log(case["input"]), raw="dict", legacy=False) == case["input"]


# Cases whose reference output is still not a valid 1.0 event (a binary part that cannot
# convert; a resume entry without its required `status`): typed decoding must reject them.
NOT_1_0 = {
    "CompatibilityBoundary/binary_part_with_only_id_kept_legacy",
    "CompatibilityBoundary/binary_without_string_mime_type_untouched",
    "CompatibilityBoundary/run_started_input_nulls_and_binary_upgraded",
}


@pytest.mark.parametrize("case", [c for c in BOUNDARY if c["name"] in NOT_1_0], ids=lambda c: c["name"])
def test_decoder_typed_rejects_outputs_that_are_not_1_0(case):
    with pytest.raises(EventValidationError) as ei:
        decode_sse(sse_log(case["input"]))
    assert ei.value.field


@pytest.mark.parametrize("case", [c for c in BOUNDARY if c["name"] not in NOT_1_0], ids=lambda c: c["name"])
def test_decoder_typed_matches_reference(case):
    from agui_fast.decoder import decode_event

    known = _strings(case["input"], set())
    got = decode_sse(sse_log(case["input"]))
    # Compare through the JSON values: our typed events, re-decoded from the expected
    # output with the generated ids mapped to ours.
    out = case["output"]
    assert len(got) == len(out)
    ids = {}
    for ev, exp in zip(got, out):
        mid = exp.get("messageId")
        if isinstance(mid, str) and mid.startswith("<generated-id-"):
            assert ev.message_id not in known
            assert ids.setdefault(mid, ev.message_id) == ev.message_id  # consistent renaming
            exp = dict(exp, messageId=ev.message_id)
        assert ev == decode_event(json.dumps(exp).encode()), case["name"]
    assert len(set(ids.values())) == len(ids)


def test_typed_binary_with_only_id_stays_invalid():
    case = next(c for c in BOUNDARY if c["name"].endswith("binary_part_with_only_id_kept_legacy"))
    with pytest.raises(EventValidationError) as ei:
        decode_sse(sse_log(case["input"]))
    assert ei.value.frame_index == 1
    assert ei.value.field and ei.value.field.startswith("$.messages")
    # every other event of the call comes with the error
    assert [e.type.value for e in ei.value.events] == [d["type"] for d in case["input"] if d is not case["input"][1]]


def test_typed_legacy_off_rejects_thinking():
    case = next(c for c in BOUNDARY if c["name"].endswith("thinking_block_to_reasoning"))
    with pytest.raises(EventValidationError) as ei:
        decode_sse(sse_log(case["input"]), legacy=False)
    assert ei.value.frame_index == 1
    # every frame the call could decode comes with the error (the THINKING_* ones fail)
    assert ei.value.events and all(not e.type.value.startswith("THINKING_") for e in ei.value.events)
    assert [e.frame_index for e in ei.value.errors] == [
        i for i, d in enumerate(case["input"]) if d["type"].startswith("THINKING_")
    ]


def test_thinking_ids_across_chunks_and_errors():
    dec = SseDecoder(raw="dict")
    a = dec.feed(b'data: {"type":"THINKING_START"}\n\ndata: {"type":"THINKING_TEXT_MESSAGE_START"}\n\n')
    b = dec.feed(b'data: {"type":"THINKING_TEXT_MESSAGE_CONTENT","delta":"x"}\n\n')
    c = dec.feed(b'data: {"type":"THINKING_TEXT_MESSAGE_END"}\n\ndata: {"type":"THINKING_END"}\n\n')
    span, msg = a[0]["messageId"], a[1]["messageId"]
    assert span != msg
    assert b[0]["messageId"] == msg and c[0]["messageId"] == msg and c[1]["messageId"] == span


def test_conversion_warns_nothing_and_leaves_1_0_input_alone():
    """The reference's compat messages are not repeated as Python warnings (the decoders
    never did), and a 1.0 stream comes out exactly as without the converter."""
    import warnings

    legacy_stream = b"".join(sse_log(c["input"]) for c in BOUNDARY)
    modern = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "null \\u0000 \"binary\" THINKING_START", "x": None},
        {"type": "CUSTOM", "name": "n", "value": {"a": [1.5e300, None, -0.0, 12345678901234567890123]}},
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        decode_sse(legacy_stream, raw="dict")
        for raw in (None, "dict", "bytes"):
            assert decode_sse(sse_log(modern), raw=raw) == decode_sse(sse_log(modern), raw=raw, legacy=False)


def _snapshot(n):
    """One MESSAGES_SNAPSHOT: n modern parts, n binary parts mirroring them, n new ones."""
    modern = [{"type": "image", "source": {"type": "data", "value": f"d{i}", "mimeType": "image/png"}} for i in range(n)]
    binary = [{"type": "binary", "mimeType": "image/png", "data": f"d{i}"} for i in range(n)]
    fresh = [{"type": "binary", "mimeType": "image/png", "data": f"new{i}"} for i in range(n)]
    message = {"id": "u", "role": "user", "content": modern + binary + fresh}
    return sse_log([{"type": "MESSAGES_SNAPSHOT", "messages": [message]}])


def test_mirrored_binary_parts_are_dropped_and_numbers_compare_as_js_does():
    (ev,) = decode_sse(_snapshot(3), raw="dict")
    assert ev["messages"][0]["content"][3:] == [
        {"type": "image", "source": {"type": "data", "value": f"new{i}", "mimeType": "image/png"}} for i in range(3)
    ]
    # `===` on numbers: 0 and -0.0 (and 1 and 1.0) are the same value; objects never are.
    parts = [
        {"type": "image", "source": {"type": "data", "value": 0, "mimeType": "image/png"}},
        {"type": "image", "source": {"type": "data", "value": 1.0, "mimeType": "image/png"}, "metadata": {"filename": "f"}},
        {"type": "image", "source": {"type": "data", "value": {"k": 1}, "mimeType": "image/png"}},
        {"type": "binary", "mimeType": "image/png", "data": -0.0},  # falsy: stays binary (only an id)
        {"type": "binary", "mimeType": "image/png", "data": 1, "filename": "f"},  # mirrors part 1
        {"type": "binary", "mimeType": "image/png", "data": 1, "filename": "g"},  # filename differs
        {"type": "binary", "mimeType": "image/png", "data": {"k": 1}},  # an object: no mirror
    ]
    (ev,) = decode_sse(sse_log([{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": parts}]}]), raw="dict")
    out = ev["messages"][0]["content"]
    assert out[:4] == parts[:4]
    assert out[4:] == [
        {"type": "image", "source": {"type": "data", "value": 1, "mimeType": "image/png"}, "metadata": {"filename": "g"}},
        {"type": "image", "source": {"type": "data", "value": {"k": 1}, "mimeType": "image/png"}},
    ]
