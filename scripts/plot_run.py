#!/usr/bin/env python3
"""Training curves of one or more runs in one PNG: train and val loss, learning rate, gradient norm
and tokens/s against step, read from each run's metrics.jsonl (train/metrics.cpp: step records
{"step","loss","lr","grad_norm","ms","tok_per_s",...}, eval records {"step","val_loss","train_loss",
"elapsed_s"}, and a final {"final":true,...}). Runs are overlaid, one colour each, labelled by folder.
With --heatmap PNG, also a layer x step heat map of each per-layer statistic of one run (its
{"step","layer_stats":{...}} records, written by `nanodist train --layer-stats N`), or with --against
CONTROL the log10 ratio of each to the control run's at the same steps (blue lower, red higher).

usage: scripts/plot_run.py OUT_DIR_OR_METRICS_JSONL [...] [--out run.png] [--smooth 0.9] [--title T]
                           [--heatmap layers.png [--against CONTROL_RUN]]
Needs matplotlib (pip install matplotlib).
"""
import argparse
import json
import math
import os
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot_run.py: needs matplotlib (pip install matplotlib)")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def metrics_path(arg):
    path = os.path.join(arg, "metrics.jsonl") if os.path.isdir(arg) else arg
    if not os.path.isfile(path):
        sys.exit(f"plot_run.py: no metrics file {path}")
    return path


def number(value):
    """JSON null (a non-finite value in the run) becomes NaN, which matplotlib leaves as a gap."""
    return float("nan") if value is None else float(value)


def drop_from(columns, step):
    """Drops the records at `step` and after: a resumed attempt is about to log them again."""
    while columns["step"] and columns["step"][-1] >= step:
        for values in columns.values():
            values.pop()


def read_run(path):
    """-> {"steps": {column: [..]}, "evals": {column: [..]}} by step. A resumed run appends to the
    file from its checkpoint's step on, after the records its interrupted attempt wrote past that
    step: a step record replaces every record at or after its step, an eval record the evals at or
    after its step, so each step is plotted once, from the attempt that finished it."""
    steps = {k: [] for k in ("step", "loss", "lr", "grad_norm", "tok_per_s")}
    evals = {k: [] for k in ("step", "val_loss", "train_loss")}
    with open(path) as f:
        for number_of_line, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_run.py: {path}:{number_of_line}: not JSON ({e.msg})")
            if record.get("final"):
                continue
            target = evals if "val_loss" in record else steps if "loss" in record else None
            if target is None or "step" not in record:
                continue
            step = number(record["step"])
            drop_from(target, step)
            if target is steps:
                drop_from(evals, step)
            for key in target:
                target[key].append(number(record.get(key)))
    if not steps["step"] and not evals["step"]:
        sys.exit(f"plot_run.py: {path} has no step or eval records")
    return {"steps": steps, "evals": evals}


# The heat maps: (title, how to read a block's value, log colour scale).
HEATMAP_STATS = [
    ("block gradient norm", lambda b, t: b["grad_norm"], True),
    ("update / weight (median of the block's tensors)", lambda b, t: median(t, "update_ratio"), True),
    ("residual stream RMS", lambda b, t: b["resid_rms"], True),
    ("attention output RMS", lambda b, t: b["attn_rms"], True),
    ("MLP output RMS", lambda b, t: b["mlp_rms"], True),
    ("GELU inputs below -3 (share)", lambda b, t: b["gelu_saturated"], False),
    ("attention entropy, mean over heads (nats)", lambda b, t: mean(b["attn_entropy"]), False),
    ("gradient values flushed to 0 in fp16 (share)", lambda b, t: median(t, "grad_underflow_fp16"), False),
]


def mean(values):
    values = [number(v) for v in values]
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else float("nan")


