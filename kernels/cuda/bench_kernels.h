// The kernel benchmark behind `nanodist bench-kernels`: times every CUDA kernel at GPT-2 124M
// shapes and returns, per op and shape, the median time and the bytes and FLOPs the op must move
// and compute; cli/bench_kernels.cpp prints them against the machine's ceilings.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace nd::cuda {

struct KernelBenchOptions {
  DType dtype = DType::BF16;  // bf16 or f32
  int64_t batch = 8;          // B
  int64_t seq = 1024;         // T
  int64_t embd = 768;         // C
  int64_t heads = 12;         // NH
  int64_t vocab = 50304;      // V (the lm_head is padded to a multiple of 128)
  int iters = 20;             // timed launches per op; the median is reported
};

struct KernelBenchRow {
  std::string op;      // "linear qkv fwd", "copy (ceiling)", ...
  std::string shape;   // dimensions joined by x: "8192x768x2304"
  double seconds = 0;  // median of `iters` launches
  double bytes = 0;    // each operand read or written once
  double flops = 0;    // useful floating-point operations (2 per multiply-add)
};

// Runs on the current CUDA device; each finished op is passed to `on_row` (printing is the
// caller's business) and returned. Input error when no CUDA device is present.
std::vector<KernelBenchRow> run_bench_kernels(const KernelBenchOptions& options,
                                              const std::function<void(const KernelBenchRow&)>& on_row = {});

}  // namespace nd::cuda
