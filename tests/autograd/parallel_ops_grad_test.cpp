// The tensor-parallel ops on one process (no communication): forward against direct
// computations, float64 central differences for add_bias, add_positions, the vocabulary-parallel
// embedding (ids inside and outside the rank's rows) and the vocabulary-parallel cross-entropy
// (a rank holding an offset range with padding, targets inside, outside and ignored); at one rank
// holding the whole vocabulary the cross-entropy gives ops::cross_entropy's bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"

namespace nd {
namespace {

const ops::RowStatsReduce kOneRank = [](Tensor&) {};

TEST(AddBias, ForwardAndGradient) {
  Tensor x = test::random_f64({2, 3, 4}, 1), b = test::random_f64({4}, 2);
  Variable y = ops::add_bias(Variable(x), Variable(b));
  std::vector<double> xv = x.to_double_vector(), bv = b.to_double_vector(), yv = y.data().to_double_vector();
  for (size_t i = 0; i < yv.size(); ++i) EXPECT_DOUBLE_EQ(yv[i], xv[i] + bv[i % 4]);
  auto f = [](const std::vector<Variable>& v) { return ops::add_bias(v[0], v[1]); };
  EXPECT_EQ(test::gradcheck(f, {x, b}, {true, true}), 0);
  test::expect_error_mentioning([&] { ops::add_bias(Variable(x), Variable(test::random_f64({3}, 3))); },
                                {"[3]", "[2, 3, 4]"});
}

TEST(AddPositions, ForwardAndGradient) {
  Tensor x = test::random_f64({2, 3, 4}, 4), wpe = test::random_f64({5, 4}, 5);
  Variable y = ops::add_positions(Variable(x), Variable(wpe));
  std::vector<double> xv = x.to_double_vector(), pv = wpe.to_double_vector(), yv = y.data().to_double_vector();
  for (size_t i = 0; i < yv.size(); ++i) EXPECT_DOUBLE_EQ(yv[i], xv[i] + pv[i % 12]);
  auto f = [](const std::vector<Variable>& v) { return ops::add_positions(v[0], v[1]); };
  EXPECT_EQ(test::gradcheck(f, {x, wpe}, {true, true}), 0);
  test::expect_error_mentioning([&] { ops::add_positions(Variable(x), Variable(test::random_f64({2, 4}, 6))); },
                                {"[2, 4]", "Tmax >= 3"});
}

TEST(VocabParallelEmbedding, RowsOfOtherRanksAreZero) {
  // This rank holds rows [3, 7) of a 10-row vocabulary.
  Tensor wte = test::random_f64({4, 5}, 7);
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{0, 3, 6, 7, 9, 4}, {2, 3});
  Variable out = ops::vocab_parallel_embedding(idx, Variable(wte), 3, 10);
  ASSERT_EQ(out.shape(), (Shape{2, 3, 5}));
  std::vector<double> o = out.data().to_double_vector(), w = wte.to_double_vector();
  const int ids[6] = {0, 3, 6, 7, 9, 4};
  for (int p = 0; p < 6; ++p)
    for (int c = 0; c < 5; ++c)
      EXPECT_DOUBLE_EQ(o[p * 5 + c], ids[p] >= 3 && ids[p] < 7 ? w[(ids[p] - 3) * 5 + c] : 0.0) << p << "," << c;
  auto f = [&](const std::vector<Variable>& v) { return ops::vocab_parallel_embedding(idx, v[0], 3, 10); };
  EXPECT_EQ(test::gradcheck(f, {wte}, {true}), 0);
}

TEST(VocabParallelEmbedding, IdsOutsideTheVocabularyAreErrors) {
  Tensor wte = test::random_f64({4, 5}, 8);
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{0, 10}, {1, 2});
  test::expect_error_mentioning([&] { ops::vocab_parallel_embedding(idx, Variable(wte), 4, 10); },
                                {"token id 10", "position 1", "size 10"});
  test::expect_error_mentioning([&] { ops::vocab_parallel_embedding(idx, Variable(wte), 8, 10); }, {"[8, 12)"});
}

