#!/usr/bin/env bash
# Fine-tunes a model on new text, end to end: tokenizes the text with the model's own tokenizer
# (prepare --tokenizer-from), trains a new run from its weights (train --init-from: fresh
# optimizer, step 0, the model's shape), then samples from the result.
#
# usage: scripts/finetune.sh --from CKPT_OR_DIR --input FILE [--input FILE ...] --out DIR
#            [--prompt TEXT] [--tokens N] [--nanodist build/nanodist] [-- TRAIN_FLAGS...]
#   --from    a nanodist checkpoint or run directory, or a directory scripts/export_hf.py wrote
#   DIR/data  the tokenized text; DIR/run the fine-tuned run (checkpoints, metrics.jsonl, run.conf)
# Exit status: train's (0 done, 3 diverged, 75 stopped by a signal: rerun with the same
# arguments plus --resume among TRAIN_FLAGS to continue), else 1 or 2 for bad arguments.
set -uo pipefail
from=""; out=""; prompt=""; tokens=200; inputs=()
nanodist="$(cd "$(dirname "$0")/.." && pwd)/build/nanodist"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --from) from=$2; shift 2 ;;
    --input) inputs+=(--input "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --nanodist) nanodist=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "finetune.sh: unknown argument $1 (train flags go after --)" >&2; exit 2 ;;
  esac
done
say() { echo "finetune: $*"; }
[[ -n "$from" && -n "$out" && ${#inputs[@]} -gt 0 ]] || {
  echo "finetune.sh: --from, --input and --out are required (see --help)" >&2; exit 2; }
[[ -x "$nanodist" ]] || { echo "finetune.sh: $nanodist not found (build first: scripts/build.sh)" >&2; exit 2; }

resuming=0
for a in "$@"; do [[ "$a" == --resume ]] && resuming=1; done
if [[ $resuming -eq 0 || ! -f "$out/data/train.bin" ]]; then
  say "tokenizing ${inputs[*]//--input /} with the tokenizer of $from"
  "$nanodist" prepare "${inputs[@]}" --out "$out/data" --tokenizer-from "$from" || exit $?
fi
say "training from the weights of $from"
"$nanodist" train --data "$out/data" --out "$out/run" --init-from "$from" "$@"
rc=$?
case $rc in
  0) ;;
  3) say "the run diverged (non-finite loss or gradient); lower --lr or raise --warmup-iters"; exit 3 ;;
  75) say "stopped by a signal after saving; run again with --resume to continue"; exit 75 ;;
  *) exit $rc ;;
esac
say "a sample of the fine-tuned model:"
sample=("$nanodist" sample --ckpt "$out/run" --tokens "$tokens")
[[ -n "$prompt" ]] && sample+=(--prompt "$prompt")
"${sample[@]}"
