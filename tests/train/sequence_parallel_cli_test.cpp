// `nanodist train --tp 2 --sequence-parallel true` end to end under `mpirun -np 2`: a tiny model
// with dropout logs the step losses of the one-process tp = 1 run (metrics.jsonl, relative 1e-5), at
// a batch of 3 and at a micro-batch of 1, with the split collectives and unsplit; a sequence length
// the tp does not divide is one `nanodist: error:` line.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "process_helpers.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::expect_cli_error;
using testing::run_nanodist;
using testing::TempDir;

constexpr int kSteps = 4;

std::string train_args(const TempDir& dir, const std::string& out, const std::string& extra, int block_size = 8) {
  return "train --data " + (dir / "data") + " --out " + (dir / out) +
         " --n-layer 1 --n-head 2 --n-embd 8 --block-size " + std::to_string(block_size) +
         " --dropout 0.1 --eval-interval 0"
         " --eval-iters 1 --warmup-iters 1 --log-interval 1 --max-iters " +
         std::to_string(kSteps) + " --lr-decay-iters " + std::to_string(kSteps) + " " + extra;
}

// The "loss" of every step line of a metrics.jsonl.
std::vector<double> step_losses(const std::string& metrics_path) {
  std::ifstream in(metrics_path);
  std::vector<double> losses;
  const std::string key = ",\"loss\":";
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find(key);
    if (line.rfind("{\"step\":", 0) == 0 && at != std::string::npos) losses.push_back(std::stod(line.substr(at + key.size())));
  }
  return losses;
}

class SequenceParallelCli : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_tiny_data(dir / "data", 3000); }
  TempDir dir;

  // The tp = 1 run and the sequence-parallel tp 2 run (`sp_flags` added) at `batch` log the same losses.
  void expect_two_ranks_train_like_one(int batch, const std::string& sp_flags) {
    SCOPED_TRACE("batch " + std::to_string(batch) + " " + sp_flags);
    const std::string b = "--batch-size " + std::to_string(batch);
    auto one = run_nanodist(train_args(dir, "tp1", b + " --overwrite true"), dir.path());
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const std::string mpirun = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                               std::string(ND_MPIEXEC) + " -np 2 --oversubscribe " + ND_NANODIST_BIN + " ";
    const std::string command =
        mpirun + train_args(dir, "sp", b + " --overwrite true --tp 2 --sequence-parallel true " + sp_flags) + " > " +
        (dir / "sp_out.txt") + " 2> " + (dir / "sp_err.txt");
    ASSERT_EQ(std::system(command.c_str()), 0) << testing::slurp_file(dir / "sp_err.txt");
    std::vector<double> want = step_losses(dir / "tp1/metrics.jsonl"), got = step_losses(dir / "sp/metrics.jsonl");
    ASSERT_EQ(want.size(), static_cast<size_t>(kSteps));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(std::fabs(got[i] - want[i]), 1e-5 * std::fabs(want[i])) << "step " << i + 1;
  }
};

TEST_F(SequenceParallelCli, TwoRanksTrainLikeOne) { expect_two_ranks_train_like_one(3, ""); }

TEST_F(SequenceParallelCli, TwoRanksTrainLikeOneAtMicroBatchOne) { expect_two_ranks_train_like_one(1, ""); }

TEST_F(SequenceParallelCli, UnsplitCollectivesTrainLikeOne) {
  expect_two_ranks_train_like_one(3, "--tp-overlap false");
}

TEST_F(SequenceParallelCli, BadInputIsOneErrorLine) {
  expect_cli_error(
      run_nanodist(train_args(dir, "odd", "--tp 2 --sequence-parallel true --batch-size 2", 7), dir.path()),
      "--sequence-parallel: --block-size 7 is not divisible by --tp 2");
}

}  // namespace
}  // namespace nd::train
