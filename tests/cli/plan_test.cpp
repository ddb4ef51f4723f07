// `nanodist plan` through the command table: the GPT-2 124M config at dp 2, tp 2 with sequence
// parallelism, pp 2 and ZeRO 3 all run; a fit table is read; bad layouts are input errors.
// (That its collective list is what a step issues: tests/train/comm_plan_mpi_test.cpp.)
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "cli/run_words.h"
#include "dist/comm_model.h"
#include "dist/comm_plan.h"

namespace nd::cli {
namespace {

using testing::input_error;
using testing::run_words;

const std::string kConfig = std::string(ND_SOURCE_DIR) + "/configs/gpt2_124m.conf";

TEST(Plan, LayoutsRun) {
  for (std::vector<std::string> layout : {std::vector<std::string>{"--dp", "2"},
                                          {"--tp", "2", "--sequence-parallel", "--batch-size", "8"},
                                          {"--pp", "2", "--dp", "2"},
                                          {"--dp", "4", "--zero", "3"},
                                          {"--dp", "2", "--zero", "1", "--tp", "2"}}) {
    std::vector<std::string> words = {"plan", "--config", kConfig, "--device", "cuda", "--dtype", "bf16"};
    words.insert(words.end(), layout.begin(), layout.end());
    EXPECT_EQ(run_words(words), 0) << layout[0] << " " << layout[1];
  }
}

TEST(Plan, ReadsAFitTable) {
  const std::string path = "plan_test_table.csv";
  {
    std::ofstream out(path);
    out << dist::fit_csv_header() << "\n";
    for (dist::AlphaBetaFit fit : dist::default_fit_table()) {
      fit.impl = "ring";
      out << dist::format_fit_csv(fit) << "\n";
    }
  }
  EXPECT_EQ(run_words({"plan", "--config", kConfig, "--dp", "2", "--table", path, "--impl", "ring"}), 0);
  std::remove(path.c_str());
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--table", "no_such_table.csv"}));
}

TEST(Plan, BadLayoutsAreInputErrors) {
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--dp", "0"}));
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--tp", "5"}));   // 12 heads
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--pp", "5"}));   // 12 layers
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--zero", "4"}));
}

TEST(Plan, ModelTimesFollowTheTable) {
  dist::PlanShape s;
  s.dp = 2;
  s.n_layer = 2;
  const dist::StepPlan plan = dist::plan_step(s, dist::default_fit_table(), "native");
  ASSERT_FALSE(plan.calls.empty());
  double total = 0, exposed = 0;
  for (const dist::PlannedCall& call : plan.calls) {
    EXPECT_EQ(call.group, "dp");
    EXPECT_GT(call.time_us, 7.8);  // at least alpha
    total += call.time_us * call.calls;
    if (!call.hidden) exposed += call.time_us * call.calls;
  }
  EXPECT_NEAR(plan.total_us, total, 1e-9);
  EXPECT_NEAR(plan.exposed_us, exposed, 1e-9);
  EXPECT_FALSE(plan.calls.back().hidden) << "the last bucket ends backward";
  EXPECT_TRUE(dist::plan_step(s, {}, "native").missing.size() == 1);
}

}  // namespace
}  // namespace nd::cli
