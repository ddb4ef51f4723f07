// GPT-2's tanh GELU and its derivative as f32 device functions: the one definition compiled by the
// elementwise GELU kernels (gelu.cu) and by the FP8 quantises that apply the GELU on the way
// (fp8_gelu_quantize.cu), so that both produce the same bits.
#pragma once

namespace nd::cuda::gelu_math {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
__device__ __forceinline__ float gelu(float x) {
  float u = kSqrt2OverPi * (x + kCubic * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}

// d gelu / dx at a.
__device__ __forceinline__ float gelu_grad(float a) {
  float t = tanhf(kSqrt2OverPi * (a + kCubic * a * a * a));
  float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * a * a);
  return 0.5f * (1.0f + t) + 0.5f * a * (1.0f - t * t) * du;
}

}  // namespace nd::cuda::gelu_math
