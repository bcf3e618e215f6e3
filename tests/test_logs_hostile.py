"""Hostile logs through the log readers (``to_arrow``, ``convert``, ``inspect``, ``iter_log``):
memory bounded by the limits (the collected errors by ``max_errors``, a part held in memory
by the frame limit), no abort, the frame limit on every reader, logs that cannot be cut
read as streams, and every line end (LF, CRLF, CR) cut into parts alike.

The memory cases run in a child process under an address-space limit (3 GB): an
allocation past it fails there (a Rust abort), not in the test process, and the child
reports its own peak resident memory."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap

import pytest

from agui_fast.arrow import to_arrow
from agui_fast.errors import AguiError, BufferLimitError, EventValidationError, LimitError

pa = pytest.importorskip("pyarrow")

GOOD = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hello"}\n\n'
BAD = b'data: {"type":"NOPE"}\n\n'


def child(code: str, timeout: float = 120) -> dict:
    """Run ``code`` in a child process limited to 3 GB of address space; it sets
    ``result`` (a dict): returned with the child's peak resident memory in MB."""
    script = textwrap.dedent(
        """
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        result = {}
        """
    ) + textwrap.dedent(code) + textwrap.dedent(
        """
        # The peak of this process's own memory (VmHWM): ru_maxrss also counts the parent's
        # at the fork (a test run's, hundreds of MB), which exec keeps.
        try:
            with open("/proc/self/status") as f:
                hwm = next(line for line in f if line.startswith("VmHWM:"))
            result["rss_mb"] = int(hwm.split()[1]) / 1024
        except OSError:
            result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=timeout)
    assert out.returncode == 0, (out.returncode, out.stderr.decode()[-2000:])
    return json.loads(out.stdout.splitlines()[-1])


def flood_gz(path, megabytes: int) -> None:
    """``megabytes`` MB of ``data: x`` events (each a bad event: not JSON), gzipped."""
    block = b"data: x\n\n" * (1 << 17)
    with gzip.open(path, "wb", compresslevel=1) as f:
        for _ in range(megabytes * 10**6 // len(block)):
            f.write(block)


# -- the errors collected: one budget per call ---------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("as_path", [False, True])
def test_collected_errors_stop_at_max_errors(tmp_path, threads, as_path):
    log = (GOOD + BAD) * 1000
    source = log
    if as_path:
        source = tmp_path / "bad.sse"
        source.write_bytes(log)
    events, errors = to_arrow(source, errors="collect", threads=threads, max_errors=1000)
    assert (len(events), len(errors)) == (1000, 1000)
    with pytest.raises(LimitError, match="more than 999 bad events") as info:
        to_arrow(source, errors="collect", threads=threads, max_errors=999)
    assert isinstance(info.value, MemoryError) and isinstance(info.value, AguiError)
    with pytest.raises(LimitError):
        to_arrow(source, errors="collect", threads=threads, max_errors=0)
    # Without collect there is no budget: the first bad event raises.
    with pytest.raises(EventValidationError):
        to_arrow(source, threads=threads, max_errors=0)


def test_one_budget_for_all_sources():
    log = (GOOD + BAD) * 300
    _, errors = to_arrow([log, log, log], errors="collect", max_errors=900)
    assert len(errors) == 900
    with pytest.raises(LimitError):
        to_arrow([log, log, log], errors="collect", max_errors=899)


@pytest.mark.parametrize("value, error", [(-1, ValueError), ("5", TypeError), (1.5, TypeError), (True, TypeError)])
def test_max_errors_is_checked(value, error):
    with pytest.raises(error, match="max_errors"):
        to_arrow(GOOD, errors="collect", max_errors=value)


def test_huge_max_errors_means_no_limit():
    _, errors = to_arrow(BAD * 10, errors="collect", max_errors=2**70)
    assert len(errors) == 10


def test_long_error_messages_are_cut_short():
    # An unknown type name of a megabyte: its error says what it is, not all of it.
    name = "X" * (1 << 20)
    _, errors = to_arrow(f'data: {{"type":"{name}"}}\n\n'.encode() * 3, errors="collect")
    messages = pa.table(errors).column("message").to_pylist()
    assert len(messages) == 3 and all(len(m) < 1000 for m in messages), [len(m) for m in messages]


def test_an_error_flood_stays_in_bounded_memory(tmp_path):
    # 200 MB of bad events in a ~1 MB gzip: 22M errors, each a few hundred bytes, were
    # collected until the process aborted; now the call ends with LimitError at 100,000.
    path = tmp_path / "flood.sse.gz"
    flood_gz(path, 200)
    assert path.stat().st_size < 3 << 20
    result = child(f"""
        from agui_fast.arrow import to_arrow
        from agui_fast.errors import LimitError
        for threads in (1, 2):
            try:
                to_arrow({str(path)!r}, errors="collect", threads=threads)
            except LimitError as e:
                result[str(threads)] = str(e)
    """)
    assert "more than 100000 bad events" in result["1"] and result["1"] == result["2"]
    assert result["rss_mb"] < 400, result


def test_convert_skip_of_an_error_flood_fails_cleanly(tmp_path):
    path = tmp_path / "flood.sse.gz"
    flood_gz(path, 50)
    out = tmp_path / "out.jsonl"
    r = subprocess.run(
        [sys.executable, "-m", "agui_fast", "convert", str(path), "-o", str(out), "--errors", "skip", "--max-errors", "1000"],
        capture_output=True, timeout=120,
    )
    assert r.returncode == 1
    (line,) = r.stderr.decode().splitlines()
    assert "LimitError" in line and "more than 1000" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flood.sse.gz"]


# -- logs with no frame boundary: the frame limit on every reader ---------------------------------


def sparse(path, head: bytes, size: int) -> None:
    """A file of ``size`` bytes: ``head``, then zeros that take no disk."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)


@pytest.mark.parametrize("head, error", [
    # `data: ` and then NULs: one line over the SSE limit.
    (b"data: ", "BufferLimitError"),
    # A good event, then a line of NULs.
    (GOOD * 1000 + b"data: ", "BufferLimitError"),
    # A protobuf frame announcing more than the frame limit.
    (b"\x00\xff\xff\xff", "FrameTooLargeError"),
])
def test_a_huge_log_without_a_boundary_stops_at_the_frame_limit(tmp_path, head, error):
    # 6 GB: every cut point was searched to the end, then the rest read as one part into
    # memory (an abort past the memory); now the read stops at the frame limit, as the
    # streaming readers do.
    path = tmp_path / "huge.log"
    sparse(path, head, 6 << 30)
    result = child(f"""
        import time
        from agui_fast.arrow import to_arrow
        from agui_fast.logs import iter_log
        for name, call in [
            ("to_arrow", lambda: to_arrow({str(path)!r})),
            ("to_arrow_1", lambda: to_arrow({str(path)!r}, threads=1)),
            ("collect", lambda: to_arrow({str(path)!r}, errors="collect")[1]),
            ("iter_log", lambda: list(iter_log({str(path)!r}))),
        ]:
            t = time.process_time()
            try:
                out = call()
                result[name] = ["no error", len(out)]
            except Exception as e:
                result[name] = [type(e).__name__, str(e)]
            result[name + "_cpu"] = time.process_time() - t
    """)
    for name in ("to_arrow", "to_arrow_1", "iter_log"):
        assert result[name][0] == error, result
    assert result["collect"] == ["no error", 1], result
    # Reading stops near the start: far less than a pass over the 6 GB (~seconds).
    assert max(result[k] for k in result if k.endswith("_cpu")) < 2.0, result
    assert result["rss_mb"] < 400, result


def test_the_cli_stops_at_the_frame_limit(tmp_path):
    path = tmp_path / "huge.sse"
    sparse(path, b"data: ", 6 << 30)
    for command in (["inspect"], ["convert", "-o", str(tmp_path / "o.jsonl")], ["validate"], ["replay"]):
        r = subprocess.run([sys.executable, "-m", "agui_fast", *command, str(path)], capture_output=True, timeout=120)
        assert r.returncode == 1, (command, r.stderr)
        (line,) = (r.stderr + r.stdout).decode().splitlines()
        assert "BufferLimitError" in line and line.count("frame 0") == 1, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.sse"]


@pytest.mark.parametrize("fmt", ["sse", "protobuf", "jsonl", "sse.gz"])
def test_iter_logs_frame_limit_is_configurable(fmt):
    from agui_fast.core import RunStartedEvent, TextMessageContentEvent, TextMessageStartEvent
    from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder, to_builtins
    from agui_fast.errors import FrameTooLargeError
    from agui_fast.logs import iter_log

    events = [RunStartedEvent(thread_id="t", run_id="r"), TextMessageStartEvent(message_id="m", role="assistant"),
              TextMessageContentEvent(message_id="m", delta="x" * 500)]
    log = {
        "protobuf": lambda: EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(events),
        "jsonl": lambda: b"".join(json.dumps(to_builtins(e)).encode() + b"\n" for e in events),
    }.get(fmt, lambda: EventEncoder().encode_many(events))()
    if fmt.endswith(".gz"):
        log = gzip.compress(log)
    assert list(iter_log(log)) == events  # within the default 10 MiB
    read = []
    with pytest.raises(FrameTooLargeError if fmt == "protobuf" else BufferLimitError) as info:
        for event in iter_log(log, max_frame_size=300):
            read.append(event)
    assert read == events[:2] and info.value.frame_index == 2, info.value  # the events before it first
    for bad, error in [(-1, ValueError), ("big", TypeError)]:
        with pytest.raises(error, match="max_frame_size"):
            next(iter_log(log, max_frame_size=bad))
    assert len(list(iter_log(log, max_frame_size=2**64))) == 3  # past any size: no limit


def test_a_region_of_short_lines_without_a_blank_line_reads_as_a_stream(tmp_path):
    # Comment lines with no blank line between them frame as one long event stream part:
    # read as a stream (no part held whole), the events after it still read.
    soup = b": keep-alive\n" * 1_500_000  # ~20 MB
    log = GOOD * 50_000 + soup + b"\n" + GOOD * 50_000
    path = tmp_path / "soup.sse"
    path.write_bytes(log)
    for threads in (1, 2, 4):
        assert len(to_arrow(path, threads=threads)) == 100_000
        assert len(to_arrow(log, threads=threads)) == 100_000


# -- every line end is cut into parts ----------------------------------------------------------


@pytest.mark.parametrize("end", [b"\r\r", b"\r\n\r\n", b"\n\r"])
def test_every_line_end_is_cut_into_parts(tmp_path, end):
    # A CR-only log was read whole on one thread (no cut point found: each search read
    # to the end); it is cut as an LF log is, into the same number of batches.
    lf = GOOD * 200_000
    other = lf.replace(b"\n\n", end)
    tables = {}
    for name, log in (("lf", lf), ("other", other)):
        path = tmp_path / f"{name}.sse"
        path.write_bytes(log)
        tables[name] = pa.table(to_arrow(path, threads=4))
    assert tables["other"].num_rows == tables["lf"].num_rows == 200_000
    assert len(tables["other"].to_batches()) == len(tables["lf"].to_batches()) > 4
    assert tables["other"].column("delta").to_pylist() == tables["lf"].column("delta").to_pylist()


def test_flood_and_limit_errors_name_the_source_once(tmp_path):
    log = tmp_path / "long.sse"
    log.write_bytes(GOOD + b"data: " + b"x" * 2000 + b"\n\n")
    with pytest.raises(BufferLimitError) as info:
        to_arrow(log, max_buffer_size=1000)
    # (The path named in the message is taken out first: pytest's directory may hold the digits.)
    msg = str(info.value).replace(str(log), "<log>")
    assert "<log>" in msg and msg.count("frame 1") == 1 and msg.count(str(len(GOOD))) == 1, msg
