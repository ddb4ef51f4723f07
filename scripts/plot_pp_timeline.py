#!/usr/bin/env python3
"""Draws a pipeline step's timeline: one row per pipeline rank, a box per pass (forward F, backward
B, input-gradient Bi, weight-gradient W) from the spans that `nanodist train --pp-timeline DIR`
writes (DIR/timeline_rank<R>.json, the last step of each rank). The white gaps
are the bubble and the waits for transfers. Only the ranks of tp rank 0 and dp rank 0 are drawn
(the first of each pipeline rank found).

usage: scripts/plot_pp_timeline.py DIR [--out timeline.png] [--title TEXT]
"""
import argparse
import glob
import json
import os
import sys

COLORS = {"F": "#4c72b0", "B": "#55a868", "Bi": "#55a868", "W": "#dd8452"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--out", default=None, help="PNG to write (default DIR/timeline.png)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_pp_timeline.py: matplotlib is not installed (pip install matplotlib)", file=sys.stderr)
        return 77
    by_stage = {}
    for path in sorted(glob.glob(os.path.join(args.dir, "timeline_rank*.json"))):
        with open(path) as f:
            t = json.load(f)
        by_stage.setdefault(t["pp_rank"], t)
    if not by_stage:
        print(f"plot_pp_timeline.py: no timeline_rank*.json in {args.dir}", file=sys.stderr)
        return 1
    stages = sorted(by_stage)
    end = max(t["step_ms"] for t in by_stage.values())
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(stages) + 1.2))
    for row, stage in enumerate(stages):
        y = len(stages) - 1 - row
        for s in by_stage[stage]["spans"]:
            width = s["end"] - s["start"]
            ax.barh(y, width, left=s["start"], color=COLORS.get(s["op"], "gray"), edgecolor="black", linewidth=0.3)
            label = f'{s["micro"]}' if by_stage[stage]["virtual"] == 1 else f'{s["micro"]}.{s["chunk"]}'
            if width > end / 80:
                ax.text(s["start"] + width / 2, y, label, ha="center", va="center", fontsize=6, color="white")
    first = by_stage[stages[0]]
    ax.set_yticks(range(len(stages)))
    ax.set_yticklabels([f"stage {s}" for s in reversed(stages)])
    ax.set_xlabel("ms since the step's start")
    ax.set_xlim(0, end)
    title = args.title or f'{first["schedule"]}: pp {first["stages"]}, {first["micro"]} micro-batches, step {end:.0f} ms'
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ("#4c72b0", "#55a868", "#dd8452")]
    ax.legend(handles, ["forward", "backward (input)", "weight gradient"], loc="upper right", fontsize=7)
    fig.tight_layout()
    out = args.out or os.path.join(args.dir, "timeline.png")
    fig.savefig(out, dpi=120)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
