// The loss scaler's state machine of loss_scaler.h.
#include "train/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tensor/error.h"

namespace nd::train {

LossScalerOptions parse_loss_scale(const std::string& text) {
  LossScalerOptions o;
  if (text == "dynamic") return o;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  ND_CHECK_INPUT(!text.empty() && end == text.c_str() + text.size() && std::isfinite(value) && value > 0.0,
                 "--loss-scale must be 'dynamic' or a positive number (1 = off), got '" << text << "'");
  o.dynamic = false;
  o.initial_scale = value;
  return o;
}

LossScaler::LossScaler(const LossScalerOptions& options) : options_(options) {
  ND_CHECK(std::isfinite(options.initial_scale) && options.initial_scale > 0.0,
           "loss scale must be positive and finite, got " << options.initial_scale);
  ND_CHECK(options.growth_interval >= 1, "loss scale growth interval must be >= 1");
  ND_CHECK(options.max_scale > 0.0, "loss scale maximum must be positive, got " << options.max_scale);
  state_.scale = options.dynamic ? std::min(options.initial_scale, options.max_scale) : options.initial_scale;
}

void LossScaler::set_state(const LossScalerState& state) {
  ND_CHECK(std::isfinite(state.scale) && state.scale > 0.0, "loss scale must be positive and finite, got " << state.scale);
  ND_CHECK(state.finite_in_a_row >= 0 && state.skipped_steps >= 0, "loss scaler counters must be >= 0");
  state_ = state;
  if (!options_.dynamic) state_.scale = options_.initial_scale;  // a fixed scale is the flag's, not the checkpoint's
  state_.scale = options_.dynamic ? std::min(state_.scale, options_.max_scale) : state_.scale;
}

bool LossScaler::update(bool local_overflow, dist::Comm* world) {
  int64_t overflow = local_overflow ? 1 : 0;
  if (world != nullptr && world->size() > 1) world->host_allreduce(&overflow, 1, dist::HostReduce::Max);
  if (overflow) {
    ++state_.skipped_steps;
    state_.finite_in_a_row = 0;
    if (options_.dynamic) state_.scale *= options_.backoff_factor;
    return true;
  }
  if (options_.dynamic && ++state_.finite_in_a_row >= options_.growth_interval) {
    state_.scale = std::min(state_.scale * options_.growth_factor, options_.max_scale);
    state_.finite_in_a_row = 0;
  }
  return false;
}

}  // namespace nd::train
