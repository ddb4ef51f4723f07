#!/usr/bin/env bash
# Every measurement of the collectives work (issue 29) on 2 GPUs in one go, the bars first:
#   1. `nanodist-lab bench-comm --impl compare --timing graph` (the lab build, NANODIST_LAB=ON),
#      8 B..1 GB: push, one-shot, two-shot, ring, NCCL
#      and auto (bars: one-shot / push vs NCCL to 256 KB, auto vs the best of its choices);
#   2. reduce-scatter and all-gather of NCCL and our ring, 8 B..1 GB, with alpha-beta fits (bar:
#      ring busbw vs NCCL's from 64 MB), and the all-reduce fits of NCCL and the ring for the plan;
#   3. scripts/check_plan.sh with those fits (bar: plan vs traced dp 2 / tp 2 steps);
# then, while the elapsed time is under --budget seconds (default 270, so that the whole run stays
# near 5 minutes on 2 H100/H200), the rest: the same compare with eager timing, the other
# collectives and the point-to-point matrix. Each step's full output goes to
# OUT/logs/, one line per step to the terminal; writes the CSVs into OUT (docs/bandwidth/ takes
# them), OUT/fits_2gpu.csv, OUT/plan_vs_measured.tsv, OUT/provenance.txt, OUT/bars.md
# (scripts/collective_bars.py, printed last) and OUT/bandwidth.png. --device cpu: a smoke run of
# this script on MPI (sizes to 64 KB, eager timing, check_plan.sh --tiny), seconds, no GPU.
#
# usage: scripts/gpu_collectives.sh [--out out/gpu_collectives] [--iters 50] [--warmup 10] [--budget 270]
#                                   [--skip-curves] [--skip-plan] [--bin build/nanodist] [--device cpu]
#                                   [--lab-bin build/nanodist-lab]
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
out=out/gpu_collectives; iters=50; warmup=10; budget=270; curves=1; plan=1; bin=build/nanodist; device=cuda; lab=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --skip-curves) curves=0; shift ;;
    --skip-plan) plan=0; shift ;;
    --bin) bin=$2; shift 2 ;;
    --lab-bin) lab=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "gpu_collectives.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ "$budget" =~ ^[0-9]+$ ]] || { echo "gpu_collectives.sh: --budget must be a number of seconds" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "gpu_collectives.sh: $bin not found (build first)" >&2; exit 1; }
lab=${lab:-$(dirname "$bin")/nanodist-lab}
[[ -x "$lab" ]] || { echo "gpu_collectives.sh: $lab not found (build with NANODIST_LAB=ON)" >&2; exit 1; }
# Sizes: the largest of most sweeps and of the other collectives'.
large=1G; medium=256M; timing=graph; plan_flags=()
if [[ "$device" == cpu ]]; then
  large=64K; medium=64K; timing=eager; plan_flags=(--device cpu --tiny --steps 4 --runs "small_dp2 small_tp2")
