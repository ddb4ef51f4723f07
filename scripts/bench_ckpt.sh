#!/usr/bin/env bash
# Times checkpoint saves of a real-size model against `dd conv=fsync` of the same bytes on the
# same disk, and the step times around asynchronous saves against the others. Trains --steps
# steps of --config (tiny batches: the model's size is what matters) on random tokens of GPT-2's
# vocabulary, saving every --every steps, then writes the newest checkpoint's bytes with dd.
#
# usage: scripts/bench_ckpt.sh [--config configs/gpt2_350m.conf] [--np 1] [--device cpu]
#            [--steps 8] [--every 4] [--async-save false] [--out /tmp/nd_bench_ckpt] [--mpirun mpirun]
#            [-- EXTRA_TRAIN_FLAGS...]
# e.g. on a GPU: scripts/bench_ckpt.sh --config configs/gpt2_1558m.conf --device cuda --np 1 --async-save true
set -euo pipefail
cd "$(dirname "$0")/.."
config=configs/gpt2_350m.conf; np=1; device=cpu; steps=8; every=4; async=false; out=/tmp/nd_bench_ckpt; mpirun=mpirun
while [[ $# -gt 0 ]]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --every) every=$2; shift 2 ;;
    --async-save) async=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --mpirun) mpirun=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench_ckpt.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin=build/nanodist
[[ -x $bin ]] || { echo "bench_ckpt.sh: $bin not found (build first)" >&2; exit 2; }
mkdir -p "$out"
[[ -f $out/data/train.bin ]] || $bin prepare --random-tokens 2000000 --vocab-size 50257 --out "$out/data" >/dev/null
rm -rf "$out/run"
dtype=f32; [[ $device == cuda* ]] && dtype=bf16
launch=(); (( np > 1 )) && launch=($mpirun -np "$np")
# Each output line is stamped with the wall clock as it arrives ($EPOCHREALTIME, no fork per line).
"${launch[@]}" $bin train --config "$config" --data "$out/data" --out "$out/run" --device "$device" --dtype "$dtype" \
  --batch-size 1 --block-size 64 --grad-accum 1 --max-iters "$steps" --eval-interval 0 --log-interval 1 \
  --ckpt-interval "$every" --keep 1 --async-save "$async" "$@" |
  while IFS= read -r line; do printf '%s\t%s\n' "$EPOCHREALTIME" "$line"; done > "$out/train_timed.txt"
cut -f 2- "$out/train_timed.txt" > "$out/train.txt"
grep -E '^(saved|step)' "$out/train.txt"
ckpt=$(ls "$out"/run/ckpt_*.h5 | sort | tail -n 1)
bytes=$(du -sb --apparent-size "$ckpt" "${ckpt%.h5}.parts" | awk '{s += $1} END {printf "%.0f", s}')
# The same bytes in 64 MiB blocks (one file per rank, written in parallel as the parts are).
per_rank=$(( bytes / np / 67108864 + 1 ))
start=$(date +%s.%N)
for ((r = 0; r < np; r++)); do
  dd if=/dev/zero of="$out/dd_$r" bs=64M count="$per_rank" conv=fsync status=none &
done
wait
dd_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
rm -f "$out"/dd_*
# An asynchronous save's line gives the writer's own time ("part written in W s"): its total runs
# to the index, written at the next step boundary or after the run's final evaluation.
last_saved=$(grep '^saved' "$out/train.txt" | tail -n 1)
if [[ $last_saved == *"part written in "* ]]; then
  save_s=$(sed -E 's/.*part written in ([0-9.]+) s.*/\1/' <<<"$last_saved")
else
  save_s=$(sed -E 's/.*, ([0-9.]+) s \(snapshot.*/\1/' <<<"$last_saved")
fi
echo "checkpoint $ckpt: $bytes bytes; last save ${save_s} s; dd conv=fsync of the same bytes ($np file(s)): ${dd_s} s;" \
     "ratio $(awk -v a="$save_s" -v b="$dd_s" 'BEGIN { printf "%.2f", a / b }')"
# Step times: the wall time from one step's line to the next, so a save's pause at the step
# boundary counts in the step after it. A step is "around a save" when an asynchronous save was in
# flight during it: from the save's step line to its "saved" line. The slow-down is their mean
# against the median of the other steps of the same run (the first two steps, warm-up, left out);
# then the stricter measure: the slowest single step around a save against the same median, of the
# steps in flight and those whose wall time holds a "saved" line (the completion: index, prune;
# marked +, counted among the other steps above as before).
awk -F '\t' '
  $2 ~ /^step +[0-9]+\// { split($2, f, /[ \/]+/); n = f[2] + 0; at[n] = $1; last = n }
  $2 ~ /^saved .*ckpt_[0-9]+\.h5/ { match($2, /ckpt_[0-9]+/); k = substr($2, RSTART + 5, RLENGTH - 5) + 0
                                    if (k in at && last > k) { for (m = k + 1; m <= last; m++) around[m] = 1; done[last + 1] = 1 } }
  END {
    for (n = 3; n <= last; n++) if ((n in at) && ((n - 1) in at)) {
      d = 1000 * (at[n] - at[n - 1]); line = line sprintf(" %d:%.0f%s%s", n, d, (n in around) ? "*" : "", (n in done) ? "+" : "")
      if (n in around) { a += d; na++ } else o[++no] = d }
    print "step wall times in ms (* = an asynchronous save in flight, + = a save completed in it):" line
    if (na == 0 || no == 0) { print "no step ran while a save was in flight (synchronous saves, or too few steps)"; exit }
    for (i = 1; i <= no; i++) for (j = i + 1; j <= no; j++) if (o[j] < o[i]) { t = o[i]; o[i] = o[j]; o[j] = t }
    med = no % 2 ? o[(no + 1) / 2] : (o[no / 2] + o[no / 2 + 1]) / 2
    printf "steps with a save in flight: %d, mean %.0f ms; other steps: %d, median %.0f ms; slow-down %.1f%%\n", na, a / na, no, med, 100 * (a / na / med - 1)
    # The stricter measure: the slowest single step around a save (in flight, or holding its
    # completion) against the same median; the bar holds only when this one is under it.
    for (n = 3; n <= last; n++) if (((n in around) || (n in done)) && ((n - 1) in at)) {
      d = 1000 * (at[n] - at[n - 1]); if (worst == "" || d > worst) { worst = d; wn = n } }
    printf "worst step around a save: step %d, %.0f ms against the median %.0f ms; slow-down %.1f%%\n", wn, worst, med, 100 * (worst / med - 1) }
' "$out/train_timed.txt"
