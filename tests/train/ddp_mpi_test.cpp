// Data-parallel training equals single-rank training: N ranks with batch B/N each give the
// losses of one rank with batch B (f32, relative 1e-5) with the native and the ring all-reduce;
// parameters end bit-identical on every rank; a checkpoint written by N ranks resumes on fewer
// ranks and continues exactly as the uninterrupted run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>

#include "dist/comm/world.h"
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
    c.data.batch_size = kGlobalBatch / ranks;
    c.schedule.max_iters = kSteps;
    c.schedule.lr_decay_iters = kSteps;
    c.schedule.eval_interval = 0;
    c.schedule.eval_iters = 2;
    c.observe.log_interval = 1000;
    c.parallel.bucket_mb = 0.01;  // several buckets even for a tiny model
    return c;
  }


  // The single-rank run with the whole batch, computed by every rank alone.
  std::vector<double> reference_losses() const {
    TrainConfig c = config("reference_" + std::to_string(comm_->rank()), 1);
    return run_training(c).step_losses;
  }
};

TEST_F(DDPTest, NativeAllreduceMatchesOneRank) {
  std::vector<double> reference = reference_losses();
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("native", comm_->size());
  c.parallel.collectives = dist::Algorithm::Native;
  TrainResult r = run_training(c, ctx);
  expect_close(mean_losses(r.step_losses, *comm_), reference);
  EXPECT_TRUE(same_everywhere(r.params_hash, *comm_)) << "parameters differ between ranks";
}

TEST_F(DDPTest, RingAllreduceMatchesOneRank) {
  std::vector<double> reference = reference_losses();
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("ring", comm_->size());
  c.parallel.collectives = dist::Algorithm::Ring;
  c.data.grad_accum = 2;  // only the last micro-step communicates
  c.data.batch_size = kGlobalBatch / (2 * comm_->size()) > 0 ? kGlobalBatch / comm_->size() / 2 : 1;
  TrainResult r = run_training(c, ctx);
  if (kGlobalBatch % (2 * comm_->size()) == 0) {
    // Same global batch as the reference (B/N/2 rows x 2 micro-steps per rank).
    TrainConfig ref = config("reference_accum_" + std::to_string(comm_->rank()), 1);
    ref.data.batch_size = kGlobalBatch / 2;
    ref.data.grad_accum = 2;
    expect_close(mean_losses(r.step_losses, *comm_), run_training(ref).step_losses);
  }
  EXPECT_TRUE(same_everywhere(r.params_hash, *comm_)) << "parameters differ between ranks";
  (void)reference;
}

TEST_F(DDPTest, CheckpointResumesOnFewerRanks) {
  std::vector<double> reference = reference_losses();
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("written", comm_->size());
  c.checkpoint.interval = kSteps / 2;
  c.checkpoint.keep = 0;
  run_training(c, ctx);
  comm_->barrier();
  for (int ranks : {2, 1})
    if (ranks < comm_->size())
      expect_resume_matches(config("resumed_on_" + std::to_string(ranks), ranks), ranks, root_ + "/written",
                            kSteps / 2, reference);
}

}  // namespace
}  // namespace nd::train