elif [[ "$device" == cuda ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  [[ "$gpus" -ge 2 ]] || { echo "gpu_collectives.sh: needs 2 GPUs, found ${gpus:-0}" >&2; exit 1; }
else
  echo "gpu_collectives.sh: --device must be cuda or cpu" >&2; exit 2
fi
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink SHARP off: NCCL and ours on the same links.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$out/fits" "$out/logs"
fits="$out/fits_2gpu.csv"
# A rerun into the same folder starts clean: the bars read every CSV there.
rm -f "$out"/*.csv "$out"/fits/*.csv "$out/plan_vs_measured.tsv" "$out/plan/plan_vs_measured.tsv" \
  "$out/bars.md"
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with local changes)')"
  [[ "$device" == cpu ]] || nvidia-smi -L
  echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE iters=$iters warmup=$warmup"
} >"$out/provenance.txt"
start=$(date +%s)
status=0
step=0

# bench NAME ARGS...: one bench-comm run on 2 ranks (the lab's for --impl compare), its output in
# OUT/logs/NN-NAME.log.
bench() {
  local name=$1 t0 exe=$bin
  shift
  [[ " $* " == *" --impl compare "* ]] && exe=$lab
  step=$((step + 1)); t0=$(date +%s)
  local log
  log=$(printf '%s/logs/%02d-%s.log' "$out" "$step" "$name")
  if mpirun -np 2 --bind-to none --oversubscribe -x NCCL_NVLS_ENABLE "$exe" bench-comm \
      --device "$device" \
      --iters "$iters" --warmup "$warmup" "$@" >"$log" 2>&1; then
    printf '%4d s  %-34s %3d s  ok\n' "$((t0 - start))" "$name" "$(($(date +%s) - t0))"
  else
    printf '%4d s  %-34s %3d s  FAILED (%s: %s)\n' "$((t0 - start))" "$name" "$(($(date +%s) - t0))" "$log" \
      "$(tail -n 1 "$log")"
    status=1
  fi
}

# in_budget NAME: whether an optional step still fits (says so when it does not).
in_budget() {
  if (($(date +%s) - start < budget)); then return 0; fi
  printf '%4d s  %-34s skipped: over the %d s budget\n' "$(($(date +%s) - start))" "$1" "$budget"
  return 1
}

# 1. auto against each of its choices, 8 B..1 GB, CUDA-graph timing (the GPUs' time alone).
bench "compare-$timing" --op allreduce --impl compare --timing "$timing" --max-bytes "$large" \
  --csv "$out/allreduce_compare_${timing}_2gpu_f32.csv"

# 2. Reduce-scatter and all-gather, NCCL and our ring, with fits; the all-reduce fits for the plan
# (into OUT/fits/: the bars take every all-reduce from the compare runs).
for op in reducescatter allgather allreduce; do
  dir=$out; [[ $op == allreduce ]] && dir=$out/fits
  for impl in native ring; do
    bench "$op-$impl" --op "$op" --impl "$impl" --max-bytes "$large" --fit --fit-table "$fits" \
      --csv "$dir/${op}_${impl}_2gpu_f32.csv"
  done
done

# 3. The plan against traced steps, with the fits just measured.
if [[ "$plan" == 1 ]]; then
  t0=$(date +%s)
  # Its runs and their data in OUT/plan (the token file removed after: 16 MB, made again in seconds).
  if scripts/check_plan.sh --out "$out/plan" --table "$fits" --bin "$bin" "${plan_flags[@]}" \
      >"$out/logs/check_plan.log" 2>&1; then
    cp "$out/plan/plan_vs_measured.tsv" "$out/"
    printf '%4d s  %-34s %3d s  ok\n' "$((t0 - start))" check_plan "$(($(date +%s) - t0))"
  else
    printf '%4d s  %-34s %3d s  FAILED (see %s)\n' "$((t0 - start))" check_plan "$(($(date +%s) - t0))" \
      "$out/logs/check_plan.log"
    status=1
  fi
  rm -rf "$out/plan/data"
fi

# 4. While the budget lasts: eager timing (the host's cost per call included), the other
# collectives and the p2p matrix.
if [[ "$timing" != eager ]] && in_budget compare-eager; then
  bench compare-eager --op allreduce --impl compare --timing eager --max-bytes "$large" \
    --csv "$out/allreduce_compare_eager_2gpu_f32.csv"
fi
if [[ "$curves" == 1 ]]; then
  for op in broadcast alltoall sendrecv; do
    for impl in native ring; do
      in_budget "$op-$impl" || continue
      bench "$op-$impl" --op "$op" --impl "$impl" --max-bytes "$medium" --fit --fit-table "$fits" \
        --csv "$out/${op}_${impl}_2gpu_f32.csv"
    done
  done
  if in_budget p2p-matrix; then
    bench p2p-matrix --op p2p-matrix --min-bytes 8 --max-bytes "$medium" --csv "$out/fits/p2p-matrix_2gpu_f32.csv"
  fi
fi

python3 scripts/collective_bars.py "$out" >"$out/bars.md" || status=1
if python3 -c "import matplotlib" 2>/dev/null; then
  # OUT/*.csv holds the fit table too (the plot tells files apart by their header); the eager
  # all-reduce curves of NCCL and the ring come from the eager compare, else from OUT/fits/.
  extra=()
  [[ -f "$out/allreduce_compare_eager_2gpu_f32.csv" ]] || extra+=("$out"/fits/allreduce_*.csv)
  [[ -f "$out/fits/p2p-matrix_2gpu_f32.csv" ]] && extra+=("$out/fits/p2p-matrix_2gpu_f32.csv")
  python3 scripts/plot_bandwidth.py "$out"/*.csv "${extra[@]}" --out "$out/bandwidth.png" \
    >"$out/logs/plot.log" 2>&1 || status=1
fi
cat "$out/bars.md"
echo "# done in $(($(date +%s) - start)) s; status $status; logs in $out/logs, provenance in $out/provenance.txt"
exit $status
