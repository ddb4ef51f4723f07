// Element types and the bf16 <-> f32 conversions (round to nearest even), usable on host and device.
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
enum class DType { F32, BF16, I32, U16, F64 };

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

template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <>
struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <>
struct dtype_of<bf16> { static constexpr DType value = DType::BF16; };
template <>
struct dtype_of<int32_t> { static constexpr DType value = DType::I32; };
template <>
struct dtype_of<uint16_t> { static constexpr DType value = DType::U16; };

}  // namespace nd
