"""The bench suite's pytest set-up: the helpers importable by every bench file, and a ratio
table after every run (``python -m benches`` writes the README's from the JSON instead).

Each bench is one test per workload: ours timed by pytest-benchmark, its peers interleaved
with it round by round (``_interleave.against``), every time in ``extra_info``.
"""

import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _interleave import OURS  # noqa: E402


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    tr = terminalreporter
    # Both statistics: the median is robust to outliers, the min to the bursts of a shared
    # machine (noise only ever slows a run down); when they disagree, the run was noisy.
    tr.write_sep("=", f"peer time / {OURS} time, interleaved, by median (by min): > 1 means faster")
    for bench in session.benchmarks:
        times = bench.extra_info.get("interleaved")
        if not times:
            continue
        ours = times[OURS]["wall"]
        for peer, t in times.items():
            if peer == OURS or not t["wall"]:
                continue
            tr.write_line(
                f"{bench.group or bench.name:44s} vs {peer:34s} "
                f"{statistics.median(t['wall']) / statistics.median(ours):9.2f}x ({min(t['wall']) / min(ours):.2f}x)"
            )
