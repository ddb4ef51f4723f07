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

Flags are read as people type them: `--n_layer` is `--n-layer` (in config files too), an unknown
flag names the nearest known one (`--learning_rate`: did you mean `--lr`?), `-h` is `--help`.

**The output directory is the run's.** `train` refuses an `--out` that holds another run's
checkpoints or metrics.jsonl unless `--resume` (continue it) or `--overwrite` (delete its
checkpoints, metrics.jsonl and run.conf, and start over) is given, and refuses an `--out` that
another live `nanodist train` holds (a lock, `OUT/.nanodist.lock`, which the kernel drops when
the holder dies, so a killed run never blocks its requeue). Each run writes its resolved settings
to `OUT/run.conf` (`nanodist train --config OUT/run.conf` repeats it); a `--resume` with other
settings prints the keys that changed.

**Threads.** `--threads N` (every command) sets the CPU threads of the BLAS and the OpenMP loops;
by default the physical cores divided among the ranks on the node, or `OMP_NUM_THREADS` where it
is set. On a shared machine set it to the cores you may use: a step waits for its slowest thread,
and threads beyond free cores (other jobs, hyper-threads, ranks x threads > cores) make every
step slower, not faster.

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
