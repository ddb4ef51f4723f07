// nanodist ablate end to end on a tiny model: control + 2 variants x 2 seeds; the report says
// what the runs' metrics.jsonl say; each seed starts every variant from the same data and
// initialisation; a rerun skips finished runs and completes an unfinished one; CLI errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "dist/comm/world.h"
#include "experiments/ablate.h"
#include "experiments/unigram_baseline.h"
#include "experiment_fixture.h"

namespace nd::experiments {
namespace {

using namespace testing;
using train::testing::TempDir;
namespace fs = std::filesystem;

class AblateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    train::testing::write_tiny_data(dir_ / "data");
    comm_ = dist::make_world_comm(Device::cpu());
  }
  QueueOutcome ablate(std::ostream* log) {
    ExperimentArgs args = tiny_args(ablate_flag_set(), "ablate", dir_ / "data", dir_ / "out",
                                    {"--max-iters", "24", "--seeds", "2", "--variants", "lr-x10,no-clip"});
    return run_ablate(args, *comm_, log);
  }
  TempDir dir_;
  std::unique_ptr<dist::Comm> comm_;
};

// One seed and 6 logged steps: report.md says the verdicts rest on thin statistics.
TEST_F(AblateTest, ThinStatisticsAreWarnedAbout) {
  ExperimentArgs args = tiny_args(ablate_flag_set(), "ablate", dir_ / "data", dir_ / "thin",
                                  {"--max-iters", "24", "--log-interval", "4", "--seeds", "1", "--variants", "no-clip"});
  run_ablate(args, *comm_, nullptr);
  const std::string md = read_text(dir_ / "thin/report.md");
  EXPECT_NE(md.find("## Warnings: thin statistics"), std::string::npos) << md;
  EXPECT_NE(md.find("**warning**: one seed per variant"), std::string::npos) << md;
  EXPECT_NE(md.find("**warning**: no-clip: its gradient-norm measurements"), std::string::npos) << md;
  EXPECT_NE(md.find("rest on 7 logged step(s), fewer than 20"), std::string::npos) << md;
}

