#!/usr/bin/env bash
# Training speed of nanodist on random tokens (no dataset needed), bf16 on one GPU: GPT-2 124M
# (gpt2) at B=32, 350M (gpt2-350m) at B=16 and 774M (gpt2-774m) at B=8, all T=1024, and the
# shakespeare_char model at B=64, T=256 without its dropout (char) and with it (char-dropout, 0.2);
# tokens/s, ms/step and MFU are the median over steps 10..STEPS of metrics.jsonl, and the peak
# device memory is the run's "peak GPU memory" (bytes in live tensors). With --peer it also times
# scripts/gpt_torch.py's GPT in PyTorch (eager and torch.compile) on the same GPU and shapes, with
# its torch.cuda.max_memory_allocated, and prints the ratios
# nanodist/PyTorch of tokens/s and of peak memory. Builds nothing: expects build/nanodist (or --bin).
# Full logs go to the output folder. `--models "gpt2 gpt2-350m" --peer` took 3.5 minutes on an H100.
#
# usage: scripts/bench_train.sh [--peer] [--steps 40] [--models "gpt2 char"] [--out out/bench_train]
#                               [--batch MODEL=B ...] [--device cuda|cpu] [--tiny] [--peak-tflops T]
#                               [--bin build/nanodist] [--flags "nanodist train flags"]
#   --batch        the batch of one model, for both implementations (e.g. --batch gpt2-774m=16). The
#                  defaults fit both on an 80 GB GPU with room (H100: 350M at B=16 peaks at 22.5 GiB in
#                  nanodist, 27.5 GiB in PyTorch eager; 774M at B=8 at 27.3 GiB in nanodist); raise
#                  them to find the largest common batch
#   --tiny         2 layers, 2 heads, 64 wide, B=4, T=64 for every model (smoke tests, e.g. on a CPU:
#                  scripts/bench_train.sh --device cpu --tiny --models char --steps 12 --peer)
#   --flags        more flags for nanodist's runs only (e.g. --flags "--attention cudnn")
#   --peak-tflops  the device's dense bf16 peak for MFU; default from nvidia-smi (H100/H200 SXM 989,
#                  H100 PCIe 756, A100 312), none on a CPU
set -euo pipefail
cd "$(dirname "$0")/.."

peer=0
steps=40
first=10
models="gpt2 char"
out=out/bench_train
device=cuda
tiny=0
peak_tflops=""
bin=build/nanodist
flags=""
python=${PYTHON:-python3}
declare -A batch_of=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --peer) peer=1; shift ;;
    --steps) steps=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --peak-tflops) peak_tflops=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --flags) flags=$2; shift 2 ;;
    --batch)
      [[ "$2" =~ ^([a-z0-9-]+)=([0-9]+)$ && "${BASH_REMATCH[2]}" -ge 1 ]] ||
        { echo "bench_train.sh: --batch takes MODEL=B with B >= 1, got '$2'" >&2; exit 2; }
      batch_of[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "bench_train.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

die() { echo "bench_train.sh: $*" >&2; exit 1; }
[[ -x "$bin" ]] || die "$bin not found (build first: scripts/build.sh)"
[[ "$steps" =~ ^[0-9]+$ && "$steps" -ge "$first" ]] || die "--steps must be a number >= $first, got '$steps'"
case "$device" in
  cuda) dtype=bf16 ;;
  cpu) dtype=f32 ;;
  *) die "--device must be cuda or cpu, got '$device'" ;;
esac

gpu_name="cpu"
if [[ "$device" == cuda ]]; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || true)
  [[ -n "$gpu_name" ]] || die "--device cuda but nvidia-smi finds no GPU"
  if [[ -z "$peak_tflops" ]]; then
    case "$gpu_name" in
      *H100*PCIe*) peak_tflops=756 ;;
      *H100*|*H200*) peak_tflops=989 ;;
      *A100*) peak_tflops=312 ;;
      *) peak_tflops=0 ;;
    esac
  fi
fi
peak_tflops=${peak_tflops:-0}

