"""``agui_fast.report`` on 100k-event logs, against the engine's own replay of the same log,
interleaved in one process, wall and CPU time, and the page's size:

    python benches/cpu_report.py [rounds]

Logs: the generated run of ``agui_fast._bench`` (runs of streamed text, a tool call, a state
snapshot and delta) and that of ``_stream_log.py`` (long text streams, tool calls,
reasoning, a 2,000-key state under many small deltas). Cases: the page (``render``: build
and write the HTML), ``replay_log`` (the whole log in Rust) and ``replay`` (an
``EventApplier`` loop in Rust over the same events). The ratios say what the page costs
over replaying the log.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _interleave import interleaved, ratio_line  # noqa: E402
from _stream_log import generate_events, to_sse  # noqa: E402

from agui_fast import report, stream  # noqa: E402
from agui_fast._bench import run_events, sse_log  # noqa: E402
from agui_fast.logs import iter_log  # noqa: E402


def main(rounds: int) -> None:
    for name, log in (("_bench.run_events", sse_log(run_events(100_000))), ("_stream_log", to_sse(generate_events(100_000)))):
        events = list(iter_log(log, raw="bytes"))
        page = report.render(log)
        print(f"\n{name}: {len(events):,} events, log {len(log) / 1e6:.1f} MB, page {len(page.encode()) / 1e6:.1f} MB")
        stats = interleaved({
            "report.render": lambda: report.render(log),
            "stream.replay_log": lambda: stream.replay_log(log),
            "stream.replay (bytes)": lambda: stream.replay(events),
        }, rounds)
        print(ratio_line("replay_log / render", stats["stream.replay_log"], stats["report.render"]))
        print(ratio_line("replay / render", stats["stream.replay (bytes)"], stats["report.render"]))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
