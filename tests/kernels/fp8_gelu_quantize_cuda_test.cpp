// The GELU-fused FP8 quantises (kernels/cuda/fp8_gelu_quantize.h) against the unfused path they
// replace: the GPU's own GELU kernels (cuda::gelu_forward / gelu_backward to bf16), then the CPU
// reference quantise written from the formats' definitions (kernels/cpu/fp8_quantize.h). The codes,
// the transposed codes and the amax must be equal bit for bit, the inverse scale written; the
// backward's column sums (c_fc's bias gradient) within f32 rounding of the float64 sum of the same
// bf16 values, also added to what the gradient holds. Whole and cut 64 x 64 tiles, both formats,
// each output alone; shapes the tiles cannot take are an nd::Error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/fp8_quantize.h"
#include "kernels/cuda_test_util.h"
#include "autograd/op_test_util.h"

#if NANODIST_WITH_CUDA
#include "kernels/cuda/fp8_gelu_quantize.h"
#include "kernels/cuda/gelu.h"
#endif

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
struct Shape2 {
  int64_t rows, cols;
};
enum class Outputs { kBoth, kCodes, kTransposed };

// NaN's sign and payload are free; every other code must be the reference's.
bool same_code(uint8_t got, uint8_t want, Fp8Format format) {
  return std::isnan(fp8_decode(want, format)) ? std::isnan(fp8_decode(got, format)) : got == want;
}

// A bf16 (rows, cols) GPU tensor of normal values times `scale`, with a few large ones among them
// (to saturate E4M3 after the test's scale, and the GELU's flat tails).
Tensor gpu_input(Shape2 s, Generator& gen, double scale) {
  Tensor t = test::random_input({s.rows, s.cols}, gen, DType::BF16, scale);
  float* v = t.data<float>();
  for (int64_t i = 0; i < t.numel(); i += 37) v[i] *= 300.0f;
  return test::on_gpu(t, DType::BF16);
}

std::vector<float> to_host_f32(const Tensor& t) {
  Tensor h = t.to(Device::cpu()).to(DType::F32);
  std::vector<float> v(static_cast<size_t>(h.numel()));
  std::memcpy(v.data(), h.raw_data(), v.size() * 4);
  return v;
}

const uint8_t* code_bytes(const Tensor& host) { return static_cast<const uint8_t*>(host.raw_data()); }

// The kernel's codes (and transposed codes) against the CPU quantise of `values` (the unfused bf16
// tensor), its amax and scale_inv from `scalars` (scale_inv, scale, amax, unused).
void expect_codes(Shape2 s, const std::vector<float>& values, float scale, Fp8Format format, Outputs outputs,
                  const Tensor& dcodes, const Tensor& dcodes_t, const Tensor& scalars) {
  std::vector<uint8_t> want(values.size());
  const float want_amax = cpu::fp8_quantize(values.data(), s.rows * s.cols, scale, format, want.data());
  const Tensor codes = dcodes.to(Device::cpu()), codes_t = dcodes_t.to(Device::cpu());
  const uint8_t *got = code_bytes(codes), *got_t = code_bytes(codes_t);
  const bool with_codes = outputs != Outputs::kTransposed, with_t = outputs != Outputs::kCodes;
  int bad = 0;
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c = 0; c < s.cols; ++c) {
      const uint8_t w = want[r * s.cols + c];
      const bool ok = (!with_codes || same_code(got[r * s.cols + c], w, format)) &&
                      (!with_t || same_code(got_t[c * s.rows + r], w, format));
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << "(" << r << "," << c << ") value " << values[r * s.cols + c] << ": "
                      << int(got[r * s.cols + c]) << " and transposed " << int(got_t[c * s.rows + r]) << ", want "
                      << int(w);
    }
  const std::vector<double> back = scalars.to(Device::cpu()).to_double_vector();
  EXPECT_EQ(static_cast<float>(back[2]), want_amax);
  EXPECT_EQ(static_cast<float>(back[0]), 1.0f / scale);
}

struct Buffers {
  Buffers(Shape2 s, float scale, Outputs outputs) {
    const int64_t words = (s.rows * s.cols + 3) / 4;
    codes = Tensor::full({words}, -1.0, DType::I32, Device::cuda(0));  // poisoned
    codes_t = Tensor::full({words}, -1.0, DType::I32, Device::cuda(0));
    scalars = Tensor::from_vector(std::vector<float>{-1.0f, scale, 0.0f, 0.0f}, {4}).to(Device::cuda(0));
    with_codes = outputs != Outputs::kTransposed;
    with_t = outputs != Outputs::kCodes;
  }
  uint8_t* codes_ptr() const { return with_codes ? static_cast<uint8_t*>(codes.raw_data()) : nullptr; }
  uint8_t* codes_t_ptr() const { return with_t ? static_cast<uint8_t*>(codes_t.raw_data()) : nullptr; }
  float* scale_inv() const { return scalars.data<float>(); }
  const float* scale() const { return scalars.data<float>() + 1; }
  float* amax() const { return scalars.data<float>() + 2; }
  Tensor codes, codes_t, scalars;
  bool with_codes, with_t;
};

