#!/usr/bin/env bash
# The inter-node path measured on one host: the transports two nodes would use, forced where the
# ranks could otherwise share memory. GPU part: bench-comm all-reduce curves (NCCL, our flat ring,
# our hierarchical all-reduce with --ranks-per-node 1, i.e. every rank its own "node") and a
# short data-parallel GPT-2 124M run, each over NCCL's default path (NVLink) and over its socket
# transport (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1). CPU part: the same curves with Open MPI's
# default transports (shared memory) and with its TCP BTL only (--mca pml ob1 --mca btl tcp,self).
# Writes CSVs, logs and summary.txt under --out.
#
# usage: scripts/network_path.sh [--part gpu|cpu|all] [--np 2] [--out out/network_path]
#            [--max-bytes 1G] [--cpu-max-bytes 16M] [--iters 20] [--steps 30] [--ranks-per-node 1]
#            [--bin build/nanodist]
# --ranks-per-node K: passed to every run (1: each rank its own "node"; with
# --np 4, 2 gives the hierarchical all-reduce its two levels, 2 nodes x 2 ranks).
set -euo pipefail
cd "$(dirname "$0")/.."
part=""; np=2; out=out/network_path; max_bytes=1G; cpu_max_bytes=16M; steps=30; iters=20; per_node=1; bin=build/nanodist
while [[ $# -gt 0 ]]; do
  case "$1" in
    --part) part=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --max-bytes) max_bytes=$2; shift 2 ;;
    --cpu-max-bytes) cpu_max_bytes=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --ranks-per-node) per_node=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "network_path.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "network_path.sh: $bin not found (build first)" >&2; exit 1; }
if [[ -z "$part" ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  part=$([[ "${gpus:-0}" -ge "$np" ]] && echo all || echo cpu)
fi
[[ "$part" =~ ^(gpu|cpu|all)$ ]] || { echo "network_path.sh: --part must be gpu, cpu or all" >&2; exit 2; }
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out/csv" "$out/logs"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

# One bench-comm curve: LABEL DEVICE IMPL MAX_BYTES then env assignments and mpirun flags, split by --.
curve() {
  local label=$1 device=$2 impl=$3 max=$4; shift 4
  local envs=() mpi=()
  while [[ $# -gt 0 && "$1" != -- ]]; do envs+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  mpi=("$@")
  local csv="$out/csv/${label}.csv" log="$out/logs/${label}.log"
  # --ranks-per-node 1: every rank its own node, so the hierarchical all-reduce goes across.
  [[ "$device" == cpu ]] && mpi+=(--oversubscribe)  # more ranks than cores on a small machine
  env "${envs[@]}" mpirun -np "$np" --bind-to none "${mpi[@]}" \
    -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE \
    "$bin" bench-comm --op allreduce --impl "$impl" --device "$device" --dtype f32 --ranks-per-node "$per_node" \
    --min-bytes 8 --max-bytes "$max" --iters "$iters" --warmup 5 --csv "$csv" >"$log" 2>&1 ||
    { echo "$label failed; last lines of $log:"; tail -n 5 "$log"; return 0; }
  note "$label: $(awk -F, 'NR == 2 { t0 = $9 } $5 == 1048576 { m = $11 } NR > 1 { s = $5; b = $11 }
      END { printf "8 B %.1f us | 1 MB %s | %d KB %.2f GB/s busbw", t0, m == "" ? "-" : sprintf("%.2f GB/s", m), s / 1024, b }' "$csv")"
}

if [[ "$part" == cpu || "$part" == all ]]; then
  note "# CPU, $np ranks, all-reduce f32 (8 B and the largest size)"
  for impl in native ring hierarchical; do
    curve "cpu_shm_$impl" cpu "$impl" "$cpu_max_bytes" NCCL_P2P_DISABLE=0 NCCL_SHM_DISABLE=0 --
    curve "cpu_tcp_$impl" cpu "$impl" "$cpu_max_bytes" NCCL_P2P_DISABLE=0 NCCL_SHM_DISABLE=0 -- \
      --mca pml ob1 --mca btl tcp,self
  done
fi

if [[ "$part" == gpu || "$part" == all ]]; then
  note "# GPU, $np ranks, all-reduce f32 (8 B and the largest size)"
  for path in nvlink socket; do
    flags=(NCCL_P2P_DISABLE=0 NCCL_SHM_DISABLE=0)
    [[ "$path" == socket ]] && flags=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
    for impl in native ring hierarchical; do curve "gpu_${path}_$impl" cuda "$impl" "$max_bytes" "${flags[@]}" --; done
  done

  note "# GPT-2 124M data-parallel (B=32 per GPU, T=1024, bf16), median of steps 10..$steps"
  data="$out/data"
  [[ -f "$data/train.bin" ]] || "$bin" prepare --random-tokens 4000000 --vocab-size 50257 --out "$data" >/dev/null
  ddp() {  # LABEL NP COLLECTIVES then env assignments
    local label=$1 ranks=$2 coll=$3; shift 3
    local run="$out/runs/$label" log="$out/logs/$label.log"
    rm -rf "$run"
    if env "$@" mpirun -np "$ranks" --bind-to none \
        -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE "$bin" train --config configs/gpt2_124m.conf --data "$data" \
        --ranks-per-node "$per_node" \
        --out "$run" --batch-size 32 --grad-accum 1 --collectives "$coll" --max-iters "$steps" --warmup-iters 10 \
        --eval-interval 0 --eval-iters 1 --log-interval 1 >"$log" 2>&1; then
      python3 - "$run/metrics.jsonl" "$steps" "$label" ${base_tok:+"$base_tok" "$ranks"} <<'PY' | tee -a "$summary"
import json, statistics, sys
recs = [r for r in map(json.loads, open(sys.argv[1])) if "tok_per_s" in r and 10 <= r["step"] <= int(sys.argv[2])]
tok = statistics.median(r["tok_per_s"] for r in recs)
ms = statistics.median(r["ms"] for r in recs)
line = f"{sys.argv[3]}: {tok:,.0f} tok/s, {ms:.2f} ms/step"
if sys.argv[4:]:  # tok/s of one GPU, and this run's GPU count
    line += f", efficiency {100 * tok / (int(sys.argv[5]) * float(sys.argv[4])):.1f}%"
print(line)
PY
    else
      echo "$label failed; last lines of $log:"; tail -n 5 "$log"
    fi
  }
  base_tok=""
  ddp ddp_np1 1 native NCCL_P2P_DISABLE=0 NCCL_SHM_DISABLE=0
  base_tok=$(grep '^ddp_np1:' "$summary" | sed 's/^ddp_np1: \([0-9,]*\) tok.*/\1/' | tr -d ,)  || true
  for path in nvlink socket; do
    flags=(NCCL_P2P_DISABLE=0 NCCL_SHM_DISABLE=0)
    [[ "$path" == socket ]] && flags=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
    for coll in native hierarchical; do ddp "ddp_np${np}_${path}_$coll" "$np" "$coll" "${flags[@]}"; done
  done
  note "(efficiency = tok/s at np $np / ($np x tok/s at np 1))"
fi
echo "summary: $summary"
