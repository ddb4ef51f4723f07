#!/usr/bin/env bash
# Memory against speed of large GPTs on the GPUs at hand, in one run on random tokens: nanodist at
# each ZeRO stage (--zero) and recompute mode (--recompute) against PyTorch FSDP2
# (scripts/bench_torch.py --fsdp under torchrun, eager and compiled, without activation checkpointing
# for recompute none and with it for block), the same shapes and batch per GPU. Prints a table: model,
# stage, recompute, tokens/s (all GPUs), MFU, peak GiB per GPU (nanodist: rank 0's "peak GPU memory";
# FSDP2: the largest torch.cuda.max_memory_allocated over the ranks), and nanodist's tokens/s over the
# faster FSDP2 form with the same recompute. Medians of steps 10..STEPS. nanodist writes no checkpoint.
# On the GPU, nvidia-smi samples every GPU's SM clock and power through each run (every 250 ms): the
# table's "SM MHz" and "W/GPU" are their medians over the samples where the GPU was busy (>= 90%), so
# a run held below its top clock by the power cap shows it (logs/NAME.smi.csv); "mJ/tok" is the GPUs'
# energy a token (GPUs x W/GPU / tok/s), which a run held to its power limit can only lower to go faster.
# With --ladder it finds instead, for every configuration, the largest model of the ladder it trains:
# each climbs the ladder and stops at the first shape that runs out of GPU memory (or fails, or passes
# --timeout); a rank that dies never leaves the others waiting (--comm-timeout, torchrun, timeout).
# Installs torch with pip when it is missing and a peer is asked for (never in CI).
#
# usage: scripts/bench_memory.sh [--models "gpt2-xl gpt-2.7b"] [--zero "0"] [--recompute "none block"]
#          [--torch "eager compile"] [--np N] [--batch 2] [--block-size 1024] [--steps 20] [--ladder]
#          [--ladder-models "gpt2-xl gpt-2.7b gpt-6.7b gpt-13b"] [--timeout 1800] [--out out/bench_memory]
#          [--bin build/nanodist] [--flags "more nanodist train flags"] [--peak-tflops T] [--device cuda|cpu]
#   models      gpt2 (124M), gpt2-xl (1.5B: 48 x 1600, 25 heads), gpt-2.7b (32 x 2560, 32 heads),
#               gpt-6.7b (32 x 4096, 32 heads; configs/gpt_6.7b.conf), gpt-13b (40 x 5120, 40 heads), or
#               L:C:H for any shape (layers, width, heads)
#   --zero      nanodist's ZeRO stages; 0 passes no flag (today's all-reduce), 1-3 pass --zero N
#   --recompute nanodist's modes (none, attention, block); FSDP2 runs for none and block only
#   --torch     FSDP2 forms, "" for none (no torch needed)
#   --np        GPUs (default: every GPU nvidia-smi lists; 2 on the CPU)
#   --timeout   seconds one configuration may take, start-up included, before it counts as failed
#   --device cpu  a smoke test of the script itself: f32 nanodist runs (use small L:C:H shapes)
# e.g. the issue's comparison on 2 GPUs:
#   scripts/bench_memory.sh --models gpt-6.7b --zero "3" --recompute block --batch 2
#   scripts/bench_memory.sh --ladder --zero "0 1 2 3" --recompute "none block"
set -euo pipefail
cd "$(dirname "$0")/.."

models="gpt2-xl gpt-2.7b"
zeros="0"
recomputes="none block"
torch_forms="eager compile"
np=""
batch=2
block_size=1024
steps=20
first=10
ladder=0
ladder_models="gpt2-xl gpt-2.7b gpt-6.7b gpt-13b"
timeout_s=1800
out=out/bench_memory
bin=build/nanodist
flags=""
peak_tflops=""
device=cuda
python=${PYTHON:-python3}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --zero) zeros=$2; shift 2 ;;
    --recompute) recomputes=$2; shift 2 ;;
    --torch) torch_forms=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --block-size) block_size=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --ladder) ladder=1; shift ;;
    --ladder-models) ladder_models=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --flags) flags=$2; shift 2 ;;
    --peak-tflops) peak_tflops=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "bench_memory.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

