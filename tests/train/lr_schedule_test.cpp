// The warmup and the decay shapes (cosine, linear, wsd, constant) at their key points, against the
// closed forms written out here; --lr-schedule and --decay-frac as flags.
#include <gtest/gtest.h>

#include <cmath>

#include "common/expect_input_error.h"
#include "train/config.h"
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

TEST(LrSchedule, LinearFromPeakToFloor) {
  LrSchedule s{1e-3, 1e-4, 100, 1100, LrShape::Linear};
  EXPECT_DOUBLE_EQ(s.at(99), 1e-3 * 100.0 / 101.0);  // the same warmup
  EXPECT_DOUBLE_EQ(s.at(100), 1e-3);
  EXPECT_NEAR(s.at(350), 1e-3 - 0.25 * 9e-4, 1e-15);  // a quarter of the way: a quarter of the drop
  EXPECT_NEAR(s.at(1100), 1e-4, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(1101), 1e-4);
}

// Warmup 100, decay span 100..1100, decay_frac 0.2: the peak held to step 900, then a straight line
// to the floor at 1100.
TEST(LrSchedule, WsdHoldsThePeakThenDecaysOverTheLastFraction) {
  LrSchedule s{1e-3, 1e-4, 100, 1100, LrShape::Wsd, 0.2};
  EXPECT_DOUBLE_EQ(s.at(100), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(500), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(900), 1e-3);
  EXPECT_NEAR(s.at(1000), 1e-3 - 0.5 * 9e-4, 1e-15);
  EXPECT_NEAR(s.at(1100), 1e-4, 1e-15);
  EXPECT_DOUBLE_EQ(s.at(1200), 1e-4);
  for (int it = 901; it <= 1100; ++it) EXPECT_LT(s.at(it), s.at(it - 1));
}

TEST(LrSchedule, ConstantKeepsThePeak) {
  LrSchedule s{1e-3, 1e-4, 10, 100, LrShape::Constant};
  EXPECT_DOUBLE_EQ(s.at(5), 1e-3 * 6.0 / 11.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(100), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(100000), 1e-3);
}

TEST(LrSchedule, ShapesAreFlags) {
  for (LrShape shape : {LrShape::Cosine, LrShape::Linear, LrShape::Wsd, LrShape::Constant})
    EXPECT_EQ(parse_lr_shape(lr_shape_name(shape)), shape);
  testing::expect_input_error([] { parse_lr_shape("step"); }, "--lr-schedule");
  TrainConfig c;
  set_train_config_field(c, "lr-schedule", "wsd", "test");
  set_train_config_field(c, "decay-frac", "0.1", "test");
  EXPECT_EQ(c.schedule.lr_schedule, LrShape::Wsd);
  EXPECT_DOUBLE_EQ(c.schedule.decay_frac, 0.1);
}

}  // namespace
}  // namespace nd::train
