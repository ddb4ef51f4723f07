// Elementwise add and its backward, vectorised and split over threads for large tensors.
#include "kernels/cpu/add.h"

#include <algorithm>

namespace nd::cpu {

template <typename T>
void add_forward(const T* a, const T* b, T* out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= (1 << 17))
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void add_backward(const T* dout, GradDest<T> da, GradDest<T> db, int64_t n) {
  for (const GradDest<T>& d : {da, db}) {
    if (d.ptr == nullptr) continue;
    T* dst = d.ptr;
    if (!d.accumulate) {
      std::copy(dout, dout + n, dst);
      continue;
    }
#pragma omp parallel for simd schedule(static) if (n >= (1 << 17))
    for (int64_t i = 0; i < n; ++i) dst[i] += dout[i];
  }
}

template void add_forward<float>(const float*, const float*, float*, int64_t);
template void add_forward<double>(const double*, const double*, double*, int64_t);
template void add_backward<float>(const float*, GradDest<float>, GradDest<float>, int64_t);
template void add_backward<double>(const double*, GradDest<double>, GradDest<double>, int64_t);

}  // namespace nd::cpu
