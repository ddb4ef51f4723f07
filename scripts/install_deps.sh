#!/usr/bin/env bash
# Installs with apt whatever nanodist needs to build and test and is not installed yet.
# Usage: scripts/install_deps.sh [extra-package ...]
set -euo pipefail
# libopenblas-openmp-dev, not the pthread variant: our kernels are OpenMP loops, and a pthread
# OpenBLAS keeps its own pool of spinning threads beside libgomp's (oversubscribing the cores).
# The OpenMP build shares libgomp's pool, honours OMP_NUM_THREADS, and runs single-threaded
# when called inside a parallel region (the per-head attention GEMMs).
packages=(build-essential cmake ninja-build pkg-config libopenmpi-dev openmpi-bin libhdf5-dev
          libcxxopts-dev libgtest-dev libopenblas-openmp-dev "$@")
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
