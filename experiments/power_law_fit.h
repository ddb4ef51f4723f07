// Robust fits of a scaling law to (N, L) points: L(N) = a N^-alpha, and L(N) = E + a N^-alpha.
// As in Hoffmann et al. 2022 (Chinchilla, approach 3) the residuals are taken in log space,
//   r_i = log L_hat(N_i) - log L_i,   L_hat = exp(LSE(log E, log a - alpha log N)),
// and their Huber loss is minimised, here by Levenberg-Marquardt on iteratively reweighted
// least squares (Huber weights), from a grid of starts for the offset law. No dependencies.
#pragma once
#include <cstdint>
#include <vector>

namespace nd::experiments {

struct PowerLawFit {
  bool with_offset = false;
  double a = 0;
  double alpha = 0;
  double E = 0;          // 0 for the pure power law
  double objective = 0;  // sum of Huber losses of the log residuals at the optimum
  bool ok = false;       // false when there were too few distinct points to fit
  double predict(double n) const;
};

// Needs at least 2 distinct N for the pure law and 3 for the offset law (else ok = false).
// `huber_delta`: residuals beyond it count linearly (1e-3 in Hoffmann et al.).
PowerLawFit fit_power_law(const std::vector<double>& n, const std::vector<double>& loss, bool with_offset,
                          double huber_delta);

struct BootstrapInterval {
  double lo = 0, hi = 0;  // percentile interval of alpha
  int resamples = 0;      // resamples that could be fitted
};

// Refits on `resamples` resamples of the points with replacement (fixed `seed`), and returns the
// central `level` percentile interval of alpha.
BootstrapInterval bootstrap_alpha(const std::vector<double>& n, const std::vector<double>& loss, bool with_offset,
                                  double huber_delta, int resamples, uint64_t seed, double level = 0.95);

}  // namespace nd::experiments