# model -> "B T vocab config extra-flags"
model_spec() {
  case "$1" in
    gpt2) echo "32 1024 50257 configs/gpt2_124m.conf --grad-accum 1" ;;
    gpt2-350m) echo "16 1024 50257 configs/gpt2_350m.conf --grad-accum 1" ;;
    gpt2-774m) echo "8 1024 50257 configs/gpt2_774m.conf --grad-accum 1" ;;
    char) echo "64 256 65 configs/shakespeare_char.conf --dropout 0.0" ;;
    char-dropout) echo "64 256 65 configs/shakespeare_char.conf" ;;
    *) die "unknown model '$1' (gpt2, gpt2-350m, gpt2-774m, char or char-dropout)" ;;
  esac
}
for model in $models; do model_spec "$model" >/dev/null; done
for model in "${!batch_of[@]}"; do
  [[ " $models " == *" $model "* ]] || die "--batch $model=${batch_of[$model]}: $model is not in --models '$models'"
done

mkdir -p "$out/logs" "$out/data" "$out/runs"
results="$out/results.tsv"
: >"$results"
any_failed=0

# Median tok/s, ms and MFU of the steps in [first, steps] of a metrics.jsonl, and the peak GPU
# memory in bytes from the run's log; "-" for no MFU or no memory figure (the CPU).
median_of_metrics() {
  "$python" - "$1" "$first" "$steps" "$peak_tflops" "$2" <<'EOF'
import json, re, statistics, sys
path, first, last, peak, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rows = [r for r in map(json.loads, open(path)) if "tok_per_s" in r and first <= r["step"] <= last]
if len(rows) != last - first + 1:
    sys.exit(f"{path}: {len(rows)} step records in steps {first}..{last}, expected {last - first + 1}")
tok = statistics.median(r["tok_per_s"] for r in rows)
ms = statistics.median(r["ms"] for r in rows)
flops = statistics.median(r["flops_per_s"] for r in rows)
mfu = f"{flops / (peak * 1e12):.4f}" if peak > 0 else "-"
memory = re.findall(r"peak GPU memory ([0-9.]+) GiB", open(log).read())
mem = f"{float(memory[-1]) * 2**30:.0f}" if memory else "-"
print(f"{tok:.1f} {ms:.3f} {mfu} {mem}")
EOF
}

# The "bench_torch: {json}" line of a log as "tok ms mfu".
torch_result() {
  "$python" - "$1" <<'EOF'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("bench_torch: ")]
if not lines:
    sys.exit(f"{sys.argv[1]}: no bench_torch result line")
r = json.loads(lines[-1][len("bench_torch: "):])
mfu = f"{r['mfu']:.4f}" if r["mfu"] is not None else "-"
mem = r.get("peak_allocated_bytes")
print(f"{r['tok_per_s']:.1f} {r['ms']:.3f} {mfu} {mem if mem is not None else '-'}")
EOF
}

record() {  # model B T impl "tok ms mfu peak_bytes" | "failed"
  echo -e "$1\t$2\t$3\t$4\t$5" >>"$results"
}

