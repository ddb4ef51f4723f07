// The GPU's FP8 quantise (kernels/cuda/fp8_quantize.h, the hardware conversion) against the CPU
// reference written from the formats' definitions (kernels/cpu/fp8_quantize.h): the same code for
// every element of random f32 and bf16 inputs spread over the formats' whole range, with
// saturating, subnormal, infinite and NaN elements among them, and the same amax; the tiled
// quantise-and-transpose of a matrix whose sides are not multiples of the tile, likewise, with
// the transpose's codes at the transposed places and the inverse scale written.
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

void check_against_cpu(DType dtype, Fp8Format format, bool with_nan) {
  const int64_t n = 100003;  // not a multiple of the block
  std::vector<float> x = spread_input(n, test::fresh_seed());
  if (with_nan) x[n / 2] = NAN;
  Tensor host = Tensor::from_vector(x, {n});
  if (dtype == DType::BF16) host = host.to(DType::BF16).to(DType::F32);  // the values the GPU reads
  std::vector<float> rounded(x.size());
  std::memcpy(rounded.data(), host.raw_data(), x.size() * 4);
  const float scale = 0.75f;
  std::vector<uint8_t> want(x.size());
  const float want_amax = cpu::fp8_quantize(rounded.data(), n, scale, format, want.data());

  Tensor dx = host.to(dtype).to(Device::cuda(0));
  Tensor dscale = Tensor::full({1}, scale, DType::F32, Device::cuda(0));
  Tensor damax = Tensor::zeros({1}, DType::F32, Device::cuda(0));
  Tensor dcodes = Tensor::full({(n + 3) / 4}, -1.0, DType::I32, Device::cuda(0));  // poisoned
  auto* codes = static_cast<uint8_t*>(dcodes.raw_data());
  if (dtype == DType::F32)
    cuda::fp8_quantize(dx.data<float>(), n, dscale.data<float>(), format, codes, damax.data<float>(), nullptr);
  else
    cuda::fp8_quantize(dx.data<bf16>(), n, dscale.data<float>(), format, codes, damax.data<float>(), nullptr);
  Tensor back = dcodes.to(Device::cpu());
  const auto* got = static_cast<const uint8_t*>(back.raw_data());
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool nan_want = std::isnan(fp8_decode(want[i], format)), nan_got = std::isnan(fp8_decode(got[i], format));
    const bool same = nan_want ? nan_got : got[i] == want[i];  // NaN's sign and payload are free
    if (!same && ++bad <= 5)
      ADD_FAILURE() << "element " << i << " x " << rounded[i] << ": code " << int(got[i]) << ", want " << int(want[i]);
  }
  const float amax = static_cast<float>(damax.to(Device::cpu()).item());
  if (with_nan) {
    EXPECT_TRUE(std::isnan(amax));
  } else {
    EXPECT_EQ(amax, want_amax);
  }
}
#endif

TEST(Fp8QuantizeCuda, TransposedCodesMatchTheCpuReference) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  const int64_t rows = 70, cols = 100;
  std::vector<float> x = spread_input(rows * cols, test::fresh_seed());
  const float scale = 2.0f;
  for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    std::vector<uint8_t> want(x.size());
    const float want_amax = cpu::fp8_quantize(x.data(), rows * cols, scale, format, want.data());
    Tensor dx = Tensor::from_vector(x, {rows, cols}).to(Device::cuda(0));
    Tensor scalars = Tensor::from_vector(std::vector<float>{scale, 0.0f, -1.0f}, {3}).to(Device::cuda(0));
    const int64_t words = (rows * cols + 3) / 4;
    Tensor dcodes = Tensor::full({words}, -1.0, DType::I32, Device::cuda(0));
    Tensor dcodes_t = Tensor::full({words}, -1.0, DType::I32, Device::cuda(0));
    float* s = scalars.data<float>();
    cuda::fp8_quantize_transpose(dx.data<float>(), rows, cols, s, format, static_cast<uint8_t*>(dcodes.raw_data()),
                                 static_cast<uint8_t*>(dcodes_t.raw_data()), s + 1, s + 2, nullptr);
    Tensor codes = dcodes.to(Device::cpu()), codes_t = dcodes_t.to(Device::cpu());
    const auto* got = static_cast<const uint8_t*>(codes.raw_data());
    const auto* got_t = static_cast<const uint8_t*>(codes_t.raw_data());
    int bad = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const uint8_t w = want[r * cols + c];
        if ((got[r * cols + c] != w || got_t[c * rows + r] != w) && ++bad <= 5)
          ADD_FAILURE() << "(" << r << "," << c << "): " << int(got[r * cols + c]) << " and transposed "
                        << int(got_t[c * rows + r]) << ", want " << int(w);
      }
    std::vector<double> back = scalars.to(Device::cpu()).to_double_vector();
    EXPECT_EQ(static_cast<float>(back[1]), want_amax);
    EXPECT_EQ(static_cast<float>(back[2]), 1.0f / scale);
  }
#endif
}

TEST(Fp8QuantizeCuda, MatchesTheCpuReferenceE4M3AndE5M2) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  for (DType dtype : {DType::F32, DType::BF16})
    for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2})
      for (bool with_nan : {false, true}) check_against_cpu(dtype, format, with_nan);
#endif
}

}  // namespace
}  // namespace nd
