// The calls a model makes around each of its units (a transformer block, dist::FlatOptions::units)
// so that a sharded data-parallel engine can bind the unit's gradients to a staging buffer just
// before its backward (ZeRO 2) and gather its parameters just before they are read (ZeRO 3).
#pragma once

namespace nd::dist {

class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  // Around the unit's forward (also without gradients: evaluation).
  virtual void before_forward(int unit) = 0;
  virtual void after_forward(int unit) = 0;
  // From backward, when the gradient of the unit's output arrives: before any of the unit's ops
  // (a recomputed unit's rerun included) runs its backward.
  virtual void before_backward(int unit) = 0;
};

}  // namespace nd::dist
