// The GPU's FP8 quantise (kernels/cuda/fp8_quantize.h, the hardware conversion) against the CPU
// reference written from the formats' definitions (kernels/cpu/fp8_quantize.h): the same code for
// every element of random f32 and bf16 inputs spread over the formats' whole range, with
// saturating, subnormal, infinite and NaN elements among them, and the same amax; the tiled
// quantise-and-transpose likewise, with the transpose's codes at the transposed places and the
// inverse scale written, over shapes that take the vectorised tiles (whole and cut at the edges)
// and shapes and misaligned inputs that take the element-wise paths, each output also alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/fp8_quantize.h"
#include "kernels/cuda_test_util.h"

#if NANODIST_WITH_CUDA
#include "kernels/cuda/fp8_quantize.h"
#endif

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
// Random magnitudes from 2^-24 to 2^20 (after the scale), both signs, a few specials.
std::vector<float> spread_input(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> exponent(-24.0f, 20.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = ((rng() & 1) ? -1.0f : 1.0f) * std::exp2(exponent(rng));
  x[3] = INFINITY;
  x[5] = -INFINITY;
  x[7] = 0.0f;
  x[11] = -0.0f;
  return x;
}

// NaN's sign and payload are free; every other code must be the reference's.
bool same_code(uint8_t got, uint8_t want, Fp8Format format) {
  return std::isnan(fp8_decode(want, format)) ? std::isnan(fp8_decode(got, format)) : got == want;
}

// x (f32 values) on the GPU as `dtype`, starting one element into its buffer when `misalign`
// (no longer 16-byte aligned, so the kernels must take their element-wise paths).
struct DeviceInput {
  DeviceInput(const Tensor& host, DType dtype, bool misalign) {
    const int64_t n = host.numel();
    Tensor padded = Tensor::zeros({n + 1}, DType::F32);
    std::memcpy(static_cast<float*>(padded.raw_data()) + (misalign ? 1 : 0), host.raw_data(), n * 4);
    storage = padded.to(dtype).to(Device::cuda(0));
    offset = misalign ? 1 : 0;
  }
  template <typename T>
  const T* ptr() const {
    return storage.data<T>() + offset;
  }
  Tensor storage;
  int64_t offset;
};

void check_against_cpu(int64_t n, DType dtype, Fp8Format format, bool with_nan, bool misalign) {
  std::vector<float> x = spread_input(n, test::test_seed());
  if (with_nan) x[n / 2] = NAN;
  Tensor host = Tensor::from_vector(x, {n});
  if (dtype == DType::BF16) host = host.to(DType::BF16).to(DType::F32);  // the values the GPU reads
  std::vector<float> rounded(x.size());
  std::memcpy(rounded.data(), host.raw_data(), x.size() * 4);
  const float scale = 0.75f;
  std::vector<uint8_t> want(x.size());
  const float want_amax = cpu::fp8_quantize(rounded.data(), n, scale, format, want.data());

  DeviceInput dx(host, dtype, misalign);
  Tensor dscale = Tensor::full({1}, scale, DType::F32, Device::cuda(0));
  Tensor damax = Tensor::zeros({1}, DType::F32, Device::cuda(0));
  Tensor dcodes = Tensor::full({(n + 3) / 4}, -1.0, DType::I32, Device::cuda(0));  // poisoned
  auto* codes = static_cast<uint8_t*>(dcodes.raw_data());
  if (dtype == DType::F32)
    cuda::fp8_quantize(dx.ptr<float>(), n, dscale.data<float>(), format, codes, damax.data<float>(), nullptr);
  else
    cuda::fp8_quantize(dx.ptr<bf16>(), n, dscale.data<float>(), format, codes, damax.data<float>(), nullptr);
  Tensor back = dcodes.to(Device::cpu());
  const auto* got = static_cast<const uint8_t*>(back.raw_data());
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!same_code(got[i], want[i], format) && ++bad <= 5)
      ADD_FAILURE() << "element " << i << " x " << rounded[i] << ": code " << int(got[i]) << ", want " << int(want[i]);
  }
  const float amax = static_cast<float>(damax.to(Device::cpu()).item());
  if (with_nan) {
    EXPECT_TRUE(std::isnan(amax));
  } else {
    EXPECT_EQ(amax, want_amax);
  }
}

struct Shape2 {
  int64_t rows, cols;
};
enum class Outputs { kBoth, kCodes, kTransposed };

