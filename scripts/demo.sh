#!/usr/bin/env bash
# The main job of the README: installs what is missing, builds, tokenizes the default corpus
# (the King James Bible from Debian's bible-kjv, offline), trains a small GPT on the CPU for a
# few minutes with the schedule fitted to that time (so it ends on a decayed model), and prints a
# sample. Set DEMO_SECONDS to train longer or shorter.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh bible-kjv
scripts/build.sh
data=out/kjv_char
run=out/demo
[ -f $data/train.bin ] || build/nanodist prepare --corpus kjv --tokenizer char --out $data
echo "demo: training for ${DEMO_SECONDS:-240} s on the CPU, then a sample"
build/nanodist train --data $data --out $run --config configs/shakespeare_char.conf \
  --n-layer 4 --n-head 4 --n-embd 128 --block-size 128 --batch-size 32 --dropout 0.0 \
  --max-iters 100000 --eval-interval 250 --eval-iters 20 \
  --max-seconds "${DEMO_SECONDS:-240}" --fit-schedule
build/nanodist sample --ckpt $run --prompt "And God said" --tokens 300
