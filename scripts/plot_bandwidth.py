#!/usr/bin/env python3
"""Collective speed against message size from bench-comm CSVs (scripts/bandwidth_curve.sh), in two
panels: bus bandwidth (log-2 size axis, the NVLink line rate marked), where large messages are read,
and time per call (log-log), where small ones are: their latency floor is invisible as bandwidth.
One line per (op, impl, ranks, dtype). Writes a PNG.

usage: scripts/plot_bandwidth.py bandwidth/*.csv [--out bandwidth.png] [--line-rate 478]
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_curves(paths):
    """{(op, impl, nranks, type): [(size, busbw, wrong, time_us)]} over every CSV, sorted by size."""
    curves = defaultdict(list)
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["op"], row["impl"], int(row["nranks"]), row["type"])
                curves[key].append((int(row["size"]), float(row["busbw_gbps"]), int(row["wrong"]),
                                    float(row["time_us"])))
    for points in curves.values():
        points.sort()
    return curves


def size_label(nbytes):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="bench-comm CSV files")
    parser.add_argument("--out", default="bandwidth.png", help="PNG to write")
    parser.add_argument("--line-rate", type=float, default=478.0, help="NVLink line rate to mark, GB/s")
    parser.add_argument("--title", default="Collective bandwidth and latency (nanodist bench-comm)")
    args = parser.parse_args()

    curves = read_curves(args.csv)
    if not curves:
        sys.exit("plot_bandwidth.py: no rows in the given CSVs")
    fig, (ax, lat) = plt.subplots(1, 2, figsize=(16, 6.5), gridspec_kw={"width_ratios": [1.15, 1]})
    colors = {}
    for (op, impl, nranks, dtype), points in sorted(curves.items()):
        color = colors.setdefault((op, nranks, dtype), f"C{len(colors) % 10}")
        sizes = [p[0] for p in points]
        style = "-" if impl == "native" else ("--" if impl == "ring" else ":")
        name = "NCCL" if impl == "native" else f"{impl} (ours)"
        label = f"{op} {name}, {nranks} ranks, {dtype}"
        ax.plot(sizes, [p[1] for p in points], style, marker="o", markersize=3, color=color, label=label)
        lat.plot(sizes, [p[3] for p in points], style, marker="o", markersize=3, color=color, label=label)
        wrong = [p[0] for p in points if p[2] > 0]
        if wrong:
            print(f"warning: {op} {impl} {nranks} ranks has wrong elements at sizes {wrong}", file=sys.stderr)
    all_sizes = sorted({p[0] for v in curves.values() for p in v})
    ticks = all_sizes[::2]

    ax.axhline(args.line_rate, color="black", linestyle=":", linewidth=1)
    # Right-aligned at the large sizes, where the curves approach it from below and no legend sits.
    ax.text(all_sizes[-1], args.line_rate * 1.025, f"NVLink line rate {args.line_rate:g} GB/s", fontsize=9,
            ha="right")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_ylim(0, args.line_rate * 1.15)
    ax.set_title("bus bandwidth: large messages")

    lat.set_yscale("log")
    lat.set_ylabel("time per call (us)")
    lat.set_title("time per call: small messages (latency floor)")
    lat.legend(fontsize=9, loc="upper left")

    for a in (ax, lat):
        a.set_xscale("log", base=2)
        a.set_xticks(ticks)
        a.set_xticklabels([size_label(t) for t in ticks], rotation=45)
        a.set_xlabel("message size (bytes)")
        a.grid(True, which="major", alpha=0.3)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=150)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
