// ops::add_positions_share: each rank's share of the flattened (B, T) tokens, which may start inside
// a sequence and cross into the next ones, gets what ops::add_positions gives those tokens of the
// whole; the shares' wpe gradients sum to the whole's; float64 gradients by central differences.
#include <gtest/gtest.h>

#include <tuple>

#include "autograd/op_test_util.h"
#include "autograd/ops/positions_share.h"
#include "autograd/parallel_ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

TEST(AddPositionsShare, SharesEqualTheWholeAndTheirGradientsSumToIt) {
  // (B, T, n): one sequence split, shares crossing sequence ends, shares of several sequences.
  for (auto [B, T, n] : {std::tuple{1, 8, 2}, std::tuple{3, 4, 2}, std::tuple{3, 8, 4}, std::tuple{4, 4, 2}}) {
    SCOPED_TRACE(testing::Message() << "B " << B << ", T " << T << ", " << n << " shares");
    const int64_t C = 3, S = int64_t{B} * T / n;
    Tensor whole = test::random_f64({B, T, C}, 1), wpe_values = test::random_f64({T + 2, C}, 2);
    Variable wpe_whole(wpe_values.clone(), true);
    Variable want = ops::add_positions(Variable(whole), wpe_whole);
    want.backward(Tensor::ones({B, T, C}, DType::F64));
    Variable wpe_shares(wpe_values.clone(), true);
    const std::vector<double> want_values = want.data().to_double_vector();
    for (int r = 0; r < n; ++r) {
      Tensor share = whole.view({B * T, C}).narrow(r * S, S).clone().view({B, T / n, C});
      Variable got = ops::add_positions_share(Variable(share), wpe_shares, r * S, T);
      got.backward(Tensor::ones({B, T / n, C}, DType::F64));
      const std::vector<double> got_values = got.data().to_double_vector();
      for (int64_t i = 0; i < S * C; ++i) EXPECT_DOUBLE_EQ(got_values[i], want_values[r * S * C + i]) << i;
    }
    EXPECT_EQ(wpe_shares.grad().to_double_vector(), wpe_whole.grad().to_double_vector());
  }
}

TEST(AddPositionsShare, Gradcheck) {
  auto f = [](const std::vector<Variable>& v) { return ops::add_positions_share(v[0], v[1], 5, 4); };
  EXPECT_EQ(test::gradcheck(f, {test::random_f64({2, 3, 2}, 3), test::random_f64({6, 2}, 4)}, {true, true}), 0);
}

TEST(AddPositionsShare, PositionsBeyondWpeAreAnError) {
  EXPECT_THROW(ops::add_positions_share(Variable(Tensor::zeros({1, 2, 3})), Variable(Tensor::zeros({4, 3})), 0, 5),
               Error);
}

}  // namespace
}  // namespace nd
