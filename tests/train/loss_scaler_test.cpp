// The loss scaler's state machine (train/loss_scaler.h) on one rank against closed-form
// sequences: growth after exactly the interval of finite steps, backoff and skip on overflow (the
// count starting over), a fixed scale that never moves, --loss-scale parsing, and state restore.
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/error.h"
#include "train/loss_scaler.h"

namespace nd::train {
namespace {

TEST(LossScaler, DynamicGrowsAfterTheIntervalAndHalvesOnOverflow) {
  LossScalerOptions o;
  o.growth_interval = 3;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_TRUE(s.enabled());
  EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_EQ(s.scale(), 131072.0);  // the third finite step in a row
  EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_TRUE(s.update(true, nullptr));  // overflow: skipped, halved, count reset
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.state().skipped_steps, 1);
  EXPECT_EQ(s.state().finite_in_a_row, 0);
  EXPECT_TRUE(s.update(true, nullptr));
  EXPECT_EQ(s.scale(), 32768.0);
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_EQ(s.scale(), 32768.0);  // one finite step before the overflow does not count
  EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.state().skipped_steps, 2);
}

TEST(LossScaler, DefaultIntervalIs2000Steps) {
  LossScaler s;
  for (int i = 0; i < 1999; ++i) s.update(false, nullptr);
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(false, nullptr);
  EXPECT_EQ(s.scale(), 131072.0);
  // k overflows in a row from 2^17 leave 2^(17 - k).
  for (int k = 1; k <= 20; ++k) {
    EXPECT_TRUE(s.update(true, nullptr));
    EXPECT_EQ(s.scale(), std::ldexp(1.0, 17 - k));
  }
}

TEST(LossScaler, FixedScaleNeverMovesButStillSkips) {
  LossScaler s(parse_loss_scale("1024"));
  EXPECT_FALSE(s.dynamic());
  for (int i = 0; i < 5000; ++i) EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_TRUE(s.update(true, nullptr));
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_EQ(s.state().skipped_steps, 1);
  LossScaler off(parse_loss_scale("1"));
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.scale(), 1.0);
}

TEST(LossScaler, ParsesTheFlagAndRefusesNonsense) {
  EXPECT_TRUE(parse_loss_scale("dynamic").dynamic);
  EXPECT_EQ(parse_loss_scale("0.5").initial_scale, 0.5);
  for (const char* bad : {"", "0", "-2", "inf", "nan", "64k", "dyn"}) EXPECT_THROW(parse_loss_scale(bad), Error) << bad;
}

TEST(LossScaler, StateRestoresTheDynamicMachineButNotAFixedScale) {
  LossScalerOptions o;
  o.growth_interval = 4;
  LossScaler s(o);
  s.set_state(LossScalerState{512.0, 3, 7});
  EXPECT_FALSE(s.update(false, nullptr));
  EXPECT_EQ(s.scale(), 1024.0);  // 3 + 1 finite steps
  EXPECT_EQ(s.state().skipped_steps, 7);
  EXPECT_THROW(s.set_state(LossScalerState{0.0, 0, 0}), Error);
  EXPECT_THROW(s.set_state(LossScalerState{INFINITY, 0, 0}), Error);
  LossScaler fixed(parse_loss_scale("8"));
  fixed.set_state(LossScalerState{512.0, 0, 2});
  EXPECT_EQ(fixed.scale(), 8.0);  // the flag's value wins over the checkpoint's
  EXPECT_EQ(fixed.state().skipped_steps, 2);
}

}  // namespace
}  // namespace nd::train
