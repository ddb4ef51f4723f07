// Aggregating an ablation's runs and writing report.md and report.json.
#include "experiments/ablation_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "data/atomic_file.h"
#include "tensor/error.h"
#include "train/metrics.h"

namespace nd::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using train::json_number;

std::string fixed(double v, const char* fmt = "%.4f") {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string stats_json(const SeedStats& s) {
  return "{\"mean\":" + json_number(s.mean) + ",\"spread\":" + json_number(s.spread) + ",\"n\":" +
         std::to_string(s.n) + "}";
}

std::string step_or_null(int64_t step) { return step < 0 ? "null" : std::to_string(step); }

// Each seed's run verdict and summary, and the final val losses: what judge_variant reads.
VariantRuns variant_runs(const AblationVariant& v) {
  VariantRuns out;
  for (const AblationRun& run : v.runs) {
    Judgement j = run.judgement;
    j.why = "seed " + std::to_string(run.seed) + ": " + j.why;
    out.runs.push_back(j);
    out.summaries.push_back(run.summary);
  }
  out.final_val = v.final_val;
  return out;
}

// `control` is nullptr for the control itself, which is aggregated first.
void aggregate(AblationVariant& v, const AblationVariant* control_variant, double unigram) {
  std::vector<double> best, final_val, norms;
  int64_t steps = 0, zeros = 0;
  for (AblationRun& run : v.runs) {
    run.summary = summarize_run(run.metrics);
    run.judgement = judge_run(run.summary, unigram);
    best.push_back(run.summary.best_val_loss);
    final_val.push_back(run.summary.final_val_loss);
    if (run.summary.first_nonfinite_step >= 0 &&
        (v.first_nonfinite_step < 0 || run.summary.first_nonfinite_step < v.first_nonfinite_step))
      v.first_nonfinite_step = run.summary.first_nonfinite_step;
    for (const StepRecord& s : run.metrics.steps) {
      ++steps;
      if (!std::isfinite(s.grad_norm)) continue;
      norms.push_back(s.grad_norm);
      if (s.grad_norm <= kZeroGradNorm) ++zeros;
    }
  }
  v.best_val = seed_stats(best);
  v.final_val = seed_stats(final_val);
  std::sort(norms.begin(), norms.end());
  const size_t n = norms.size();
  v.grad_norm_median = n == 0 ? kNaN : (n % 2 ? norms[n / 2] : 0.5 * (norms[n / 2 - 1] + norms[n / 2]));
  v.grad_norm_max = n == 0 ? kNaN : norms.back();
  v.zero_grad_share = steps == 0 ? 0.0 : static_cast<double>(zeros) / static_cast<double>(steps);

  const SeedStats& control = control_variant ? control_variant->final_val : v.final_val;
  v.diff_pct = v.final_val.finite && control.finite ? 100.0 * (v.final_val.mean - control.mean) / control.mean : kNaN;
  const double spread = pooled_spread(v.final_val, control);
  v.diff_spreads = std::isfinite(v.diff_pct) && spread > 0 ? (v.final_val.mean - control.mean) / spread : kNaN;

  const VariantRuns own = variant_runs(v);
  v.judgement = control_variant ? judge_variant(own, variant_runs(*control_variant), false)
                                : judge_variant(own, own, true);
  if (v.judgement.verdict == Verdict::Ok) v.judgement.why = "trains";
}

// "1337 / 1338 / 1339": value(run) of each of a variant's runs, seed by seed; "-" for none.
template <typename F>
std::string per_seed(const AblationVariant& v, F value) {
  std::string out;
  for (size_t k = 0; k < v.runs.size(); ++k) out += (k ? " / " : "") + std::to_string(value(v.runs[k]));
  return out.empty() ? "-" : out;
}

// "0 / 16 / 2": a variant's gradient-norm spikes, seed by seed in the order of the header.
std::string spikes_per_seed(const AblationVariant& v) {
  return per_seed(v, [](const AblationRun& run) { return run.summary.grad_spikes; });
}

// Gradient-norm verdicts (unstable, dead by zero norms) read the logged steps; below this many a
// spike count or a share of zeros says little.
constexpr int64_t kMinLoggedStepsForNormVerdict = 20;

// Where the report's statistics are too thin to trust: one seed, gradient-norm verdicts from
// few logged steps. One line each, for report.md.
std::vector<std::string> thin_statistics_warnings(const AblationReport& report) {
  std::vector<std::string> out;
  const AblationVariant& control = report.variants.front();
  if (control.runs.size() == 1)
    out.push_back("one seed per variant: a verdict from one seed cannot tell a variant's effect from seed noise "
                  "(silent has no seed spread to measure against, only its " +
                  fixed(100 * kSilentMinRelative, "%.1f") + "% floor); run --seeds 3 or more");
  for (const AblationVariant& v : report.variants) {
    int64_t fewest = -1;
    for (const AblationRun& run : v.runs)
      if (fewest < 0 || run.summary.steps < fewest) fewest = run.summary.steps;
    if (fewest >= 0 && fewest < kMinLoggedStepsForNormVerdict)
      out.push_back(v.name + ": its gradient-norm measurements (spikes, zero-grad steps, unstable and dead) rest on " +
                    std::to_string(fewest) + " logged step(s), fewer than " +
                    std::to_string(kMinLoggedStepsForNormVerdict) + "; lower --log-interval or train longer");
  }
  return out;
}

std::string markdown(const AblationReport& report) {
  std::ostringstream md;
  const AblationVariant& control = report.variants.front();
  const std::string seeds = per_seed(control, [](const AblationRun& run) { return run.seed; });
  md << "# Ablation against a control\n\n"
     << control.runs.size() << " seed(s) per variant (" << seeds << "); same data order and initialisation per seed "
     << "across variants. Unigram baseline (val loss of token frequencies alone): " << fixed(report.unigram_loss)
     << ".\n\n"
     << "| variant | overrides | verdict | final val loss | best val loss | vs control | in seed spreads | "
     << "first non-finite step | grad norm median / max | grad-norm spikes per seed (" << seeds << ") | "
     << "zero-grad steps | why |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  const std::vector<std::string> warnings = thin_statistics_warnings(report);
  for (const AblationVariant& v : report.variants) {
    md << "| " << v.name << " | " << (v.settings.empty() ? "(base)" : v.settings) << " | **"
       << verdict_name(v.judgement.verdict) << "** | " << fixed(v.final_val.mean) << " ± "
       << fixed(v.final_val.spread) << " | " << fixed(v.best_val.mean) << " ± " << fixed(v.best_val.spread) << " | "
       << fixed(v.diff_pct, "%+.2f%%") << " | " << fixed(v.diff_spreads, "%+.1f") << " | "
       << (v.first_nonfinite_step < 0 ? "-" : std::to_string(v.first_nonfinite_step)) << " | "
       << fixed(v.grad_norm_median, "%.3g") << " / " << fixed(v.grad_norm_max, "%.3g") << " | " << spikes_per_seed(v)
       << " | " << fixed(100.0 * v.zero_grad_share, "%.0f%%") << " | " << v.judgement.why << " |\n";
  }
  md << "\nVerdicts (experiments/verdict.h): diverged = a non-finite loss or the loss ending above "
     << kDivergedRise << "x its start; dead = gradient norm zero on " << 100 * kDeadZeroShare
     << "% of steps, the loss moving less than " << 100 * kFrozenRelativeChange
     << "%, or a final val loss above " << 100 * kUnigramShare << "% of the unigram baseline; unstable = on more "
     << "than half of the seeds, at least " << kMinSpikes << " gradient-norm spikes above " << kSpikeFactor
     << "x the run's median (counted after the first " << 100 * kSettleShare << "% of steps, at least "
     << 100 * kSpikeShare << "% of them) and at least " << kSpikeControlRatio
     << "x the control's spikes on the same seed; silent = trains, but the final val loss is worse than the "
     << "control's by more than " << kSilentSpreads << " pooled seed spreads and " << 100 * kSilentMinRelative
     << "%. The control is judged diverged, dead or ok only: unstable and silent are measured against it, and its "
     << "spikes per seed are the baseline.\n";
  bool damage_header = false;
  for (size_t i = 1; i < report.variants.size(); ++i) {
    const AblationVariant& v = report.variants[i];
    if (v.judgement.verdict == Verdict::Ok) continue;
    if (!damage_header) {
      md << "\n## Where the damage starts\n\nPer seed, the first statistics step and in it the first layer where the "
         << "variant's block gradient norm or residual, attention or MLP output RMS (--layer-stats) departs from the "
         << "control's on the same seed by more than " << kDepartureFactor << "x either way.\n\n";
      damage_header = true;
    }
    for (const AblationRun& run : v.runs)
      md << "- " << v.name << " (" << verdict_name(v.judgement.verdict) << "), seed " << run.seed << ": "
         << describe(run.departure) << "\n";
  }
  if (!warnings.empty()) {
    md << "\n## Warnings: thin statistics\n\n";
    for (const std::string& w : warnings) md << "- **warning**: " << w << "\n";
  }
  return md.str();
}

std::string json(const AblationReport& report) {
  std::ostringstream js;
  js << "{\"unigram_val_loss\":" << json_number(report.unigram_loss) << ",\"control\":\""
     << report.variants.front().name << "\",\"variants\":[";
  for (size_t i = 0; i < report.variants.size(); ++i) {
    const AblationVariant& v = report.variants[i];
    js << (i ? "," : "") << "\n{\"name\":" << json_string(v.name) << ",\"overrides\":" << json_string(v.settings)
       << ",\"verdict\":\"" << verdict_name(v.judgement.verdict) << "\",\"why\":" << json_string(v.judgement.why)
       << ",\"final_val_loss\":" << stats_json(v.final_val) << ",\"best_val_loss\":" << stats_json(v.best_val)
       << ",\"diff_pct\":" << json_number(v.diff_pct) << ",\"diff_spreads\":" << json_number(v.diff_spreads)
       << ",\"first_nonfinite_step\":" << step_or_null(v.first_nonfinite_step)
       << ",\"grad_norm\":{\"median\":" << json_number(v.grad_norm_median) << ",\"max\":"
       << json_number(v.grad_norm_max) << ",\"zero_share\":" << json_number(v.zero_grad_share) << "},\"runs\":[";
    for (size_t k = 0; k < v.runs.size(); ++k) {
      const AblationRun& r = v.runs[k];
      js << (k ? "," : "") << "{\"seed\":" << r.seed << ",\"dir\":" << json_string(r.dir)
         << ",\"steps\":" << r.summary.steps << ",\"final_val_loss\":" << json_number(r.summary.final_val_loss)
         << ",\"best_val_loss\":" << json_number(r.summary.best_val_loss)
         << ",\"first_nonfinite_step\":" << step_or_null(r.summary.first_nonfinite_step)
         << ",\"grad_norm_median\":" << json_number(r.summary.grad_norm_median)
         << ",\"grad_norm_max\":" << json_number(r.summary.grad_norm_max)
         << ",\"zero_grad_share\":" << json_number(r.summary.zero_grad_share)
         << ",\"grad_spikes\":" << r.summary.grad_spikes << ",\"damage_start\":"
         << (r.departure.found ? "{\"step\":" + std::to_string(r.departure.step) + ",\"layer\":" +
                                     std::to_string(r.departure.layer) + ",\"stat\":\"" + r.departure.stat + "\"}"
                               : std::string("null"))
         << ",\"spike_steps_counted\":" << r.summary.spike_steps_counted << ",\"verdict\":\""
         << verdict_name(r.judgement.verdict) << "\",\"why\":" << json_string(r.judgement.why) << "}";
    }
    js << "]}";
  }
  js << "\n]}\n";
  return js.str();
}

}  // namespace

AblationReport build_ablation_report(const std::string& out_dir, std::vector<AblationVariant> variants,
                                     double unigram_loss) {
  ND_CHECK(!variants.empty(), "an ablation needs its control");
  AblationReport report;
  report.unigram_loss = unigram_loss;
  for (AblationVariant& v : variants)
    for (AblationRun& run : v.runs) run.metrics = read_run_metrics(out_dir + "/" + run.dir + "/metrics.jsonl");
  aggregate(variants[0], nullptr, unigram_loss);
  for (size_t i = 1; i < variants.size(); ++i) {
    aggregate(variants[i], &variants[0], unigram_loss);
    for (size_t k = 0; k < variants[i].runs.size() && k < variants[0].runs.size(); ++k)
      variants[i].runs[k].departure = first_layer_departure(variants[i].runs[k].metrics, variants[0].runs[k].metrics);
  }
  report.variants = std::move(variants);
  return report;
}

void write_ablation_report(const std::string& out_dir, const AblationReport& report) {
  write_file_atomically(out_dir + "/report.md", markdown(report));
  write_file_atomically(out_dir + "/report.json", json(report));
}

}  // namespace nd::experiments