die() { echo "bench_memory.sh: $*" >&2; exit 1; }
[[ -x "$bin" ]] || die "$bin not found (build first: scripts/build.sh)"
for n in "$batch" "$block_size" "$timeout_s"; do [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "not a positive number: '$n'"; done
[[ "$steps" =~ ^[0-9]+$ && "$steps" -ge "$first" ]] || die "--steps must be a number >= $first, got '$steps'"
for z in $zeros; do [[ "$z" =~ ^[0-3]$ ]] || die "--zero takes stages 0-3, got '$z'"; done
for r in $recomputes; do [[ "$r" =~ ^(none|attention|block)$ ]] || die "--recompute takes none, attention, block; got '$r'"; done
for f in $torch_forms; do [[ "$f" =~ ^(eager|compile)$ ]] || die "--torch takes eager and compile, got '$f'"; done

# model -> "L H C"
shape_of() {
  case "$1" in
    gpt2) echo "12 12 768" ;;
    gpt2-xl) echo "48 25 1600" ;;
    gpt-2.7b) echo "32 32 2560" ;;
    gpt-6.7b) echo "32 32 4096" ;;
    gpt-13b) echo "40 40 5120" ;;
    *)
      [[ "$1" =~ ^([1-9][0-9]*):([1-9][0-9]*):([1-9][0-9]*)$ ]] ||
        die "unknown model '$1' (gpt2, gpt2-xl, gpt-2.7b, gpt-6.7b, gpt-13b or L:C:H)"
      (( BASH_REMATCH[2] % BASH_REMATCH[3] == 0 )) || die "$1: width ${BASH_REMATCH[2]} not divisible by heads ${BASH_REMATCH[3]}"
      echo "${BASH_REMATCH[1]} ${BASH_REMATCH[3]} ${BASH_REMATCH[2]}" ;;
  esac
}
for m in $models $ladder_models; do shape_of "$m" >/dev/null; done

gpu_name=cpu
case "$device" in
  cuda)
    dtype=bf16
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || true)
    [[ -n "$gpu_name" ]] || die "--device cuda but nvidia-smi finds no GPU"
    np=${np:-$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)}
    if [[ -z "$peak_tflops" ]]; then
      case "$gpu_name" in
        *H100*PCIe*) peak_tflops=756 ;;
        *H100*|*H200*) peak_tflops=989 ;;
        *A100*) peak_tflops=312 ;;
        *) peak_tflops=0 ;;
      esac
    fi ;;
  cpu) dtype=f32; np=${np:-2}; torch_forms="" ;;
  *) die "--device must be cuda or cpu, got '$device'" ;;
esac
peak_tflops=${peak_tflops:-0}
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "--np must be a positive number, got '$np'"

mkdir -p "$out/logs" "$out/runs"
if [[ -n "$torch_forms" ]] && ! "$python" -c "import torch" 2>/dev/null; then
  [[ -z "${CI:-}" ]] || die "torch is missing, and CI installs nothing: run with --torch \"\""
  echo "== torch is missing: $python -m pip install torch"
  "$python" -m pip install torch >"$out/logs/pip.log" 2>&1 || die "pip install torch failed; see $out/logs/pip.log"
fi
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

data="$out/data"
[[ -f "$data/train.bin" ]] || "$bin" prepare --random-tokens 4000000 --vocab-size 50257 --out "$data" >/dev/null ||
  die "prepare failed"
results="$out/results.tsv"
: >"$results"

# How a finished run went, from its exit status and log: ok, oom, timeout or failed.
outcome() {  # status log
  if [[ "$1" == 0 ]]; then echo ok
  elif grep -q -e "out of GPU memory" -e '"out_of_memory": true' -e "CUDA out of memory" "$2"; then echo oom
  elif [[ "$1" == 124 || "$1" == 137 ]]; then echo timeout
  else echo failed
  fi
}

# "tok mfu peak_bytes" of a nanodist run: medians of metrics.jsonl's steps [first, steps]; MFU over
# all GPUs at the peak used for FSDP2 too; rank 0's peak from the final line of its log.
nanodist_figures() {  # metrics log
  "$python" - "$1" "$first" "$steps" "$peak_tflops" "$np" "$2" <<'EOF'
import json, re, statistics, sys
path, first, last, peak, n, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
rows = [r for r in map(json.loads, open(path)) if "tok_per_s" in r and first <= r["step"] <= last]
if len(rows) != last - first + 1:
    sys.exit(f"{path}: {len(rows)} step records in steps {first}..{last}, expected {last - first + 1}")
tok = statistics.median(r["tok_per_s"] for r in rows)
flops = statistics.median(r["flops_per_s"] for r in rows)
mfu = f"{flops / (peak * 1e12 * n):.4f}" if peak > 0 else "-"
memory = re.findall(r"peak GPU memory ([0-9.]+) GiB", open(log).read())
print(f"{tok:.1f} {mfu} {float(memory[-1]) * 2**30:.0f}" if memory else f"{tok:.1f} {mfu} -")
EOF
}

