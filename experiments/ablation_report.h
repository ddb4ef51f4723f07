// The ablation report: per variant the val losses over seeds, the difference from the control
// (percent and seed spreads), the first non-finite step, gradient-norm statistics, each seed's
// gradient-norm spikes, the verdict (verdict.h) and, for a variant judged other than ok, where its
// per-layer statistics first depart from the control's (layer_departure.h), written as OUT/report.md and OUT/report.json.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/layer_departure.h"
#include "experiments/run_metrics.h"
#include "experiments/verdict.h"

namespace nd::experiments {

struct AblationRun {
  uint64_t seed = 0;
  std::string dir;  // relative to the experiment's directory: "no-clip/seed1"
  RunMetrics metrics;
  RunSummary summary;
  Judgement judgement;
  LayerDeparture departure;  // against the control's run of the same seed (not for the control)
};

struct AblationVariant {
  std::string name;
  std::string settings;  // "warmup-iters = 0"; "" for the control
  std::vector<AblationRun> runs;
  SeedStats best_val, final_val;
  double diff_pct = 0;      // final val loss vs the control's, percent; NaN when either is not finite
  double diff_spreads = 0;  // the same difference in pooled seed spreads; NaN when the spread is 0
  int64_t first_nonfinite_step = -1;  // earliest over the seeds
  double grad_norm_median = 0, grad_norm_max = 0, zero_grad_share = 0;  // over every step of every seed
  Judgement judgement;
};

struct AblationReport {
  double unigram_loss = 0;
  std::vector<AblationVariant> variants;  // the control first
};

// Reads each run's OUT/<dir>/metrics.jsonl and judges. `variants` come with name, settings and
// runs' seed and dir filled in; the control is variants[0].
AblationReport build_ablation_report(const std::string& out_dir, std::vector<AblationVariant> variants,
                                     double unigram_loss);

void write_ablation_report(const std::string& out_dir, const AblationReport& report);

}  // namespace nd::experiments
