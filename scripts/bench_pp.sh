#!/usr/bin/env bash
# Pipeline-parallel step time against the ideal: GPT-2 XL (configs/gpt2_1558m.conf, bf16, B=2 a
# micro-batch, T=1024, random tokens) at pp 1 on one GPU and at pp 2 on two (mpirun -np 2), for
# each schedule of --schedules and micro-batch count of --micro. The ideal pp 2 rate is pp 1's
# per-GPU tokens/s (same micro-batches) x 2 x (1 - bubble), the bubble of a step with equal
# stages being (P - 1) / (m + P - 1) for GPipe and 1F1B, (P - 1) / (V m + P - 1) for interleaved
# (--pp-virtual 2), (P - 1) / (3 m + P - 1) for zero-bubble (ZB-H1, F = B = W). Prints the median
# tokens/s of steps 4..STEPS, the fraction of the ideal 1F1B rate, interleaved/1f1b, zb/1f1b, and
# the bar: pp 2 1F1B at m = 8 >= 85% of pp 1 x 2 x (1 - 1/9). With
# --timelines it also records one step of each pp 2 run (--pp-timeline, no CUDA graph) and
# draws docs/pp_timeline_<schedule>.png (scripts/plot_pp_timeline.py, m = 8); --timelines-only
# records and draws them without the throughput runs.
# --device cpu --tiny: a 4-layer model on the CPU, a smoke test of this script in seconds.
# Every run has --comm-timeout 120 (a step here takes seconds; a stuck run then ends with the
# watchdog's error line after two minutes, not after the default ten); --extra may override it.
#
# usage: scripts/bench_pp.sh [--steps 12] [--out out/bench_pp] [--bin build/nanodist]
#                            [--micro "4 8 16"] [--schedules "gpipe 1f1b interleaved zb"] [--timelines]
#                            [--timelines-only]
#                            [--device cpu --tiny] [--extra "flags passed to nanodist train"]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=12; out=out/bench_pp; bin=build/nanodist; extra=""; device=cuda; tiny=0; micro="4 8 16"
schedules="gpipe 1f1b interleaved zb"; timelines=0; throughput=1; comm_timeout=120
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --micro) micro=$2; shift 2 ;;
    --schedules) schedules=$2; shift 2 ;;
    --timelines) timelines=1; shift ;;
    --timelines-only) timelines=1; throughput=0; shift ;;
    --extra) extra=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "bench_pp.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "bench_pp.sh: $bin not found (build first)" >&2; exit 1; }
[[ "$device" == cuda || "$tiny" == 1 ]] || { echo "bench_pp.sh: --device $device needs --tiny" >&2; exit 2; }
for m in $micro; do
  [[ "$m" =~ ^[1-9][0-9]*$ ]] || { echo "bench_pp.sh: --micro takes positive integers, got '$m'" >&2; exit 2; }
done
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out/logs"
data="$out/data"
if [[ "$tiny" == 1 ]]; then
  model="--n-layer 4 --n-head 4 --n-embd 64 --block-size 64 --dtype f32 --device $device --threads 1"
  batch=2; vocab=256; tokens=200000
else
  model="--config configs/gpt2_1558m.conf"; batch=2; vocab=50257; tokens=4000000
fi
[[ -f "$data/train.bin" ]] || "$bin" prepare --random-tokens "$tokens" --vocab-size "$vocab" --out "$data" >/dev/null

