"""The command line: convert / inspect / validate / replay / bench / demo, and its
one-line errors for user mistakes."""

import gzip
import json
import subprocess
import sys
import time

import pytest

from agui_fast import stream
from agui_fast.arrow import to_arrow
from agui_fast.cli import main
from agui_fast.core import (
    CustomEvent, MessagesSnapshotEvent, StateDeltaEvent, StateSnapshotEvent, TextMessageContentEvent, TextMessageEndEvent,
    TextMessageStartEvent, ToolCallArgsEvent, ToolCallStartEvent, RunStartedEvent, RunFinishedEvent,
)
from agui_fast.decoder import decode_event, decode_protobuf, decode_sse
from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder
from agui_fast.errors import InvalidJsonError

from conftest import load_jsonl

EVENTS = [decode_event(c["py_sse"][6:-2]) for c in load_jsonl("codec/events.jsonl") if c["py_sse"]][:200]
SSE = EventEncoder().encode_many(EVENTS)
PB = EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(EVENTS)
# A run (the sequence rules pass), for the commands that replay.
RUN = [
    RunStartedEvent(thread_id="t", run_id="r"), TextMessageStartEvent(message_id="m", role="assistant"),
    *[TextMessageContentEvent(message_id="m", delta=f"w{i} ") for i in range(50)],
    TextMessageEndEvent(message_id="m"), RunFinishedEvent(thread_id="t", run_id="r"),
]
RUN_SSE = EventEncoder().encode_many(RUN)
RUN_PB = EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(RUN)


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


def test_inspect_token_totals_past_i64_are_exact(tmp_path, capsys):
    # each event's count fits its int64 column; their total does not, and is not cut
    frame = b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":9223372036854775807}]}\n\n'
    path = tmp_path / "big.sse"
    path.write_bytes(frame * 3)
    assert main(["inspect", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["usage"] == {"input_tokens": 3 * (2**63 - 1)}


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


def test_replay_writes_json_for_lone_surrogates_and_numbers_beyond_a_double(tmp_path):
    """An emoji split across deltas leaves lone surrogates, and 1e400 reads as an infinity:
    the output is still JSON (on a UTF-8 stdout), with the surrogates escaped and the
    infinities null, as JSON.stringify writes them."""
    log = tmp_path / "odd.sse"
    log.write_bytes(
        b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\\ud83d"}\n\n'
        b'data: {"type":"STATE_SNAPSHOT","snapshot":{"k\\udc00":"\\ud800x","n":1e400,"m":[-1e400,1.5]}}\n\n'
        b'data: {"type":"STATE_DELTA","delta":[{"op":"add","path":"/d","value":1e400}]}\n\n'
    )
    out = run("replay", log)
    assert out.returncode == 0, out.stderr
    assert b"\\ud83d" in out.stdout and b"Infinity" not in out.stdout
    got = json.loads(out.stdout)
    assert got["messages"][0]["content"] == "a\ud83d"
    assert got["state"] == {"k\udc00": "\ud800x", "n": None, "m": [None, 1.5], "d": None}


def test_bench_prints_a_ratio_table():
    out = run("bench", "--events", "2000", "--repeat", "1")
    assert out.returncode == 0, out.stderr
    assert b"to_arrow" in out.stdout and b"vs to_arrow" in out.stdout


@pytest.mark.parametrize("content,needle", [
    (None, b"no such file"),
    (b"", b"empty file"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), b"not an AG-UI log"),
    (b"hello world\n", b"no AG-UI events"),
    (RUN_PB[:-3], b"TruncatedStreamError"),
    (gzip.compress(RUN_SSE)[:-20], b"gzip"),
])
@pytest.mark.parametrize("command", ["inspect", "validate", "convert", "replay"])
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
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if content is None else ["x.log"])


def test_glob_matching_nothing(tmp_path):
    out = run("inspect", tmp_path / "*.sse")
    assert out.returncode == 2 and b"no file matches" in out.stderr


def _on_a_terminal(cmd, stdin=None):
    """Run ``cmd`` with its stdout and stderr a terminal: (exit status, what it wrote).
    Started by subprocess, not pty.fork: a bare fork of this process (threads from earlier
    tests) could deadlock the child."""
    import os

    terminal, child_end = os.openpty()
    stdin = child_end if stdin is None else stdin
    with subprocess.Popen(cmd, stdin=stdin, stdout=child_end, stderr=child_end) as proc:
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
    return proc.returncode, seen


