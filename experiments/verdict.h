// What an ablation run did, measured from its metrics, and the verdict on it: small pure
// functions, each rule with its thresholds below, so a verdict can be traced to numbers.
//   diverged  a non-finite loss, or the loss ends far above where it started
//   dead      gradients at zero, the loss frozen, or no better than the unigram baseline
//   unstable  gradient-norm spikes on most seeds, far more than the control's on the same seeds
//   silent    trains normally but ends worse than the control beyond the seed spread
//   ok        none of these
// Severity in that order: a variant's verdict is the first rule that holds. diverged and dead are
// judged per run; unstable and silent compare a variant's seeds with the control's, so the
// control itself is only ever diverged, dead or ok: ok says it is a usable reference, and its
// spikes per seed are the baseline a variant's spikes are measured against.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/run_metrics.h"

namespace nd::experiments {

// Thresholds of the rules.
// diverged: the mean loss of the last tenth of steps is above this multiple of the first loss.
constexpr double kDivergedRise = 1.5;
// dead: a gradient norm at or below kZeroGradNorm counts as zero; dead when at least
// kDeadZeroShare of the steps are at zero.
constexpr double kZeroGradNorm = 1e-8;
constexpr double kDeadZeroShare = 0.5;
// dead: frozen when the loss of the last tenth moved less than this share of the first loss.
constexpr double kFrozenRelativeChange = 0.01;
// dead: the final val loss is above this share of the unigram baseline (the cross-entropy of
// predicting each token by its frequency alone): the model ignores its context.
constexpr double kUnigramShare = 0.98;
// unstable: a spike is a gradient norm above kSpikeFactor x the run's median norm, counted after
// the first kSettleShare of the steps (early norms are large in any run). A run spikes
// repeatedly with at least kMinSpikes spikes making at least kSpikeShare of the counted steps.
// A variant is unstable when, on more than half of its seeds, its run spikes repeatedly AND has
// at least kSpikeControlRatio x the control's spikes on the same seed (run k of every variant
// trains with seed --seed + k; spikes are compared per counted step, should the run lengths
// differ). One spiky seed of three is not enough, and neither are spikes the control shows too:
// large batches without warmup spike now and then in any run (the GPU control had 3 on one seed).
constexpr double kSpikeFactor = 5.0;
constexpr double kSettleShare = 0.1;
constexpr int64_t kMinSpikes = 3;
constexpr double kSpikeShare = 0.005;
constexpr double kSpikeControlRatio = 3.0;
// silent: worse than the control by more than kSilentSpreads pooled seed spreads and by more
// than kSilentMinRelative of the control's loss (the floor matters with one seed: no spread).
constexpr double kSilentSpreads = 2.0;
constexpr double kSilentMinRelative = 0.005;

enum class Verdict { Ok, Silent, Unstable, Dead, Diverged };
const char* verdict_name(Verdict v);

struct RunSummary {
  int64_t steps = 0;                  // step records read
  double first_loss = 0;              // loss of the first step record
  double tail_loss = 0;               // mean loss of the last tenth of the step records
  double final_val_loss = 0;          // the last eval's; NaN when none
  double best_val_loss = 0;           // NaN when no finite eval
  int64_t first_nonfinite_step = -1;  // step of the first non-finite loss, -1 for none
  double grad_norm_median = 0;        // over finite norms; NaN when none
  double grad_norm_max = 0;
  double zero_grad_share = 0;         // share of steps with a norm <= kZeroGradNorm
  int64_t grad_spikes = 0;            // see kSpikeFactor
  int64_t spike_steps_counted = 0;    // steps after the settling share
};

RunSummary summarize_run(const RunMetrics& m);

struct Judgement {
  Verdict verdict = Verdict::Ok;
  std::string why;  // the measurement behind the verdict, e.g. "loss non-finite at step 12"
};

// Each rule: true and `why` set when it holds. `unigram_loss` <= 0 turns that test off.
bool is_diverged(const RunSummary& r, std::string* why);
bool is_dead(const RunSummary& r, double unigram_loss, std::string* why);

// The run's own verdict: diverged, dead or ok (unstable and silent need the control).
Judgement judge_run(const RunSummary& r, double unigram_loss);

// One run's half of the unstable rule: at least kMinSpikes spikes, at least kSpikeShare of its
// counted steps.
bool spikes_repeatedly(const RunSummary& r);
// The unstable rule over seeds: `variant` and `control` hold the runs of seed index 0, 1, ...
// (the same length; nd::Error otherwise).
bool is_unstable(const std::vector<RunSummary>& variant, const std::vector<RunSummary>& control, std::string* why);

// Mean and sample standard deviation over seeds; `finite` false when any value is not finite
// (mean and spread are then NaN).
struct SeedStats {
  int n = 0;
  double mean = 0;
  double spread = 0;
  bool finite = true;
};
SeedStats seed_stats(const std::vector<double>& values);
// sqrt((s_a^2 + s_b^2) / 2): the spread to measure a difference between two variants in.
double pooled_spread(const SeedStats& a, const SeedStats& b);

bool is_silent(const SeedStats& variant_final, const SeedStats& control_final, std::string* why);

// What judge_variant needs of a variant or of the control, in seed-index order.
struct VariantRuns {
  std::vector<Judgement> runs;         // judge_run of each seed's run
  std::vector<RunSummary> summaries;   // each seed's run; may be empty where no spikes are judged
  SeedStats final_val;                 // final val loss over the seeds
};

// A variant's verdict: the most severe of its runs' verdicts (diverged, dead); when all are ok
// and it is not the control, unstable if is_unstable holds, else silent if is_silent holds.
Judgement judge_variant(const VariantRuns& variant, const VariantRuns& control, bool is_control);

}  // namespace nd::experiments