TEST_F(AblateTest, ReportMatchesTheRunsAndRerunsSkipFinishedOnes) {
  std::ostringstream log;
  QueueOutcome first = ablate(&log);
  EXPECT_EQ(first.trained, 6);
  EXPECT_EQ(first.skipped, 0);
  const std::string out = dir_ / "out";
  const std::string json = read_text(out + "/report.json");
  ASSERT_FALSE(json.empty());
  ASSERT_TRUE(fs::exists(out + "/report.md"));
  EXPECT_EQ(read_text(out + "/report.md").find("Warnings"), std::string::npos) << "2 seeds, 24 logged steps";
  EXPECT_NEAR(number_after(json, "unigram_val_loss"), unigram_val_loss(dir_ / "data"), 1e-6);

  std::map<std::string, double> control_finals;
  double control_mean = 0, control_sd = 0;
  for (const char* name : {"control", "no-clip", "lr-x10"}) {
    const size_t at = json.find("\"name\":\"" + std::string(name) + "\"");
    ASSERT_NE(at, std::string::npos) << name;
    std::vector<double> finals, bests, all_norms;
    std::string spikes_cell = "| ";
    for (int k = 0; k < 2; ++k) {
      const std::string run_dir = out + "/" + name + "/seed" + std::to_string(k);
      RunFile run = read_run_file(run_dir + "/metrics.jsonl");
      ASSERT_TRUE(run.finished) << run_dir;
      ASSERT_EQ(run.losses.size(), 24u) << "ablate logs every step by default";
      ASSERT_EQ(run.val_losses.size(), 2u);
      finals.push_back(run.val_losses.back());
      bests.push_back(run.best_val_loss);
      all_norms.insert(all_norms.end(), run.grad_norms.begin(), run.grad_norms.end());
      const size_t run_at = json.find("\"dir\":\"" + std::string(name) + "/seed" + std::to_string(k) + "\"", at);
      ASSERT_NE(run_at, std::string::npos);
      EXPECT_NE(json.find("{\"seed\":" + std::to_string(1337 + k) + ",\"dir\":\"" + name + "/seed" +
                          std::to_string(k) + "\""),
                std::string::npos);
      EXPECT_NEAR(number_after(json, "final_val_loss", run_at), run.val_losses.back(), 1e-6);
      EXPECT_NEAR(number_after(json, "grad_norm_median", run_at), median(run.grad_norms), 1e-6);
      // Spikes: norms above 5x the median of the steps after the first tenth (2 of 24).
      const std::vector<double> settled(run.grad_norms.begin() + 2, run.grad_norms.end());
      const double settled_median = median(settled);
      const auto spikes = std::count_if(settled.begin(), settled.end(), [&](double n) { return n > 5 * settled_median; });
      EXPECT_EQ(number_after(json, "grad_spikes", run_at), static_cast<double>(spikes));
      EXPECT_EQ(number_after(json, "spike_steps_counted", run_at), 22.0);
      spikes_cell += (k ? " / " : "") + std::to_string(spikes);
      EXPECT_TRUE(fs::exists(run_dir + "/train.log"));
    }
    EXPECT_NEAR(number_after(json, "mean", json.find("\"final_val_loss\"", at)), mean(finals), 1e-6) << name;
    EXPECT_NEAR(number_after(json, "spread", json.find("\"final_val_loss\"", at)), sample_sd(finals), 1e-6);
    EXPECT_NEAR(number_after(json, "mean", json.find("\"best_val_loss\"", at)), mean(bests), 1e-6);
    EXPECT_NEAR(number_after(json, "median", json.find("\"grad_norm\"", at)), median(all_norms), 1e-6);
    EXPECT_NEAR(number_after(json, "max", json.find("\"grad_norm\"", at)),
                *std::max_element(all_norms.begin(), all_norms.end()), 1e-6);
    if (std::string(name) == "control") {
      control_mean = mean(finals);
      control_sd = sample_sd(finals);
      EXPECT_EQ(number_after(json, "diff_pct", at), 0.0);
    } else {
      EXPECT_NEAR(number_after(json, "diff_pct", at), 100 * (mean(finals) - control_mean) / control_mean, 1e-4);
      const double pooled = std::sqrt(0.5 * (control_sd * control_sd + sample_sd(finals) * sample_sd(finals)));
      EXPECT_NEAR(number_after(json, "diff_spreads", at), (mean(finals) - control_mean) / pooled, 1e-4);
    }
    // report.md shows each seed's spikes in the row of the variant.
    const std::string md = read_text(out + "/report.md");
    const size_t row = md.find("\n| " + std::string(name) + " | ");
    ASSERT_NE(row, std::string::npos) << md;
    const std::string row_text = md.substr(row + 1, md.find('\n', row + 1) - row - 1);
    EXPECT_NE(row_text.find(spikes_cell + " |"), std::string::npos) << row_text << " lacks " << spikes_cell;
    EXPECT_NE(md.find("grad-norm spikes per seed (1337 / 1338)"), std::string::npos) << md;
    const size_t verdict = json.find("\"verdict\":\"", at) + 11;
    const std::string v = json.substr(verdict, json.find('"', verdict) - verdict);
    EXPECT_TRUE(v == "ok" || v == "silent" || v == "unstable" || v == "dead" || v == "diverged") << v;
  }

  // Same seed, same data and initialisation: step 1's loss (before any update) agrees across
  // variants and differs between seeds.
  for (int k = 0; k < 2; ++k) {
    const double control = read_run_file(out + "/control/seed" + std::to_string(k) + "/metrics.jsonl").losses[0];
    for (const char* name : {"no-clip", "lr-x10"})
      EXPECT_EQ(read_run_file(out + "/" + name + "/seed" + std::to_string(k) + "/metrics.jsonl").losses[0], control);
  }
  EXPECT_NE(read_run_file(out + "/control/seed0/metrics.jsonl").losses[0],
            read_run_file(out + "/control/seed1/metrics.jsonl").losses[0]);

  // A rerun trains nothing and touches no run.
  std::map<std::string, fs::file_time_type> stamps;
  for (const auto& entry : fs::recursive_directory_iterator(out))
    if (entry.path().filename() == "metrics.jsonl") stamps[entry.path().string()] = fs::last_write_time(entry.path());
  ASSERT_EQ(stamps.size(), 6u);
  QueueOutcome second = ablate(nullptr);
  EXPECT_EQ(second.trained, 0);
  EXPECT_EQ(second.skipped, 6);
  for (const auto& [path, stamp] : stamps) EXPECT_EQ(fs::last_write_time(path), stamp) << path;

  // An interrupted run (its final record lost) is completed with --resume from its checkpoint.
  const std::string cut = out + "/no-clip/seed1/metrics.jsonl";
  std::vector<std::string> lines = lines_of(cut);
  lines.pop_back();
  {
    std::ofstream rewrite(cut);
    for (const std::string& l : lines) rewrite << l << "\n";
  }
  QueueOutcome third = ablate(nullptr);
  EXPECT_EQ(third.trained, 1);
  EXPECT_EQ(third.skipped, 5);
  RunFile resumed = read_run_file(cut);
  EXPECT_TRUE(resumed.finished);
  EXPECT_EQ(resumed.losses.size(), 24u) << "resumed at the final checkpoint: no step trained again";
  const std::string log_text = read_text(out + "/no-clip/seed1/train.log");
  EXPECT_NE(log_text.find("resumed from"), std::string::npos) << log_text;
}

