#!/usr/bin/env python3
"""Collective speed against message size from bench-comm CSVs (scripts/bandwidth_curve.sh): one row
of two panels per collective (all-reduce, reduce-scatter, all-gather, broadcast, all-to-all,
sendrecv), bus bandwidth (log-2 size axis, the NVLink line rate marked), where large messages are
read, and time per call (log-log), where small ones are. One line per (impl, ranks, dtype): NCCL
solid, our ring dashed, the peer-memory all-reduces dotted. A fit table (`bench-comm --fit-table`)
adds each alpha-beta model as a thin line on the time panels; a p2p-matrix CSV adds two heat maps
(latency, bandwidth; row = sender). Files are told apart by their header. Writes a PNG.

usage: scripts/plot_bandwidth.py bandwidth/*.csv [fits.csv] [p2p.csv] [--out bandwidth.png] [--line-rate 478]
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OP_ORDER = ["allreduce", "reducescatter", "allgather", "broadcast", "alltoall", "sendrecv"]
STYLES = {"native": "-", "ring": "--", "hierarchical": "--", "oneshot": ":", "twoshot": ":", "push": ":", "peer": "-.",
          "auto": "-."}


def read_files(paths):
    """(curves, fits, cells): curves {(op, impl, nranks, type): [(size, busbw, wrong, time_us)]} sorted by
    size; fits [(op, impl, nranks, alpha_us, beta_us_per_byte, rms, min_bytes, max_bytes)], a row per
    piece of a piecewise fit (0, 0: one line for every size, as older tables); p2p cells [(nranks, src, dst,
    latency_us, bw_gbps)]."""
    curves, fits, cells = defaultdict(list), [], []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames or []
            if "alpha_us" in fields:
                # Fit tables by position: rows of 8 fields (older) and 10 (with the piece's range) may
                # share a file, and appended tables repeat the header.
                f.seek(0)
                for fields_of_row in csv.reader(f):
                    if len(fields_of_row) < 8 or fields_of_row[0] == "op":
                        continue
                    lo, hi = (int(fields_of_row[8]), int(fields_of_row[9])) if len(fields_of_row) >= 10 else (0, 0)
                    fits.append((fields_of_row[0], fields_of_row[1], int(fields_of_row[2]), float(fields_of_row[3]), float(fields_of_row[4]),
                                 float(fields_of_row[5]), lo, hi))
                continue
            for row in reader:
                if "src" in fields:
                    cells.append((int(row["nranks"]), int(row["src"]), int(row["dst"]), float(row["latency_us"]),
                                  float(row["bw_gbps"])))
                else:
                    # A CUDA-graph timed curve (bench-comm --timing graph) is a curve of its own.
                    impl = row["impl"] + (" graph" if row.get("timing") == "graph" else "")
                    key = (row["op"], impl, int(row["nranks"]), row["type"])
                    curves[key].append((int(row["size"]), float(row["busbw_gbps"]), int(row["wrong"]),
                                        float(row["time_us"])))
    for points in curves.values():
        points.sort()
    return curves, fits, cells


def size_label(nbytes):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale}{unit}"
    return str(nbytes)


def impl_label(impl):
    base, _, timing = impl.partition(" ")
    return ("NCCL" if base == "native" else f"{base} (ours)") + (f", {timing}" if timing else "")


def draw_curves(axes_rows, ops, curves, fits, line_rate):
    colors = {}
    for row, op in zip(axes_rows, ops):
        bw, lat = row
        sizes_seen = set()
        for (cop, impl, nranks, dtype), points in sorted(curves.items()):
            if cop != op:
                continue
            color = colors.setdefault((impl, nranks, dtype), f"C{len(colors) % 10}")
            sizes = [p[0] for p in points]
            sizes_seen.update(sizes)
            label = f"{impl_label(impl)}, {nranks} ranks, {dtype}"
            style = STYLES.get(impl.partition(" ")[0], "-.")
            bw.plot(sizes, [p[1] for p in points], style, marker="o", markersize=3, color=color, label=label)
            lat.plot(sizes, [p[3] for p in points], style, marker="o", markersize=3, color=color, label=label)
            wrong = [p[0] for p in points if p[2] > 0]
            if wrong:
                print(f"warning: {op} {impl} {nranks} ranks has wrong elements at sizes {wrong}", file=sys.stderr)
            pieces = [f for f in fits if f[:3] == (op, impl, nranks)]
            for fop, fimpl, fn, alpha, beta, rms, lo, hi in pieces:
                span = [s for s in sizes if hi == 0 or lo <= s <= hi]
                label = (f"fit {impl}: {alpha:.1f} us + bytes / {1e-3 / beta if beta else float('inf'):.0f}"
                         f" GB/s (rms {100 * rms:.0f}%)") if len(pieces) == 1 else \
                    f"fit {impl}: {len(pieces)} pieces" if lo == pieces[0][6] else None
                lat.plot(span, [alpha + beta * s for s in span], "-", linewidth=0.8, alpha=0.6, color=color,
                         label=label)
        if not sizes_seen:
            continue
        all_sizes = sorted(sizes_seen)
        ticks = all_sizes[::max(1, len(all_sizes) // 14)]
        bw.axhline(line_rate, color="black", linestyle=":", linewidth=1)
        bw.text(all_sizes[-1], line_rate * 1.025, f"NVLink line rate {line_rate:g} GB/s", fontsize=8, ha="right")
        bw.set_ylabel(f"{op}\nbus bandwidth (GB/s)")
        bw.set_ylim(0, line_rate * 1.15)
        lat.set_yscale("log")
        lat.set_ylabel("time per call (us)")
        lat.legend(fontsize=7, loc="upper left")
        for a in (bw, lat):
            a.set_xscale("log", base=2)
            a.set_xticks(ticks)
            a.set_xticklabels([size_label(t) for t in ticks], rotation=45)
            a.grid(True, which="major", alpha=0.3)
    axes_rows[0][0].set_title("bus bandwidth: large messages")
    axes_rows[0][1].set_title("time per call: small messages (latency floor)")
    axes_rows[len(ops) - 1][0].set_xlabel("message size (bytes)")
    axes_rows[len(ops) - 1][1].set_xlabel("message size (bytes)")


def draw_matrix(row, cells):
    n = max(c[0] for c in cells)
    for ax, index, title in ((row[0], 3, "point-to-point latency (us)"), (row[1], 4, "point-to-point bandwidth (GB/s)")):
        grid = [[float("nan")] * n for _ in range(n)]
        for c in cells:
            grid[c[1]][c[2]] = c[index]
        image = ax.imshow(grid, cmap="viridis")
        for s in range(n):
            for d in range(n):
                if s != d and grid[s][d] == grid[s][d]:
                    ax.text(d, s, f"{grid[s][d]:.1f}", ha="center", va="center", color="white", fontsize=8)
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xlabel("receiver")
        ax.set_ylabel("sender")
        ax.set_title(title)
        plt.colorbar(image, ax=ax)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="bench-comm CSV files (curves, fit tables, p2p matrices)")
    parser.add_argument("--out", default="bandwidth.png", help="PNG to write")
    parser.add_argument("--line-rate", type=float, default=478.0, help="NVLink line rate to mark, GB/s")
    parser.add_argument("--title", default="Collective bandwidth and latency (nanodist bench-comm)")
    args = parser.parse_args()

    curves, fits, cells = read_files(args.csv)
    if not curves and not cells:
        sys.exit("plot_bandwidth.py: no rows in the given CSVs")
    ops = [op for op in OP_ORDER if any(k[0] == op for k in curves)]
    ops += sorted({k[0] for k in curves} - set(ops))
    rows = len(ops) + (1 if cells else 0)
    fig, axes = plt.subplots(rows, 2, figsize=(16, 5.2 * rows), gridspec_kw={"width_ratios": [1.15, 1]},
                             squeeze=False)
    if ops:
        draw_curves(axes[:len(ops)], ops, curves, fits, args.line_rate)
    if cells:
        draw_matrix(axes[len(ops)], cells)
    fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
