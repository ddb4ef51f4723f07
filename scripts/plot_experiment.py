#!/usr/bin/env python3
"""Plots of a nanodist experiment directory (PNG files written into it, or into --out-dir):

  ablation (OUT/report.json from `nanodist ablate`): one figure per variant, its training loss,
    val loss and gradient norm per step over the control's, one line style per seed (the control
    drawn on top, the loss axes scaled to it so a diverging variant cannot flatten it), titled
    with its verdict; ablation_<variant>.png. And ablation_summary.png: every variant's final val
    loss, each seed a dot, the mean with its seed spread, coloured by verdict, the control's as a line.
  sweep (OUT/fit.json from `nanodist sweep`): final val loss against non-embedding parameters
    on log-log axes, both fitted laws, the points that break the law marked; sweep_fit.png.

usage: scripts/plot_experiment.py OUT [--out-dir DIR] [--no-install]
matplotlib is installed with pip when missing (saying so, and where: as root that is the
system's Python), unless --no-install (then exit 77: skipped).
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
        who = "as root, into the system's Python " if os.geteuid() == 0 else "into "
        print(f"plot_experiment: matplotlib is missing; installing it with pip {who}({sys.prefix}); "
              "pass --no-install to skip instead", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"])
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def read_metrics(path):
    """(steps, losses, grad_norms, eval_steps, val_losses) of one run's metrics.jsonl, where a resumed
    attempt's records replace the interrupted one's (as experiments/run_metrics.cpp reads them)."""
    records, evals = {}, {}
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
                for step in [s for s in evals if s >= rec["step"]]:
                    del evals[step]
                records[rec["step"]] = rec
            elif "step" in rec and "val_loss" in rec:
                for step in [s for s in evals if s >= rec["step"]]:
                    del evals[step]
                evals[rec["step"]] = rec
    nan = float("nan")

    def value(rec, key):
        return rec[key] if rec.get(key) is not None else nan

    steps, eval_steps = sorted(records), sorted(evals)
    return (steps, [value(records[s], "loss") for s in steps], [value(records[s], "grad_norm") for s in steps],
            eval_steps, [value(evals[s], "val_loss") for s in eval_steps])


SEED_STYLES = ["-", "--", ":", "-."]
VERDICT_COLORS = {"ok": "tab:green", "silent": "tab:orange", "unstable": "tab:purple", "dead": "tab:brown",
                  "diverged": "tab:red"}


def finite(values):
    return [v for v in values if v == v and abs(v) != float("inf")]


def plot_ablation(plt, root, report, out_dir):
    variants = report["variants"]
    control = variants[0]
    written = []
    metrics = {(v["name"], run["dir"]): read_metrics(os.path.join(root, run["dir"], "metrics.jsonl"))
               for v in variants for run in v["runs"]}

    def draw(axes, variant, color, zorder, width):
        ax_loss, ax_val, ax_norm = axes
        for k, run in enumerate(variant["runs"]):
            steps, losses, norms, eval_steps, vals = metrics[(variant["name"], run["dir"])]
            style = SEED_STYLES[k % len(SEED_STYLES)]
            label = f"{variant['name']}, seed {run.get('seed', k)}"
            ax_loss.plot(steps, losses, style, color=color, alpha=0.9, linewidth=width, zorder=zorder, label=label)
            ax_val.plot(eval_steps, vals, style, marker="o", markersize=3, color=color, linewidth=width,
                        zorder=zorder)
            ax_norm.plot(steps, norms, style, color=color, alpha=0.9, linewidth=width, zorder=zorder)

    def value_range(variant, index):
        values = []
        for run in variant["runs"]:
            values += finite(metrics[(variant["name"], run["dir"])][index])
        return (min(values), max(values)) if values else None

    for variant in variants[1:]:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        draw(axes, variant, VERDICT_COLORS.get(variant["verdict"], "tab:red"), 2, 1.2)
        draw(axes, control, "black", 3, 1.0)  # on top: the reference stays visible
        # Loss axes: everything below, but at most the control's range again above it, so a variant
        # that diverges runs off the top instead of squashing the control into a flat line.
        for ax, index in ((axes[0], 1), (axes[1], 4)):
            c, v = value_range(control, index), value_range(variant, index)
            if c:
                lo = min(c[0], v[0]) if v else c[0]
                hi = min(max(c[1], v[1]) if v else c[1], c[1] + (c[1] - c[0]))
                pad = 0.05 * (hi - lo) if hi > lo else 0.05
                ax.set_ylim(lo - pad, hi + pad)
        axes[0].set_ylabel("training loss")
        axes[1].set_ylabel("val loss")
        axes[2].set_ylabel("gradient norm (before clipping)")
        axes[2].set_yscale("log")
        for ax in axes:
            ax.set_xlabel("step")
        axes[0].legend(fontsize=7)
        diff = variant.get("diff_pct")
        diff_text = f", {diff:+.2f}% vs control" if diff is not None else ""
        fig.suptitle(f"{variant['name']} ({variant['overrides']}): {variant['verdict']}{diff_text}")
        fig.tight_layout()
        path = os.path.join(out_dir, f"ablation_{variant['name']}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    written.append(plot_ablation_summary(plt, variants, metrics, out_dir))
    return written


def plot_ablation_summary(plt, variants, metrics, out_dir):
    """Every variant's final val loss: seeds as dots, mean and seed spread, the control's mean as a line."""
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(variants) + 2), 4.5))
    control_finals = []
    for i, variant in enumerate(variants):
        finals = []
        for run in variant["runs"]:
            vals = finite(metrics[(variant["name"], run["dir"])][4])
            finals.append(vals[-1] if vals else float("nan"))
        if i == 0:
            control_finals = finite(finals)
        color = "black" if i == 0 else VERDICT_COLORS.get(variant["verdict"], "tab:red")
        shown = finite(finals)
        ax.scatter([i] * len(shown), shown, color=color, s=18, alpha=0.7, zorder=3)
        if shown:
            mean = sum(shown) / len(shown)
            spread = (sum((v - mean) ** 2 for v in shown) / (len(shown) - 1)) ** 0.5 if len(shown) > 1 else 0.0
            ax.errorbar([i + 0.15], [mean], yerr=[spread], fmt="D", color=color, capsize=4, zorder=4)
        if len(shown) < len(finals):
            ax.annotate("no finite val loss" if not shown else f"{len(finals) - len(shown)} seed(s) non-finite",
                        (i, ax.get_ylim()[1]), fontsize=7, ha="center", va="top", color=color)
    if control_finals:
        mean = sum(control_finals) / len(control_finals)
        ax.axhline(mean, color="black", linewidth=0.8, linestyle="--", label=f"control mean {mean:.3f}")
        ax.legend(fontsize=8)
    ax.set_xticks(range(len(variants)))
    ax.set_xticklabels([f"{v['name']}\n{v['verdict']}" for v in variants], fontsize=8, rotation=20)
    ax.set_ylabel("final val loss (dots: seeds; diamond: mean and spread)")
    ax.set_title("every variant against the control")
    fig.tight_layout()
    path = os.path.join(out_dir, "ablation_summary.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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