def _long_run(deltas):
    """A run of ``deltas`` text deltas, as SSE."""
    return EventEncoder().encode_many([
        RunStartedEvent(thread_id="t", run_id="r"), TextMessageStartEvent(message_id="m", role="assistant"),
        *[TextMessageContentEvent(message_id="m", delta=f"word {i} ") for i in range(deltas)],
        TextMessageEndEvent(message_id="m"), RunFinishedEvent(thread_id="t", run_id="r"),
    ])


def _slow_feed(data, seconds=1.5, steps=15):
    """A pipe that sends ``data`` over ``seconds`` (a command that takes that long): its
    read end, for a child's stdin."""
    import os
    import threading

    r, w = os.pipe()

    def feed():
        step = len(data) // steps + 1
        try:
            for i in range(0, len(data), step):
                os.write(w, data[i:i + step])
                time.sleep(seconds / steps)
        except BrokenPipeError:  # the command stopped reading (an error)
            pass
        finally:
            os.close(w)

    threading.Thread(target=feed, daemon=True).start()
    return r


@pytest.mark.parametrize("command", [
    ["convert", "-", "-o", "{out}.jsonl", "--to", "jsonl"],
    ["inspect", "-"],
    ["validate", "--schema-only", "-"],
    ["validate", "-"],
    ["replay", "-"],
    ["report", "-", "-o", "{out}.html"],
])
def test_every_long_command_draws_progress_on_a_terminal_only(tmp_path, command):
    import os

    argv = [a.format(out=tmp_path / "o") for a in command]
    cmd = [sys.executable, "-m", "agui_fast", *argv]
    data = _long_run(60_000)
    r = _slow_feed(data)
    status, seen = _on_a_terminal(cmd, stdin=r)
    os.close(r)
    assert status == 0, seen
    assert b"MB read" in seen and b"events" in seen and b"MB/s" in seen, seen
    assert b"\r\x1b[K" in seen  # the line is cleared at the end
    # --quiet: none.
    r = _slow_feed(data, seconds=0.6)
    status, seen = _on_a_terminal(cmd + ["--quiet"], stdin=r)
    os.close(r)
    assert b"MB/s" not in seen, seen
    # Piped: none.
    piped = subprocess.run(cmd, input=data, capture_output=True)
    assert b"MB/s" not in piped.stderr and b"\x1b" not in piped.stderr


def test_the_progress_line_shows_bytes_of_the_total(monkeypatch):
    import io

    from agui_fast import cli

    class Tty(io.StringIO):
        def isatty(self):
            return True

    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    p = cli.Progress(200_000_000)
    p.t0 -= 2.0
    p.draw(50_000_000, 123_456)
    line = err.getvalue()
    assert " 25%" in line and "50.0 MB of 200.0 MB" in line and "123,456 events" in line and "MB/s" in line, line
    p.clear()
    assert err.getvalue().endswith("\r\x1b[K")
    quiet = cli.Progress(100, quiet=True)
    quiet.t0 -= 2.0
    quiet.draw(50, 1)
    assert err.getvalue().count("MB/s") == 1


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


