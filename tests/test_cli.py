"""The command line: convert / inspect / validate / replay / bench / demo, and its
one-line errors for user mistakes."""

import gzip
import json
import subprocess
import sys

import pytest

from agui_fast import stream
from agui_fast.arrow import to_arrow
from agui_fast.cli import main
from agui_fast.core import (
    MessagesSnapshotEvent, StateDeltaEvent, StateSnapshotEvent, TextMessageContentEvent, TextMessageEndEvent,
    TextMessageStartEvent, ToolCallArgsEvent, ToolCallStartEvent, RunStartedEvent, RunFinishedEvent,
)
from agui_fast.decoder import decode_event, decode_protobuf, decode_sse
from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder
from agui_fast.errors import InvalidJsonError

from conftest import load_jsonl

EVENTS = [decode_event(c["py_sse"][6:-2]) for c in load_jsonl("codec/events.jsonl") if c["py_sse"]][:200]
SSE = EventEncoder().encode_many(EVENTS)
PB = EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(EVENTS)


def run(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "agui_fast", *map(str, args)], input=stdin, capture_output=True,
    )


@pytest.fixture
def sse_log(tmp_path):
    path = tmp_path / "run.sse"
    path.write_bytes(SSE)
    return path


def test_demo_runs():
    out = run("demo")
    assert out.returncode == 0, out.stderr
    assert b"decoded back" in out.stdout


@pytest.mark.parametrize("to,suffix", [("protobuf", "pb"), ("sse", "sse"), ("jsonl", "jsonl")])
def test_convert_formats(sse_log, tmp_path, to, suffix):
    out = tmp_path / f"out.{suffix}"
    assert main(["convert", str(sse_log), "-o", str(out)]) == 0
    data = out.read_bytes()
    if to == "protobuf":
        assert decode_protobuf(data) == decode_protobuf(PB)
    elif to == "sse":
        assert decode_sse(data) == decode_sse(SSE)
    else:
        assert [decode_event(line) for line in data.splitlines()] == decode_sse(SSE)


def test_convert_many_gzip_inputs_by_glob_to_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    for i in range(3):
        (tmp_path / f"a{i}.pb.gz").write_bytes(gzip.compress(PB))
    out = tmp_path / "all.parquet"
    assert main(["convert", str(tmp_path / "*.pb.gz"), "-o", str(out)]) == 0
    t = pq.read_table(out)
    assert t.num_rows == 3 * len(EVENTS)
    assert sorted(set(t.column("source").to_pylist())) == sorted(str(p) for p in tmp_path.glob("*.pb.gz"))
    assert [decode_event(j) for j in t.column("json").to_pylist()[: len(EVENTS)]] == decode_protobuf(PB)


def test_convert_stdin_to_stdout():
    out = run("convert", "-", "-o", "-", "--to", "protobuf", stdin=SSE)
    assert out.returncode == 0, out.stderr
    assert decode_protobuf(out.stdout) == decode_protobuf(PB)


def test_validate_and_inspect_read_stdin():
    ok = run("validate", "--schema-only", "-", stdin=SSE)
    assert ok.returncode == 0 and b"ok (200 events)" in ok.stdout
    bad = run("validate", "-", stdin=b'data: {"type":"RUN_STARTED"}\n\n')
    assert bad.returncode == 1 and b"EventValidationError" in bad.stdout
    out = run("inspect", "--json", "-", stdin=gzip.compress(SSE))
    assert out.returncode == 0 and json.loads(out.stdout)["events"] == len(EVENTS)


def test_convert_refuses_its_own_input(sse_log):
    out = run("convert", sse_log, "-o", sse_log)
    assert out.returncode == 2
    assert out.stderr.decode().count("\n") == 1 and b"one of the inputs" in out.stderr
    assert sse_log.read_bytes() == SSE


def test_convert_skip_lists_bad_events(tmp_path):
    bad = tmp_path / "bad.sse"
    bad.write_bytes(SSE + b'data: {"type":"NOPE"}\n\n' + SSE)
    out = tmp_path / "o.jsonl"
    r = run("convert", bad, "-o", out, "--errors", "skip")
    assert r.returncode == 1
    assert b"skipped:" in r.stderr and b"frame 200" in r.stderr
    assert len(out.read_bytes().splitlines()) == 2 * len(EVENTS)


