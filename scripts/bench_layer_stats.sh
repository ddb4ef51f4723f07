#!/usr/bin/env bash
# The cost of --layer-stats N: trains GPT-2 124M (configs/gpt2_124m.conf, one micro-step of B=32 x
# T=1024 per step, the hardest case: the probe's share shrinks with --grad-accum) on random tokens
# without and with the statistics, and prints the mean tokens/s over steps FIRST..STEPS of each
# (a mean, not a median: one step in N pays for the statistics) and their ratio.
#
# usage: scripts/bench_layer_stats.sh [--every 10] [--steps 110] [--first 11] [--bin build/nanodist]
#                                     [--out out/bench_layer_stats] [--device cuda]
set -euo pipefail
cd "$(dirname "$0")/.."
every=10 steps=110 first=11 bin=build/nanodist out=out/bench_layer_stats device=cuda
while [[ $# -gt 0 ]]; do
  case "$1" in
    --every) every=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --first) first=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    *) echo "bench_layer_stats.sh: unknown argument $1" >&2; exit 1 ;;
  esac
done
mkdir -p "$out"
[[ -f $out/data/train.bin ]] || "$bin" prepare --random-tokens 20000000 --vocab-size 50257 --out "$out/data" >"$out/prepare.log"
mean_tok_per_s() {  # mean of tok_per_s over steps [first, steps] of a metrics.jsonl
  awk -v first="$first" -F'[:,}]' '/"tok_per_s"/ {
      for (i = 1; i < NF; i++) { if ($i == "{\"step\"") s = $(i + 1); if ($i == "\"tok_per_s\"") t = $(i + 1) }
      if (s >= first) { sum += t; n += 1 } }
    END { if (n == 0) exit 1; printf "%.0f", sum / n }' "$1"
}
declare -A rate
for n in 0 "$every"; do
  "$bin" train --config configs/gpt2_124m.conf --data "$out/data" --out "$out/stats$n" --overwrite --device "$device" \
    --grad-accum 1 --max-iters "$steps" --eval-interval 0 --eval-iters 1 --log-interval 1 --ckpt-interval 0 \
    --layer-stats "$n" >"$out/train_stats$n.log" 2>&1 || { echo "train failed: $out/train_stats$n.log" >&2; exit 1; }
  rate[$n]=$(mean_tok_per_s "$out/stats$n/metrics.jsonl")
done
awk -v a="${rate[0]}" -v b="${rate[$every]}" -v n="$every" 'BEGIN {
  printf "GPT-2 124M, mean tokens/s over the steps: without statistics %d, with --layer-stats %d %d: %.4fx (cost %.2f%%)\n",
         a, n, b, b / a, 100 * (1 - b / a) }'
