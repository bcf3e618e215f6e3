"""The bench suite's runner: ``python -m benches [options]`` (from the repository's root).

Runs the suite (pytest-benchmark files ``benches/bench_*.py``, one per user path) in fresh
processes, ``--runs`` times, and reads their JSON: for each workload, the peer's time
divided by ours, by median and by min of the interleaved rounds, as ranges over the runs.
The whole suite on a release build of this checkout (``maturin develop --release``) also
writes the README's speed table, ``docs/benchmarks.md`` (every workload) and the charts in
``docs/``; a selection (``-k``) or another build only prints.

    python -m benches                      # 3 runs; writes README.md and docs/benchmarks.*, docs/*.svg
    python -m benches --quick              # 1 run, fewer rounds, 20k-event logs instead of 100k
    python -m benches -k "decode or logs"  # a selection (pytest -k), printed
    python -m benches --ab v0.1.0          # this build against another: a git revision, a
                                           # wheel, or the python of a venv that has one
    python -m benches --callgrind -k encode/small   # instructions a call (valgrind), ours and
                                           # each peer's: repeatable where timings are noisy
    python -m benches --stages [--callgrind]  # to_arrow stage by stage, in Rust
    python -m benches --report target/bench/run-*.json   # tables from earlier runs

Everything lands in ``target/bench/`` (``--out``): each run's JSON and ``report.md``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benches"
OURS = "agui_fast"
README = ROOT / "README.md"
FULL = ROOT / "docs" / "benchmarks.md"
DATA = ROOT / "docs" / "benchmarks.json"
START, END = "<!-- bench-table:start -->", "<!-- bench-table:end -->"
# The user's paths, in the tables' order (the groups are named "path/workload").
PATHS = ["encode", "build", "server", "decode", "logs", "replay", "patch", "protobuf", "client"]


# -- running --------------------------------------------------------------------------------------


def pytest_args(json_path: Path, select: Optional[str]) -> List[str]:
    args = ["-m", "pytest", str(HERE), "-p", "no:cacheprovider", "--benchmark-only", "-q",
            f"--benchmark-json={json_path}", "--benchmark-columns=min,median,rounds"]
    return args + (["-k", select] if select else [])


def run_suite(python: str, json_path: Path, select: Optional[str], quick: bool) -> Dict[str, Any]:
    """One run of the suite in a process of its own: its JSON, with the machine's load
    average (one minute) before and after it."""
    env = dict(os.environ, AGUI_BENCH_QUICK="1" if quick else "0")
    print(f"== {python} -m pytest benches -> {json_path}", flush=True)
    load = [os.getloadavg()[0]]
    code = subprocess.call([python, *pytest_args(json_path, select)], cwd=ROOT, env=env)
    if code not in (0, 5) or not json_path.exists():
        sys.exit(f"benches: the suite failed (exit status {code})")
    run = json.loads(json_path.read_text())
    run["loadavg"] = load + [os.getloadavg()[0]]
    json_path.write_text(json.dumps(run))
    return run


def release_build() -> Tuple[bool, str]:
    """Whether the extension this interpreter imports is this checkout's release build:
    the file ``maturin develop --release`` installed, byte for byte ``target/release``'s."""
    import agui_fast._native as native

    installed = Path(native.__file__)
    digest = hashlib.sha256(installed.read_bytes()).hexdigest()
    for profile in ("release", "dev-fast", "debug"):
        for built in (ROOT / "target" / profile).glob("lib_native.*"):
            if built.suffix in (".so", ".dylib", ".pyd") and hashlib.sha256(built.read_bytes()).hexdigest() == digest:
                return profile == "release", f"the {profile} build of this checkout ({installed})"
    return False, f"an extension this checkout did not build ({installed})"


# -- reading the runs --------------------------------------------------------------------------------


def load_runs(paths: List[Path]) -> List[Dict[str, Any]]:
    return [json.loads(p.read_text()) for p in paths]


def median(xs: List[float]) -> float:
    return statistics.median(xs)


