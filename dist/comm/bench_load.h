// Compute beside the collectives bench-comm times (`--load gemm`): a bf16 GEMM of a given shape run
// back to back on a stream of its own on the same GPU for the whole timed window, through the
// backend's one GEMM entry point (cuBLASLt), so that a curve measured under it says what a
// collective costs while training's GEMMs take SMs and memory bandwidth from it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "tensor/device.h"

namespace nd::dist {

// The load's bounds. GEMMs queued per window: below the depth of the GPU's queue of pending
// launches, past which each launch blocks the host until a GEMM ends, so that the load would drain
// as it is queued and never outlast anything. Seconds of GEMMs per window: a bound on the time one
// size can take (a window grown without bound hung the first GPU run at 1 GB).
constexpr int kMaxLoadGemms = 400;
constexpr double kMaxLoadSeconds = 2.0;

struct GemmShape {
  int64_t m = 8192, n = 8192, k = 8192;
};
// "MxNxK", e.g. 8192x8192x8192; an input error otherwise.
GemmShape parse_gemm_shape(const std::string& text);

class BenchLoad {
 public:
  virtual ~BenchLoad() = default;
  // Queues enough work to outlast `iters` calls of the last measured time per call (a guess at
  // first, twice as long after each window it did not cover), bounded (kMaxLoadGemms GEMMs, at
  // most kMaxLoadSeconds of them), and returns once the load runs.
  virtual void start(int iters) = 0;
  // After the timed window: whether the load was still running when the window ended. Then waits
  // for the load to drain and remembers `seconds_per_call` (if covered) or enlarges the next
  // window (if not; up to the bounds).
  virtual bool finish(double seconds_per_call) = 0;
  virtual std::string describe() const = 0;
};

// A GPU's GEMM load; `device` must be CUDA (an input error on the CPU). Times one GEMM at start.
std::unique_ptr<BenchLoad> make_gemm_load(Device device, const GemmShape& shape);

}  // namespace nd::dist
