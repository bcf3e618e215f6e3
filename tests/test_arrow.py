"""agui_fast.arrow.to_arrow: columnar decoding in Rust, handed over by the Arrow
PyCapsule interface."""

import gzip
import os
import subprocess
import sys
import threading

import pytest

from agui_fast import _native, stream
from agui_fast.arrow import schema, to_arrow
from agui_fast.cli import main
from agui_fast.core import (
    RunFinishedEvent, RunStartedEvent, StateDeltaEvent, TextMessageContentEvent, TextMessageStartEvent,
    ToolCallArgsEvent, ToolCallStartEvent,
)
from agui_fast.decoder import decode_event, decode_protobuf, decode_sse
from agui_fast.encoder import AGUI_MEDIA_TYPE, EventEncoder
from agui_fast.errors import EventValidationError, InvalidJsonError, TruncatedStreamError

from conftest import load_jsonl

pa = pytest.importorskip("pyarrow")

VECTOR_EVENTS = [decode_event(c["py_sse"][6:-2]) for c in load_jsonl("codec/events.jsonl") if c["py_sse"]]
RUN = [
    RunStartedEvent(thread_id="t1", run_id="r1", timestamp=1_700_000_000_000),
    TextMessageStartEvent(message_id="m1", role="assistant", name="bot"),
    TextMessageContentEvent(message_id="m1", delta="Hel"),
    TextMessageContentEvent(message_id="m1", delta="lo\n"),
    ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="m1"),
    ToolCallArgsEvent(tool_call_id="c1", delta='{"q":1}'),
    StateDeltaEvent(delta=[{"op": "add", "path": "/a", "value": 1}]),
    RunFinishedEvent(thread_id="t1", run_id="r1", usage=[
        {"provider": "a", "inputTokens": 10, "outputTokens": 3}, {"provider": "b", "inputTokens": 5},
    ]),
]
SSE = EventEncoder().encode_many(RUN)
PB = EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(RUN)


def test_schema_is_the_documented_one():
    s = pa.schema(schema())
    assert s.names == [
        "source", "index", "offset", "type", "timestamp", "thread_id", "run_id", "parent_run_id",
        "message_id", "tool_call_id", "role", "name", "delta", "input_tokens", "output_tokens",
        "total_tokens", "reasoning_tokens", "cached_input_tokens", "cache_write_input_tokens", "json",
    ]
    assert s.field("type").type == pa.dictionary(pa.int32(), pa.string())
    assert s.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert s.field("index").type == pa.uint64()
    assert s.field("json").type == pa.string_view()


def test_json_views_point_into_the_bytes_given():
    """The ``json`` column is views into the log's own bytes (no copy of the texts), and
    the table keeps those bytes alive; texts not in the log as they are (a payload joined
    from several ``data:`` lines) are copied."""
    log = SSE * 300 + b'data: {"type":"CUSTOM",\ndata: "name":"joined","value":1}\n\n'
    base = pa.py_buffer(log).address
    t = pa.table(to_arrow(log, threads=2))
    want = [e.strip() for e in t.column("json").to_pylist()]
    inside = copied = 0
    for chunk in t.column("json").chunks:
        for b in chunk.buffers()[2:]:
            if b.size == 0:
                continue
            if base <= b.address < base + len(log):
                inside += 1
            else:
                copied += 1
    assert inside >= 1 and copied == 1
    del log
    import gc

    gc.collect()
    assert [e.strip() for e in t.column("json").to_pylist()] == want
    assert want[-1] == '{"type":"CUSTOM",\n"name":"joined","value":1}'


def test_columns_of_a_run():
    t = to_arrow(SSE)
    assert hasattr(t, "__arrow_c_stream__")
    rows = pa.table(t).to_pylist()
    assert [r["type"] for r in rows] == [e.type.value for e in RUN]
    assert [r["index"] for r in rows] == list(range(len(RUN)))
    assert rows[0]["source"] is None
    assert rows[0]["thread_id"] == "t1" and rows[0]["timestamp"].year == 2023
    assert rows[1]["role"] == "assistant" and rows[1]["name"] == "bot"
    assert [r["delta"] for r in rows[2:4]] == ["Hel", "lo\n"]
    assert rows[4]["name"] == "search" and rows[5]["delta"] == '{"q":1}'
    assert rows[6]["delta"] is None
    assert (rows[7]["input_tokens"], rows[7]["output_tokens"], rows[7]["total_tokens"]) == (15, 3, None)
    assert SSE[rows[3]["offset"]:].startswith(b"data: ")