// A rank holding columns [4, 10) of a vocabulary of 8 (two padding columns); targets hit its
// columns, another rank's (1, 2) and nothing (-1).
TEST(VocabParallelCrossEntropy, GradientMatchesCentralDifferences) {
  Tensor logits = test::random_f64({2, 3, 6}, 9);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{4, 1, -1, 7, 2, 5}, {2, 3});
  auto f = [&](const std::vector<Variable>& v) {
    return ops::vocab_parallel_cross_entropy(v[0], targets, 4, 8, kOneRank, kOneRank);
  };
  EXPECT_EQ(test::gradcheck(f, {logits}, {true}), 0);
  Variable x(logits.clone(), true);
  f({x}).backward();
  std::vector<double> g = x.grad().to_double_vector();
  for (int row = 0; row < 6; ++row)
    for (int col = 4; col < 6; ++col) EXPECT_EQ(g[row * 6 + col], 0.0) << "padding column " << col;
}

// Forward against the direct formula with the other ranks' statistics supplied by the reducers:
// as if a second rank held columns [0, 4) with logits all equal to `other`.
TEST(VocabParallelCrossEntropy, ForwardCombinesTheRanksStatistics) {
  const double other = 0.25;
  Tensor logits = test::random_f64({3, 4}, 10);
  std::vector<int32_t> t = {5, 1, -1};
  Tensor targets = Tensor::from_vector(t, {3});
  ops::RowStatsReduce max_with_other = [&](Tensor& m) {
    double* v = m.data<double>();
    for (int64_t r = 0; r < m.numel(); ++r) v[r] = std::max(v[r], other);
  };
  ops::RowStatsReduce sum_with_other = [&](Tensor& s) {  // (2, N): sum of exp, target logit
    double* v = s.data<double>();
    const int64_t N = s.size(1);
    for (int64_t r = 0; r < N; ++r) {
      // The caller rescaled to the reduced max, which the other rank also uses.
      const double global_max = std::max(other, *std::max_element(logits.data<double>() + 4 * r,
                                                                    logits.data<double>() + 4 * r + 4));
      v[r] += 4 * std::exp(other - global_max);
      if (t[r] != -1 && t[r] < 4) v[N + r] += other;
    }
  };
  Variable loss = ops::vocab_parallel_cross_entropy(Variable(logits), targets, 4, 8, max_with_other, sum_with_other);
  std::vector<double> x = logits.to_double_vector();
  double total = 0;
  for (int r = 0; r < 2; ++r) {
    double sum = 4 * std::exp(other);
    for (int j = 0; j < 4; ++j) sum += std::exp(x[r * 4 + j]);
    total += std::log(sum) - (t[r] >= 4 ? x[r * 4 + t[r] - 4] : other);
  }
  EXPECT_NEAR(loss.data().item(), total / 2, 1e-12);
}

TEST(VocabParallelCrossEntropy, OneRankGivesTheFusedCrossEntropysBits) {
  Generator gen(11);
  Tensor logits = Tensor::randn({4, 5, 9}, gen, 0.0, 2.0);
  const std::vector<int32_t> t = {0, 6, -1, 3, 2, 5, 1, -1, 0, 4, 6, 6, 2, 3, 5, 0, 1, -1, 4, 2};
  Tensor targets = Tensor::from_vector(t, {4, 5});
  Variable a(logits.clone(), true), b(logits.clone(), true);
  Variable la = ops::vocab_parallel_cross_entropy(a, targets, 0, 7, kOneRank, kOneRank);
  Variable lb = ops::cross_entropy(b, targets, 7);
  EXPECT_EQ(la.data().item(), lb.data().item());
  la.backward();
  lb.backward();
  EXPECT_EQ(a.grad().to_double_vector(), b.grad().to_double_vector());
}

TEST(VocabParallelCrossEntropy, TargetsOutsideTheVocabularyAreErrors) {
  Tensor logits = test::random_f64({2, 4}, 12);
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{1, 8}, {2});
  test::expect_error_mentioning(
      [&] { ops::vocab_parallel_cross_entropy(Variable(logits), targets, 4, 8, kOneRank, kOneRank); },
      {"target 8", "row 1"});
}

}  // namespace
}  // namespace nd
