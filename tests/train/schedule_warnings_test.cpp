// The schedule warnings against the schedule itself: over a grid of shapes, step counts, warmups
// and decays, "never reaches --lr" is warned exactly when no step of LrSchedule reaches the peak,
// and "... decay reaches --min-lr" exactly when the step after the last would still be above the
// floor of a decaying shape.
#include <gtest/gtest.h>

#include <algorithm>

#include "train/lr_schedule.h"
#include "train/schedule_warnings.h"

namespace nd::train {
namespace {

bool warns(const std::vector<std::string>& warnings, const std::string& needle) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(needle) != std::string::npos; });
}

TEST(ScheduleWarnings, MatchWhatTheScheduleDoes) {
  TrainConfig c;
  c.optim.lr = 1e-3;
  c.optim.min_lr = 1e-4;
  for (LrShape shape : {LrShape::Cosine, LrShape::Linear, LrShape::Wsd, LrShape::Constant})
    for (int max_iters : {1, 2, 5, 10})
      for (int warmup : {0, 1, 4, 5, 6, 12})
        for (int decay : {0, 3, 5, 9, 10, 11, 20}) {
          c.schedule.lr_schedule = shape;
          c.schedule.max_iters = max_iters;
          c.schedule.warmup_iters = warmup;
          c.schedule.lr_decay_iters = decay;
          const LrSchedule s{c.optim.lr, c.optim.min_lr, warmup, decay, shape, c.schedule.decay_frac};
          double peak = 0;
          for (int it = 0; it < max_iters; ++it) peak = std::max(peak, s.at(it));
          const std::vector<std::string> w = schedule_warnings(c);
          SCOPED_TRACE(std::string(lr_shape_name(shape)) + " max " + std::to_string(max_iters) + " warmup " +
                       std::to_string(warmup) + " decay " + std::to_string(decay));
          EXPECT_EQ(warns(w, "never reaches --lr"), peak < c.optim.lr * (1 - 1e-12));
          // Where the run gets past its warmup, the step after its last tells whether a decay
          // ended (a constant schedule has none to end); the linear shapes land on --min-lr to
          // within rounding.
          if (warmup < max_iters)
            EXPECT_EQ(warns(w, " decay reaches --min-lr"),
                      shape != LrShape::Constant && s.at(max_iters) > c.optim.min_lr + 1e-12 * c.optim.lr);
        }
}

TEST(ScheduleWarnings, NoneForTheDefaultsOrAFittedSchedule) {
  TrainConfig c;
  resolve_train_config(c);
  EXPECT_TRUE(schedule_warnings(c).empty());
  c.schedule.max_iters = 10;  // warmup 100 of 10 steps, decay at step 5000
  EXPECT_EQ(schedule_warnings(c).size(), 2u);
  c.schedule.fit_schedule = true;
  c.schedule.max_seconds = 60;
  EXPECT_TRUE(schedule_warnings(c).empty());
}

}  // namespace
}  // namespace nd::train