def ratios(runs: List[Dict[str, Any]]) -> Dict[Tuple[str, str], Dict[str, Any]]:
    """``(group, peer) -> {"median": [...], "min": [...], "cpu": [...], ...}``, one value a
    run: the peer's time over ours (> 1: ours is faster), and, for the whole-process
    measurements, the figures compared."""
    out: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for run in runs:
        for b in run["benchmarks"]:
            info, group = b["extra_info"], b["group"] or b["name"]
            times = info.get("interleaved")
            if times:
                ours = times[OURS]
                for peer, t in times.items():
                    if peer == OURS or not t["wall"]:
                        continue
                    row = out.setdefault((group, peer), {"median": [], "min": [], "cpu": [], "rounds": [],
                                                         "readme": info.get("readme", {}).get(peer)})
                    row["median"].append(median(t["wall"]) / median(ours["wall"]))
                    row["min"].append(min(t["wall"]) / min(ours["wall"]))
                    if median(ours["cpu"]) > 0:
                        row["cpu"].append(median(t["cpu"]) / median(ours["cpu"]))
                    row["rounds"].append((len(ours["wall"]), len(t["wall"])))
            spec = info.get("compare")
            if spec:
                figures = info["figures"]
                row = out.setdefault((group, spec["peer_label"]), {"figures": ([], []), "unit": spec["unit"], "label": spec["label"],
                                                                   "readme": spec["label"] if info.get("readme") else None})
                row["figures"][0].extend(figures[spec["ours"]])
                row["figures"][1].extend(figures[spec["peer"]])
    return out


def aggregate(runs: List[Dict[str, Any]], quick: bool) -> Dict[str, Any]:
    """What the tables are made of (written as ``docs/benchmarks.json``): the rows, one per
    (workload, peer), and where and how they were measured."""
    rows = ratios(runs)
    ordered = sorted(rows.items(), key=lambda item: PATHS.index(item[0][0].split("/")[0])
                     if item[0][0].split("/")[0] in PATHS else len(PATHS))
    return {"provenance": provenance(runs, rows, quick),
            "rows": [dict(row, group=group, peer=peer) for (group, peer), row in ordered]}


