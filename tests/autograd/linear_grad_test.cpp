// ops::linear: forward against a direct loop, float64 central-difference gradients (with and
// without bias, with some inputs frozen), a large multi-threaded case, and shape errors.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "autograd/op_test_util.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

using test::gradcheck;
using test::random_f64;

// out[m, n] = sum_k x[m, k] w[n, k] + b[n], straight from the definition.
std::vector<double> naive_linear(const Tensor& x, const Tensor& w, const Tensor* b) {
  std::vector<double> xv = x.to_double_vector(), wv = w.to_double_vector();
  std::vector<double> bv = b ? b->to_double_vector() : std::vector<double>();
  int64_t N = w.size(0), K = w.size(1), M = x.numel() / K;
  std::vector<double> out(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = b ? bv[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += xv[m * K + k] * wv[n * K + k];
      out[m * N + n] = s;
    }
  return out;
}

TEST(Linear, ForwardMatchesDirectLoopInBothFloatTypes) {
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor x = random_f64({2, 3, 5}, 1).to(dt), w = random_f64({4, 5}, 2).to(dt), b = random_f64({4}, 3).to(dt);
    for (bool with_bias : {true, false}) {
      Variable y = ops::linear(Variable(x), Variable(w), with_bias ? Variable(b) : Variable());
      EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
      std::vector<double> got = y.data().to_double_vector(), want = naive_linear(x, w, with_bias ? &b : nullptr);
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
    }
  }
}

TEST(Linear, GradcheckWithBias) {
  auto f = [](const std::vector<Variable>& v) { return ops::linear(v[0], v[1], v[2]); };
  EXPECT_EQ(gradcheck(f, {random_f64({2, 3, 5}, 4), random_f64({4, 5}, 5), random_f64({4}, 6)}, {true, true, true}), 0);
}

TEST(Linear, GradcheckWithoutBiasAndWithFrozenInputs) {
  auto no_bias = [](const std::vector<Variable>& v) { return ops::linear(v[0], v[1], Variable()); };
  EXPECT_EQ(gradcheck(no_bias, {random_f64({3, 7}, 7), random_f64({2, 7}, 8)}, {true, true}), 0);
  auto with_bias = [](const std::vector<Variable>& v) { return ops::linear(v[0], v[1], v[2]); };
  EXPECT_EQ(
      gradcheck(with_bias, {random_f64({3, 7}, 9), random_f64({2, 7}, 10), random_f64({2}, 11)}, {false, true, false}),
      0);
  EXPECT_EQ(
      gradcheck(with_bias, {random_f64({3, 7}, 12), random_f64({2, 7}, 13), random_f64({2}, 14)}, {true, false, true}),
      0);
}

TEST(Linear, LargeShapeGradientsAlongRandomDirections) {
  auto f = [](const std::vector<Variable>& v) { return ops::linear(v[0], v[1], v[2]); };
  double err = test::directional_error(f, {random_f64({4, 64, 96}, 15), random_f64({80, 96}, 16), random_f64({80}, 17)},
                                       {true, true, true});
  EXPECT_LT(err, 1e-7);
}

TEST(Linear, FloatBackwardMatchesDoubleOnALargeShape) {
  // The f32 GEMMs (blocked, threaded) against the f64 path as reference.
  Tensor x = random_f64({300, 70}, 18), w = random_f64({50, 70}, 19), b = random_f64({50}, 20);
  Tensor g = random_f64({300, 50}, 21);
  std::vector<std::vector<double>> grads[2];
  for (DType dt : {DType::F32, DType::F64}) {
    Variable vx(x.to(dt), true), vw(w.to(dt), true), vb(b.to(dt), true);
    ops::linear(vx, vw, vb).backward(g.to(dt));
    grads[dt == DType::F64].assign(
        {vx.grad().to_double_vector(), vw.grad().to_double_vector(), vb.grad().to_double_vector()});
  }
  for (int t = 0; t < 3; ++t)
    for (size_t i = 0; i < grads[1][t].size(); ++i)
      ASSERT_NEAR(grads[0][t][i], grads[1][t][i], 1e-3 * (1 + std::abs(grads[1][t][i]))) << t << " " << i;
}

TEST(Linear, BadInputsNameTheShapes) {
  Variable x(Tensor::zeros({2, 3, 5})), w(Tensor::zeros({4, 6})), b(Tensor::zeros({4}));
  test::expect_error_mentioning([&] { ops::linear(x, w, b); }, {"[2, 3, 5]", "[4, 6]"});
  Variable w_ok(Tensor::zeros({4, 5}));
  test::expect_error_mentioning([&] { ops::linear(x, w_ok, Variable(Tensor::zeros({3}))); }, {"[3]", "[4, 5]"});
  test::expect_error_mentioning([&] { ops::linear(x, Variable(Tensor::zeros({20})), b); }, {"[20]"});
  test::expect_error_mentioning(
      [&] {
        ops::linear(x, Variable(Tensor::zeros({4, 5}, DType::F64)), b);
      },
      {"f64", "f32"});
  test::expect_error_mentioning(
      [&] {
        ops::linear(Variable(Tensor::zeros({2, 5}, DType::I32)), Variable(Tensor::zeros({4, 5}, DType::I32)),
                    Variable());
      },
      {"i32"});
}

}  // namespace
}  // namespace nd
