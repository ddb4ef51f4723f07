#!/usr/bin/env bash
# Start-up time of `nanodist train`: the seconds from process start to each line it prints, up to
# the first step line, with the process's CPU seconds (user + sys, all threads) at each; then the
# run is stopped (it would go on to its final eval and checkpoint). Everything after `--` is passed
# to `nanodist train` (model, data, device, batch); --out, --max-iters, --eval-interval and
# --log-interval are set here.
#
# usage: scripts/bench_startup.sh [--bin build/nanodist] [--out out/bench_startup] -- TRAIN FLAGS
#   e.g. (CPU, GPT-2 350M, 64 tokens; DIR from `nanodist prepare`):
#   scripts/bench_startup.sh -- --config configs/gpt2_350m.conf --data DIR --device cpu --dtype f32 \
#       --batch-size 1 --block-size 64 --grad-accum 1 --attention ours
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/nanodist
out=out/bench_startup
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench_startup.sh: unknown argument $1 (train flags go after --)" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "bench_startup.sh: $bin not found (build first: scripts/build.sh)" >&2; exit 1; }
rm -rf "$out"
fifo=$(mktemp -u "${TMPDIR:-/tmp}/bench_startup.XXXXXX")
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT
tick=$(getconf CLK_TCK)
start=$(date +%s.%N)
"$bin" train "$@" --out "$out" --max-iters 2 --eval-interval 0 --log-interval 1 >"$fifo" 2>&1 &
pid=$!
seen_step=0
while IFS= read -r line; do
  now=$(date +%s.%N)
  cpu="?"
  if read -r -a stat 2>/dev/null <"/proc/$pid/stat"; then
    cpu=$(awk -v u="${stat[13]}" -v s="${stat[14]}" -v t="$tick" 'BEGIN { printf "%.2f", (u + s) / t }')
  fi
  printf '%7.2f s  cpu %7s s | %s\n' "$(awk -v a="$now" -v b="$start" 'BEGIN { print a - b }')" "$cpu" "$line"
  if [[ "$line" == "step 1/"* ]]; then
    seen_step=1
    kill "$pid" 2>/dev/null || true
    break
  fi
done <"$fifo"
wait "$pid" 2>/dev/null || true
[[ $seen_step -eq 1 ]] || { echo "bench_startup.sh: the run ended before its first step line" >&2; exit 1; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
