#!/usr/bin/env bash
# Builds the fuzz targets of tests/fuzz (one per file reader; README.md there) into build-fuzz/
# with clang, ASan and UBSan, and runs each over its seed corpus and then for SECONDS of fuzzing.
# A finding (crash, sanitizer report, leak, an exception other than nd::Error, a timeout) stops the
# script with the input saved in build-fuzz/findings/<target>/. New inputs the fuzzer finds go to
# build-fuzz/corpus/<target>/, not into the repository's seeds.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET ...]     (default 10 seconds, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
shift || true
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
CC=clang CXX=clang++ cmake -B build-fuzz -G Ninja -DNANODIST_FUZZ=ON -DNANODIST_CUDA=OFF -DCMAKE_BUILD_TYPE=None \
  "${launcher[@]}" >/dev/null
cmake --build build-fuzz --target nd_fuzz -j "$(nproc)"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for source in tests/fuzz/*_fuzz.cpp; do
    name=$(basename "$source")
    targets+=("${name%_fuzz.cpp}")
  done
fi
export OMP_NUM_THREADS=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for target in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$target" "build-fuzz/findings/$target"
  log="build-fuzz/findings/$target/log.txt"
  # -rss_limit_mb: a file that makes a reader allocate gigabytes is a finding too.
  if ! "build-fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/findings/$target/" "build-fuzz/corpus/$target" "tests/fuzz/corpus/$target" \
       >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $target found a failing input (build-fuzz/findings/$target/); see tests/fuzz/README.md" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  echo "fuzz: $target ok: $runs runs in ${seconds} s ($speed per second)"
done
