// The CPU FP8 quantisation of fp8_quantize.h.
#include "kernels/cpu/fp8_quantize.h"

#include <cmath>

namespace nd::cpu {

float fp8_quantize(const float* x, int64_t n, float scale, Fp8Format format, uint8_t* codes) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (std::isnan(a) || std::isnan(amax)) {
      amax = NAN;
    } else if (a > amax) {
      amax = a;
    }
    codes[i] = fp8_encode(x[i] * scale, format);
  }
  return amax;
}

void fp8_dequantize(const uint8_t* codes, int64_t n, float scale_inv, Fp8Format format, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = fp8_decode(codes[i], format) * scale_inv;
}

}  // namespace nd::cpu
