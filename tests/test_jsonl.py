"""JSON Lines logs (one JSON event per line, what ``convert --to jsonl`` writes): read by
the SSE parser's line mode everywhere a log is read — the typed decoders, ``iter_log``,
``replay_log``, ``to_arrow`` and the CLI — with the same events as the SSE log."""

import gzip
import json

import pytest

from agui_fast import stream
from agui_fast._bench import run_events
from agui_fast.cli import main
from agui_fast.decoder import JsonlDecoder, decode_event, decode_jsonl, decode_sse, iter_jsonl
from agui_fast.encoder import EventEncoder
from agui_fast.errors import BufferLimitError, DecodeError, EventValidationError, InvalidJsonError
from agui_fast.logs import detect_format, iter_log

from conftest import load_jsonl

EVENTS = [decode_event(c["py_sse"][6:-2]) for c in load_jsonl("codec/events.jsonl") if c["py_sse"]][:300]
SSE = EventEncoder().encode_many(EVENTS)
PAYLOADS = decode_sse(SSE, raw="bytes")
JSONL = b"\n".join(PAYLOADS) + b"\n"
# A whole run (text streaming, tool calls, state) for the replays.
RUN_SSE = EventEncoder().encode_many(run_events(400))
RUN_JSONL = b"\n".join(decode_sse(RUN_SSE, raw="bytes")) + b"\n"


def offsets(log: bytes) -> list:
    """The byte offset of each non-blank line."""
    out, pos = [], 0
    for line in log.splitlines(keepends=True):
        if line.strip(b" \t\r\n"):
            out.append(pos)
        pos += len(line)
    return out


def test_whole_log_in_every_raw_mode():
    assert decode_jsonl(JSONL) == EVENTS
    assert decode_jsonl(JSONL, raw="bytes") == PAYLOADS
    assert decode_jsonl(JSONL, raw="dict") == [json.loads(p) for p in PAYLOADS]
    assert decode_jsonl(b"") == [] and decode_jsonl(b"\n \n\t\n") == []


@pytest.mark.parametrize("size", [1, 2, 7, 64, 4096])
def test_any_chunking_and_line_ends(size):
    # CRLF and LF mixed, blank and whitespace-only lines, a BOM, no final line end.
    log = b"\xef\xbb\xbf" + b"".join(p + (b"\r\n" if i % 2 else b"\n\n  \n") for i, p in enumerate(PAYLOADS)).rstrip()
    dec = JsonlDecoder()
    got = []
    for i in range(0, len(log), size):
        got += dec.feed(log[i:i + size])
    got += dec.close()
    assert got == EVENTS
    assert list(iter_jsonl(log, chunk_size=size)) == EVENTS
    assert list(iter_jsonl(iter([log[:5], log[5:]]))) == EVENTS


def test_errors_name_the_event_and_its_line_and_keep_the_events_before():
    bad = b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n{"type":"NOPE"}\n{"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n'
    with pytest.raises(EventValidationError) as info:
        decode_jsonl(bad)
    assert info.value.frame_index == 1 and info.value.offset == offsets(bad)[1]
    assert "JSONL event 1" in str(info.value)
    assert [type(e).__name__ for e in info.value.events] == ["RunStartedEvent", "RunFinishedEvent"]
    with pytest.raises(InvalidJsonError) as info:
        decode_jsonl(JSONL[:-9])
    assert info.value.frame_index == len(EVENTS) - 1 and info.value.offset == offsets(JSONL)[-1]
    with pytest.raises(BufferLimitError, match="JSON Lines line exceeded"):
        decode_jsonl(b'{"type":"CUSTOM","name":"' + b"x" * 200 + b'","value":1}\n', max_frame_size=100)


def test_logs_detect_and_iterate_jsonl(tmp_path):
    for name, data in [("run.jsonl", JSONL), ("run.jsonl.gz", gzip.compress(JSONL))]:
        path = tmp_path / name
        path.write_bytes(data)
        assert detect_format(path) == "jsonl" and detect_format(data) == "jsonl"
        assert list(iter_log(path)) == EVENTS
        assert list(iter_log(data, format="jsonl")) == EVENTS
    with pytest.raises(DecodeError, match="a Parquet file"):
        detect_format(b"PAR1\x15\x04\x15")


def test_replay_log_and_to_arrow_read_jsonl_as_they_read_sse(tmp_path):
    pa = pytest.importorskip("pyarrow")
    from agui_fast.arrow import to_arrow

    expected = stream.replay_log(RUN_SSE, raw=True)
    assert expected.messages and expected.state
    assert stream.replay_log(RUN_JSONL, raw=True) == expected
    assert stream.replay_log(RUN_JSONL, format="jsonl", raw=True) == expected
    (tmp_path / "a.jsonl").write_bytes(JSONL * 20)
    (tmp_path / "a.sse").write_bytes(SSE * 20)
    t_jsonl = pa.table(to_arrow(tmp_path / "a.jsonl", threads=2))
    t_sse = pa.table(to_arrow(tmp_path / "a.sse", threads=2))
    assert t_jsonl.num_rows == len(EVENTS) * 20
    for col in ("index", "type", "message_id", "delta", "json"):
        assert t_jsonl.column(col).to_pylist() == t_sse.column(col).to_pylist(), col
    assert t_jsonl.column("offset").to_pylist() == offsets(JSONL * 20)


def test_cli_reads_what_it_writes(tmp_path, capsys):
    sse = tmp_path / "run.sse"
    sse.write_bytes(RUN_SSE)
    jl, back = tmp_path / "run.jsonl", tmp_path / "back.sse"
    assert main(["convert", str(sse), "-o", str(jl)]) == 0
    assert main(["convert", str(jl), "-o", str(back)]) == 0
    assert back.read_bytes() == RUN_SSE
    capsys.readouterr()
    for command in (["inspect", "--json"], ["replay"]):
        assert main([*command, str(sse)]) == 0
        from_sse = capsys.readouterr().out
        assert main([*command, str(jl)]) == 0
        from_jsonl = capsys.readouterr().out
        if command[0] == "inspect":
            a, b = json.loads(from_sse), json.loads(from_jsonl)
            assert b["format"] == "jsonl" and a["types"] == b["types"] and a["events"] == b["events"]
        else:
            assert from_jsonl == from_sse
    assert main(["validate", str(jl)]) == 0
    assert f"ok ({len(run_events(400))} events)" in capsys.readouterr().out


def test_cli_says_what_a_parquet_file_is(tmp_path, capsys):
    sse, pq = tmp_path / "run.sse", tmp_path / "run.parquet"
    sse.write_bytes(SSE)
    assert main(["convert", str(sse), "-o", str(pq)]) == 0
    capsys.readouterr()
    for command in ("inspect", "validate", "replay"):
        assert main([command, str(pq)]) != 0
        out = capsys.readouterr()
        (line,) = (out.out + out.err).splitlines()
        assert "a Parquet file" in line and "Traceback" not in line, line


def test_validate_names_the_location_and_the_log_once(tmp_path):
    # JSON Lines errors say "JSONL event N at byte M"; a log read from stdin is "-", not
    # "/dev/stdin" inside the message as well.
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "agui_fast", "validate", "-"], input=RUN_JSONL[:-9], capture_output=True)
    (line,) = out.stdout.decode().splitlines()
    assert out.returncode == 1, out
    assert line.startswith("-: INVALID") and "/dev/stdin" not in line, line
    assert line.count(str(offsets(RUN_JSONL)[-1])) == 1 and "JSONL event" in line, line
