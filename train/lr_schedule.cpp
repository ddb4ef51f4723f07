// Warmup and the decay shapes; see lr_schedule.h for the closed forms.
#include "train/lr_schedule.h"

#include <cmath>

#include "tensor/error.h"

namespace nd::train {

LrShape parse_lr_shape(const std::string& text) {
  if (text == "cosine") return LrShape::Cosine;
  if (text == "linear") return LrShape::Linear;
  if (text == "wsd") return LrShape::Wsd;
  if (text == "constant") return LrShape::Constant;
  ND_FAIL_INPUT("--lr-schedule must be cosine, linear, wsd or constant, got '" << text << "'");
}

const char* lr_shape_name(LrShape shape) {
  switch (shape) {
    case LrShape::Cosine: return "cosine";
    case LrShape::Linear: return "linear";
    case LrShape::Wsd: return "wsd";
    case LrShape::Constant: return "constant";
  }
  return "?";
}

double LrSchedule::at(int it) const {
  if (it < warmup_iters) return lr * static_cast<double>(it + 1) / static_cast<double>(warmup_iters + 1);
  if (shape == LrShape::Constant) return lr;
  if (it > lr_decay_iters || lr_decay_iters <= warmup_iters) return min_lr;
  const double r = static_cast<double>(it - warmup_iters) / static_cast<double>(lr_decay_iters - warmup_iters);
  switch (shape) {
    case LrShape::Cosine: return min_lr + 0.5 * (1.0 + std::cos(M_PI * r)) * (lr - min_lr);
    case LrShape::Linear: return lr + (min_lr - lr) * r;
    case LrShape::Wsd: {
      const double stable = 1.0 - decay_frac;
      if (r <= stable || decay_frac <= 0.0) return lr;
      return lr + (min_lr - lr) * (r - stable) / decay_frac;
    }
    case LrShape::Constant: break;
  }
  return lr;
}

}  // namespace nd::train
