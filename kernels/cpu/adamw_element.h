// The CPU AdamW update of one element and the step's scalars it uses (adamw.h gives the formula),
// shared by the scalar update and the vectorised span (adamw_span.cpp), so that both give the same bits.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensor/error.h"

namespace nd::cpu {

// The step-dependent scalars, computed once in double (as PyTorch does with Python floats).
template <typename T>
struct AdamWScalars {
  T decay, step_size, bias_correction2_sqrt, one_minus_beta1, one_minus_beta2, beta2, eps, grad_scale;
};

template <typename T>
AdamWScalars<T> adamw_scalars(float lr, float beta1, float beta2, float eps, float weight_decay, int64_t step,
                              float grad_scale) {
  ND_CHECK(step >= 1, "adamw_update: step is " << step << ", the first update is step 1");
  const double bias_correction1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  AdamWScalars<T> s;
  s.decay = static_cast<T>(1.0 - static_cast<double>(lr) * weight_decay);
  s.step_size = static_cast<T>(lr / bias_correction1);
  s.bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  s.one_minus_beta1 = static_cast<T>(1.0 - beta1);
  s.one_minus_beta2 = static_cast<T>(1.0 - beta2);
  s.beta2 = beta2;
  s.eps = eps;
  s.grad_scale = grad_scale;
  return s;
}

template <typename T>
inline void adamw_element(const AdamWScalars<T>& s, T& param, T grad, T& m, T& v) {
  const T g = grad * s.grad_scale;
  const T p = param * s.decay;
  const T mi = m + s.one_minus_beta1 * (g - m);
  const T vi = s.beta2 * v + s.one_minus_beta2 * g * g;
  m = mi;
  v = vi;
  param = p - s.step_size * (mi / (std::sqrt(vi) / s.bias_correction2_sqrt + s.eps));
}

// adamw_element over param, grad, m, v (n), vectorised (adamw_span.cpp), one thread: the same bits
// as the scalar loop. The arrays must not overlap.
void adamw_update_span(const AdamWScalars<float>& s, float* param, const float* grad, float* m, float* v, int64_t n);

}  // namespace nd::cpu
