#!/usr/bin/env bash
# docs/CLI.md is the --help of every subcommand, in the order `nanodist --help` lists them, under
# a short preface. `scripts/cli_doc.sh [BIN]` rewrites it; `--check [BIN]` exits 1 (with a diff)
# when it no longer equals what the binary prints, which the test suite runs.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[[ "${1:-}" == "--check" ]] && { check=1; shift; }
bin=${1:-build/nanodist}
[[ -x "$bin" ]] || { echo "cli_doc.sh: $bin not found (build first)" >&2; exit 2; }

render() {
  cat <<'PREFACE'
# nanodist command line

One binary, `nanodist`, with subcommands. Flags are long and dash-separated and mirror nanoGPT's
config keys. A config file (`--config FILE`: lines `key = value`, `#` comments, keys are the flag
names without the dashes) sets defaults; the command line overrides it. Under `mpirun -np N` the
world is N ranks, data-parallel size N / tp. Errors print one line, `nanodist: error: ...`, and
exit non-zero. This page is the `--help` of every command (kept equal to it by a test;
regenerate with `scripts/cli_doc.sh`).

PREFACE
  echo '```'
  "$bin" --help
  echo '```'
  for cmd in $("$bin" --help | awk '/^commands:/{on=1; next} on && NF==0{exit} on{print $1}'); do
    echo
    echo "## $cmd"
    echo
    echo '```'
    "$bin" "$cmd" --help
    echo '```'
  done
}

if [[ $check == 1 ]]; then
  diff -u docs/CLI.md <(render) || { echo "docs/CLI.md differs from --help: run scripts/cli_doc.sh" >&2; exit 1; }
else
  render >docs/CLI.md
fi
