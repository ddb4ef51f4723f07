#!/usr/bin/env bash
# The main job of the README: installs what is missing, builds, tokenizes the default corpus
# (the King James Bible from Debian's bible-kjv, offline) with a BPE vocabulary of 2048 tokens,
# so the model writes whole words rather than letters, trains a small GPT on the CPU for a few
# minutes with the schedule fitted to that time (so it ends on a decayed model), prints a sample,
# and says how many of the sample's words are words of the Bible. Set DEMO_SECONDS to train longer
# or shorter. Each run starts over in out/demo (--overwrite).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh bible-kjv
scripts/build.sh
data=out/kjv_bpe2048
run=out/demo
prompt="And God said"
[ -f $data/train.bin ] || build/nanodist prepare --corpus kjv --tokenizer bpe --vocab-size 2048 --out $data
echo "demo: training for ${DEMO_SECONDS:-240} s on the CPU, then a sample"
build/nanodist train --data $data --out $run --overwrite --config configs/shakespeare_char.conf \
  --n-layer 4 --n-head 4 --n-embd 128 --block-size 128 --batch-size 32 --dropout 0.0 \
  --max-iters 100000 --eval-interval 250 --eval-iters 20 \
  --max-seconds "${DEMO_SECONDS:-240}" --fit-schedule
build/nanodist sample --ckpt $run --prompt "$prompt" --tokens 300 | tee $run/sample.txt
python3 scripts/corpus_words.py $data $run/sample.txt --prompt "$prompt" || true
