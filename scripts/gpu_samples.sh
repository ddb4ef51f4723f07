# Sourced by the benchmarks: nvidia-smi samples every GPU's utilisation, SM clock and power every
# 250 ms beside a run, and reduces them to medians over the busy samples. A run held below its top
# clock by the power cap shows it; at the cap a run's speed is its power over the energy a token
# takes, which is the figure to compare (GPUs x W/GPU / tok/s, in mJ).
#   start_sampling FILE   (no-op unless $device is cuda or unset)
#   stop_sampling
#   clock_figures FILE    prints "mhz watts", the medians over samples with utilisation >= 90%, or "- -"
sampler=""
start_sampling() {
  [[ "${device:-cuda}" == cuda ]] || return 0
  nvidia-smi --query-gpu=utilization.gpu,clocks.sm,power.draw --format=csv,noheader,nounits -lms 250 >"$1" 2>/dev/null &
  sampler=$!
}
stop_sampling() {
  [[ -n "$sampler" ]] || return 0
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  sampler=""
}
clock_figures() {  # smi.csv
  "${python:-python3}" - "$1" <<'PY'
import statistics, sys
busy = []
try:
    for line in open(sys.argv[1]):
        f = [x.strip() for x in line.split(",")]
        if len(f) == 3 and all(x.replace(".", "", 1).isdigit() for x in f) and float(f[0]) >= 90:
            busy.append((float(f[1]), float(f[2])))
except OSError:
    pass
print(f"{statistics.median(c for c, _ in busy):.0f} {statistics.median(w for _, w in busy):.0f}" if busy else "- -")
PY
}
