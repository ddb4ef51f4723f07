// Fitting the schedule to a time budget: the arithmetic against hand-computed cases, and a real
// run with --fit-schedule that ends on a decayed learning rate within its budget.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "train/lr_schedule.h"
#include "train/time_budget.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

TEST(TimeBudget, StepsFillTheBudgetLeft) {
  TimeBudgetInput in;
  in.budget_seconds = 100;
  in.elapsed_seconds = 10;
  in.steps_done = 6;
  in.step_seconds = 0.5;
  in.warmup_iters = 100;
  FittedSchedule f = fit_schedule_to_time(in);
  EXPECT_EQ(f.max_iters, 6 + 180);  // 90 s left at 0.5 s a step, no evals
  EXPECT_EQ(f.lr_decay_iters, 186);
  EXPECT_EQ(f.warmup_iters, 18);    // a tenth of the steps, below the configured 100
}

TEST(TimeBudget, EvalsTakeTheirShare) {
  TimeBudgetInput in;
  in.budget_seconds = 100;
  in.step_seconds = 0.3;
  in.eval_interval = 10;
  in.eval_iters = 15;  // one eval: 2 * 15 forwards of 0.1 s = 3 s
  in.warmup_iters = 5;
  FittedSchedule f = fit_schedule_to_time(in);
  // (100 - 3 for the final eval) / (0.3 + 3 / 10) = 161.67 steps.
  EXPECT_EQ(f.max_iters, 161);
  EXPECT_EQ(f.warmup_iters, 5);
}

TEST(TimeBudget, NoTimeLeftMeansNoMoreSteps) {
  TimeBudgetInput in;
  in.budget_seconds = 5;
  in.elapsed_seconds = 6;
  in.steps_done = 6;
  in.step_seconds = 0.1;
  EXPECT_EQ(fit_schedule_to_time(in).max_iters, 6);
  in.step_seconds = 0;
  EXPECT_THROW(fit_schedule_to_time(in), Error);
}

TEST(TimeBudget, ARunEndsDecayedWithinItsBudget) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 1000000;
  c.schedule.lr_decay_iters = 1000000;
  c.schedule.max_seconds = 3;
  c.schedule.fit_schedule = true;
  auto start = std::chrono::steady_clock::now();
  TrainResult r = run_training(c);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(r.steps_done, 6);
  EXPECT_LT(r.steps_done, 1000000);
  EXPECT_LT(seconds, 3 * 1.5 + 2);
  // The last step ran at (close to) the floor of the fitted cosine.
  LrSchedule fitted{c.optim.lr, c.optim.min_lr, 0, static_cast<int>(r.steps_done)};
  EXPECT_NEAR(fitted.at(static_cast<int>(r.steps_done) - 1), c.optim.min_lr, 0.05 * (c.optim.lr - c.optim.min_lr));
}

}  // namespace
}  // namespace nd::train