def test_json_column_decodes_back_to_decode_sse():
    log = EventEncoder().encode_many(VECTOR_EVENTS)
    t = pa.table(to_arrow(log))
    assert t.num_rows == len(VECTOR_EVENTS)
    assert [decode_event(j) for j in t.column("json").to_pylist()] == decode_sse(log)


# An emoji split across two deltas by a JavaScript producer: lone surrogate escapes, which
# JSON.parse and the decoders read. Compact, spaced, and in a key and a skipped member.
SPLIT = (
    b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
    b'data: {"type":"TEXT_MESSAGE_START","messageId":"m\\udc00","role":"assistant"}\n\n'
    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m\\udc00","delta":"a\\ud83d"}\n\n'
    b'data: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m\\udc00", "delta": "\\ude00b"}\n\n'
    b'data: {"type":"CUSTOM","name":"n","value":{"\\ud800":"\\udbff"}}\n\n'
    b'data: {"type":"TEXT_MESSAGE_END","messageId":"m\\udc00","x\\ud800":1}\n\n'
    b'data: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n'
)


@pytest.mark.parametrize("threads", [1, 2])
def test_lone_surrogate_escapes_are_read_as_the_decoders_read_them(threads, tmp_path):
    """The string columns take U+FFFD for each (a UTF-8 column cannot hold a lone
    surrogate, as @ag-ui/proto's encoder writes it), the json column keeps the text, and
    every CLI command takes the log that validate and replay take."""
    events = decode_sse(SPLIT)
    t = pa.table(to_arrow(SPLIT, threads=threads))
    assert t.column("delta").to_pylist() == [None, None, "a\ufffd", "\ufffdb", None, None, None]
    assert t.column("message_id").to_pylist() == [None] + ["m\ufffd"] * 3 + [None, "m\ufffd", None]
    assert [decode_event(j) for j in t.column("json").to_pylist()] == events
    assert stream.replay_log(SPLIT).messages[0].content == "a\U0001f600b"  # joined, as in JavaScript
    log = tmp_path / "split.sse"
    log.write_bytes(SPLIT)
    for args in (["validate", log], ["inspect", log], ["replay", log]):
        assert main([str(a) for a in args]) == 0, args
    for to in ("sse", "jsonl", "protobuf"):  # (Parquet holds the table's columns, above)
        out = tmp_path / f"out.{to}"
        assert main(["convert", str(log), "-o", str(out), "--to", to]) == 0, to
    assert decode_sse((tmp_path / "out.sse").read_bytes()) == events
    assert [e.delta for e in decode_protobuf((tmp_path / "out.protobuf").read_bytes())[2:4]] == ["a\ufffd", "\ufffdb"]


def test_protobuf_gives_the_same_rows():
    sse, pb = pa.table(to_arrow(SSE)), pa.table(to_arrow(PB))
    cols = ["type", "thread_id", "run_id", "message_id", "tool_call_id", "role", "name", "delta", "input_tokens"]
    assert sse.select(cols).to_pylist() == pb.select(cols).to_pylist()
    assert [decode_event(j) for j in pb.column("json").to_pylist()] == decode_protobuf(PB)
    assert pb.column("offset").to_pylist()[0] == 0


PB_COLUMNS = [n for n in pa.schema(schema()).names if n != "offset"]


def _same_rows_as_sse(pb_log, **kw):
    """The protobuf log's table, checked column by column against the SSE path over the
    same JSON texts (all but `offset`, which is where each frame is in its own log)."""
    pb = pa.table(to_arrow(pb_log, **kw))
    texts = pb.column("json").to_pylist()
    sse_log = b"".join(b"data: " + t.encode() + b"\n\n" for t in texts)
    sse = pa.table(to_arrow(sse_log, **kw))
    for name in PB_COLUMNS:  # (timestamps outside datetime's range: compared as Arrow)
        assert pb.column(name).equals(sse.column(name)), name
    return pb


