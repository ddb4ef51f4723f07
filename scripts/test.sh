#!/usr/bin/env bash
# The test command of the README (and of CI): installs what is missing, builds, runs every test.
# GPU tests skip themselves on a machine without a GPU; MPI tests run with 2, 3 and 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# The lab (lab/, nanodist-lab) is built and tested too, so that it keeps compiling.
NANODIST_CMAKE_ARGS="-DNANODIST_LAB=ON ${NANODIST_CMAKE_ARGS:-}" scripts/build.sh
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# Two tests run at once on two cores: one OpenMP thread each avoids oversubscribed spinning.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
ctest --test-dir build --output-on-failure -j 2
