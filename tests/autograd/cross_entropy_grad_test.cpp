// ops::cross_entropy: forward against a direct computation, float64 central differences with
// ignored targets and padding columns, the all-ignored case, large logits, and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

// mean over rows with target != -1 of log(sum_{j < V} exp(x_j)) - x_target (no max shift: small inputs).
double direct_loss(const std::vector<double>& logits, const std::vector<int32_t>& targets, int64_t Vp, int64_t V) {
  double total = 0;
  int count = 0;
  for (size_t row = 0; row < targets.size(); ++row) {
    if (targets[row] == -1) continue;
    double sum = 0;
    for (int64_t j = 0; j < V; ++j) sum += std::exp(logits[row * Vp + j]);
    total += std::log(sum) - logits[row * Vp + targets[row]];
    ++count;
  }
  return count ? total / count : 0.0;
}

// (2, 3) targets with two ignored positions, for logits (2, 3, Vp) with V = 5.
Tensor mixed_targets() { return Tensor::from_vector(std::vector<int32_t>{0, -1, 4, 2, 3, -1}, {2, 3}); }

TEST(CrossEntropy, ForwardMatchesDirectComputation) {
  const int64_t Vp = 7, V = 5;
  Tensor targets = mixed_targets();
  std::vector<int32_t> t = {0, -1, 4, 2, 3, -1};
  for (int64_t valid : {V, int64_t{0}}) {
    const int64_t v_used = valid == 0 ? Vp : valid;
    Tensor logits = test::random_f64({2, 3, Vp}, 5);
    const double expected = direct_loss(logits.to_double_vector(), t, Vp, v_used);
    Variable loss64 = ops::cross_entropy(Variable(logits), targets, valid);
    EXPECT_EQ(loss64.shape(), Shape{});
    EXPECT_NEAR(loss64.data().item(), expected, 1e-12);
    Variable loss32 = ops::cross_entropy(Variable(logits.to(DType::F32)), targets, valid);
    EXPECT_EQ(loss32.dtype(), DType::F32);
    EXPECT_NEAR(loss32.data().item(), expected, 1e-5);
  }
}

TEST(CrossEntropy, AcceptsFlatRows) {
  Tensor logits = test::random_f64({4, 6}, 8);
  std::vector<int32_t> t = {5, 0, -1, 3};
  EXPECT_NEAR(ops::cross_entropy(Variable(logits), Tensor::from_vector(t, {4})).data().item(),
              direct_loss(logits.to_double_vector(), t, 6, 6), 1e-12);
}

TEST(CrossEntropy, GradientMatchesCentralDifferences) {
  Tensor targets = mixed_targets();
  for (int64_t valid : {int64_t{5}, int64_t{0}}) {
    SCOPED_TRACE(testing::Message() << "valid_vocab " << valid);
    auto f = [&](const std::vector<Variable>& in) { return ops::cross_entropy(in[0], targets, valid); };
    EXPECT_EQ(test::gradcheck(f, {test::random_f64({2, 3, 7}, 9, 0.7)}, {true}), 0);
  }
  std::vector<int32_t> all_used = {1, 0, 2, 2};
  auto g = [&](const std::vector<Variable>& in) {
    return ops::cross_entropy(in[0], Tensor::from_vector(all_used, {1, 4}), 3);
  };
  EXPECT_EQ(test::gradcheck(g, {test::random_f64({1, 4, 3}, 10, 0.7)}, {true}), 0);
}

TEST(CrossEntropy, PaddingAndIgnoredRowsGetZeroGradient) {
  const int64_t Vp = 7, V = 5;
  Variable logits(test::random_f64({2, 3, Vp}, 12), true);
  std::vector<int32_t> t = {0, -1, 4, 2, 3, -1};
  ops::cross_entropy(logits, mixed_targets(), V).backward();
  std::vector<double> g = logits.grad().to_double_vector();
  for (int64_t row = 0; row < 6; ++row) {
    double row_sum = 0;
    for (int64_t j = 0; j < Vp; ++j) {
      const double gj = g[row * Vp + j];
      if (t[row] == -1 || j >= V) {
        EXPECT_EQ(gj, 0.0) << "row " << row << " column " << j;
      }
      row_sum += gj;
    }
    EXPECT_NEAR(row_sum, 0.0, 1e-15) << "softmax minus one-hot sums to zero, row " << row;
  }
}

TEST(CrossEntropy, AllIgnoredGivesZeroLossAndGradient) {
  Variable logits(test::random_f64({1, 3, 4}, 13), true);
  Variable loss = ops::cross_entropy(logits, Tensor::from_vector(std::vector<int32_t>{-1, -1, -1}, {1, 3}));
  EXPECT_EQ(loss.data().item(), 0.0);
  loss.backward();
  for (double g : logits.grad().to_double_vector()) EXPECT_EQ(g, 0.0);
}

TEST(CrossEntropy, LargeLogitsStayFinite) {
  // exp(1000) overflows; the max subtraction keeps the loss exact: lse = 1000 + log(1 + e^-1 + e^-2).
  std::vector<float> x = {1000.f, 999.f, 998.f};
  Variable logits(Tensor::from_vector(x, {1, 1, 3}), true);
  Variable loss = ops::cross_entropy(logits, Tensor::from_vector(std::vector<int32_t>{2}, {1, 1}));
  EXPECT_NEAR(loss.data().item(), 2.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-4);
  loss.backward();
  for (double g : logits.grad().to_double_vector()) EXPECT_TRUE(std::isfinite(g));
}

void expect_error_naming(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no nd::Error; expected one naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CrossEntropy, BadInputsAreErrors) {
  Variable logits(Tensor::zeros({2, 3, 5}, DType::F64));
  auto targets = [](std::vector<int32_t> v) { return Tensor::from_vector(v, {2, 3}); };
  expect_error_naming([&] { ops::cross_entropy(logits, Tensor::zeros({2, 3}, DType::F32)); }, "f32");
  expect_error_naming([&] { ops::cross_entropy(logits, Tensor::zeros({3, 2}, DType::I32)); }, "[3, 2]");
  expect_error_naming([&] { ops::cross_entropy(logits, targets({0, 1, 2, 5, 0, 0})); }, "target 5");
  expect_error_naming([&] { ops::cross_entropy(logits, targets({0, 1, -2, 0, 0, 0})); }, "target -2");
  expect_error_naming([&] { ops::cross_entropy(logits, targets({0, 1, 2, 4, 0, 0}), 4); }, "target 4");
  expect_error_naming([&] { ops::cross_entropy(logits, targets({0, 0, 0, 0, 0, 0}), 6); }, "[2, 3, 5]");
  expect_error_naming([&] { ops::cross_entropy(logits, Tensor()); }, "undefined");
  expect_error_naming(
      [&] { ops::cross_entropy(Variable(Tensor::zeros({2, 3, 5}, DType::I32)), targets({0, 0, 0, 0, 0, 0})); },
      "i32");
}

}  // namespace
}  // namespace nd