TEST(AblateCli, BadInputIsOneErrorLine) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  const std::string base = "ablate --data " + (dir / "data") + " --out " + (dir / "out") + " ";
  train::testing::expect_cli_error(train::testing::run_nanodist(base + "--variants no-such", dir.path()),
                                   "unknown variant 'no-such'");
  std::ofstream(dir / "bad.conf") << "n-layer = 1\n[v]\nlearning-rate = 3\n";
  train::testing::expect_cli_error(
      train::testing::run_nanodist(base + "--experiment " + (dir / "bad.conf"), dir.path()),
      "unknown key 'learning-rate' at " + (dir / "bad.conf") + ":3");
  train::testing::expect_cli_error(train::testing::run_nanodist(base + "--seeds 0", dir.path()), "--seeds");
  train::testing::expect_cli_error(train::testing::run_nanodist("ablate --data " + (dir / "data"), dir.path()),
                                   "--out DIR is required");
}

// Each run folder records the settings it was started with: an unchanged rerun skips every run;
// after a variant's lr changed, the rerun stops with one line naming that folder and the key,
// whether the run had finished or was cut short (it would otherwise resume), and trains nothing.
TEST(AblateCli, RerunWithChangedVariantStops) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  const std::string command = "ablate --data " + (dir / "data") + " --out " + (dir / "out") + " --experiment " +
                              (dir / "exp.conf") +
                              " --seeds 1 --max-iters 6 --n-layer 1 --n-head 1 --n-embd 16 --block-size 16 "
                              "--batch-size 4 --lr 1e-2 --warmup-iters 2 --eval-interval 3 --eval-iters 2";
  std::ofstream(dir / "exp.conf") << "min-lr = 1e-3\n[fast]\nlr = x2\n";
  train::testing::CommandResult first = train::testing::run_nanodist(command, dir.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string metrics = dir / "out/fast/seed0/metrics.jsonl";
  const std::string before = read_text(metrics);
  ASSERT_TRUE(read_run_file(metrics).finished);

  train::testing::CommandResult again = train::testing::run_nanodist(command, dir.path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("[1/2] control/seed0: finished before, skipped"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("[2/2] fast/seed0: finished before, skipped"), std::string::npos) << again.out;

  std::ofstream(dir / "exp.conf") << "min-lr = 1e-3\n[fast]\nlr = x3\n";
  const std::string expected = "run folder " + (dir / "out/fast/seed0") +
                               " was trained with other settings: lr 0.02 there vs 0.03 now; pick a fresh --out or "
                               "delete that folder";
  train::testing::expect_cli_error(train::testing::run_nanodist(command, dir.path()), expected);
  EXPECT_EQ(read_text(metrics), before);

  std::vector<std::string> lines = lines_of(metrics);
  lines.pop_back();
  {
    std::ofstream rewrite(metrics);
    for (const std::string& l : lines) rewrite << l << "\n";
  }
  const std::string cut = read_text(metrics);
  train::testing::expect_cli_error(train::testing::run_nanodist(command, dir.path()), expected);
  EXPECT_EQ(read_text(metrics), cut) << "an unfinished run of other settings was resumed";
}

}  // namespace
}  // namespace nd::experiments
