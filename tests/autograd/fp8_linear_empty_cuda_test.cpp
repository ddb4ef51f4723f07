// ops::fp8_linear and ops::fp8_gelu_mlp with no rows (M = 0, e.g. an empty micro-batch): an empty
// output, no GEMM and no amax recorded (the scalars unchanged), and in backward zero weight and
// bias gradients, or an accumulated gradient left as it was. Needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <vector>

#include "autograd/ops/fp8_gelu_mlp.h"
#include "autograd/ops/fp8_linear.h"
#include "kernels/cuda_test_util.h"
#include "nn/fp8_linear_scaling.h"

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
std::vector<double> host(const Tensor& t) { return t.to(Device::cpu()).to_double_vector(); }

Variable gpu_param(const Shape& shape, Generator& gen, double scale) {
  return Variable(test::on_gpu(test::random_input(shape, gen, DType::BF16, scale), DType::BF16), true);
}

Tensor empty_rows(int64_t cols) { return Tensor::zeros({0, cols}, DType::BF16, Device::cuda(0)); }
#endif

TEST(Fp8LinearNoRows, GivesAnEmptyOutputAndZeroGradients) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  const int64_t K = 32, N = 48;
  Generator gen(test::test_seed());
  Variable w = gpu_param({N, K}, gen, 0.1), b = gpu_param({N}, gen, 0.1);
  Variable x(empty_rows(K), true);
  nn::Fp8LinearScaling scaling(Device::cuda(0), 1);
  Tensor scalars = scaling.add("fc", {});
  const std::vector<double> before = host(scalars);
  Variable y = ops::fp8_linear(x, w, b, scalars);
  EXPECT_EQ(y.data().shape(), (Shape{0, N}));
  // The gradients' buffers come out NaN unless backward writes their zeros.
  test::poison_next_allocation({N, K}, DType::BF16);
  test::poison_next_allocation({N}, DType::BF16);
  y.backward(empty_rows(N));
  EXPECT_EQ(x.grad().shape(), (Shape{0, K}));
  EXPECT_EQ(host(w.grad()), std::vector<double>(N * K, 0.0));
  EXPECT_EQ(host(b.grad()), std::vector<double>(N, 0.0));
  EXPECT_EQ(host(scalars), before) << "a quantise ran (an amax or scale changed)";
#endif
}

// A step's gradients from a real batch, then an empty one through the same weights: unchanged.
TEST(Fp8LinearNoRows, LeavesAnAccumulatedGradientAsItWas) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  const int64_t M = 32, K = 32, N = 48;
  Generator gen(test::test_seed());
  Variable w = gpu_param({N, K}, gen, 0.1), b = gpu_param({N}, gen, 0.1), x = gpu_param({M, K}, gen, 1.0);
  nn::Fp8LinearScaling scaling(Device::cuda(0), 1);
  Tensor scalars = scaling.add("fc", {});
  ops::fp8_linear(x, w, b, scalars).backward(test::on_gpu(test::random_input({M, N}, gen, DType::BF16, 1e-2), DType::BF16));
  const std::vector<double> dw = host(w.grad()), db = host(b.grad());
  ops::fp8_linear(Variable(empty_rows(K), true), w, b, scalars).backward(empty_rows(N));
  EXPECT_EQ(host(w.grad()), dw);
  EXPECT_EQ(host(b.grad()), db);
#endif
}

TEST(Fp8GeluMlpNoRows, GivesAnEmptyOutputAndZeroGradients) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  const int64_t C = 32, H = 128;
  Generator gen(test::test_seed());
  Variable fc_w = gpu_param({H, C}, gen, 0.1), fc_b = gpu_param({H}, gen, 0.1);
  Variable proj_w = gpu_param({C, H}, gen, 0.05), proj_b = gpu_param({C}, gen, 0.1);
  Variable x(empty_rows(C), true);
  nn::Fp8LinearScaling scaling(Device::cuda(0), 2);
  Tensor fc_s = scaling.add("fc", {}), proj_s = scaling.add("proj", {});
  const std::vector<double> fc_before = host(fc_s), proj_before = host(proj_s);
  Variable y = ops::fp8_gelu_mlp(x, fc_w, fc_b, fc_s, proj_w, proj_b, proj_s);
  EXPECT_EQ(y.data().shape(), (Shape{0, C}));
  y.backward(empty_rows(C));
  EXPECT_EQ(x.grad().shape(), (Shape{0, C}));
  EXPECT_EQ(host(fc_w.grad()), std::vector<double>(H * C, 0.0));
  EXPECT_EQ(host(fc_b.grad()), std::vector<double>(H, 0.0));
  EXPECT_EQ(host(proj_w.grad()), std::vector<double>(C * H, 0.0));
  EXPECT_EQ(host(proj_b.grad()), std::vector<double>(C, 0.0));
  EXPECT_EQ(host(fc_s), fc_before);
  EXPECT_EQ(host(proj_s), proj_before);
#endif
}

}  // namespace
}  // namespace nd
