// The measurements of a run and the rules on them (thresholds in verdict.h).
#include "experiments/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "tensor/error.h"

namespace nd::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median_of(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c);
  return buf;
}

// The last tenth of n records, at least one.
size_t tail_count(size_t n) { return std::max<size_t>(1, n / 10); }

// Spikes per counted step: counts of runs of different lengths compare as rates.
double spike_rate(const RunSummary& r) {
  return r.spike_steps_counted > 0 ? static_cast<double>(r.grad_spikes) / static_cast<double>(r.spike_steps_counted)
                                   : 0.0;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Ok: return "ok";
    case Verdict::Silent: return "silent";
    case Verdict::Unstable: return "unstable";
    case Verdict::Dead: return "dead";
    case Verdict::Diverged: return "diverged";
  }
  return "?";
}

RunSummary summarize_run(const RunMetrics& m) {
  RunSummary r;
  r.steps = static_cast<int64_t>(m.steps.size());
  r.first_loss = m.steps.empty() ? kNaN : m.steps.front().loss;
  r.tail_loss = kNaN;
  if (!m.steps.empty()) {
    const size_t tail = tail_count(m.steps.size());
    double sum = 0;
    for (size_t i = m.steps.size() - tail; i < m.steps.size(); ++i) sum += m.steps[i].loss;
    r.tail_loss = sum / static_cast<double>(tail);
  }
  r.final_val_loss = m.evals.empty() ? kNaN : m.evals.back().val_loss;
  r.best_val_loss = kNaN;
  for (const EvalRecord& e : m.evals)
    if (std::isfinite(e.val_loss) && !(e.val_loss >= r.best_val_loss)) r.best_val_loss = e.val_loss;

  std::vector<double> norms, settled;
  int64_t zeros = 0;
  const size_t settle = static_cast<size_t>(kSettleShare * static_cast<double>(m.steps.size()));
  for (size_t i = 0; i < m.steps.size(); ++i) {
    const StepRecord& s = m.steps[i];
    if (r.first_nonfinite_step < 0 && !std::isfinite(s.loss)) r.first_nonfinite_step = s.step;
    if (!std::isfinite(s.grad_norm)) continue;
    norms.push_back(s.grad_norm);
    if (s.grad_norm <= kZeroGradNorm) ++zeros;
    if (i >= settle) settled.push_back(s.grad_norm);
  }
  r.grad_norm_median = median_of(norms);
  r.grad_norm_max = norms.empty() ? kNaN : *std::max_element(norms.begin(), norms.end());
  r.zero_grad_share = m.steps.empty() ? 0.0 : static_cast<double>(zeros) / static_cast<double>(m.steps.size());
  const double settled_median = median_of(settled);
  r.spike_steps_counted = static_cast<int64_t>(settled.size());
  for (double n : settled)
    if (settled_median > kZeroGradNorm && n > kSpikeFactor * settled_median) ++r.grad_spikes;
  return r;
}

bool is_diverged(const RunSummary& r, std::string* why) {
  if (r.first_nonfinite_step >= 0) {
    *why = "loss non-finite at step " + std::to_string(r.first_nonfinite_step);
    return true;
  }
  if (r.steps >= 2 && r.tail_loss > kDivergedRise * r.first_loss) {
    *why = format("loss rose from %.4f to %.4f", r.first_loss, r.tail_loss);
    return true;
  }
  return false;
}

bool is_dead(const RunSummary& r, double unigram_loss, std::string* why) {
  if (r.steps > 0 && r.zero_grad_share >= kDeadZeroShare) {
    *why = format("gradient norm zero on %.0f%% of steps", 100.0 * r.zero_grad_share);
    return true;
  }
  if (r.steps >= 2 && std::fabs(r.tail_loss - r.first_loss) < kFrozenRelativeChange * std::fabs(r.first_loss)) {
    *why = format("loss frozen: %.4f at the start, %.4f at the end", r.first_loss, r.tail_loss);
    return true;
  }
  if (unigram_loss > 0 && std::isfinite(r.final_val_loss) && r.final_val_loss > kUnigramShare * unigram_loss) {
    *why = format("val loss %.4f is no better than the unigram baseline %.4f (context unused)", r.final_val_loss,
                  unigram_loss);
    return true;
  }
  return false;
}