@pytest.mark.parametrize("to", ["jsonl", "sse", "protobuf", "parquet"])
def test_convert_failure_leaves_no_partial_output(tmp_path, to):
    # A truncated log fails the default (--errors raise) conversion: the output keeps what
    # it held before (no empty file, no Parquet file without its footer), no temp file is
    # left beside it, and the message says how to convert the valid events.
    bad = tmp_path / "cut.sse"
    bad.write_bytes(SSE[: len(SSE) - 7])
    out = tmp_path / f"o.{to}"
    out.write_bytes(b"before")
    r = run("convert", bad, "-o", out, "--to", to)
    assert r.returncode == 1
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and "nothing written" in lines[0] and "--errors skip" in lines[0], r.stderr
    assert out.read_bytes() == b"before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.sse", f"o.{to}"]
    out.unlink()
    r = run("convert", bad, "-o", out, "--to", to, "--errors", "skip")
    assert r.returncode == 1 and out.exists()
    assert f"{len(EVENTS) - 1} events".encode() in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["inspect", "validate", "replay", "convert"])
def test_a_truncated_log_reads_the_same_in_every_command(tmp_path, capsys, command):
    # inspect/convert read it in Rust (agui_fast.arrow), validate/replay through the
    # typed decoders (msgspec): one class, one wording, the same frame and offset.
    run_ = [
        RunStartedEvent(thread_id="t", run_id="r"), TextMessageStartEvent(message_id="m", role="assistant"),
        TextMessageContentEvent(message_id="m", delta="hi"), TextMessageEndEvent(message_id="m"),
        RunFinishedEvent(thread_id="t", run_id="r"),
    ]
    sse = EventEncoder().encode_many(run_)
    bad = tmp_path / "cut.sse"
    bad.write_bytes(sse[: len(sse) - 7])
    frame, offset = len(run_) - 1, sse.rindex(b"data: ")
    extra = ["-o", str(tmp_path / "o.jsonl")] if command == "convert" else []
    assert main([command, str(bad), *extra]) == 1
    out = capsys.readouterr()
    (line,) = (out.out + out.err).splitlines()
    assert "InvalidJsonError" in line and "Input data was truncated" in line, line
    assert f"frame {frame}" in line and str(offset) in line, line
    assert "EOF while parsing" not in line


def test_validate_names_the_location_once(tmp_path, capsys):
    bad = tmp_path / "cut.sse"
    bad.write_bytes(SSE[:-7])
    assert main(["validate", str(bad)]) == 1
    line = capsys.readouterr().out.strip()
    assert line.count("frame ") == 1 and line.count(str(SSE.rindex(b"data: "))) == 1, line


