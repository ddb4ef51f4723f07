// ops::gelu: forward against the tanh formula and against exact GELU (x Phi(x), which the tanh
// form approximates to ~1e-3), and float64 gradients on any shape.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

TEST(Gelu, ForwardMatchesTanhFormulaAndApproximatesExactGelu) {
  Tensor x = test::random_f64({3, 4, 5}, 1, 2.0);
  std::vector<double> xv = x.to_double_vector();
  for (DType dt : {DType::F32, DType::F64}) {
    std::vector<double> got = ops::gelu(Variable(x.to(dt))).data().to_double_vector();
    for (size_t i = 0; i < xv.size(); ++i) {
      double v = xv[i];
      double tanh_form = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      double exact = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
      EXPECT_NEAR(got[i], tanh_form, dt == DType::F32 ? 1e-6 * (1 + std::abs(v)) : 1e-14) << v;
      EXPECT_NEAR(got[i], exact, 2e-3) << v;
    }
  }
}

TEST(Gelu, FloatValuesAndGradientsHoldAcrossTheRangeIncludingTails) {
  // The f32 kernel has its own exp: check it against double from -12 to 12, with the tanh form
  // rewritten as 0.5 (1 + tanh u) = 1 / (1 + exp(-2u)) so that the far negative tail does not
  // cancel to 0 in the reference itself.
  std::vector<float> xs;
  for (int i = -1200; i <= 1200; ++i) xs.push_back(0.01f * static_cast<float>(i));
  const int64_t n = static_cast<int64_t>(xs.size());
  Variable x(Tensor::from_vector(xs, {n}), true);
  Variable y = ops::gelu(x);
  y.backward(Tensor::ones({n}));
  std::vector<double> got = y.data().to_double_vector(), grad = x.grad().to_double_vector();
  const double a = std::sqrt(2 / M_PI), k = 0.044715;
  for (int64_t i = 0; i < n; ++i) {
    double v = xs[i], two_u = 2 * a * (v + k * v * v * v), half_one_plus_tanh = 1 / (1 + std::exp(-two_u));
    double want = v * half_one_plus_tanh;
    double want_grad =
        half_one_plus_tanh + 2 * v * half_one_plus_tanh * (1 - half_one_plus_tanh) * a * (1 + 3 * k * v * v);
    // exp(-2u) is only as exact as 2u rounded to f32: a relative error of about |2u| ulp.
    double rel = 2e-6 + 3e-7 * std::abs(two_u);
    EXPECT_NEAR(got[i], want, rel * std::abs(want) + 1e-37) << v;
    EXPECT_NEAR(grad[i], want_grad, rel * std::abs(want_grad) + 2e-6) << v;
  }
}

TEST(Gelu, Gradcheck) {
  auto f = [](const std::vector<Variable>& v) { return ops::gelu(v[0]); };
  EXPECT_EQ(test::gradcheck(f, {test::random_f64({2, 3, 5}, 2, 2.0)}, {true}), 0);
  EXPECT_EQ(test::gradcheck(f, {test::random_f64({7}, 3, 0.5)}, {true}), 0);
}

TEST(Gelu, LargeShapeGradientsAlongRandomDirections) {
  auto f = [](const std::vector<Variable>& v) { return ops::gelu(v[0]); };
  EXPECT_LT(test::directional_error(f, {test::random_f64({8, 64, 160}, 4, 2.0)}, {true}), 1e-7);
}

TEST(Gelu, IntegerInputIsAnError) {
  test::expect_error_mentioning([] { ops::gelu(Variable(Tensor::zeros({2, 3}, DType::I32))); }, {"gelu", "i32"});
}

}  // namespace
}  // namespace nd
