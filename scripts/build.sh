#!/usr/bin/env bash
# Configures and builds nanodist into build/ (CUDA on when nvcc is found: AUTO).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
# ccache, where installed, makes rebuilds and other checkouts of the tree cheap (not needed).
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -B build -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release ${NANODIST_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc)"
