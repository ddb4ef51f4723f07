// dist/token_order.h on the CPU: rank order is the concatenation of every rank's share of every
// sequence, sequence order undoes it, B = 1 is a view, gradients regroup the other way, and a
// sequence length tp does not divide is an nd::Error.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "dist/token_order.h"

namespace nd::dist {
namespace {

// t[b, t, c] = 100 b + 10 t + c for (B, T, 2).
Tensor numbered(int64_t B, int64_t T) {
  std::vector<float> v;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < 2; ++c) v.push_back(static_cast<float>(100 * b + 10 * t + c));
  return Tensor::from_vector(v, {B, T, 2});
}

TEST(TokenOrder, RankOrderHoldsEveryRanksShareOfEverySequence) {
  const int tp = 3;
  const int64_t B = 2, T = 6, Ts = T / tp;
  Tensor ranked = to_rank_order(numbered(B, T), tp);
  ASSERT_EQ(ranked.shape(), (Shape{tp * B, Ts, 2}));
  const std::vector<double> got = ranked.to_double_vector();
  size_t i = 0;
  for (int r = 0; r < tp; ++r)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < Ts; ++t)
        for (int64_t c = 0; c < 2; ++c, ++i)
          EXPECT_EQ(got[i], 100 * b + 10 * (r * Ts + t) + c) << "rank block " << r << ", sequence " << b;
  EXPECT_EQ(to_sequence_order(ranked, tp).to_double_vector(), numbered(B, T).to_double_vector());
}

TEST(TokenOrder, OneSequenceIsAView) {
  Tensor seq = numbered(1, 4);
  Tensor ranked = to_rank_order(seq, 2);
  EXPECT_TRUE(ranked.shares_storage(seq));
  EXPECT_EQ(ranked.shape(), (Shape{2, 2, 2}));
  EXPECT_TRUE(to_sequence_order(ranked, 2).shares_storage(seq));
}

TEST(TokenOrder, GradientsRegroupTheOtherWay) {
  Variable x(numbered(2, 4), true);
  Variable y = rank_order(x, 2);
  y.backward(to_rank_order(numbered(2, 4), 2));
  EXPECT_EQ(x.grad().to_double_vector(), numbered(2, 4).to_double_vector());
  Variable r(to_rank_order(numbered(2, 4), 2), true);
  sequence_order(r, 2).backward(numbered(2, 4));
  EXPECT_EQ(r.grad().to_double_vector(), to_rank_order(numbered(2, 4), 2).to_double_vector());
}

TEST(TokenOrder, ASequenceTpDoesNotDivideIsAnError) {
  EXPECT_THROW(to_rank_order(numbered(2, 5), 2), Error);
}

}  // namespace
}  // namespace nd::dist
