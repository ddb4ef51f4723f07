#!/usr/bin/env bash
# scripts/slurm/train.sbatch on one CPU machine: it parses (bash -n); its launch line, with mpirun
# standing in for srun, trains 2 ranks as 2 pretend nodes with the hierarchical all-reduce and
# leaves a checkpoint; with a stub binary, exit 3 is not retried, 75 is passed on, and other
# failures are retried MAX_RESTARTS times.
# usage: slurm_sbatch_test.sh NANODIST_BIN SOURCE_DIR MPIEXEC
set -euo pipefail
bin=$1
src=$2
mpiexec=$3
script="$src/scripts/slurm/train.sbatch"
bash -n "$script"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset SLURM_JOB_ID

python3 -c "
import random
random.seed(3)
words = 'the king and queen of rome shall speak now to thee'.split()
print(' '.join(random.choice(words) for _ in range(1500)))" > "$work/text.txt"
"$bin" prepare --input "$work/text.txt" --out "$work/data" > /dev/null

LAUNCH="$mpiexec -np 2 --oversubscribe" NANODIST="$bin" \
  OUT="$work/out" bash "$script" --data "$work/data" --n-layer 1 --n-head 1 --n-embd 16 --block-size 16 \
  --batch-size 2 --max-iters 4 --eval-iters 1 --collectives hierarchical --ranks-per-node 1 > "$work/log.txt" 2>&1 ||
  { cat "$work/log.txt"; echo "FAIL: the sbatch script's run failed"; exit 1; }
grep -q "nodes: 2 nodes x 1 rank per node; dp 2 across nodes" "$work/log.txt" ||
  { cat "$work/log.txt"; echo "FAIL: no nodes line in the header"; exit 1; }
grep -q "train.sbatch: finished" "$work/log.txt" || { cat "$work/log.txt"; echo "FAIL: no 'finished'"; exit 1; }
ls "$work/out"/ckpt_*.h5 > /dev/null || { echo "FAIL: no checkpoint in $work/out"; exit 1; }

# The exit statuses, with a stub that counts its runs and exits with STUB_RC.
cat > "$work/stub" <<'STUB'
#!/usr/bin/env bash
echo run >> "$STUB_RUNS"
exit "$STUB_RC"
STUB
chmod +x "$work/stub"
run_stub() {  # rc -> prints "exit runs"
  : > "$work/runs"
  set +e
  STUB_RC=$1 STUB_RUNS="$work/runs" MAX_RESTARTS=2 LAUNCH=env NANODIST="$work/stub" OUT="$work/out" \
    bash "$script" > "$work/stub_log.txt" 2>&1
  local rc=$?
  set -e
  echo "$rc $(wc -l < "$work/runs")"
}
[[ "$(run_stub 3)" == "3 1" ]] || { cat "$work/stub_log.txt"; echo "FAIL: diverged (3) was retried"; exit 1; }
grep -q "not retrying" "$work/stub_log.txt"
[[ "$(run_stub 75)" == "75 1" ]] || { cat "$work/stub_log.txt"; echo "FAIL: 75 not passed on"; exit 1; }
[[ "$(run_stub 1)" == "1 3" ]] || { cat "$work/stub_log.txt"; echo "FAIL: a failure was not retried twice"; exit 1; }
echo "train.sbatch: parses, trains through mpirun, handles exit statuses"
