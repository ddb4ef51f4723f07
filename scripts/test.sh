#!/usr/bin/env bash
# The test command of the README (and of CI): installs what is missing, builds, runs every test,
# then fuzzes each file reader briefly under ASan and UBSan (scripts/fuzz.sh, its own build-fuzz/).
# GPU tests skip themselves on a machine without a GPU; MPI tests run with 2, 3 and 4 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# The lab (lab/, nanodist-lab) is built and tested too, so that it keeps compiling.
NANODIST_CMAKE_ARGS="-DNANODIST_LAB=ON ${NANODIST_CMAKE_ARGS:-}" scripts/build.sh

# The script smoke tests run `python3` from PATH, and the plot, export and tokenizer scripts need
# these modules in it. apt's python3-* packages reach only Debian's own interpreter, which is often
# not the python3 on PATH (pyenv, conda), so pip installs them into the interpreter that runs the
# tests. An interpreter pip may not change (Debian's, PEP 668) gets a virtual environment in
# build/python instead, which sees its packages and goes first on PATH.
python_modules=(numpy matplotlib h5py safetensors)
missing_modules() {
  "$1" -c 'import importlib.util, sys; print(*(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' \
    "${python_modules[@]}"
}
pip_may_install() {
  "$1" -m pip --version >/dev/null 2>&1 && "$1" -c 'import os, sys, sysconfig
sys.exit(os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'
}
pip_install() {
  "$1" -m pip install -q --disable-pip-version-check --root-user-action=ignore "${@:2}" >/dev/null
}
venv=$PWD/build/python
[ -x "$venv/bin/python3" ] && export PATH="$venv/bin:$PATH"
if command -v python3 >/dev/null && missing=$(missing_modules python3) && [ -n "$missing" ]; then
  if ! pip_may_install python3; then
    scripts/install_deps.sh python3-venv
    python3 -m venv --system-site-packages "$venv"
    export PATH="$venv/bin:$PATH"
  fi
  echo "installing with pip for $(command -v python3): $missing"
  # shellcheck disable=SC2086  # one module a word
  pip_install python3 $missing || echo "pip could not install $missing: the smoke tests that need them skip"
fi

if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
# Two tests run at once on two cores: one OpenMP thread each avoids oversubscribed spinning.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
ctest --test-dir build --output-on-failure -j 2
# Each reader over its seed corpus, then FUZZ_SECONDS (default 10) of new inputs.
scripts/fuzz.sh "${FUZZ_SECONDS:-10}"
