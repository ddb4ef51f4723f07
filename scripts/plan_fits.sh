#!/usr/bin/env bash
# The communication model's inputs and its check in one call on 2 GPUs: bench-comm sweeps (8 B..1 GB,
# eager timing, as the traced training steps run) of all-reduce, reduce-scatter and all-gather, NCCL
# and our ring, each on an otherwise idle GPU and again beside a back-to-back bf16 GEMM (the lab's
# `nanodist-lab bench-comm --load gemm`, NANODIST_LAB=ON; rows with impl "+gemm", a record of what a
# GEMM beside a collective costs it: the plan
# reads only the idle rows), all fitted piecewise into OUT/fits_2gpu.csv; then
# scripts/check_plan.sh with that table (OUT/plan_vs_measured.tsv, the plans, train logs, traces and
# measured figures in OUT/plan/). Sweeps in --dtype (bf16: what the runs' gradients and
# activations are). --extra-load-shapes "S1 S2": the all-reduce of NCCL again beside a GEMM of each
# shape, into OUT/fits_load_S.csv (the idle rows and those), a record only (no second check: the
# plan does not read loaded rows).
# One line per step on the terminal, its output in OUT/logs/. --device cpu: a smoke run on MPI
# (sizes to 64 KB, no load: the GEMM load is GPU-only, and check_plan.sh --tiny), seconds.
#
# usage: scripts/plan_fits.sh [--out out/plan_fits] [--load-shape 8192x8192x8192] [--iters 20] [--dtype bf16]
#                             [--extra-load-shapes "16384x2304x768"] [--bin build/nanodist] [--device cpu]
#                             [--lab-bin build/nanodist-lab]
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/plan_fits; shape=8192x8192x8192; extra=""; iters=20; dtype=bf16; bin=build/nanodist; device=cuda; lab=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --load-shape) shape=$2; shift 2 ;;
    --extra-load-shapes) extra=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --lab-bin) lab=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "plan_fits.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "plan_fits.sh: $bin not found (build first)" >&2; exit 1; }
lab=${lab:-$(dirname "$bin")/nanodist-lab}
loads="none gemm"; max=1G; plan_flags=()
if [[ "$device" == cpu ]]; then
  loads=none; max=64K; dtype=f32; extra=""; plan_flags=(--device cpu --tiny --steps 4 --runs "small_dp2 small_tp2")
elif [[ "$device" != cuda ]]; then
  echo "plan_fits.sh: --device must be cuda or cpu" >&2; exit 2
else
  [[ -x "$lab" ]] || { echo "plan_fits.sh: $lab not found (the GEMM loads need NANODIST_LAB=ON)" >&2; exit 1; }
fi
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink SHARP off, for the sweeps and (inherited by mpirun's local ranks) the training runs alike.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$out/logs"
fits="$out/fits_2gpu.csv"
rm -f "$fits" "$out"/*_load-*.csv "$out"/fits_load_*.csv "$out"/plan_vs_measured*.tsv
start=$(date +%s)
status=0
step() {  # step NAME COMMAND...: one line per step, the output in logs/NAME.log
  local name=$1 t0; shift
  t0=$(date +%s)
  if "$@" >"$out/logs/$name.log" 2>&1; then
    printf '%4d s  %-36s %3d s  ok\n' "$((t0 - start))" "$name" "$(($(date +%s) - t0))"
  else
    printf '%4d s  %-36s %3d s  FAILED: %s\n' "$((t0 - start))" "$name" "$(($(date +%s) - t0))" \
      "$(tail -n 1 "$out/logs/$name.log")"
    status=1
  fi
}
for op in allreduce reducescatter allgather; do
  for impl in native ring; do
    for load in $loads; do
      bench=("$bin" bench-comm)
      [[ "$load" == none ]] || bench=("$lab" bench-comm --load "$load" --load-shape "$shape")
      step "$op-$impl-load-$load" mpirun -np 2 --bind-to none --oversubscribe -x NCCL_NVLS_ENABLE "${bench[@]}" \
        --device "$device" --dtype "$dtype" --op "$op" --impl "$impl" \
        --max-bytes "$max" --iters "$iters" --fit --fit-table "$fits" --csv "$out/${op}_${impl}_load-${load}.csv"
    done
  done
done
for other in $extra; do
  grep -v '+gemm,' "$fits" >"$out/fits_load_$other.csv"
  step "allreduce-native-load-$other" mpirun -np 2 --bind-to none --oversubscribe -x NCCL_NVLS_ENABLE "$lab" \
    bench-comm --device "$device" --dtype "$dtype" --op allreduce --impl native --load gemm --load-shape "$other" \
    --max-bytes "$max" --iters "$iters" --fit --fit-table "$out/fits_load_$other.csv" \
    --csv "$out/allreduce_native_load-$other.csv"
done
step check_plan scripts/check_plan.sh --out "$out/plan" --table "$fits" --bin "$bin" "${plan_flags[@]}"
cp "$out/plan/plan_vs_measured.tsv" "$out/plan_vs_measured.tsv" 2>/dev/null || true
cat "$out/logs/check_plan.log"
exit $status