def test_protobuf_columns_are_those_of_the_sse_path_over_the_vectors():
    # The protobuf row takes its columns from where the JSON mapping wrote them, not
    # from the text: the same columns as reading the text, and the text the mapping writes.
    frames = [bytes.fromhex(c["proto_frame_hex"]) for c in load_jsonl("codec/events.jsonl") if c.get("proto_frame_hex")]
    assert len(frames) > 300
    pb = _same_rows_as_sse(b"".join(frames))
    assert pb.num_rows == len(frames)
    assert pb.column("json").to_pylist() == [_native.proto_decode_message(f[4:]).decode() for f in frames]
    assert pb.column("delta").null_count < pb.num_rows and pb.column("input_tokens").null_count < pb.num_rows


@pytest.mark.parametrize("threads", [1, 2])
def test_protobuf_columns_are_those_of_the_sse_path_on_the_bench_log(threads):
    from agui_fast._bench import protobuf_log, run_events, sse_log

    events = run_events(20_000, seed=3)
    pb = _same_rows_as_sse(protobuf_log(events), threads=threads)
    sse = pa.table(to_arrow(sse_log(events), threads=threads))
    for name in PB_COLUMNS:
        if name != "json":
            assert pb.column(name).equals(sse.column(name)), name
    assert pb.column("input_tokens").null_count < pb.num_rows


def test_protobuf_rows_of_escaped_unicode_and_empty_strings():
    # The protobuf row borrows a string member the mapping wrote without an escape and
    # decodes the others: both must give the SSE path's columns, in every string column.
    odd = ['say "hi"\n\t\\', "h\u00e9llo \u4e2d \U0001f600 \u2028", "\x01\x1f\x7f", ""]
    events = []
    for i, s in enumerate(odd):
        t = s or "t"  # (a delta may not be empty)
        events += [
            RunStartedEvent(thread_id=s, run_id=s + "r", parent_run_id=s),
            TextMessageStartEvent(message_id=s, role="assistant", name=s),
            TextMessageContentEvent(message_id=s, delta=t),
            ToolCallStartEvent(tool_call_id=s, tool_call_name=s, parent_message_id=s),
            ToolCallArgsEvent(tool_call_id=s, delta=t, timestamp=i),
        ]
    pb = _same_rows_as_sse(EventEncoder(accept=AGUI_MEDIA_TYPE).encode_many(events))
    sse = pa.table(to_arrow(EventEncoder().encode_many(events)))
    for name in PB_COLUMNS:
        if name != "json":
            assert pb.column(name).equals(sse.column(name)), name
    assert set(pb.column("message_id").to_pylist()) >= set(odd)
    assert set(pb.column("delta").to_pylist()) >= set(odd) - {""}


def test_many_paths_in_parallel(tmp_path):
    paths = []
    for i in range(6):
        p = tmp_path / f"log{i}.{'sse' if i % 2 else 'pb.gz'}"
        p.write_bytes(SSE if i % 2 else gzip.compress(PB))
        paths.append(p)
    one = pa.table(to_arrow(paths, threads=1))
    two = pa.table(to_arrow(paths, threads=2))
    assert one.num_rows == 6 * len(RUN)
    assert one.drop_columns(["json", "offset"]).equals(two.drop_columns(["json", "offset"]))
    assert one.column("source").to_pylist()[:: len(RUN)] == [str(p) for p in paths]


def test_decodes_while_another_python_thread_runs(tmp_path):
    # The GIL is released: a Python thread makes progress during a long to_arrow.
    big = SSE * 20000
    ticks = []
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks.append(1)

    th = threading.Thread(target=spin)
    th.start()
    try:
        before = len(ticks)
        t = to_arrow([big, big], threads=2)
        during = len(ticks) - before
    finally:
        stop.set()
        th.join()
    assert pa.table(t).num_rows == 2 * 20000 * len(RUN)
    assert during > 100


