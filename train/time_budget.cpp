// The arithmetic of time_budget.h.
#include "train/time_budget.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"

namespace nd::train {

FittedSchedule fit_schedule_to_time(const TimeBudgetInput& in) {
  ND_CHECK(in.budget_seconds > 0, "fitting the schedule needs --max-seconds > 0");
  ND_CHECK(in.step_seconds > 0, "fitting the schedule needs a measured step time, got " << in.step_seconds);
  const double forward_seconds = in.step_seconds / (3.0 * std::max(1, in.grad_accum));
  const double eval_seconds = 2.0 * in.eval_iters * forward_seconds;
  // Each step carries its share of the periodic evals; the final eval is kept out of the budget.
  const double per_step = in.step_seconds + (in.eval_interval > 0 ? eval_seconds / in.eval_interval : 0.0);
  const double left = in.budget_seconds - in.elapsed_seconds - eval_seconds;
  const int64_t more = std::max<int64_t>(0, static_cast<int64_t>(std::floor(left / per_step)));
  FittedSchedule out;
  out.max_iters = in.steps_done + more;
  out.lr_decay_iters = static_cast<int>(out.max_iters);
  out.warmup_iters = static_cast<int>(std::min<int64_t>(in.warmup_iters, out.max_iters / 10));
  return out;
}

}  // namespace nd::train
