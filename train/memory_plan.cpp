// memory_plan: the allocations of dist/parallel/flat_params.cpp, dist/parallel/data_parallel.cpp and
// train/optimizer.cpp, per parameter.
#include "train/memory_plan.h"

#include <cstdio>

namespace nd::train {

MemoryPlan memory_plan(int zero, int dp, DType param, DType grad) {
  const double n = zero > 0 ? dp : 1;
  const double p = static_cast<double>(dtype_size(param)), g = static_cast<double>(dtype_size(grad));
  MemoryPlan plan;
  plan.params = p;
  // Backward's gradients in the parameters' dtype, and a wider accumulation buffer beside them.
  plan.grads = p + (grad != param ? g : 0.0);
  // ZeRO 2: no full-size gradients, only the f32 gradient shard; the staging buffers (with the
  // reduce-scatters' landing places, where the comm cannot add into the shard itself) are a fixed
  // amount, not per parameter (memory_plan_line's `buffers`: DataParallelEngine::staging_bytes).
  if (zero >= 2) plan.grads = 4.0 / n;
  // ZeRO 3: only the parameter shard; the gathered blocks and the whole parameters outside the
  // blocks are a fixed amount too.
  if (zero == 3) plan.params = p / n;
  plan.optimizer = (8.0 + (param != DType::F32 ? 4.0 : 0.0)) / n;  // m, v (and f32 masters)
  const double state = 2.0 * p + (param != DType::F32 ? 12.0 : 8.0);  // params + grads + optimizer
  if (zero == 0) plan.paper = state;
  if (zero == 1) plan.paper = 2.0 * p + (state - 2.0 * p) / n;
  if (zero == 2) plan.paper = p + (state - p) / n;
  if (zero == 3) plan.paper = state / n;
  return plan;
}

std::string memory_plan_line(const MemoryPlan& plan, int zero, int dp, int64_t numel, int64_t buffers) {
  char line[320];
  const double gib = plan.total() * static_cast<double>(numel) / (1 << 30);
  int used = std::snprintf(line, sizeof(line),
                           "zero %d over dp %d: params %.3g + grads %.3g + optimizer %.3g = %.3g B/param (ZeRO paper "
                           "%.3g), %.2f GiB per rank for %.1fM parameters",
                           zero, dp, plan.params, plan.grads, plan.optimizer, plan.total(), plan.paper, gib,
                           static_cast<double>(numel) / 1e6);
  if (buffers > 0 && used > 0 && used < static_cast<int>(sizeof(line)))
    std::snprintf(line + used, sizeof(line) - static_cast<size_t>(used), " + %.2f GiB of unit buffers",
                  static_cast<double>(buffers) / (1 << 30));
  return line;
}

}  // namespace nd::train
