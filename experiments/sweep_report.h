// The files of a sweep: OUT/sweep.csv (one row per model), OUT/fit.json (both laws, their
// alpha intervals, the points) and OUT/report.md (the same for a person).
#pragma once
#include <string>
#include <vector>

#include "experiments/sweep_analysis.h"

namespace nd::experiments {

void write_sweep_report(const std::string& out_dir, const std::vector<SweepPoint>& points, const SweepFit& fit);

}  // namespace nd::experiments
