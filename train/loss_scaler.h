// The loss scaler of fp16 training (PyTorch's GradScaler policy): the loss is multiplied by a scale
// before backward so small gradients survive fp16's range, the gradients are divided by it before
// clipping, and a step whose gradients overflowed (an inf or NaN anywhere, on any rank) is skipped.
// Dynamic: the scale starts at 65536, halves on every overflow and doubles after 2000 finite steps
// in a row. Fixed (`--loss-scale X`): the scale never moves, overflowing steps are still skipped;
// X = 1 is no scaling at all. A dynamic scale never exceeds max_scale (unbounded unless set). The
// backward's seed (scale / grad-accum) is f32, like the loss (ops::loss_dtype), so any scale f32
// holds is a finite seed.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "dist/comm/comm.h"

namespace nd::train {

struct LossScalerOptions {
  bool dynamic = true;
  double initial_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // finite steps in a row before the scale grows
  double max_scale = INFINITY;     // dynamic only: the initial scale and growth stop here
};

// What a checkpoint keeps of the scaler, so a resumed run continues its state machine.
struct LossScalerState {
  double scale = 1.0;
  int64_t finite_in_a_row = 0;  // finite steps since the last change of scale
  int64_t skipped_steps = 0;    // overflowing steps over the whole run
};

// --loss-scale: "dynamic", or a fixed positive number ("1" = off). nd::Error (input) otherwise.
LossScalerOptions parse_loss_scale(const std::string& text);

class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& options = LossScalerOptions{});

  double scale() const { return state_.scale; }
  bool enabled() const { return options_.dynamic || state_.scale != 1.0; }
  bool dynamic() const { return options_.dynamic; }
  const LossScalerState& state() const { return state_; }
  void set_state(const LossScalerState& state);  // nd::Error on a non-positive or non-finite scale

  // After a step's gradients are final: `local_overflow` is whether this rank saw an inf or NaN.
  // The flag is agreed over `world` (one all-reduce of a flag, max; null = one rank), so every
  // rank takes the same branch. Returns true when the step must be skipped (any rank overflowed);
  // the scale then backs off (dynamic), else it counts the finite step and grows on the interval.
  bool update(bool local_overflow, dist::Comm* world);

 private:
  LossScalerOptions options_;
  LossScalerState state_;
};

}  // namespace nd::train
