// The latency-bandwidth (alpha-beta) model of a collective: time(bytes) = alpha + beta * bytes,
// fitted to a bench-comm curve by least squares on relative error (so 8 B and 1 GB weigh alike),
// piecewise where one line cannot follow the curve (NCCL changes protocol with size: one fit per
// size range, the breakpoints chosen by the fit), and carried to another rank count by the
// collective's step count (alpha) and bus factor (beta): alpha = steps(n) * alpha_step,
// beta = bus_factor(n) * beta_bus. A table of fits per (op, impl), a row per piece, is what
// `bench-comm --fit` writes and `nanodist plan` and the `auto` all-reduce read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dist/comm/bench/comm_bench.h"

namespace nd::dist {

struct AlphaBetaFit {
  std::string op;    // bench op name: allreduce, reducescatter, allgather, broadcast, alltoall, sendrecv
  std::string impl;  // native, ring, oneshot, twoshot, peer, ...
  int nranks = 0;
  double alpha_us = 0;          // fixed cost per call at nranks
  double beta_us_per_byte = 0;  // cost per byte of the row's size at nranks
  double rms_rel_err = 0;       // sqrt(mean(((model - measured) / measured)^2)) over the points
  double max_rel_err = 0;
  int points = 0;
  // The piece's range: the sizes of the points it was fitted to (0, 0: one fit for every size,
  // as tables before piecewise fits were written).
  int64_t min_bytes = 0, max_bytes = 0;

  // The model's time for a call of `bytes` (the row's size convention) on `ranks` ranks.
  double predict_us(int64_t bytes, int ranks) const;
};

// Sequential steps of the textbook algorithm (ring: all-reduce 2(n-1), reduce-scatter and
// all-gather n-1; broadcast and all-to-all n-1; sendrecv 1) that alpha is charged per.
int collective_steps(BenchOp op, int nranks);

// Weighted least squares of time = alpha + beta * bytes with weights 1 / time^2 (minimises the
// squared relative error); alpha and beta clamped at 0. Needs two distinct sizes.
AlphaBetaFit fit_alpha_beta(const std::vector<int64_t>& bytes, const std::vector<double>& time_us);
AlphaBetaFit fit_rows(const std::vector<BenchCommRow>& rows);

// A sweep's rows as the fits take them: sizes and times, in the rows' order.
struct SweepPoints {
  std::vector<int64_t> bytes;
  std::vector<double> time_us;
};
SweepPoints sweep_points(const std::vector<BenchCommRow>& rows);

// Piecewise: the curve (sizes ascending) cut into consecutive ranges of at least `min_points`
// points, each fitted by fit_alpha_beta, the cuts placed by dynamic programming to minimise the
// summed squared relative error; the fewest pieces (up to `max_pieces`) whose RMS relative error
// over all points is at most `target_rms` (else the best of max_pieces). Each piece carries its
// range and its own errors; one piece where one line is good enough.
std::vector<AlphaBetaFit> fit_piecewise(const std::vector<int64_t>& bytes, const std::vector<double>& time_us,
                                        int max_pieces = 6, double target_rms = 0.03, int min_points = 3);
std::vector<AlphaBetaFit> fit_rows_piecewise(const std::vector<BenchCommRow>& rows);

// The pieces of one (op, impl, nranks), ascending by size. A size is timed by the last piece
// starting at or below it (the first below every piece, the last above).
struct CollectiveModel {
  std::vector<AlphaBetaFit> pieces;
  bool empty() const { return pieces.empty(); }
  const AlphaBetaFit& piece_for(int64_t bytes) const;
  double predict_us(int64_t bytes, int ranks) const { return piece_for(bytes).predict_us(bytes, ranks); }
  // RMS relative error over every piece's points.
  double rms_rel_err() const;
};

// The fit table's CSV: a header line, then one line per fit. Reading raises nd::Error (input)
// naming the file and line on anything malformed.
std::string fit_csv_header();
std::string format_fit_csv(const AlphaBetaFit& fit);
std::vector<AlphaBetaFit> read_fit_table(const std::string& path);
std::vector<AlphaBetaFit> parse_fit_table(const std::string& text, const std::string& what);
// The fit for (op, impl) nearest in rank count to `nranks` (exact first); nullptr if none. With
// piecewise rows, one of the pieces: use find_model to time a size.
const AlphaBetaFit* find_fit(const std::vector<AlphaBetaFit>& table, const std::string& op, const std::string& impl,
                             int nranks);
// Every piece of (op, impl) at the rank count nearest to `nranks`; empty if none.
CollectiveModel find_model(const std::vector<AlphaBetaFit>& table, const std::string& op, const std::string& impl,
                           int nranks);

}  // namespace nd::dist
