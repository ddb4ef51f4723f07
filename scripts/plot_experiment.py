#!/usr/bin/env python3
"""Plots of a nanodist experiment directory (PNG files written into it, or into --out-dir):

  ablation (OUT/report.json from `nanodist ablate`): one figure per variant, its training loss
    and gradient norm per step over the control's (every seed), titled with its verdict;
    ablation_<variant>.png.
  sweep (OUT/fit.json from `nanodist sweep`): final val loss against non-embedding parameters
    on log-log axes, both fitted laws, the points that break the law marked; sweep_fit.png.

usage: scripts/plot_experiment.py OUT [--out-dir DIR] [--no-install]
matplotlib is installed with pip when missing, unless --no-install (then exit 77: skipped).
"""
import argparse
import json
import math
import os
import subprocess
import sys

SKIPPED = 77  # ctest SKIP_RETURN_CODE


def import_pyplot(install):
    try:
        import matplotlib
    except ImportError:
        if not install:
            print("plot_experiment: matplotlib is missing; skipped", file=sys.stderr)
            sys.exit(SKIPPED)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"])
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def read_metrics(path):
    """(steps, losses, grad_norms) of the step records of one run's metrics.jsonl, where a resumed
    attempt's records replace the interrupted one's (as experiments/run_metrics.cpp reads them)."""
    records = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                break  # a record cut short by a crash
            if "step" in rec and "loss" in rec:
                for step in [s for s in records if s >= rec["step"]]:
                    del records[step]
                records[rec["step"]] = rec
    steps = sorted(records)
    nan = float("nan")
    losses = [records[s]["loss"] if records[s]["loss"] is not None else nan for s in steps]
    norms = [records[s]["grad_norm"] if records[s].get("grad_norm") is not None else nan for s in steps]
    return steps, losses, norms


def plot_ablation(plt, root, report, out_dir):
    variants = report["variants"]
    control = variants[0]
    written = []

    def draw(ax_loss, ax_norm, variant, color, label):
        for k, run in enumerate(variant["runs"]):
            steps, losses, norms = read_metrics(os.path.join(root, run["dir"], "metrics.jsonl"))
            tag = label if k == 0 else None
            ax_loss.plot(steps, losses, color=color, alpha=0.8, linewidth=1, label=tag)
            ax_norm.plot(steps, norms, color=color, alpha=0.8, linewidth=1, label=tag)

    for variant in variants[1:]:
        fig, (ax_loss, ax_norm) = plt.subplots(1, 2, figsize=(11, 4))
        draw(ax_loss, ax_norm, control, "0.45", "control")
        draw(ax_loss, ax_norm, variant, "tab:red", variant["name"])
        ax_loss.set_xlabel("step")
        ax_loss.set_ylabel("training loss")
        ax_norm.set_xlabel("step")
        ax_norm.set_ylabel("gradient norm (before clipping)")
        ax_norm.set_yscale("log")
        ax_loss.legend()
        diff = variant.get("diff_pct")
        diff_text = f", {diff:+.2f}% vs control" if diff is not None else ""
        fig.suptitle(f"{variant['name']} ({variant['overrides']}): {variant['verdict']}{diff_text}")
        fig.tight_layout()
        path = os.path.join(out_dir, f"ablation_{variant['name']}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def plot_sweep(plt, fit, out_dir):
    points = fit["points"]
    fig, ax = plt.subplots(figsize=(7, 5))
    ok = [p for p in points if not p["breaks_law"] and p["final_val_loss"] is not None]
    bad = [p for p in points if p["breaks_law"] and p["final_val_loss"] is not None]
    ax.scatter([p["non_embedding_params"] for p in ok], [p["final_val_loss"] for p in ok], color="tab:blue",
               zorder=3, label="models")
    if bad:
        ax.scatter([p["non_embedding_params"] for p in bad], [p["final_val_loss"] for p in bad], color="tab:red",
                   marker="x", s=80, zorder=4, label="breaks the law")
    for p in ok + bad:
        ax.annotate(f"{p['name']} ({p['tokens_per_param']:.3g} tok/param)", (p["non_embedding_params"],
                    p["final_val_loss"]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    sizes = [p["non_embedding_params"] for p in points]
    lo, hi = math.log(min(sizes) / 1.5), math.log(max(sizes) * 1.5)
    grid = [math.exp(lo + (hi - lo) * i / 199) for i in range(200)]
    for key, style, name in (("power_law", "--", "a N^-alpha"), ("power_law_offset", "-", "E + a N^-alpha")):
        law = fit[key]
        if not law["ok"]:
            continue
        E = law.get("E", 0.0)
        ci = law["alpha_interval"]
        ci_text = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci[0] is not None else ""
        label = f"{name}: alpha {law['alpha']:.3f}{ci_text}" + (f", E {E:.3f}" if key == "power_law_offset" else "")
        ax.plot(grid, [E + law["a"] * n ** -law["alpha"] for n in grid], style, color="0.3", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("non-embedding parameters N")
    ax.set_ylabel("final val loss")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, "sweep_fit.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="the experiment's --out directory")
    parser.add_argument("--out-dir", help="where the PNG files go (default: the experiment's directory)")
    parser.add_argument("--no-install", action="store_true", help="exit 77 instead of installing matplotlib")
    args = parser.parse_args()
    out_dir = args.out_dir or args.out
    os.makedirs(out_dir, exist_ok=True)
    report_path, fit_path = os.path.join(args.out, "report.json"), os.path.join(args.out, "fit.json")
    if not os.path.exists(report_path) and not os.path.exists(fit_path):
        sys.exit(f"plot_experiment: {args.out} has neither report.json (ablate) nor fit.json (sweep)")
    plt = import_pyplot(install=not args.no_install)
    written = []
    if os.path.exists(fit_path):
        with open(fit_path) as f:
            written += plot_sweep(plt, json.load(f), out_dir)
    elif os.path.exists(report_path):
        with open(report_path) as f:
            written += plot_ablation(plt, args.out, json.load(f), out_dir)
    for path in written:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
