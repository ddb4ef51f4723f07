// How bench-comm (and the `auto` all-reduce's start-up measurement) times a collective, the way
// nccl-tests does: `iters` calls launched back to back with no wait between them, the GPU's own
// clock around the batch, time = total / iters. Eager launches them one by one from the host (the
// host's cost per call shows wherever it exceeds the GPU's); graph captures the batch in a CUDA
// graph once and times a replay, so only the GPU's work is left, for NCCL and ours alike.
#pragma once
#include <functional>
#include <string>

#include "dist/comm/comm.h"

namespace nd::dist {

// Work run beside the timed calls on the same device, so that a curve says what a collective costs
// while compute takes SMs and memory bandwidth from it (the lab's GEMM load, lab/gemm_load.h).
class BenchLoad {
 public:
  virtual ~BenchLoad() = default;
  // Queues enough work to outlast `iters` calls of the last measured time per call and returns
  // once the load runs.
  virtual void start(int iters) = 0;
  // After the timed window: whether the load was still running when the window ended. Then waits
  // for the load to drain and remembers `seconds_per_call` (if covered) or enlarges the next
  // window (if not).
  virtual bool finish(double seconds_per_call) = 0;
  virtual std::string describe() const = 0;
};

enum class BenchTiming { Eager, Graph };
BenchTiming parse_bench_timing(const std::string& name);  // eager | graph
const char* bench_timing_name(BenchTiming timing);

// Seconds per call of `launch` (one collective; it returns the call's CommWork), the max over
// ranks. Collective: every rank calls it with the same arguments. `warmup` untimed calls first
// (graph: one untimed replay of the captured batch). Graph needs a GPU comm and calls that can be
// captured (run each layout once eagerly before: the first call of a layout agrees with the
// other ranks on the host); where capture fails on any rank, every rank raises. With `load` (eager
// only), the batch is timed while the load runs beside it on the same GPU, and timed again with a
// longer load until the load outlasted the batch on every rank, at most kLoadTries times and no
// longer than kLoadWallSeconds in all: where the load never outlasted it, the last try's time is
// returned anyway and `*load_outlasted` (if given) says false, the same on every rank.
constexpr int kLoadTries = 3;
constexpr double kLoadWallSeconds = 20.0;
double time_launches(Comm& comm, BenchTiming timing, int warmup, int iters, const std::function<CommWork()>& launch,
                     BenchLoad* load = nullptr, bool* load_outlasted = nullptr);

}  // namespace nd::dist
