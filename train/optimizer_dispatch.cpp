// Device dispatch of the optimizer kernels: CPU today; a CUDA branch goes next to it.
#include "train/optimizer_dispatch.h"

#include <cmath>

#include "kernels/cpu/adamw.h"
#include "kernels/cpu/global_norm.h"

namespace nd::train {
namespace {

// Every parameter, gradient and moment must live on one device, in f32.
Device common_device(const std::vector<ParamState>& states) {
  Device device = states.empty() ? Device::cpu() : states.front().param.device();
  for (const ParamState& s : states) {
    const Tensor& p = s.param.data();
    check_dtype(p, DType::F32, "AdamW parameter");
    check_device(p, device, "AdamW parameter");
    check_dtype(s.m, DType::F32, "AdamW first moment");
    check_dtype(s.v, DType::F32, "AdamW second moment");
    check_same_shape(p, s.m, "AdamW first moment");
    check_same_shape(p, s.v, "AdamW second moment");
    check_device(s.m, device, "AdamW first moment");
    check_device(s.v, device, "AdamW second moment");
    if (s.param.has_grad()) {
      check_dtype(s.param.grad(), DType::F32, "gradient");
      check_same_shape(p, s.param.grad(), "gradient");
      check_device(s.param.grad(), device, "gradient");
    }
  }
  ND_CHECK(device.is_cpu(), "the optimizer on " << device.str() << " is not built yet");
  return device;
}

}  // namespace

double global_grad_norm(const std::vector<ParamState>& states) {
  common_device(states);
  double sum = 0.0;
  for (const ParamState& s : states)
    if (s.param.has_grad()) sum += cpu::sum_of_squares(s.param.grad().data<float>(), s.param.grad().numel());
  return std::sqrt(sum);
}

void adamw_update_all(std::vector<ParamState>& states, const AdamWHyper& h, float grad_scale) {
  common_device(states);
  for (ParamState& s : states) {
    if (!s.param.has_grad()) continue;
    Tensor& p = s.param.data();
    cpu::adamw_update(p.data<float>(), s.param.grad().data<float>(), s.m.data<float>(), s.v.data<float>(), p.numel(),
                      h.lr, h.beta1, h.beta2, h.eps, s.decay ? h.weight_decay : 0.0f, h.step, grad_scale);
  }
}

}  // namespace nd::train
