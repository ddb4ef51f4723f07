// Fitting the schedule to a time budget: the arithmetic against hand-computed cases, and a real
// run with --fit-schedule that follows the schedule it fitted (checks that hold however loaded the
// machine is).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "train/lr_schedule.h"
#include "train/time_budget.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

// step -> learning rate of the step records in a metrics.jsonl.
std::map<int, double> logged_lrs(const std::string& path) {
  std::map<int, double> lrs;
  std::ifstream in(path);
  const std::regex record(R"(^\{"step":(\d+),"loss":[^,]*,"lr":([^,]+),)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, record)) lrs[std::stoi(m[1])] = std::stod(m[2]);
  return lrs;
}

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

// A real run with --fit-schedule. How many steps it fits depends on how fast the machine is while
// it runs, so the test reads the fitted schedule from the run's log and checks what follows from
// it under any load: the cosine ends at the last step, each step took its learning rate from the
// configured schedule until the fit and from the fitted one after it, and the run either took all
// its steps or stopped early because the budget was spent.
TEST(TimeBudget, ARunFollowsTheScheduleItFitted) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 1000000;
  c.schedule.lr_decay_iters = 1000000;
  c.observe.log_interval = 1;
  c.schedule.max_seconds = 3;
  c.schedule.fit_schedule = true;
  std::ostringstream log;
  RunContext context;
  context.log = &log;
  auto start = std::chrono::steady_clock::now();
  TrainResult r = run_training(c, context);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int fit_after = 6;  // the trainer times steps 2 to 6, then fits
  // "schedule: 2 ms a step -> 1303 steps in 3 s (warmup 3, cosine decay to step 1303), ..."
  const std::regex schedule_line(R"(-> (\d+) steps in .* \(warmup (\d+), cosine decay to step (\d+)\))");
  std::smatch fit;
  const std::string text = log.str();
  if (!std::regex_search(text, fit, schedule_line)) {
    // A machine so slow that the budget was spent before the timed steps were done.
    EXPECT_LE(r.steps_done, fit_after) << text;
    EXPECT_GE(seconds, c.schedule.max_seconds) << text;
    return;
  }
  const int steps = std::stoi(fit[1]), warmup = std::stoi(fit[2]), decay = std::stoi(fit[3]);
  EXPECT_GE(steps, fit_after);
  EXPECT_EQ(decay, steps) << "the cosine must reach min_lr at the last step";
  EXPECT_EQ(warmup, std::min(c.schedule.warmup_iters, steps / 10));
  if (r.steps_done < steps) {
    EXPECT_GE(seconds, c.schedule.max_seconds) << "stopped at step " << r.steps_done << " of " << steps << " within the budget";
  } else {
    EXPECT_EQ(r.steps_done, steps);
  }
  const std::map<int, double> lrs = logged_lrs(dir / "out/metrics.jsonl");
  EXPECT_EQ(static_cast<int64_t>(lrs.size()), r.steps_done);
  const LrSchedule configured{c.optim.lr, c.optim.min_lr, c.schedule.warmup_iters, c.schedule.lr_decay_iters}, fitted{c.optim.lr, c.optim.min_lr, warmup, decay};
  for (const auto& [step, lr] : lrs) {
    const double want = (step <= fit_after ? configured : fitted).at(step - 1);
    EXPECT_NEAR(lr, want, 1e-6 * c.optim.lr) << "step " << step << " of " << steps;
  }
}

}  // namespace
}  // namespace nd::train
