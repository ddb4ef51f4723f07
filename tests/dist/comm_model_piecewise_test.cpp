// The piecewise alpha-beta fit recovers synthetic curves made of several lines (the breakpoints,
// and each piece's alpha and beta, exactly and through +-3% noise), keeps one piece where one line
// suffices, times each size by its piece, and its rows round-trip through the fit table, which
// still reads tables of the older 8-field rows.
#include <gtest/gtest.h>

#include <vector>

#include "dist/comm/bench/comm_model.h"
#include "tensor/philox.h"

namespace nd::dist {
namespace {

struct Line {
  int64_t from;  // first size of the piece
  double alpha, beta;
};

// 8 B .. 1 GB by powers of two, timed by the line whose range holds each size.
void curve(const std::vector<Line>& lines, double noise, std::vector<int64_t>& sizes, std::vector<double>& times) {
  sizes.clear();
  times.clear();
  uint64_t i = 0;
  for (int64_t b = 8; b <= (int64_t{1} << 30); b *= 2, ++i) {
    const Line* at = &lines.front();
    for (const Line& line : lines)
      if (line.from <= b) at = &line;
    sizes.push_back(b);
    times.push_back((at->alpha + at->beta * static_cast<double>(b)) * (1.0 + noise * (philox_uniform(11, i, 0) - 0.5)));
  }
}

// Three protocols: flat latency to 64 KB, a slow ramp to 4 MB, the bandwidth line above (a
// discontinuity at each cut, as NCCL's LL -> LL128 -> Simple switches make).
const std::vector<Line> kThreeLines = {{8, 8.0, 1e-5}, {64 << 10, 12.0, 1e-5 / 1.5}, {4 << 20, 20.0, 1e-3 / 300.0}};

TEST(CommModelPiecewise, RecoversTheBreakpointsAndLinesOfAnExactCurve) {
  std::vector<int64_t> sizes;
  std::vector<double> times;
  curve(kThreeLines, 0.0, sizes, times);
  const std::vector<AlphaBetaFit> pieces = fit_piecewise(sizes, times);
  ASSERT_EQ(pieces.size(), 3u);
  for (size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(pieces[p].min_bytes, kThreeLines[p].from) << "piece " << p;
    EXPECT_NEAR(pieces[p].alpha_us, kThreeLines[p].alpha, 1e-6 * kThreeLines[p].alpha) << "piece " << p;
    EXPECT_NEAR(pieces[p].beta_us_per_byte, kThreeLines[p].beta, 1e-6 * kThreeLines[p].beta) << "piece " << p;
    EXPECT_LT(pieces[p].rms_rel_err, 1e-9);
  }
  EXPECT_EQ(pieces[0].max_bytes, (64 << 10) / 2);
  EXPECT_EQ(pieces[2].max_bytes, int64_t{1} << 30);
  // One line over the same points is far worse: the reason for the pieces.
  EXPECT_GT(fit_alpha_beta(sizes, times).rms_rel_err, 0.1);
}

TEST(CommModelPiecewise, RecoversTheLinesThroughNoise) {
  std::vector<int64_t> sizes;
  std::vector<double> times;
  curve(kThreeLines, 0.06, sizes, times);  // +-3%
  const std::vector<AlphaBetaFit> pieces = fit_piecewise(sizes, times);
  ASSERT_EQ(pieces.size(), 3u);
  CollectiveModel model{pieces};
  for (AlphaBetaFit& piece : model.pieces) {
    piece.op = "allreduce";
    piece.nranks = 2;
  }
  EXPECT_LT(model.rms_rel_err(), 0.03);
  // Each piece predicts its own range's noiseless curve within the noise.
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Line* at = &kThreeLines.front();
    for (const Line& line : kThreeLines)
      if (line.from <= sizes[i]) at = &line;
    const double exact = at->alpha + at->beta * static_cast<double>(sizes[i]);
    EXPECT_NEAR(model.predict_us(sizes[i], 2), exact, 0.04 * exact) << sizes[i] << " bytes";
  }
}

TEST(CommModelPiecewise, OneLineStaysOnePiece) {
  std::vector<int64_t> sizes;
  std::vector<double> times;
  curve({{8, 8.0, 1e-3 / 250.0}}, 0.04, sizes, times);
  const std::vector<AlphaBetaFit> pieces = fit_piecewise(sizes, times);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_NEAR(pieces[0].alpha_us, 8.0, 0.3);
  EXPECT_EQ(pieces[0].min_bytes, 8);
  EXPECT_EQ(pieces[0].max_bytes, int64_t{1} << 30);
}

TEST(CommModelPiecewise, SizesPickTheirPiece) {
  CollectiveModel model;
  for (const Line& line : kThreeLines) {
    AlphaBetaFit fit;
    fit.op = "allreduce";
    fit.nranks = 2;
    fit.alpha_us = line.alpha;
    fit.beta_us_per_byte = line.beta;
    fit.min_bytes = line.from;
    model.pieces.push_back(fit);
  }
  EXPECT_DOUBLE_EQ(model.predict_us(1, 2), 8.0 + 1e-5);          // below every piece: the first
  EXPECT_DOUBLE_EQ(model.predict_us(64 << 10, 2), 12.0 + 65536 * 1e-5 / 1.5);
  EXPECT_DOUBLE_EQ(model.predict_us(int64_t{4} << 30, 2), 20.0 + 4294967296.0 * 1e-3 / 300.0);  // above: the last
}

TEST(CommModelPiecewise, PiecesRoundTripAndOldTablesStillRead) {
  std::vector<int64_t> sizes;
  std::vector<double> times;
  curve(kThreeLines, 0.0, sizes, times);
  std::string text = fit_csv_header() + "\n";
  for (AlphaBetaFit piece : fit_piecewise(sizes, times)) {
    piece.op = "allreduce";
    piece.impl = "native";
    piece.nranks = 2;
    text += format_fit_csv(piece) + "\n";
  }
  // An older table's row (8 fields) for another impl, and a loaded row beside it.
  text += "op,impl,nranks,alpha_us,beta_us_per_byte,rms_rel_err,max_rel_err,points\n";
  text += "allreduce,ring,2,18.4395,3.641642e-06,0.1761,0.4092,28\n";
  text += "allreduce,native+gemm,2,30.0,5e-06,0.05,0.1,28,8,1073741824\n";
  const std::vector<AlphaBetaFit> table = parse_fit_table(text, "table");
  ASSERT_EQ(table.size(), 5u);
  const CollectiveModel native = find_model(table, "allreduce", "native", 2);
  ASSERT_EQ(native.pieces.size(), 3u);
  EXPECT_EQ(native.pieces[1].min_bytes, 64 << 10);
  EXPECT_NEAR(native.predict_us(1 << 30, 2), times.back(), 1e-3 * times.back());
  const CollectiveModel ring = find_model(table, "allreduce", "ring", 2);
  ASSERT_EQ(ring.pieces.size(), 1u);
  EXPECT_EQ(ring.pieces[0].max_bytes, 0);  // every size
  EXPECT_NEAR(ring.predict_us(1000, 2), 18.4395 + 3.641642e-3, 1e-6);
  EXPECT_EQ(find_model(table, "allreduce", "native+gemm", 2).pieces.size(), 1u);
  EXPECT_TRUE(find_model(table, "allgather", "native", 2).empty());
  EXPECT_THROW(parse_fit_table("allreduce,native,2,1,1e-6,0,0,3,100\n", "t"), Error);        // 9 fields
  EXPECT_THROW(parse_fit_table("allreduce,native,2,1,1e-6,0,0,3,100,50\n", "t"), Error);     // max < min
}

}  // namespace
}  // namespace nd::dist
