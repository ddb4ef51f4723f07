// The fusion switches (NANODIST_FUSIONS) and the residual_grad fusion of ops::add (the
// cross_entropy_grad fusion has its own test, cross_entropy_fusion_test.cpp): float64
// gradients through residual adds whose first input is an op output, with the fusion on and off,
// equal to each other, including an output added to itself and one read by two adds.
#include <gtest/gtest.h>

#include "autograd/fusions.h"
#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

Fusions only_residual_grad(bool on) {
  Fusions f;
  f.residual_grad = on;
  return f;
}

TEST(Fusions, ParsesAllNoneAndLists) {
  Fusions all = parse_fusions(""), also_all = parse_fusions("all"), none = parse_fusions("none");
  EXPECT_TRUE(all.gelu_mlp && all.residual_grad);
  EXPECT_TRUE(also_all.gelu_mlp && also_all.residual_grad);
  EXPECT_FALSE(none.gelu_mlp || none.residual_grad);
  EXPECT_TRUE(all.cross_entropy_grad && also_all.cross_entropy_grad);
  EXPECT_FALSE(none.cross_entropy_grad);
  Fusions mlp = parse_fusions("gelu_mlp");
  EXPECT_TRUE(mlp.gelu_mlp);
  EXPECT_FALSE(mlp.residual_grad);
  EXPECT_FALSE(mlp.cross_entropy_grad);
  Fusions both = parse_fusions("residual_grad,gelu_mlp");
  EXPECT_TRUE(both.gelu_mlp && both.residual_grad);
  Fusions loss = parse_fusions("cross_entropy_grad");
  EXPECT_TRUE(loss.cross_entropy_grad);
  EXPECT_FALSE(loss.gelu_mlp || loss.residual_grad);
  EXPECT_TRUE(all.fp8_gelu_mlp && also_all.fp8_gelu_mlp);
  EXPECT_FALSE(none.fp8_gelu_mlp || mlp.fp8_gelu_mlp);
  Fusions fp8_mlp = parse_fusions("gelu_mlp,fp8_gelu_mlp");
  EXPECT_TRUE(fp8_mlp.gelu_mlp && fp8_mlp.fp8_gelu_mlp);
  EXPECT_FALSE(fp8_mlp.residual_grad || fp8_mlp.cross_entropy_grad);
  EXPECT_TRUE(all.recompute_tail && also_all.recompute_tail);
  EXPECT_FALSE(none.recompute_tail || mlp.recompute_tail || fp8_mlp.recompute_tail);
  Fusions tail = parse_fusions("recompute_tail");
  EXPECT_TRUE(tail.recompute_tail);
  EXPECT_FALSE(tail.gelu_mlp || tail.fp8_gelu_mlp || tail.residual_grad || tail.cross_entropy_grad);
  test::expect_error_mentioning([] { parse_fusions("gelu_mlp,fast"); }, {"NANODIST_FUSIONS", "'fast'", "gelu_mlp"});
  test::expect_error_mentioning([] { parse_fusions("fast"); },
                                {"cross_entropy_grad", "fp8_gelu_mlp", "recompute_tail"});
}

TEST(Fusions, ScopedFusionsRestoresThePreviousSwitches) {
  const Fusions before = fusions();
  {
    ScopedFusions off(parse_fusions("none"));
    EXPECT_FALSE(fusions().gelu_mlp || fusions().residual_grad || fusions().cross_entropy_grad);
  }
  EXPECT_EQ(fusions().gelu_mlp, before.gelu_mlp);
  EXPECT_EQ(fusions().residual_grad, before.residual_grad);
  EXPECT_EQ(fusions().cross_entropy_grad, before.cross_entropy_grad);
}

// g = gelu(x0) is an op output: the outer add hands its gradient buffer to (g + x1), the inner add
// then adds into g's gradient; twice(g) adds g to itself.
Variable residual_chain(const std::vector<Variable>& v) {
  Variable g = ops::gelu(v[0]);
  return ops::add(ops::add(ops::add(g, v[1]), g), ops::add(g, g));
}

TEST(Fusions, ResidualGradGradcheckOnAndOff) {
  for (bool on : {true, false}) {
    ScopedFusions scope(only_residual_grad(on));
    EXPECT_EQ(test::gradcheck(residual_chain, {test::random_f64({3, 5}, 1), test::random_f64({3, 5}, 2)},
                              {true, true}),
              0)
        << "residual_grad " << on;
    EXPECT_EQ(test::gradcheck(residual_chain, {test::random_f64({3, 5}, 3), test::random_f64({3, 5}, 4)},
                              {true, false}),
              0)
        << "residual_grad " << on;
  }
}

TEST(Fusions, ResidualGradGivesTheSameGradientsBitForBit) {
  Tensor x0 = test::random_f64({4, 33}, 5).to(DType::F32), x1 = test::random_f64({4, 33}, 6).to(DType::F32);
  Tensor r = test::random_f64({4, 33}, 7).to(DType::F32);
  std::vector<double> grads[2][2];
  for (bool on : {true, false}) {
    ScopedFusions scope(only_residual_grad(on));
    std::vector<Variable> v = {Variable(x0.clone(), true), Variable(x1.clone(), true)};
    residual_chain(v).backward(r);
    grads[on][0] = v[0].grad().to_double_vector();
    grads[on][1] = v[1].grad().to_double_vector();
  }
  EXPECT_EQ(grads[0][0], grads[1][0]);
  EXPECT_EQ(grads[0][1], grads[1][1]);
}

}  // namespace
}  // namespace nd
