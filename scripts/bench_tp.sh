#!/usr/bin/env bash
# Tensor-parallel throughput and memory on random tokens: GPT-2 large (774M, B=8 shared by the tp
# ranks, T=1024, bf16) at tp 1 (1 GPU) and at each larger size of --tp-sizes (mpirun -np tp) with
# each --collectives of --impls (native: NCCL; ring: ours from send/recv; peer: ours over GPU peer
# memory, whose reduce-scatters and all-gathers the copy engines move), each as plain tp, with
# sequence parallelism (unsplit collectives, --tp-overlap false) and with sequence parallelism and
# overlapped chunked collectives (the default); GPT-2 XL (1.56B, B=8) at tp 1 vs tp 2 (sequence
# parallel, overlapped, each of --xl-impls; skipped while its 25 heads do not split over 2); and
# GPT-2 124M at tp 2 (B=32) vs dp 2 (B=16 per rank, the same global batch). With 4 or more GPUs also GPT-2 124M at dp 2 x tp 2 (B=32 per tp group) vs dp 4
# (B=16 per rank). Prints the median tokens/s of steps 10..STEPS, the peak GPU memory of rank 0
# (the train summary line), and the ratios tpN/tp1 (tokens/s and memory per GPU), tp2/dp2 and
# dp2xtp2/dp4, and each run's SM clock, power per GPU and energy a token (nvidia-smi samples every 250
# ms, medians over the busy ones; logs/NAME.smi.csv). Gradient clipping stays at the configs' value
# (the norm is split over tp ranks).
# --device cpu --tiny: a 2-layer model on the CPU, a smoke test of this script in seconds.
# --only-tp: GPT-2 large and XL only (the issue-28 bars), no 124M comparisons; --no-xl: no XL.
# --sp-env "A=1;B=2 C=3": GPT-2 large tp 2 (--sp-env-impl, sequence parallel + overlap) once more
# per ';'-separated environment (e.g. NCCL_ALGO=Ring, NCCL_MIN_NCHANNELS=8),
# each printed beside the others with its ratio to tp 1.
#
# usage: scripts/bench_tp.sh [--steps 40] [--out out/bench_tp] [--bin build/nanodist] [--tp-sizes "1 2"]
#                            [--device cpu --tiny] [--only-tp] [--no-xl] [--extra "flags for nanodist train"]
#                            [--sp-env "VAR=VALUE ...;..."] [--sp-env-impl native] [--impls "native ring peer"]
#                            [--xl-impls "native peer"]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=40; out=out/bench_tp; bin=build/nanodist; extra=""; device=cuda; tiny=0; tp_sizes="1 2"; only_tp=0; xl=1
sp_env=""; sp_env_impl=native; impls="native ring peer"; xl_impls="native peer"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --extra) extra=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --only-tp) only_tp=1; shift ;;
    --no-xl) xl=0; shift ;;
    --tp-sizes) tp_sizes=$2; shift 2 ;;
    --sp-env) sp_env=$2; shift 2 ;;
    --sp-env-impl) sp_env_impl=$2; shift 2 ;;
    --impls) impls=$2; shift 2 ;;
    --xl-impls) xl_impls=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "bench_tp.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "bench_tp.sh: $bin not found (build first)" >&2; exit 1; }
[[ "$device" == cuda || "$tiny" == 1 ]] || { echo "bench_tp.sh: --device $device needs --tiny" >&2; exit 2; }
for tp in $tp_sizes; do
  [[ "$tp" =~ ^[1-9][0-9]*$ ]] || { echo "bench_tp.sh: --tp-sizes takes positive integers, got '$tp'" >&2; exit 2; }
done
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# GPUs present (the 4-GPU comparison needs 4); the CPU smoke test stands in for any number.
if [[ "$device" == cuda ]]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
else
  gpus=4
fi
mkdir -p "$out/logs"
data="$out/data"
if [[ "$tiny" == 1 ]]; then
  # Stands in for both models: the shapes split over 2 ranks, the sizes run in seconds.
  large="--n-layer 2 --n-head 4 --n-embd 32 --block-size 64 --dtype f32 --device $device"
  small=$large; xlarge=$large; vocab=256; tokens=200000
  [[ "$steps" -gt 15 ]] && steps=15
else
  large="--config configs/gpt2_774m.conf"; small="--config configs/gpt2_124m.conf"; xlarge="--config configs/gpt2_1558m.conf"
  vocab=50257; tokens=4000000
