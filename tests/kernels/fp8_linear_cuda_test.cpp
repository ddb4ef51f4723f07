// The FP8 linear (kernels/cuda/fp8_linear.h) against the CPU: the same E4M3/E5M2 codes made by the
// reference quantiser of kernels/cpu/fp8_quantize.h with the same scales, multiplied in float64;
// forward's out, backward's dx and dw equal that to f32 accumulation and bf16 output rounding, db
// is the bf16 column sum of dout, and every operand's amax and inverse scale are written.
// Accumulating gradients (beta 1) add to what was there. Needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/fp8_quantize.h"
#include "kernels/cuda_test_util.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/fp8_linear.h"
#endif

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
using test::has_fp8_tensor_cores;

// The values the reference multiplies: decode(encode(v * scale)) / scale, as the GPU does.
std::vector<double> dequantised(const std::vector<double>& v, float scale, Fp8Format f) {
  std::vector<float> x(v.begin(), v.end());
  std::vector<uint8_t> codes(x.size());
  cpu::fp8_quantize(x.data(), static_cast<int64_t>(x.size()), scale, f, codes.data());
  std::vector<double> out(x.size());
  const float inv = 1.0f / scale;
  for (size_t i = 0; i < x.size(); ++i) out[i] = static_cast<double>(fp8_decode(codes[i], f)) * inv;
  return out;
}

double amax_of(const std::vector<double>& v) {
  double a = 0.0;
  for (double x : v) a = std::max(a, std::fabs(x));
  return a;
}

struct Bytes {  // a device buffer of n bytes
  explicit Bytes(int64_t n) : t(Tensor::zeros({(n + 3) / 4}, DType::I32, Device::cuda(0))) {}
  uint8_t* ptr() { return static_cast<uint8_t*>(t.raw_data()); }
  Tensor t;
};

// k: the number of products each element sums (the GEMM's inner dimension).
void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& magnitude,
                  int64_t k, const char* what) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > std::ldexp(std::fabs(want[i]), -8) + test::fp8_accumulation_rel(k) * magnitude[i] &&
        ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", want " << want[i];
}
#endif

