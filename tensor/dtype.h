// Element types and the bf16 <-> f32 and f16 <-> f32 conversions (round to nearest even), usable on
// host and device.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__CUDACC__)
#define ND_HOST_DEVICE __host__ __device__
#else
#define ND_HOST_DEVICE
#endif

namespace nd {

// f64 exists for the CPU reference only: float64 gradient checks run the real kernels in double.
// f16 is IEEE binary16 (--dtype fp16); appended last so the other values keep their numbers.
enum class DType { F32, BF16, I32, U16, F64, F16 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);
DType parse_dtype(const std::string& name);

// bf16 is the top half of an IEEE f32: same exponent range, 8 bits of mantissa.
struct bf16 {
  uint16_t bits;
};

ND_HOST_DEVICE inline uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

ND_HOST_DEVICE inline float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

ND_HOST_DEVICE inline bf16 f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<uint16_t>((u >> 16) | 0x40)};  // quiet NaN
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);  // ties go to the even mantissa
  return bf16{static_cast<uint16_t>((u + rounding) >> 16)};
}

ND_HOST_DEVICE inline float bf16_to_f32(bf16 b) { return f32_from_bits(static_cast<uint32_t>(b.bits) << 16); }

// f16 is IEEE binary16: 5 exponent bits (bias 15), 10 of mantissa; largest finite 65504, smallest
// normal 2^-14, smallest subnormal 2^-24.
struct f16 {
  uint16_t bits;
};

// Round to nearest even, subnormals included; beyond 65504 + half an ulp (65520) it is inf, and a
// NaN stays a (quiet) NaN with its sign and the top of its payload.
ND_HOST_DEVICE inline f16 f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return f16{static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu))};
  if (a >= 0x477ff000u) return f16{static_cast<uint16_t>(sign | 0x7c00u)};  // rounds to inf (or is inf)
  if (a >= 0x38800000u) {  // a normal f16: rebias the exponent (127 - 15), round off 13 mantissa bits
    const uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
    return f16{static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
  }
  // Subnormal (or zero): the value in units of 2^-24 is m 2^-shift, m the 24-bit significand.
  const uint32_t e = a >> 23;
  const uint32_t shift = 126u - e;  // >= 14 here
  if (shift > 24u) return f16{sign};  // below 2^-25: rounds to zero
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  uint32_t q = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u))) ++q;  // may carry into the smallest normal: still right
  return f16{static_cast<uint16_t>(sign | q)};
}

ND_HOST_DEVICE inline float f16_to_f32(f16 h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
  if (e == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (m << 13));  // inf, NaN
  if (e != 0) return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
  const float v = static_cast<float>(m) * 5.9604644775390625e-08f;  // m 2^-24, exact
  return sign ? -v : v;
}

template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <>
struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <>
struct dtype_of<bf16> { static constexpr DType value = DType::BF16; };
template <>
struct dtype_of<f16> { static constexpr DType value = DType::F16; };
template <>
struct dtype_of<int32_t> { static constexpr DType value = DType::I32; };
template <>
struct dtype_of<uint16_t> { static constexpr DType value = DType::U16; };

}  // namespace nd
