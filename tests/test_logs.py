"""agui_fast.logs: format detection and typed iteration over the core log reader."""

import gzip

import pytest

from agui_fast.decoder import decode_event, decode_protobuf, decode_sse
from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder
from agui_fast.errors import DecodeError, EventValidationError, TruncatedStreamError
from agui_fast.logs import detect_format, iter_log

from conftest import load_jsonl

EVENTS = [decode_event(c["py_sse"][6:-2]) for c in load_jsonl("codec/events.jsonl") if c["py_sse"]][:300]
SSE = EventEncoder().encode_many(EVENTS)
PB = EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(EVENTS)


@pytest.fixture(params=["sse", "sse.gz", "pb", "pb.gz"])
def log(request, tmp_path):
    data = SSE if request.param.startswith("sse") else PB
    if request.param.endswith(".gz"):
        data = gzip.compress(data)
    path = tmp_path / f"run.{request.param}"
    path.write_bytes(data)
    return path


def test_detect_format(log):
    expected = "sse" if ".sse" in log.name else "protobuf"
    assert detect_format(log) == expected
    assert detect_format(log.read_bytes()) == expected
    assert detect_format(b"") is None
    with pytest.raises(DecodeError, match="not an AG-UI log"):
        detect_format(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(TypeError):
        detect_format(42)


def test_iter_log_is_the_typed_decode(log):
    expected = decode_sse(SSE) if ".sse" in log.name else decode_protobuf(PB)
    assert list(iter_log(log)) == expected
    assert list(iter_log(str(log))) == expected
    assert list(iter_log(log.read_bytes())) == expected


def test_iter_log_small_chunks_of_a_gzip_file(tmp_path):
    # Many chunks (a log bigger than the reader's chunk) through the decompressing reader.
    big = SSE * 40
    path = tmp_path / "big.sse.gz"
    path.write_bytes(gzip.compress(big))
    assert sum(1 for _ in iter_log(path)) == len(EVENTS) * 40


def test_iter_log_errors_name_the_file_and_deliver_events_before(tmp_path):
    bad = tmp_path / "bad.sse"
    bad.write_bytes(SSE + b'data: {"type":"NOPE"}\n\n')
    seen = []
    with pytest.raises(EventValidationError) as info:
        for ev in iter_log(bad):
            seen.append(ev)
    assert seen == decode_sse(SSE)
    assert str(bad) in str(info.value)
    assert info.value.frame_index == len(EVENTS)
    assert info.value.offset == len(SSE)

    cut = tmp_path / "cut.pb.gz"
    cut.write_bytes(gzip.compress(PB[:-3]))
    with pytest.raises(TruncatedStreamError) as info:
        list(iter_log(cut))
    assert info.value.frame_index == len(EVENTS) - 1


def test_iter_log_format_override_and_bad_arguments(tmp_path):
    path = tmp_path / "x.sse"
    path.write_bytes(SSE)
    assert len(list(iter_log(path, "sse"))) == len(EVENTS)
    with pytest.raises(ValueError):
        list(iter_log(path, "xml"))
    with pytest.raises(FileNotFoundError):
        list(iter_log(tmp_path / "missing.sse"))
    assert list(iter_log(b"")) == []
