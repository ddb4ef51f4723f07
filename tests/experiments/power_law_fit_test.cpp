// The robust power-law fits recover known laws: exactly (1e-6) on noiseless points, and inside
// the bootstrap interval of alpha on noisy ones; a Huber fit shrugs off one outlier that moves
// least squares; law breaks are flagged with their reason.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "experiments/power_law_fit.h"
#include "experiments/sweep_analysis.h"

namespace nd::experiments {
namespace {

std::vector<double> ladder_sizes() {
  std::vector<double> n;
  for (double x = 1e4; x < 2e8; x *= 2.7) n.push_back(x);
  return n;  // 10 sizes over four decades
}

std::vector<double> law(const std::vector<double>& n, double E, double a, double alpha) {
  std::vector<double> l;
  for (double x : n) l.push_back(E + a * std::pow(x, -alpha));
  return l;
}

TEST(PowerLawFit, RecoversPureLawExactly) {
  const std::vector<double> n = ladder_sizes();
  PowerLawFit f = fit_power_law(n, law(n, 0.0, 12.5, 0.076), false, 1e-3);
  ASSERT_TRUE(f.ok);
  EXPECT_NEAR(f.a, 12.5, 12.5 * 1e-6);
  EXPECT_NEAR(f.alpha, 0.076, 1e-6);
  EXPECT_EQ(f.E, 0.0);
  EXPECT_LT(f.objective, 1e-20);
}

TEST(PowerLawFit, RecoversOffsetLawExactly) {
  const std::vector<double> n = ladder_sizes();
  for (auto [E, a, alpha] : {std::array<double, 3>{1.69, 406.4, 0.34}, std::array<double, 3>{0.8, 20.0, 0.2}}) {
    PowerLawFit f = fit_power_law(n, law(n, E, a, alpha), true, 1e-3);
    ASSERT_TRUE(f.ok);
    EXPECT_NEAR(f.E, E, E * 1e-6);
    EXPECT_NEAR(f.a, a, a * 1e-6);
    EXPECT_NEAR(f.alpha, alpha, 1e-6);
    EXPECT_NEAR(f.predict(3e5), E + a * std::pow(3e5, -alpha), 1e-9);
  }
}

TEST(PowerLawFit, TrueAlphaInsideTheBootstrapIntervalOnNoisyPoints) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0.0, 0.01);  // 1% multiplicative noise
  const std::vector<double> n = ladder_sizes();
  std::vector<double> pure = law(n, 0.0, 9.0, 0.1), offset = law(n, 1.5, 60.0, 0.3);
  for (double& l : pure) l *= std::exp(noise(rng));
  for (double& l : offset) l *= std::exp(noise(rng));

  PowerLawFit fp = fit_power_law(n, pure, false, 1e-3);
  BootstrapInterval ip = bootstrap_alpha(n, pure, false, 1e-3, 300, 5);
  EXPECT_GT(ip.resamples, 250);
  EXPECT_LT(ip.lo, 0.1);
  EXPECT_GT(ip.hi, 0.1);
  EXPECT_LE(ip.lo, fp.alpha);
  EXPECT_GE(ip.hi, fp.alpha);
  EXPECT_LT(ip.hi - ip.lo, 0.05) << "ten points at 1% noise pin alpha down";

  BootstrapInterval io = bootstrap_alpha(n, offset, true, 1e-3, 200, 5);
  EXPECT_LT(io.lo, 0.3);
  EXPECT_GT(io.hi, 0.3);
}

TEST(PowerLawFit, HuberIgnoresOneOutlier) {
  const std::vector<double> n = ladder_sizes();
  std::vector<double> l = law(n, 0.0, 9.0, 0.1);
  l[4] *= 1.3;
  PowerLawFit huber = fit_power_law(n, l, false, 1e-3);
  PowerLawFit squares = fit_power_law(n, l, false, 1e3);  // delta beyond every residual: least squares
  EXPECT_NEAR(huber.alpha, 0.1, 2e-3);
  EXPECT_GT(std::fabs(squares.alpha - 0.1), 3 * std::fabs(huber.alpha - 0.1));
}

TEST(PowerLawFit, TooFewPointsIsNotAFit) {
  EXPECT_FALSE(fit_power_law({1e4, 1e4, 1e4}, {3.0, 3.1, 2.9}, false, 1e-3).ok);
  EXPECT_FALSE(fit_power_law({1e4, 1e5}, {3.0, 2.5}, true, 1e-3).ok);
  EXPECT_TRUE(fit_power_law({1e4, 1e5}, {3.0, 2.5}, false, 1e-3).ok);
}

SweepPoint point(const char* name, int64_t n, double tokens_per_param, double loss) {
  SweepPoint p;
  p.name = name;
  p.non_embedding_params = n;
  p.tokens_per_param = tokens_per_param;
  p.final_val_loss = loss;
  return p;
}

TEST(SweepAnalysis, LawBreaksAreFlaggedWithTheirReason) {
  std::vector<SweepPoint> points = {point("s1", 1000, 20, 3.0), point("s2", 4000, 20, 2.6), point("s3", 16000, 20, 2.3),
                                    point("s4", 64000, 20, 2.1), point("big", 256000, 2, 2.4)};
  flag_law_breaks(points);
  for (size_t i = 0; i < 4; ++i) EXPECT_FALSE(points[i].breaks_law) << points[i].name;
  ASSERT_TRUE(points[4].breaks_law);
  EXPECT_NE(points[4].why.find("starved of tokens"), std::string::npos) << points[4].why;
  EXPECT_NE(points[4].why.find("s4"), std::string::npos) << points[4].why;

  points[4].breaks_law = false;
  points[4].tokens_per_param = 20;
  flag_law_breaks(points);
  ASSERT_TRUE(points[4].breaks_law);
  EXPECT_NE(points[4].why.find("not explained by its token budget"), std::string::npos) << points[4].why;

  SweepFit fit = fit_sweep(points, 1e-3, 50);
  EXPECT_FALSE(points[4].in_fit) << "a law-breaking point stays out of the fit";
  EXPECT_TRUE(points[0].in_fit);
  EXPECT_GT(points[4].pure_error_pct, -100.0);
  EXPECT_LT(points[4].pure_error_pct, -5.0) << "the law of the others predicts far less than 2.4";
  EXPECT_TRUE(fit.pure.ok);
}

}  // namespace
}  // namespace nd::experiments
