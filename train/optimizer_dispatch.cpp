// Device dispatch of the optimizer kernels: the CPU loops here, the GPU in optimizer_cuda.cpp.
#include "train/optimizer_dispatch.h"

#include <cmath>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/global_norm.h"

namespace nd::train {
namespace {

// Every parameter, gradient and moment must live on one device; moments (and masters) in f32,
// parameters in f32, or bf16 with an f32 master on the GPU.
Device common_device(const std::vector<ParamState>& states) {
  Device device = states.empty() ? Device::cpu() : states.front().param.device();
  for (const ParamState& s : states) {
    const Tensor& p = s.param.data();
    if (device.is_cpu() || p.dtype() == DType::F32) {
      check_dtype(p, DType::F32, "AdamW parameter");
    } else {
      check_dtype(p, DType::BF16, "AdamW parameter");
      check_dtype(s.master, DType::F32, "AdamW master weights");
    }
    check_device(p, device, "AdamW parameter");
    check_dtype(s.m, DType::F32, "AdamW first moment");
    check_dtype(s.v, DType::F32, "AdamW second moment");
    check_same_shape(p, s.m, "AdamW first moment");
    check_same_shape(p, s.v, "AdamW second moment");
    check_device(s.m, device, "AdamW first moment");
    check_device(s.v, device, "AdamW second moment");
    if (s.param.has_grad()) {
      check_dtype(s.param.grad(), p.dtype(), "gradient");
      check_same_shape(p, s.param.grad(), "gradient");
      check_device(s.param.grad(), device, "gradient");
    }
  }
  return device;
}

}  // namespace

bool splits_norm(const std::vector<ParamState>& states, dist::Comm* tp) {
  if (tp == nullptr || tp->size() == 1) return false;
  for (const ParamState& s : states)
    if (s.sharded) return true;
  return false;
}

double global_grad_norm(const std::vector<ParamState>& states, dist::Comm* tp) {
  if (common_device(states).is_cuda()) return cuda_global_grad_norm(states, tp);
  // [0]: the sharded states' squares (summed over the group), [1]: the replicated ones (once).
  double sums[2] = {0.0, 0.0};
  for (const ParamState& s : states)
    if (s.param.has_grad())
      sums[s.sharded ? 0 : 1] += cpu::sum_of_squares(s.param.grad().data<float>(), s.param.grad().numel());
  if (splits_norm(states, tp)) tp->host_allreduce(&sums[0], 1, dist::HostReduce::Sum);
  return std::sqrt(sums[0] + sums[1]);
}

double clip_and_update(std::vector<ParamState>& states, const AdamWHyper& h, double grad_clip, dist::Comm* tp,
                       std::shared_ptr<DeviceOptimizerState>& device_state) {
  if (common_device(states).is_cuda()) return cuda_clip_and_update(states, h, grad_clip, tp, device_state);
  double norm = global_grad_norm(states, tp);
  // A NaN or inf gradient would poison every parameter and moment: the update is dropped.
  if (!std::isfinite(norm)) return norm;
  float grad_scale = static_cast<float>(clip_scale(norm, grad_clip));
  for (ParamState& s : states) {
    if (!s.param.has_grad()) continue;
    Tensor& p = s.param.data();
    cpu::adamw_update(p.data<float>(), s.param.grad().data<float>(), s.m.data<float>(), s.v.data<float>(), p.numel(),
                      h.lr, h.beta1, h.beta2, h.eps, s.decay ? h.weight_decay : 0.0f, h.step, grad_scale);
  }
  return norm;
}

}  // namespace nd::train
