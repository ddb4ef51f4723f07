// CPU AdamW: the step-dependent scalars are computed once in double (as PyTorch does with Python
// floats), then one parallel elementwise pass updates param, m and v.
#include "kernels/cpu/adamw.h"

#include <cmath>

#include "tensor/error.h"

namespace nd::cpu {

template <typename T>
void adamw_update(T* param, const T* grad, T* m, T* v, int64_t n, float lr, float beta1, float beta2, float eps,
                  float weight_decay, int64_t step, float grad_scale) {
  ND_CHECK(step >= 1, "adamw_update: step is " << step << ", the first update is step 1");
  ND_CHECK(n >= 0, "adamw_update: negative element count " << n);
  const double bias_correction1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  const T decay = static_cast<T>(1.0 - static_cast<double>(lr) * weight_decay);
  const T step_size = static_cast<T>(lr / bias_correction1);
  const T bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T one_minus_beta1 = static_cast<T>(1.0 - beta1);
  const T one_minus_beta2 = static_cast<T>(1.0 - beta2);
  const T b2 = beta2, e = eps, scale = grad_scale;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const T g = grad[i] * scale;
    const T p = param[i] * decay;
    const T mi = m[i] + one_minus_beta1 * (g - m[i]);
    const T vi = b2 * v[i] + one_minus_beta2 * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] = p - step_size * (mi / (std::sqrt(vi) / bias_correction2_sqrt + e));
  }
}

template void adamw_update<float>(float*, const float*, float*, float*, int64_t, float, float, float, float, float,
                                  int64_t, float);
template void adamw_update<double>(double*, const double*, double*, double*, int64_t, float, float, float, float,
                                   float, int64_t, float);

}  // namespace nd::cpu