for model in $models; do
  read -r B T vocab config extra <<<"$(model_spec "$model")"
  B=${batch_of[$model]:-$B}
  size_flags=()
  if [[ "$tiny" == 1 ]]; then
    B=4; T=64
    size_flags=(--n-layer 2 --n-head 2 --n-embd 64)
  fi
  data="$out/data/${model}_v${vocab}"
  tokens=$([[ "$tiny" == 1 ]] && echo 20000 || echo 2000000)
  echo "== $model: random data ($tokens tokens, vocab $vocab) in $data"
  "$bin" prepare --random-tokens "$tokens" --vocab-size "$vocab" --out "$data" >"$out/logs/${model}_prepare.log" 2>&1 ||
    die "prepare failed; see $out/logs/${model}_prepare.log"

  run="$out/runs/$model"
  log="$out/logs/${model}_nanodist.log"
  rm -rf "$run"
  echo "== $model: nanodist, B=$B T=$T $dtype on $device, $steps steps (log: $log)"
  # shellcheck disable=SC2086  # $extra and $flags hold flag/value pairs
  if "$bin" train --config "$config" --data "$data" --out "$run" --batch-size "$B" --block-size "$T" $extra $flags \
      "${size_flags[@]}" --dtype "$dtype" --device "$device" --max-iters "$steps" --warmup-iters 10 \
      --eval-interval 0 --eval-iters 1 --log-interval 1 >"$log" 2>&1 &&
      line=$(median_of_metrics "$run/metrics.jsonl" "$log"); then
    record "$model" "$B" "$T" nanodist "$line"
  else
    echo "   failed; last lines of $log:"; tail -n 5 "$log" | sed 's/^/   /'
    record "$model" "$B" "$T" nanodist failed; any_failed=1
  fi

  if [[ "$peer" == 1 ]]; then
    for mode in eager compile; do
      log="$out/logs/${model}_torch_${mode}.log"
      compile_flag=(); [[ "$mode" == compile ]] && compile_flag=(--compile)
      tiny_flag=(); [[ "$tiny" == 1 ]] && tiny_flag=(--tiny)
      echo "== $model: PyTorch $mode (log: $log)"
      if "$python" scripts/bench_torch.py --model "$model" --batch-size "$B" --block-size "$T" --steps "$steps" \
          --first "$first" --device "$device" --dtype "$dtype" --peak-tflops "$peak_tflops" "${compile_flag[@]}" \
          "${tiny_flag[@]}" >"$log" 2>&1 && line=$(torch_result "$log"); then
        record "$model" "$B" "$T" "torch_$mode" "$line"
      else
        echo "   failed; last lines of $log:"; tail -n 5 "$log" | sed 's/^/   /'
        record "$model" "$B" "$T" "torch_$mode" failed; any_failed=1
      fi
    done
  fi
done

# The table: one line per (model, implementation); PyTorch lines carry nanodist / PyTorch of tok/s
# and of peak device memory (below 1.00x: nanodist needs less).
"$python" - "$results" "$gpu_name" "$dtype" "$peak_tflops" "$first" "$steps" <<'EOF' | tee "$out/summary.txt"
import sys
path, gpu, dtype, peak, first, last = sys.argv[1:7]
peak_text = f"peak {float(peak):g} TFLOP/s" if float(peak) > 0 else "no MFU peak"
print(f"\nbench_train: {gpu}, {dtype}, {peak_text}; median of steps {first}..{last}; mem = peak in live tensors")
print(f"{'model':<12} {'B':>3} {'T':>5}  {'impl':<14} {'tok/s':>11} {'ms/step':>9} {'MFU':>6} {'mem GiB':>8}"
      f"  {'tok/s ours/this':>15} {'mem ours/this':>13}")
rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
ours = {r[0]: r[4].split() for r in rows if r[3] == "nanodist" and r[4] != "failed"}
names = {"nanodist": "nanodist", "torch_eager": "torch eager", "torch_compile": "torch.compile"}
for model, B, T, impl, result in rows:
    if result == "failed":
        print(f"{model:<12} {B:>3} {T:>5}  {names[impl]:<14} {'failed':>11}")
        continue
    tok, ms, mfu, mem = result.split()
    mfu_text = f"{100 * float(mfu):.1f}%" if mfu != "-" else "-"
    mem_text = f"{float(mem) / 2**30:.2f}" if mem != "-" else "-"
    speed_ratio = mem_ratio = "-"
    if impl != "nanodist" and model in ours:
        speed_ratio = f"{float(ours[model][0]) / float(tok):.2f}x"
        if mem != "-" and ours[model][3] != "-":
            mem_ratio = f"{float(ours[model][3]) / float(mem):.2f}x"
    print(f"{model:<12} {B:>3} {T:>5}  {names[impl]:<14} {float(tok):>11,.0f} {float(ms):>9.2f} {mfu_text:>6} {mem_text:>8}"
          f"  {speed_ratio:>15} {mem_ratio:>13}")
EOF
exit "$any_failed"
