// nanodist sweep end to end on three tiny sizes: each model's budget in steps from
// --tokens-per-param, its non-embedding parameter count against the closed form, sweep.csv and
// fit.json against the runs' metrics.jsonl, and a rerun that skips every finished size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dist/comm/world.h"
#include "experiments/sweep.h"
#include "experiment_fixture.h"

namespace nd::experiments {
namespace {

using namespace testing;
using train::testing::TempDir;

// GPT-2 block with biases: qkv 3C^2+3C, attention projection C^2+C, MLP 8C^2+5C, two
// LayerNorms 4C; plus the final LayerNorm 2C.
int64_t closed_form_non_embedding(int64_t layers, int64_t c) { return layers * (12 * c * c + 13 * c) + 2 * c; }

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(cell);
  return out;
}

TEST(Sweep, ThreeSizesEndToEnd) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(Device::cpu());
  const double tokens_per_param = 0.25;
  ExperimentArgs args = tiny_args(sweep_flag_set(), "sweep", dir / "data", dir / "out",
                                  {"--ladder", "1x8,1x16,2x16", "--head-dim", "8", "--tokens-per-param", "0.25",
                                   "--bootstrap", "50"});
  std::ostringstream log;
  QueueOutcome first = run_sweep(args, *comm, &log);
  EXPECT_EQ(first.trained, 3);

  const std::vector<std::string> rows = lines_of(dir / "out/sweep.csv");
  ASSERT_EQ(rows.size(), 4u);
  const std::vector<std::string> header = split(rows[0]);
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const std::string fit = read_text(dir / "out/fit.json");
  const int64_t tokens_per_step = 4 * 16;
  const std::vector<std::pair<int, int>> shapes = {{1, 8}, {1, 16}, {2, 16}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto [layers, width] = shapes[i];
    const std::vector<std::string> row = split(rows[i + 1]);
    const std::string name = std::to_string(layers) + "x" + std::to_string(width);
    EXPECT_EQ(row[0], name);
    const int64_t n = closed_form_non_embedding(layers, width);
    EXPECT_EQ(std::stoll(row[column("non_embedding_params")]), n) << name;
    const int64_t steps = (static_cast<int64_t>(tokens_per_param * n) + tokens_per_step - 1) / tokens_per_step;
    RunFile run = read_run_file(dir / ("out/" + name + "/metrics.jsonl"));
    ASSERT_TRUE(run.finished);
    EXPECT_EQ(std::stoll(row[column("steps")]), steps) << name;
    EXPECT_EQ(std::stoll(row[column("tokens")]), steps * tokens_per_step);
    EXPECT_NEAR(std::stod(row[column("tokens_per_param")]), static_cast<double>(steps * tokens_per_step) / n, 1e-6);
    EXPECT_NEAR(std::stod(row[column("final_val_loss")]), run.val_losses.back(), 1e-6) << name;
    EXPECT_NEAR(std::stod(row[column("best_val_loss")]), run.best_val_loss, 1e-6);
    const size_t at = fit.find("\"name\":\"" + name + "\"");
    ASSERT_NE(at, std::string::npos);
    EXPECT_NEAR(number_after(fit, "final_val_loss", at), run.val_losses.back(), 1e-6);
  }
  for (const char* law : {"\"power_law\"", "\"power_law_offset\""}) {
    const size_t at = fit.find(law);
    ASSERT_NE(at, std::string::npos);
    EXPECT_TRUE(std::isfinite(number_after(fit, "alpha", at))) << law;
    EXPECT_TRUE(std::isfinite(number_after(fit, "a", at))) << law;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "out/report.md"));
  EXPECT_NE(log.str().find("sweep: L = "), std::string::npos) << log.str();
  // Three sizes and one seed: the 3-parameter law is not determined, the losses carry no spread.
  const std::string md = read_text(dir / "out/report.md");
  EXPECT_NE(md.find("L(N) = E + a N^-alpha has 3 parameters and is fitted to"), std::string::npos) << md;
  EXPECT_NE(md.find("**warning**: one seed per size"), std::string::npos) << md;

  QueueOutcome second = run_sweep(args, *comm, nullptr);
  EXPECT_EQ(second.trained, 0);
  EXPECT_EQ(second.skipped, 3);
}

// --lr-base-width 16: a size 8 wide trains at twice --lr, one 16 wide at --lr, and a size that
// sets its own lr keeps it; the peak of each run's logged schedule says what it trained at.
TEST(Sweep, WidthScaledLearningRate) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  const std::string experiment = dir / "ladder.conf";
  std::ofstream(experiment) << "[1x8]\nn-layer = 1\nn-embd = 8\nn-head = 1\n"
                               "[1x16]\nn-layer = 1\nn-embd = 16\nn-head = 2\n"
                               "[1x16-own-lr]\nn-layer = 1\nn-embd = 16\nn-head = 2\nlr = 3e-3\n";
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(Device::cpu());
  ExperimentArgs args = tiny_args(sweep_flag_set(), "sweep", dir / "data", dir / "out",
                                  {"--experiment", experiment, "--lr-base-width", "16", "--max-iters", "8",
                                   "--log-interval", "1", "--bootstrap", "10"});
  EXPECT_EQ(run_sweep(args, *comm, nullptr).trained, 3);
  const double base_lr = 1e-2;  // tiny_args' --lr
  const std::vector<std::pair<std::string, double>> expected = {
      {"1x8", base_lr * 16 / 8}, {"1x16", base_lr}, {"1x16-own-lr", 3e-3}};
  const std::vector<std::string> rows = lines_of(dir / "out/sweep.csv");
  ASSERT_EQ(rows.size(), 4u);
  const std::vector<std::string> header = split(rows[0]);
  const size_t lr_column = static_cast<size_t>(std::find(header.begin(), header.end(), "lr") - header.begin());
  ASSERT_LT(lr_column, header.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [name, lr] = expected[i];
    const RunFile run = read_run_file(dir / ("out/" + name + "/metrics.jsonl"));
    ASSERT_FALSE(run.lrs.empty()) << name;
    EXPECT_NEAR(*std::max_element(run.lrs.begin(), run.lrs.end()), lr, 1e-9) << name;
    const std::vector<std::string> row = split(rows[i + 1]);
    EXPECT_EQ(row[0], name);
    EXPECT_NEAR(std::stod(row[lr_column]), lr, 1e-12) << name;
  }
}

