// Elementwise add and add-in-place, vectorised and split over threads for large tensors.
#include "kernels/cpu/add.h"

namespace nd::cpu {

template <typename T>
void add_forward(const T* a, const T* b, T* out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= (1 << 17))
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void add_inplace(T* dst, const T* src, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n >= (1 << 17))
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

template void add_forward<float>(const float*, const float*, float*, int64_t);
template void add_forward<double>(const double*, const double*, double*, int64_t);
template void add_inplace<float>(float*, const float*, int64_t);
template void add_inplace<double>(double*, const double*, int64_t);

}  // namespace nd::cpu
