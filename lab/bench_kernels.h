// `nanodist-lab bench-kernels`: times every CUDA kernel at GPT-2 124M shapes (or others) and prints,
// per op and shape, the median time, the bytes and FLOPs the op must move and compute, and their
// share of the machine's ceilings. Users time the ops of a real run with `nanodist train --op-times`.
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

namespace nd::lab {

// argv[0] is "bench-kernels"; returns the exit status, lets nd::Error escape.
int run_lab_bench_kernels(int argc, const char* const* argv);

}  // namespace nd::lab