fi
[[ -f "$data/train.bin" ]] || "$bin" prepare --random-tokens "$tokens" --vocab-size "$vocab" --out "$data" >/dev/null

# nvidia-smi's clocks and power beside each run: start_sampling, stop_sampling, clock_figures.
source scripts/gpu_samples.sh
: >"$out/results.tsv"
# name, model flags, ranks, tp, batch per data-parallel group, all-reduce, tp variant (plain, sp, sp_overlap)
run_one() {
  local name=$1 model=$2 np=$3 tp=$4 batch=$5 impl=$6 variant=${7:-plain} env_words=${8:-}
  local tp_flags="--sequence-parallel false"
  [[ "$variant" == sp ]] && tp_flags="--sequence-parallel true --tp-overlap false"
  [[ "$variant" == sp_overlap ]] && tp_flags="--sequence-parallel true --tp-overlap true"
  local run="$out/runs/$name" log="$out/logs/$name.log"
  rm -rf "$run"
  local status=0
  start_sampling "$out/logs/$name.smi.csv"
  # shellcheck disable=SC2086  # $model and $extra hold flag/value pairs
  env $env_words mpirun -np "$np" --bind-to none --oversubscribe "$bin" train $model --data "$data" --out "$run" \
      --tp "$tp" --batch-size "$batch" --grad-accum 1 --collectives "$impl" --max-iters "$steps" \
      --warmup-iters 10 --eval-interval 0 --eval-iters 1 --log-interval 1 $tp_flags $extra >"$log" 2>&1 || status=$?
  stop_sampling
  if [[ "$status" == 0 ]]; then
    local mem
    mem=$(grep -o 'peak GPU memory [0-9.]*' "$log" | tail -n 1 | awk '{print $4}' || true)
    echo -e "$name\t$np\t$tp\t$impl\t${mem:--}\t$run/metrics.jsonl\t$(clock_figures "$out/logs/$name.smi.csv")" \
      >>"$out/results.tsv"
  else
    echo "$name failed; last lines of $log:"; tail -n 5 "$log"
  fi
}
run_one large_tp1 "$large" 1 1 8 native
for tp in $tp_sizes; do
  [[ "$tp" -gt 1 ]] || continue
  if [[ "$tp" -gt "$gpus" ]]; then echo "tp $tp skipped: $gpus GPU(s)"; continue; fi
  for impl in $impls; do
    run_one "large_tp${tp}_${impl}" "$large" "$tp" "$tp" 8 "$impl"
    run_one "large_tp${tp}_${impl}_sp" "$large" "$tp" "$tp" 8 "$impl" sp
    run_one "large_tp${tp}_${impl}_sp_overlap" "$large" "$tp" "$tp" 8 "$impl" sp_overlap
  done
done
# The environments of --sp-env, each a run named after it (its characters other than letters,
# digits, '=' and '_' become '_').
IFS=';' read -r -a sp_envs <<<"$sp_env"
for env_words in "${sp_envs[@]}"; do
  [[ -n "${env_words// /}" ]] || continue
  if [[ "$gpus" -lt 2 ]]; then echo "--sp-env skipped: $gpus GPU(s)"; break; fi
  run_one "large_tp2_${sp_env_impl}_sp_overlap_${env_words//[^A-Za-z0-9=_]/_}" "$large" 2 2 8 "$sp_env_impl" sp_overlap \
    "$env_words"
done
# GPT-2 XL's 25 heads split over 5 or 25 ranks only: at tp 2 there is nothing to compare.
xl_heads=$(awk -F= '/^n-head/ {gsub(/ /, "", $2); print $2}' configs/gpt2_1558m.conf)
if [[ "$xl" == 1 && "$tiny" == 0 && $((xl_heads % 2)) -ne 0 ]]; then
  echo "GPT-2 XL skipped: its $xl_heads heads do not split over tp 2"
  xl=0
fi
if [[ "$xl" == 1 ]]; then
  run_one xl_tp1 "$xlarge" 1 1 8 native
  if [[ "$gpus" -ge 2 ]]; then
    for impl in $xl_impls; do run_one "xl_tp2_${impl}_sp_overlap" "$xlarge" 2 2 8 "$impl" sp_overlap; done
  fi
