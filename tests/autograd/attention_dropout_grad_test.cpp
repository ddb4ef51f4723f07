// ops::attention with dropout on the probabilities: the forward against a naive reference whose
// mask the test draws itself from philox_uniform, the dropped fraction and the kept values read off
// one-hot values, no draw when inactive, and float64 central differences through the mask.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "autograd/naive_attention.h"
#include "common/gradcheck.h"
#include "tensor/philox.h"

namespace nd {
namespace {

struct Draw {
  float p;
  uint64_t seed, first, stream;
  // The rule of the spec, written out: element (b, h, t, s) uses counter first + ((b NH + h) T + t) T + s.
  bool kept(int64_t b, int64_t h, int64_t t, int64_t s, int64_t NH, int64_t T) const {
    return philox_uniform(seed, first + ((b * NH + h) * T + t) * T + s, stream) >= p;
  }
};

TEST(AttentionDropout, ForwardMatchesNaiveReferenceWithTheSpecMask) {
  const int64_t B = 2, T = 9, C = 12, NH = 3;
  Tensor qkv = test::random_f64({B, T, 3 * C}, 5);
  Generator gen(41, 6);
  gen.set_offset(1000);
  const Draw draw{0.3f, 41, 1000, 6};
  std::vector<double> expected = test::naive_attention(qkv.to_double_vector(), B, T, C, NH, [&](int64_t b, int64_t h, int64_t t, int64_t s) {
        return draw.kept(b, h, t, s, NH, T) ? 1.0 / (1.0 - static_cast<double>(draw.p)) : 0.0;
      });
  std::vector<double> got = ops::attention(Variable(qkv), NH, 0.3f, &gen, true).data().to_double_vector();
  // One counter per probability, masked ones included.
  EXPECT_EQ(gen.offset(), static_cast<uint64_t>(1000 + B * NH * T * T));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-12 + 1e-12 * std::abs(expected[i])) << "element " << i;
  // f32 draws the same mask.
  Generator gen32(41, 6);
  gen32.set_offset(1000);
  std::vector<double> got32 =
      ops::attention(Variable(qkv.to(DType::F32)), NH, 0.3f, &gen32, true).data().to_double_vector();
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(got32[i], expected[i], 1e-5 + 1e-5 * std::abs(expected[i])) << "f32 element " << i;
}

TEST(AttentionDropout, DropsAboutPOfTheProbabilitiesAndScalesTheRest) {
  // q = k = 0 makes P[t, s] = 1 / (t + 1); v_s = e_s (hs = T) makes out[t, dim s] = P[t, s] z[t, s].
  const int64_t B = 3, T = 32, NH = 2, C = NH * T;
  const float p = 0.2f;
  Tensor qkv = Tensor::zeros({B, T, 3 * C}, DType::F64);
  double* x = qkv.data<double>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t s = 0; s < T; ++s) x[(b * T + s) * 3 * C + 2 * C + h * T + s] = 1.0;
  Generator gen(8, 1);
  std::vector<double> out = ops::attention(Variable(qkv), NH, p, &gen, true).data().to_double_vector();
  const Draw draw{p, 8, 0, 1};
  int64_t dropped = 0, total = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t s = 0; s <= t; ++s) {
          double value = out[(b * T + t) * C + h * T + s];
          ++total;
          if (draw.kept(b, h, t, s, NH, T)) {
            ASSERT_NEAR(value, 1.0 / ((t + 1) * (1.0 - p)), 1e-12) << b << " " << h << " " << t << " " << s;
          } else {
            ASSERT_EQ(value, 0.0) << b << " " << h << " " << t << " " << s;
            ++dropped;
          }
        }
  // Binomial(3168, 0.2): the standard deviation of the dropped fraction is ~0.007.
  EXPECT_NEAR(static_cast<double>(dropped) / total, p, 0.035);
}