def fmt(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def span(xs: List[float], unit: str = "×") -> str:
    lo, hi = min(xs), max(xs)
    return f"{fmt(lo)}{unit}" if fmt(lo) == fmt(hi) else f"{fmt(lo)}–{fmt(hi)}{unit}"


def cell(row: Dict[str, Any]) -> str:
    if "figures" in row:
        ours, theirs = row["figures"]
        return f"{span(ours, ' ' + row['unit'])} vs {span(theirs, ' ' + row['unit'])}"
    return f"{span(row['median'])} ({span(row['min'])})"


def machine(run: Dict[str, Any]) -> str:
    m = run.get("machine_info", {})
    cpu = (m.get("cpu") or {}).get("brand_raw") or m.get("processor") or platform.processor() or "a CPU"
    return f"{cpu}, {os.cpu_count()} cores, {m.get('python_implementation', 'CPython')} {m.get('python_version', '')}".strip()


def rounds_text(rows: Dict[Tuple[str, str], Dict[str, Any]]) -> str:
    counts = [r[0] for row in rows.values() for r in row.get("rounds", [])]
    if not counts:
        return "a few"
    return f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"


def provenance(runs: List[Dict[str, Any]], rows: Dict[Tuple[str, str], Dict[str, Any]], quick: bool) -> str:
    date = runs[-1].get("datetime", "")[:10]
    cmd = "python -m benches --quick" if quick else "python -m benches"
    sizes = " (logs of 20k events instead of 100k)" if quick else ""
    loads = [x for run in runs for x in run.get("loadavg", [])]
    load = f", load average {span(loads, '')}" if loads else ""
    return (f"Generated by `{cmd}`{sizes} on {machine(runs[-1])}{load}, {date}: {len(runs)} run"
            f"{'s' if len(runs) > 1 else ''} of {rounds_text(rows)} interleaved rounds per workload; "
            "the ranges are over the runs.")


def render(data: Dict[str, Any], readme: bool) -> List[str]:
    """The README's table (the rows a bench names for it, with its words) or the full one."""
    lines = ["| workload | peer (same run) | peer time ÷ ours, by median (by min) |", "|---|---|---|"]
    last = None
    for row in data["rows"]:
        if readme and not row.get("readme"):
            continue
        what = row["readme"] if readme else f"`{row['group']}`" + (f": {row['label']}" if row.get("label") else "")
        lines.append(f"| {'' if what == last else what} | {row['peer']} | {cell(row)} |")
        last = what
    note = data["provenance"]
    if readme:
        note += " Every workload: [docs/benchmarks.md](docs/benchmarks.md)."
    return lines + [""] + textwrap.wrap(note, width=100, break_long_words=False, break_on_hyphens=False)


def replace_between(path: Path, body: List[str]) -> None:
    text = path.read_text()
    if START not in text or END not in text:
        sys.exit(f"benches: {path} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    path.write_text(head + START + "\n" + "\n".join(body) + "\n" + END + rest.split(END, 1)[1])
    print(f"== wrote {path.relative_to(ROOT)}")


# -- charts (SVG, no dependency) --------------------------------------------------------------------


COLORS = ["#1f77b4", "#2ca02c", "#17becf", "#d62728", "#ff7f0e", "#7f7f7f"]


def svg_chart(path: Path, title: str, xlabel: str, ylabel: str, series: Dict[str, List[Tuple[float, float]]],
              logx: bool = False, logy: bool = False) -> None:
    import math

    w, h, left, right, top, bottom = 640, 400, 70, 30, 40, 110
    xs = [x for pts in series.values() for x, _ in pts]
    ys = [y for pts in series.values() for _, y in pts]
    fx = (lambda v: math.log10(v)) if logx else (lambda v: v)
    fy = (lambda v: math.log10(max(v, 1e-12))) if logy else (lambda v: v)
    x0, x1 = fx(min(xs)), fx(max(xs))
    y0, y1 = (fy(min(ys)), fy(max(ys))) if logy else (0.0, max(ys) * 1.05)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1 = y0 + 1

    def px(v: float) -> float:
        return left + (fx(v) - x0) / (x1 - x0) * (w - left - right)

    def py(v: float) -> float:
        return h - bottom - (fy(v) - y0) / (y1 - y0) * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>']
    for x in sorted(set(xs)):
        label = f"{x:,.0f}" if not logx else (f"{x / 1e6:.0f} MB" if x >= 1e6 else f"{x / 1e3:.0f} KB")
        out.append(f'<text x="{px(x):.1f}" y="{h - bottom + 15}" text-anchor="middle">{label}</text>')
    if logy:
        ticks = [10.0 ** e for e in range(math.floor(y0), math.ceil(y1) + 1)]
    else:  # a round step: 1, 2 or 5 times a power of ten, about five ticks
        raw = y1 / 5
        step = min((m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)), key=lambda st: abs(st - raw))
        ticks = [step * i for i in range(int(y1 / step) + 1)]
    for y in ticks:
        if (fy(y) if logy else y) < y0 - 1e-9 or (fy(y) if logy else y) > y1 + 1e-9:
            continue
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{w - right}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 5}" y="{py(y) + 4:.1f}" text-anchor="end">{fmt(y)}</text>')
    out.append(f'<text x="{(left + w - right) / 2}" y="{h - bottom + 32}" text-anchor="middle">{xlabel}</text>')
    out.append(f'<text transform="translate(16,{(top + h - bottom) / 2}) rotate(-90)" text-anchor="middle">{ylabel}</text>')
    for i, (name, pts) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="4,3"' if "control" in name else ""
        out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>' for x, y in pts]
        ly = h - bottom + 48 + 14 * (i % 4)
        lx = left + (i // 4) * 300
        out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 20}" y2="{ly - 4}" stroke="{color}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 26}" y="{ly}">{name}</text>')
    out.append("</svg>")
    path.write_text("\n".join(out) + "\n")
    print(f"== wrote {path}")