@pytest.mark.parametrize("content, said", [(b"", "empty file"), (b"just some text, not a log\n" * 20, "no AG-UI events")])
def test_replay_of_a_log_without_events_is_an_error(tmp_path, capsys, content, said):
    # Not an empty conversation on stdout with exit status 0: nothing was replayed.
    log = tmp_path / "nothing.sse"
    log.write_bytes(content)
    assert main(["replay", str(log)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and said in out.err and "Traceback" not in out.err


def test_a_truncated_log_reads_the_same_through_every_api():
    sse = EventEncoder().encode_many([RunStartedEvent(thread_id="t", run_id="r"), RunFinishedEvent(thread_id="t", run_id="r")])
    for read in (stream.replay_log, to_arrow, decode_sse):
        with pytest.raises(InvalidJsonError, match="Input data was truncated"):
            read(sse[:-7])


def test_convert_to_a_closed_pipe_ends_quietly(sse_log):
    # `agui-fast convert LOG -o - | head -c 10`: the reader goes away, no error message.
    big = sse_log.parent / "big.sse"
    big.write_bytes(SSE * 200)
    p = subprocess.Popen(
        [sys.executable, "-m", "agui_fast", "convert", str(big), "-o", "-", "--to", "jsonl"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert p.stdout.read(10)
    p.stdout.close()
    assert p.wait(timeout=60) != 0
    assert p.stderr.read() == b""


def test_inspect_counts(sse_log, capsys):
    assert main(["inspect", "--json", str(sse_log)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["events"] == len(EVENTS)
    assert report["format"] == "sse" and report["gzip"] is False
    counts = {}
    for e in EVENTS:
        counts[e.type.value] = counts.get(e.type.value, 0) + 1
    assert report["types"] == counts
    assert report["runs"] == len({e.run_id for e in EVENTS if getattr(e, "run_id", None) is not None})
    assert main(["inspect", str(sse_log)]) == 0
    text = capsys.readouterr().out
    assert "time span" in text and "tool calls" in text


def test_validate_exit_status(sse_log, tmp_path, capsys):
    assert main(["validate", "--schema-only", str(sse_log)]) == 0
    assert "ok (200 events)" in capsys.readouterr().out
    # The vectors are a bag of events, not a run: the sequence rules refuse them.
    assert main(["validate", str(sse_log)]) == 1
    assert "R01" in capsys.readouterr().out
    bad = tmp_path / "bad.sse"
    bad.write_bytes(SSE + b'data: {"type":"TEXT_MESSAGE_START"}\n\n')
    assert main(["validate", "--schema-only", str(sse_log), str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}: INVALID" in out and "frame 200" in out and f"byte {len(SSE)}" in out


def test_replay_messages_and_state(tmp_path, capsys):
    log = tmp_path / "state.sse"
    log.write_bytes(EventEncoder().encode_many([
        MessagesSnapshotEvent(messages=[{"id": "u1", "role": "user", "content": "hi"}]),
        StateSnapshotEvent(snapshot={"n": 1, "items": []}),
        TextMessageStartEvent(message_id="m1", role="assistant"),
        TextMessageContentEvent(message_id="m1", delta="Hel"),
        TextMessageContentEvent(message_id="m1", delta="lo"),
        TextMessageEndEvent(message_id="m1"),
        ToolCallStartEvent(tool_call_id="c1", tool_call_name="f", parent_message_id="m1"),
        ToolCallArgsEvent(tool_call_id="c1", delta='{"a":'),
        ToolCallArgsEvent(tool_call_id="c1", delta="1}"),
        StateDeltaEvent(delta=[{"op": "replace", "path": "/n", "value": 2}, {"op": "add", "path": "/items/-", "value": "a"}]),
        StateDeltaEvent(delta=[{"op": "remove", "path": "/missing"}]),  # fails: skipped, atomically
    ]))
    assert main(["replay", str(log)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["state"] == {"n": 2, "items": ["a"]}
    assert out["messages"][0] == {"id": "u1", "role": "user", "content": "hi"}
    assert out["messages"][1]["content"] == "Hello"
    assert out["messages"][1]["toolCalls"][0]["function"] == {"name": "f", "arguments": '{"a":1}'}
    assert "Failed to apply state patch" in captured.err  # the reference client's warning: skipped atomically
    assert main(["replay", "--strict", str(log)]) == 1


def test_bench_prints_a_ratio_table():
    out = run("bench", "--events", "2000", "--repeat", "1")
    assert out.returncode == 0, out.stderr
    assert b"to_arrow" in out.stdout and b"vs to_arrow" in out.stdout


@pytest.mark.parametrize("content,needle", [
    (None, b"no such file"),
    (b"", b"empty file"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), b"not an AG-UI log"),
    (b"hello world\n", b"no AG-UI events"),
    (PB[:-3], b"TruncatedStreamError"),
    (gzip.compress(SSE)[:-20], b"gzip"),
])
@pytest.mark.parametrize("command", ["inspect", "validate", "convert"])
def test_user_mistakes_are_one_line(tmp_path, content, needle, command):
    path = tmp_path / "x.log"
    if content is not None:
        path.write_bytes(content)
    extra = ["-o", str(tmp_path / "o.jsonl")] if command == "convert" else []
    out = run(command, path, *extra)
    text = out.stderr + out.stdout if command == "validate" else out.stderr
    assert out.returncode != 0
    assert needle in text, text
    assert b"Traceback" not in out.stderr
    assert out.stderr.count(b"\n") <= 1


def test_glob_matching_nothing(tmp_path):
    out = run("inspect", tmp_path / "*.sse")
    assert out.returncode == 2 and b"no file matches" in out.stderr


def test_progress_bar_only_on_a_terminal(tmp_path):
    import os

    big = tmp_path / "big.sse"
    big.write_bytes(SSE * (9 * 2**20 // len(SSE) + 1))
    out = tmp_path / "big.jsonl"
    # The child's stdout and stderr are a terminal. Started by subprocess, not pty.fork: a
    # bare fork of this process (threads from earlier tests) could deadlock the child.
    terminal, child_end = os.openpty()
    cmd = [sys.executable, "-m", "agui_fast", "convert", str(big), "-o", str(out)]
    with subprocess.Popen(cmd, stdout=child_end, stderr=child_end) as proc:
        os.close(child_end)
        seen = b""
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    os.close(terminal)
    assert proc.returncode == 0, seen
    assert b"%" in seen and b"MB/s" in seen
    piped = run("convert", big, "-o", out)
    assert piped.returncode == 0 and b"MB/s" not in piped.stderr


def test_validate_checks_the_sequence_rules(tmp_path, capsys):
    run_ok = [RunStartedEvent(thread_id="t", run_id="r"), TextMessageStartEvent(message_id="m", role="assistant"),
              TextMessageContentEvent(message_id="m", delta="hi"), TextMessageEndEvent(message_id="m"),
              RunFinishedEvent(thread_id="t", run_id="r")]
    good = tmp_path / "good.sse"
    good.write_bytes(EventEncoder().encode_many(run_ok))
    assert main(["validate", str(good)]) == 0
    assert "ok (5 events)" in capsys.readouterr().out
    bad = tmp_path / "bad.sse"
    bad.write_bytes(EventEncoder().encode_many(run_ok[:2] + run_ok[4:]))  # finished with a message open
    assert main(["validate", str(bad)]) == 1
    assert "R29" in capsys.readouterr().out
