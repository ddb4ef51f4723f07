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