def charts(run: Dict[str, Any]) -> None:
    for b in run["benchmarks"]:
        info = b["extra_info"]
        figures = {k: v[-1] for k, v in info.get("figures", {}).items()}
        if info.get("chart") == "arrow_scaling":
            n = info["events"]
            series = {
                f"four logs of {n // 4:,} events": [(t, figures[f"four_logs_{t}"] / 1e6) for t in (1, 2, 3, 4)],
                f"one log of the same {n:,} events": [(t, figures[f"one_log_{t}"] / 1e6) for t in (1, 2, 3, 4)],
                "GIL-free control (hashlib), scaled": [
                    (t, figures["four_logs_1"] / 1e6 * figures[f"control_{t}"] / figures["control_1"]) for t in (1, 2, 3, 4)],
            }
            svg_chart(ROOT / "docs" / "arrow_scaling.svg", "to_arrow throughput by thread count",
                      f"threads ({os.cpu_count()} cores)", "million events / s", series)
        elif info.get("chart") == "patch_scaling":
            series: Dict[str, List[Tuple[float, float]]] = {}
            for key, us in figures.items():
                name, size = key.rsplit(" @ ", 1)
                series.setdefault(name, []).append((float(size), us))
            svg_chart(ROOT / "docs" / "patch_scaling.svg", "JSON Patch: time per apply by document size",
                      "document size (bytes of JSON)", "microseconds per apply (log)", series, logx=True, logy=True)


# -- A/B of two builds ---------------------------------------------------------------------------


