// `nanodist plan` through the command table: the GPT-2 124M config at dp 2, tp 2 with sequence
// parallelism, pp 2 and ZeRO 3 all run; a fit table is read; bad layouts are input errors.
// (That its collective list is what a step issues: tests/train/comm_plan_mpi_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/run_words.h"
#include "dist/comm/bench/comm_model.h"
#include "dist/parallel/plan/comm_plan.h"

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

// The help lists the flags that shape the step's communication, not train's paths and schedule
// (which a run's config file may still set: they are read, not listed).
TEST(Plan, HelpListsOnlyTheLayoutFlags) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run_words({"plan", "--help"}), 0);
  const std::string help = ::testing::internal::GetCapturedStdout();
  for (const char* listed : {"--n-layer", "--tp", "--pp", "--zero", "--dp", "--batch-size", "--dtype"})
    EXPECT_NE(help.find(listed), std::string::npos) << listed;
  for (const char* unlisted : {"--data ", "--out ", "--lr ", "--max-iters", "(required)"})
    EXPECT_EQ(help.find(unlisted), std::string::npos) << unlisted;
  EXPECT_EQ(run_words({"plan", "--config", kConfig, "--dp", "2", "--data", "d", "--lr", "0.1"}), 0);
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

// The default table with "+gemm" rows `factor` times slower: what bench-comm --load gemm adds,
// which the plan does not read (the same plan with and without them).
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

// A copy: a call found in a temporary plan outlives it.
dist::PlannedCall find_call(const dist::StepPlan& plan, const std::string& what) {
  for (const dist::PlannedCall& call : plan.calls)
    if (call.what.find(what) != std::string::npos) return call;
  throw std::runtime_error("no planned call like '" + what + "'");
}

void expect_same_plan(const dist::StepPlan& a, const dist::StepPlan& b) {
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].time_us, b.calls[i].time_us) << a.calls[i].what;
    EXPECT_EQ(a.calls[i].exposed_us, b.calls[i].exposed_us) << a.calls[i].what;
  }
  EXPECT_EQ(a.total_us, b.total_us);
  EXPECT_EQ(a.exposed_us, b.exposed_us);
}

// tp's backward all-reduces issued beside a GEMM wait for it, then run at the idle time, which the
// next op waits for: the attention's beside the qkv weight gradient (2 B T C 3C / tp FLOPs at
// --gemm-tflops), the head's beside the head's (2 B T C V / tp); the fused MLP's has nothing
// beside it. Forward calls: the idle time, exposed.
TEST(Plan, TensorParallelCallsWaitForTheGemmBesideThem) {
  dist::PlanShape s;
  s.tp = 2;
  s.n_layer = 2;
  const double BT = 8.0 * 1024, C = 768;
  const int64_t act = 8 * 1024 * 768 * 2;
  const dist::AlphaBetaFit idle = *dist::find_fit(dist::default_fit_table(), "allreduce", "native", 2);
  const double t = idle.predict_us(act, 2);
  // The head's vocabulary shard: 50304 padded to a multiple of 128 x tp (50432), halved.
  const double qkv_us = 2 * BT * C * 3 * C / 2 / 600e6, head_us = 2 * BT * C * 50432 / 2 / 600e6;

  const dist::StepPlan plan = dist::plan_step(s, dist::default_fit_table(), "native");
  const dist::PlannedCall attention = find_call(plan, "attention input gradient");
  EXPECT_EQ(attention.calls, 2);
  EXPECT_NEAR(attention.beside_us, qkv_us, 1e-9 * qkv_us);
  EXPECT_NEAR(attention.time_us, qkv_us + t, 1e-9 * t);
  EXPECT_NEAR(attention.exposed_us, t, 1e-9 * t);
  const dist::PlannedCall mlp = find_call(plan, "MLP input gradient");
  EXPECT_FALSE(mlp.hidden);
  EXPECT_NEAR(mlp.time_us, t, 1e-9 * t);
  EXPECT_NEAR(mlp.exposed_us, t, 1e-9 * t);
  const dist::PlannedCall head = find_call(plan, "head input gradient");
  EXPECT_NEAR(head.time_us, head_us + t, 1e-9 * head_us);
  EXPECT_NEAR(head.exposed_us, t, 1e-9 * t);
  const dist::PlannedCall forward = find_call(plan, "row-parallel outputs");
  EXPECT_NEAR(forward.time_us, t, 1e-9 * t);
  EXPECT_NEAR(forward.exposed_us, t, 1e-9 * t);
  double total = 0, exposed = 0;
  for (const dist::PlannedCall& call : plan.calls) {
    total += call.time_us * call.calls;
    exposed += call.exposed_us * call.calls;
  }
  EXPECT_NEAR(plan.total_us, total, 1e-9 * total);
  EXPECT_NEAR(plan.exposed_us, exposed, 1e-9 * exposed);
  expect_same_plan(plan, dist::plan_step(s, with_loaded_rows(3.0), "native"));

  // A faster GEMM: a shorter wait, the same exposed part.
  s.gemm_tflops = 1200;
  const dist::PlannedCall fast =
      find_call(dist::plan_step(s, dist::default_fit_table(), "native"), "attention input gradient");
  EXPECT_NEAR(fast.time_us, qkv_us / 2 + t, 1e-9 * t);
  EXPECT_NEAR(fast.exposed_us, t, 1e-9 * t);
}

