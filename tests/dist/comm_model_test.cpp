// The alpha-beta fit recovers alpha and beta of synthetic curves (exact, and with +-3% multiplicative
// noise), reports its error, moves to other rank counts by step count and bus factor, and the fit
// table round-trips through its CSV with malformed lines rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dist/comm/bench/comm_model.h"
#include "tensor/philox.h"

namespace nd::dist {
namespace {

std::vector<int64_t> sweep_sizes() {
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b <= (int64_t{1} << 30); b *= 2) sizes.push_back(b);
  return sizes;
}

TEST(CommModel, FitRecoversAlphaAndBetaOfExactCurves) {
  for (double alpha : {3.7, 9.5, 120.0})
    for (double gbps : {20.0, 340.0}) {
      const double beta = 1e-3 / gbps;  // us per byte at `gbps` GB/s
      std::vector<int64_t> sizes = sweep_sizes();
      std::vector<double> times;
      for (int64_t b : sizes) times.push_back(alpha + beta * static_cast<double>(b));
      AlphaBetaFit fit = fit_alpha_beta(sizes, times);
      EXPECT_NEAR(fit.alpha_us, alpha, 1e-6 * alpha);
      EXPECT_NEAR(fit.beta_us_per_byte, beta, 1e-6 * beta);
      EXPECT_LT(fit.rms_rel_err, 1e-9);
      EXPECT_EQ(fit.points, static_cast<int>(sizes.size()));
    }
}

TEST(CommModel, FitRecoversAlphaAndBetaThroughNoise) {
  const double alpha = 8.0, beta = 1e-3 / 250.0;
  std::vector<int64_t> sizes = sweep_sizes();
  std::vector<double> times;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double noise = 1.0 + 0.06 * (philox_uniform(5, i, 0) - 0.5);  // +-3%
    times.push_back((alpha + beta * static_cast<double>(sizes[i])) * noise);
  }
  AlphaBetaFit fit = fit_alpha_beta(sizes, times);
  EXPECT_NEAR(fit.alpha_us, alpha, 0.03 * alpha);
  EXPECT_NEAR(fit.beta_us_per_byte, beta, 0.03 * beta);
  EXPECT_GT(fit.rms_rel_err, 0.001);
  EXPECT_LT(fit.rms_rel_err, 0.03);
  EXPECT_LE(fit.max_rel_err, 0.06);
}

TEST(CommModel, FitNeedsTwoSizesAndPositiveTimes) {
  EXPECT_THROW(fit_alpha_beta({64}, {1.0}), Error);
  EXPECT_THROW(fit_alpha_beta({64, 64}, {1.0, 1.0}), Error);
  EXPECT_THROW(fit_alpha_beta({64, 128}, {1.0, 0.0}), Error);
  // A flat curve is all alpha.
  AlphaBetaFit flat = fit_alpha_beta({8, 1 << 20}, {5.0, 4.0});
  EXPECT_EQ(flat.beta_us_per_byte, 0.0);
  EXPECT_GT(flat.alpha_us, 4.0);
}

TEST(CommModel, PredictionMovesByStepsAndBusFactor) {
  AlphaBetaFit fit;
  fit.op = "allreduce";
  fit.impl = "ring";
  fit.nranks = 2;
  fit.alpha_us = 10.0;  // 2 steps at n = 2
  fit.beta_us_per_byte = 0.001;  // bus factor 1 at n = 2
  EXPECT_DOUBLE_EQ(fit.predict_us(1000, 2), 11.0);
  // n = 4: 6 steps of 5 us, bus factor 1.5.
  EXPECT_DOUBLE_EQ(fit.predict_us(1000, 4), 30.0 + 1.5);
  EXPECT_DOUBLE_EQ(fit.predict_us(1000, 1), 0.0);
  EXPECT_EQ(collective_steps(BenchOp::AllGather, 8), 7);
  EXPECT_EQ(collective_steps(BenchOp::SendRecv, 8), 1);
}

TEST(CommModel, TableRoundTripsAndRejectsBadLines) {
  AlphaBetaFit a;
  a.op = "allreduce";
  a.impl = "native";
  a.nranks = 2;
  a.alpha_us = 7.9;
  a.beta_us_per_byte = 3.1e-6;
  a.rms_rel_err = 0.05;
  a.max_rel_err = 0.12;
  a.points = 28;
  AlphaBetaFit b = a;
  b.impl = "ring";
  b.nranks = 4;
  const std::string text = fit_csv_header() + "\n" + format_fit_csv(a) + "\n# a comment\n" + format_fit_csv(b) + "\n";
  std::vector<AlphaBetaFit> table = parse_fit_table(text, "table");
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(table[1].impl, "ring");
  EXPECT_NEAR(table[0].alpha_us, 7.9, 1e-9);
  EXPECT_NEAR(table[0].beta_us_per_byte, 3.1e-6, 1e-12);
  EXPECT_EQ(find_fit(table, "allreduce", "ring", 2), &table[1]);  // the only ring, at 4 ranks
  EXPECT_EQ(find_fit(table, "allgather", "ring", 2), nullptr);
  EXPECT_THROW(parse_fit_table("allreduce,native,2,1.0\n", "t"), Error);
  EXPECT_THROW(parse_fit_table("allreduce,native,2,x,1e-6,0,0,3\n", "t"), Error);
  EXPECT_THROW(parse_fit_table("gather,native,2,1,1e-6,0,0,3\n", "t"), Error);
  EXPECT_THROW(parse_fit_table("allreduce,native,1,1,1e-6,0,0,3\n", "t"), Error);
}

}  // namespace
}  // namespace nd::dist
