// Ops recorded without their forward (autograd/without_forward.h) on the GPU: bf16 linear and
// gelu_mlp, and the FP8 fp8_linear and fp8_gelu_mlp (which then write only the transposed codes
// backward reads), give no output and, after backward, every gradient of the normally recorded op
// bit for bit; the FP8 ops leave every delayed-scaling record (scale_inv, scale, amax of x, w and
// the output's gradient) as the recorded op does. FP8 needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/fp8_gelu_mlp.h"
#include "autograd/ops/fp8_linear.h"
#include "autograd/without_forward.h"
#include "kernels/cuda_test_util.h"
#include "nn/fp8_linear_scaling.h"

namespace nd {
namespace {

#if NANODIST_WITH_CUDA
std::vector<double> host(const Tensor& t) { return t.to(Device::cpu()).to_double_vector(); }

// op(inputs, scalars) on fresh bf16 copies of `inputs` that require grad, with fresh FP8 scalars
// for two linears, recorded with or without its forward, then backpropagated from `grad`.
using Op = std::function<Variable(std::vector<Variable>& in, const Tensor& fc_s, const Tensor& proj_s)>;

struct Recorded {
  bool has_value = false;
  std::vector<std::vector<double>> grads;
  std::vector<double> fc_scalars, proj_scalars;
};

Recorded record(const Op& op, const std::vector<Tensor>& inputs, const Tensor& grad, bool without_forward) {
  std::vector<Variable> in;
  for (const Tensor& t : inputs) in.emplace_back(t.clone(), true);
  nn::Fp8LinearScaling scaling(Device::cuda(0), 2);
  const Tensor fc_s = scaling.add("fc", {}), proj_s = scaling.add("proj", {});
  Variable out;
  {
    WithoutForward scope(without_forward);
    out = op(in, fc_s, proj_s);
  }
  Recorded r;
  try {
    (void)out.data();
    r.has_value = true;
  } catch (const Error&) {
  }
  out.backward(grad);
  for (Variable& v : in) r.grads.push_back(host(v.grad()));
  r.fc_scalars = host(fc_s);
  r.proj_scalars = host(proj_s);
  return r;
}

void expect_same_without_a_value(const Op& op, const std::vector<Tensor>& inputs, const Tensor& grad) {
  const Recorded with = record(op, inputs, grad, false), without = record(op, inputs, grad, true);
  EXPECT_TRUE(with.has_value);
  EXPECT_FALSE(without.has_value) << "the output was computed";
  ASSERT_EQ(without.grads.size(), with.grads.size());
  for (size_t i = 0; i < with.grads.size(); ++i) EXPECT_EQ(without.grads[i], with.grads[i]) << "input " << i;
  EXPECT_EQ(without.fc_scalars, with.fc_scalars) << "the first linear's scale records";
  EXPECT_EQ(without.proj_scalars, with.proj_scalars) << "the second linear's scale records";
}

// An MLP's inputs, x (M / 16, 16, C), and the gradients of its output and of its hidden layer.
struct MlpInputs {
  Tensor x, fc_w, fc_b, proj_w, proj_b, grad, hidden_grad;
};

MlpInputs mlp_inputs(int64_t M, int64_t C, int64_t H) {
  Generator gen(test::test_seed());
  auto gpu = [&](const Shape& s, double scale) {
    return test::on_gpu(test::random_input(s, gen, DType::BF16, scale), DType::BF16);
  };
  return {gpu({M / 16, 16, C}, 1.0), gpu({H, C}, 0.1),          gpu({H}, 0.5),
          gpu({C, H}, 0.05),         gpu({C}, 0.1),             gpu({M / 16, 16, C}, 1e-3),
          gpu({M / 16, 16, H}, 1e-3)};
}
#endif

TEST(WithoutForwardCuda, Bf16LinearAndGeluMlp) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  const MlpInputs p = mlp_inputs(64, 64, 256);
  {
    SCOPED_TRACE("linear");
    expect_same_without_a_value([](auto& in, const Tensor&, const Tensor&) { return ops::linear(in[0], in[1], in[2]); },
                                {p.x, p.fc_w, p.fc_b}, p.hidden_grad);
  }
  {
    SCOPED_TRACE("gelu_mlp");
    expect_same_without_a_value(
        [](auto& in, const Tensor&, const Tensor&) { return ops::gelu_mlp(in[0], in[1], in[2], in[3], in[4]); },
        {p.x, p.fc_w, p.fc_b, p.proj_w, p.proj_b}, p.grad);
  }
#endif
}

TEST(WithoutForwardCuda, Fp8LinearAndFp8GeluMlpWriteWhatBackwardReadsAndTheSameScales) {
  ND_SKIP_WITHOUT_GPU();
#if NANODIST_WITH_CUDA
  if (!test::has_fp8_tensor_cores()) GTEST_SKIP() << "FP8 GEMMs need compute capability 8.9 or later";
  for (int64_t M : {64, 80}) {  // 80 tokens: cut tiles in the quantise-transposes
    SCOPED_TRACE(::testing::Message() << "M " << M);
    const MlpInputs p = mlp_inputs(M, 64, 256);
    {
      SCOPED_TRACE("fp8_linear");
      expect_same_without_a_value(
          [](auto& in, const Tensor&, const Tensor& proj_s) { return ops::fp8_linear(in[0], in[1], in[2], proj_s); },
          {p.x, p.fc_w, p.fc_b}, p.hidden_grad);
    }
    {
      SCOPED_TRACE("fp8_gelu_mlp");
      expect_same_without_a_value(
          [](auto& in, const Tensor& fc_s, const Tensor& proj_s) {
            return ops::fp8_gelu_mlp(in[0], in[1], in[2], fc_s, in[3], in[4], proj_s);
          },
          {p.x, p.fc_w, p.fc_b, p.proj_w, p.proj_b}, p.grad);
    }
  }
#endif
}

}  // namespace
}  // namespace nd
