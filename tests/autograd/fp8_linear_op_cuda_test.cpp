// ops::fp8_linear on the GPU against the float64 product of the unquantised bf16 values: after one
// step has set the scales (nn/fp8_linear_scaling.h), the output and the gradients of x, w and b
// are within the FP8 formats' rounding bounds (E4M3 x E4M3 forward, E5M2 x E4M3 backward) plus
// the bf16 output's rounding; and a second backward accumulates into the gradients. Needs compute
// capability 8.9+.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/ops/fp8_linear.h"
#include "kernels/cuda_test_util.h"
#include "nn/fp8_linear_scaling.h"

#if NANODIST_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
using test::has_fp8_tensor_cores;

// |got - want| within the bound of a product whose factors each carry a relative rounding of
// ea and eb (|ab - âb̂| <= (ea + eb + ea eb) sum |a||b|), plus bf16's half ulp of the result, plus
// the flush of values below the formats' normals (absolute, from `floor`).
void expect_within(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& mag,
                   double ea, double eb, double floor, const char* what) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = (ea + eb + ea * eb) * mag[i] + std::ldexp(std::fabs(want[i]), -8) + floor;
    if (std::fabs(got[i] - want[i]) > bound && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", want " << want[i] << " (bound " << bound << ")";
  }
}
#endif

TEST(Fp8LinearOp, MatchesTheExactProductWithinTheFormatsBounds) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  const int64_t B = 4, T = 16, K = 64, N = 96, M = B * T;
  Generator gen(test::test_seed());
  Tensor x = test::random_input({B, T, K}, gen, DType::BF16), w = test::random_input({N, K}, gen, DType::BF16, 0.05);
  Tensor b = test::random_input({N}, gen, DType::BF16), g = test::random_input({B, T, N}, gen, DType::BF16, 1e-3);
  const std::vector<double> hx = x.to_double_vector(), hw = w.to_double_vector(), hb = b.to_double_vector(),
                            hg = g.to_double_vector();
  Variable vx(test::on_gpu(x, DType::BF16), true), vw(test::on_gpu(w, DType::BF16), true),
      vb(test::on_gpu(b, DType::BF16), true);
  nn::Fp8LinearScaling scaling(Device::cuda(0), 1);
  Tensor scalars = scaling.add("fc", {});
  Tensor gg = test::on_gpu(g, DType::BF16);
  ops::fp8_linear(vx, vw, vb, scalars).backward(gg);  // step 1: scale 1, records the amaxes
  scaling.end_step(nullptr);
  vx.zero_grad(), vw.zero_grad(), vb.zero_grad();
  Variable y = ops::fp8_linear(vx, vw, vb, scalars);
  y.backward(gg);

  std::vector<double> want_y(M * N), mag_y(M * N), want_dx(M * K, 0.0), mag_dx(M * K, 0.0), want_dw(N * K, 0.0),
      mag_dw(N * K, 0.0), want_db(N, 0.0), mag_db(N, 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = hb[n], mag = 0.0;
      for (int64_t k = 0; k < K; ++k) {
        acc += hx[m * K + k] * hw[n * K + k];
        mag += std::fabs(hx[m * K + k] * hw[n * K + k]);
        want_dx[m * K + k] += hg[m * N + n] * hw[n * K + k];
        mag_dx[m * K + k] += std::fabs(hg[m * N + n] * hw[n * K + k]);
        want_dw[n * K + k] += hg[m * N + n] * hx[m * K + k];
        mag_dw[n * K + k] += std::fabs(hg[m * N + n] * hx[m * K + k]);
      }
      want_y[m * N + n] = acc;
      mag_y[m * N + n] = mag;
      want_db[n] += hg[m * N + n];
      mag_db[n] += std::fabs(hg[m * N + n]);
    }
  const double e4 = 1.0 / 16, e5 = 1.0 / 8;  // half an ulp: 2^-(3+1), 2^-(2+1)
  // Values below the normals round with an absolute error: bounded by the per-product share of
  // half the smallest subnormal over the scale, summed over k (tiny at these scales).
  const double floor = 1e-6;
  expect_within(y.data().to(Device::cpu()).to_double_vector(), want_y, mag_y, e4, e4, floor, "y");
  expect_within(vx.grad().to(Device::cpu()).to_double_vector(), want_dx, mag_dx, e5, e4, floor, "dx");
  expect_within(vw.grad().to(Device::cpu()).to_double_vector(), want_dw, mag_dw, e5, e4, floor, "dw");
  expect_within(vb.grad().to(Device::cpu()).to_double_vector(), want_db, mag_db, 0.0, 0.0, 1e-6, "db");
  // A second backward through a new forward adds to the gradients.
  const std::vector<double> once = vw.grad().to(Device::cpu()).to_double_vector();
  ops::fp8_linear(vx, vw, vb, scalars).backward(gg);
  const std::vector<double> twice = vw.grad().to(Device::cpu()).to_double_vector();
  for (size_t i = 0; i < once.size(); i += 97)
    EXPECT_NEAR(twice[i], 2 * once[i], std::ldexp(std::fabs(once[i]), -6) + 1e-6) << "dw[" << i << "]";