TEST(Fp8LinearCuda, ForwardAndBackwardMatchTheCpuOnTheSameCodes) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  const int64_t M = 64, N = 48, K = 80;
  Generator gen(test::test_seed());
  Tensor x = test::random_input({M, K}, gen, DType::BF16), w = test::random_input({N, K}, gen, DType::BF16, 0.05);
  Tensor b = test::random_input({N}, gen, DType::BF16), dout = test::random_input({M, N}, gen, DType::BF16, 1e-3);
  const std::vector<double> hx = x.to_double_vector(), hw = w.to_double_vector(), hb = b.to_double_vector(),
                            hd = dout.to_double_vector();
  // Delayed scaling's choice once the history has seen these tensors: fp8 max / amax.
  const float sx = static_cast<float>(448.0 / amax_of(hx)), sw = static_cast<float>(448.0 / amax_of(hw));
  const float sd = static_cast<float>(57344.0 / amax_of(hd));
  const std::vector<double> qx = dequantised(hx, sx, Fp8Format::E4M3), qw = dequantised(hw, sw, Fp8Format::E4M3),
                            qd = dequantised(hd, sd, Fp8Format::E5M2);

  // Scalars: a 16-byte record (scale_inv, scale, amax, unused) for each of x, w, dout: cuBLASLt
  // reads scale_inv through a pointer it wants 16-byte aligned.
  Tensor scalars = Tensor::from_vector(std::vector<float>{0, sx, 0, 0, 0, sw, 0, 0, 0, sd, 0, 0}, {12}).to(Device::cuda(0));
  float* s = scalars.data<float>();
  cuda::Fp8ScaleSlot xs{s + 1, s + 2, s}, ws{s + 5, s + 6, s + 4}, ds{s + 9, s + 10, s + 8};
  Bytes bx(M * K), bxt(M * K), bw(N * K), bwt(N * K), bd(M * N), bdt(M * N);
  cuda::Fp8LinearBuffers buf{bx.ptr(), bxt.ptr(), bw.ptr(), bwt.ptr(), bd.ptr(), bdt.ptr()};
  Tensor gx = test::on_gpu(x, DType::BF16), gw = test::on_gpu(w, DType::BF16), gb = test::on_gpu(b, DType::BF16),
         gd = test::on_gpu(dout, DType::BF16);
  Tensor out = Tensor::full({M, N}, NAN, DType::BF16, Device::cuda(0));
  cuda::fp8_linear_forward(gx.data<bf16>(), gw.data<bf16>(), gb.data<bf16>(), out.data<bf16>(), M, N, K, xs, ws, buf);
  Tensor dx = Tensor::full({M, K}, NAN, DType::BF16, Device::cuda(0));
  Tensor dw = Tensor::full({N, K}, 0.5, DType::BF16, Device::cuda(0));  // accumulated into
  Tensor db = Tensor::full({N}, NAN, DType::BF16, Device::cuda(0));
  cuda::fp8_linear_backward(gd.data<bf16>(), {dx.data<bf16>(), false}, {dw.data<bf16>(), true},
                            {db.data<bf16>(), false}, M, N, K, xs, ws, ds, buf);

  std::vector<double> want_out(M * N), mag_out(M * N), want_dx(M * K, 0.0), mag_dx(M * K, 0.0),
      want_dw(N * K, 0.5), mag_dw(N * K, 0.5), want_db(N, 0.0), mag_db(N, 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = hb[n], mag = std::fabs(hb[n]);
      for (int64_t k = 0; k < K; ++k) {
        acc += qx[m * K + k] * qw[n * K + k];
        mag += std::fabs(qx[m * K + k] * qw[n * K + k]);
        want_dx[m * K + k] += qd[m * N + n] * qw[n * K + k];
        mag_dx[m * K + k] += std::fabs(qd[m * N + n] * qw[n * K + k]);
        want_dw[n * K + k] += qd[m * N + n] * qx[m * K + k];
        mag_dw[n * K + k] += std::fabs(qd[m * N + n] * qx[m * K + k]);
      }
      want_out[m * N + n] = acc;
      mag_out[m * N + n] = mag;
      want_db[n] += hd[m * N + n];
      mag_db[n] += std::fabs(hd[m * N + n]);
    }
  expect_close(out.to(Device::cpu()).to_double_vector(), want_out, mag_out, K, "out");
  expect_close(dx.to(Device::cpu()).to_double_vector(), want_dx, mag_dx, N, "dx");
  expect_close(dw.to(Device::cpu()).to_double_vector(), want_dw, mag_dw, M, "dw");
  expect_close(db.to(Device::cpu()).to_double_vector(), want_db, mag_db, M, "db");
  const std::vector<double> back = scalars.to(Device::cpu()).to_double_vector();
  EXPECT_EQ(back[2], static_cast<double>(static_cast<float>(amax_of(hx))));
  EXPECT_EQ(back[6], static_cast<double>(static_cast<float>(amax_of(hw))));
  EXPECT_EQ(back[10], static_cast<double>(static_cast<float>(amax_of(hd))));
  EXPECT_EQ(static_cast<float>(back[0]), 1.0f / sx);
  EXPECT_EQ(static_cast<float>(back[8]), 1.0f / sd);
#endif
}

TEST(Fp8LinearCuda, RefusesSizesTheFp8GemmsCannotTake) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  cuda::Fp8LinearBuffers buf;
  cuda::Fp8ScaleSlot none;
  EXPECT_THROW(cuda::fp8_linear_forward(nullptr, nullptr, nullptr, nullptr, 64, 50, 64, none, none, buf), Error);
#endif
}

}  // namespace
}  // namespace nd
