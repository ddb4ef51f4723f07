// CPU sum of squares (OpenMP reduction in double, so a norm over millions of f32 gradients does
// not lose precision) and in-place scaling.
#include "kernels/cpu/global_norm.h"

namespace nd::cpu {

template <typename T>
double sum_of_squares(const T* x, int64_t n) {
  double total = 0;
#pragma omp parallel for simd reduction(+ : total) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double xi = static_cast<double>(x[i]);
    total += xi * xi;
  }
  return total;
}

template <typename T>
void scale_inplace(T* x, int64_t n, T s) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

template double sum_of_squares<float>(const float*, int64_t);
template double sum_of_squares<double>(const double*, int64_t);
template void scale_inplace<float>(float*, int64_t, float);
template void scale_inplace<double>(double*, int64_t, double);

}  // namespace nd::cpu
