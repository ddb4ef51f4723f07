// E4M3 and E5M2 (kernels/fp8_format.h, kernels/cpu/fp8_quantize.h) against the formats'
// definitions: every code's value from the bit fields, the encoder against a brute-force nearest
// code (ties to the even code, saturating), and the closed-form cases: largest values, smallest
// subnormals, ties, infinities and NaN; the scaled quantise/dequantise round trip and its amax.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/fp8_quantize.h"

namespace nd {
namespace {

struct Layout {
  int exponent_bits, mantissa_bits, bias;
  bool ieee_specials;  // E5M2: exponent all ones is inf / NaN; E4M3: only S.1111.111 is NaN
};

Layout layout(Fp8Format f) { return f == Fp8Format::E4M3 ? Layout{4, 3, 7, false} : Layout{5, 2, 15, true}; }

// A code's value in double, from the definition, with no code shared with the encoder.
double value_of(int code, Fp8Format f) {
  const Layout l = layout(f);
  const int e = (code >> l.mantissa_bits) & ((1 << l.exponent_bits) - 1);
  const int m = code & ((1 << l.mantissa_bits) - 1);
  const int top = (1 << l.exponent_bits) - 1;
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  if (l.ieee_specials && e == top) return m == 0 ? sign * std::numeric_limits<double>::infinity() : NAN;
  if (!l.ieee_specials && e == top && m == (1 << l.mantissa_bits) - 1) return NAN;
  const double fraction = m / std::pow(2.0, l.mantissa_bits);
  return e == 0 ? sign * std::pow(2.0, 1 - l.bias) * fraction : sign * std::pow(2.0, e - l.bias) * (1.0 + fraction);
}

// The nearest finite non-negative code to |x| (ties to the even code), with x's sign.
int nearest_code(float x, Fp8Format f) {
  int best = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (int c = 0; c < 128; ++c) {
    const double v = value_of(c, f);
    if (!std::isfinite(v)) continue;
    const double d = std::fabs(v - std::fabs(static_cast<double>(x)));
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return (std::signbit(x) ? 0x80 : 0) | best;
}

class Fp8Formats : public ::testing::TestWithParam<Fp8Format> {};

TEST_P(Fp8Formats, DecodeMatchesTheDefinitionForEveryCode) {
  const Fp8Format f = GetParam();
  for (int c = 0; c < 256; ++c) {
    const double want = value_of(c, f);
    const float got = fp8_decode(static_cast<uint8_t>(c), f);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "code " << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << "code " << c;
    }
  }
}

TEST_P(Fp8Formats, EveryFiniteCodeRoundTrips) {
  const Fp8Format f = GetParam();
  for (int c = 0; c < 256; ++c) {
    const float v = fp8_decode(static_cast<uint8_t>(c), f);
    if (std::isfinite(v)) {
      EXPECT_EQ(fp8_encode(v, f), c) << "code " << c << " value " << v;
    }
  }
}

TEST_P(Fp8Formats, EncodeIsTheNearestCodeTiesToEven) {
  const Fp8Format f = GetParam();
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> exponent(-20.0f, 18.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = ((rng() & 1) ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    ASSERT_EQ(fp8_encode(x, f), nearest_code(x, f)) << "x = " << x;
  }
  // Midpoints between neighbouring codes are exact in f32: each must go to the even code.
  for (int c = 0; c + 1 < 128; ++c) {
    const double lo = value_of(c, f), hi = value_of(c + 1, f);
    if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(fp8_encode(mid, f), (c & 1) ? c + 1 : c) << "midpoint of codes " << c << " and " << c + 1;
  }
}

TEST(Fp8Format, E4M3ClosedFormCases) {
  const Fp8Format f = Fp8Format::E4M3;
  EXPECT_EQ(fp8_max(f), 448.0f);
  EXPECT_EQ(fp8_encode(448.0f, f), 0x7E);
  EXPECT_EQ(fp8_encode(463.0f, f), 0x7E);   // below the midpoint to the (absent) 480
  EXPECT_EQ(fp8_encode(1e30f, f), 0x7E);    // saturates
  EXPECT_EQ(fp8_encode(-INFINITY, f), 0xFE);
  EXPECT_EQ(fp8_encode(NAN, f), 0x7F);
  EXPECT_TRUE(std::isnan(fp8_decode(0x7F, f)));
  EXPECT_TRUE(std::isnan(fp8_decode(0xFF, f)));
  EXPECT_EQ(fp8_decode(0x78, f), 256.0f);   // S.1111.000 is a number in E4M3
  EXPECT_EQ(fp8_decode(0x01, f), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(fp8_decode(0x08, f), std::ldexp(1.0f, -6));   // smallest normal
  EXPECT_EQ(fp8_encode(std::ldexp(1.0f, -10), f), 0x00);  // half the smallest: tie to even 0
  EXPECT_EQ(fp8_encode(std::ldexp(1.5f, -10), f), 0x01);
  EXPECT_EQ(fp8_encode(1.0f, f), 0x38);
  EXPECT_EQ(fp8_encode(1.0625f, f), 0x38);  // tie between 1 and 1.125
  EXPECT_EQ(fp8_encode(1.1875f, f), 0x3A);  // tie between 1.125 and 1.25
  EXPECT_EQ(fp8_encode(-0.0f, f), 0x80);
}

TEST(Fp8Format, E5M2ClosedFormCases) {
  const Fp8Format f = Fp8Format::E5M2;
  EXPECT_EQ(fp8_max(f), 57344.0f);
  EXPECT_EQ(fp8_encode(57344.0f, f), 0x7B);
  EXPECT_EQ(fp8_encode(INFINITY, f), 0x7B);  // a scaled cast saturates rather than overflow
  EXPECT_EQ(fp8_encode(-1e10f, f), 0xFB);
  EXPECT_EQ(fp8_decode(0x7C, f), INFINITY);
  EXPECT_EQ(fp8_decode(0xFC, f), -INFINITY);
  EXPECT_TRUE(std::isnan(fp8_decode(0x7D, f)));
  EXPECT_TRUE(std::isnan(fp8_decode(fp8_encode(NAN, f), f)));
  EXPECT_EQ(fp8_decode(0x01, f), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8_decode(0x04, f), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp8_encode(std::ldexp(1.0f, -17), f), 0x00);
  EXPECT_EQ(fp8_encode(1.0f, f), 0x3C);
  EXPECT_EQ(fp8_encode(1.125f, f), 0x3C);  // tie between 1 and 1.25
}

TEST_P(Fp8Formats, ScaledQuantiseRoundTripWithinHalfAnUlpAndReportsAmax) {
  const Fp8Format f = GetParam();
  const int m = layout(f).mantissa_bits;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3e-3f);
  std::vector<float> x(4096);
  for (float& v : x) v = normal(rng);
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  const float scale = fp8_max(f) / amax;  // delayed scaling's choice at margin 0
  std::vector<uint8_t> codes(x.size());
  EXPECT_EQ(cpu::fp8_quantize(x.data(), static_cast<int64_t>(x.size()), scale, f, codes.data()), amax);
  std::vector<float> back(x.size());
  cpu::fp8_dequantize(codes.data(), static_cast<int64_t>(x.size()), 1.0f / scale, f, back.data());
  const float smallest_normal = static_cast<float>(value_of(1 << m, f)) / scale;
  for (size_t i = 0; i < x.size(); ++i) {
    // Relative error 2^-(m+1) for normals; below them, half the subnormal spacing.
    const double bound = std::fabs(x[i]) >= smallest_normal ? std::ldexp(std::fabs(x[i]), -(m + 1)) * 1.0001
                                                            : value_of(1, f) / scale * 0.5001;
    ASSERT_LE(std::fabs(back[i] - x[i]), bound) << "element " << i << " x " << x[i];
  }
  x[17] = NAN;
  EXPECT_TRUE(std::isnan(cpu::fp8_quantize(x.data(), 64, scale, f, codes.data())));
  x[17] = -INFINITY;
  EXPECT_EQ(cpu::fp8_quantize(x.data(), 64, scale, f, codes.data()), INFINITY);
  EXPECT_EQ(codes[17], 0x80 | fp8_spec(f).max_code);
}

INSTANTIATE_TEST_SUITE_P(Both, Fp8Formats, ::testing::Values(Fp8Format::E4M3, Fp8Format::E5M2),
                         [](const auto& info) { return info.param == Fp8Format::E4M3 ? "E4M3" : "E5M2"; });

}  // namespace
}  // namespace nd