torch_figures() {  # log
  "$python" - "$1" <<'EOF'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("bench_torch: ")]
if not lines:
    sys.exit(f"{sys.argv[1]}: no bench_torch result line")
r = json.loads(lines[-1][len("bench_torch: "):])
mfu = f"{r['mfu']:.4f}" if r.get("mfu") is not None else "-"
mem = r.get("peak_allocated_bytes")
print(f"{r['tok_per_s']:.1f} {mfu} {mem if mem is not None else '-'}")
EOF
}

# nvidia-smi's clocks and power beside each run: start_sampling, stop_sampling, clock_figures.
source scripts/gpu_samples.sh

# One configuration on one model; appends its line to $results and sets $last_outcome.
# impl: nanodist-Z (ZeRO stage Z) or fsdp2-eager / fsdp2-compile; recompute: none, attention, block.
run_one() {  # model impl recompute
  local model=$1 impl=$2 recompute=$3 L H C name log status figures
  read -r L H C <<<"$(shape_of "$model")"
  name="${model//:/x}_${impl}_${recompute}"
  log="$out/logs/$name.log"
  echo "== $model ($L x $C, $H heads) $impl recompute $recompute, B=$batch T=$block_size on $np x $gpu_name (log: $log)"
  status=0
  start_sampling "$out/logs/$name.smi.csv"
  if [[ "$impl" == nanodist-* ]]; then
    local zero=${impl#nanodist-} zero_flag=()
    [[ "$zero" == 0 ]] || zero_flag=(--zero "$zero")
    rm -rf "$out/runs/$name"
    # shellcheck disable=SC2086  # $flags holds flag/value pairs
    timeout -k 30 "$timeout_s" mpirun -np "$np" --bind-to none "$bin" train --config configs/gpt2_1558m.conf \
      --data "$data" --out "$out/runs/$name" --n-layer "$L" --n-head "$H" --n-embd "$C" --block-size "$block_size" \
      --batch-size "$batch" --grad-accum 1 --max-iters "$steps" --warmup-iters 10 --eval-interval 0 --eval-iters 1 \
      --log-interval 1 --no-checkpoint --comm-timeout 300 --recompute "$recompute" "${zero_flag[@]}" \
      --device "$device" --dtype "$dtype" $flags >"$log" 2>&1 || status=$?
    last_outcome=$(outcome "$status" "$log")
    if [[ "$last_outcome" == ok ]]; then
      figures=$(nanodist_figures "$out/runs/$name/metrics.jsonl" "$log") || last_outcome=failed
    fi
  else
    local form=${impl#fsdp2-} extra=()
    [[ "$form" == compile ]] && extra+=(--compile)
    [[ "$recompute" == block ]] && extra+=(--ac)
    timeout -k 30 "$timeout_s" "$python" -m torch.distributed.run --standalone --nproc-per-node "$np" \
      scripts/bench_torch.py --fsdp --model gpt2 --n-layer "$L" --n-head "$H" --n-embd "$C" --block-size "$block_size" \
      --batch-size "$batch" --steps "$steps" --first "$first" --device "$device" --peak-tflops "$peak_tflops" \
      "${extra[@]}" >"$log" 2>&1 || status=$?
    last_outcome=$(outcome "$status" "$log")
    if [[ "$last_outcome" == ok ]]; then
      figures=$(torch_figures "$log") || last_outcome=failed
    fi
  fi
  stop_sampling
  if [[ "$last_outcome" != ok ]]; then
    figures="- - -"
    echo "   $last_outcome: $(grep -m 1 -e "nanodist: error" -e "Error" "$log" || tail -n 1 "$log")"
  fi
  echo -e "$model\t$L\t$C\t$H\t$impl\t$recompute\t$last_outcome\t$figures\t$(clock_figures "$out/logs/$name.smi.csv")" >>"$results"
}

# Every configuration: nanodist at each stage and recompute mode, then each FSDP2 form without and
# with activation checkpointing (as far as --recompute asks for none and block).
configurations=()
for z in $zeros; do for r in $recomputes; do configurations+=("nanodist-$z $r"); done; done
for f in $torch_forms; do
  for r in $recomputes; do [[ "$r" == attention ]] || configurations+=("fsdp2-$f $r"); done
done

if [[ "$ladder" == 0 ]]; then
  for model in $models; do
    # shellcheck disable=SC2086  # $conf is "impl recompute"
    for conf in "${configurations[@]}"; do run_one "$model" $conf; done
  done
else
  for conf in "${configurations[@]}"; do
    for model in $ladder_models; do
      # shellcheck disable=SC2086  # $conf is "impl recompute"
      run_one "$model" $conf
      [[ "$last_outcome" == ok ]] || break  # the first shape this configuration cannot train ends its climb
    done
  done
fi

"$python" - "$results" "$gpu_name" "$np" "$batch" "$block_size" "$dtype" "$peak_tflops" "$first" "$steps" "$ladder" <<'EOF' | tee "$out/summary.txt"
import sys
path, gpu, n, B, T, dtype, peak, first, last, ladder = sys.argv[1:11]
rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
peak_text = f"MFU at {float(peak):g} TFLOP/s per GPU" if float(peak) > 0 else "no MFU peak"
print(f"\nbench_memory: {n} x {gpu}, {dtype}, B={B} per GPU, T={T}; medians of steps {first}..{last}; {peak_text}")
def label(impl):
    return f"nanodist zero {impl.split('-')[1]}" if impl.startswith("nanodist") else impl.replace("-", " ")
def figures(r):
    tok, mfu, mem = r[7].split()
    return (f"{float(tok):>11,.0f}" if tok != "-" else f"{'-':>11}",
            f"{100 * float(mfu):>5.1f}%" if mfu != "-" else f"{'-':>6}",
            f"{float(mem) / 2**30:>8.2f}" if mem != "-" else f"{'-':>8}")
if ladder == "0":
    # nanodist over the faster FSDP2 form with the same recompute (none: no checkpointing; block: with it)
    best = {}
    for r in rows:
        if r[4].startswith("fsdp2") and r[6] == "ok":
            key = (r[0], r[5])
            best[key] = max(best.get(key, 0.0), float(r[7].split()[0]))
    print(f"{'model':<10} {'shape':<14} {'stage':<16} {'recompute':<9} {'tok/s':>11} {'MFU':>6} {'GiB/GPU':>8} {'x fsdp2':>8} {'SM MHz':>7} {'W/GPU':>6} {'mJ/tok':>7}")
    for r in rows:
        shape = f"{r[1]}x{r[2]}/{r[3]}h"
        if r[6] != "ok":
            print(f"{r[0]:<10} {shape:<14} {label(r[4]):<16} {r[5]:<9} {r[6]:>11}")
            continue
        tok, mfu, mem = figures(r)
        toks = float(r[7].split()[0])  # an ok run always has its tokens/s
        ratio = "-"
        if r[4].startswith("nanodist") and best.get((r[0], r[5])):
            ratio = f"{toks / best[(r[0], r[5])]:.2f}x"
        mhz, watts = r[8].split() if len(r) > 8 else ("-", "-")
        # Energy a token: every GPU's median busy power over the run's tokens a second. Held to its
        # power limit, a run's tokens/s is the limit over this; less of it is the only way faster.
        energy = f"{1e3 * int(n) * float(watts) / toks:.1f}" if watts != "-" else "-"
        print(f"{r[0]:<10} {shape:<14} {label(r[4]):<16} {r[5]:<9} {tok} {mfu} {mem} {ratio:>8} {mhz:>7} {watts:>6} {energy:>7}")
else:
    print(f"{'stage':<16} {'recompute':<9} {'largest trained':<16} {'tok/s':>11} {'MFU':>6} {'GiB/GPU':>8}  next")
    seen = []
    for r in rows:
        if (r[4], r[5]) not in seen:
            seen.append((r[4], r[5]))
    for impl, recompute in seen:
        runs = [r for r in rows if r[4] == impl and r[5] == recompute]
        trained = [r for r in runs if r[6] == "ok"]
        stopped = [r for r in runs if r[6] != "ok"]
        nxt = f"{stopped[0][0]}: {stopped[0][6]}" if stopped else "(ladder's top)"
        if trained:
            tok, mfu, mem = figures(trained[-1])
            print(f"{label(impl):<16} {recompute:<9} {trained[-1][0]:<16} {tok} {mfu} {mem}  {nxt}")
        else:
            print(f"{label(impl):<16} {recompute:<9} {'none':<16} {'-':>11} {'-':>6} {'-':>8}  {nxt}")
EOF