def test_validate_checks_each_event_as_read_and_keeps_none(tmp_path, capsys):
    from agui_fast import _native
    from agui_fast.errors import VerificationError

    # The sequence rules run as the events are decoded, through the stream engine without
    # its reducer: nothing is kept, whatever the log's length.
    rules = _native.Replayer(verify=True, reduce=False)
    rules.push_many(decode_sse(_long_run(1000)))
    assert rules.message_count() == 0 and rules.state() == {}
    with pytest.raises(VerificationError):
        rules.push(TextMessageContentEvent(message_id="nope", delta="x"))
    # A rule broken early, a frame the schema refuses later: the schema check goes on to
    # the end, and the bad frame is what is said (as for a log read whole).
    run_ok = decode_sse(_long_run(3))
    log = tmp_path / "both.sse"
    log.write_bytes(EventEncoder().encode_many(run_ok[1:]) + b'data: {"type":"NOPE"}\n\n')
    assert main(["validate", str(log)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert f"INVALID after {len(run_ok) - 1} valid events" in line and "NOPE" in line, line
    # --schema-only: the same log without the bad frame is valid.
    log.write_bytes(EventEncoder().encode_many(run_ok[1:]))
    assert main(["validate", "--schema-only", str(log)]) == 0
    assert main(["validate", str(log)]) == 1
    assert "frame 0:" in capsys.readouterr().out


# -- convert's output: never through a file the user could not write, never another format,
# the user's own path in every error, nothing half-written left --------------------------------


def _one_line(r, status):
    assert r.returncode == status, (r.returncode, r.stderr)
    (line,) = r.stderr.decode().splitlines()
    assert "Traceback" not in line and ".partial" not in line, line
    return line


@pytest.mark.parametrize("command, name", [("convert", "ro.sse"), ("report", "ro.html")])
def test_a_read_only_output_is_refused(sse_log, tmp_path, command, name):
    import os
    import stat

    out = tmp_path / name
    out.write_bytes(b"before")
    out.chmod(0o444)
    line = _one_line(run(command, sse_log, "-o", out), 1)
    assert str(out) in line and "not writable" in line and "r--r--r--" in line, line
    assert out.read_bytes() == b"before" and stat.S_IMODE(os.stat(out).st_mode) == 0o444
    assert sorted(p.name for p in tmp_path.iterdir()) == [name, "run.sse"]
    # Into a missing directory: the path given, nothing written.
    line = _one_line(run(command, sse_log, "-o", tmp_path / "nodir" / name), 1)
    assert f"{tmp_path / 'nodir' / name}: no such directory" in line, line


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0, reason="needs root (chown)")
def test_convert_refuses_another_users_file_even_as_root(sse_log, tmp_path):
    import os

    out = tmp_path / "theirs.sse"
    out.write_bytes(b"before")
    os.chown(out, 65534, 65534)
    line = _one_line(run("convert", sse_log, "-o", out), 1)
    assert "owned by another user" in line, line
    assert out.read_bytes() == b"before" and os.stat(out).st_uid == 65534


def test_convert_keeps_a_replaced_files_mode_and_links(sse_log, tmp_path):
    import os
    import stat

    out = tmp_path / "private.sse"
    out.write_bytes(b"before")
    out.chmod(0o600)
    assert run("convert", sse_log, "-o", out).returncode == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600 and decode_sse(out.read_bytes()) == decode_sse(SSE)
    # Through a symbolic link: the file it names is replaced, the link stays.
    link = tmp_path / "link.jsonl"
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"")
    link.symlink_to(target)
    assert run("convert", sse_log, "-o", link).returncode == 0
    assert link.is_symlink() and len(target.read_bytes().splitlines()) == len(EVENTS)


@pytest.mark.parametrize("output, status, said", [
    ("nodir/out.sse", 1, "no such directory"),
    ("adir", 1, "is a directory"),
    ("out.parquet.gz", 2, "Parquet"),
    ("out.pb", 2, "names protobuf output, not sse"),
    ("out.txt", 2, "cannot tell the output format"),
])
def test_convert_output_mistakes_name_the_users_path(sse_log, tmp_path, output, status, said):
    (tmp_path / "adir").mkdir()
    extra = ["--to", "sse"] if output == "out.pb" else []
    line = _one_line(run("convert", sse_log, "-o", tmp_path / output, *extra), status)
    assert str(tmp_path / output) in line and said in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "run.sse"]


