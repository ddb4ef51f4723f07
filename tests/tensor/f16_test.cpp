// IEEE binary16 (nd::f16, --dtype fp16) against its definition: every bit pattern's value from the
// closed form (-1)^s 2^(e-15) (1 + m/1024), subnormals 2^-14 m/1024; f32 -> f16 as the nearest
// representable value, ties to the even mantissa, found by search over all f16 values (not by
// bit arithmetic), on every midpoint, its neighbours and random floats of every exponent; inf,
// overflow, NaN, signed zero; and the tensor conversions that use them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace nd {
namespace {

// The value the definition gives the pattern (NaN for e = 31, m != 0).
double closed_form(uint16_t bits) {
  const int s = bits >> 15, e = (bits >> 10) & 31, m = bits & 1023;
  const double sign = s ? -1.0 : 1.0;
  if (e == 31) return m == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(m / 1024.0, -14);
  return sign * std::ldexp(1.0 + m / 1024.0, e - 15);
}

// The positive finite f16 values, ascending, with their patterns (0 .. 0x7bff are ascending).
std::vector<double> positive_values() {
  std::vector<double> v;
  for (uint32_t b = 0; b <= 0x7bff; ++b) v.push_back(closed_form(static_cast<uint16_t>(b)));
  return v;
}

// The nearest f16 to x by search, ties to the even pattern; beyond 65504 + half an ulp: inf.
uint16_t nearest(double x, const std::vector<double>& pos) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;
  auto it = std::lower_bound(pos.begin(), pos.end(), a);
  size_t hi = static_cast<size_t>(it - pos.begin());
  if (hi < pos.size() && pos[hi] == a) return sign | static_cast<uint16_t>(hi);
  size_t lo = hi - 1;
  if (hi == pos.size()) return sign | static_cast<uint16_t>(lo);
  const double dlo = a - pos[lo], dhi = pos[hi] - a;
  size_t pick = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | static_cast<uint16_t>(pick);
}

TEST(F16, EveryPatternWidensToItsClosedFormValue) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const double want = closed_form(static_cast<uint16_t>(b));
    const float got = f16_to_f32(f16{static_cast<uint16_t>(b)});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << b;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << std::hex << b;
      EXPECT_EQ(std::signbit(got), (b & 0x8000) != 0) << std::hex << b;
    }
  }
}

TEST(F16, EveryFiniteValueRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    if (((b >> 10) & 31) == 31 && (b & 1023) != 0) continue;  // NaN: below
    EXPECT_EQ(f32_to_f16(f16_to_f32(f16{static_cast<uint16_t>(b)})).bits, b) << std::hex << b;
  }
}

TEST(F16, MidpointsTieToEvenAndTheirNeighboursRoundToTheNearer) {
  const std::vector<double> pos = positive_values();
  for (size_t i = 0; i + 1 < pos.size(); ++i) {
    const double mid = 0.5 * (pos[i] + pos[i + 1]);  // exact in f32: one bit beyond f16's 11
    const float f = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(f), mid);
    const uint16_t even = static_cast<uint16_t>(i % 2 == 0 ? i : i + 1);
    EXPECT_EQ(f32_to_f16(f).bits, even) << "between " << pos[i] << " and " << pos[i + 1];
    EXPECT_EQ(f32_to_f16(-f).bits, 0x8000 | even);
    EXPECT_EQ(f32_to_f16(std::nextafter(f, 0.0f)).bits, i) << pos[i];
    EXPECT_EQ(f32_to_f16(std::nextafter(f, 1e9f)).bits, i + 1) << pos[i + 1];
  }
}

TEST(F16, RandomFloatsOfEveryExponentRoundToTheNearestValue) {
  const std::vector<double> pos = positive_values();
  std::mt19937 rng(26);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 17);
  for (int trial = 0; trial < 200000; ++trial) {
    const float x = static_cast<float>((trial % 2 ? -1.0 : 1.0) * std::ldexp(mantissa(rng), exponent(rng)));
    ASSERT_EQ(f32_to_f16(x).bits, nearest(x, pos)) << x;
  }
}

TEST(F16, RangeEdgesSubnormalsInfNanAndSignedZero) {
  EXPECT_EQ(f32_to_f16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.99f).bits, 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f).bits, 0x7c00);  // the tie above the largest odd value: inf
  EXPECT_EQ(f32_to_f16(1e10f).bits, 0x7c00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)).bits, 0x0400);  // smallest normal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)).bits, 0x0000);  // half of it: tie to even zero
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)).bits, 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)).bits, 0x0002);  // 1.5 units: tie to even 2
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -40)).bits, 0x0000);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f).bits, 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(-1.0f, -30)).bits, 0x8000);  // underflow keeps the sign
  const f16 nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(f16_to_f32(nan)));
  EXPECT_TRUE(nan.bits & 0x0200) << "quiet";
  const f16 signalling = f32_to_f16(std::numeric_limits<float>::signaling_NaN());
  EXPECT_TRUE(std::isnan(f16_to_f32(signalling)));
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(-std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::quiet_NaN()).bits & 0x8000, 0x8000);
}

TEST(F16, DtypeNamesAndTensorConversions) {
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_STREQ(dtype_name(DType::F16), "f16");
  EXPECT_EQ(parse_dtype("f16"), DType::F16);
  EXPECT_EQ(parse_dtype("fp16"), DType::F16);
  Tensor x = Tensor::empty({5}, DType::F32, Device::cpu());
  const float in[5] = {1.0f / 3.0f, -2.5f, 70000.0f, std::ldexp(1.0f, -24), 1e-9f};
  for (int i = 0; i < 5; ++i) x.data<float>()[i] = in[i];
  Tensor h = x.to(DType::F16);
  ASSERT_EQ(h.dtype(), DType::F16);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(h.data<f16>()[i].bits, f32_to_f16(in[i]).bits) << i;
  Tensor back = h.to(DType::F32);
  EXPECT_EQ(back.data<float>()[0], f16_to_f32(f32_to_f16(in[0])));
  EXPECT_TRUE(std::isinf(back.data<float>()[2]));
  EXPECT_EQ(back.data<float>()[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(back.data<float>()[4], 0.0f);
}

}  // namespace
}  // namespace nd
