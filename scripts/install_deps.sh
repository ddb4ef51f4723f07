#!/usr/bin/env bash
# Installs with apt whatever nanodist needs to build and test and is not installed yet.
# Usage: scripts/install_deps.sh [extra-package ...]
set -euo pipefail
# libopenblas-openmp-dev, not the pthread variant: our kernels are OpenMP loops, and a pthread
# OpenBLAS keeps its own pool of spinning threads beside libgomp's (oversubscribing the cores).
# The OpenMP build shares libgomp's pool, honours OMP_NUM_THREADS, and runs single-threaded
# when called inside a parallel region (the per-head attention GEMMs).
# clang and libclang-rt-dev (its sanitizer and libFuzzer runtimes) build the fuzz targets of the
# file readers (scripts/fuzz.sh, run by scripts/test.sh); g++ builds nanodist itself.
packages=(build-essential cmake ninja-build pkg-config libopenmpi-dev openmpi-bin libhdf5-dev
          libcxxopts-dev libgtest-dev libopenblas-openmp-dev clang libclang-rt-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# With nvcc, the cuDNN attention path (--attention cudnn) compiles against the header-only
# cudnn-frontend from PyPI; its headers are all we need, so no dependencies come with it.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  if ! python3 -c "import importlib.metadata as m; m.version('nvidia-cudnn-frontend')" 2>/dev/null; then
    python3 -m pip install -q --no-deps --disable-pip-version-check --root-user-action=ignore \
      nvidia-cudnn-frontend || echo "nvidia-cudnn-frontend not installed: nanodist builds without cuDNN attention"
  fi
fi
