#!/usr/bin/env bash
# Preemption drill: an uninterrupted run, then the same run stopped by SIGUSR1 to mpirun (which
# forwards it to every rank, as a scheduler's SIGTERM to the job would reach them) once it has
# logged step --at, which must exit 75 having saved, then resumed to the end; compares the two
# runs' logged losses step by step (as text: bit for bit). Exit 0 when all are equal.
# --signal-to ranks sends the signal to every rank process instead (as SLURM signals each task
# of a job step), for launchers that do not forward SIGUSR1; --signal TERM or INT sends that one.
#
# usage: scripts/preempt_drill.sh --data DIR [--np 2] [--device cuda] [--steps 60] [--at 25]
#            [--out /tmp/nd_preempt] [--mpirun mpirun] [--signal-to mpirun|ranks] [--signal USR1|TERM|INT] [-- EXTRA_TRAIN_FLAGS...]
# e.g.   scripts/preempt_drill.sh --data data/fineweb10B --np 2 -- --config configs/gpt2_124m.conf --grad-accum 1
set -uo pipefail
cd "$(dirname "$0")/.."
data=""; np=2; device=cuda; steps=60; at=25; out=/tmp/nd_preempt; mpirun=mpirun; signal_to=mpirun; sig=USR1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) data=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --at) at=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mpirun) mpirun=$2; shift 2 ;;
    --signal-to) signal_to=$2; shift 2 ;;
    --signal) sig=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n "2,12p" "$0"; exit 0 ;;
    *) echo "preempt_drill.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $sig == USR1 || $sig == TERM || $sig == INT ]] || { echo "preempt_drill.sh: --signal must be USR1, TERM or INT" >&2; exit 2; }
[[ $signal_to == mpirun || $signal_to == ranks ]] || { echo "preempt_drill.sh: --signal-to must be mpirun or ranks" >&2; exit 2; }
[[ -n $data ]] || { echo "preempt_drill.sh: --data DIR is required" >&2; exit 2; }
rm -rf "$out"; mkdir -p "$out"
train=(build/nanodist train "$@" --data "$data" --device "$device" --max-iters "$steps" --lr-decay-iters "$steps"
       --log-interval 1 --eval-interval $(( steps / 3 )) --keep 2)
$mpirun -np "$np" "${train[@]}" --out "$out/ref" > "$out/ref.txt" 2>&1 || { echo "reference run failed: $out/ref.txt"; exit 1; }
$mpirun -np "$np" "${train[@]}" --out "$out/run" --resume > "$out/run1.txt" 2>&1 &
job=$!
until grep -q "^step *$at/" "$out/run1.txt" 2>/dev/null || ! kill -0 $job 2>/dev/null; do sleep 0.2; done
start=$(date +%s.%N)
if [[ $signal_to == ranks ]]; then
  ranks=$(pgrep -P "$job" -f "nanodist train")
  [[ -n $ranks ]] || { echo "no rank processes under mpirun ($job)"; kill "$job"; exit 1; }
  kill -$sig $ranks 2>/dev/null
else
  kill -$sig $job 2>/dev/null
fi
wait $job; rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "SIG$sig (to $signal_to) after step $at: exit $rc after $took s ($(grep -E 'saving step|^saved' "$out/run1.txt" | tr '\n' ' '))"
(( rc == 75 )) || { echo "expected exit 75: $out/run1.txt"; exit 1; }
$mpirun -np "$np" "${train[@]}" --out "$out/run" --resume > "$out/run2.txt" 2>&1 || { echo "resume failed: $out/run2.txt"; exit 1; }
grep -m1 '^resumed' "$out/run2.txt"
losses() { grep -o '"step":[0-9]*,"loss":[^,]*' "$1" | sort -t: -k2 -n -u; }
diff <(losses "$out/ref/metrics.jsonl") <(losses "$out/run/metrics.jsonl") > "$out/diff.txt"
n=$(losses "$out/ref/metrics.jsonl" | wc -l)
if [[ -s $out/diff.txt ]]; then echo "losses differ (of $n steps): $out/diff.txt"; head -6 "$out/diff.txt"; exit 1; fi
echo "all $n logged losses equal to the uninterrupted run's"
