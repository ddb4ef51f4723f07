// `nanodist plan` through the command table: the GPT-2 124M config at dp 2, tp 2 with sequence
// parallelism, pp 2 and ZeRO 3 all run; a fit table is read; bad layouts are input errors.
// (That its collective list is what a step issues: tests/train/comm_plan_mpi_test.cpp.)
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

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

// The default table with "+gemm" rows `factor` times slower: what bench-comm --load gemm adds.
std::vector<dist::AlphaBetaFit> with_loaded_rows(double factor) {
  std::vector<dist::AlphaBetaFit> table = dist::default_fit_table();
  for (dist::AlphaBetaFit fit : dist::default_fit_table()) {
    fit.impl += "+gemm";
    fit.alpha_us *= factor;
    fit.beta_us_per_byte *= factor;
    table.push_back(fit);
  }
  return table;
}

const dist::PlannedCall& find_call(const dist::StepPlan& plan, const std::string& what) {
  for (const dist::PlannedCall& call : plan.calls)
    if (call.what.find(what) != std::string::npos) return call;
  throw std::runtime_error("no planned call like '" + what + "'");
}

// tp's backward all-reduces hide only behind the GEMM beside them: the attention's behind the qkv
// weight gradient (2 B T C 3C / tp FLOPs at --gemm-tflops), the head's behind the head's; the
// fused MLP's has nothing beside it. With loaded rows the overlapped calls take the loaded time
// while the GEMM runs and the idle time after it.
TEST(Plan, TensorParallelHidesOnlyWhatTheGemmBesideCovers) {
  dist::PlanShape s;
  s.tp = 2;
  s.n_layer = 2;
  const double BT = 8.0 * 1024, C = 768;
  const int64_t act = 8 * 1024 * 768 * 2;
  const dist::AlphaBetaFit idle = *dist::find_fit(dist::default_fit_table(), "allreduce", "native", 2);
  const double t = idle.predict_us(act, 2);
  const double qkv_us = 2 * BT * C * 3 * C / 2 / 600e6, head_us = 2 * BT * C * 50304 / 2 / 600e6;
  ASSERT_LT(qkv_us, t);
  ASSERT_GT(head_us, 3 * t);

  const dist::StepPlan plan = dist::plan_step(s, dist::default_fit_table(), "native");
  const dist::PlannedCall& attention = find_call(plan, "attention input gradient");
  EXPECT_EQ(attention.calls, 2);
  EXPECT_NEAR(attention.beside_us, qkv_us, 1e-9 * qkv_us);
  EXPECT_NEAR(attention.time_us, t, 1e-9 * t);
  EXPECT_NEAR(attention.exposed_us, t - qkv_us, 1e-9 * t);
  EXPECT_FALSE(attention.loaded);
  const dist::PlannedCall& mlp = find_call(plan, "MLP input gradient");
  EXPECT_FALSE(mlp.hidden);
  EXPECT_NEAR(mlp.exposed_us, t, 1e-9 * t);
  EXPECT_EQ(find_call(plan, "head input gradient").exposed_us, 0.0);
  double exposed = 0;
  for (const dist::PlannedCall& call : plan.calls) exposed += call.exposed_us * call.calls;
  EXPECT_NEAR(plan.exposed_us, exposed, 1e-9 * exposed);

  const dist::StepPlan loaded = dist::plan_step(s, with_loaded_rows(3.0), "native");
  const dist::PlannedCall& slow = find_call(loaded, "attention input gradient");
  EXPECT_TRUE(slow.loaded);
  EXPECT_NEAR(slow.exposed_us, (1 - qkv_us / (3 * t)) * t, 1e-9 * t);
  EXPECT_NEAR(slow.time_us, qkv_us + (1 - qkv_us / (3 * t)) * t, 1e-9 * t);
  const dist::PlannedCall& head = find_call(loaded, "head input gradient");
  EXPECT_NEAR(head.time_us, 3 * t, 1e-9 * t);  // done under the head's GEMM at the loaded rate
  EXPECT_EQ(head.exposed_us, 0.0);
  EXPECT_FALSE(find_call(loaded, "row-parallel outputs").loaded);  // forward: nothing beside, idle fit

  // A faster GEMM hides less.
  s.gemm_tflops = 1200;
  EXPECT_NEAR(find_call(dist::plan_step(s, dist::default_fit_table(), "native"), "attention input gradient").exposed_us,
              t - qkv_us / 2, 1e-9 * t);
  s.fused_mlp = false;
  const dist::PlannedCall& unfused = find_call(dist::plan_step(s, dist::default_fit_table(), "native"), "MLP input");
  EXPECT_TRUE(unfused.hidden);
  EXPECT_NEAR(unfused.beside_us, 2 * BT * C * 4 * C / 2 / 1200e6, 1e-6);
}

// dp: the buckets that hold wpe or wte are final only when backward ends and are exposed whole,
// queued one after the other; the others run beside backward at the loaded rate and hide.
TEST(Plan, DataParallelExposesTheEmbeddingBuckets) {
  dist::PlanShape s;
  s.dp = 2;
  const dist::StepPlan plan = dist::plan_step(s, with_loaded_rows(1.5), "native");
  const dist::AlphaBetaFit idle = *dist::find_fit(dist::default_fit_table(), "allreduce", "native", 2);
  double exposed = 0;
  for (const dist::PlannedCall& call : plan.calls) {
    ASSERT_EQ(call.group, "dp");
    const double t = idle.predict_us(call.bytes, 2);
    if (call.hidden) {
      EXPECT_TRUE(call.loaded) << call.what;
      EXPECT_NEAR(call.time_us, 1.5 * t, 1e-9 * t) << call.what;
      EXPECT_EQ(call.exposed_us, 0.0) << call.what;
    } else {
      EXPECT_NE(call.what.find("final at backward's end"), std::string::npos) << call.what;
      EXPECT_NEAR(call.time_us, t, 1e-9 * t) << call.what;
      EXPECT_NEAR(call.exposed_us, t, 1e-9 * t) << call.what;
      exposed += t;
    }
  }
  EXPECT_FALSE(plan.calls.back().hidden) << "wte's bucket";
  EXPECT_NEAR(plan.exposed_us, exposed, 1e-9 * exposed);
  EXPECT_GT(plan.backward_us, 0.0);
}

TEST(Plan, GemmRateAndTailFlags) {
  EXPECT_EQ(run_words({"plan", "--config", kConfig, "--tp", "2", "--gemm-tflops", "800", "--backward-tail-us", "0"}), 0);
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--tp", "2", "--gemm-tflops", "0"}));
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--dp", "2", "--backward-tail-us", "-1"}));
}

}  // namespace
}  // namespace nd::cli
