"""How patch cost scales with document size (1 KB -> 10 MB): agui_fast.patch vs jsonpatch.

    python benches/scaling_patch.py            # prints a table, writes docs/patch_scaling.csv
    python benches/scaling_patch.py --plot     # also writes docs/patch_scaling.png (matplotlib)

The state grows in width (more todo items and documents); the patches touch fixed-size
parts of it, except "append to the growing list", which copy mode has to shallow-copy.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import sys
import timeit

import jsonpatch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _patch_data import APPEND_BIG_LIST, ONE_OP, THREE_OPS, make_state  # noqa: E402

from agui_fast.patch import apply_patch  # noqa: E402

DOCS = os.path.join(os.path.dirname(HERE), "docs")
SIZES = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]


def best_us(fn, budget=0.3, max_repeat=7):
    one = timeit.timeit(fn, number=1)
    number = max(1, int(budget / max_repeat / max(one, 1e-9)))
    repeat = max(2, min(max_repeat, int(budget / max(one * number, 1e-9))))
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main(plot: bool) -> None:
    rows = []
    for size in SIZES:
        state = make_state(size)
        real = len(json.dumps(state))
        mutable_ours, mutable_theirs = copy.deepcopy(state), copy.deepcopy(state)
        row = {
            "bytes": real,
            "agui_fast copy, 3 ops": best_us(lambda: apply_patch(state, THREE_OPS)),
            "agui_fast in place, 1 op": best_us(lambda: apply_patch(mutable_ours, ONE_OP, in_place=True)),
            "agui_fast copy, append to the growing list": best_us(lambda: apply_patch(state, APPEND_BIG_LIST)),
            "jsonpatch copy, 3 ops": best_us(lambda: jsonpatch.apply_patch(state, THREE_OPS), budget=2.0),
            "jsonpatch in place, 1 op": best_us(lambda: jsonpatch.apply_patch(mutable_theirs, ONE_OP, in_place=True)),
        }
        rows.append(row)
        print(" | ".join(f"{k}: {v:,.2f}" if k != "bytes" else f"{v:>10,} B" for k, v in row.items()), flush=True)

    os.makedirs(DOCS, exist_ok=True)
    with open(os.path.join(DOCS, "patch_scaling.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()})

    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 5))
        xs = [r["bytes"] for r in rows]
        styles = {
            "agui_fast copy, 3 ops": ("tab:blue", "-", "o"),
            "agui_fast in place, 1 op": ("tab:green", "-", "s"),
            "agui_fast copy, append to the growing list": ("tab:cyan", ":", "^"),
            "jsonpatch copy, 3 ops": ("tab:red", "-", "o"),
            "jsonpatch in place, 1 op": ("tab:orange", "-", "s"),
        }
        for key, (color, ls, marker) in styles.items():
            ax.plot(xs, [r[key] for r in rows], color=color, linestyle=ls, marker=marker, label=key)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("document size (bytes of JSON)")
        ax.set_ylabel("time per apply (microseconds, log)")
        ax.set_title("JSON Patch cost vs document size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(DOCS, "patch_scaling.png"), dpi=110)
        print("wrote docs/patch_scaling.png")


if __name__ == "__main__":
    main("--plot" in sys.argv)
