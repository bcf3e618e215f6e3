"""agui_fast.dask.read_logs on a real distributed.LocalCluster (2 worker processes on
127.0.0.1): the same numbers as the single-process to_arrow, and as DuckDB over the
Parquet that `agui-fast convert` writes."""

import gzip

import pytest

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")

from agui_fast._bench import protobuf_log, run_events, sse_log  # noqa: E402
from agui_fast.arrow import to_arrow  # noqa: E402
from agui_fast.cli import main  # noqa: E402
from agui_fast.dask import read_logs  # noqa: E402


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    paths = []
    for i in range(4):
        events = run_events(3000 + 500 * i, seed=i)
        sub = root / f"day{i % 2}"
        sub.mkdir(exist_ok=True)
        if i == 3:
            p = sub / f"run{i}.sse.gz"
            p.write_bytes(gzip.compress(sse_log(events)))
        elif i == 2:
            p = sub / f"run{i}.pb"
            p.write_bytes(protobuf_log(events))
        else:
            p = sub / f"run{i}.sse"
            p.write_bytes(sse_log(events))
        paths.append(p)
    return root, sorted(paths)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=":0", silence_logs=40,
    ) as cluster, distributed.Client(cluster) as c:
        yield c


def test_counts_and_groupby_match_to_arrow(logs, client):
    root, paths = logs
    df = read_logs(str(root / "**" / "run*"))
    assert df.npartitions == len(paths)
    local = pa.table(to_arrow([str(p) for p in paths])).to_pandas()

    assert len(df) == len(local)
    by_type = df.groupby("type")["index"].count().compute()
    assert by_type.to_dict() == local.groupby("type", observed=True)["index"].count().to_dict()

    deltas = df[df["type"] == "TEXT_MESSAGE_CONTENT"].groupby("message_id")["delta"].count().compute()
    want = local[local["type"] == "TEXT_MESSAGE_CONTENT"].groupby("message_id")["delta"].count()
    assert deltas.sort_index().to_dict() == want.sort_index().to_dict()

    tokens = df["input_tokens"].sum().compute()
    assert tokens == local["input_tokens"].sum()
    assert set(df["source"].unique().compute()) == {str(p) for p in paths}


def test_duckdb_over_the_parquet_gives_the_same_numbers(logs, client, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    root, paths = logs
    out = tmp_path / "all.parquet"
    assert main(["convert", *map(str, paths), "-o", str(out)]) == 0
    got = dict(duckdb.sql(f"select type, count(*) from '{out}' group by type").fetchall())
    df = read_logs([str(p) for p in paths])
    assert got == df.groupby("type")["index"].count().compute().to_dict()
    total = duckdb.sql(f"select sum(output_tokens) from '{out}'").fetchall()[0][0]
    assert total == df["output_tokens"].sum().compute()


def test_a_bad_log_fails_the_computation(tmp_path, client):
    from agui_fast.errors import EventValidationError

    p = tmp_path / "bad.sse"
    p.write_bytes(b'data: {"type":"NOPE"}\n\n')
    with pytest.raises(EventValidationError):
        read_logs(str(p)).compute()
    with pytest.raises(FileNotFoundError):
        read_logs(str(tmp_path / "none*.sse"))


def test_collect_gives_the_good_rows_and_an_errors_frame(logs, tmp_path, client):
    import dask

    from agui_fast.errors import LimitError

    _, paths = logs
    bad = tmp_path / "bad.sse"
    good = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
    bad.write_bytes(good + b'data: {"type":"NOPE"}\n\n' * 3 + good + b"data: {cut")
    missing_later = tmp_path / "gone.sse"
    missing_later.write_bytes(good)
    sources = [str(paths[0]), str(bad), str(missing_later)]
    events, errors = read_logs(sources, errors="collect")
    missing_later.unlink()  # unreadable when the computation runs
    events, errors = dask.compute(events, errors)
    local_events, local_errors = to_arrow(sources[:2], errors="collect")
    assert len(events) == len(local_events)
    assert list(errors["source"]) == [str(bad)] * 4 + [str(missing_later)]
    assert list(errors["error"]) == ["EventValidationError"] * 3 + ["InvalidJsonError", "FileNotFoundError"]
    assert list(errors["index"][:4]) == [1, 2, 3, 5]
    assert pa.table(local_errors).num_rows == 4
    # The budget is per log.
    e, r = read_logs(str(bad), errors="collect", max_errors=3)
    with pytest.raises(LimitError):
        dask.compute(e, r)
    with pytest.raises(ValueError, match="errors"):
        read_logs(str(bad), errors="skip")


def test_the_frame_limit_is_configurable(tmp_path, client):
    from agui_fast.errors import BufferLimitError

    p = tmp_path / "long.sse"
    good = b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
    p.write_bytes(good + b'data: {"type":"CUSTOM","name":"n","value":"' + b"x" * 500 + b'"}\n\n')
    assert len(read_logs(str(p)).compute()) == 2
    with pytest.raises(BufferLimitError):
        read_logs(str(p), max_frame_size=300).compute()
    events, errors = read_logs(str(p), errors="collect", max_frame_size=300)
    import dask

    events, errors = dask.compute(events, errors)
    assert len(events) == 1 and list(errors["error"]) == ["BufferLimitError"]
    for bad, error in [(-1, ValueError), ("big", TypeError)]:
        with pytest.raises(error, match="max_frame_size"):
            read_logs(str(p), max_frame_size=bad)
