// Compute beside the collectives the lab's bench-comm times (`nanodist-lab bench-comm --load gemm`):
// a bf16 GEMM of a given shape run back to back on a stream of its own on the same GPU for the
// whole timed window, through the backend's one GEMM entry point (cuBLASLt), so that a curve
// measured under it says what a collective costs while training's GEMMs take SMs and memory
// bandwidth from it. Each window is a guess at first, twice as long after each window it did not
// cover, bounded (kMaxLoadGemms GEMMs, at most kMaxLoadSeconds of them).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "dist/comm/bench/bench_timing.h"
#include "tensor/device.h"

namespace nd::lab {

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

// A GPU's GEMM load; `device` must be CUDA (an input error on the CPU). Times one GEMM at start.
std::unique_ptr<dist::BenchLoad> make_gemm_load(Device device, const GemmShape& shape);

}  // namespace nd::lab
