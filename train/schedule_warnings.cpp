// The schedule's closed form (lr_schedule.h) decides: the steps run are 0 .. max_iters - 1; the
// warmup reaches --lr at step warmup_iters (when a cosine follows it), the cosine reaches --min-lr
// at step lr_decay_iters.
#include "train/schedule_warnings.h"

namespace nd::train {

std::vector<std::string> schedule_warnings(const TrainConfig& c) {
  std::vector<std::string> out;
  const TrainConfig::Schedule& s = c.schedule;
  if (s.fit_schedule || s.max_iters == 0 || c.optim.lr == c.optim.min_lr) return out;
  const std::string warmup = "--warmup-iters " + std::to_string(s.warmup_iters);
  const std::string steps = "--max-iters " + std::to_string(s.max_iters);
  const std::string decay = "--lr-decay-iters " + std::to_string(s.lr_decay_iters);
  if (s.warmup_iters >= s.max_iters)
    out.push_back(warmup + " >= " + steps + ": the run ends inside the warmup and the lr never reaches --lr; " +
                  "a shorter --warmup-iters would");
  else if (s.lr_decay_iters <= s.warmup_iters)
    out.push_back(decay + " <= " + warmup + ": the lr drops to --min-lr as the warmup ends and never reaches --lr");
  if (s.lr_decay_iters > s.max_iters)
    out.push_back(decay + " > " + steps + ": the run ends before the cosine decay reaches --min-lr (-1 = decay " +
                  "over the run)");
  return out;
}

}  // namespace nd::train