#endif
}

// The op writes only the transposed codes a wanted gradient reads (x's for dw, w's for dx): with
// only x, only w, or nothing needing a gradient, the output and the gradients that are wanted are
// bit for bit those of the run where everything needs one (same codes, same scales, same GEMMs).
TEST(Fp8LinearOp, GradientsOfOnlyWhatNeedsOneAreThoseOfTheFullRun) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  const int64_t M = 48, K = 80, N = 64;
  Generator gen(test::test_seed());
  const Tensor x = test::on_gpu(test::random_input({M, K}, gen, DType::BF16), DType::BF16);
  const Tensor w = test::on_gpu(test::random_input({N, K}, gen, DType::BF16, 0.05), DType::BF16);
  const Tensor b = test::on_gpu(test::random_input({N}, gen, DType::BF16), DType::BF16);
  const Tensor g = test::on_gpu(test::random_input({M, N}, gen, DType::BF16, 1e-3), DType::BF16);
  nn::Fp8LinearScaling scaling(Device::cuda(0), 1);
  Tensor scalars = scaling.add("fc", {});
  {
    Variable vx(x, true), vw(w, true), vb(b, true);
    ops::fp8_linear(vx, vw, vb, scalars).backward(g);  // sets the amaxes the next scales come from
  }
  scaling.end_step(nullptr);
  struct Run {
    std::vector<double> y, dx, dw;
  };
  auto run = [&](bool x_grad, bool w_grad) {
    Variable vx(x, x_grad), vw(w, w_grad), vb(b, true);
    Variable y = ops::fp8_linear(vx, vw, vb, scalars);
    y.backward(g);
    Run r;
    r.y = y.data().to(Device::cpu()).to_double_vector();
    if (x_grad) r.dx = vx.grad().to(Device::cpu()).to_double_vector();
    if (w_grad) r.dw = vw.grad().to(Device::cpu()).to_double_vector();
    return r;
  };
  const Run full = run(true, true), x_only = run(true, false), w_only = run(false, true);
  EXPECT_EQ(x_only.y, full.y);
  EXPECT_EQ(x_only.dx, full.dx);
  EXPECT_EQ(w_only.y, full.y);
  EXPECT_EQ(w_only.dw, full.dw);
  {
    NoGradGuard no_grad;
    Variable vx(x, true), vw(w, true);
    EXPECT_EQ(ops::fp8_linear(vx, vw, Variable(b, true), scalars).data().to(Device::cpu()).to_double_vector(), full.y);
  }
#endif
}

TEST(Fp8LinearOp, RefusesWhatItCannotRun) {
  Tensor scalars = Tensor::zeros({ops::kFp8LinearScalars});
  Variable x(Tensor::zeros({16, 16}), true), w(Tensor::zeros({16, 16}), true);
  EXPECT_THROW(ops::fp8_linear(x, w, Variable(), scalars), Error);  // f32 on the CPU
}

}  // namespace
}  // namespace nd
