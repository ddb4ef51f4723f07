// The step line and JSON records of CLI.md, checked against hand-written strings: the ETA shown
// next to tok/s only when known, durations in s / m s / h m, MFU or GFLOP/s, rates, null for NaN.
#include <gtest/gtest.h>

#include <cmath>

#include "train/metrics.h"

namespace nd::train {
namespace {

StepMetrics example() {
  StepMetrics m;
  m.step = 250;
  m.max_iters = 5000;
  m.loss = 1.81234;
  m.lr = 9.8e-4;
  m.grad_norm = 0.43121;
  m.ms = 41.23;
  m.tok_per_s = 398000;
  m.flops_per_s = 2.5e12;
  m.mfu = 0.234;
  return m;
}

TEST(Metrics, StepLineWithoutEtaIsTheCliFormat) {
  EXPECT_EQ(format_step_line(example()),
            "step  250/5000 | loss 1.8123 | lr 9.80e-04 | norm 0.4312 | 41.2 ms | 398k tok/s | MFU 23.4%");
  StepMetrics m = example();
  m.mfu = -1;
  EXPECT_EQ(format_step_line(m),
            "step  250/5000 | loss 1.8123 | lr 9.80e-04 | norm 0.4312 | 41.2 ms | 398k tok/s | 2500.0 GFLOP/s");
}

TEST(Metrics, StepLineShowsTheEtaNextToTokensPerSecond) {
  StepMetrics m = example();
  m.eta_s = 11100;  // 3 h 5 min
  EXPECT_EQ(format_step_line(m),
            "step  250/5000 | loss 1.8123 | lr 9.80e-04 | norm 0.4312 | 41.2 ms | 398k tok/s | ETA 3h05m | MFU 23.4%");
  m.eta_s = 0;
  EXPECT_NE(format_step_line(m).find("tok/s | ETA 0s | MFU"), std::string::npos) << format_step_line(m);
  m.eta_s = std::nan("");
  EXPECT_EQ(format_step_line(m).find("ETA"), std::string::npos) << format_step_line(m);
}

TEST(Metrics, DurationsRoundToTheSecond) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(41.6), "42s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(60), "1m00s");
  EXPECT_EQ(format_duration(754), "12m34s");
  EXPECT_EQ(format_duration(3599.6), "1h00m");
  EXPECT_EQ(format_duration(11100), "3h05m");
  EXPECT_EQ(format_duration(100 * 3600 + 59), "100h00m");
  EXPECT_EQ(format_duration(-5), "0s");
}

TEST(Metrics, RatesAndJson) {
  EXPECT_EQ(format_rate(398), "398");
  EXPECT_EQ(format_rate(398000), "398k");
  EXPECT_EQ(format_rate(3.98e6), "3.98M");
  EXPECT_EQ(format_rate(1.5e9), "1.50G");
  StepMetrics m = example();
  m.mfu = -1;
  m.loss = std::nan("");
  EXPECT_EQ(step_json(m),
            "{\"step\":250,\"loss\":null,\"lr\":0.00098,\"grad_norm\":0.43121,\"ms\":41.23,\"tok_per_s\":398000,"
            "\"mfu\":null,\"flops_per_s\":2.5e+12}");
  EXPECT_EQ(eval_json(250, 1.5, 1.25, 12.5), "{\"step\":250,\"val_loss\":1.5,\"train_loss\":1.25,\"elapsed_s\":12.5}");
  EXPECT_EQ(final_json(1.5, 1000, 64000), "{\"final\":true,\"best_val_loss\":1.5,\"params\":1000,\"tokens\":64000}");
}

}  // namespace
}  // namespace nd::train
