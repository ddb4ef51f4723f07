// The schedule's closed form (lr_schedule.h) decides: the steps run are 0 .. max_iters - 1; the
// warmup reaches --lr at step warmup_iters (when a decay span follows it, or the schedule is
// constant), the decay reaches --min-lr at step lr_decay_iters.
#include "train/schedule_warnings.h"

#include "train/lr_schedule.h"

namespace nd::train {

std::vector<std::string> schedule_warnings(const TrainConfig& c) {
  std::vector<std::string> out;
  const TrainConfig::Schedule& s = c.schedule;
  if (s.fit_schedule || s.max_iters == 0 || c.optim.lr == c.optim.min_lr) return out;
  const bool constant = s.lr_schedule == LrShape::Constant;
  const std::string warmup = "--warmup-iters " + std::to_string(s.warmup_iters);
  const std::string steps = "--max-iters " + std::to_string(s.max_iters);
  const std::string decay = "--lr-decay-iters " + std::to_string(s.lr_decay_iters);
  if (s.warmup_iters >= s.max_iters)
    out.push_back(warmup + " >= " + steps + ": the run ends inside the warmup and the lr never reaches --lr; " +
                  "a shorter --warmup-iters would");
  else if (!constant && s.lr_decay_iters <= s.warmup_iters)
    out.push_back(decay + " <= " + warmup + ": the lr drops to --min-lr as the warmup ends and never reaches --lr");
  if (!constant && s.lr_decay_iters > s.max_iters)
    out.push_back(decay + " > " + steps + ": the run ends before the " + lr_shape_name(s.lr_schedule) +
                  " decay reaches --min-lr (-1 = decay over the run)");
  return out;
}

}  // namespace nd::train
