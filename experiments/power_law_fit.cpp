// Levenberg-Marquardt with Huber weights (IRLS) on log residuals. Internally log N is centred
// (x = log N - mean log N, A_c = log a - alpha mean log N) so the normal equations stay well
// conditioned whatever the scale of N.
#include "experiments/power_law_fit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "tensor/error.h"

namespace nd::experiments {
namespace {

constexpr int kMaxParams = 3;
using Params = std::array<double, kMaxParams>;  // A_c, alpha, log E (offset law only)

struct Problem {
  std::vector<double> x, y;  // centred log N, log L
  double x_mean = 0;
  int n_params = 2;
  double delta = 1e-3;
};

double huber(double r, double delta) {
  const double a = std::fabs(r);
  return a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
}

// log L_hat at x and its gradient in the parameters.
double log_prediction(const Problem& p, const Params& q, double x, double* grad) {
  const double t = q[0] - q[1] * x;
  if (p.n_params == 2) {
    if (grad) grad[0] = 1.0, grad[1] = -x;
    return t;
  }
  const double e = q[2], m = std::max(e, t);
  const double we = std::exp(e - m), wt = std::exp(t - m), sum = we + wt;
  if (grad) grad[0] = wt / sum, grad[1] = -x * wt / sum, grad[2] = we / sum;
  return m + std::log(sum);
}

double objective(const Problem& p, const Params& q) {
  double f = 0;
  for (size_t i = 0; i < p.x.size(); ++i) f += huber(log_prediction(p, q, p.x[i], nullptr) - p.y[i], p.delta);
  return f;
}

// Solves the n x n system A d = b by Gaussian elimination with partial pivoting; false when singular.
bool solve(int n, double A[kMaxParams][kMaxParams], double b[kMaxParams], double d[kMaxParams]) {
  for (int c = 0; c < n; ++c) {
    int pivot = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(A[r][c]) > std::fabs(A[pivot][c])) pivot = r;
    if (!(std::fabs(A[pivot][c]) > 0)) return false;
    std::swap(A[c], A[pivot]);
    std::swap(b[c], b[pivot]);
    for (int r = c + 1; r < n; ++r) {
      const double f = A[r][c] / A[c][c];
      for (int k = c; k < n; ++k) A[r][k] -= f * A[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int r = n - 1; r >= 0; --r) {
    double s = b[r];
    for (int k = r + 1; k < n; ++k) s -= A[r][k] * d[k];
    d[r] = s / A[r][r];
  }
  return true;
}

// Levenberg-Marquardt from `q`; returns the objective at the point it stops.
double minimise(const Problem& p, Params& q) {
  const int n = p.n_params;
  double f = objective(p, q), lambda = 1e-3;
  for (int iter = 0; iter < 1000 && f > 0; ++iter) {
    double H[kMaxParams][kMaxParams] = {}, g[kMaxParams] = {};
    for (size_t i = 0; i < p.x.size(); ++i) {
      double grad[kMaxParams];
      const double r = log_prediction(p, q, p.x[i], grad) - p.y[i];
      const double w = std::fabs(r) <= p.delta ? 1.0 : p.delta / std::fabs(r);  // Huber's IRLS weight
      for (int a = 0; a < n; ++a) {
        g[a] += w * r * grad[a];
        for (int b = 0; b < n; ++b) H[a][b] += w * grad[a] * grad[b];
      }
    }
    bool accepted = false;
    Params next = q;
    double f_next = f, step = 0;
    while (!accepted && lambda < 1e16) {
      double A[kMaxParams][kMaxParams], b[kMaxParams], d[kMaxParams];
      for (int a = 0; a < n; ++a) {
        for (int c = 0; c < n; ++c) A[a][c] = H[a][c];
        A[a][a] += lambda * (H[a][a] + 1e-12);
        b[a] = -g[a];
      }
      if (solve(n, A, b, d)) {
        step = 0;
        for (int a = 0; a < n; ++a) {
          next[a] = q[a] + d[a];
          step = std::max(step, std::fabs(d[a]) / (1.0 + std::fabs(q[a])));
        }
        f_next = objective(p, next);
        accepted = std::isfinite(f_next) && f_next <= f;
      }
      if (!accepted) lambda *= 4;
    }
    if (!accepted) break;  // no step lowers the objective: a minimum to machine precision
    const double gain = f - f_next;
    q = next;
    f = f_next;
    lambda = std::max(lambda / 3, 1e-15);
    if (step < 1e-14 || gain <= 1e-17 * f) break;
  }
  return f;
}

Problem make_problem(const std::vector<double>& n, const std::vector<double>& loss, bool with_offset, double delta) {
  ND_CHECK(n.size() == loss.size(), "fit: " << n.size() << " sizes but " << loss.size() << " losses");
  Problem p;
  p.n_params = with_offset ? 3 : 2;
  p.delta = delta;
  for (size_t i = 0; i < n.size(); ++i) {
    ND_CHECK(n[i] > 0 && loss[i] > 0 && std::isfinite(n[i]) && std::isfinite(loss[i]),
             "fit: sizes and losses must be positive and finite, got N=" << n[i] << " L=" << loss[i]);
    p.x.push_back(std::log(n[i]));
    p.y.push_back(std::log(loss[i]));
  }
  for (double x : p.x) p.x_mean += x / static_cast<double>(p.x.size());
  for (double& x : p.x) x -= p.x_mean;
  return p;
}

size_t distinct(const std::vector<double>& n) { return std::set<double>(n.begin(), n.end()).size(); }

}  // namespace

double PowerLawFit::predict(double n) const { return E + a * std::pow(n, -alpha); }

PowerLawFit fit_power_law(const std::vector<double>& n, const std::vector<double>& loss, bool with_offset,
                          double huber_delta) {
  ND_CHECK(huber_delta > 0, "fit: the Huber delta must be > 0, got " << huber_delta);
  PowerLawFit fit;
  fit.with_offset = with_offset;
  if (distinct(n) < (with_offset ? 3u : 2u)) return fit;
  const Problem p = make_problem(n, loss, with_offset, huber_delta);

  // The least-squares line through (x, y) starts the pure law, and sets the scale of the grid.
  double sxy = 0, sxx = 0, y_mean = 0;
  for (double y : p.y) y_mean += y / static_cast<double>(p.y.size());
  for (size_t i = 0; i < p.x.size(); ++i) sxy += p.x[i] * (p.y[i] - y_mean), sxx += p.x[i] * p.x[i];
  std::vector<Params> starts;
  if (!with_offset) {
    starts.push_back(Params{y_mean, -sxy / sxx, 0});
  } else {
    const double l_min = std::exp(*std::min_element(p.y.begin(), p.y.end())), l_mid = std::exp(y_mean);
    for (double e_share : {0.001, 0.3, 0.6, 0.8, 0.9, 0.97})
      for (double alpha : {0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5}) {
        const double E = e_share * l_min;
        starts.push_back(Params{std::log(std::max(l_mid - E, 1e-6 * l_mid)), alpha, std::log(E)});
      }
  }
  Params best{};
  double best_f = std::numeric_limits<double>::infinity();
  for (Params q : starts) {
    const double f = minimise(p, q);
    if (f < best_f) best_f = f, best = q;
  }
  fit.ok = std::isfinite(best_f);
  fit.objective = best_f;
  fit.alpha = best[1];
  fit.a = std::exp(best[0] + best[1] * p.x_mean);
  fit.E = with_offset ? std::exp(best[2]) : 0.0;
  return fit;
}

BootstrapInterval bootstrap_alpha(const std::vector<double>& n, const std::vector<double>& loss, bool with_offset,
                                  double huber_delta, int resamples, uint64_t seed, double level) {
  ND_CHECK(resamples >= 0, "bootstrap: resamples must be >= 0, got " << resamples);
  ND_CHECK(level > 0 && level < 1, "bootstrap: level must be in (0, 1), got " << level);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, n.empty() ? 0 : n.size() - 1);
  std::vector<double> alphas;
  for (int b = 0; b < resamples && !n.empty(); ++b) {
    std::vector<double> bn, bl;
    for (size_t i = 0; i < n.size(); ++i) {
      const size_t k = pick(rng);
      bn.push_back(n[k]);
      bl.push_back(loss[k]);
    }
    // One more distinct size than the law has parameters, so a resample is not fitted exactly.
    if (distinct(bn) < (with_offset ? 4u : 3u)) continue;
    PowerLawFit f = fit_power_law(bn, bl, with_offset, huber_delta);
    if (f.ok && std::isfinite(f.alpha)) alphas.push_back(f.alpha);
  }
  BootstrapInterval out;
  out.resamples = static_cast<int>(alphas.size());
  if (alphas.empty()) {
    out.lo = out.hi = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  std::sort(alphas.begin(), alphas.end());
  auto quantile = [&](double q) {
    const double pos = q * static_cast<double>(alphas.size() - 1);
    const size_t i = static_cast<size_t>(pos);
    const double frac = pos - static_cast<double>(i);
    return i + 1 < alphas.size() ? alphas[i] * (1 - frac) + alphas[i + 1] * frac : alphas[i];
  };
  out.lo = quantile(0.5 * (1 - level));
  out.hi = quantile(0.5 * (1 + level));
  return out;
}

}  // namespace nd::experiments