def other_python(spec: str, out: Path) -> str:
    """The interpreter of the other build: a python executable as given; a wheel installed
    into a venv of its own (with the dev extras); a git revision built first (a release
    wheel, ``maturin build --release``)."""
    path = Path(spec)
    if path.is_file() and os.access(path, os.X_OK) and path.suffix != ".whl":
        return str(path)
    if not path.is_file():
        rev = subprocess.run(["git", "rev-parse", "--verify", f"{spec}^{{commit}}"], cwd=ROOT, capture_output=True, text=True)
        if rev.returncode != 0:
            sys.exit(f"benches: --ab {spec}: not a python executable, a wheel or a git revision")
        path = build_revision(rev.stdout.strip(), out)
    venv = out / "ab-venv"
    shutil.rmtree(venv, ignore_errors=True)
    uv = shutil.which("uv")
    if uv:
        subprocess.check_call([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
        subprocess.check_call([uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), f"{path}[dev]"])
    else:
        subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
        subprocess.check_call([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{path}[dev]"])
    return str(venv / "bin" / "python")


def build_revision(rev: str, out: Path) -> Path:
    src, wheels = out / "ab-src", out / "ab-wheels"
    subprocess.call(["git", "worktree", "remove", "--force", str(src)], cwd=ROOT, stderr=subprocess.DEVNULL)
    shutil.rmtree(wheels, ignore_errors=True)
    subprocess.check_call(["git", "worktree", "add", "--detach", str(src), rev], cwd=ROOT)
    try:
        maturin = shutil.which("maturin") or sys.exit("benches: --ab REVISION needs maturin")
        env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "target"))  # the dependencies are built once
        print(f"== building {rev[:12]} (maturin build --release)", flush=True)
        subprocess.check_call([maturin, "build", "--release", "--out", str(wheels)], cwd=src, env=env)
    finally:
        subprocess.call(["git", "worktree", "remove", "--force", str(src)], cwd=ROOT)
    return next(wheels.glob("*.whl"))


def ab_report(a: List[Dict[str, Any]], b: List[Dict[str, Any]], other: str) -> None:
    ra, rb = ratios(a), ratios(b)
    print(f"\n== B ({other}) against A (this build), same suite, runs alternating; "
          "> 1: B is faster. By the peers (each build's peer÷ours ratio, B's over A's: the machine's "
          "drift between runs cancels) and by B's own time over A's (per run, medians)")
    print(f"{'workload':44s} {'peer':36s} {'by the peer':>14s}")
    for key in ra:
        if key in rb and "median" in ra[key]:
            by_peer = [y / x for x, y in zip(ra[key]["median"], rb[key]["median"])]
            print(f"{key[0]:44s} {key[1]:36s} {span(by_peer):>14s}")
    own = {}
    for run_a, run_b in zip(a, b):
        times_b = {x["group"]: x["extra_info"].get("interleaved") for x in run_b["benchmarks"]}
        for x in run_a["benchmarks"]:
            ta, tb = x["extra_info"].get("interleaved"), times_b.get(x["group"])
            if ta and tb:
                own.setdefault(x["group"], []).append(median(ta[OURS]["wall"]) / median(tb[OURS]["wall"]))
    print(f"\n{'workload':44s} {'A time ÷ B time':>16s}")
    for group, xs in own.items():
        print(f"{group:44s} {span(xs):>16s}")


# -- instruction counts ---------------------------------------------------------------------------


def callgrind(select: Optional[str], quick: bool, out: Path) -> None:
    """Instructions a call of ours and of each peer: each selected bench runs under valgrind
    twice per implementation (``AGUI_BENCH_COUNT``), calling it once, then once and ``m``
    times more, ``m`` calls being about a third of a second of work: the difference over
    ``m`` is one warm call, whatever the set-up costs, and the process's own variation
    (collections, caches: about a million instructions) is a fraction of a per cent of it."""
    if not shutil.which("valgrind"):
        sys.exit("benches: --callgrind needs valgrind")
    ids = subprocess.run([sys.executable, "-m", "pytest", str(HERE), "-p", "no:cacheprovider", "--collect-only", "-q",
                          *(["-k", select] if select else [])], cwd=ROOT, capture_output=True, text=True).stdout.split()
    ids = [i for i in ids if "::" in i]
    print(f"== {len(ids)} benches under callgrind (two runs per implementation: this takes a while)")
    env = dict(os.environ, AGUI_BENCH_QUICK="1" if quick else "0", PYTHONHASHSEED="0")
    for node in ids:
        impls = _impls(node, env)
        counts = {}
        for impl, seconds in impls:
            more = max(2, round(0.3 / max(seconds, 1e-9)))
            irs = []
            for calls in (1, 1 + more):
                cg = out / "callgrind.out"
                done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", sys.executable, "-m",
                                       "pytest", node, "-p", "no:cacheprovider", "-q", "--benchmark-disable"], cwd=ROOT,
                                      env=dict(env, AGUI_BENCH_COUNT=f"{calls}:{impl}"), capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"benches: {node} under valgrind failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
                irs.append(int(re.search(r"^(?:summary|totals): (\d+)", cg.read_text(), re.M).group(1)))
            counts[impl] = (irs[1] - irs[0]) / more
        ours = counts.pop(OURS)
        print(f"{node}\n    {OURS:36s} {ours:>16,.0f} instructions a call")
        for peer, ir in counts.items():
            print(f"    {peer:36s} {ir:>16,.0f}   {ir / ours:8.2f}× ours")


def _impls(node: str, env: Dict[str, str]) -> List[Tuple[str, float]]:
    """The bench's implementations and the seconds of one call of each (natively)."""
    listing = subprocess.run([sys.executable, "-m", "pytest", node, "-p", "no:cacheprovider", "-q", "-s", "--benchmark-disable"],
                             cwd=ROOT, env=dict(env, AGUI_BENCH_COUNT="list"), capture_output=True, text=True).stdout
    found = [(name, float(seconds)) for seconds, name in re.findall(r"^impl: (\S+) (.+)$", listing, re.M)]
    return found or sys.exit(f"benches: {node} names no implementations (not an interleaved bench?)")


# -- to_arrow's stages, in Rust ---------------------------------------------------------------------


