#!/usr/bin/env bash
# Installs with apt whatever nanodist needs to build and test and is not installed yet.
# Usage: scripts/install_deps.sh [extra-package ...]
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libopenmpi-dev openmpi-bin libhdf5-dev
          libcxxopts-dev libgtest-dev "$@")
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