Judgement judge_run(const RunSummary& r, double unigram_loss) {
  Judgement j;
  if (is_diverged(r, &j.why)) j.verdict = Verdict::Diverged;
  else if (is_dead(r, unigram_loss, &j.why)) j.verdict = Verdict::Dead;
  else j.why = "trains";
  return j;
}

bool spikes_repeatedly(const RunSummary& r) {
  return r.grad_spikes >= kMinSpikes &&
         static_cast<double>(r.grad_spikes) >= kSpikeShare * static_cast<double>(r.spike_steps_counted);
}

bool is_unstable(const std::vector<RunSummary>& variant, const std::vector<RunSummary>& control, std::string* why) {
  ND_CHECK(variant.size() == control.size(), "the unstable rule compares seed by seed, but the variant has "
                                                 << variant.size() << " run(s) and the control " << control.size());
  size_t beyond = 0;
  std::string own, theirs;
  for (size_t k = 0; k < variant.size(); ++k) {
    const RunSummary &v = variant[k], &c = control[k];
    if (spikes_repeatedly(v) && spike_rate(v) >= kSpikeControlRatio * spike_rate(c)) ++beyond;
    own += (k ? ", " : "") + std::to_string(v.grad_spikes);
    theirs += (k ? ", " : "") + std::to_string(c.grad_spikes);
  }
  if (variant.empty() || 2 * beyond <= variant.size()) return false;
  *why = "gradient-norm spikes above " + format("%.0fx", kSpikeFactor) + " the median on " + std::to_string(beyond) +
         " of " + std::to_string(variant.size()) + " seeds, each at least " + format("%.0fx", kSpikeControlRatio) +
         " the control's: " + own + " vs the control's " + theirs;
  return true;
}

SeedStats seed_stats(const std::vector<double>& values) {
  SeedStats s;
  s.n = static_cast<int>(values.size());
  for (double v : values) s.finite = s.finite && std::isfinite(v);
  if (!s.finite || values.empty()) {
    s.mean = s.spread = kNaN;
    s.finite = s.finite && !values.empty();
    return s;
  }
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.spread = s.n > 1 ? std::sqrt(sq / (s.n - 1)) : 0.0;
  return s;
}

double pooled_spread(const SeedStats& a, const SeedStats& b) {
  return std::sqrt(0.5 * (a.spread * a.spread + b.spread * b.spread));
}

bool is_silent(const SeedStats& v, const SeedStats& c, std::string* why) {
  if (!v.finite || !c.finite) return false;
  const double diff = v.mean - c.mean, spread = pooled_spread(v, c);
  if (diff > kSilentSpreads * spread && diff > kSilentMinRelative * std::fabs(c.mean)) {
    *why = format("final val loss %.4f vs control %.4f (+%.2f%%)", v.mean, c.mean, 100.0 * diff / c.mean);
    if (spread > 0) *why += format(", %.1f seed spreads", diff / spread);
    return true;
  }
  return false;
}

Judgement judge_variant(const VariantRuns& variant, const VariantRuns& control, bool is_control) {
  Judgement worst;
  worst.why = "trains";
  for (const Judgement& j : variant.runs)
    if (static_cast<int>(j.verdict) > static_cast<int>(worst.verdict)) worst = j;
  if (worst.verdict != Verdict::Ok || is_control) return worst;
  if (is_unstable(variant.summaries, control.summaries, &worst.why)) worst.verdict = Verdict::Unstable;
  else if (is_silent(variant.final_val, control.final_val, &worst.why)) worst.verdict = Verdict::Silent;
  return worst;
}

}  // namespace nd::experiments
