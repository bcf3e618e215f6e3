"""Protobuf: the AG-UI binary format, our Structs to and from bytes, against google's
``protobuf`` (upb) classes generated from the same ``.proto`` files: the dict path a
Python user of those classes takes (``ParseDict`` + ``SerializeToString``,
``FromString`` + ``MessageToDict``) and the bare C floor (a prebuilt message serialised,
bytes parsed into a message: no Python data at all)."""

from __future__ import annotations

from google.protobuf import json_format

from _data import LOG_EVENTS, vector_events
from _interleave import Peer, against
from _peers import upb, upb_dict_log, upb_log
from agui_fast import _native, proto
from agui_fast.core import TextMessageContentEvent
from agui_fast.decoder import EVENT_DECODER, decode_sse

PB = upb()
SMALL = TextMessageContentEvent(message_id="msg_1", delta="Hello, world")
SMALL_MSG = proto.encode_event_message(SMALL)
SMALL_PB = PB.Event.FromString(SMALL_MSG)
SMALL_DICT = json_format.MessageToDict(SMALL_PB)
assert SMALL_PB.SerializeToString() == SMALL_MSG  # same schema, same bytes


def _upb_reads(msg: bytes) -> bool:
    try:
        PB.Event.FromString(msg)
        return True
    except Exception:  # upb's depth limit (100) refuses the 50-deep nesting vectors
        return False


# Every valid vector event of frames under 4 KB (every kind, nested messages, JSON values).
MIXED = [e for e in vector_events() if len(proto.encode_event_message(e)) < 4096 and _upb_reads(proto.encode_event_message(e))]
MIXED_MSGS = [proto.encode_event_message(e) for e in MIXED]
MIXED_PB = [PB.Event.FromString(m) for m in MIXED_MSGS]
MIXED_DICTS = [json_format.MessageToDict(m) for m in MIXED_PB]


def test_encode_small(benchmark):
    """One TEXT_MESSAGE_CONTENT, Struct to message bytes."""
    benchmark.group = "protobuf/encode_small"
    parse, event = json_format.ParseDict, PB.Event
    out = against(benchmark, lambda: proto.encode_event_message(SMALL),
                  {"upb ParseDict + SerializeToString": lambda: parse(SMALL_DICT, event()).SerializeToString(),
                   "upb SerializeToString (floor)": SMALL_PB.SerializeToString},
                  readme={"upb ParseDict + SerializeToString": "protobuf encode, one small event"})
    assert out == SMALL_MSG


def test_decode_small(benchmark):
    """Message bytes to a Struct."""
    benchmark.group = "protobuf/decode_small"
    to_dict, from_string = json_format.MessageToDict, PB.Event.FromString
    out = against(benchmark, lambda: proto.decode_event_message(SMALL_MSG),
                  {"upb FromString + MessageToDict": lambda: to_dict(from_string(SMALL_MSG)),
                   "upb FromString (floor)": lambda: from_string(SMALL_MSG)},
                  readme={"upb FromString + MessageToDict": "protobuf decode, one small event"})
    assert out == SMALL


def test_decode_one_frame(benchmark):
    """``decode_protobuf`` of one frame, against the floor: ``decode_event`` of the same
    event's JSON."""
    benchmark.group = "protobuf/decode_one_frame"
    frame = proto.encode_protobuf_frame(SMALL)
    text = _native.dumps(SMALL)
    out = against(benchmark, lambda: proto.decode_protobuf(frame), {"decode_event of its JSON (floor)": lambda: [EVENT_DECODER.decode(text)]})
    assert out == [SMALL]


def test_encode_mixed(benchmark):
    """Every kind of event (the vectors' mixed set), one message each."""
    benchmark.group = "protobuf/encode_mixed"
    parse, event = json_format.ParseDict, PB.Event
    enc = proto.encode_event_message
    against(benchmark, lambda: [enc(e) for e in MIXED],
            {"upb ParseDict + SerializeToString": lambda: [parse(d, event()).SerializeToString() for d in MIXED_DICTS],
             "upb SerializeToString (floor)": lambda: [m.SerializeToString() for m in MIXED_PB]},
            events=len(MIXED))


def test_decode_mixed(benchmark):
    benchmark.group = "protobuf/decode_mixed"
    to_dict, from_string = json_format.MessageToDict, PB.Event.FromString
    dec = proto.decode_event_message
    against(benchmark, lambda: [dec(m) for m in MIXED_MSGS],
            {"upb FromString + MessageToDict": lambda: [to_dict(from_string(m)) for m in MIXED_MSGS],
             "upb FromString (floor)": lambda: [from_string(m) for m in MIXED_MSGS]},
            events=len(MIXED))


def test_encode_many(benchmark):
    """A batch into one length-prefixed buffer."""
    benchmark.group = "protobuf/encode_many"

    def floor():
        out = bytearray()
        for m in MIXED_PB:
            b = m.SerializeToString()
            out += len(b).to_bytes(4, "big")
            out += b
        return bytes(out)

    against(benchmark, lambda: proto.encode_protobuf_many(MIXED), {"upb SerializeToString + framing (floor)": floor},
            events=len(MIXED))


def test_decode_log(benchmark):
    """A log of mostly small streaming events (every tenth from the mixed set), protobuf
    against the SSE of the same events, the upb floor and the upb dict path."""
    benchmark.group = "protobuf/decode_log"

    def plain(e) -> bool:  # no unknown members: SSE and protobuf give the same events
        try:
            return EVENT_DECODER.decode(_native.dumps(e)) == e
        except Exception:
            return False

    base = [e for e in MIXED if plain(e)]
    events = [base[(i // 10) % len(base)] if i % 10 == 0 else SMALL for i in range(LOG_EVENTS)]
    log = proto.encode_protobuf_many(events)
    sse = _native.encode_sse_many(events)
    out = against(benchmark, lambda: proto.decode_protobuf(log),
                  {"decode_sse of the same events": lambda: decode_sse(sse), "upb FromString (floor)": lambda: upb_log(log),
                   "upb FromString + MessageToDict": Peer(lambda: upb_dict_log(log), every=5)},
                  rounds=10, min_round=0, settle=0.01, events=LOG_EVENTS)
    assert len(out) == LOG_EVENTS
