// The persistent memory of a data-parallel rank per parameter (bytes), by ZeRO stage and this
// run's dtypes: what the flat buffers, the data-parallel engine and AdamW allocate, beside the ZeRO
// paper's formula (16 -> 4 + 12/N -> 2 + 14/N -> 16/N for bf16 with f32 masters). The train header
// prints it; a test checks it against the bytes actually allocated.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/dtype.h"

namespace nd::train {

struct MemoryPlan {
  double params = 0, grads = 0, optimizer = 0;  // bytes per parameter on each rank
  double paper = 0;                             // the ZeRO paper's total for the stage
  double total() const { return params + grads + optimizer; }
};

// zero: the stage; dp: the data-parallel size N; param: the parameters' dtype; grad: the dtype
// gradients are accumulated and reduced in (dist::FlatParams' grad_dtype).
MemoryPlan memory_plan(int zero, int dp, DType param, DType grad);

// "zero 1 over dp 2: params 2 + grads 5 + optimizer 6 = 13 B/param (ZeRO paper 10), 1.23 GiB per
// rank for 98.3M parameters"; `numel` is the flat buffers' length (padding included); `buffers`
// (bytes, ZeRO 2 and 3's staging and gathered buffers, dist::DataParallelEngine::staging_bytes) is
// added when not zero.
std::string memory_plan_line(const MemoryPlan& plan, int zero, int dp, int64_t numel, int64_t buffers = 0);

}  // namespace nd::train
