"""Write the fuzz corpora's seeds from tests/vectors (idempotent; seeds over 16 KiB are
left out, so that libFuzzer's input length stays small and the runs fast):

- patch_apply, patch_model: `[doc, patch]` for every case of the official suite, the
  fast-json-patch record and the state_deltas vectors (patch_apply also gets each seed
  with a leading space, which selects the fast-json-patch dialect);
- pointer: every `path` and `from` in those patches;
- sse_chunks (two control bytes), sse_reference (one): the SSE streams and each event's
  SSE text of the codec vectors;
- proto_stream (one control byte): the protobuf streams and each event's frame;
- proto_roundtrip: each event's JSON text (valid and invalid events) and each frame's
  message without its length prefix;
- log_reader (one control byte): the SSE and protobuf streams, plain and gzipped, and
  the events as JSON Lines;
- replay_patch (a budget byte, then a program): copy bombs on the state and an activity,
  under budgets of 1 KiB to 4 MiB, and many small copying deltas;
- stream_events (a control byte: verify, no compat, no expansion; then a program): every
  event type in turn with the ids and members the bytes pick, under each control;
- every target: the inputs kept in `regressions/<target>/` (a few found by the fuzzers
  that once broke a property; each file's name says what it is).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import pathlib

HERE = pathlib.Path(__file__).parent
VECTORS = HERE.parent / "tests" / "vectors"
PATCHES = VECTORS / "client" / "json-patch"
CODEC = VECTORS / "codec"
MAX_SEED = 16 * 1024


def cases():
    for name in ("tests.json", "spec_tests.json"):
        for case in json.loads((PATCHES / name).read_text()):
            if "patch" in case:
                yield case["doc"], case["patch"]
    for name in ("fast-json-patch.jsonl", "state_deltas.jsonl"):
        for line in (PATCHES / name).read_text().splitlines():
            if line.strip():
                case = json.loads(line)
                yield case["doc"], case["patch"]


def lines(name: str):
    with open(CODEC / name, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def write(target: str, data: bytes) -> None:
    if len(data) > MAX_SEED:
        return
    d = HERE / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def patch_seeds() -> None:
    for doc, patch in cases():
        seed = json.dumps([doc, patch], ensure_ascii=False).encode()
        write("patch_model", seed)
        write("patch_apply", seed)
        write("patch_apply", b" " + seed)
        for op in patch if isinstance(patch, list) else []:
            for key in ("path", "from"):
                if isinstance(op, dict) and isinstance(op.get(key), str):
                    write("pointer", op[key].encode())


def sse_seed(stream: bytes) -> None:
    write("sse_chunks", b"\x00\x00" + stream)  # byte by byte, default limit
    write("sse_chunks", b"\x05\x90" + stream)  # chunks up to 32 bytes, a 16-byte limit
    write("sse_reference", b"\x03" + stream)
    write("log_reader", b"\x00" + stream)


def proto_seed(stream: bytes) -> None:
    write("proto_stream", b"\x02" + stream)
    write("proto_stream", b"\xa0" + stream)  # a 36-byte frame limit
    write("log_reader", b"\x07" + stream)


def codec_seeds() -> None:
    for case in lines("sse_streams.jsonl"):
        sse_seed(base64.b64decode(case["stream_b64"]))
    for case in lines("proto_streams.jsonl"):
        stream = base64.b64decode(case["stream_b64"])
        proto_seed(stream)
        write("log_reader", b"\x3f" + gzip.compress(stream, mtime=0))
    jsonl = [json.dumps(case["event"]).encode() for case in lines("events.jsonl") if "event" in case][:50]
    write("log_reader", b"\x05" + b"\n".join(jsonl) + b"\n")
    write("log_reader", b"\x01\xef\xbb\xbf" + b"\r\n \n".join(jsonl[:5]))
    for name in ("events.jsonl", "invalid_events.jsonl"):
        for case in lines(name):
            text = case.get("event_json") or json.dumps(case["event"], ensure_ascii=False)
            if text.startswith("{"):
                write("proto_roundtrip", text.encode("utf-8", "surrogatepass"))
            if isinstance(case.get("sse"), str):
                sse_seed(case["sse"].encode("utf-8", "surrogatepass"))
            if isinstance(case.get("proto_frame_hex"), str):
                frame = bytes.fromhex(case["proto_frame_hex"])
                proto_seed(frame)
                write("proto_roundtrip", frame[4:])


def regression_seeds() -> None:
    for path in sorted((HERE / "regressions").glob("*/*")):
        write(path.parent.name, path.read_bytes())


def replay_patch_seeds() -> None:
    """Programs of replay_patch (see the target): a snapshot, then a delta of eight copies
    of the root into itself (the copy bomb), under budgets of 1 KiB to 4 MiB;
    the same on an activity; many one-copy deltas (the stream's allowance)."""
    snapshot = bytes([0, 0])  # STATE_SNAPSHOT, its value byte
    # 8 ops copying the root into /b0, /b1, /x, /a, /l, /b0, /b1, /x: it doubles each time
    copies = b"".join(bytes([0, p, 0]) for p in (11, 12, 9, 1, 4, 11, 12, 9))
    bomb = bytes([1, 7]) + copies  # STATE_DELTA of those 8 ops
    activity = bytes([5, 6, 7]) + copies  # ACTIVITY_SNAPSHOT, ACTIVITY_DELTA
    for budget in (0, 10, 12):
        write("replay_patch", bytes([budget]) + snapshot + bomb * 3 + activity * 2)
    write("replay_patch", bytes([6]) + snapshot + bytes([2, 0, 0, 11, 0]) * 40)


def stream_events_seeds() -> None:
    """Programs of stream_events (see the target): each byte sequence walks the event
    types in turn (a type byte, a flags byte, then the bytes its members read)."""
    walk = bytes((i * 37 + 11) % 256 for i in range(1500))
    ordered = b"".join(bytes([t, 0x41, 5, 6, 7, 8]) for t in range(40)) * 2
    for control in (0, 1, 3, 5, 2, 4):
        write("stream_events", bytes([control]) + walk)
        write("stream_events", bytes([control]) + ordered)


def main() -> None:
    patch_seeds()
    codec_seeds()
    regression_seeds()
    replay_patch_seeds()
    stream_events_seeds()


if __name__ == "__main__":
    main()
