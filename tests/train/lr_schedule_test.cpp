// The warmup + cosine schedule at its key points, against the closed form written out here.
#include <gtest/gtest.h>

#include <cmath>

#include "train/lr_schedule.h"

namespace nd::train {
namespace {

TEST(LrSchedule, WarmupIsLinear) {
  LrSchedule s{1e-3, 1e-4, 100, 5000};
  EXPECT_DOUBLE_EQ(s.at(0), 1e-3 * 1.0 / 101.0);
  EXPECT_DOUBLE_EQ(s.at(49), 1e-3 * 50.0 / 101.0);
  EXPECT_DOUBLE_EQ(s.at(99), 1e-3 * 100.0 / 101.0);
  for (int it = 1; it < 100; ++it) EXPECT_GT(s.at(it), s.at(it - 1));
}

TEST(LrSchedule, CosineFromPeakToFloor) {
  LrSchedule s{1e-3, 1e-4, 100, 5000};
  EXPECT_DOUBLE_EQ(s.at(100), 1e-3);                  // peak right after warmup
  EXPECT_NEAR(s.at(2550), 1e-4 + 0.5 * 9e-4, 1e-15);  // half way: the mean of peak and floor
  int quarter = 100 + (5000 - 100) / 4;               // cos(pi/4)
  EXPECT_NEAR(s.at(quarter), 1e-4 + 9e-4 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-15);
  EXPECT_NEAR(s.at(5000), 1e-4, 1e-15);
  for (int it = 101; it <= 5000; it += 7) EXPECT_LE(s.at(it), s.at(it - 1));
}

TEST(LrSchedule, FloorAfterDecay) {
  LrSchedule s{1e-3, 1e-4, 100, 5000};
  EXPECT_DOUBLE_EQ(s.at(5001), 1e-4);
  EXPECT_DOUBLE_EQ(s.at(100000), 1e-4);
}

TEST(LrSchedule, NoWarmupStartsAtPeak) {
  LrSchedule s{6e-4, 6e-5, 0, 10};
  EXPECT_DOUBLE_EQ(s.at(0), 6e-4);
  EXPECT_NEAR(s.at(5), 6e-5 + 0.5 * 5.4e-4, 1e-16);
  EXPECT_NEAR(s.at(10), 6e-5, 1e-18);
}

TEST(LrSchedule, DecayNotAfterWarmupGoesToFloor) {
  LrSchedule s{1e-3, 1e-4, 10, 5};
  EXPECT_DOUBLE_EQ(s.at(9), 1e-3 * 10.0 / 11.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-4);
}

}  // namespace
}  // namespace nd::train