fi
if [[ "$only_tp" == 0 ]]; then
  for impl in native ring; do
    run_one "small_tp2_$impl" "$small" 2 2 32 "$impl"
    run_one "small_dp2_$impl" "$small" 2 1 16 "$impl"
  done
fi
if [[ "$gpus" -ge 4 && "$only_tp" == 0 ]]; then
  for impl in native ring; do
    run_one "small_dp2tp2_$impl" "$small" 4 2 32 "$impl"
    run_one "small_dp4_$impl" "$small" 4 1 16 "$impl"
  done
fi

python3 - "$out/results.tsv" "$steps" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
last = int(sys.argv[2])
def median_tok(path):
    recs = [r for r in map(json.loads, open(path)) if "tok_per_s" in r and 10 <= r["step"] <= last]
    return statistics.median(r["tok_per_s"] for r in recs) if recs else float("nan")
res = {name: (int(np), int(tp), impl, None if mem == "-" else float(mem), median_tok(path))
       for name, np, tp, impl, mem, path, _ in rows}
# SM clock and power: medians over each run's busy nvidia-smi samples; mJ a token = GPUs x W / tok/s.
clocks = {r[0]: r[6].split() for r in rows}
def energy(name):
    np, tok, watts = res[name][0], res[name][4], clocks[name][1]
    return f"{np * float(watts) * 1e3 / tok:.2f}" if watts != "-" and tok == tok and tok > 0 else "-"
print(f"{'run':<30} {'GPUs':>4} {'tp':>3} {'all-reduce':<10} {'tok/s':>11} {'peak GiB/GPU':>12} "
      f"{'SM MHz':>7} {'W/GPU':>6} {'mJ/tok':>7}")
for name, (np, tp, impl, mem, tok) in res.items():
    print(f"{name:<30} {np:>4} {tp:>3} {impl:<10} {tok:>11,.0f} {mem if mem is not None else '-':>12} "
          f"{clocks[name][0]:>7} {clocks[name][1]:>6} {energy(name):>7}")
def ratio(a, b, i):
    if a not in res or b not in res or res[a][i] is None or res[b][i] is None: return "-"
    return f"{res[a][i] / res[b][i]:.3f}"
print()
tps = sorted({tp for _, tp, _, _, _ in res.values() if tp > 1})
for tp in tps:
    for impl in ("native", "ring", "peer", "auto", "hierarchical"):
        for variant, what in (("", "plain"), ("_sp", "sequence parallel"), ("_sp_overlap", "sequence parallel + overlap")):
            name = f"large_tp{tp}_{impl}{variant}"
            if name in res:
                print(f"GPT-2 large tp{tp}/tp1 ({impl}, {what}): tokens/s x{ratio(name, 'large_tp1', 4)}, "
                      f"peak memory per GPU x{ratio(name, 'large_tp1', 3)}")
for name in res:
    if name.startswith("large_tp2_") and "_sp_overlap_" in name:
        impl, env = name[len("large_tp2_"):].split("_sp_overlap_", 1)
        print(f"GPT-2 large tp2/tp1 ({impl}, sequence parallel + overlap, {env}): tokens/s "
              f"x{ratio(name, 'large_tp1', 4)}, peak memory per GPU x{ratio(name, 'large_tp1', 3)}")
for name in res:
    if name.startswith("xl_tp2_") and name.endswith("_sp_overlap"):
        print(f"GPT-2 XL tp2/tp1 ({name[len('xl_tp2_'):-len('_sp_overlap')]}, sequence parallel + overlap): tokens/s "
              f"x{ratio(name, 'xl_tp1', 4)}, peak memory per GPU x{ratio(name, 'xl_tp1', 3)}")
for impl in ("native", "ring"):
    if f"small_tp2_{impl}" not in res: continue
    print(f"GPT-2 124M tp2/dp2 ({impl}): tokens/s x{ratio(f'small_tp2_{impl}', f'small_dp2_{impl}', 4)}, "
          f"peak memory per GPU x{ratio(f'small_tp2_{impl}', f'small_dp2_{impl}', 3)}")
for impl in ("native", "ring"):
    if f"small_dp2tp2_{impl}" in res:
        print(f"GPT-2 124M dp2xtp2/dp4 ({impl}): tokens/s x{ratio(f'small_dp2tp2_{impl}', f'small_dp4_{impl}', 4)}, "
              f"peak memory per GPU x{ratio(f'small_dp2tp2_{impl}', f'small_dp4_{impl}', 3)}")
PY
