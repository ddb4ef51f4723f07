#!/usr/bin/env python3
"""The bar tables of the collectives work (issue 29) from the CSVs of scripts/gpu_collectives.sh:
the one-shot all-reduces (oneshot: pull, push: flags in the data) against NCCL from 8 B to 256 KB
(bar: at most 0.7x NCCL's time; each variant's worst ratio, and the faster one's), auto against
the best of its choices from 8 B to 1 GB (bar: at most 1.05x), our reduce-scatter and all-gather
bus bandwidth against NCCL's from 64 MB (bar: at least 0.9x), each for every timing found (eager,
graph), and the plan against measured steps (check_plan.sh's TSV; bar 0.8..1.2). Prints Markdown.

usage: scripts/collective_bars.py DIR   (reads DIR/*.csv and DIR/plan_vs_measured.tsv)
"""
import csv
import glob
import os
import sys

CHOICES = ("oneshot", "twoshot", "ring", "native", "push")
ONE_SHOTS = ("oneshot", "push")


def read_rows(folder):
    """{(op, impl, timing): {size: row}} over every bench-comm CSV in the folder."""
    curves = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames or "time_us" not in reader.fieldnames:
                continue
            for row in reader:
                key = (row["op"], row["impl"], row.get("timing") or "eager")
                curves.setdefault(key, {})[int(row["size"])] = row
    return curves


def human(size):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}B"
    return f"{size} B"


def verdict(ok):
    return "met" if ok else "**not met**"


def timings(curves):
    return sorted({t for (_, _, t) in curves})


def one_shot_table(curves, out):
    for timing in timings(curves):
        nccl = curves.get(("allreduce", "native", timing), {})
        ours = {v: curves.get(("allreduce", v, timing), {}) for v in ONE_SHOTS}
        sizes = sorted({s for v in ONE_SHOTS for s in ours[v] if s in nccl and s <= 256 << 10})
        if not sizes:
            continue
        out.append(f"\n### One-shot (pull) and push vs NCCL all-reduce, {timing} (bar: <= 0.70x at every size 8 B..256 KB)\n")
        out.append("| size | NCCL (us) | one-shot (us) | push (us) | one-shot / NCCL | push / NCCL | #wrong |")
        out.append("|---|---|---|---|---|---|---|")
        worst = {v: 0.0 for v in ONE_SHOTS}
        worst_faster = 0.0
        for s in sizes:
            a = float(nccl[s]["time_us"])
            times = {v: float(ours[v][s]["time_us"]) for v in ONE_SHOTS if s in ours[v]}
            for v, t in times.items():
                worst[v] = max(worst[v], t / a)
            worst_faster = max(worst_faster, min(times.values()) / a)
            wrong = int(nccl[s]["wrong"]) + sum(int(ours[v][s]["wrong"]) for v in times)
            cells = [f"{times[v]:.2f}" if v in times else "-" for v in ONE_SHOTS]
            ratios = [f"{times[v] / a:.2f}" if v in times else "-" for v in ONE_SHOTS]
            out.append(f"| {human(s)} | {a:.2f} | {' | '.join(cells)} | {' | '.join(ratios)} | {wrong} |")
        # A variant missing at some size (no peer memory, above its area) cannot meet the bar there.
        parts = []
        for v in ONE_SHOTS:
            if not ours[v]:
                continue
            complete = all(s in ours[v] for s in sizes)
            parts.append(f"{'one-shot' if v == 'oneshot' else v} {worst[v]:.2f} ({verdict(worst[v] <= 0.70 and complete)}"
                         + ("" if complete else ", not measured at every size") + ")")
        out.append(f"\nWorst ratio: {'; '.join(parts)}; the faster of the two at each size: {worst_faster:.2f}: "
                   f"{verdict(worst_faster <= 0.70)}.")


def auto_table(curves, out):
    for timing in timings(curves):
        auto = curves.get(("allreduce", "auto", timing), {})
        if not auto:
            continue
        out.append(f"\n### auto vs the best of one-shot, two-shot, ring, NCCL, push, {timing} (bar: <= 1.05x at every size)\n")
        out.append("| size | " + " | ".join(CHOICES) + " | auto | best | auto / best |")
        out.append("|---|" + "---|" * (len(CHOICES) + 3))
        worst, worst_size = 0.0, 0
        for s in sorted(auto):
            times = {c: float(curves[("allreduce", c, timing)][s]["time_us"])
                     for c in CHOICES if s in curves.get(("allreduce", c, timing), {})}
            if not times:
                continue
            best = min(times, key=times.get)
            ratio = float(auto[s]["time_us"]) / times[best]
            if ratio > worst:
                worst, worst_size = ratio, s
            cells = " | ".join(f"{times[c]:.2f}" if c in times else "-" for c in CHOICES)
            out.append(f"| {human(s)} | {cells} | {float(auto[s]['time_us']):.2f} | {best} | {ratio:.3f} |")
        out.append(f"\nWorst auto / best {worst:.3f} at {human(worst_size)}: {verdict(worst <= 1.05)}.")


def busbw_table(curves, out):
    for timing in timings(curves):
        for op, impl in sorted({(o, i) for (o, i, t) in curves if t == timing and i.startswith("ring")}):
            if op not in ("reducescatter", "allgather"):
                continue
            ring = curves[(op, impl, timing)]
            nccl = curves.get((op, "native", timing), {})
            sizes = [s for s in sorted(ring) if s in nccl and s >= 64 << 20]
            if not sizes:
                continue
            out.append(f"\n### {op} bus bandwidth, ours ({impl}) vs NCCL, {timing} (bar: >= 0.90x from 64 MB)\n")
            out.append(f"| size | NCCL busbw (GB/s) | {impl} busbw (GB/s) | {impl} / NCCL |")
            out.append("|---|---|---|---|")
            worst = float("inf")
            for s in sizes:
                a, b = float(nccl[s]["busbw_gbps"]), float(ring[s]["busbw_gbps"])
                worst = min(worst, b / a)
                out.append(f"| {human(s)} | {a:.1f} | {b:.1f} | {b / a:.3f} |")
            out.append(f"\nWorst ratio {worst:.3f}: {verdict(worst >= 0.90)}.")


def plan_table(folder, out):
    path = os.path.join(folder, "plan_vs_measured.tsv")
    if not os.path.exists(path):
        return
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows:
        return
    out.append("\n### nanodist plan vs measured steps (bar: predicted / measured within 0.8..1.2)\n")
    out.append("| run | exposed: plan (ms) | measured (ms) | ratio | all comm: plan (ms) | measured (ms) | ratio |")
    out.append("|---|---|---|---|---|---|---|")
    for r in rows:
        out.append(f"| {r['run']} | {r['predicted_exposed_ms']} | {r['measured_exposed_ms']} | {r['exposed_ratio']} | "
                   f"{r['predicted_comm_ms']} | {r['measured_comm_ms']} | {r['comm_ratio']} |")


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    curves = read_rows(sys.argv[1])
    out = ["## Collective bars"]
    one_shot_table(curves, out)
    auto_table(curves, out)
    busbw_table(curves, out)
    plan_table(sys.argv[1], out)
    print("\n".join(out))


if __name__ == "__main__":
    main()
