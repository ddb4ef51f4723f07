// Where a variant's damage starts: the first statistics step, and in it the first layer, where the
// variant's per-layer statistics (--layer-stats: block gradient norm, residual, attention and MLP
// output RMS) depart from the control's on the same seed by more than kDepartureFactor either way.
#pragma once
#include <cstdint>
#include <string>

#include "experiments/run_metrics.h"

namespace nd::experiments {

constexpr double kDepartureFactor = 10.0;

struct LayerDeparture {
  bool compared = false;  // both runs have statistics at a common step
  bool found = false;
  int64_t step = 0;
  int layer = 0;
  std::string stat;       // grad_norm, resid_rms, attn_rms, mlp_rms
  double value = 0, control = 0;
  int64_t last_step = 0;  // the last common statistics step looked at
};

// Steps in ascending order, layers in ascending order within a step, the statistics in the order
// above. A value departs when value / control > kDepartureFactor or < 1 / kDepartureFactor, or when
// one of the two is non-finite or zero and the other is not.
LayerDeparture first_layer_departure(const RunMetrics& variant, const RunMetrics& control);

// One line for report.md: "step 40, layer 3: grad_norm 2.1e-09 vs 0.031 (1.5e+07x lower)",
// "no layer departs 10x up to step 200", or "no per-layer statistics (--layer-stats)".
std::string describe(const LayerDeparture& d);

}  // namespace nd::experiments
