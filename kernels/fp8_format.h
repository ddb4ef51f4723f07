// The two FP8 formats of FP8 training (OCP 8-bit floating point, the formats Hopper's tensor cores
// read), written from their definitions: E4M3 (bias 7, no infinities, S.1111.111 is NaN, largest
// 448, smallest subnormal 2^-9) for activations and weights, E5M2 (bias 15, IEEE-like infinities
// and NaNs, largest 57344, smallest subnormal 2^-16) for gradients. Encoding rounds to nearest,
// ties to the even code, and saturates: a finite or infinite value beyond the largest becomes the
// largest of its sign (a scaled cast never makes an infinity); NaN stays NaN. Host and device.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensor/dtype.h"

namespace nd {

enum class Fp8Format { E4M3, E5M2 };

struct Fp8Spec {
  int exponent_bits, mantissa_bits, bias;
  uint8_t max_code;  // the largest finite magnitude's code
  uint8_t nan_code;  // the positive NaN this encoder writes
};

ND_HOST_DEVICE inline Fp8Spec fp8_spec(Fp8Format f) {
  return f == Fp8Format::E4M3 ? Fp8Spec{4, 3, 7, 0x7E, 0x7F} : Fp8Spec{5, 2, 15, 0x7B, 0x7E};
}

// The value of a code: (-1)^S 2^(E - bias) (1 + M / 2^m), subnormal 2^(1 - bias) (M / 2^m) at E = 0.
ND_HOST_DEVICE inline float fp8_decode(uint8_t code, Fp8Format f) {
  const Fp8Spec s = fp8_spec(f);
  const int mant_mask = (1 << s.mantissa_bits) - 1, exp_mask = (1 << s.exponent_bits) - 1;
  const int e = (code >> s.mantissa_bits) & exp_mask, m = code & mant_mask;
  const float sign = (code & 0x80) ? -1.0f : 1.0f;
  if (f == Fp8Format::E4M3 && e == exp_mask && m == mant_mask) return NAN;
  if (f == Fp8Format::E5M2 && e == exp_mask) return m == 0 ? sign * INFINITY : NAN;
  if (e == 0) return sign * ldexpf(static_cast<float>(m), 1 - s.bias - s.mantissa_bits);
  return sign * ldexpf(static_cast<float>((1 << s.mantissa_bits) + m), e - s.bias - s.mantissa_bits);
}

ND_HOST_DEVICE inline float fp8_max(Fp8Format f) { return fp8_decode(fp8_spec(f).max_code, f); }

// The nearest code to x (ties to the even code), saturating at the largest finite value.
ND_HOST_DEVICE inline uint8_t fp8_encode(float x, Fp8Format f) {
  const Fp8Spec s = fp8_spec(f);
  if (x != x) return s.nan_code;
  const uint8_t sign = (f32_bits(x) & 0x80000000u) ? 0x80 : 0;
  const float a = fabsf(x);
  if (a >= fp8_max(f)) return sign | s.max_code;
  if (a == 0.0f) return sign;
  const int steps = 1 << s.mantissa_bits;
  int exponent;
  frexpf(a, &exponent);  // a = f * 2^exponent with f in [0.5, 1): a's binade is 2^(exponent - 1)
  const int min_exponent = 1 - s.bias;
  // The spacing of codes around a: 2^(binade - m), or the subnormals' 2^(1 - bias - m) below.
  const int binade = exponent - 1 < min_exponent ? min_exponent : exponent - 1;
  // a / spacing fits a float exactly (a power-of-two scaling); rint rounds ties to even.
  const float q = rintf(ldexpf(a, s.mantissa_bits - binade));
  // q counts spacings from zero: subnormals are q < steps at binade min_exponent; a mantissa that
  // rounds up to 2 * steps carries into the next binade, which the code's bit layout does alone.
  const int biased = binade - min_exponent;  // the binade's exponent field minus one, >= 0
  const int code = biased * steps + static_cast<int>(q);
  return static_cast<uint8_t>(sign | (code > s.max_code ? s.max_code : code));
}

}  // namespace nd
