// CPU AdamW: the step-dependent scalars are computed once in double (as PyTorch does with Python
// floats), then one parallel elementwise pass updates param, m and v (f32: each thread's contiguous
// range by the vectorised adamw_update_span).
#include "kernels/cpu/adamw.h"

#include <algorithm>
#include <type_traits>

#include <omp.h>

#include "kernels/cpu/adamw_element.h"

namespace nd::cpu {

template <typename T>
void adamw_update(T* param, const T* grad, T* m, T* v, int64_t n, float lr, float beta1, float beta2, float eps,
                  float weight_decay, int64_t step, float grad_scale) {
  ND_CHECK(n >= 0, "adamw_update: negative element count " << n);
  const AdamWScalars<T> s = adamw_scalars<T>(lr, beta1, beta2, eps, weight_decay, step, grad_scale);
  if constexpr (std::is_same_v<T, float>) {
    // Ranges of whole 64-byte lines, so that two threads never write one line.
    constexpr int64_t kLine = 16;
#pragma omp parallel
    {
      const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t per = (n + threads * kLine - 1) / (threads * kLine) * kLine;
      const int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
      adamw_update_span(s, param + begin, grad + begin, m + begin, v + begin, end - begin);
    }
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) adamw_element(s, param[i], grad[i], m[i], v[i]);
  }
}

template void adamw_update<float>(float*, const float*, float*, float*, int64_t, float, float, float, float, float,
                                  int64_t, float);
template void adamw_update<double>(double*, const double*, double*, double*, int64_t, float, float, float, float,
                                   float, int64_t, float);

}  // namespace nd::cpu