def stages(use_callgrind: bool, quick: bool, out: Path) -> None:
    """``rust/agui-arrow/examples/stages.rs`` on the bench logs (SSE and protobuf): where
    ``to_arrow``'s time goes, stage by stage; with ``--callgrind``, the instructions of two
    passes of the whole decode on one thread (``AGUI_STAGES_ONCE=2``)."""
    os.environ["AGUI_BENCH_QUICK"] = "1" if quick else "0"
    sys.path.insert(0, str(HERE))
    from _data import arrow_logs

    subprocess.check_call(["cargo", "build", "--release", "-p", "agui-arrow", "--example", "stages"], cwd=ROOT)
    exe = ROOT / "target" / "release" / "examples" / "stages"
    for name in ("sse", "protobuf"):
        log = out / f"stages.{name}"
        log.write_bytes(arrow_logs()[name])
        if not use_callgrind:
            print(f"== {name}", flush=True)
            subprocess.check_call([str(exe), str(log)])
            continue
        cg = out / "callgrind.stages.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", str(exe), str(log)],
                       env=dict(os.environ, AGUI_STAGES_ONCE="2"), capture_output=True, check=True)
        total = int(re.search(r"^(?:summary|totals): (\d+)", cg.read_text(), re.M).group(1))
        print(f"== {name}: {total:,} instructions for two passes ({total / 2 / len(arrow_logs()[name]):.1f} a byte; "
              f"callgrind_annotate {cg} for where)")


# -- main ------------------------------------------------------------------------------------------


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benches", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("-k", dest="select", help="run the benches matching this pytest -k expression (prints only)")
    ap.add_argument("--quick", action="store_true", help="1 run, a third of the rounds, 20k-event logs")
    ap.add_argument("--runs", type=int, help="runs of the suite (default 3, --quick 1)")
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "bench", help="where the JSON and report go")
    ap.add_argument("--ab", metavar="OTHER", help="A/B against another build: git revision, wheel or python")
    ap.add_argument("--callgrind", action="store_true", help="instructions a call instead of times (valgrind)")
    ap.add_argument("--stages", action="store_true",
                    help="to_arrow's stages in Rust (rust/agui-arrow/examples/stages.rs); with --callgrind, instructions")
    ap.add_argument("--report", nargs="+", type=Path, metavar="JSON", help="tables from earlier runs' JSON")
    ap.add_argument("--no-write", action="store_true", help="print only, even after the whole suite")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs_n = args.runs or (1 if args.quick else 3)

    if args.stages:
        stages(args.callgrind, args.quick, args.out)
        return 0
    if args.callgrind:
        callgrind(args.select, args.quick, args.out)
        return 0
    if args.ab:
        python_b = other_python(args.ab, args.out)
        a, b = [], []
        for i in range(runs_n):
            a.append(run_suite(sys.executable, args.out / f"ab-a-{i}.json", args.select, args.quick))
            b.append(run_suite(python_b, args.out / f"ab-b-{i}.json", args.select, args.quick))
        ab_report(a, b, args.ab)
        return 0

    if args.report:
        runs = load_runs(args.report)
        quick = any(b["extra_info"].get("quick") for r in runs for b in r["benchmarks"])
        write = False
    else:
        release, what = release_build()
        print(f"== the extension: {what}")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        runs = [run_suite(sys.executable, args.out / f"run-{stamp}-{i}.json", args.select, args.quick)
                for i in range(runs_n)]
        quick = args.quick
        write = not args.select and not args.no_write
        if write and not release:
            print("== not writing README.md and docs/: the speed table comes from a release build of this checkout "
                  "(maturin develop --release)")
            write = False
    data = aggregate(runs, quick)
    full = render(data, readme=False)
    report = args.out / "report.md"
    report.write_text("\n".join(full) + "\n")
    print("\n".join(full))
    print(f"\n== {report}")
    if write:
        DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(f"== wrote {DATA.relative_to(ROOT)}")
        replace_between(README, render(data, readme=True))
        replace_between(FULL, full)
        charts(runs[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
