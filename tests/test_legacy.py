"""Legacy (0.x) input conversion against the reference's CompatibilityBoundary cases
(vectors/client/legacy.jsonl), directly and through the SSE decoder, with it on and off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agui_fast.errors import EventValidationError
from agui_fast.legacy import LegacyConverter, convert_messages
from agui_fast.sse import SseDecoder, decode_sse

VECTORS = Path(__file__).parent / "vectors" / "client" / "legacy.jsonl"
with open(VECTORS, encoding="utf-8") as _f:
    ALL = [json.loads(line) for line in _f if line.strip()]
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


def _sse(events) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def test_boundary_cases_present():
    assert len(BOUNDARY) >= 20


@pytest.mark.parametrize("case", BOUNDARY, ids=[c["name"] for c in BOUNDARY])
def test_converter_matches_reference(case):
    assert case["error"] is None
    conv = LegacyConverter()
    got = [conv.convert(json.loads(json.dumps(e))) for e in case["input"]]
    assert _rename(got, _strings(case["input"], set())) == case["output"]


@pytest.mark.parametrize("case", BOUNDARY, ids=[c["name"] for c in BOUNDARY])
def test_decoder_dict_mode_matches_reference(case):
    known = _strings(case["input"], set())
    got = decode_sse(_sse(case["input"]), raw="dict")
    assert _rename(got, known) == case["output"]
    # Incremental, byte by byte: the current-id state spans chunks.
    dec = SseDecoder(raw="dict")
    data = _sse(case["input"])
    inc = []
    for i in range(0, len(data), 5):
        inc.extend(dec.feed(data[i : i + 5]))
    inc.extend(dec.close())
    assert _rename(inc, known) == case["output"]


@pytest.mark.parametrize("case", BOUNDARY, ids=[c["name"] for c in BOUNDARY])
def test_legacy_off_dict_mode_is_untouched(case):
    assert decode_sse(_sse(case["input"]), raw="dict", legacy=False) == case["input"]


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
        decode_sse(_sse(case["input"]))
    assert ei.value.field


@pytest.mark.parametrize("case", [c for c in BOUNDARY if c["name"] not in NOT_1_0], ids=lambda c: c["name"])
def test_decoder_typed_matches_reference(case):
    from agui_fast.decoder import decode_event

    known = _strings(case["input"], set())
    got = decode_sse(_sse(case["input"]))
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
        decode_sse(_sse(case["input"]))
    assert ei.value.frame_index == 1
    assert ei.value.field and ei.value.field.startswith("$.messages")
    # every other event of the call comes with the error
    assert [e.type.value for e in ei.value.events] == [d["type"] for d in case["input"] if d is not case["input"][1]]


def test_typed_legacy_off_rejects_thinking():
    case = next(c for c in BOUNDARY if c["name"].endswith("thinking_block_to_reasoning"))
    with pytest.raises(EventValidationError) as ei:
        decode_sse(_sse(case["input"]), legacy=False)
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


def test_id_factory_and_convert_messages():
    n = iter(range(100))
    conv = LegacyConverter(id_factory=lambda: f"id{next(n)}")
    assert conv.convert({"type": "THINKING_START", "title": "t"}) == {
        "type": "REASONING_START",
        "messageId": "id0",
    }
    assert conv.convert({"type": "THINKING_END"}) == {"type": "REASONING_END", "messageId": "id0"}
    assert conv.convert({"type": "THINKING_END"}) == {"type": "REASONING_END", "messageId": "id1"}
    assert conv.convert(42) == 42
    case = next(c for c in BOUNDARY if c["name"].endswith("run_input_messages_upgraded_before_forwarding"))
    assert convert_messages(json.loads(json.dumps(case["run_input_messages"]))) == case["forwarded_run_input"]["messages"]


# (Linear time of binary parts: tests/test_props_linear.py.)
