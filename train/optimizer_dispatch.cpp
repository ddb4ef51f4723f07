// Device dispatch of the optimizer kernels: the CPU loops here, the GPU in optimizer_cuda.cpp. On the
// CPU, f32 parameters, or f16 ones (the emulated fp16 path): their update runs in f32 on the masters
// (or, without masters, on a widened copy) and is rounded into the parameters, as the GPU's kernel
// does; f16 gradients (--grad-dtype f16) are widened first.
#include "train/optimizer_dispatch.h"

#include <cmath>
#include <vector>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/global_norm.h"

namespace nd::train {
namespace {

// The gradients as f32: the buffer itself, or a widened copy of f16 ones (kept in `wide`).
const float* f32_grads(const Tensor& grads, std::vector<float>& wide) {
  if (grads.dtype() == DType::F32) return grads.data<float>();
  check_dtype(grads, DType::F16, "gradients on the CPU (f32 or f16)");
  const f16* g = grads.data<f16>();
  wide.resize(static_cast<size_t>(grads.numel()));
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = f16_to_f32(g[i]);
  return wide.data();
}

void round_into(const float* src, f16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

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
  // [0]: the sharded runs' squares (summed over the group), [1]: the replicated ones (once).
  double sums[2] = {0.0, 0.0};
  std::vector<float> wide;
  const float* grads = f32_grads(state.grads, wide);
  for (const FlatRun& r : runs)
    if (r.in_norm) sums[r.sharded ? 0 : 1] += cpu::sum_of_squares(grads + r.grad, r.length);
  if (state.shard_group != nullptr && state.shard_group->size() > 1)
    state.shard_group->host_allreduce(sums, 2, dist::HostReduce::Sum);
  if (splits_norm(runs, tp)) tp->host_allreduce(&sums[0], 1, dist::HostReduce::Sum);
  return std::sqrt(sums[0] + sums[1]);
}

double clip_and_update(dist::FlatParams& flat, FlatOptimizerState& state, const std::vector<FlatRun>& runs,
                       const AdamWHyper& h, double grad_clip, dist::Comm* tp) {
  const bool half = state.params.dtype() == DType::F16;
  if (!half) check_dtype(state.params, DType::F32, "AdamW parameters on the CPU (f32 or f16)");
  double norm = global_grad_norm(flat, state, runs, tp);
  // A NaN or inf gradient would poison every parameter and moment: the update is dropped.
  if (!std::isfinite(norm)) return norm;
  float grad_scale = static_cast<float>(clip_scale(norm, grad_clip));
  std::vector<float> wide_grads, wide_run;
  const float* grads = f32_grads(state.grads, wide_grads);
  float *m = state.m.data<float>(), *v = state.v.data<float>();
  for (const FlatRun& r : runs) {
    // Where the run's f32 weights live: the parameters (or ZeRO 3's shard), the masters, or a
    // widened copy.
    float* weights = nullptr;
    if (!half) {
      weights = state.params.data<float>() + r.param;
    } else if (state.master.defined()) {
      weights = state.master.data<float>() + r.local;
    } else {
      const f16* p = state.params.data<f16>() + r.param;
      wide_run.resize(static_cast<size_t>(r.length));
      for (int64_t i = 0; i < r.length; ++i) wide_run[static_cast<size_t>(i)] = f16_to_f32(p[i]);
      weights = wide_run.data();
    }
    cpu::adamw_update(weights, grads + r.grad, m + r.local, v + r.local, r.length, h.lr, h.beta1, h.beta2, h.eps,
                      r.decay ? h.weight_decay : 0.0f, h.step, grad_scale);
    if (half) round_into(weights, state.params.data<f16>() + r.param, r.length);
  }
  return norm;
}

}  // namespace nd::train
