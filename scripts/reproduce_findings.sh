#!/usr/bin/env bash
# The seed findings of nanodist's experiments, reproduced on one GPU in bf16 (about 3 minutes on
# an H100), each from its configs/experiments/*.conf:
#   1. deep_norm_residual: a 12-layer GPT without biases (nanoGPT's default) and with LayerNorm
#      and residuals both off is dead; LayerNorm alone on learns; residuals alone on learn, but
#      noisily. Also no-residual at 1 and 2 layers, printed for the depth at which it stalls.
#   2. large_batch: no warmup at a large batch is silent (trains, no NaN, ends worse than the
#      control beyond the seed spread); lr x100 with AdamW does not diverge but ends worse.
#   3. ladder: six sizes (1x32 to 3x80, lr ~ 1/width but 2x32 at 8e-3, under five passes over the
#      data) at 20 tokens/param fit L = E + a N^-alpha with every point within 2.5%, alpha's interval.
#   4. starved_ladder: a ladder whose largest model is starved of tokens shows the break.
# Then plots (scripts/plot_experiment.py) and one PASS/FAIL line per finding; exits 1 if any fails.
#
# usage: scripts/reproduce_findings.sh DATA_DIR [OUT_DIR]
#   DATA_DIR: char-level TinyShakespeare or KJV made by
#     build/nanodist prepare --corpus shakespeare --out DATA_DIR   (or --corpus kjv)
#   OUT_DIR (default out/findings): rerunning skips every finished run.
#   NANODIST=path/to/nanodist to use another binary (default build/nanodist).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  sed -n '2,18p' "$0"
  exit 2
fi
data=$1
out=${2:-out/findings}
bin=${NANODIST:-build/nanodist}
[ -x "$bin" ] || { echo "reproduce_findings: no $bin (build first, or set NANODIST)" >&2; exit 2; }
[ -f "$data/train.bin" ] || { echo "reproduce_findings: $data/train.bin missing (nanodist prepare --out $data)" >&2; exit 2; }
mkdir -p "$out"
start=$SECONDS

step() {  # name, subcommand, then its flags; the full output goes to OUT/<name>.log
  local name=$1 cmd=$2
  shift 2
  echo "== $name ($cmd), log in $out/$name.log"
  "$bin" "$cmd" --experiment "configs/experiments/$name.conf" --data "$data" --out "$out/$name" "$@" \
    > "$out/$name.log" 2>&1 || {
    local rc=$?
    tail -5 "$out/$name.log"
    # 75: stopped by a signal after saving (docs/CLI.md); a rerun skips finished runs and resumes.
    [ "$rc" -eq 75 ] && echo "reproduce_findings: $name was stopped by a signal; run this script again to continue"
    exit "$rc"
  }
  grep -E "^(ablate|sweep): [^\[]" "$out/$name.log" | grep -v "variant(s)\|model size(s)" || true
  echo "   $((SECONDS - start)) s so far"
}

step deep_norm_residual ablate
step large_batch ablate
step ladder sweep
step starved_ladder sweep

for name in deep_norm_residual large_batch ladder starved_ladder; do
  python3 scripts/plot_experiment.py "$out/$name" | sed 's/^/   /'
done

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
fails = 0

def check(ok, what):
    global fails
    fails += not ok
    print(("PASS " if ok else "FAIL ") + what)

def ablation(name):
    with open(f"{out}/{name}/report.json") as f:
        return {v["name"]: v for v in json.load(f)["variants"]}

d = ablation("deep_norm_residual")
for v in d.values():
    print(f"   {v['name']}: {v['verdict']} ({v['why']}), final val {v['final_val_loss']['mean']}, "
          f"grad norm median {v['grad_norm']['median']:.3g} max {v['grad_norm']['max']:.3g}")
check(d["no-layernorm-no-residual"]["verdict"] == "dead", "12 layers without LayerNorm and residuals is dead")
check(d["no-residual"]["verdict"] not in ("dead", "diverged"), "LayerNorm alone on (no-residual) learns")
nl, ctl = d["no-layernorm"], d["control"]
noisy = nl["grad_norm"]["max"] / nl["grad_norm"]["median"] > ctl["grad_norm"]["max"] / ctl["grad_norm"]["median"]
check(nl["verdict"] not in ("dead", "diverged") and noisy,
      "residuals alone on (no-layernorm) learn, noisier gradient norms than the control")

b = ablation("large_batch")
for v in b.values():
    spikes = " / ".join(str(r["grad_spikes"]) for r in v["runs"])
    print(f"   {v['name']}: {v['verdict']} ({v['why']}), diff {v['diff_pct']}%, grad-norm spikes per seed {spikes}")
check(b["no-warmup"]["verdict"] == "silent", "no warmup at a large batch is silent")
x = b["lr-x100"]
check(x["first_nonfinite_step"] is None and x["verdict"] != "diverged" and (x["diff_pct"] or 0) > 0,
      "lr x100 with AdamW does not diverge but ends worse")

with open(f"{out}/ladder/fit.json") as f:
    fit = json.load(f)
law = fit["power_law_offset"]
pts = [p for p in fit["points"] if p["in_fit"]]
for p in fit["points"]:
    print(f"   {p['name']}: N {p['non_embedding_params']}, lr {p['lr']:.3g}, {p['tokens_per_param']:.3g} tokens/param, "
          f"val {p['final_val_loss']:.4f} +- {p['final_val_loss_spread']:.4f} ({p['seeds']} seeds), "
          f"error {p['offset_error_pct']:+.2f}%" + ("" if p["in_fit"] else f" (left out: {p['why']})"))
print(f"   L = {law['E']:.4f} + {law['a']:.4g} N^-{law['alpha']:.4f}, alpha 95% interval "
      f"[{law['alpha_interval'][0]:.4f}, {law['alpha_interval'][1]:.4f}]; largest error {law['max_abs_error_pct']:.2f}%")
check(len(pts) >= 5 and all(abs(p["offset_error_pct"]) <= 2.5 for p in pts),
      f"a ladder of {len(pts)} sizes fits with every point within 2.5%")

with open(f"{out}/starved_ladder/fit.json") as f:
    starved = json.load(f)["points"]
biggest = max(starved, key=lambda p: p["non_embedding_params"])
print(f"   {biggest['name']}: {biggest['why'] or 'on the law'}")
check(biggest["breaks_law"] and "starved" in biggest["why"], "a ladder whose largest model is starved shows the break")
sys.exit(1 if fails else 0)
PY
echo "reproduce_findings: $((SECONDS - start)) s; reports in $out/*/report.md, plots beside them"
