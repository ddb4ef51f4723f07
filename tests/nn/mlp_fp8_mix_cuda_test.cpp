// nn::MLP with one linear in FP8 and the other in bf16, the gelu_mlp fusion on: its output and its
// input's and weights' gradients equal bit for bit those of the composition it must run,
// c_proj(gelu(c_fc(x))) with ops::fp8_linear for the FP8 linear and ops::linear for the other
// (each with fresh delayed-scaling scalars). Needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/fp8_linear.h"
#include "kernels/cuda_test_util.h"
#include "nn/fp8_linear_scaling.h"
#include "nn/layers.h"

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
std::vector<double> host(const Tensor& t) { return t.to(Device::cpu()).to_double_vector(); }

struct Result {
  std::vector<double> y, dx, dfc_w, dproj_w;
};

void check_mix(bool fc_fp8, bool proj_fp8) {
  SCOPED_TRACE(::testing::Message() << "c_fc " << (fc_fp8 ? "FP8" : "bf16") << ", c_proj " << (proj_fp8 ? "FP8" : "bf16"));
  const nn::BlockShape shape{64, 4, 1, /*bias=*/true, /*dropout=*/0.0f};
  Generator gen(test::test_seed());
  const Tensor x0 = test::on_gpu(test::random_input({4, 16, 64}, gen, DType::BF16, 1.0), DType::BF16);
  const Tensor g = test::on_gpu(test::random_input({4, 16, 64}, gen, DType::BF16, 1e-3), DType::BF16);

  Generator init(7), drop(8);
  nn::MLP mlp(shape, init, nn::Placement{Device::cuda(0), DType::BF16});
  nn::Fp8LinearScaling scaling(Device::cuda(0), 2);
  if (fc_fp8) mlp.c_fc().use_fp8(scaling.add("mlp.c_fc", {}));
  if (proj_fp8) mlp.c_proj().use_fp8(scaling.add("mlp.c_proj", {}));
  std::map<std::string, Variable> p;
  for (const auto& [name, param] : mlp.named_parameters()) p[name] = param;
  Variable x(x0, true);
  Variable y = mlp.forward(x, drop);
  y.backward(g);
  const Result got{host(y.data()), host(x.grad()), host(p["c_fc.weight"].grad()), host(p["c_proj.weight"].grad())};

  nn::Fp8LinearScaling ref_scaling(Device::cuda(0), 2);
  auto fresh = [&](const char* name) { return Variable(p[name].data().clone(), true); };
  Variable fc_w = fresh("c_fc.weight"), fc_b = fresh("c_fc.bias"), proj_w = fresh("c_proj.weight"),
           proj_b = fresh("c_proj.bias");
  auto linear = [&](const Variable& in, const Variable& w, const Variable& b, bool fp8, const char* name) {
    return fp8 ? ops::fp8_linear(in, w, b, ref_scaling.add(name, {})) : ops::linear(in, w, b);
  };
  Variable rx(x0, true);
  Variable ry = linear(ops::gelu(linear(rx, fc_w, fc_b, fc_fp8, "c_fc")), proj_w, proj_b, proj_fp8, "c_proj");
  ry.backward(g);
  const Result want{host(ry.data()), host(rx.grad()), host(fc_w.grad()), host(proj_w.grad())};

  EXPECT_EQ(got.y, want.y);
  EXPECT_EQ(got.dx, want.dx);
  EXPECT_EQ(got.dfc_w, want.dfc_w);
  EXPECT_EQ(got.dproj_w, want.dproj_w);
}
#endif

TEST(MlpFp8Mix, EachLinearRunsInItsOwnPrecision) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  check_mix(true, false);
  check_mix(false, true);
#endif
}

}  // namespace
}  // namespace nd
