// Data-parallel training equals single-rank training: N ranks with batch B/N each give the
// losses of one rank with batch B (f32, relative 1e-5) with the native and the ring all-reduce;
// parameters end bit-identical on every rank; a checkpoint written by N ranks resumes on fewer
// ranks and continues exactly as the uninterrupted run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <memory>

#include "dist/world.h"
#include "train/checkpoint.h"
#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kGlobalBatch = 12;  // divisible by 1, 2, 3 and 4 ranks
constexpr int kSteps = 20;

class DDPTest : public testing::MpiDataTest {
 protected:
  TrainConfig config(const std::string& out, int ranks) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.batch_size = kGlobalBatch / ranks;
    c.max_iters = kSteps;
    c.lr_decay_iters = kSteps;
    c.eval_interval = 0;
    c.eval_iters = 2;
    c.log_interval = 1000;
    c.bucket_mb = 0.01;  // several buckets even for a tiny model
    return c;
  }


  // The single-rank run with the whole batch, computed by every rank alone.
  std::vector<double> reference_losses() const {
    TrainConfig c = config("reference_" + std::to_string(comm_->rank()), 1);
    return run_training(c).step_losses;
  }

  void expect_close(const std::vector<double>& got, const std::vector<double>& want, size_t first = 0) const {
    ASSERT_EQ(got.size() + first, want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_LE(std::abs(got[i] - want[first + i]), 1e-5 * std::abs(want[first + i]))
          << "step " << first + i + 1 << " on " << comm_->size() << " ranks: " << got[i] << " vs " << want[first + i];
  }

  void expect_same_parameters(const TrainResult& r) const {
    int64_t mine = static_cast<int64_t>(r.params_hash >> 1), lo = mine, hi = mine;
    comm_->host_allreduce(&hi, 1, dist::HostReduce::Max);
    lo = -lo;
    comm_->host_allreduce(&lo, 1, dist::HostReduce::Max);
    EXPECT_EQ(hi, -lo) << "parameters differ between ranks";
  }

};

TEST_F(DDPTest, NativeAllreduceMatchesOneRank) {
  std::vector<double> reference = reference_losses();
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("native", comm_->size());
  c.allreduce = "native";
  TrainResult r = run_training(c, ctx);
  expect_close(mean_losses(r.step_losses, *comm_), reference);
  expect_same_parameters(r);
}

TEST_F(DDPTest, RingAllreduceMatchesOneRank) {
  std::vector<double> reference = reference_losses();
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("ring", comm_->size());
  c.allreduce = "ring";
  c.grad_accum = 2;  // only the last micro-step communicates
  c.batch_size = kGlobalBatch / (2 * comm_->size()) > 0 ? kGlobalBatch / comm_->size() / 2 : 1;
  TrainResult r = run_training(c, ctx);
  if (kGlobalBatch % (2 * comm_->size()) == 0) {
    // Same global batch as the reference (B/N/2 rows x 2 micro-steps per rank).
    TrainConfig ref = config("reference_accum_" + std::to_string(comm_->rank()), 1);
    ref.batch_size = kGlobalBatch / 2;
    ref.grad_accum = 2;
    expect_close(mean_losses(r.step_losses, *comm_), run_training(ref).step_losses);
  }
  expect_same_parameters(r);
  (void)reference;
}

TEST_F(DDPTest, CheckpointResumesOnFewerRanks) {
  std::vector<double> reference = reference_losses();
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("written", comm_->size());
  c.ckpt_interval = kSteps / 2;
  c.keep = 0;
  run_training(c, ctx);
  // Keep only the half-way checkpoint in a fresh directory and resume from it.
  if (comm_->rank() == 0) {
    std::filesystem::create_directories(root_ + "/half");
    std::filesystem::copy_file(checkpoint_path(root_ + "/written", kSteps / 2), checkpoint_path(root_ + "/half", kSteps / 2));
  }
  comm_->barrier();
  for (int ranks : {2, 1}) {
    if (ranks >= comm_->size()) continue;
    bool member = comm_->rank() < ranks;
    std::unique_ptr<dist::Comm> sub = comm_->split(member ? 0 : 1, comm_->rank());
    if (member) {
      TrainConfig resumed = config("resumed_on_" + std::to_string(ranks), ranks);
      std::filesystem::path out(resumed.out_dir);
      if (comm_->rank() == 0) std::filesystem::copy(root_ + "/half", out);
      sub->barrier();
      resumed.resume = true;
      RunContext sub_ctx;
      sub_ctx.comm = ranks > 1 ? sub.get() : nullptr;
      TrainResult r = run_training(resumed, sub_ctx);
      EXPECT_EQ(r.first_step, kSteps / 2);
      expect_close(ranks > 1 ? mean_losses(r.step_losses, *sub) : r.step_losses, reference, kSteps / 2);
    }
    comm_->barrier();
  }
}

}  // namespace
}  // namespace nd::train