TEST(AttentionDropout, NoDrawAndNoDropoutWhenInactive) {
  Tensor qkv = test::random_f64({2, 5, 24}, 9);
  std::vector<double> plain = ops::attention(Variable(qkv), 2).data().to_double_vector();
  Generator gen(3);
  EXPECT_EQ(ops::attention(Variable(qkv), 2, 0.5f, &gen, false).data().to_double_vector(), plain);
  EXPECT_EQ(ops::attention(Variable(qkv), 2, 0.0f, &gen, true).data().to_double_vector(), plain);
  EXPECT_EQ(ops::attention(Variable(qkv), 2, 0.5f, nullptr, true).data().to_double_vector(), plain);
  EXPECT_EQ(gen.offset(), 0u);
  EXPECT_NE(ops::attention(Variable(qkv), 2, 0.5f, &gen, true).data().to_double_vector(), plain);
}

TEST(AttentionDropout, PEqualOneGivesZeros) {
  Generator gen(3);
  std::vector<double> out =
      ops::attention(Variable(test::random_f64({1, 4, 12}, 2)), 2, 1.0f, &gen, true).data().to_double_vector();
  for (double v : out) EXPECT_EQ(v, 0.0);
}

TEST(AttentionDropout, GradientMatchesCentralDifferences) {
  struct Dims {
    int64_t B, T, C, NH;
  };
  uint64_t seed = 300;
  for (const Dims& d : std::vector<Dims>{{2, 5, 8, 2}, {1, 7, 6, 1}, {2, 4, 12, 3}}) {
    SCOPED_TRACE(testing::Message() << "B " << d.B << " T " << d.T << " C " << d.C << " NH " << d.NH);
    auto f = [&](const std::vector<Variable>& in) {
      Generator gen(77, 4);  // re-created per evaluation: the same mask every time
      gen.set_offset(123);
      return ops::attention(in[0], static_cast<int>(d.NH), 0.3f, &gen, true);
    };
    EXPECT_EQ(test::gradcheck(f, {test::random_f64({d.B, d.T, 3 * d.C}, seed++)}, {true}), 0);
  }
  // A larger shape through the multi-threaded path, along random directions.
  auto big = [](const std::vector<Variable>& in) {
    Generator gen(5, 2);
    return ops::attention(in[0], 4, 0.3f, &gen, true);
  };
  EXPECT_LT(test::directional_error(big, {test::random_f64({4, 40, 3 * 32}, 7)}, {true}), 1e-7);
}

TEST(AttentionDropout, FloatAndDoubleGradientsAgree) {
  const int64_t B = 2, T = 11, C = 16, NH = 4;
  Tensor qkv = test::random_f64({B, T, 3 * C}, 31);
  Tensor dout = test::random_f64({B, T, C}, 32);
  std::vector<double> grads[2];
  int k = 0;
  for (DType dt : {DType::F64, DType::F32}) {
    Variable x(qkv.to(dt), true);
    Generator gen(12, 3);
    ops::attention(x, static_cast<int>(NH), 0.25f, &gen, true).backward(dout.to(dt));
    grads[k++] = x.grad().to_double_vector();
  }
  for (size_t i = 0; i < grads[0].size(); ++i)
    EXPECT_NEAR(grads[1][i], grads[0][i], 1e-5 + 1e-5 * std::abs(grads[0][i])) << "element " << i;
}

TEST(AttentionDropout, ProbabilityOutsideTheUnitIntervalIsAnError) {
  Generator gen(1);
  test::expect_error_mentioning(
      [&] { ops::attention(Variable(Tensor::zeros({1, 2, 12}, DType::F64)), 2, 1.5f, &gen, true); },
      {"1.5", "[1, 2, 12]"});
  test::expect_error_mentioning(
      [&] { ops::attention(Variable(Tensor::zeros({1, 2, 12}, DType::F64)), 2, -0.1f, &gen, true); }, {"-0.1"});
  EXPECT_EQ(gen.offset(), 0u);
}

}  // namespace
}  // namespace nd
