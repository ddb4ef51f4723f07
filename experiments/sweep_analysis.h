// What a scaling sweep measured and what follows from it: each model's point (non-embedding
// parameters N, tokens, final val loss), the points that break the law (a larger model with a
// higher loss than a smaller one) with the likeliest reason, and the two fitted laws with a
// bootstrap interval for alpha and each point's error against them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/power_law_fit.h"

namespace nd::experiments {

// A law-breaking point whose tokens per parameter are this many times below the median of the
// other points is called starved of tokens.
constexpr double kStarvedRatio = 4.0;

struct SweepPoint {
  std::string name;
  int n_layer = 0, n_head = 0, n_embd = 0;
  int64_t params = 0;                // all parameters
  int64_t non_embedding_params = 0;  // N of the law: without token and position embeddings
  double lr = 0;  // peak learning rate of the run
  int64_t steps = 0;
  int64_t tokens = 0;
  double tokens_per_param = 0;  // tokens / N
  int seeds = 1;
  double final_val_loss = 0;         // the last eval's, mean over seeds; NaN when a run diverged before one
  double final_val_loss_spread = 0;  // sample standard deviation over seeds (0 for one seed)
  double best_val_loss = 0;          // mean over seeds
  // Filled by flag_law_breaks and fit_sweep.
  bool breaks_law = false;
  std::string why;    // why it breaks the law, or why it is left out of the fit
  bool in_fit = false;
  double pure_prediction = 0, pure_error_pct = 0;      // against L = a N^-alpha
  double offset_prediction = 0, offset_error_pct = 0;  // against L = E + a N^-alpha
};

// Marks point i when some point j has fewer parameters and a lower final val loss, and says
// why: starved of tokens (kStarvedRatio), or not explained by its token budget.
void flag_law_breaks(std::vector<SweepPoint>& points);

struct SweepFit {
  PowerLawFit pure, offset;
  BootstrapInterval pure_alpha, offset_alpha;
  double pure_max_error_pct = 0, offset_max_error_pct = 0;  // over the fitted points
  double huber_delta = 0;
};

// Fits both laws over the points that are finite and do not break the law (all finite points
// when fewer than two remain), and fills every point's predictions and errors (percent of its
// loss). Bootstrap over `resamples` resamples with a fixed seed.
SweepFit fit_sweep(std::vector<SweepPoint>& points, double huber_delta, int resamples);

}  // namespace nd::experiments
