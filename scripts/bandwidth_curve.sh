#!/usr/bin/env bash
# Collective bandwidth curves on the GPUs of this machine: for each rank count (default: 2, 4
# and all GPUs found), runs `nanodist bench-comm` with NCCL (native) and with our ring, 8 B to
# 4 GB, and writes one CSV per (op, impl, ranks, dtype) into the output folder. Plot them with
# scripts/plot_bandwidth.py. --peer "oneshot twoshot peer auto" adds the peer-memory all-reduces
# (allreduce only); --fit-table FILE appends every curve's alpha-beta fit to FILE (bench-comm --fit),
# for nanodist plan (and the lab's --peer-table).
# --ops takes allreduce reducescatter allgather broadcast alltoall sendrecv p2p-matrix.
#
# usage: scripts/bandwidth_curve.sh [--out DIR] [--np "2 4"] [--ops "allreduce"] [--dtype f32]
#                                   [--min-bytes 8] [--max-bytes 4G] [--iters 20] [--warmup 5]
#                                   [--peer ""] [--fit-table FILE] [--bin build/nanodist]
set -euo pipefail

out=bandwidth
nps=""
ops="allreduce"
dtype=f32
min_bytes=8
max_bytes=4G
iters=20
warmup=5
peer=""
fit_table=""
bin=build/nanodist
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --min-bytes) min_bytes=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --peer) peer=$2; shift 2 ;;
    --fit-table) fit_table=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bandwidth_curve.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

[[ -x "$bin" ]] || { echo "bandwidth_curve.sh: $bin not found (build first)" >&2; exit 1; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[[ "$gpus" -ge 2 ]] || { echo "bandwidth_curve.sh: needs at least 2 GPUs, found ${gpus:-0}" >&2; exit 1; }
if [[ -z "$nps" ]]; then
  for n in 2 4 8; do [[ $n -le $gpus ]] && nps="$nps $n"; done
  [[ " $nps " == *" $gpus "* ]] || nps="$nps $gpus"
fi

# NVLink SHARP stays off: the ring and NCCL are compared on the same links.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
echo "# $gpus GPU(s); ranks: $nps; ops: $ops; dtype $dtype; $min_bytes .. $max_bytes; CSVs in $out"

status=0
for np in $nps; do
  if [[ $np -gt $gpus ]]; then
    echo "# skipping $np ranks: only $gpus GPU(s)"
    continue
  fi
  for op in $ops; do
    runs="native ring"
    if [[ $op == p2p-matrix ]]; then
      csv="$out/p2p-matrix_${np}gpu_${dtype}.csv"
      echo "== p2p-matrix on $np GPU(s) -> $csv"
      mpirun -np "$np" --bind-to none -x NCCL_NVLS_ENABLE "$bin" bench-comm --op p2p-matrix --device cuda \
        --dtype "$dtype" --min-bytes "$min_bytes" --max-bytes "$max_bytes" --iters "$iters" --warmup "$warmup" \
        --csv "$csv" || status=1
      continue
    fi
    [[ $op == allreduce ]] && for i in $peer; do runs="$runs $i"; done
    for impl in $runs; do
      flags=()
      csv="$out/${op}_${impl}_${np}gpu_${dtype}.csv"
      echo "== $op $impl on $np GPU(s) -> $csv"
      [[ -n $fit_table ]] && flags+=(--fit --fit-table "$fit_table")
      mpirun -np "$np" --bind-to none -x NCCL_NVLS_ENABLE "$bin" bench-comm --op "$op" --impl "$impl" \
        --device cuda --dtype "$dtype" --min-bytes "$min_bytes" --max-bytes "$max_bytes" \
        --iters "$iters" --warmup "$warmup" --csv "$csv" "${flags[@]}" || status=1
    done
  done
done
exit $status
