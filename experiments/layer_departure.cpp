// The first departure of layer_departure.h: a walk over the statistics steps both runs recorded.
#include "experiments/layer_departure.h"

#include <cmath>
#include <cstdio>

namespace nd::experiments {
namespace {

bool departs(double v, double c) {
  const bool v_ok = std::isfinite(v) && v != 0.0, c_ok = std::isfinite(c) && c != 0.0;
  if (!v_ok || !c_ok) return v_ok != c_ok;
  const double r = std::abs(v / c);
  return r > kDepartureFactor || r < 1.0 / kDepartureFactor;
}

std::string g3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", x);
  return buf;
}

}  // namespace

LayerDeparture first_layer_departure(const RunMetrics& variant, const RunMetrics& control) {
  LayerDeparture d;
  size_t j = 0;
  for (const LayerStatsRecord& v : variant.layer_stats) {
    while (j < control.layer_stats.size() && control.layer_stats[j].step < v.step) ++j;
    if (j == control.layer_stats.size()) break;
    const LayerStatsRecord& c = control.layer_stats[j];
    if (c.step != v.step) continue;
    d.compared = true;
    d.last_step = v.step;
    for (size_t l = 0; l < v.blocks.size() && l < c.blocks.size(); ++l) {
      const BlockStatsRecord &bv = v.blocks[l], &bc = c.blocks[l];
      const std::pair<const char*, std::pair<double, double>> stats[] = {{"grad_norm", {bv.grad_norm, bc.grad_norm}},
                                                                         {"resid_rms", {bv.resid_rms, bc.resid_rms}},
                                                                         {"attn_rms", {bv.attn_rms, bc.attn_rms}},
                                                                         {"mlp_rms", {bv.mlp_rms, bc.mlp_rms}}};
      for (const auto& [name, values] : stats) {
        if (!departs(values.first, values.second)) continue;
        d.found = true;
        d.step = v.step;
        d.layer = static_cast<int>(l);
        d.stat = name;
        d.value = values.first;
        d.control = values.second;
        return d;
      }
    }
  }
  return d;
}

std::string describe(const LayerDeparture& d) {
  if (!d.compared) return "no per-layer statistics at a step both runs recorded (train with --layer-stats N)";
  if (!d.found)
    return "no layer departs " + g3(kDepartureFactor) + "x from the control up to step " + std::to_string(d.last_step);
  std::string how;
  if (std::isfinite(d.value) && std::isfinite(d.control) && d.value != 0 && d.control != 0) {
    const double r = std::abs(d.value / d.control);
    how = " (" + g3(r >= 1 ? r : 1 / r) + "x " + (r >= 1 ? "higher" : "lower") + ")";
  }
  return "step " + std::to_string(d.step) + ", layer " + std::to_string(d.layer) + ": " + d.stat + " " + g3(d.value) +
         " vs " + g3(d.control) + how;
}

}  // namespace nd::experiments
