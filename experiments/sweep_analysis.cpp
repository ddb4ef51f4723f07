// Law breaks and fits over a sweep's points.
#include "experiments/sweep_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace nd::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr uint64_t kBootstrapSeed = 20220329;  // fixed: a report is reproducible

double median_of(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void flag_law_breaks(std::vector<SweepPoint>& points) {
  for (size_t i = 0; i < points.size(); ++i) {
    SweepPoint& p = points[i];
    const SweepPoint* beaten_by = nullptr;
    for (const SweepPoint& q : points)
      if (q.non_embedding_params < p.non_embedding_params && q.final_val_loss < p.final_val_loss &&
          (beaten_by == nullptr || q.final_val_loss < beaten_by->final_val_loss))
        beaten_by = &q;
    if (beaten_by == nullptr) continue;
    std::vector<double> others;
    for (size_t j = 0; j < points.size(); ++j)
      if (j != i) others.push_back(points[j].tokens_per_param);
    const double median = median_of(others);
    char why[400];
    int n = std::snprintf(why, sizeof(why), "%lld params but val loss %.4f above %s's %.4f (%lld params): ",
                          static_cast<long long>(p.non_embedding_params), p.final_val_loss, beaten_by->name.c_str(),
                          beaten_by->final_val_loss, static_cast<long long>(beaten_by->non_embedding_params));
    if (p.tokens_per_param * kStarvedRatio < median) {
      std::snprintf(why + n, sizeof(why) - n, "starved of tokens, %.3g tokens/param vs the others' median %.3g (%.0fx fewer)",
                    p.tokens_per_param, median, median / p.tokens_per_param);
    } else {
      std::snprintf(why + n, sizeof(why) - n,
                    "not explained by its token budget (%.3g tokens/param, the others' median %.3g): check the "
                    "learning rate and the depth/width shape at this size",
                    p.tokens_per_param, median);
    }
    p.breaks_law = true;
    p.why = why;
  }
}

SweepFit fit_sweep(std::vector<SweepPoint>& points, double huber_delta, int resamples) {
  SweepFit fit;
  fit.huber_delta = huber_delta;
  std::vector<double> n, loss;
  auto gather = [&](bool skip_breaks) {
    n.clear();
    loss.clear();
    for (SweepPoint& p : points) {
      p.in_fit = std::isfinite(p.final_val_loss) && p.final_val_loss > 0 && !(skip_breaks && p.breaks_law);
      if (!p.in_fit) continue;
      n.push_back(static_cast<double>(p.non_embedding_params));
      loss.push_back(p.final_val_loss);
    }
  };
  gather(true);
  if (n.size() < 2) gather(false);
  for (SweepPoint& p : points)
    if (!std::isfinite(p.final_val_loss)) p.why = "no finite val loss (diverged): left out of the fit";

  fit.pure = fit_power_law(n, loss, false, huber_delta);
  fit.offset = fit_power_law(n, loss, true, huber_delta);
  fit.pure_alpha = bootstrap_alpha(n, loss, false, huber_delta, resamples, kBootstrapSeed);
  fit.offset_alpha = bootstrap_alpha(n, loss, true, huber_delta, resamples, kBootstrapSeed);
  fit.pure_max_error_pct = fit.offset_max_error_pct = 0;
  for (SweepPoint& p : points) {
    const double size = static_cast<double>(p.non_embedding_params);
    p.pure_prediction = fit.pure.ok ? fit.pure.predict(size) : kNaN;
    p.offset_prediction = fit.offset.ok ? fit.offset.predict(size) : kNaN;
    p.pure_error_pct = 100.0 * (p.pure_prediction - p.final_val_loss) / p.final_val_loss;
    p.offset_error_pct = 100.0 * (p.offset_prediction - p.final_val_loss) / p.final_val_loss;
    if (!p.in_fit) continue;
    if (std::isfinite(p.pure_error_pct))
      fit.pure_max_error_pct = std::max(fit.pure_max_error_pct, std::fabs(p.pure_error_pct));
    if (std::isfinite(p.offset_error_pct))
      fit.offset_max_error_pct = std::max(fit.offset_max_error_pct, std::fabs(p.offset_error_pct));
  }
  return fit;
}

}  // namespace nd::experiments
