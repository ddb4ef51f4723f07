#!/usr/bin/env bash
# Every measurement of the collectives work (issue 29) on 2 GPUs in one go (about 4 minutes on 2
# H100): NCCL's small all-reduce with the old non-blocking communicators (the host-cost cause),
# `bench-comm --impl compare` (one-shot, two-shot, ring, NCCL and auto, 8 B..1 GB) with eager and
# with CUDA-graph timing, reduce-scatter and all-gather of NCCL and our ring with alpha-beta fits
# (and of the pipelined ring on 2 and 4 pipes from 16 MB),
# the all-reduce fits for `nanodist plan`, the other collectives' curves and the point-to-point
# matrix, then scripts/check_plan.sh (plan vs traced steps) with the measured fits. Writes CSVs
# into OUT (docs/bandwidth/ takes them), OUT/bars.md (scripts/collective_bars.py: the bar tables)
# and OUT/bandwidth.png. --skip-curves / --skip-plan leave those parts out.
#
# usage: scripts/gpu_collectives.sh [--out out/gpu_collectives] [--iters 50] [--warmup 10]
#                                   [--skip-curves] [--skip-plan] [--bin build/nanodist]
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/gpu_collectives; iters=50; warmup=10; curves=1; plan=1; bin=build/nanodist
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --skip-curves) curves=0; shift ;;
    --skip-plan) plan=0; shift ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "gpu_collectives.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "gpu_collectives.sh: $bin not found (build first)" >&2; exit 1; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[[ "$gpus" -ge 2 ]] || { echo "gpu_collectives.sh: needs 2 GPUs, found ${gpus:-0}" >&2; exit 1; }
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink SHARP off: NCCL and ours on the same links.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export NANODIST_NCCL_NONBLOCKING=0
mkdir -p "$out/cause" "$out/fits"
fits="$out/fits_2gpu.csv"
rm -f "$fits"
start=$(date +%s)
status=0
bench() {
  echo "== bench-comm $* ($(($(date +%s) - start)) s)"
  mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE -x NANODIST_NCCL_NONBLOCKING "$bin" bench-comm --device cuda \
    --iters "$iters" --warmup "$warmup" "$@" || status=1
}

# 1. The cause of bench-comm's 40+ us NCCL all-reduce: the same sweep on non-blocking communicators.
NANODIST_NCCL_NONBLOCKING=1 bench --op allreduce --impl native --max-bytes 256K \
  --csv "$out/cause/allreduce_native-nonblocking_2gpu_f32.csv"
bench --op allreduce --impl native --max-bytes 256K --csv "$out/cause/allreduce_native-blocking_2gpu_f32.csv"

# 2. auto against each of its choices, 8 B..1 GB, both timings (one-shot vs NCCL comes from here).
for timing in eager graph; do
  bench --op allreduce --impl compare --timing "$timing" --max-bytes 1G \
    --csv "$out/allreduce_compare_${timing}_2gpu_f32.csv"
done

# 3. Reduce-scatter and all-gather, NCCL and our ring, with fits; the all-reduce fits for the plan.
# (The all-reduce CSVs go to OUT/fits/: the bars take every all-reduce from the one compare run.)
for op in reducescatter allgather allreduce; do
  dir=$out; [[ $op == allreduce ]] && dir=$out/fits
  for impl in native ring; do
    bench --op "$op" --impl "$impl" --max-bytes 1G --fit --fit-table "$fits" --csv "$dir/${op}_${impl}_2gpu_f32.csv"
  done
done

# 3b. The pipelined ring (--pipeline P: P pieces round the ring on communicators and streams of
# their own, so one piece's launch, ramp and reduction overlap another's transfer) for the two
# halves, from 16 MB: does it close the gap to NCCL where the step-by-step ring does not?
for op in reducescatter allgather; do
  for p in 2 4; do
    bench --op "$op" --impl ring --pipeline "$p" --min-bytes 16M --max-bytes 1G --csv "$out/${op}_ring-p${p}_2gpu_f32.csv"
  done
done

# 4. The other collectives' curves and the point-to-point matrix.
if [[ "$curves" == 1 ]]; then
  for op in broadcast alltoall sendrecv; do
    for impl in native ring; do
      bench --op "$op" --impl "$impl" --max-bytes 256M --fit --fit-table "$fits" --csv "$out/${op}_${impl}_2gpu_f32.csv"
    done
  done
  bench --op p2p-matrix --min-bytes 8 --max-bytes 256M --csv "$out/fits/p2p-matrix_2gpu_f32.csv"
fi

# 5. The plan against traced steps, with the fits just measured.
if [[ "$plan" == 1 ]]; then
  echo "== check_plan.sh ($(($(date +%s) - start)) s)"
  scripts/check_plan.sh --out "$out" --table "$fits" --bin "$bin" || status=1
fi

python3 scripts/collective_bars.py "$out" | tee "$out/bars.md"
if python3 -c "import matplotlib" 2>/dev/null; then
  python3 scripts/plot_bandwidth.py "$out"/*.csv "$fits" --out "$out/bandwidth.png" || status=1
fi
echo "# done in $(($(date +%s) - start)) s; status $status"
exit $status