def test_convert_to_protobuf_of_an_event_it_cannot_take(tmp_path):
    # A JSON Patch op protobuf has no value for: an EncodeError naming the file and frame.
    log = tmp_path / "ops.sse"
    log.write_bytes(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_DELTA", "delta": [{"op": "increment", "path": "/n", "value": 1}]},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]))
    out = tmp_path / "ops.pb"
    line = _one_line(run("convert", log, "-o", out), 1)
    assert "EncodeError" in line and str(log) in line and "frame 1" in line and "increment" in line, line
    assert not out.exists()
    r = run("convert", log, "-o", out, "--errors", "skip")
    assert r.returncode == 1 and "skipped:" in r.stderr.decode() and "Traceback" not in r.stderr.decode(), r.stderr
    assert [type(e).__name__ for e in decode_protobuf(out.read_bytes())] == ["RunStartedEvent", "RunFinishedEvent"]


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command, extra", [("convert", ["--to", "jsonl"]), ("report", [])])
def test_a_failed_write_names_the_users_path(sse_log, command, extra):
    # A full device: the system's message names no file; the error names the output.
    line = _one_line(run(command, sse_log, "-o", "/dev/full", *extra), 1)
    assert "/dev/full: " in line and "No space left on device" in line, line


@pytest.mark.parametrize("name, to", [("out.sse.gz", None), ("out.sse.gz", "sse"), ("out.jsonl.gz", None), ("out.gz", "protobuf")])
def test_a_gz_output_is_gzip(sse_log, tmp_path, name, to):
    out = tmp_path / name
    r = run("convert", sse_log, "-o", out, *(["--to", to] if to else []))
    assert r.returncode == 0, r.stderr
    data = gzip.decompress(out.read_bytes())
    fmt = to or name.split(".")[1]
    events = {"sse": decode_sse, "protobuf": decode_protobuf}.get(fmt, lambda d: [decode_event(x) for x in d.splitlines()])(data)
    assert events == (decode_protobuf(PB) if fmt == "protobuf" else decode_sse(SSE))
    # ... and reads back as a log.
    assert len(to_arrow(str(out))) == len(EVENTS)


def test_convert_writes_a_device_as_it_is(sse_log):
    import os
    import stat

    r = run("convert", sse_log, "-o", "/dev/null", "--to", "jsonl")
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("command", ["convert", "inspect", "validate", "replay", "report"])
def test_a_pipe_is_read_as_a_stream_not_an_empty_file(tmp_path, command):
    # `agui-fast convert <(cat log)`: the path of a pipe, whose size is 0.
    import os

    log = _long_run(100)
    r, w = os.pipe()
    os.write(w, log)
    os.close(w)
    extra = {"convert": ["-o", str(tmp_path / "o.jsonl")], "report": ["-o", str(tmp_path / "o.html")]}.get(command, [])
    out = subprocess.run([sys.executable, "-m", "agui_fast", command, f"/dev/fd/{r}", *extra],
                         capture_output=True, pass_fds=(r,))
    os.close(r)
    assert out.returncode == 0, out.stderr
    assert b"empty" not in out.stderr + out.stdout


@pytest.mark.parametrize("signame, status", [("SIGTERM", 143), ("SIGINT", 130), ("SIGHUP", 129)])
@pytest.mark.parametrize("to", ["sse", "parquet"])
def test_an_interrupted_convert_leaves_nothing_behind(tmp_path, signame, status, to):
    import os
    import signal

    out = tmp_path / f"out.{to}"
    r = _slow_feed(_long_run(200_000), seconds=30, steps=300)
    proc = subprocess.Popen([sys.executable, "-m", "agui_fast", "convert", "-", "-o", str(out)],
                            stdin=r, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(r)
    deadline = time.monotonic() + 30
    while not any(p.name.endswith(".partial") for p in tmp_path.iterdir()):  # writing
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(getattr(signal, signame))
    assert proc.wait(timeout=30) == status
    assert list(tmp_path.iterdir()) == []
    assert b"Traceback" not in proc.stderr.read()


def test_skipped_events_are_listed_then_counted(tmp_path):
    bad = tmp_path / "bad.sse"
    bad.write_bytes(SSE + b'data: {"type":"NOPE"}\n\n' * 100)
    r = run("convert", bad, "-o", tmp_path / "o.jsonl", "--errors", "skip")
    lines = r.stderr.decode().splitlines()
    assert r.returncode == 1
    assert sum(line.startswith("skipped: ") for line in lines) == 21 and "skipped: 80 more" in lines
    assert "100 skipped" in lines[-1]
    r = run("convert", bad, "-o", tmp_path / "o.jsonl", "--errors", "skip", "--max-errors", "99")
    assert "LimitError" in _one_line(r, 1)
    assert run("convert", bad, "-o", tmp_path / "o.jsonl", "--max-errors", "-1").returncode == 2


# -- as a newcomer tries it ---------------------------------------------------------------------


def test_help_has_examples_in_plain_text():
    out = run("--help")
    assert out.returncode == 0 and b"examples:" in out.stdout and b"agui-fast inspect run.sse" in out.stdout
    assert b"``" not in out.stdout


@pytest.mark.parametrize("command", [["inspect"], ["validate", "--schema-only"], ["replay"], ["convert", "-o", "-", "--to", "jsonl"]])
def test_no_log_given_reads_piped_stdin(command):
    out = run(*command, stdin=RUN_SSE)
    assert out.returncode == 0, out.stderr
    assert out.stdout


def test_no_log_given_on_a_terminal_is_a_usage_error():
    status, seen = _on_a_terminal([sys.executable, "-m", "agui_fast", "inspect"])
    assert status == 2 and b"required: LOG" in seen, seen


def test_a_file_that_is_no_log_is_said_once_without_a_useless_hint(tmp_path):
    pq = tmp_path / "run.parquet"
    pq.write_bytes(b"PAR1" + bytes(100))
    r = run("convert", pq, "-o", tmp_path / "x.sse")
    line = _one_line(r, 1)
    assert "a Parquet file, not an AG-UI log" in line and "byte offset" not in line, line
    assert line.endswith(f"nothing written to {tmp_path / 'x.sse'}"), line


@pytest.mark.parametrize("command", [["convert", "-o", "{out}"], ["inspect"], ["validate"], ["replay"]])
def test_the_frame_limit_is_an_option(tmp_path, command):
    log = tmp_path / "long.sse"
    first = RUN_SSE.index(b"\n\n") + 2  # after RUN_STARTED
    log.write_bytes(RUN_SSE[:first] + EventEncoder().encode_many([CustomEvent(name="n", value="x" * 500)]) + RUN_SSE[first:])
    argv = [a.format(out=tmp_path / "o.jsonl") for a in command]
    assert run(*argv, log).returncode == 0  # within the default 10 MiB
    r = run(*argv, log, "--max-frame-size", "300", "-q")
    assert r.returncode == 1, r
    (line,) = (r.stdout + r.stderr).decode().splitlines()
    assert "BufferLimitError" in line and "300 bytes" in line and "Traceback" not in line, line
    assert run(*argv, log, "--max-frame-size", "1K").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["long.sse"] + (["o.jsonl"] if command[0] == "convert" else [])
    r = run(*argv, log, "--max-frame-size", "ten")
    assert r.returncode == 2 and b"not a size" in r.stderr


def test_the_report_takes_the_frame_limit(tmp_path):
    log = tmp_path / "long.sse"
    first = RUN_SSE.index(b"\n\n") + 2  # after RUN_STARTED
    log.write_bytes(RUN_SSE[:first] + EventEncoder().encode_many([CustomEvent(name="n", value="x" * 500)]) + RUN_SSE[first:])
    page = tmp_path / "p.html"
    whole = run("report", log, "-o", page, "-q")
    assert whole.returncode == 0 and b"1 error" not in whole.stderr, whole
    cut = run("report", log, "-o", page, "-q", "--max-frame-size", "300")
    # The page shows the run up to the frame over the limit, and the error there.
    assert cut.returncode == 1 and b": 1 event, 1 run, 1 error" in cut.stderr, cut
    assert "maximum limit of 300 bytes" in page.read_text()
    assert run("report", log, "-o", page, "--max-frame-size", "ten").returncode == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("command", ["validate", "validate --schema-only"])
def test_validate_memory_does_not_grow_with_the_log(tmp_path, command):
    # Four times the events in the same peak memory: each is checked as it is read, then
    # dropped (kept for the sequence rules, the larger log took ~15 MB more).
    def peak(n):
        log = tmp_path / f"run{n}.sse"
        log.write_bytes(_long_run(n))
        code = ("import sys, contextlib, io\nfrom agui_fast.cli import main\n"
                f"with contextlib.redirect_stdout(io.StringIO()): status = main({[*command.split(), str(log)]!r})\n"
                "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
                "print(status, hwm)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
        status, kb = out.stdout.split()
        assert status == b"0", out
        return int(kb)

    small, large = peak(20_000), peak(80_000)
    assert large - small < 3_000, (small, large)  # KB