def median(tensors, key):
    values = sorted(number(t[key]) for t in tensors if t.get(key) is not None)
    return values[len(values) // 2] if values else float("nan")


def read_layer_stats(path):
    """-> (steps, layers, {title: rows[layer][step index]}) from the run's layer_stats records (a
    resumed run's later record of a step replaces the earlier ones)."""
    records = []
    with open(path) as f:
        for line in f:
            if '"layer_stats"' not in line:
                continue
            record = json.loads(line)
            while records and records[-1]["step"] >= record["step"]:
                records.pop()
            records.append(record)
    if not records:
        sys.exit(f"plot_run.py: {path} has no layer_stats records (train with --layer-stats N)")
    steps = [r["step"] for r in records]
    layers = len(records[0]["layer_stats"]["blocks"])
    grids = {}
    for title, value, _ in HEATMAP_STATS:
        grid = [[float("nan")] * len(records) for _ in range(layers)]
        for j, r in enumerate(records):
            tensors = r["layer_stats"]["tensors"]
            for b in r["layer_stats"]["blocks"]:
                prefix = f"transformer.h.{b['layer']}."
                own = [t for name, t in tensors.items() if name.startswith(prefix)]
                grid[b["layer"]][j] = number(value(b, own))
        grids[title] = grid
    return steps, layers, grids


def against(path, control_path):
    """The run's grids divided by the control's at the statistics steps both recorded: -> (steps,
    layers, {title: log10(run / control)}) (ratios to a zero or non-finite value are gaps)."""
    import numpy as np

    steps, layers, grids = read_layer_stats(path)
    control_steps, _, control = read_layer_stats(control_path)
    common = [s for s in steps if s in control_steps]
    if not common:
        sys.exit(f"plot_run.py: {path} and {control_path} have no statistics step in common")
    mine = [steps.index(s) for s in common]
    theirs = [control_steps.index(s) for s in common]
    ratios = {}
    for title, _, _ in HEATMAP_STATS:
        a = np.array(grids[title], dtype=float)[:, mine]
        b = np.array(control[title], dtype=float)[:layers, theirs]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios[title] = np.where((a > 0) & (b > 0), np.log10(np.abs(a / b)), np.nan)
    return common, layers, ratios


def draw_heatmaps(path, out, title, control_path=None):
    from matplotlib.colors import LogNorm
    import numpy as np

    if control_path:
        steps, layers, grids = against(path, control_path)
    else:
        steps, layers, grids = read_layer_stats(path)
    fig, axes = plt.subplots(2, 4, figsize=(18, 7.5))
    for ax, (name, _, log) in zip(axes.flat, HEATMAP_STATS):
        grid = np.array(grids[name], dtype=float)
        if control_path:
            # log10(run / control): 0 = the same, +-1 = the 10x of the ablation report.
            image = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", origin="lower", interpolation="nearest",
                              cmap="RdBu_r", vmin=-2, vmax=2, extent=(steps[0] - 0.5, steps[-1] + 0.5, -0.5, layers - 0.5))
            fig.colorbar(image, ax=ax, label="log10(run / control)")
            ax.set_title(name, fontsize=9)
            ax.set_xlabel("step")
            ax.set_ylabel("layer")
            continue
        finite = grid[np.isfinite(grid) & (grid > 0)] if log else grid[np.isfinite(grid)]
        norm = LogNorm(vmin=finite.min(), vmax=max(finite.max(), finite.min() * 1.0001)) if log and finite.size else None
        image = ax.imshow(np.ma.masked_invalid(np.where(grid > 0, grid, np.nan) if log else grid), aspect="auto",
                          origin="lower", interpolation="nearest", cmap="viridis", norm=norm,
                          extent=(steps[0] - 0.5, steps[-1] + 0.5, -0.5, layers - 0.5))
        fig.colorbar(image, ax=ax)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("step")
        ax.set_ylabel("layer")
    fig.suptitle(title or f"per-layer statistics: {path}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def run_labels(paths):
    """The folder of each metrics file, with as many parent folders as it takes to tell runs apart
    (ablate/no-clip/seed1 and ablate/control/seed1 both end in seed1)."""
    parts = [os.path.normpath(os.path.abspath(os.path.dirname(p))).split(os.sep) for p in paths]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{label} ({i})" for i, label in enumerate(labels)]


def smoothed(values, factor):
    """Exponential moving average, debiased as in TensorBoard; NaNs pass through."""
    if factor <= 0:
        return values
    out, average, weight = [], 0.0, 0.0
    for v in values:
        if math.isnan(v):
            out.append(v)
            continue
        average = factor * average + (1 - factor) * v
        weight = factor * weight + (1 - factor)
        out.append(average / weight)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="run output folders (with metrics.jsonl) or metrics.jsonl files")
    parser.add_argument("--out", default="run.png", help="PNG to write")
    parser.add_argument("--smooth", type=float, default=0.0, help="EMA factor for the train loss, in [0, 1)")
    parser.add_argument("--title", default=None)
    parser.add_argument("--heatmap", default=None, help="also write the layer x step heat maps of one run here")
    parser.add_argument("--against", default=None,
                        help="with --heatmap: draw log10(run / this control run) instead of the run's values")
    args = parser.parse_args()
    if not 0 <= args.smooth < 1:
        sys.exit(f"plot_run.py: --smooth must be in [0, 1), got {args.smooth}")

    paths = [metrics_path(r) for r in args.runs]
    if args.heatmap:
        if len(paths) != 1:
            sys.exit("plot_run.py: --heatmap draws one run; give one run")
        draw_heatmaps(paths[0], args.heatmap, args.title, metrics_path(args.against) if args.against else None)
    runs = [read_run(p) for p in paths]
    labels = run_labels(paths)
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    loss_ax, lr_ax, norm_ax, speed_ax = axes.flat
    for i, (run, label) in enumerate(zip(runs, labels)):
        color = f"C{i % 10}"
        s, e = run["steps"], run["evals"]
        if s["step"]:
            loss_ax.plot(s["step"], smoothed(s["loss"], args.smooth), color=color, linewidth=1, alpha=0.6,
                         label=f"{label} train (step)")
            lr_ax.plot(s["step"], s["lr"], color=color, label=label)
            norm_ax.plot(s["step"], s["grad_norm"], color=color, linewidth=1, label=label)
            speed_ax.plot(s["step"], s["tok_per_s"], color=color, linewidth=1, label=label)
        if e["step"]:
            loss_ax.plot(e["step"], e["val_loss"], "o-", color=color, markersize=4, linewidth=2,
                         label=f"{label} val")
    loss_ax.set_ylabel("loss")
    loss_ax.set_title("train loss (logged steps) and val loss (evals)")
    lr_ax.set_ylabel("learning rate")
    lr_ax.set_title("learning rate")
    lr_ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    norm_ax.set_ylabel("global gradient norm (before clipping)")
    norm_ax.set_title("gradient norm")
    norm_ax.set_yscale("log")
    speed_ax.set_ylabel("tokens / s (all ranks)")
    speed_ax.set_title("throughput")
    speed_ax.set_ylim(bottom=0)
    for ax in axes.flat:
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
    loss_ax.legend(fontsize=8)
    if len(runs) > 1:
        speed_ax.legend(fontsize=8)
    fig.suptitle(args.title or ("run " + labels[0] if len(runs) == 1 else f"{len(runs)} runs"))
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
