#!/usr/bin/env bash
# Data-parallel scaling of GPT-2 124M (B=32 per GPU, T=1024, bf16) on random tokens: trains on 1, 2
# and 4 GPUs (mpirun, one rank per GPU) with NCCL's all-reduce and with our ring, and prints the
# median tokens/s of steps 10..STEPS, the scaling efficiency tok/s(N) / (N x tok/s(1)) and the
# step time each configuration adds over one GPU (the all-reduce time backward did not hide).
#
# usage: scripts/bench_ddp.sh [--np "1 2 4"] [--steps 40] [--out out/bench_ddp] [--bin build/nanodist]
#                             [--extra "flags passed to nanodist train"]
set -euo pipefail
cd "$(dirname "$0")/.."
nps="1 2 4"; steps=40; out=out/bench_ddp; bin=build/nanodist; extra=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --np) nps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --extra) extra=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "bench_ddp.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "bench_ddp.sh: $bin not found (build first)" >&2; exit 1; }
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out/logs"
data="$out/data"
[[ -f "$data/train.bin" ]] || "$bin" prepare --random-tokens 4000000 --vocab-size 50257 --out "$data" >/dev/null
: >"$out/results.tsv"
for np in $nps; do
  for impl in native ring; do
    [[ "$np" == 1 && "$impl" == ring ]] && continue  # one rank communicates nothing
    run="$out/runs/np${np}_$impl"; log="$out/logs/np${np}_$impl.log"
    rm -rf "$run"
    # shellcheck disable=SC2086  # $extra holds flag/value pairs
    if mpirun -np "$np" --bind-to none "$bin" train --config configs/gpt2_124m.conf --data "$data" --out "$run" \
        --batch-size 32 --grad-accum 1 --collectives "$impl" --max-iters "$steps" --warmup-iters 10 \
        --eval-interval 0 --eval-iters 1 --log-interval 1 $extra >"$log" 2>&1; then
      echo -e "$np\t$impl\t$run/metrics.jsonl" >>"$out/results.tsv"
    else
      echo "np $np $impl failed; last lines of $log:"; tail -n 5 "$log"
    fi
  done
done
python3 - "$out/results.tsv" "$steps" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
last = int(sys.argv[2])
def median(path, key):
    recs = [r for r in map(json.loads, open(path)) if "tok_per_s" in r and 10 <= r["step"] <= last]
    return statistics.median(r[key] for r in recs)
base = {"tok": None, "ms": None}
print(f"{'GPUs':>4} {'all-reduce':<10} {'tok/s':>11} {'ms/step':>8} {'efficiency':>10} {'added ms':>9}")
for np, impl, path in rows:
    tok, ms = median(path, "tok_per_s"), median(path, "ms")
    if np == "1":
        base = {"tok": tok, "ms": ms}
    eff = f"{100 * tok / (int(np) * base['tok']):.1f}%" if base["tok"] else "-"
    added = f"{ms - base['ms']:.2f}" if base["ms"] else "-"
    print(f"{np:>4} {impl:<10} {tok:>11,.0f} {ms:>8.2f} {eff:>10} {added:>9}")
PY
