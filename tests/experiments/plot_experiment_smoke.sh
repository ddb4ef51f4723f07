#!/usr/bin/env bash
# Smoke test of scripts/plot_experiment.py: a tiny ablation and a tiny sweep through the
# nanodist binary, then their PNGs. Exits 77 (ctest: skipped) when matplotlib is missing.
# usage: plot_experiment_smoke.sh NANODIST_BIN SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
python3 -c "import matplotlib" 2>/dev/null || { echo "matplotlib missing: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -c "
import random
random.seed(3)
words = 'the king and queen of rome shall speak now to thee'.split()
print(' '.join(random.choice(words) for _ in range(1500)))" > "$work/text.txt"
"$bin" prepare --input "$work/text.txt" --out "$work/data" > /dev/null
tiny="--data $work/data --n-layer 1 --n-head 1 --n-embd 16 --block-size 16 --batch-size 4 --lr 1e-2 --eval-iters 2"
"$bin" ablate $tiny --out "$work/ablate" --max-iters 12 --seeds 2 --eval-interval 4 --variants no-clip,lr-x100 > /dev/null
"$bin" sweep $tiny --out "$work/sweep" --ladder 1x8,1x16,2x16 --head-dim 8 --max-iters 12 --bootstrap 20 > /dev/null
python3 "$src/scripts/plot_experiment.py" "$work/ablate" --no-install
python3 "$src/scripts/plot_experiment.py" "$work/sweep" --no-install
for png in "$work/ablate/ablation_no-clip.png" "$work/ablate/ablation_lr-x100.png" "$work/ablate/ablation_summary.png" \
    "$work/sweep/sweep_fit.png"; do
  [ -s "$png" ] || { echo "missing $png"; exit 1; }
  [ "$(head -c 4 "$png" | tail -c 3)" = "PNG" ] || { echo "$png is not a PNG"; exit 1; }
done
echo "plots written"
