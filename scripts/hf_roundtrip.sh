#!/usr/bin/env bash
# The Hugging Face round trip in one go, offline (for the GPU machine, where torch and transformers
# are installed): a small char model trained for 200 steps on this repository's own docs, exported
# with scripts/export_hf.py, loaded back with transformers and compared with nanodist twice:
#   1. export_hf.py --check: logits of GPT2LMHeadModel against scripts/gpt_torch.py's GPT on the
#      checkpoint (prints "max |transformers - gpt_torch| = ..."), and the tokenizer's ids;
#   2. scripts/hf_eval_loss.py: the exported model's mean loss over the val split against
#      `nanodist eval` on the same windows (prints "|transformers - nanodist| = ...").
# Exits non-zero when either differs past its tolerance.
#
#   scripts/hf_roundtrip.sh [BIN] [WORKDIR]      (defaults: build/nanodist, a fresh temporary dir)
#   DEVICE=cuda scripts/hf_roundtrip.sh           (train on the GPU; eval and the checks stay f32)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/nanodist}
work=${2:-$(mktemp -d)}
device=${DEVICE:-cpu}
python=${PYTHON:-python3}
[[ -x "$bin" ]] || { echo "hf_roundtrip.sh: $bin not found (build first: scripts/build.sh)" >&2; exit 2; }
mkdir -p "$work"

# ASCII text (tabs, newlines, printable characters), so the char tokenizer exports as GPT-2's too.
cat README.md docs/*.md | LC_ALL=C tr -cd '\11\12\40-\176' >"$work/text.txt"
"$bin" prepare --input "$work/text.txt" --out "$work/data"
"$bin" train --data "$work/data" --out "$work/run" --device "$device" \
  --n-layer 2 --n-head 4 --n-embd 64 --block-size 64 --batch-size 16 --dropout 0 \
  --max-iters 200 --lr 3e-3 --min-lr 3e-4 --warmup-iters 20 --lr-decay-iters 200 \
  --eval-interval 0 --eval-iters 4 --log-interval 50

"$python" scripts/export_hf.py "$work/run" "$work/hf" --check --no-install
"$bin" eval --ckpt "$work/run" --data "$work/data" --json | tee "$work/eval.json"
"$python" scripts/hf_eval_loss.py "$work/hf" "$work/data/val.bin" --expect "$work/eval.json"
echo "hf_roundtrip.sh: passed ($work)"
