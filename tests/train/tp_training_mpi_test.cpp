// Tensor-parallel training equals single-rank training: tp 2 (np 2) and dp 2 x tp 2 (np 4) give
// the losses of one rank with the same global batch (f32, relative 1e-5) with the native and the
// ring collectives (--collectives, and its alias --allreduce), also with sequence parallelism and
// active clipping (and dropout at np 2), and sequence parallelism under ZeRO 1, 2 and 3 with the
// final weights too; the replicated parameters end bit-identical on every rank, and checkpoints
// (full tensors) move between tp 2 and tp 1 and continue exactly as the uninterrupted run.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>

#include "dist/parallel/parallel_grid.h"
#include "dist/comm/world.h"
#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kTp = 2;
constexpr int kGlobalBatch = 4;
constexpr int kSteps = 20;

class TpTrainingTest : public testing::MpiDataTest {
 protected:
  bool grid_fits() const { return comm_->size() % kTp == 0; }

  // A tiny model whose heads, width and padded vocabulary split over two ranks; `ranks` ranks at
  // tensor-parallel size `tp` share the global batch over their ranks / tp data-parallel groups.
  TrainConfig config(const std::string& out, int ranks, int tp) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.model.n_layer = 2;
    c.model.n_head = 4;
    c.model.n_embd = 32;
    c.model.block_size = 16;
    c.parallel.tp = tp;
    c.data.batch_size = kGlobalBatch / (ranks / tp);
    c.schedule.max_iters = kSteps;
    c.schedule.lr_decay_iters = kSteps;
    c.schedule.eval_interval = 0;
    c.schedule.eval_iters = 2;
    c.observe.log_interval = 1000;
    c.parallel.bucket_mb = 0.01;
    return c;
  }

  // Sequence parallelism's runs: a clip below the gradient norm (the summed replicated gradients
  // enter the norm) and, with one data-parallel replica, dropout (its masks must be the tp = 1
  // ones; data-parallel replicas draw masks of their own, which the one-rank run does not).
  TrainConfig with_clipping_and_dropout(TrainConfig c) const {
    c.optim.grad_clip = 0.05;
    if (comm_->size() == kTp) c.model.dropout = 0.1f;
    return c;
  }

  // One rank, tp 1, the whole batch: computed by every rank alone, no communicator.
  TrainResult reference_run(bool sequence_parallel = false) const {
    TrainConfig c = config("reference_" + std::to_string(comm_->rank()), 1, 1);
    c.checkpoint.overwrite = true;  // a test may compare several runs with it
    return run_training(sequence_parallel ? with_clipping_and_dropout(c) : c);
  }

  // At ZeRO stage `zero`; under ZeRO the final weights are checked against one rank's too.
  void trains_like_one_rank(const std::string& collectives, bool sequence_parallel = false, int zero = 0) {
    if (!grid_fits()) GTEST_SKIP() << "tp " << kTp << " does not divide " << comm_->size() << " ranks";
    const TrainResult reference = reference_run(sequence_parallel);
    RunContext ctx;
    ctx.comm = comm_.get();
    const std::string out = collectives + (sequence_parallel ? "_sp" : "") + "_zero" + std::to_string(zero);
    TrainConfig c = config(out, comm_->size(), kTp);
    c.parallel.collectives = dist::parse_collectives(collectives);
    c.parallel.zero = zero;
    if (sequence_parallel) {
      c = with_clipping_and_dropout(c);
      c.parallel.sequence_parallel = true;
    }
    TrainResult r = run_training(c, ctx);
    expect_close(mean_losses(r.step_losses, *comm_), reference.step_losses);
    // The model's size, as reported, is the tp 1 one: the vocabulary's padding rows are not counted.
    EXPECT_EQ(r.params, reference.params);
    if (zero > 0) expect_same_weights(root_ + "/" + out, root_ + "/reference_" + std::to_string(comm_->rank()), kSteps);
    EXPECT_TRUE(same_everywhere(r.replicated_params_hash, *comm_)) << "replicated parameters differ between ranks";
    // The shards differ inside a tp group (otherwise nothing was split)...
    dist::ParallelGrid grid(*comm_, kTp);
    EXPECT_FALSE(same_everywhere(r.params_hash, grid.tp())) << "the tp ranks hold the same shards";
    // ... and agree between the data-parallel replicas of one shard.
    EXPECT_TRUE(same_everywhere(r.params_hash, grid.dp())) << "data-parallel replicas differ";
  }
};

TEST_F(TpTrainingTest, NativeAllreduceMatchesOneRank) { trains_like_one_rank("native"); }

TEST_F(TpTrainingTest, RingAllreduceMatchesOneRank) { trains_like_one_rank("ring"); }

TEST_F(TpTrainingTest, SequenceParallelNativeMatchesOneRank) { trains_like_one_rank("native", true); }

TEST_F(TpTrainingTest, SequenceParallelRingMatchesOneRank) { trains_like_one_rank("ring", true); }

// Under ZeRO the replicated parameters' gradients that sequence parallelism sums over the tp group
// are this rank's pieces of them (the flat gradients' owned slices at stage 1, the gradient shard at
// 2 and 3), which the group's ranks share.
TEST_F(TpTrainingTest, SequenceParallelUnderZeroMatchesOneRank) {
  for (int zero : {1, 2, 3}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    trains_like_one_rank("native", /*sequence_parallel=*/true, zero);
  }
}

TEST_F(TpTrainingTest, TpTwoCheckpointResumesAtTpOne) {
  if (!grid_fits()) GTEST_SKIP() << "tp " << kTp << " does not divide " << comm_->size() << " ranks";
  std::vector<double> reference = reference_run().step_losses;
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("written_tp2", comm_->size(), kTp);
  c.checkpoint.interval = kSteps / 2;
  c.checkpoint.keep = 0;
  run_training(c, ctx);
  comm_->barrier();
  expect_resume_matches(config("resumed_tp1", 1, 1), 1, root_ + "/written_tp2", kSteps / 2, reference);
}

TEST_F(TpTrainingTest, TpOneCheckpointResumesAtTpTwo) {
  if (!grid_fits()) GTEST_SKIP() << "tp " << kTp << " does not divide " << comm_->size() << " ranks";
  std::vector<double> reference = reference_run().step_losses;
  if (comm_->rank() == 0) {
    TrainConfig c = config("written_tp1", 1, 1);
    c.checkpoint.interval = kSteps / 2;
    c.checkpoint.keep = 0;
    run_training(c);
  }
  comm_->barrier();
  expect_resume_matches(config("resumed_tp2", kTp, kTp), kTp, root_ + "/written_tp1", kSteps / 2, reference);
}

}  // namespace
}  // namespace nd::train
