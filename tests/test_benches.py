"""The bench suite stays one suite, and the speed tables stay generated: every file in
``benches/`` is a bench of the suite or a helper one uses; every bench times ours against its
peers through the one interleaving helper (or is a whole-process measurement); the README's
table and ``docs/benchmarks.md`` are what the runner renders from ``docs/benchmarks.json``."""

import ast
import importlib.util
import json
import re
import xml.etree.ElementTree as ET

import pytest
from conftest import ROOT, repo_file

BENCHES = ROOT / "benches"


def runner():
    spec = importlib.util.spec_from_file_location("benches_runner", repo_file("benches", "__main__.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_file_is_a_bench_or_a_helper_the_suite_uses():
    files = {p.name for p in repo_file("benches").iterdir() if p.is_file() and p.suffix == ".py"}
    sources = {name: (BENCHES / name).read_text() for name in files}
    used = set()
    for text in sources.values():
        used |= set(re.findall(r"^(?:from|import) (_\w+)", text, re.M))
    for name in sorted(files):
        stem = name[:-3]
        if name.startswith("bench_") or name in ("__init__.py", "__main__.py", "conftest.py"):
            continue
        assert stem.startswith("_"), f"benches/{name}: not a bench (bench_*.py) nor a helper (_*.py)"
        assert stem in used, f"benches/{name}: no bench or helper of the suite imports it"
    others = {p.name for p in repo_file("benches").iterdir() if p.is_file() and p.suffix != ".py"}
    assert not others, f"benches/ holds files the suite does not run: {sorted(others)}"


def _bench_functions():
    for path in sorted(BENCHES.glob("bench_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                yield path.name, node


def test_every_bench_times_ours_against_its_peers_or_measures_a_process():
    benches = list(_bench_functions())
    assert len(benches) > 20
    for name, fn in benches:
        calls = {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert calls & {"against", "measure"}, f"benches/{name}::{fn.name} uses neither against() nor measure()"
        assert any(isinstance(a, ast.arg) and a.arg == "benchmark" for a in fn.args.args), f"{name}::{fn.name}"


def _block(path):
    text = repo_file(*path).read_text()
    r = runner()
    assert text.count(r.START) == 1 and text.count(r.END) == 1, f"{'/'.join(path)}: one table between the markers"
    return text.split(r.START, 1)[1].split(r.END, 1)[0].strip("\n").split("\n")


def test_the_tables_are_rendered_from_the_runs_json():
    r = runner()
    data = json.loads(repo_file("docs", "benchmarks.json").read_text())
    assert _block(("README.md",)) == r.render(data, readme=True)
    assert _block(("docs", "benchmarks.md")) == r.render(data, readme=False)
    assert any(row.get("readme") for row in data["rows"])


def test_render_spans_and_figures():
    r = runner()
    data = {
        "provenance": "Generated here.",
        "rows": [
            {"group": "encode/small", "peer": "ag_ui", "readme": "encode one event", "median": [26.4, 29.1], "min": [23.0, 34.2]},
            {"group": "encode/small", "peer": "msgspec", "readme": "encode one event", "median": [0.95, 0.95], "min": [0.9, 1.0]},
            {"group": "decode/x", "peer": "pure Python", "median": [1234.5], "min": [1500.0]},
            {"group": "decode/memory", "peer": "a small log", "readme": "stream a log: peak RSS", "unit": "MiB",
             "figures": [[61.2, 64.0], [60.1, 60.4]]},
        ],
    }
    assert r.render(data, readme=True) == [
        "| workload | peer (same run) | peer time ÷ ours, by median (by min) |",
        "|---|---|---|",
        "| encode one event | ag_ui | 26.4–29.1× (23.0–34.2×) |",
        "|  | msgspec | 0.95× (0.90–1.00×) |",
        "| stream a log: peak RSS | a small log | 61.2–64.0 MiB vs 60.1–60.4 MiB |",
        "",
        "Generated here. Every workload: [docs/benchmarks.md](docs/benchmarks.md).",
    ]
    assert "| `decode/x` | pure Python | 1,234× (1,500×) |" in r.render(data, readme=False)


@pytest.mark.parametrize("logx", [False, True])
def test_charts_are_svg(tmp_path, logx):
    r = runner()
    out = tmp_path / "chart.svg"
    series = {"ours": [(1_000, 1.0), (10_000, 1.1)], "peer": [(1_000, 3.0), (10_000, 30.0)]}
    r.svg_chart(out, "title", "x", "y", series, logx=logx, logy=logx)
    root = ET.fromstring(out.read_text())
    assert root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 2
