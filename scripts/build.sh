#!/usr/bin/env bash
# Configures and builds nanodist into build/ (CUDA on when nvcc is found: AUTO).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${NANODIST_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