void check_gelu_forward(Shape2 s, Fp8Format format, Outputs outputs) {
  SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.cols << " format " << static_cast<int>(format)
                                    << " outputs " << static_cast<int>(outputs));
  Generator gen(test::test_seed());
  const Tensor h = gpu_input(s, gen, 2.0);
  // The unfused path: the GELU kernel's bf16 output.
  Tensor y = Tensor::empty(h.shape(), DType::BF16, Device::cuda(0));
  cuda::gelu_forward(h.data<bf16>(), y.data<bf16>(), h.numel());
  const float scale = format == Fp8Format::E4M3 ? 4.0f : 1.5f;
  Buffers buf(s, scale, outputs);
  cuda::fp8_gelu_quantize_transpose(h.data<bf16>(), s.rows, s.cols, buf.scale(), format, buf.codes_ptr(),
                                    buf.codes_t_ptr(), buf.amax(), buf.scale_inv());
  expect_codes(s, to_host_f32(y), scale, format, outputs, buf.codes, buf.codes_t, buf.scalars);
}

void check_gelu_backward(Shape2 s, Outputs outputs, bool accumulate) {
  SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.cols << " outputs " << static_cast<int>(outputs)
                                    << (accumulate ? " accumulating" : ""));
  Generator gen(test::test_seed());
  const Tensor h = gpu_input(s, gen, 2.0), dg = gpu_input(s, gen, 1e-3);
  // The unfused path: the GELU backward kernel's bf16 gradient.
  Tensor dh = Tensor::empty(h.shape(), DType::BF16, Device::cuda(0));
  cuda::gelu_backward(h.data<bf16>(), dg.data<bf16>(), GradDest<bf16>{dh.data<bf16>(), false}, h.numel());
  const std::vector<float> want_dh = to_host_f32(dh);
  const float scale = 2048.0f;
  Buffers buf(s, scale, outputs);
  const Tensor old_db = test::on_gpu(test::random_input({s.cols}, gen, DType::BF16, 1e-2), DType::BF16);
  Tensor db = accumulate ? old_db.clone() : Tensor::full({s.cols}, 7.0, DType::BF16, Device::cuda(0));
  cuda::fp8_dgelu_quantize_transpose(dg.data<bf16>(), h.data<bf16>(), s.rows, s.cols, buf.scale(), Fp8Format::E5M2,
                                     buf.codes_ptr(), buf.codes_t_ptr(), buf.amax(), buf.scale_inv(),
                                     GradDest<bf16>{db.data<bf16>(), accumulate});
  expect_codes(s, want_dh, scale, Fp8Format::E5M2, outputs, buf.codes, buf.codes_t, buf.scalars);
  // The column sums: f32 partial sums of the same bf16 values (at most `rows` roundings of 2^-24
  // of the running magnitude), plus the old value when accumulating, then bf16's half ulp.
  const std::vector<double> got = db.to(Device::cpu()).to_double_vector(), old = old_db.to(Device::cpu()).to_double_vector();
  int bad = 0;
  for (int64_t c = 0; c < s.cols; ++c) {
    double sum = accumulate ? old[c] : 0.0, mag = std::fabs(sum);
    for (int64_t r = 0; r < s.rows; ++r) {
      sum += want_dh[r * s.cols + c];
      mag += std::fabs(want_dh[r * s.cols + c]);
    }
    const double bound = std::ldexp(mag, -24) * static_cast<double>(s.rows + 3) + std::ldexp(std::fabs(sum), -8);
    if (std::fabs(got[c] - sum) > bound && ++bad <= 5)
      ADD_FAILURE() << "db[" << c << "] = " << got[c] << ", want " << sum << " (bound " << bound << ")";
  }
}
#endif

TEST(Fp8GeluQuantizeCuda, ForwardCodesAreThoseOfGeluThenQuantise) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  for (Shape2 s : {Shape2{64, 64}, Shape2{128, 192}, Shape2{80, 96}, Shape2{36, 200}, Shape2{4, 8}})
    for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2})
      for (Outputs outputs : {Outputs::kBoth, Outputs::kCodes, Outputs::kTransposed})
        check_gelu_forward(s, format, outputs);
#endif
}

TEST(Fp8GeluQuantizeCuda, BackwardCodesAreThoseOfGeluGradThenQuantiseWithColumnSums) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  for (Shape2 s : {Shape2{64, 64}, Shape2{128, 192}, Shape2{80, 96}, Shape2{36, 200}, Shape2{4, 8}, Shape2{200, 64}})
    for (Outputs outputs : {Outputs::kBoth, Outputs::kCodes, Outputs::kTransposed})
      for (bool accumulate : {false, true}) check_gelu_backward(s, outputs, accumulate);
#endif
}

TEST(Fp8GeluQuantizeCuda, RejectsShapesTheTilesCannotTake) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  Tensor h = Tensor::zeros({6 * 12}, DType::BF16, Device::cuda(0));
  Buffers buf({6, 12}, 1.0f, Outputs::kBoth);
  test::expect_error_mentioning(
      [&] {
        cuda::fp8_gelu_quantize_transpose(h.data<bf16>(), 6, 12, buf.scale(), Fp8Format::E4M3, buf.codes_ptr(),
                                          buf.codes_t_ptr(), buf.amax(), buf.scale_inv());
      },
      {"fp8_gelu_quantize_transpose", "multiple of 8"});
  test::expect_error_mentioning(
      [&] {
        cuda::fp8_dgelu_quantize_transpose(h.data<bf16>(), h.data<bf16>() + 1, 4, 8, buf.scale(), Fp8Format::E5M2,
                                           buf.codes_ptr(), buf.codes_t_ptr(), buf.amax(), buf.scale_inv(),
                                           GradDest<bf16>{});
      },
      {"fp8_dgelu_quantize_transpose", "misaligned"});
#endif
}

}  // namespace
}  // namespace nd
