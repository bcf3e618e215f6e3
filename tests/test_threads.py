"""Native objects shared between threads: calls take turns (a thread that finds the object
busy waits, with the GIL released), never ``RuntimeError: Already borrowed``, never a
deadlock between the object's lock and the GIL."""

import faulthandler
import gzip
import threading
import time

import pytest

from agui_fast import _native, proto
from agui_fast.core import TextMessageContentEvent
from agui_fast.jsonl import JsonlDecoder
from agui_fast.proto import ProtoDecoder
from agui_fast.sse import SseDecoder

EVENTS = [TextMessageContentEvent(message_id="m1", delta=f"token {i} " * 4) for i in range(4000)]
SSE = b"".join(b"data: " + e.model_dump_json(by_alias=True).encode() + b"\n\n" for e in EVENTS)
JSONL = b"".join(e.model_dump_json(by_alias=True).encode() + b"\n" for e in EVENTS)
PB = proto.encode_protobuf_many(EVENTS)
ONE = {SseDecoder: SSE[: SSE.index(b"\n\n") + 2], JsonlDecoder: JSONL[: JSONL.index(b"\n") + 1],
       ProtoDecoder: proto.encode_protobuf_many(EVENTS[:1])}


def run_threads(targets, timeout=60):
    """Run the callables on threads at once; the exceptions they raised (a thread still
    running after ``timeout`` seconds is a deadlock). A deadlock that holds the GIL stops
    the whole interpreter: faulthandler's watchdog (no GIL needed) then dumps every
    thread's stack and ends the process, a failure rather than a hung test run."""
    faulthandler.dump_traceback_later(timeout + 30, exit=True)
    try:
        return _run_threads(targets, timeout)
    finally:
        faulthandler.cancel_dump_traceback_later()


def _run_threads(targets, timeout):
    errors = []
    start = threading.Barrier(len(targets))

    def wrap(fn):
        def run():
            start.wait()
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)
        return run

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "deadlock: a thread never finished"
    return errors


def pausing(items):
    """``items``, releasing the GIL before each: read by a native call, it lets another
    thread in mid-call."""
    for item in items:
        time.sleep(0.0002)
        yield item


@pytest.mark.parametrize("make, data", [(SseDecoder, SSE), (JsonlDecoder, JSONL), (ProtoDecoder, PB)],
                         ids=["sse", "jsonl", "protobuf"])
def test_a_decoder_fed_from_two_threads(make, data):
    dec = make()
    got = {"big": 0, "small": 0}
    # One thread feeds whole streams (framed with the GIL released), the other single events,
    # always at frame boundaries: any order of the calls decodes every event.
    big, one_event = data, ONE[make]

    def feed_big():
        for _ in range(10):
            got["big"] += len(dec.feed(big))

    def feed_small():
        for _ in range(3000):
            got["small"] += len(dec.feed(one_event))
            dec.frame_count if make is not ProtoDecoder else dec.frame_index  # noqa: B018 - getters take turns too

    assert run_threads([feed_big, feed_small]) == []
    assert got == {"big": 10 * len(EVENTS), "small": 3000}


def test_log_chunks_read_from_two_threads(tmp_path):
    # Each read releases the GIL; a second thread waiting for the object must not hold the
    # GIL meanwhile (the reader needs it back to return).
    path = tmp_path / "log.sse.gz"
    path.write_bytes(gzip.compress(SSE * 20))
    chunks = _native.LogChunks(str(path), "auto", 4096)
    sizes = []

    def read():
        for chunk in chunks:
            sizes.append(len(chunk))

    assert run_threads([read, read, read]) == []
    assert sum(sizes) == len(SSE) * 20


def test_state_document_from_two_threads():
    doc = _native.StateDocument({"items": []})

    def add(k):
        def run():
            for i in range(20):
                doc.apply(pausing([{"op": "add", "path": "/items/-", "value": [k, i, j]} for j in range(5)]))
                doc.to_python()
        return run

    assert run_threads([add(0), add(1)]) == []
    assert len(doc.to_python()["items"]) == 200


def test_event_applier_from_two_threads():
    from agui_fast.core import StateDeltaEvent, StateSnapshotEvent
    from agui_fast.stream import EventApplier

    ap = EventApplier()
    ap.apply(StateSnapshotEvent(snapshot={"items": []}))

    def add(k):
        def run():
            for i in range(20):
                ap.apply_many(pausing([StateDeltaEvent(delta=[{"op": "add", "path": "/items/-", "value": [k, i, j]}])
                                       for j in range(5)]))
                ap.state  # noqa: B018
        return run

    assert run_threads([add(0), add(1)]) == []
    assert len(ap.state["items"]) == 200
