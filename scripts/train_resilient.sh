#!/usr/bin/env bash
# Runs `mpirun -np N nanodist train ... --resume` and, when it fails (a rank killed, frozen and
# caught by the watchdog, a node gone), runs it again from the newest complete checkpoint, up to
# --max-restarts times. Each attempt uses as many ranks as are available now (--ranks-available,
# by default the GPUs nvidia-smi lists for --device cuda, else N), rounded down to a divisor of
# N, and multiplies --grad-accum by N / ranks so the global batch stays the same; checkpoints
# hold full tensors by name, so a run resumes on any data-parallel size. Says what it did and why.
# Exit status: 0 done; 3 the run diverged (no retry: it would diverge again); 75 a signal stopped
# it after saving (no retry here: requeue the job, which resumes); else the last failure's.
# Preemption: a SIGTERM, SIGINT or SIGUSR1 to this script reaches the ranks as SIGUSR1 (which
# mpirun forwards; a SIGTERM to mpirun kills the ranks a few seconds later, mid-save perhaps):
# they save at the next step boundary and exit 75, and so does this script, without restarting.
# A saved stop is read from OUT/stopped_by_signal (written once the stop's checkpoint is complete)
# as well as from status 75: mpirun itself exits 1 when it was signalled too (Ctrl-C).
#
# usage: scripts/train_resilient.sh --np N [--max-restarts 3] [--ranks-available CMD]
#            [--mpirun "mpirun"] [--nanodist build/nanodist] -- TRAIN_FLAGS...
# (--grad-accum must be given among TRAIN_FLAGS, not only in a --config file, when it is not 1)
set -uo pipefail
np=""; max_restarts=3; ranks_cmd=""; mpirun="mpirun"
nanodist="$(cd "$(dirname "$0")/.." && pwd)/build/nanodist"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --np) np=$2; shift 2 ;;
    --max-restarts) max_restarts=$2; shift 2 ;;
    --ranks-available) ranks_cmd=$2; shift 2 ;;
    --mpirun) mpirun=$2; shift 2 ;;
    --nanodist) nanodist=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "train_resilient.sh: unknown argument $1 (train flags go after --)" >&2; exit 2 ;;
  esac
done
say() { echo "train_resilient: $*"; }
[[ "$np" =~ ^[1-9][0-9]*$ ]] || { echo "train_resilient.sh: --np N is required (N >= 1)" >&2; exit 2; }
[[ "$max_restarts" =~ ^[0-9]+$ ]] || { echo "train_resilient.sh: --max-restarts must be >= 0" >&2; exit 2; }
[[ -x "$nanodist" ]] || { echo "train_resilient.sh: $nanodist not found (build first)" >&2; exit 2; }

# The train flags without --grad-accum and --resume (set per attempt); remember both values.
accum=1; out=""; device=cpu; flags=()
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[$i]}
  case "$a" in
    --grad-accum) accum=${args[$((i + 1))]}; i=$((i + 1)) ;;
    --grad-accum=*) accum=${a#*=} ;;
    --resume) ;;
    --resume=*) ;;
    --out) out=${args[$((i + 1))]}; flags+=("$a" "$out"); i=$((i + 1)) ;;
    --out=*) out=${a#*=}; flags+=("$a") ;;
    --device) device=${args[$((i + 1))]}; flags+=("$a" "$device"); i=$((i + 1)) ;;
    --device=*) device=${a#*=}; flags+=("$a") ;;
    *) flags+=("$a") ;;
  esac
done
[[ -n "$out" ]] || { echo "train_resilient.sh: the train flags need --out DIR (where the checkpoints are)" >&2; exit 2; }

ranks_available() {
  if [[ -n "$ranks_cmd" ]]; then
    bash -c "$ranks_cmd"
  elif [[ "$device" == cuda* ]] && command -v nvidia-smi >/dev/null; then
    nvidia-smi -L 2>/dev/null | grep -c '^GPU'
  else
    echo "$np"
  fi
}

newest_checkpoint() { ls "$out"/ckpt_*.h5 2>/dev/null | sort | tail -n 1; }

stopped_by_signal=75  # train/run/exit_status.h: kExitStoppedBySignal
stop_marker() { echo "$out/stopped_by_signal"; }  # train/run/stop_marker.h
child=""; signalled=0
forward_stop() {
  signalled=1
  [[ -n "$child" ]] && kill -USR1 "$child" 2>/dev/null
}
trap forward_stop TERM INT USR1

attempt=0
while :; do
  available=$(ranks_available)
  [[ "$available" =~ ^[0-9]+$ ]] || available=0
  ranks=$(( available < np ? available : np ))
  while (( ranks > 0 && np % ranks != 0 )); do ranks=$((ranks - 1)); done
  if (( ranks == 0 )); then
    say "no ranks available (asked: $np); giving up"
    exit 1
  fi
  run_accum=$(( accum * np / ranks ))
  ckpt=$(newest_checkpoint)
  say "attempt $((attempt + 1)): $ranks rank(s) of $np, --grad-accum $run_accum (global batch kept), from ${ckpt:-the start}"
  start=$(date +%s.%N)
  rm -f "$(stop_marker)"  # what is there afterwards is this attempt's
  $mpirun -np "$ranks" "$nanodist" train "${flags[@]}" --grad-accum "$run_accum" --resume &
  child=$!
  wait "$child"; rc=$?
  # A trapped signal interrupts `wait` (status > 128) while the ranks are still saving.
  while (( rc > 128 )) && kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
  child=""
  took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if (( rc == 0 )); then
    say "attempt $((attempt + 1)) finished after $took s; $attempt restart(s) in all"
    exit 0
  fi
  # nanodist train's own statuses (docs/CLI.md): a restart would change neither.
  if (( rc == 3 )); then
    say "attempt $((attempt + 1)) diverged (non-finite loss or gradient) after $took s; not retrying (exit 3)"
    exit 3
  fi
  if (( rc == stopped_by_signal )) || [[ -f "$(stop_marker)" ]]; then
    say "attempt $((attempt + 1)) was stopped by a signal after saving ($took s; mpirun exit $rc, $(cat "$(stop_marker)" 2>/dev/null || echo "no marker")); newest checkpoint: $(newest_checkpoint); requeue this job or run the same command: it resumes (exit $stopped_by_signal)"
    exit "$stopped_by_signal"
  fi
  if (( signalled )); then
    say "attempt $((attempt + 1)) was stopped by a signal before its save completed (exit $rc, $took s); newest complete checkpoint: $(newest_checkpoint); not retrying"
    exit "$rc"
  fi
  if (( attempt >= max_restarts )); then
    say "attempt $((attempt + 1)) failed (exit $rc) after $took s; giving up after $attempt restart(s)"
    exit "$rc"
  fi
  ckpt=$(newest_checkpoint)
  say "attempt $((attempt + 1)) failed (exit $rc) after $took s; restarting from ${ckpt:-the start (no checkpoint yet)}"
  attempt=$((attempt + 1))
done
