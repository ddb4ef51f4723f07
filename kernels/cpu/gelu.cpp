// GELU (tanh approximation) forward and its exact derivative, elementwise. Written through the
// identity 0.5 (1 + tanh u) = sigmoid(2u), which stays accurate in both tails; in f32 the exp is a
// branch-free polynomial so the loops vectorise (std::tanh / std::exp would be scalar libm calls,
// ~10 ns per element), in clones for the wider vector units.
#include "kernels/cpu/gelu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace nd::cpu {

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;

// exp(y) for f32 within ~2 ulp: y = k ln2 + r with |r| <= ln2/2, exp(r) by its Taylor series to
// degree 7 (truncation < 3e-9), times 2^k built in the exponent bits. y is clamped to the range
// where 2^k stays a normal float.
inline float exp_f32(float y) {
  y = y < -87.0f ? -87.0f : (y > 88.0f ? 88.0f : y);
  // Round to nearest by adding and removing 1.5 * 2^23 (std::floor would not vectorise).
  const float round_shift = 12582912.0f;
  float k = (y * 1.44269504088896341f + round_shift) - round_shift;
  float r = y - k * 0.693145751953125f - k * 1.42860682030941723e-6f;  // ln2 split in two: exact k*hi
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float sigmoid(float z) { return 1.0f / (1.0f + exp_f32(-z)); }
inline double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// gelu(x) = x sigmoid(2u), u = a (x + k x^3).
template <typename T>
inline T gelu_value(T v) {
  const T a = static_cast<T>(kSqrt2OverPi), k = static_cast<T>(kCubic);
  return v * sigmoid(T(2) * a * (v + k * v * v * v));
}

// d/dx [x s] with s = sigmoid(2u): s + x s (1 - s) 2a (1 + 3k x^2).
template <typename T>
inline T gelu_slope(T v) {
  const T a = static_cast<T>(kSqrt2OverPi), k = static_cast<T>(kCubic);
  const T s = sigmoid(T(2) * a * (v + k * v * v * v));
  return s + v * s * (T(1) - s) * T(2) * a * (T(1) + T(3) * k * v * v);
}

// The f32 loops over one span, cloned for AVX-512, AVX2 and the baseline on x86-64 (chosen at
// load time). This file is compiled with -fno-trapping-math, without which GCC keeps the clamp
// and the float-to-int conversion of exp_f32 as branches and vectorises nothing, and with
// -ffp-contract=off, so that every clone does the same IEEE operations: the same bits. dout and
// dx may be one array (linear_dgelu_backward works in place): each lane reads before it writes.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ND_GELU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ND_GELU_CLONES
#endif

ND_GELU_CLONES void gelu_forward_span(const float* x, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_value(x[i]);
}

// The first contribution is 0 + the product, as the double path writes it: a -0 product stores +0.
ND_GELU_CLONES void gelu_backward_span(const float* x, const float* dout, float* dx, bool accumulate, int64_t n) {
  if (accumulate) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] = dx[i] + gelu_slope(x[i]) * dout[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] = 0.0f + gelu_slope(x[i]) * dout[i];
  }
}

// Spans of this many elements per thread's turn: large enough for the loop, small enough to share.
constexpr int64_t kSpan = 1 << 14;

}  // namespace

template <typename T>
void gelu_forward(const T* x, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (int64_t i = 0; i < n; i += kSpan) gelu_forward_span(x + i, out + i, std::min(kSpan, n - i));
  } else {
#pragma omp parallel for simd schedule(static) if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i) out[i] = gelu_value(x[i]);
  }
}

template <typename T>
void gelu_backward(const T* x, const T* dout, GradDest<T> dx, int64_t n) {
  if (dx.ptr == nullptr) return;
  T* d = dx.ptr;
  const bool accumulate = dx.accumulate;
  if constexpr (std::is_same_v<T, float>) {
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (int64_t i = 0; i < n; i += kSpan)
      gelu_backward_span(x + i, dout + i, d + i, accumulate, std::min(kSpan, n - i));
  } else {
#pragma omp parallel for simd schedule(static) if (n >= (1 << 16))
    for (int64_t i = 0; i < n; ++i) d[i] = (accumulate ? d[i] : T(0)) + gelu_slope(x[i]) * dout[i];
  }
}

template void gelu_forward<float>(const float*, float*, int64_t);
template void gelu_forward<double>(const double*, double*, int64_t);
template void gelu_backward<float>(const float*, const float*, GradDest<float>, int64_t);
template void gelu_backward<double>(const double*, const double*, GradDest<double>, int64_t);

}  // namespace nd::cpu
