// GELU (tanh approximation) forward and its exact derivative, elementwise.
#include "kernels/cpu/gelu.h"

#include <cmath>

namespace nd::cpu {

namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n) {
  const T a = static_cast<T>(kSqrt2OverPi), k = static_cast<T>(kCubic);
#pragma omp parallel for simd schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i];
    out[i] = T(0.5) * v * (T(1) + std::tanh(a * (v + k * v * v * v)));
  }
}

// d/dx [0.5 x (1 + tanh u)] with u = a (x + k x^3): 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) a (1 + 3 k x^2).
template <typename T>
void gelu_backward(const T* x, const T* dout, T* dx, int64_t n) {
  const T a = static_cast<T>(kSqrt2OverPi), k = static_cast<T>(kCubic);
#pragma omp parallel for simd schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    T v = x[i];
    T th = std::tanh(a * (v + k * v * v * v));
    T grad = T(0.5) * (T(1) + th) + T(0.5) * v * (T(1) - th * th) * a * (T(1) + T(3) * k * v * v);
    dx[i] += grad * dout[i];
  }
}

template void gelu_forward<float>(const float*, float*, int64_t);
template void gelu_forward<double>(const double*, double*, int64_t);
template void gelu_backward<float>(const float*, const float*, float*, int64_t);
template void gelu_backward<double>(const double*, const double*, double*, int64_t);

}  // namespace nd::cpu
