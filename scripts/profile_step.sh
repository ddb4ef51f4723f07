#!/usr/bin/env bash
# Where the time of one training step goes: trains GPT-2 124M (B=32, T=1024, bf16, eager steps) on
# random tokens for a few steps with the op timer on (--op-times, tensor/op_timer.h)
# and prints its table: each op's forward and backward (GEMMs by shape) with the device time per
# step from CUDA events on the compute stream, its share of the step's wall time, and TFLOP/s for
# GEMMs and attention or GB/s where the op declares its bytes. --nsys also runs the same training
# under `nsys profile` (where nsys exists) and prints its per-kernel summary (cuda_gpu_kern_sum).
#
# usage: scripts/profile_step.sh [--steps 8] [--batch 32] [--config configs/gpt2_124m.conf]
#                                [--vocab 50257] [--extra "train flags"] [--nsys]
#                                [--out out/profile_step] [--bin build/nanodist]
#   e.g. the char model with its dropout:
#        scripts/profile_step.sh --config configs/shakespeare_char.conf --vocab 65 --batch 64 --extra "--block-size 256"
set -euo pipefail
cd "$(dirname "$0")/.."
steps=8; batch=32; config=configs/gpt2_124m.conf; vocab=50257; extra=""; nsys=0
out=out/profile_step; bin=build/nanodist
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --vocab) vocab=$2; shift 2 ;;
    --extra) extra=$2; shift 2 ;;
    --nsys) nsys=1; shift ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "profile_step.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
die() { echo "profile_step.sh: $*" >&2; exit 1; }
[[ -x "$bin" ]] || die "$bin not found (build first: scripts/build.sh)"
[[ "$steps" =~ ^[0-9]+$ && "$steps" -ge 3 ]] || die "--steps must be a number >= 3 (the first two are not timed), got '$steps'"
[[ -f "$config" ]] || die "no config $config"

mkdir -p "$out"
data="$out/data_v$vocab"
[[ -f "$data/train.bin" ]] || "$bin" prepare --random-tokens 2000000 --vocab-size "$vocab" --out "$data" >"$out/prepare.log" 2>&1 ||
  die "prepare failed; see $out/prepare.log"

# shellcheck disable=SC2206  # $extra holds flag/value pairs
train=("$bin" train --config "$config" --data "$data" --batch-size "$batch" --grad-accum 1 --max-iters "$steps"
       --warmup-iters 1 --eval-interval 0 --eval-iters 1 --log-interval 1 --cuda-graph false $extra)
echo "== op timer: ${train[*]} --out $out/run"
rm -rf "$out/run"
"${train[@]}" --op-times --out "$out/run" | tee "$out/op_times.log" | sed -n '/^op times/,$p'

if [[ "$nsys" == 1 ]]; then
  command -v nsys >/dev/null || die "--nsys: nsys is not on PATH (the op timer table above needs nothing else)"
  echo "== nsys: the same steps, per-kernel summary (every step, warm-up included)"
  rm -rf "$out/run_nsys"
  nsys profile --force-overwrite true --trace cuda --output "$out/step" "${train[@]}" --out "$out/run_nsys" \
    >"$out/nsys.log" 2>&1 || die "nsys profile failed; see $out/nsys.log"
  nsys stats --force-export true --report cuda_gpu_kern_sum --format table "$out/step.nsys-rep" | tee "$out/nsys_kernels.txt"
fi
