// ops::fp8_gelu_mlp against the unfused composition it replaces, fp8_linear(gelu(fp8_linear(x))),
// each with its own delayed-scaling scalars: over two steps (the first at scale 1, the second with
// the scales the first's amaxes give) the output and the gradients of x, both weights and c_proj's
// bias are equal bit for bit, c_fc's bias gradient within f32 rounding of its sum order, and every
// scale, amax and inverse scale recorded is equal. Also with a second backward accumulating, without
// biases, with only the weights needing gradients.
// Needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/fp8_gelu_mlp.h"
#include "autograd/ops/fp8_linear.h"
#include "kernels/cuda_test_util.h"
#include "nn/fp8_linear_scaling.h"

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
using test::has_fp8_tensor_cores;

std::vector<double> host(const Tensor& t) { return t.to(Device::cpu()).to_double_vector(); }

struct Params {
  Tensor x, fc_w, fc_b, proj_w, proj_b, g;  // on the GPU, bf16; a bias undefined when absent
};

Params make_params(int64_t M, int64_t C, int64_t H, bool biases, uint64_t seed) {
  Generator gen(seed);
  auto gpu = [&](const Shape& s, double scale) { return test::on_gpu(test::random_input(s, gen, DType::BF16, scale), DType::BF16); };
  Params p;
  p.x = gpu({M / 16, 16, C}, 1.0);
  p.fc_w = gpu({H, C}, 0.1);
  p.proj_w = gpu({C, H}, 0.05);
  if (biases) p.fc_b = gpu({H}, 0.5), p.proj_b = gpu({C}, 0.1);
  p.g = gpu({M / 16, 16, C}, 1e-3);
  return p;
}

// One model's variables and scalars: fused or unfused, the same starting values.
struct Mlp {
  Mlp(const Params& p, bool x_grad, bool fused) : scaling(Device::cuda(0), 2), fused(fused) {
    x = Variable(p.x, x_grad);
    fc_w = Variable(p.fc_w.clone(), true);
    proj_w = Variable(p.proj_w.clone(), true);
    if (p.fc_b.defined()) fc_b = Variable(p.fc_b.clone(), true), proj_b = Variable(p.proj_b.clone(), true);
    fc_s = scaling.add("fc", {});
    proj_s = scaling.add("proj", {});
  }
  Variable forward() const {
    if (fused) return ops::fp8_gelu_mlp(x, fc_w, fc_b, fc_s, proj_w, proj_b, proj_s);
    return ops::fp8_linear(ops::gelu(ops::fp8_linear(x, fc_w, fc_b, fc_s)), proj_w, proj_b, proj_s);
  }
  nn::Fp8LinearScaling scaling;
  bool fused;
  Variable x, fc_w, fc_b, proj_w, proj_b;
  Tensor fc_s, proj_s;
};

// c_fc's bias gradients: the same bf16 values summed in another order (f32), then rounded to bf16.
void expect_bias_close(const std::vector<double>& got, const std::vector<double>& want, int64_t M) {
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = std::ldexp(std::fabs(want[i]), -7) + 1e-7 * static_cast<double>(M);
    EXPECT_NEAR(got[i], want[i], bound) << "fc bias gradient [" << i << "]";
  }
}

// Steps of forward + backward on both, comparing everything after each; `backwards` per step
// (2: the second accumulates into the gradients).
void compare_fused_with_unfused(int64_t M, int64_t C, int64_t H, bool biases, bool x_grad, int backwards) {
  SCOPED_TRACE(::testing::Message() << "M " << M << " C " << C << " H " << H << (biases ? " biases" : "")
                                    << (x_grad ? " x grad" : "") << " backwards " << backwards);
  const Params p = make_params(M, C, H, biases, test::test_seed());
  Mlp fused(p, x_grad, true), unfused(p, x_grad, false);
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(::testing::Message() << "step " << step);
    for (Mlp* m : {&fused, &unfused}) {
      for (Variable* v : {&m->x, &m->fc_w, &m->fc_b, &m->proj_w, &m->proj_b})
        if (v->defined() && v->requires_grad()) v->zero_grad();
    }
    Variable y_fused, y_unfused;
    for (int b = 0; b < backwards; ++b) {
      y_fused = fused.forward();
      y_unfused = unfused.forward();
      y_fused.backward(p.g);
      y_unfused.backward(p.g);
    }
    EXPECT_EQ(host(y_fused.data()), host(y_unfused.data())) << "output";
    if (x_grad) {
      EXPECT_EQ(host(fused.x.grad()), host(unfused.x.grad())) << "x gradient";
    }
    EXPECT_EQ(host(fused.fc_w.grad()), host(unfused.fc_w.grad())) << "fc weight gradient";
    EXPECT_EQ(host(fused.proj_w.grad()), host(unfused.proj_w.grad())) << "proj weight gradient";
    if (biases) {
      EXPECT_EQ(host(fused.proj_b.grad()), host(unfused.proj_b.grad())) << "proj bias gradient";
      expect_bias_close(host(fused.fc_b.grad()), host(unfused.fc_b.grad()), M);
    }
    // Every record (scale_inv, scale, amax) of x, w and dout of both linears.
    EXPECT_EQ(host(fused.fc_s), host(unfused.fc_s)) << "fc scalars";
    EXPECT_EQ(host(fused.proj_s), host(unfused.proj_s)) << "proj scalars";
    fused.scaling.end_step(nullptr);
    unfused.scaling.end_step(nullptr);
  }
}
#endif

TEST(Fp8GeluMlpOp, EqualsTheUnfusedCompositionBitForBit) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  compare_fused_with_unfused(64, 64, 256, /*biases=*/true, /*x_grad=*/true, 1);
  compare_fused_with_unfused(80, 48, 192, /*biases=*/true, /*x_grad=*/true, 2);  // cut tiles, accumulating
  compare_fused_with_unfused(48, 32, 128, /*biases=*/false, /*x_grad=*/true, 1);
  compare_fused_with_unfused(64, 64, 256, /*biases=*/true, /*x_grad=*/false, 1);  // the first layer's case
#endif
}

TEST(Fp8GeluMlpOp, WithoutGradientsGivesTheSameOutput) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  const Params p = make_params(64, 64, 256, true, test::test_seed());
  Mlp fused(p, true, true), unfused(p, true, false);
  NoGradGuard no_grad;
  EXPECT_EQ(host(fused.forward().data()), host(unfused.forward().data()));
  EXPECT_EQ(host(fused.proj_s), host(unfused.proj_s));
#endif
}

}  // namespace
}  // namespace nd
