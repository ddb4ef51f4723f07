#!/usr/bin/env bash
# Fault drill: starts `mpirun -np NP nanodist train` (CPU: a tiny model; CUDA: GPT-2 124M in bf16
# on random tokens), waits for training to run, then hurts the last rank and times how long the
# job takes to end, printing each fault, what happened and how long it took:
#   freeze           SIGSTOP, default settings (the heartbeat should end the job in ~15 s)
#   freeze-watchdog  SIGSTOP with --comm-timeout 10 --heartbeat-timeout 0 (the watchdog alone)
#   kill             SIGKILL, default settings (mpirun ends the job)
#   all              the three in turn
#
# usage: scripts/fault_drill.sh cpu|cuda NP freeze|freeze-watchdog|kill|all
#            [--bin build/nanodist] [--out out/fault_drill] [--model "train flags"] [--limit 120]
set -uo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 3 ]] || { sed -n '2,12p' "$0"; exit 2; }
device=$1; np=$2; which=$3; shift 3
bin=build/nanodist; out=out/fault_drill; model=""; limit=120
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    *) echo "fault_drill.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ "$device" == cpu || "$device" == cuda ]] || { echo "fault_drill.sh: device must be cpu or cuda" >&2; exit 2; }
[[ "$np" =~ ^[2-9]$|^[1-9][0-9]+$ ]] || { echo "fault_drill.sh: NP must be >= 2" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "fault_drill.sh: $bin not found (build first)" >&2; exit 2; }
[[ "$(id -u)" -ne 0 ]] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$out"
if [[ "$device" == cpu ]]; then
  [[ -n "$model" ]] || model="--n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2"
  [[ -f "$out/data_cpu/train.bin" ]] || "$bin" prepare --random-tokens 200000 --vocab-size 256 --out "$out/data_cpu" >/dev/null
  data="$out/data_cpu"
else
  [[ -n "$model" ]] || model="--n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --batch-size 16 --dtype bf16"
  [[ -f "$out/data_cuda/train.bin" ]] || "$bin" prepare --random-tokens 4000000 --vocab-size 50257 --out "$out/data_cuda" >/dev/null
  data="$out/data_cuda"
fi

now() { date +%s.%N; }
# A background child that has exited stays a zombie until waited for: not alive.
alive() { [[ -e /proc/$1/stat ]] && [[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]]; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The pid of the process below $1 whose environment says OMPI_COMM_WORLD_RANK=$2.
rank_pid() {
  local ancestor=$1 rank=$2 pid p
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    { tr "\0" "\n" <"/proc/$pid/environ"; } 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" || continue
    p=$pid
    while [[ -n "$p" && "$p" -gt 1 ]]; do
      [[ "$p" == "$ancestor" ]] && { echo "$pid"; return; }
      p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null)
    done
  done
}

drill() {
  local name=$1 signal=$2 flags=$3 victim=$((np - 1)) log="$out/$1.log" run="$out/run_$1"
  rm -rf "$run"; : >"$log"
  setsid mpirun -np "$np" --oversubscribe "$bin" train --data "$data" --out "$run" --device "$device" $model \
    --max-iters 100000000 --eval-interval 0 --log-interval 10 --warmup-iters 10 $flags >"$log" 2>&1 &
  local job=$! start
  start=$(now)
  until grep -q '^step' "$log" || ! alive "$job"; do
    sleep 0.5
    if [[ $(since "$start" | cut -d. -f1) -ge 600 ]]; then break; fi
  done
  local pid
  pid=$(rank_pid "$job" "$victim")
  if [[ -z "$pid" ]] || ! alive "$job"; then
    echo "fault $name: training never started (see $log)"
    kill -KILL -- -"$job" 2>/dev/null
    return
  fi
  local hurt
  hurt=$(now)
  kill "-$signal" "$pid"
  local ended=no
  while [[ $(since "$hurt" | cut -d. -f1) -lt "$limit" ]]; do
    if ! alive "$job"; then ended=yes; break; fi
    sleep 0.1
  done
  local took
  took=$(since "$hurt")
  wait "$job" 2>/dev/null
  local rc=$?
  kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; kill -KILL -- -"$job" 2>/dev/null
  local said
  said=$(grep -m1 'nanodist: error:' "$log" || echo "(no error line)")
  if [[ $ended == yes ]]; then
    echo "fault $name: rank $victim got SIG$signal ($device, $np ranks${flags:+, $flags}): job ended after $took s, exit $rc"
  else
    echo "fault $name: rank $victim got SIG$signal ($device, $np ranks${flags:+, $flags}): job STILL RUNNING after $took s (killed by the drill)"
  fi
  echo "  $said"
}

case "$which" in
  freeze) drill freeze STOP "" ;;
  freeze-watchdog) drill freeze-watchdog STOP "--comm-timeout 10 --heartbeat-timeout 0" ;;
  kill) drill kill KILL "" ;;
  all)
    drill freeze STOP ""
    drill freeze-watchdog STOP "--comm-timeout 10 --heartbeat-timeout 0"
    drill kill KILL ""
    ;;
  *) echo "fault_drill.sh: unknown fault '$which' (freeze, freeze-watchdog, kill, all)" >&2; exit 2 ;;
esac
