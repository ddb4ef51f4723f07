// Fitting the schedule to a time budget (--fit-schedule with --max-seconds): after a few timed
// steps the trainer knows what a step costs, and sets the number of steps, the warmup and the
// cosine decay so that the run ends on a fully decayed model when the time is up, instead of
// stopping mid-schedule with the learning rate still near its peak.
#pragma once
#include <cstdint>

namespace nd::train {

struct TimeBudgetInput {
  double budget_seconds = 0;  // --max-seconds
  double elapsed_seconds = 0; // training time already spent
  int64_t steps_done = 0;
  double step_seconds = 0;    // measured time of one optimizer step
  // One eval costs 2 * eval_iters forward passes of one micro-batch; a forward is about a third
  // of a micro-step's forward + backward.
  int eval_interval = 0;      // 0 = evals only at the end
  int eval_iters = 0;
  int grad_accum = 1;
  int warmup_iters = 0;       // as configured
};

struct FittedSchedule {
  int64_t max_iters = 0;      // total steps, the ones done included
  int lr_decay_iters = 0;     // = max_iters: the cosine reaches min_lr at the last step
  int warmup_iters = 0;       // the configured warmup, at most a tenth of the steps
};

// nd::Error on a non-positive budget or step time.
FittedSchedule fit_schedule_to_time(const TimeBudgetInput& in);

}  // namespace nd::train