// fp8_quantize_transpose of a (rows, cols) matrix against the CPU reference: the codes at their
// places, the transposed codes at the transposed places, the amax and the inverse scale; an
// output not asked for is passed as null.
void check_transpose_against_cpu(Shape2 shape, DType dtype, Fp8Format format, Outputs outputs, bool with_nan,
                                 bool misalign) {
  const int64_t rows = shape.rows, cols = shape.cols, n = rows * cols;
  SCOPED_TRACE(::testing::Message() << rows << "x" << cols << " " << dtype_name(dtype) << " outputs "
                                    << static_cast<int>(outputs) << (misalign ? " misaligned" : ""));
  std::vector<float> x = spread_input(n, test::test_seed());
  if (with_nan) x[n / 2 + 1] = NAN;
  Tensor host = Tensor::from_vector(x, {n});
  if (dtype == DType::BF16) host = host.to(DType::BF16).to(DType::F32);  // the values the GPU reads
  std::memcpy(x.data(), host.raw_data(), n * 4);
  const float scale = 2.0f;
  std::vector<uint8_t> want(x.size());
  const float want_amax = cpu::fp8_quantize(x.data(), n, scale, format, want.data());

  DeviceInput dx(host, dtype, misalign);
  // Scalars as the linear keeps them: scale_inv (poisoned), scale, amax.
  Tensor scalars = Tensor::from_vector(std::vector<float>{-1.0f, scale, 0.0f, 0.0f}, {4}).to(Device::cuda(0));
  const int64_t words = (n + 3) / 4;
  Tensor dcodes = Tensor::full({words}, -1.0, DType::I32, Device::cuda(0));  // poisoned
  Tensor dcodes_t = Tensor::full({words}, -1.0, DType::I32, Device::cuda(0));
  const bool with_codes = outputs != Outputs::kTransposed, with_t = outputs != Outputs::kCodes;
  uint8_t* codes = with_codes ? static_cast<uint8_t*>(dcodes.raw_data()) : nullptr;
  uint8_t* codes_t = with_t ? static_cast<uint8_t*>(dcodes_t.raw_data()) : nullptr;
  float* s = scalars.data<float>();
  if (dtype == DType::F32)
    cuda::fp8_quantize_transpose(dx.ptr<float>(), rows, cols, s + 1, format, codes, codes_t, s + 2, s, nullptr);
  else
    cuda::fp8_quantize_transpose(dx.ptr<bf16>(), rows, cols, s + 1, format, codes, codes_t, s + 2, s, nullptr);
  Tensor back_codes = dcodes.to(Device::cpu()), back_t = dcodes_t.to(Device::cpu());
  const auto* got = static_cast<const uint8_t*>(back_codes.raw_data());
  const auto* got_t = static_cast<const uint8_t*>(back_t.raw_data());
  int bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const uint8_t w = want[r * cols + c];
      const bool ok = (!with_codes || same_code(got[r * cols + c], w, format)) &&
                      (!with_t || same_code(got_t[c * rows + r], w, format));
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << "(" << r << "," << c << "): " << int(got[r * cols + c]) << " and transposed "
                      << int(got_t[c * rows + r]) << ", want " << int(w);
    }
  const std::vector<double> back = scalars.to(Device::cpu()).to_double_vector();
  if (with_nan) {
    EXPECT_TRUE(std::isnan(back[2]));
  } else {
    EXPECT_EQ(static_cast<float>(back[2]), want_amax);
  }
  EXPECT_EQ(static_cast<float>(back[0]), 1.0f / scale);
}
#endif

TEST(Fp8QuantizeCuda, TransposedCodesMatchTheCpuReference) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  // The 64 x 64 vectorised tiles, whole and cut at the edges; then shapes only the element-wise
  // tiles take (cols not a multiple of 8, rows not of 4).
  for (Shape2 shape : {Shape2{64, 64}, Shape2{128, 192}, Shape2{80, 96}, Shape2{36, 200}, Shape2{4, 8},
                       Shape2{70, 100}, Shape2{64, 100}, Shape2{66, 96}, Shape2{3, 13}})
    for (DType dtype : {DType::F32, DType::BF16})
      for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2})
        for (Outputs outputs : {Outputs::kBoth, Outputs::kCodes, Outputs::kTransposed})
          check_transpose_against_cpu(shape, dtype, format, outputs, /*with_nan=*/false, /*misalign=*/false);
#endif
}

TEST(Fp8QuantizeCuda, TransposeKeepsNanAndTakesMisalignedInput) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  for (DType dtype : {DType::F32, DType::BF16})
    for (Outputs outputs : {Outputs::kBoth, Outputs::kCodes, Outputs::kTransposed}) {
      check_transpose_against_cpu({80, 96}, dtype, Fp8Format::E4M3, outputs, /*with_nan=*/true, /*misalign=*/false);
      check_transpose_against_cpu({80, 96}, dtype, Fp8Format::E5M2, outputs, /*with_nan=*/false, /*misalign=*/true);
    }
#endif
}

TEST(Fp8QuantizeCuda, MatchesTheCpuReferenceE4M3AndE5M2) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  for (DType dtype : {DType::F32, DType::BF16})
    for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2})
      for (bool with_nan : {false, true}) {
        check_against_cpu(100003, dtype, format, with_nan, /*misalign=*/false);  // eights and a tail
        check_against_cpu(65536, dtype, format, with_nan, /*misalign=*/false);   // eights only
        check_against_cpu(4099, dtype, format, with_nan, /*misalign=*/true);     // element by element
      }
#endif
}

}  // namespace
}  // namespace nd
