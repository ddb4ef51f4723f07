// PeerComm's auto table (dist/comm/bench/auto_choice.h) from per-choice curves: decide_by_size on
// synthetic curves; decide_from_curves with the ring and NCCL extrapolated above their last size.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "dist/comm/bench/auto_choice.h"

namespace nd::dist {
namespace {

// One-shot fastest to 16 KB, two-shot to its 1 MB buffer, the ring to 2 MB, NCCL above.
double synthetic_time_us(Algorithm c, int64_t bytes) {
  const double b = static_cast<double>(bytes);
  switch (c) {
    case Algorithm::OneShot: return bytes > (1 << 20) ? -1.0 : 4.0 + b / 4e3;
    case Algorithm::TwoShot: return bytes > (1 << 20) ? -1.0 : 8.0 + b / 1.5e4;
    case Algorithm::Ring: return 20.0 + b / 1e4;
    case Algorithm::Native: return 400.0 + b / 2.2e5;
    default: return -1.0;  // push and the policies: never
  }
}

TEST(AutoChoice, AutoPicksTheFastestByRuns) {
  auto time_us = [](Algorithm c, int64_t bytes) {
    const double b = static_cast<double>(bytes);
    switch (c) {
      case Algorithm::OneShot: return bytes > (1 << 20) ? -1.0 : 4.0 + b / 4e3;
      case Algorithm::TwoShot: return bytes > (1 << 20) ? -1.0 : 8.0 + b / 1.5e4;
      case Algorithm::Ring: return 20.0 + b / 1e4;
      case Algorithm::Native: return 400.0 + b / 2.2e5;
      default: return -1.0;
    }
  };
  AutoTable table = decide_by_size(time_us);
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table[0], std::make_pair(int64_t{16} << 10, Algorithm::OneShot));
  EXPECT_EQ(table[1], std::make_pair(int64_t{1} << 20, Algorithm::TwoShot));
  EXPECT_EQ(table[2].second, Algorithm::Ring);
  EXPECT_EQ(table[3], std::make_pair(int64_t{1} << 40, Algorithm::Native));
  EXPECT_EQ(table[2].first, int64_t{2} << 20);  // 20 + b/1e4 = 400 + b/2.2e5 at 3.98 MB
}

// Curves at powers of two to 64 MB (the peer choices to their 1 MB buffer) decide as the times they
// hold do; above 64 MB the ring's and NCCL's lines, fitted to their upper halves, carry on.
TEST(AutoChoice, CurvesDecideLikeTheTimesTheyHold) {
  AutoCurve curves[kAutoChoiceCount];
  for (int64_t bytes = 8; bytes <= (int64_t{64} << 20); bytes *= 2)
    for (int c = 0; c < kAutoChoiceCount; ++c) {
      const double t = synthetic_time_us(kAutoChoices[c], bytes);
      if (t >= 0) curves[c][bytes] = t;
    }
  const AutoTable table = decide_from_curves(
      curves, [](Algorithm c) { return is_peer_choice(c) ? int64_t{1} << 20 : std::numeric_limits<int64_t>::max(); });
  EXPECT_EQ(table, decide_by_size(synthetic_time_us));
  EXPECT_TRUE(is_peer_choice(Algorithm::Push));
  EXPECT_FALSE(is_peer_choice(Algorithm::Ring));
  EXPECT_EQ(parse_algorithm("push"), Algorithm::Push);
  EXPECT_STREQ(algorithm_name(Algorithm::Push), "push");
  EXPECT_THROW(parse_algorithm("threeshot"), Error);
}

}  // namespace
}  // namespace nd::dist
