// Warmup + cosine schedule; see lr_schedule.h for the closed form.
#include "train/lr_schedule.h"

#include <cmath>

namespace nd::train {

double LrSchedule::at(int it) const {
  if (it < warmup_iters) return lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
  if (it > lr_decay_iters || lr_decay_iters <= warmup_iters) return min_lr;
  double ratio = static_cast<double>(it - warmup_iters) / static_cast<double>(lr_decay_iters - warmup_iters);
  double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));
  return min_lr + coeff * (lr - min_lr);
}

}  // namespace nd::train