// --seeds 2: each size trains twice (--seed and --seed + 1) into OUT/<size>/seed<k>/, and its point
// is the mean of the two runs' final val losses with their sample standard deviation.
TEST(Sweep, SeedsAverageEachSize) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(Device::cpu());
  ExperimentArgs args = tiny_args(sweep_flag_set(), "sweep", dir / "data", dir / "out",
                                  {"--ladder", "1x8,1x16", "--head-dim", "8", "--seeds", "2", "--max-iters", "6",
                                   "--bootstrap", "10"});
  EXPECT_EQ(run_sweep(args, *comm, nullptr).trained, 4);
  const std::vector<std::string> rows = lines_of(dir / "out/sweep.csv");
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<std::string> header = split(rows[0]);
  auto column = [&](const std::string& name) {
    const size_t at = static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
    EXPECT_LT(at, header.size()) << name;
    return at;
  };
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<std::string> row = split(rows[i + 1]);
    const std::string name = row[0];
    const double a = read_run_file(dir / ("out/" + name + "/seed0/metrics.jsonl")).val_losses.back();
    const double b = read_run_file(dir / ("out/" + name + "/seed1/metrics.jsonl")).val_losses.back();
    EXPECT_NE(a, b) << name << ": the two seeds trained the same run";
    EXPECT_EQ(std::stoi(row[column("seeds")]), 2);
    EXPECT_NEAR(std::stod(row[column("final_val_loss")]), 0.5 * (a + b), 1e-6) << name;
    EXPECT_NEAR(std::stod(row[column("final_val_loss_spread")]), std::fabs(a - b) / std::sqrt(2.0), 1e-6) << name;
  }
  EXPECT_EQ(run_sweep(args, *comm, nullptr).skipped, 4);
}

// A rerun reuses a size only while its settings are unchanged: an unchanged rerun skips every size;
// one where a size's width changed stops before training anything, naming that size's folder and
// the key, and leaves every run as it was.
TEST(Sweep, ChangedSizeStopsTheRerun) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  std::unique_ptr<dist::Comm> comm = dist::make_world_comm(Device::cpu());
  auto write_sizes = [&](int large_width) {
    std::ofstream(dir / "sizes.conf") << "[small]\nn-embd = 8\n[mid]\nn-embd = 12\n[large]\nn-embd = "
                                      << large_width << "\nn-head = 2\n";
  };
  auto sweep = [&] {
    ExperimentArgs args = tiny_args(sweep_flag_set(), "sweep", dir / "data", dir / "out",
                                    {"--experiment", dir / "sizes.conf", "--max-iters", "6", "--bootstrap", "20"});
    return run_sweep(args, *comm, nullptr);
  };
  write_sizes(16);
  EXPECT_EQ(sweep().trained, 3);
  const std::string metrics = dir / "out/large/metrics.jsonl";
  const std::string before = read_text(metrics);
  QueueOutcome again = sweep();
  EXPECT_EQ(again.trained, 0);
  EXPECT_EQ(again.skipped, 3);

  write_sizes(24);
  try {
    sweep();
    ADD_FAILURE() << "a rerun with another width for 'large' reused its folder";
  } catch (const Error& e) {
    const std::string expected = comm->rank() == 0
                                     ? "run folder " + (dir / "out/large") + " was trained with other settings: " +
                                           "n-embd 16 there vs 24 now; pick a fresh --out or delete that folder"
                                     : "rank 0 found a run folder trained with other settings";
    EXPECT_NE(e.message().find(expected), std::string::npos) << e.message();
  }
  EXPECT_EQ(read_text(metrics), before);
}

TEST(Sweep, BudgetAndLadderErrors) {
  EXPECT_EQ(steps_for_budget(1000, 20, 64), 313);  // ceil(20000 / 64)
  EXPECT_EQ(steps_for_budget(10, 0.001, 64), 1);
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  const std::string base = "sweep --data " + (dir / "data") + " --out " + (dir / "out") + " ";
  train::testing::expect_cli_error(train::testing::run_nanodist(base, dir.path()), "no model sizes");
  train::testing::expect_cli_error(
      train::testing::run_nanodist(base + "--ladder 1x16 --tokens-per-param 2 --max-iters 5", dir.path()),
      "not both");
  train::testing::expect_cli_error(train::testing::run_nanodist(base + "--ladder 1x15 --head-dim 8", dir.path()),
                                   "not a multiple of --head-dim 8");
  train::testing::expect_cli_error(train::testing::run_nanodist(base + "--ladder 1x16 --lr-base-width -1", dir.path()),
                                   "--lr-base-width");
  train::testing::expect_cli_error(train::testing::run_nanodist(base + "--ladder 1x16 --seeds 0", dir.path()),
                                   "--seeds");
}

}  // namespace
}  // namespace nd::experiments
