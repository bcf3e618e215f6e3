"""Shared bench helpers: vector loading and a ratio table after every benchmark run.

Every benchmark sets ``benchmark.group`` and is named ``..._<impl>``; in each group the
implementation whose name contains ``agui_fast`` is ours, the rest are peers measured in the
same run. The table printed at the end gives each peer's median time divided by ours
(> 1 means we are faster) — ratios, not absolute times, are what the README quotes.
"""

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors"
sys.path.insert(0, str(ROOT / "tests"))


def pytest_configure(config):
    """Sub-microsecond benchmarks need many calls per timed round, or the timer's own
    cost (~50-100 ns here) is a large part of every sample and squeezes all ratios
    towards 1. pytest-benchmark calibrates on one cold call, which often alone exceeds
    its default 5 us target, leaving 1 call per round; warm up first and aim for 50 us
    rounds unless the command line says otherwise."""
    opt = config.option
    if getattr(opt, "benchmark_min_time", None) is None:
        return  # pytest-benchmark not active
    if "--benchmark-min-time" not in " ".join(config.invocation_params.args):
        opt.benchmark_min_time = 50e-6
    if "--benchmark-warmup" not in " ".join(config.invocation_params.args):
        opt.benchmark_warmup = True
        opt.benchmark_warmup_iterations = 2000


def load_jsonl(relpath):
    with open(VECTORS / relpath, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    groups = defaultdict(dict)
    for bench in session.benchmarks:
        impl = bench.name.split("[")[0].rsplit("__", 1)[-1]
        groups[bench.group or bench.name][impl] = (bench.stats.median, bench.stats.min)
    tr = terminalreporter
    # Both statistics: the median is robust to outliers, the min to the bursts of a shared
    # machine (noise only ever slows a run down); when they disagree, the run was noisy.
    tr.write_sep("=", "ratios: peer time / agui_fast time, by median (by min); higher = we are faster")
    for group, impls in sorted(groups.items()):
        ours = {k: v for k, v in impls.items() if "agui_fast" in k}
        for our_name, (our_med, our_min) in ours.items():
            for peer, (med, mn) in impls.items():
                if peer in ours:
                    continue
                tr.write_line(
                    f"{group:45s} {our_name:28s} vs {peer:28s} {med / our_med:9.2f}x ({mn / our_min:.2f}x)"
                )
    # Peers timed round by round between our rounds (`_interleave.pedantic_against`).
    rows = [(b, b.extra_info["interleaved"]) for b in session.benchmarks if b.extra_info.get("interleaved")]
    if rows:
        tr.write_sep("=", "interleaved: peer time / agui_fast time, rounds alternating, by median (by min)")
    for bench, peers in rows:
        ours = bench.stats.data
        for peer, times in peers.items():
            tr.write_line(
                f"{bench.group or bench.name:45s} {bench.name.rsplit('__', 1)[-1]:28s} vs {peer:28s} "
                f"{statistics.median(times) / statistics.median(ours):9.2f}x ({min(times) / min(ours):.2f}x)"
            )