// dp: a bucket issued to an idle comm stream waits for the kernel after the op whose hook completed
// it, then runs at its idle time; one queued behind another runs at its idle time from that one's
// end; the buckets that hold wpe or wte are final only when backward ends and are exposed whole.
// GPT-2 124M, B = 8: bucket 1 (ln_f and the last block's mlp.c_proj bias, 1 MB cap) is completed
// by the fused MLP's backward and waits for ln_2's backward (4.17 ps x B T C); the others wait for
// a LayerNorm's backward, an add's (1.36 ps x B T C), the attention's backward or the tail.
TEST(Plan, DataParallelBucketsWaitForTheKernelAfterTheirHook) {
  dist::PlanShape s;
  s.dp = 2;
  const dist::StepPlan plan = dist::plan_step(s, dist::default_fit_table(), "native");
  const dist::AlphaBetaFit idle = *dist::find_fit(dist::default_fit_table(), "allreduce", "native", 2);
  const double elements = 8.0 * 1024 * 768;
  const double norm = 4.17e-6 * elements, add = 1.36e-6 * elements, attention = 4 * elements * 1024 / 600e6,
               tail = 200 - norm;
  ASSERT_GT(plan.calls.size(), 2u);
  EXPECT_NEAR(plan.calls[0].beside_us, norm, 1e-9 * norm);
  const double t0 = idle.predict_us(plan.calls[0].bytes, 2);
  EXPECT_NEAR(plan.calls[0].time_us, t0 + norm, 1e-9 * t0);
  EXPECT_EQ(plan.calls[0].exposed_us, 0.0);
  double exposed = 0;
  for (const dist::PlannedCall& call : plan.calls) {
    ASSERT_EQ(call.group, "dp");
    const double t = idle.predict_us(call.bytes, 2);
    if (call.hidden) {
      const double w = call.beside_us;
      EXPECT_TRUE(std::abs(w - norm) < 1e-6 || std::abs(w - add) < 1e-6 || std::abs(w - attention) < 1e-6 ||
                  std::abs(w - tail) < 1e-6)
          << call.what << ": waits " << w;
      // Waited (issued to an idle stream) or queued behind the bucket before (no wait of its own).
      EXPECT_TRUE(std::abs(call.time_us - (t + w)) < 1e-6 * t || std::abs(call.time_us - t) < 1e-6 * t)
          << call.what << ": " << call.time_us << " us against idle " << t << " + " << w;
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
  expect_same_plan(plan, dist::plan_step(s, with_loaded_rows(1.5), "native"));
  // Twice the LayerNorm's cost: bucket 1 waits twice as long.
  s.norm_backward_ps = 2 * 4.17;
  EXPECT_NEAR(dist::plan_step(s, dist::default_fit_table(), "native").calls[0].time_us, t0 + 2 * norm, 1e-9 * t0);
}

TEST(Plan, GemmRateAndTailFlags) {
  EXPECT_EQ(run_words({"plan", "--config", kConfig, "--tp", "2", "--gemm-tflops", "800", "--backward-tail-us", "0"}), 0);
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--tp", "2", "--gemm-tflops", "0"}));
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--dp", "2", "--backward-tail-us", "-1"}));
  EXPECT_EQ(run_words({"plan", "--config", kConfig, "--dp", "2", "--norm-backward-ps", "5", "--add-backward-ps", "0"}), 0);
  EXPECT_TRUE(input_error({"plan", "--config", kConfig, "--dp", "2", "--norm-backward-ps", "-1"}));
}

}  // namespace
}  // namespace nd::cli