def test_concurrent_calls_share_the_kept_workers():
    # Python threads calling to_arrow at once share one pool of Rust workers (or, when
    # one is taking it at that moment, start their own): every table is the one of a
    # single thread, and no call waits forever on a worker busy with another.
    big = SSE * 20000
    want = pa.table(to_arrow(big, threads=1))
    got = [None] * 4

    def call(i):
        got[i] = pa.table(to_arrow(big, threads=2 + i % 2))

    ths = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in ths)
    assert all(t.equals(want) for t in got)


# A fresh interpreter (forking pytest's own process, with the threads of earlier tests,
# could deadlock the child for reasons of its own): a call on two threads leaves the kept
# workers alive; a forked child has none of them, builds its own and decodes the same
# table; the parent's workers are still there for its next call.
FORK_CHILD = r"""
import os, sys, time
import pyarrow as pa
from agui_fast.arrow import to_arrow

def workers():
    names = []
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/comm") as f:
            names.append(f.read().strip())
    return sum(n.startswith("agui-arrow-") for n in names)

log = open(sys.argv[1], "rb").read()
assert workers() == 0
pa.table(to_arrow(log, threads=1))
assert workers() == 0, "threads=1 touches no pool"
want = pa.table(to_arrow(log, threads=2))
assert workers() == 2, workers()
pid = os.fork()
if pid == 0:
    code = 1
    try:
        assert workers() == 0
        got = pa.table(to_arrow(log, threads=2))
        assert got.equals(want)
        assert workers() == 2
        events, errors = to_arrow(log + b"data: {nope}\n\n" + log, threads=2, errors="collect")
        assert pa.table(errors).num_rows == 1 and pa.table(events).num_rows == 2 * want.num_rows
        code = 0
    finally:
        os._exit(code)
deadline = time.monotonic() + 60
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        sys.exit("the child hung")
    time.sleep(0.05)
assert os.waitstatus_to_exitcode(status) == 0, status
assert pa.table(to_arrow(log, threads=2)).equals(want)
assert workers() == 2
print("ok")
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or not hasattr(os, "fork"), reason="Linux /proc, fork")
def test_kept_workers_after_fork(tmp_path):
    path = tmp_path / "log.sse"
    path.write_bytes(SSE * 20000)
    r = subprocess.run([sys.executable, "-c", FORK_CHILD, str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_bad_frame_raises_with_position(tmp_path):
    bad = tmp_path / "bad.sse"
    bad.write_bytes(SSE + b'data: {"type":"NOPE"}\n\n' + SSE)
    with pytest.raises(EventValidationError) as info:
        to_arrow([SSE, bad])
    e = info.value
    assert (e.frame_index, e.offset, e.field) == (len(RUN), len(SSE), "$.type")
    assert str(bad) in str(e) and "frame 8" in str(e)
    with pytest.raises(InvalidJsonError):
        to_arrow(b"data: {nope\n\n")
    with pytest.raises(TruncatedStreamError) as info:
        to_arrow(PB[:-2])
    assert info.value.frame_index == len(RUN) - 1
    with pytest.raises(FileNotFoundError):
        to_arrow(tmp_path / "missing.sse")


def test_collect_puts_bad_frames_in_an_errors_table(tmp_path):
    bad = tmp_path / "bad.sse"
    bad.write_bytes(SSE + b'data: {"type":"NOPE"}\n\n' + SSE)
    events, errors = to_arrow([bad, PB[:-2], tmp_path / "missing.sse"], errors="collect")
    events, errors = pa.table(events), pa.table(errors).to_pylist()
    assert events.num_rows == 2 * len(RUN) + len(RUN) - 1
    assert [e["error"] for e in errors] == ["EventValidationError", "TruncatedStreamError", "FileNotFoundError"]
    assert errors[0]["source"] == str(bad) and errors[0]["index"] == len(RUN) and errors[0]["field"] == "$.type"


def test_arguments():
    with pytest.raises(ValueError):
        to_arrow(SSE, errors="ignore")
    with pytest.raises(ValueError):
        to_arrow(SSE, threads=0)
    with pytest.raises(ValueError):
        to_arrow(SSE, format="xml")
    with pytest.raises(TypeError):
        to_arrow(123)
    assert pa.table(to_arrow(SSE, format="sse")).num_rows == len(RUN)
    assert pa.table(to_arrow(b"")).num_rows == 0
    assert pa.table(to_arrow([])).num_rows == 0


def test_limits_are_configurable():
    from agui_fast.errors import BufferLimitError, FrameTooLargeError

    with pytest.raises(BufferLimitError):
        to_arrow(SSE, max_buffer_size=16)
    with pytest.raises(FrameTooLargeError):
        to_arrow(PB, max_frame_size=8)


def test_depth_limit_at_the_boundary():
    def log(depth):  # the event object is level 1
        value = b"[" * (depth - 1) + b"]" * (depth - 1)
        return b'data: {"type":"CUSTOM","name":"n","value":' + value + b"}\n\n"

    assert pa.table(to_arrow(log(512))).num_rows == 1
    with pytest.raises(InvalidJsonError, match="nested too deeply"):
        to_arrow(log(513))
    assert pa.table(to_arrow(log(513), max_depth=513)).num_rows == 1
    with pytest.raises(InvalidJsonError):
        to_arrow(log(20), max_depth=10)


def test_depth_limit_at_the_cap_on_every_thread():
    # An event as deep as any API allows is read, and a bad one explained, on whichever
    # thread decodes it (the caller's, or a worker's smaller stack); the limit is checked.
    cap = 10_000  # agui_core::limits::MAX_DEPTH_CAP
    value = b"[" * (cap - 1) + b"]" * (cap - 1)
    event = b'data: {"type":"CUSTOM","name":"n","value":' + value + b"}\n\n"
    small = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
    log = (small * 20_000 + event) * 2 + event.replace(b"]}", b"}}", 1)
    for threads in (1, 2):
        with pytest.raises(InvalidJsonError) as e:
            to_arrow(log, threads=threads, max_depth=cap)
        assert e.value.frame_index == 40_002
        t = pa.table(to_arrow(log[: -len(event)], threads=threads, max_depth=cap))
        assert t.num_rows == 40_002
    with pytest.raises(InvalidJsonError, match="nested too deeply"):
        to_arrow(event.replace(b"[", b"[[", 1), max_depth=cap)
    with pytest.raises(ValueError, match="max_depth"):
        to_arrow(small, max_depth=cap + 1)


# What the row reader accepts (rust/agui-arrow/src/fields.rs has the full table): a
# string it reads must decode (a lone surrogate as U+FFFD), a member it skips must be
# valid JSON.
@pytest.mark.parametrize("member, value, ok", [
    ("delta", r'"\ud800"', True),  # a lone surrogate in a string read: U+FFFD
    ("delta", r'"\ud83d\ude00"', True),
    ("delta", '"a\x01b"', False),  # a control character
    ("extra", r'"\u12G4"', False),  # a bad escape in a skipped member
    ("extra", r'["\x"]', False),
    ("extra", "01", False),
    ("extra", "1e400", True),  # any JSON number
    ("extra", r'"\ud800"', True),  # skipped, as serde_json's skip lets it through
    ("messageId", r'"m\u0031"', True),
])
def test_json_is_validated_as_before(member, value, ok):
    members = {"messageId": '"m"', "delta": '"d"', member: value}
    text = '{"type":"TEXT_MESSAGE_CONTENT",' + ",".join(f'"{k}":{v}' for k, v in members.items()) + "}"
    log = b"data: " + text.encode() + b"\n\n"
    if ok:
        assert pa.table(to_arrow(log)).num_rows == 1
    else:
        with pytest.raises(InvalidJsonError):
            to_arrow(log)


def test_pyarrow_polars_and_duckdb_read_it_through_the_capsule():
    # Both are in the dev extra (CI installs it).
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")

    t = to_arrow(SSE * 3)
    assert type(t) is _native.ArrowTable
    # Each reader takes its own stream of the same buffers: the table reads again and again.
    want = pa.table(t).column("json").to_pylist()
    assert len(want) == t.num_rows == len(t) == 3 * len(RUN)
    got = duckdb.sql("select type, count(*) as n from t group by type order by type").fetchall()
    assert dict(got)["TEXT_MESSAGE_CONTENT"] == 6
    assert [r[0] for r in duckdb.sql("select json from t").fetchall()] == want
    assert polars.DataFrame(t)["json"].to_list() == want
    assert pa.table(t).to_pandas()["json"].tolist() == want
    # The same schema every way it is read (string_view json, dictionary type).
    schema = pa.schema(t)
    assert schema == pa.table(t).schema == pa.RecordBatchReader.from_stream(t).schema
    assert t.column_names == schema.names and t.num_columns == len(schema)
    assert polars.DataFrame(t).columns == schema.names


def test_the_capsules_follow_the_interface():
    t = to_arrow(SSE)
    stream = t.__arrow_c_stream__()
    assert type(stream).__name__ == "PyCapsule" and "arrow_array_stream" in repr(stream)
    assert "arrow_schema" in repr(t.__arrow_c_schema__())
    # A requested schema is a request: the table's own schema comes back.
    requested = pa.schema([pa.field("x", pa.int8())])
    reader = pa.RecordBatchReader._import_from_c_capsule(t.__arrow_c_stream__(requested.__arrow_c_schema__()))
    assert reader.schema == pa.schema(t)
    assert reader.read_all().num_rows == len(RUN)
    # An unconsumed capsule releases its stream when it is freed.
    del stream
    assert "rows" in repr(t)


def test_the_schema_and_the_errors_table_are_tables_too():
    s = schema()
    assert type(s) is _native.ArrowTable and s.num_rows == 0
    assert pa.table(s).num_rows == 0 and pa.schema(s).names == s.column_names
    _, errors = to_arrow([SSE, b"data: {nope}\n\n"], errors="collect")
    assert type(errors) is _native.ArrowTable
    assert pa.table(errors).num_rows == errors.num_rows == 1


def test_parquet_of_the_cli_is_read_by_duckdb(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    log = tmp_path / "run.sse"
    log.write_bytes(SSE * 5)
    out = tmp_path / "run.parquet"
    assert main(["convert", str(log), "-o", str(out)]) == 0
    want = pa.table(to_arrow(str(log)))
    got = duckdb.sql(f"select type, json, input_tokens from '{out}' order by index").fetchall()
    assert [(r[0], r[1], r[2]) for r in got] == list(zip(
        want.column("type").to_pylist(), want.column("json").to_pylist(), want.column("input_tokens").to_pylist(),
    ))


def test_one_big_gzip_log_on_two_threads_is_the_same_table(tmp_path):
    path = tmp_path / "big.sse.gz"
    path.write_bytes(gzip.compress(SSE * 40000))
    one = pa.table(to_arrow(path, threads=1))
    two = pa.table(to_arrow(path, threads=2))
    assert one.num_rows == 40000 * len(RUN)
    assert two.column("json").num_chunks > 1
    assert one.equals(two)


@pytest.mark.parametrize("fmt", ["sse", "protobuf"])
def test_one_big_plain_log_is_cut_into_parts_with_exact_positions(tmp_path, fmt):
    # A plain log (bytes or a file) is cut at frame boundaries and its parts decoded on
    # every thread: the table, positions and errors are those of one thread.
    log = (SSE if fmt == "sse" else PB) * 30000
    path = tmp_path / f"big.{fmt}"
    path.write_bytes(log)
    one = pa.table(to_arrow(log, threads=1))
    assert one.num_rows == 30000 * len(RUN)
    assert one.column("index").to_pylist() == list(range(one.num_rows))
    for source in (log, path):
        two = pa.table(to_arrow(source, threads=2))
        assert two.column("json").num_chunks > 2
        assert two.drop_columns(["source"]).equals(one.drop_columns(["source"]))
    offsets = one.column("offset").to_pylist()
    assert offsets[len(RUN)] == len(log) // 30000
    # A bad frame deep in the log: the same frame index and offset on any thread count.
    bad_event = b'data: {"type":"NOPE"}\n\n' if fmt == "sse" else b"\x00\x00\x00\x02\xff\xff"
    bad = log + bad_event + log
    errors = []
    for threads in (1, 2, 3):
        with pytest.raises(Exception) as info:
            to_arrow(bad, threads=threads)
        errors.append((type(info.value), info.value.frame_index, info.value.offset, str(info.value)))
    assert errors[0] == errors[1] == errors[2]
    assert errors[0][1:3] == (30000 * len(RUN), len(log))
    events, table = to_arrow(bad, threads=2, errors="collect")
    assert pa.table(events).num_rows == (60000 if fmt == "sse" else 30000) * len(RUN)
    assert pa.table(table).column("index").to_pylist() == [30000 * len(RUN)]


def test_a_pipe_is_read_as_a_stream(tmp_path):
    import os

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "wb") as f:
            f.write(SSE * 1000)

    th = threading.Thread(target=write)
    th.start()
    try:
        t = pa.table(to_arrow(str(fifo), threads=2))
    finally:
        th.join()
    assert t.num_rows == 1000 * len(RUN)


def test_compact_and_spaced_events_give_the_same_columns():
    # Compact events are read by the core's scanner, the same events with a space in them
    # by the serde pass: every column but the JSON text and the byte offsets is the same.
    import re

    from agui_fast._bench import run_events, sse_log

    compact = sse_log(run_events(5_000)) + SSE + EventEncoder().encode_many(VECTOR_EVENTS)
    spaced = re.sub(rb"(?m)^data: \{", b"data: { ", compact)
    a, b = pa.table(to_arrow(compact, threads=1)), pa.table(to_arrow(spaced, threads=2))
    assert a.num_rows == b.num_rows > 5_000
    for name in a.column_names:
        if name not in ("json", "offset"):
            assert a.column(name).combine_chunks() == b.column(name).combine_chunks(), name
    assert [j.replace("{ ", "{", 1) for j in b.column("json").to_pylist()] == a.column("json").to_pylist()


def test_events_written_by_json_dumps_give_the_columns_of_compact_ones():
    # Events as Python's `json.dumps` writes them (", " and ": " at every level, non-ASCII
    # escaped or not) give the columns of the same events written compactly and of the
    # same events opened with "{ " (no fast reading takes those): every column but the
    # JSON text and the byte offsets, and the same errors of the same events.
    import json

    from agui_fast._bench import run_events, sse_log

    log = sse_log(run_events(3_000)) + SSE + EventEncoder().encode_many(VECTOR_EVENTS)
    events = [json.loads(j) for j in pa.table(to_arrow(log)).column("json").to_pylist()]
    events += [
        {"type": "NOPE", "messageId": "m"}, {"type": "TEXT_MESSAGE_CONTENT", "messageId": 5, "delta": "x"},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "timestamp": 1.5},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "usage": [{"inputTokens": "3"}]},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": {"a": [1, "b, c: d"]}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m\u00e9\U0001f600", "delta": "a, \"b\": c\n", "x": [1, {"y": None}]},
    ]

    def written(dumps):
        return b"".join(b"data: " + dumps(e).encode() + b"\n\n" for e in events)

    logs = [
        written(lambda e: json.dumps(e, separators=(",", ":"), ensure_ascii=False)),
        written(json.dumps),
        written(lambda e: json.dumps(e, ensure_ascii=False)),
        written(lambda e: "{ " + json.dumps(e, separators=(",", ":"))[1:]),
    ]
    tables = []
    for i, log in enumerate(logs):
        rows, errors = to_arrow(log, threads=1 + i % 2, errors="collect")
        errors = [(e["index"], e["error"], e["field"]) for e in pa.table(errors).to_pylist()]
        tables.append((pa.table(rows), errors))
    compact, compact_errors = tables[0]
    assert compact.num_rows > 3_000 and len(compact_errors) == 5
    for table, errors in tables[1:]:
        assert errors == compact_errors
        for name in compact.column_names:
            if name not in ("json", "offset"):
                assert table.column(name).combine_chunks() == compact.column(name).combine_chunks(), name