: >"$out/results.tsv"
# name, ranks, pp, schedule, micro-batches[, environment for the timeline]
run_one() {
  local name=$1 np=$2 pp=$3 schedule=$4 m=$5 timeline=${6:-}
  local run="$out/runs/$name" log="$out/logs/$name.log"
  rm -rf "$run"
  local recorded=()
  [[ -n "$timeline" ]] && { mkdir -p "$timeline"; recorded=(--pp-timeline "$timeline"); }
  local virtual=1
  [[ "$schedule" == interleaved ]] && virtual=2
  # shellcheck disable=SC2086  # $model and $extra hold flag/value pairs
  if mpirun -np "$np" --bind-to none --oversubscribe "$bin" train "${recorded[@]}" $model --data "$data" --out "$run" \
      --pp "$pp" --pp-schedule "$schedule" --pp-virtual "$virtual" --batch-size "$batch" --grad-accum "$m" --max-iters "$steps" \
      --warmup-iters 2 --eval-interval 0 --eval-iters 1 --log-interval 1 --ckpt-interval 0 \
      --comm-timeout "$comm_timeout" $extra >"$log" 2>&1; then
    [[ -n "$timeline" ]] || echo -e "$name\t$np\t$pp\t$schedule\t$m\t$run/metrics.jsonl" >>"$out/results.tsv"
  else
    echo "$name failed (out of memory at this many micro-batches?); last lines of $log:"; tail -n 3 "$log"
  fi
}
if [[ "$throughput" == 1 ]]; then
  for m in $micro; do
    run_one "pp1_m$m" 1 1 1f1b "$m"
    for s in $schedules; do run_one "pp2_${s}_m$m" 2 2 "$s" "$m"; done
  done
fi
if [[ "$timelines" == 1 ]]; then
  for s in $schedules; do
    run_one "timeline_$s" 2 2 "$s" 8 "$out/timeline_$s"
    python3 scripts/plot_pp_timeline.py "$out/timeline_$s" --out "docs/pp_timeline_$s.png" || true
  done
fi
[[ "$throughput" == 1 ]] || exit 0

python3 - "$out/results.tsv" "$steps" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
last = int(sys.argv[2])
def median_tok(path):
    recs = [r for r in map(json.loads, open(path)) if "tok_per_s" in r and 4 <= r["step"] <= last]
    return statistics.median(r["tok_per_s"] for r in recs) if recs else float("nan")
res = {(int(pp), s, int(m)): (int(np), median_tok(path)) for name, np, pp, s, m, path in rows}
def bubble(s, m, P=2):
    return (P - 1) / ({"zb": 3 * m, "interleaved": 2 * m}.get(s, m) + P - 1)
print(f"{'pp':>2} {'schedule':<11} {'m':>3} {'tok/s':>9} {'tok/s/GPU':>9} {'ideal':>9} {'of ideal':>8} {'of 1F1B ideal':>13}")
for (pp, s, m), (np, tok) in sorted(res.items()):
    base = res.get((1, "1f1b", m))
    if pp == 1 or base is None:
        print(f"{pp:>2} {s if pp > 1 else '-':<11} {m:>3} {tok:>9,.0f} {tok / np:>9,.0f}")
        continue
    ideal = base[1] * pp * (1 - bubble(s, m, pp))
    ideal_1f1b = base[1] * pp * (1 - bubble("1f1b", m, pp))
    print(f"{pp:>2} {s:<11} {m:>3} {tok:>9,.0f} {tok / np:>9,.0f} {ideal:>9,.0f} {tok / ideal:>8.3f} {tok / ideal_1f1b:>13.3f}")
print()
for m in sorted({m for _, _, m in res}):
    for s in ("interleaved", "zb"):
        a, b = res.get((2, s, m)), res.get((2, "1f1b", m))
        if a and b: print(f"m {m}: {s} / 1f1b tokens/s x{a[1] / b[1]:.3f}")
base, run = res.get((1, "1f1b", 8)), res.get((2, "1f1b", 8))
if base and run:
    bar = 0.85 * base[1] * 2 * (1 - 1 / 9)
    print(f"bar: pp 2 1F1B at m 8: {run[1]:,.0f} tok/s vs 85% of pp 1 x 2 x (1 - 1/9) = {bar:,.0f}: "
          f"{'met' if run[1] >= bar else 'NOT met'}")
PY
