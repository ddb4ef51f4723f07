// The piecewise alpha-beta fit (comm_model.h): a curve cut into size ranges, each its own line,
// the cuts chosen by dynamic programming over the points; and the model that times a size by the
// piece it falls in.
#include <algorithm>
#include <cmath>
#include <limits>

#include "dist/comm/bench/comm_model.h"
#include "tensor/error.h"

namespace nd::dist {

namespace {

constexpr double kNoFit = std::numeric_limits<double>::infinity();

// The fit of points [begin, end) and its summed squared relative error; kNoFit where the range
// has fewer than two distinct sizes.
AlphaBetaFit fit_range(const std::vector<int64_t>& bytes, const std::vector<double>& time_us, size_t begin, size_t end,
                       double* squares) {
  *squares = kNoFit;
  if (end - begin < 2 || bytes[begin] == bytes[end - 1]) return {};
  const std::vector<int64_t> x(bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                               bytes.begin() + static_cast<std::ptrdiff_t>(end));
  const std::vector<double> t(time_us.begin() + static_cast<std::ptrdiff_t>(begin),
                              time_us.begin() + static_cast<std::ptrdiff_t>(end));
  AlphaBetaFit fit = fit_alpha_beta(x, t);
  fit.min_bytes = x.front();
  fit.max_bytes = x.back();
  *squares = fit.rms_rel_err * fit.rms_rel_err * fit.points;
  return fit;
}

}  // namespace

std::vector<AlphaBetaFit> fit_piecewise(const std::vector<int64_t>& bytes, const std::vector<double>& time_us,
                                        int max_pieces, double target_rms, int min_points) {
  ND_CHECK(bytes.size() == time_us.size(), "fit: " << bytes.size() << " sizes but " << time_us.size() << " times");
  ND_CHECK(max_pieces >= 1 && min_points >= 2, "fit_piecewise: needs max_pieces >= 1 and min_points >= 2");
  for (size_t i = 1; i < bytes.size(); ++i)
    ND_CHECK(bytes[i] >= bytes[i - 1], "fit_piecewise: sizes must ascend (" << bytes[i - 1] << " then " << bytes[i] << ")");
  const size_t n = bytes.size();
  const size_t least = static_cast<size_t>(min_points);
  // One line for the whole curve first (it also raises on fewer than two sizes).
  AlphaBetaFit whole = fit_alpha_beta(bytes, time_us);
  whole.min_bytes = bytes.front();
  whole.max_bytes = bytes.back();
  if (whole.rms_rel_err <= target_rms || n < 2 * least) return {whole};

  // cost[i][j]: squared error of one piece over points [i, j); best[k][j]: of k pieces over [0, j).
  std::vector<std::vector<double>> cost(n + 1, std::vector<double>(n + 1, kNoFit));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + least; j <= n; ++j) fit_range(bytes, time_us, i, j, &cost[i][j]);
  const size_t most = std::min(static_cast<size_t>(max_pieces), n / least);
  std::vector<std::vector<double>> best(most + 1, std::vector<double>(n + 1, kNoFit));
  std::vector<std::vector<size_t>> cut(most + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  size_t chosen = 1;
  for (size_t k = 1; k <= most; ++k) {
    for (size_t j = k * least; j <= n; ++j)
      for (size_t i = (k - 1) * least; i + least <= j; ++i) {
        if (best[k - 1][i] == kNoFit || cost[i][j] == kNoFit) continue;
        const double total = best[k - 1][i] + cost[i][j];
        if (total < best[k][j]) {
          best[k][j] = total;
          cut[k][j] = i;
        }
      }
    chosen = k;
    if (best[k][n] != kNoFit && std::sqrt(best[k][n] / static_cast<double>(n)) <= target_rms) break;
  }
  // The fewest pieces that meet the target, else the best of the most allowed.
  while (chosen > 1 && best[chosen][n] == kNoFit) --chosen;
  if (best[chosen][n] == kNoFit || best[chosen][n] >= whole.rms_rel_err * whole.rms_rel_err * whole.points)
    return {whole};
  std::vector<AlphaBetaFit> pieces(chosen);
  size_t end = n;
  for (size_t k = chosen; k >= 1; --k) {
    const size_t begin = cut[k][end];
    double squares = 0;
    pieces[k - 1] = fit_range(bytes, time_us, begin, end, &squares);
    end = begin;
  }
  return pieces;
}

std::vector<AlphaBetaFit> fit_rows_piecewise(const std::vector<BenchCommRow>& rows) {
  const SweepPoints points = sweep_points(rows);
  return fit_piecewise(points.bytes, points.time_us);
}

const AlphaBetaFit& CollectiveModel::piece_for(int64_t bytes) const {
  ND_CHECK(!pieces.empty(), "CollectiveModel: no pieces");
  size_t at = 0;
  for (size_t p = 1; p < pieces.size(); ++p)
    if (pieces[p].min_bytes <= bytes) at = p;
  return pieces[at];
}

double CollectiveModel::rms_rel_err() const {
  double squares = 0;
  int points = 0;
  for (const AlphaBetaFit& piece : pieces) {
    squares += piece.rms_rel_err * piece.rms_rel_err * piece.points;
    points += piece.points;
  }
  return points > 0 ? std::sqrt(squares / points) : 0.0;
}

}  // namespace nd::dist
