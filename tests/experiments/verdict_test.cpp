// The verdict rules on hand-made metrics (one case per verdict and per edge of a threshold;
// unstable over seeds against the control), and metrics.jsonl reading: restarts replace records,
// a truncated last line means unfinished.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "experiments/run_metrics.h"
#include "tensor/error.h"
#include "experiments/verdict.h"
#include "train/train_fixture.h"

namespace nd::experiments {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 100 steps, loss falling from 4 to 2, gradient norm 0.5 with a small wobble, evals at 50 and 100.
RunMetrics healthy() {
  RunMetrics m;
  for (int s = 1; s <= 100; ++s)
    m.steps.push_back(StepRecord{s, 4.0 - 2.0 * (s - 1) / 99.0, 1e-3, 0.5 + 0.05 * std::sin(s)});
  m.evals = {EvalRecord{50, 3.0, 3.0}, EvalRecord{100, 2.1, 2.0}};
  m.finished = true;
  return m;
}

TEST(Verdict, HealthyRunIsOk) {
  RunSummary r = summarize_run(healthy());
  EXPECT_EQ(r.steps, 100);
  EXPECT_DOUBLE_EQ(r.first_loss, 4.0);
  EXPECT_DOUBLE_EQ(r.final_val_loss, 2.1);
  EXPECT_DOUBLE_EQ(r.best_val_loss, 2.1);
  EXPECT_EQ(r.first_nonfinite_step, -1);
  EXPECT_EQ(r.grad_spikes, 0);
  EXPECT_EQ(r.zero_grad_share, 0.0);
  EXPECT_NEAR(r.grad_norm_max, 0.55, 1e-3);
  EXPECT_EQ(judge_run(r, 3.3).verdict, Verdict::Ok);
}

TEST(Verdict, NonFiniteLossOrRiseIsDiverged) {
  RunMetrics m = healthy();
  m.steps[6].loss = kNaN;  // step 7
  m.steps[9].loss = kNaN;
  Judgement j = judge_run(summarize_run(m), 3.3);
  EXPECT_EQ(j.verdict, Verdict::Diverged);
  EXPECT_NE(j.why.find("step 7"), std::string::npos) << j.why;

  m = healthy();
  for (size_t i = 80; i < 100; ++i) m.steps[i].loss = 6.1;  // last tenth above 1.5 x 4.0
  EXPECT_EQ(judge_run(summarize_run(m), 3.3).verdict, Verdict::Diverged);
  for (size_t i = 80; i < 100; ++i) m.steps[i].loss = 5.9;  // below it: not diverged
  EXPECT_NE(judge_run(summarize_run(m), 3.3).verdict, Verdict::Diverged);
}

TEST(Verdict, ZeroGradientsFrozenLossOrUnigramLossIsDead) {
  RunMetrics m = healthy();
  for (size_t i = 0; i < 50; ++i) m.steps[i].grad_norm = 0.0;  // half the steps
  RunSummary r = summarize_run(m);
  EXPECT_DOUBLE_EQ(r.zero_grad_share, 0.5);
  EXPECT_EQ(judge_run(r, 3.3).verdict, Verdict::Dead);
  m.steps[0].grad_norm = 0.1;  // 49%: not dead by this rule
  EXPECT_EQ(judge_run(summarize_run(m), 3.3).verdict, Verdict::Ok);

  m = healthy();
  for (StepRecord& s : m.steps) s.loss = 4.0 - 0.039 * (s.step - 1) / 99.0;  // moves < 1%
  Judgement frozen = judge_run(summarize_run(m), 0.0);
  EXPECT_EQ(frozen.verdict, Verdict::Dead);
  EXPECT_NE(frozen.why.find("frozen"), std::string::npos);

  m = healthy();  // final val 2.1
  EXPECT_EQ(judge_run(summarize_run(m), 2.1 / 0.98 - 0.01).verdict, Verdict::Dead);
  EXPECT_EQ(judge_run(summarize_run(m), 2.1 / 0.98 + 0.01).verdict, Verdict::Ok);
  EXPECT_EQ(judge_run(summarize_run(m), 0.0).verdict, Verdict::Ok) << "0 turns the unigram test off";
}

// A run's half of the unstable rule; a run alone is never unstable (that needs the control).
TEST(Verdict, RepeatedGradientSpikesAreCountedPerRun) {
  RunMetrics m = healthy();
  for (size_t i : {30, 50, 70}) m.steps[i].grad_norm = 3.0;  // > 5 x the median 0.5
  RunSummary r = summarize_run(m);
  EXPECT_EQ(r.grad_spikes, 3);
  EXPECT_EQ(r.spike_steps_counted, 90);
  EXPECT_TRUE(spikes_repeatedly(r));
  EXPECT_EQ(judge_run(r, 3.3).verdict, Verdict::Ok);
  m.steps[70].grad_norm = 2.0;  // 4x: not a spike
  EXPECT_FALSE(spikes_repeatedly(summarize_run(m)));
  EXPECT_EQ(judge_run(summarize_run(m), 3.3).verdict, Verdict::Ok);
  m = healthy();
  for (size_t i : {1, 3, 5, 7}) m.steps[i].grad_norm = 10.0;  // early large norms are settling, not spikes
  EXPECT_EQ(summarize_run(m).grad_spikes, 0);
  EXPECT_EQ(judge_run(summarize_run(m), 3.3).verdict, Verdict::Ok);
}

// healthy() with `spikes` gradient norms of 3.0 (6x the median 0.5) after the settling tenth.
RunSummary with_spikes(int spikes) {
  RunMetrics m = healthy();
  for (int k = 0; k < spikes; ++k) m.steps[20 + 3 * k].grad_norm = 3.0;
  RunSummary r = summarize_run(m);
  EXPECT_EQ(r.grad_spikes, spikes);
  return r;
}

std::vector<RunSummary> seeds_with_spikes(std::initializer_list<int> spikes) {
  std::vector<RunSummary> out;
  for (int s : spikes) out.push_back(with_spikes(s));
  return out;
}

// Ok runs with the given spikes per seed and final val losses.
VariantRuns variant(std::initializer_list<int> spikes, const std::vector<double>& finals) {
  VariantRuns v;
  v.summaries = seeds_with_spikes(spikes);
  v.runs.resize(v.summaries.size());
  v.final_val = seed_stats(finals);
  return v;
}

TEST(Verdict, SpikesOnMostSeedsFarBeyondTheControlAreUnstable) {
  // The GPU run of large_batch: the control spiked 3 times on one seed, no-warmup 16 times on that
  // seed and not on the others, and ended far worse. One spiky seed of three decides nothing: silent.
  const VariantRuns control = variant({0, 3, 1}, {1.62, 1.63, 1.61});
  const VariantRuns no_warmup = variant({1, 16, 2}, {2.39, 2.35, 2.43});
  Judgement j = judge_variant(no_warmup, control, false);
  EXPECT_EQ(j.verdict, Verdict::Silent) << j.why;
  std::string why;
  EXPECT_FALSE(is_unstable(no_warmup.summaries, control.summaries, &why));

  // Every seed spiking far beyond the control on the same seed: unstable, and the why says so.
  j = judge_variant(variant({12, 16, 9}, {2.39, 2.35, 2.43}), control, false);
  EXPECT_EQ(j.verdict, Verdict::Unstable);
  EXPECT_NE(j.why.find("on 3 of 3 seeds"), std::string::npos) << j.why;
  EXPECT_NE(j.why.find("12, 16, 9 vs the control's 0, 3, 1"), std::string::npos) << j.why;
  // Unstable outranks silent, and needs no loss difference.
  EXPECT_EQ(judge_variant(variant({12, 16, 9}, {1.62, 1.63, 1.61}), control, false).verdict, Verdict::Unstable);

  // A majority is more than half: 2 of 3 seeds are enough, 2 of 4 are not.
  EXPECT_EQ(judge_variant(variant({12, 2, 9}, {1.62, 1.63, 1.61}), control, false).verdict, Verdict::Unstable);
  const VariantRuns control4 = variant({0, 0, 0, 0}, {1.62, 1.63, 1.61, 1.62});
  EXPECT_EQ(judge_variant(variant({12, 9, 0, 0}, {1.62, 1.63, 1.61, 1.62}), control4, false).verdict, Verdict::Ok);
  EXPECT_EQ(judge_variant(variant({12, 9, 4, 0}, {1.62, 1.63, 1.61, 1.62}), control4, false).verdict,
            Verdict::Unstable);

  // Against the control on the same seed: 9 spikes are 3x the control's 3, 8 are not; spikes the
  // control shows as much are its normal behaviour, not the variant's instability.
  const VariantRuns spiky_control = variant({3, 3, 4}, {1.62, 1.63, 1.61});
  EXPECT_EQ(judge_variant(variant({9, 9, 12}, {1.62, 1.63, 1.61}), spiky_control, false).verdict, Verdict::Unstable);
  EXPECT_EQ(judge_variant(variant({8, 9, 11}, {1.62, 1.63, 1.61}), spiky_control, false).verdict, Verdict::Ok);
  EXPECT_EQ(judge_variant(variant({4, 3, 3}, {1.62, 1.63, 1.61}), spiky_control, false).verdict, Verdict::Ok);
  // A variant with fewer than kMinSpikes spikes is not unstable against a spike-free control.
  EXPECT_EQ(judge_variant(variant({2, 2, 2}, {1.62, 1.63, 1.61}), variant({0, 0, 0}, {1.62, 1.63, 1.61}), false)
                .verdict,
            Verdict::Ok);

  // The control with a few spikes on every seed is ok: it is the reference, never unstable.
  j = judge_variant(spiky_control, spiky_control, true);
  EXPECT_EQ(j.verdict, Verdict::Ok) << j.why;
  EXPECT_EQ(judge_variant(variant({12, 16, 9}, {1.62, 1.63, 1.61}), variant({12, 16, 9}, {1.62, 1.63, 1.61}), true)
                .verdict,
            Verdict::Ok);

  // Runs of different lengths compare per counted step: 6 spikes in 180 counted steps are the
  // control's rate of 3 in 90, not twice it.
  RunMetrics longer;
  for (int s = 1; s <= 200; ++s)
    longer.steps.push_back(StepRecord{s, 4.0 - 2.0 * (s - 1) / 199.0, 1e-3, 0.5 + 0.05 * std::sin(s)});
  for (int k = 0; k < 9; ++k) longer.steps[30 + 10 * k].grad_norm = 3.0;
  const RunSummary nine_in_180 = summarize_run(longer);
  ASSERT_EQ(nine_in_180.spike_steps_counted, 180);
  EXPECT_FALSE(is_unstable({nine_in_180}, {with_spikes(3)}, &why)) << "9 in 180 is 1.5x 3 in 90";
  EXPECT_TRUE(is_unstable({nine_in_180}, {with_spikes(1)}, &why)) << "9 in 180 is 4.5x 1 in 90";

  EXPECT_THROW(is_unstable(seeds_with_spikes({9, 9}), seeds_with_spikes({0}), &why), Error);
}

// judge_variant on final losses alone (no spikes recorded).
Judgement judge_losses(const std::vector<Judgement>& runs, const SeedStats& variant_final,
                       const SeedStats& control_final, bool is_control) {
  return judge_variant(VariantRuns{runs, {}, variant_final}, VariantRuns{std::vector<Judgement>(runs.size()), {},
                                                                          control_final},
                       is_control);
}

TEST(Verdict, WorseThanControlBeyondTheSpreadIsSilent) {
  SeedStats control = seed_stats({2.00, 2.01, 1.99});
  EXPECT_DOUBLE_EQ(control.mean, 2.0);
  EXPECT_NEAR(control.spread, 0.01, 1e-12);
  const std::vector<Judgement> ok_runs(3);
  EXPECT_EQ(judge_losses(ok_runs, seed_stats({2.10, 2.11, 2.09}), control, false).verdict, Verdict::Silent);
  // 0.015 worse: 1.5 spreads, inside the noise.
  EXPECT_EQ(judge_losses(ok_runs, seed_stats({2.015, 2.025, 2.005}), control, false).verdict, Verdict::Ok);
  // Better than the control is never silent.
  EXPECT_EQ(judge_losses(ok_runs, seed_stats({1.8, 1.81, 1.79}), control, false).verdict, Verdict::Ok);
  // One seed: no spread, so the 0.5% floor decides.
  EXPECT_EQ(judge_losses({Judgement{}}, seed_stats({2.02}), seed_stats({2.0}), false).verdict, Verdict::Silent);
  EXPECT_EQ(judge_losses({Judgement{}}, seed_stats({2.005}), seed_stats({2.0}), false).verdict, Verdict::Ok);
  // The control itself, and a variant with a worse run verdict, keep the run verdict.
  EXPECT_EQ(judge_losses(ok_runs, seed_stats({2.1, 2.1, 2.1}), control, true).verdict, Verdict::Ok);
  std::vector<Judgement> mixed(3);
  mixed[1].verdict = Verdict::Unstable;
  mixed[2].verdict = Verdict::Dead;
  EXPECT_EQ(judge_losses(mixed, seed_stats({2.1, 2.1, 2.1}), control, false).verdict, Verdict::Dead);
  EXPECT_FALSE(seed_stats({2.0, kNaN}).finite);
}

TEST(RunMetrics, RestartReplacesRecordsAndTruncationMeansUnfinished) {
  train::testing::TempDir dir;
  const std::string path = dir / "metrics.jsonl";
  std::ofstream(path) << "{\"step\":1,\"loss\":4.0,\"lr\":0.001,\"grad_norm\":0.5,\"ms\":1,\"tok_per_s\":2,\"mfu\":null}\n"
                         "{\"step\":2,\"loss\":3.0,\"lr\":0.001,\"grad_norm\":null}\n"
                         "{\"step\":2,\"val_loss\":3.5,\"train_loss\":3.4,\"elapsed_s\":1}\n"
                         "{\"step\":3,\"loss\":2.5,\"lr\":0.001,\"grad_norm\":0.4}\n"
                         // resumed from a checkpoint at step 1:
                         "{\"step\":2,\"loss\":null,\"lr\":0.001,\"grad_norm\":0.7}\n"
                         "{\"final\":true,\"best_val_loss\":null,\"params\":123,\"tokens\":456}\n";
  RunMetrics m = read_run_metrics(path);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(m.steps[1].grad_norm, 0.7);
  EXPECT_TRUE(std::isnan(m.steps[1].loss));
  EXPECT_TRUE(m.evals.empty()) << "the eval at step 2 belonged to the interrupted attempt";
  EXPECT_TRUE(m.finished);
  EXPECT_EQ(m.params, 123);
  EXPECT_EQ(m.tokens, 456);
  EXPECT_TRUE(std::isnan(m.best_val_loss));

  std::ofstream(path) << "{\"step\":1,\"loss\":4.0,\"grad_norm\":0.5}\n{\"step\":2,\"lo";
  m = read_run_metrics(path);
  EXPECT_FALSE(m.finished);
  EXPECT_EQ(m.steps.size(), 1u);
  std::ofstream(path) << "{\"step\":1,\"loss\":4.0}\n{\"final\":true}\n{\"step\":2,\"loss\":3.0}\n";
  EXPECT_FALSE(read_run_metrics(path).finished) << "records after the final record: not finished";
  std::ofstream(path) << "{\"step\":1,\"loss\":4.0}\nnot json\n{\"final\":true}\n";
  try {
    read_run_metrics(path);
    FAIL() << "a malformed line inside the file must be an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.jsonl:2"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(read_run_metrics(dir / "absent.jsonl").finished);
}

}  // namespace
}  // namespace nd::experiments
