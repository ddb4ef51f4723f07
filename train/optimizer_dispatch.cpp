// Device dispatch of the optimizer kernels: the CPU loops here, the GPU in optimizer_cuda.cpp.
#include "train/optimizer_dispatch.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/global_norm.h"
#include "train/copy_on_write.h"

namespace nd::train {
namespace {

// Elements of one slot of the CPU update under a checkpoint write: one chunk of the save.
constexpr int64_t kUpdateSlot = CopyOnWrite::kChunkFloats;

}  // namespace

bool splits_norm(const std::vector<FlatRun>& runs, dist::Comm* tp) {
  if (tp == nullptr || tp->size() == 1) return false;
  for (const FlatRun& r : runs)
    if (r.sharded) return true;
  return false;
}

double global_grad_norm(dist::FlatParams& flat, const FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                        dist::Comm* tp) {
  if (flat.device().is_cuda()) return cuda_global_grad_norm(flat, state, runs, tp);
  check_dtype(state.grads, DType::F32, "gradients on the CPU");
  // [0]: the sharded runs' squares (summed over the group), [1]: the replicated ones (once).
  double sums[2] = {0.0, 0.0};
  const float* grads = state.grads.data<float>();
  for (const FlatRun& r : runs)
    if (r.in_norm) sums[r.sharded ? 0 : 1] += cpu::sum_of_squares(grads + r.grad, r.length);
  if (state.shard_group != nullptr && state.shard_group->size() > 1)
    state.shard_group->host_allreduce(sums, 2, dist::HostReduce::Sum);
  if (splits_norm(runs, tp)) tp->host_allreduce(&sums[0], 1, dist::HostReduce::Sum);
  return std::sqrt(sums[0] + sums[1]);
}

double clip_and_update(dist::FlatParams& flat, FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                       const AdamWHyper& h, double grad_clip, dist::Comm* tp) {
  check_dtype(flat.params(), DType::F32, "AdamW parameters on the CPU");
  double norm = global_grad_norm(flat, state, runs, tp);
  // A NaN or inf gradient would poison every parameter and moment: the update is dropped.
  if (!std::isfinite(norm)) return norm;
  float grad_scale = static_cast<float>(clip_scale(norm, grad_clip));
  float* params = flat.params().data<float>();
  const float* grads = state.grads.data<float>();
  float *m = state.m.data<float>(), *v = state.v.data<float>();
  CopyOnWrite* cow = state.copy_on_write;
  if (cow == nullptr || !cow->armed()) {
    for (const FlatRun& r : runs)
      cpu::adamw_update(params + r.begin, grads + r.grad, m + r.local, v + r.local, r.length, h.lr, h.beta1, h.beta2,
                        h.eps, r.decay ? h.weight_decay : 0.0f, h.step, grad_scale);
    return norm;
  }
  // A checkpoint is being written from these buffers: slot by slot, each thread hands the slot's
  // params, m and v to the save (which copies what it has not written yet) and then updates it,
  // the copy's reads still in cache. Elementwise, so the result is the same bits.
  std::vector<std::pair<const FlatRun*, int64_t>> slots;
  for (const FlatRun& r : runs)
    for (int64_t at = 0; at < r.length; at += kUpdateSlot) slots.emplace_back(&r, at);
  const int64_t count = static_cast<int64_t>(slots.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < count; ++k) {
    const FlatRun& r = *slots[k].first;
    const int64_t at = slots[k].second, n = std::min(kUpdateSlot, r.length - at);
    cow->before_update(params + r.begin + at, n);
    cow->before_update(m + r.local + at, n);
    cow->before_update(v + r.local + at, n);
    cpu::adamw_update(params + r.begin + at, grads + r.grad + at, m + r.local + at, v + r.local + at, n, h.lr, h.beta1,
                      h.beta2, h.eps, r.decay ? h.weight_decay : 0.0f, h.step, grad_scale);
  }
  return norm;
}

}  // namespace nd::train
