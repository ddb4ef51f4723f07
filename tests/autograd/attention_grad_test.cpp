// ops::attention: forward against a naive per-head reference, causality, float64 central
// differences for the backward, the += contract of the backward kernel, and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/naive_attention.h"
#include "common/gradcheck.h"
#include "kernels/cpu/attention.h"

namespace nd {
namespace {

struct Dims {
  int64_t B, T, C, NH;
};

const std::vector<Dims> kShapes = {{2, 5, 8, 2}, {1, 1, 4, 1}, {1, 4, 6, 1}, {2, 3, 12, 3}, {3, 1, 6, 2}};

TEST(Attention, ForwardMatchesNaiveReference) {
  uint64_t seed = 1;
  for (const Dims& d : kShapes) {
    Tensor qkv = test::random_f64({d.B, d.T, 3 * d.C}, seed++);
    std::vector<double> expected = test::naive_attention(qkv.to_double_vector(), d.B, d.T, d.C, d.NH);

    Variable out64 = ops::attention(Variable(qkv), static_cast<int>(d.NH));
    ASSERT_EQ(out64.shape(), (Shape{d.B, d.T, d.C}));
    std::vector<double> got64 = out64.data().to_double_vector();
    Variable out32 = ops::attention(Variable(qkv.to(DType::F32)), static_cast<int>(d.NH));
    ASSERT_EQ(out32.dtype(), DType::F32);
    std::vector<double> got32 = out32.data().to_double_vector();
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(got64[i], expected[i], 1e-12 + 1e-12 * std::abs(expected[i])) << "f64 element " << i;
      EXPECT_NEAR(got32[i], expected[i], 1e-5 + 1e-5 * std::abs(expected[i])) << "f32 element " << i;
    }
  }
}

TEST(Attention, LargeScoresStayFinite) {
  // Scores in the thousands would overflow exp() without the max subtraction.
  Tensor qkv = test::random_f64({1, 6, 3 * 8}, 7, 30.0).to(DType::F32);
  std::vector<double> out = ops::attention(Variable(qkv), 2).data().to_double_vector();
  for (double x : out) EXPECT_TRUE(std::isfinite(x));
}

TEST(Attention, IsCausal) {
  const int64_t B = 2, T = 6, C = 8;
  Tensor qkv = test::random_f64({B, T, 3 * C}, 11);
  std::vector<double> before = ops::attention(Variable(qkv), 2).data().to_double_vector();
  double* p = qkv.data<double>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < 3 * C; ++i) p[(b * T + T - 1) * 3 * C + i] += 1.0;  // change the last step only
  std::vector<double> after = ops::attention(Variable(qkv), 2).data().to_double_vector();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T - 1; ++t)
      for (int64_t i = 0; i < C; ++i) {
        const int64_t j = (b * T + t) * C + i;
        EXPECT_EQ(before[j], after[j]) << "b " << b << " t " << t << " saw the future";
      }
}

TEST(Attention, GradientMatchesCentralDifferences) {
  uint64_t seed = 100;
  for (const Dims& d : kShapes) {
    SCOPED_TRACE(testing::Message() << "B " << d.B << " T " << d.T << " C " << d.C << " NH " << d.NH);
    auto f = [&](const std::vector<Variable>& in) { return ops::attention(in[0], static_cast<int>(d.NH)); };
    EXPECT_EQ(test::gradcheck(f, {test::random_f64({d.B, d.T, 3 * d.C}, seed++)}, {true}), 0);
  }
}

TEST(Attention, BackwardKernelAddsIntoGradient) {
  const int64_t B = 2, T = 4, C = 6, NH = 3;
  std::vector<double> qkv = test::random_f64({B, T, 3 * C}, 21).to_double_vector();
  std::vector<double> dout = test::random_f64({B, T, C}, 22).to_double_vector();
  std::vector<double> out(B * T * C), lse(B * NH * T);
  cpu::attention_forward(qkv.data(), out.data(), lse.data(), B, T, C, NH);
  std::vector<double> once(B * T * 3 * C, 0.0), twice(B * T * 3 * C, 0.0);
  auto backward = [&](std::vector<double>& dqkv, bool accumulate) {
    cpu::attention_backward(dout.data(), qkv.data(), out.data(), lse.data(), GradDest<double>{dqkv.data(), accumulate},
                            B, T, C, NH);
  };
  backward(once, true);
  backward(twice, true);
  backward(twice, true);
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-12 * (1 + std::abs(once[i])));
  // A first contribution overwrites whatever the buffer held.
  std::vector<double> fresh(B * T * 3 * C, std::nan(""));
  backward(fresh, false);
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(fresh[i], once[i], 1e-12 * (1 + std::abs(once[i])));
}

TEST(Attention, FloatAndDoubleKernelsAgree) {
  const int64_t B = 2, T = 7, C = 16, NH = 4;
  Tensor qkv = test::random_f64({B, T, 3 * C}, 31);
  Tensor dout = test::random_f64({B, T, C}, 32);
  std::vector<double> grads[2];
  int k = 0;
  for (DType dt : {DType::F64, DType::F32}) {
    Variable x(qkv.to(dt), true);
    ops::attention(x, static_cast<int>(NH)).backward(dout.to(dt));
    grads[k++] = x.grad().to_double_vector();
  }
  for (size_t i = 0; i < grads[0].size(); ++i)
    EXPECT_NEAR(grads[1][i], grads[0][i], 1e-5 + 1e-5 * std::abs(grads[0][i])) << "element " << i;
}

TEST(Attention, NoGraphUnderNoGrad) {
  Variable x(test::random_f64({1, 3, 12}, 41), true);
  NoGradGuard no_grad;
  EXPECT_FALSE(ops::attention(x, 2).requires_grad());
}

void expect_error_naming(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no nd::Error; expected one naming " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Attention, BadInputsNameTheShapes) {
  expect_error_naming([] { ops::attention(Variable(Tensor::zeros({4, 12}, DType::F64)), 2); }, "[4, 12]");
  expect_error_naming([] { ops::attention(Variable(Tensor::zeros({1, 2, 10}, DType::F64)), 2); },
                      "[1, 2, 10]");
  expect_error_naming([] { ops::attention(Variable(Tensor::zeros({1, 2, 12}, DType::F64)), 3); },
                      "[1, 2, 12]");
  expect_error_naming([] { ops::attention(Variable(Tensor::zeros({1, 2, 12}, DType::F64)), 0); }, "n_head = 0");
  expect_error_naming([] { ops::attention(Variable(Tensor::zeros({1, 2, 12}, DType::I32)), 2); }, "i32");
}

}  // namespace
}  // namespace nd
