// ops::dropout: the mask is exactly the Philox rule of the spec, its kept fraction is near 1 - p,
// kept values are scaled by 1 / (1 - p), a generator state reproduces its mask, evaluation and
// p = 0 are the identity without a draw, and the float64 gradient applies the same mask.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"
#include "tensor/philox.h"

namespace nd {
namespace {

TEST(Dropout, MaskFollowsPhiloxCountersAndScalesKeptValues) {
  const float p = 0.3f;
  const int64_t n = 4 * 64 * 80;
  Generator init(1);
  Tensor x = Tensor::uniform({4, 64, 80}, init, 1.0, 2.0, DType::F32);  // never 0
  Generator gen(77, 5);
  gen.set_offset(1000);
  std::vector<double> out = ops::dropout(Variable(x), p, gen, true).data().to_double_vector();
  EXPECT_EQ(gen.offset(), 1000u + n);  // one counter per element
  std::vector<double> xv = x.to_double_vector();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool keep = philox_uniform(77, 1000 + i, 5) >= p;
    if (keep) {
      ++kept;
      ASSERT_NEAR(out[i], xv[i] / (1.0 - p), 1e-5) << i;
    } else {
      ASSERT_EQ(out[i], 0.0) << i;
    }
  }
  // Binomial(n, 0.7): the standard deviation of the kept fraction is ~0.0026.
  EXPECT_NEAR(static_cast<double>(kept) / n, 1.0 - p, 0.015);
}

TEST(Dropout, SameGeneratorStateReproducesTheMaskAndTheNextCallDiffers) {
  Tensor x = Tensor::ones({3, 50});
  Generator a(5), b(5);
  std::vector<double> first = ops::dropout(Variable(x), 0.5f, a, true).data().to_double_vector();
  EXPECT_EQ(ops::dropout(Variable(x), 0.5f, b, true).data().to_double_vector(), first);
  EXPECT_NE(ops::dropout(Variable(x), 0.5f, a, true).data().to_double_vector(), first);
}

TEST(Dropout, IdentityWithoutDrawWhenEvaluatingOrPIsZero) {
  Variable x(test::random_f64({2, 3}, 1), true);
  Generator gen(3);
  Variable eval = ops::dropout(x, 0.5f, gen, false);
  Variable zero = ops::dropout(x, 0.0f, gen, true);
  EXPECT_EQ(gen.offset(), 0u);
  EXPECT_EQ(eval.data().to_double_vector(), x.data().to_double_vector());
  EXPECT_EQ(zero.data().to_double_vector(), x.data().to_double_vector());
}

TEST(Dropout, PEqualOneDropsEverything) {
  Generator gen(3);
  std::vector<double> out = ops::dropout(Variable(Tensor::ones({100})), 1.0f, gen, true).data().to_double_vector();
  for (double v : out) EXPECT_EQ(v, 0.0);
}

TEST(Dropout, GradcheckWithTheSameMaskEveryEvaluation) {
  // A generator re-created per call makes every forward draw the same mask.
  auto f = [](const std::vector<Variable>& v) {
    Generator gen(11, 2);
    return ops::dropout(v[0], 0.4f, gen, true);
  };
  EXPECT_EQ(test::gradcheck(f, {test::random_f64({2, 3, 5}, 2)}, {true}), 0);
  EXPECT_LT(test::directional_error(f, {test::random_f64({8, 64, 64}, 3)}, {true}), 1e-7);
}

TEST(Dropout, BackwardUsesTheForwardMask) {
  Variable x(Tensor::ones({400}, DType::F64), true);
  Generator gen(9);
  Variable y = ops::dropout(x, 0.25f, gen, true);
  std::vector<double> out = y.data().to_double_vector();
  y.backward(Tensor::ones({400}, DType::F64));
  EXPECT_EQ(x.grad().to_double_vector(), out);  // d out_i / d x_i = out_i / x_i, and x = 1
}

TEST(Dropout, ProbabilityOutsideTheUnitIntervalIsAnError) {
  Generator gen(1);
  test::expect_error_mentioning(
      [&] {
        ops::dropout(Variable(Tensor::ones({2, 3})), 1.5f, gen, true);
      },
      {"1.5", "[2, 3]"});
  test::expect_error_mentioning([&] { ops::dropout(Variable(Tensor::ones({2, 3})), -0.1f, gen, true); }, {"-0.1"});
}

}  // namespace
}  // namespace nd
