// ops::gelu_mlp: float64 central-difference gradients (with and without either bias, with frozen
// inputs), a large shape along random directions, bit-for-bit equality in f32 with the unfused
// ops (linear, gelu, linear) it replaces on the CPU, and shape errors naming the shapes.
#include <gtest/gtest.h>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

using test::gradcheck;
using test::random_f64;

// Inputs x (2, 3, 5), fc_w (8, 5), proj_w (4, 8), fc_b (8), proj_b (4) from seed.
std::vector<Tensor> mlp_inputs(uint64_t seed, const Shape& x_shape = {2, 3, 5}, int64_t H = 8, int64_t N = 4) {
  int64_t K = x_shape.back();
  return {random_f64(x_shape, seed), random_f64({H, K}, seed + 1, 0.5), random_f64({N, H}, seed + 2, 0.5),
          random_f64({H}, seed + 3), random_f64({N}, seed + 4)};
}

test::VariableFn mlp(bool fc_bias, bool proj_bias) {
  return [fc_bias, proj_bias](const std::vector<Variable>& v) {
    return ops::gelu_mlp(v[0], v[1], fc_bias ? v[3] : Variable(), v[2], proj_bias ? v[4] : Variable());
  };
}

test::VariableFn unfused_mlp(bool fc_bias, bool proj_bias) {
  return [fc_bias, proj_bias](const std::vector<Variable>& v) {
    return ops::linear(ops::gelu(ops::linear(v[0], v[1], fc_bias ? v[3] : Variable())), v[2],
                       proj_bias ? v[4] : Variable());
  };
}

TEST(GeluMlp, GradcheckWithAndWithoutBiases) {
  for (bool fc_bias : {true, false})
    for (bool proj_bias : {true, false})
      EXPECT_EQ(gradcheck(mlp(fc_bias, proj_bias), mlp_inputs(10), {true, true, true, fc_bias, proj_bias}), 0)
          << "fc bias " << fc_bias << ", proj bias " << proj_bias;
}

TEST(GeluMlp, GradcheckWithFrozenInputs) {
  EXPECT_EQ(gradcheck(mlp(true, true), mlp_inputs(20), {false, true, false, true, false}), 0);
  EXPECT_EQ(gradcheck(mlp(true, true), mlp_inputs(30), {true, false, true, false, true}), 0);
  // Only c_proj learns: no GELU gradient is needed at all.
  EXPECT_EQ(gradcheck(mlp(true, true), mlp_inputs(40), {false, false, true, false, true}), 0);
}

TEST(GeluMlp, LargeShapeGradientsAlongRandomDirections) {
  double err =
      test::directional_error(mlp(true, true), mlp_inputs(50, {4, 32, 48}, 192, 48), std::vector<bool>(5, true));
  EXPECT_LT(err, 1e-7);
}

TEST(GeluMlp, EqualsTheUnfusedOpsBitForBitInF32) {
  for (bool fc_bias : {true, false})
    for (bool proj_bias : {true, false}) {
      std::vector<Tensor> inputs = mlp_inputs(60, {3, 17, 24}, 96, 24);
      Tensor r = random_f64({3, 17, 24}, 70).to(DType::F32);
      std::vector<std::vector<double>> results[2];
      for (int fused : {0, 1}) {
        std::vector<Variable> v;
        for (const Tensor& t : inputs) v.emplace_back(t.to(DType::F32), true);
        Variable y = fused ? mlp(fc_bias, proj_bias)(v) : unfused_mlp(fc_bias, proj_bias)(v);
        y.backward(r);
        results[fused].push_back(y.data().to_double_vector());
        for (int i = 0; i < 5; ++i)
          if (v[i].has_grad() || i < 3) results[fused].push_back(v[i].grad().to_double_vector());
      }
      ASSERT_EQ(results[0].size(), results[1].size());
      for (size_t i = 0; i < results[0].size(); ++i)
        EXPECT_EQ(results[0][i], results[1][i]) << "result " << i << ", fc bias " << fc_bias << ", proj bias "
                                                << proj_bias;
    }
}

TEST(GeluMlp, BadInputsNameTheShapes) {
  Variable x(Tensor::zeros({2, 3, 5})), fc_w(Tensor::zeros({8, 5})), proj_w(Tensor::zeros({4, 8}));
  Variable fc_w_bad(Tensor::zeros({8, 6})), proj_w_bad(Tensor::zeros({4, 7}));
  test::expect_error_mentioning([&] { ops::gelu_mlp(x, fc_w_bad, Variable(), proj_w, Variable()); },
                                {"gelu_mlp (fc)", "[2, 3, 5]", "[8, 6]"});
  test::expect_error_mentioning([&] { ops::gelu_mlp(x, fc_w, Variable(), proj_w_bad, Variable()); },
                                {"gelu_mlp (proj)", "[4, 7]"});
  test::expect_error_mentioning(
      [&] { ops::gelu_mlp(x, fc_w, Variable(Tensor::zeros({7})), proj_w, Variable()); }, {"[7]", "[8, 5]"});
  test::expect_error_mentioning(
      [&] { ops::gelu_mlp(x, fc_w, Variable(), proj_w, Variable(Tensor::zeros({5}))); }, {"[5]", "[4, 8]"});
}

}  // namespace
}  // namespace nd
