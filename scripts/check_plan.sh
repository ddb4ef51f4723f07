#!/usr/bin/env bash
# The communication model against measured steps: for each run (GPT-2 124M and GPT-2 large, each
# at dp 2 and at tp 2) `nanodist plan` predicts the communication per step and the part of it that
# is exposed, and a short traced training run (`train --trace`, eager steps) measures both; prints
# predicted, measured and predicted / measured per run (the bar: within 20%, 0.8..1.2), and writes
# them to OUT/plan_vs_measured.tsv. Measured (scripts/trace_comm.py): communication = per call the
# shortest time over ranks (the collective's own time, a rank's wait for a late peer excluded),
# summed; exposed = the compute stream's idle time under collectives in the gaps they end in, of
# the rank that waits least (the others' extra is waiting for it). --table FITS uses a fit table of
# `bench-comm --fit-table` (plan reads its idle rows; "+gemm" rows of the lab's `--load gemm` load but are
# not used), else plan's built-in table; --plan-flags passes more flags to plan (e.g. "--gemm-tflops 700"); --reuse keeps the
# traces of an earlier run into the same --out (no GPU needed: another table against the same
# steps). --device cpu --tiny: a 2-layer model on MPI, a smoke test of this script in seconds.
#
# usage: scripts/check_plan.sh [--out out/check_plan] [--table FITS.csv] [--steps 6] [--bin build/nanodist]
#                              [--runs "small_dp2 small_tp2 large_dp2 large_tp2"] [--plan-flags "..."]
#                              [--reuse] [--device cpu --tiny]
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/check_plan; table=""; plan_flags=""; reuse=0; steps=6; bin=build/nanodist; device=cuda; tiny=0
runs="small_dp2 small_tp2 large_dp2 large_tp2"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --table) table=$2; shift 2 ;;
    --plan-flags) plan_flags=$2; shift 2 ;;
    --reuse) reuse=1; shift ;;
    --steps) steps=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "check_plan.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "check_plan.sh: $bin not found (build first)" >&2; exit 1; }
[[ "$device" == cuda || "$tiny" == 1 ]] || { echo "check_plan.sh: --device $device needs --tiny" >&2; exit 2; }
[[ "$steps" =~ ^[0-9]+$ && "$steps" -ge 4 ]] || { echo "check_plan.sh: --steps must be >= 4" >&2; exit 2; }
[[ -z "$table" || -f "$table" ]] || { echo "check_plan.sh: no fit table $table" >&2; exit 1; }
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out/logs"
data="$out/data"
if [[ "$tiny" == 1 ]]; then
  large="--n-layer 2 --n-head 4 --n-embd 32 --block-size 64 --dtype f32 --device $device"
  small=$large; vocab=256; tokens=200000
else
  large="--config configs/gpt2_774m.conf"; small="--config configs/gpt2_124m.conf"; vocab=50257; tokens=4000000
fi
[[ -f "$data/train.bin" || "$reuse" == 1 ]] || "$bin" prepare --random-tokens "$tokens" --vocab-size "$vocab" --out "$data" >/dev/null
# The last two steps are traced (eager: the trace turns the CUDA graph off for them); the graph
# stays off for the others too, as its capture would only lengthen the run.
trace_steps="$((steps - 1)):$steps"
table_flags=()
[[ -n "$table" ]] && table_flags=(--table "$table")

result="$out/plan_vs_measured.tsv"
echo -e "run\tpredicted_exposed_ms\tmeasured_exposed_ms\texposed_ratio\tpredicted_comm_ms\tmeasured_comm_ms\tcomm_ratio" >"$result"
printf "%-10s %14s %14s %8s %14s %14s %8s\n" run "exposed plan" "exposed meas" ratio "comm plan" "comm meas" ratio
status=0
for name in $runs; do
  case "$name" in
    small_dp2) model=$small; tp=1; dp=2; batch=16 ;;
    small_tp2) model=$small; tp=2; dp=1; batch=32 ;;
    large_dp2) model=$large; tp=1; dp=2; batch=8 ;;
    large_tp2) model=$large; tp=2; dp=1; batch=8 ;;
    *) echo "check_plan.sh: unknown run $name (small_dp2 small_tp2 large_dp2 large_tp2)" >&2; exit 2 ;;
  esac
  # The same shape and layout for both: plan reads the train flags.
  # shellcheck disable=SC2206  # $model holds flag/value pairs
  shape=($model --vocab-size "$vocab" --tp "$tp" --batch-size "$batch" --grad-accum 1)
  plan_log="$out/logs/$name.plan.txt" train_log="$out/logs/$name.train.log"
  # shellcheck disable=SC2086  # $plan_flags holds flag/value pairs
  if ! "$bin" plan "${shape[@]}" --dp "$dp" "${table_flags[@]}" $plan_flags >"$plan_log" 2>&1; then
    echo "$name: plan failed: $(tail -n 1 "$plan_log")"; status=1; continue
  fi
  if [[ "$reuse" == 1 && -f "$out/runs/$name.trace.json" ]]; then
    :  # the traced steps of an earlier run
  elif [[ "$reuse" == 1 ]]; then
    echo "$name: --reuse, but no $out/runs/$name.trace.json"; status=1; continue
  elif rm -rf "$out/runs/$name" && ! mpirun -np 2 --bind-to none --oversubscribe "$bin" train "${shape[@]}" --data "$data" --out "$out/runs/$name" \
      --max-iters "$steps" --warmup-iters 2 --eval-interval 0 --eval-iters 1 --log-interval 1 --no-checkpoint \
      --cuda-graph false \
      --trace "$out/runs/$name.trace.json" --trace-steps "$trace_steps" >"$train_log" 2>&1; then
    echo "$name: training failed; last lines of $train_log:"; tail -n 5 "$train_log"; status=1; continue
  fi
  # plan: "# per step: T us of communication, E us exposed ..."; trace: "communication MS exposed MS".
  read -r plan_comm plan_exposed < <(sed -n 's/^# per step: \([0-9.]*\) us of communication, \([0-9.]*\) us exposed.*/\1 \2/p' "$plan_log")
  python3 scripts/trace_comm.py "$out/runs/$name.trace.json" --verbose >"$out/logs/$name.measured.txt" 2>&1 || true
  read -r meas_comm meas_exposed < <(awk '$1 == "communication" { print $2, $4 }' "$out/logs/$name.measured.txt")
  if [[ -z "${plan_comm:-}" || -z "${meas_comm:-}" ]]; then
    echo "$name: could not read the plan or the trace (see $plan_log, $train_log)"; status=1; continue
  fi
  line=$(awk -v n="$name" -v pc="$plan_comm" -v pe="$plan_exposed" -v mc="$meas_comm" -v me="$meas_exposed" 'BEGIN {
      pe /= 1000; pc /= 1000
      re = me > 0 ? pe / me : 0; rc = mc > 0 ? pc / mc : 0
      printf "%s\t%.3f\t%.3f\t%.2f\t%.3f\t%.3f\t%.2f", n, pe, me, re, pc, mc, rc }')
  echo "$line" >>"$result"
  echo "$line" | awk -F'\t' '{ printf "%-10s %11.3f ms %11.3f ms %8s %11.3f ms %11.3f ms %8s\n", $1, $2, $3, $4, $5, $6, $7 }'
done
echo "# predicted / measured within 0.8..1.2 meets the bar; rows in $result"
exit $status
