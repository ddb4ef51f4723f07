// Device dispatch of the optimizer kernels: the CPU loops here, the GPU in optimizer_cuda.cpp.
#include "train/optimizer_dispatch.h"

#include <cmath>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/global_norm.h"

namespace nd::train {

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
  check_dtype(state.params, DType::F32, "AdamW parameters on the CPU");
  double norm = global_grad_norm(flat, state, runs, tp);
  // A NaN or inf gradient would poison every parameter and moment: the update is dropped.
  if (!std::isfinite(norm)) return norm;
  float grad_scale = static_cast<float>(clip_scale(norm, grad_clip));
  float* params = state.params.data<float>();
  const float* grads = state.grads.data<float>();
  float *m = state.m.data<float>(), *v = state.v.data<float>();
  for (const FlatRun& r : runs)
    cpu::adamw_update(params + r.param, grads + r.grad, m + r.local, v + r.local, r.length, h.lr, h.beta1, h.beta2,
                      h.eps, r.decay ? h.weight_decay : 0.0f, h.step, grad_scale);
  return norm;
}

}  // namespace nd::train
