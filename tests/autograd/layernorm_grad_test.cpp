// ops::layernorm: forward against the definition (mean, biased variance, eps), float64 gradients
// of x, w and b, a large multi-threaded case, and shape errors.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

using test::gradcheck;
using test::random_f64;

std::vector<double> naive_layernorm(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  std::vector<double> xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector();
  const int64_t C = w.numel(), N = x.numel() / C;
  std::vector<double> out(xv.size());
  for (int64_t n = 0; n < N; ++n) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += xv[n * C + c] / C;
    for (int64_t c = 0; c < C; ++c) var += (xv[n * C + c] - mean) * (xv[n * C + c] - mean) / C;
    for (int64_t c = 0; c < C; ++c) out[n * C + c] = (xv[n * C + c] - mean) / std::sqrt(var + eps) * wv[c] + bv[c];
  }
  return out;
}

TEST(Layernorm, ForwardMatchesDefinition) {
  // An offset mean checks that the variance does not cancel catastrophically.
  Tensor x = random_f64({2, 3, 5}, 1, 2.0), w = random_f64({5}, 2), b = random_f64({5}, 3);
  double* xp = x.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) xp[i] += 10.0;
  std::vector<double> want = naive_layernorm(x, w, b, 1e-5);
  for (DType dt : {DType::F32, DType::F64}) {
    Variable y = ops::layernorm(Variable(x.to(dt)), Variable(w.to(dt)), Variable(b.to(dt)));
    std::vector<double> got = y.data().to_double_vector();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], dt == DType::F32 ? 1e-4 : 1e-12) << i;
  }
}

TEST(Layernorm, EpsMattersForNearlyConstantRows) {
  Tensor x = Tensor::from_vector(std::vector<double>{1.0, 1.001, 0.999, 1.0}, {1, 4});
  Tensor w = Tensor::ones({4}, DType::F64), b = Tensor::zeros({4}, DType::F64);
  std::vector<double> got = ops::layernorm(Variable(x), Variable(w), Variable(b), 1e-3f).data().to_double_vector();
  std::vector<double> want = naive_layernorm(x, w, b, static_cast<double>(1e-3f));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12);
}

TEST(Layernorm, GradcheckAllInputs) {
  auto f = [](const std::vector<Variable>& v) { return ops::layernorm(v[0], v[1], v[2]); };
  EXPECT_EQ(gradcheck(f, {random_f64({2, 3, 5}, 4), random_f64({5}, 5), random_f64({5}, 6)}, {true, true, true}), 0);
  EXPECT_EQ(gradcheck(f, {random_f64({4, 6}, 7), random_f64({6}, 8), random_f64({6}, 9)}, {true, false, false}), 0);
  EXPECT_EQ(gradcheck(f, {random_f64({4, 6}, 10), random_f64({6}, 11), random_f64({6}, 12)}, {false, true, true}), 0);
}

TEST(Layernorm, LargeShapeGradientsAlongRandomDirections) {
  auto f = [](const std::vector<Variable>& v) { return ops::layernorm(v[0], v[1], v[2]); };
  double err = test::directional_error(f, {random_f64({4, 64, 130}, 13), random_f64({130}, 14), random_f64({130}, 15)},
                                       {true, true, true});
  EXPECT_LT(err, 1e-7);
}

TEST(Layernorm, BadInputsNameTheShapes) {
  Variable x(Tensor::zeros({2, 3, 5})), w(Tensor::zeros({5})), b(Tensor::zeros({5}));
  test::expect_error_mentioning([&] { ops::layernorm(x, Variable(Tensor::zeros({4})), b); }, {"[4]", "[2, 3, 5]"});
  test::expect_error_mentioning(
      [&] {
        ops::layernorm(x, w, Variable(Tensor::zeros({5, 1})));
      },
      {"[5, 1]", "[2, 3, 5]"});
  test::expect_error_mentioning([&] { ops::layernorm(x, Variable(Tensor::zeros({5}, DType::F64)), b); },
                                {"f64", "f32"});
}

}  // namespace
}  // namespace nd
