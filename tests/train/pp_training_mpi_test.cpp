// Pipeline-parallel training equals single-rank training: pp 2 (np 2) with each schedule the
// runtime runs (GPipe, 1F1B, interleaved with 2 chunks per rank, zero-bubble), with dropout and
// active clipping, and pp 2 x tp 2 and pp 2 x dp 2 (np 4), give the losses of one rank with the same
// global batch and micro-batches (f32, relative 1e-5) over 20 steps, also under ZeRO 1, 2 and 3
// (pp 2 x dp 2, and every schedule for 2 and 3, the final weights too); evaluation runs through the
// pipeline; a pp 2 checkpoint resumes at pp 1 and a pp 1 checkpoint at pp 2 (also under ZeRO),
// continuing as the uninterrupted run; --init-from works at pp 2.
#include <gtest/gtest.h>

#include "train/mpi_data_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

constexpr int kPp = 2;
constexpr int kGlobalBatch = 4;
constexpr int kMicro = 4;
constexpr int kSteps = 20;

class PpTrainingTest : public testing::MpiDataTest {
 protected:
  // A tiny model of 4 blocks; `ranks` ranks at tp `tp` and pp `pp` share the global batch over
  // their data-parallel replicas.
  TrainConfig config(const std::string& out, int ranks, int tp, int pp) const {
    TrainConfig c = testing::tiny_config(root_ + "/data", root_ + "/" + out);
    c.model.n_layer = 4;
    c.model.n_head = 4;
    c.model.n_embd = 32;
    c.model.block_size = 16;
    c.parallel.tp = tp;
    c.parallel.pp = pp;
    c.data.batch_size = kGlobalBatch / (ranks / (tp * pp));
    c.data.grad_accum = kMicro;
    c.schedule.max_iters = kSteps;
    c.schedule.lr_decay_iters = kSteps;
    c.schedule.eval_interval = 10;
    c.schedule.eval_iters = 2;
    c.observe.log_interval = 1000;
    c.parallel.bucket_mb = 0.01;
    return c;
  }

  static TrainConfig with_dropout_and_clipping(TrainConfig c) {
    c.model.dropout = 0.1f;
    c.optim.grad_clip = 0.05;
    return c;
  }

  // Trains at (tp, pp) and ZeRO stage `zero` on every rank and checks the losses and evaluation
  // against one rank, and with `weights` the final weights too.
  void trains_like_one_rank(int tp, const std::string& schedule, bool dropout = false, int zero = 0,
                            bool weights = false) {
    if (comm_->size() % (tp * kPp) != 0) GTEST_SKIP() << "tp " << tp << " x pp " << kPp << " on " << comm_->size();
    const std::string reference_dir = "reference_" + std::to_string(comm_->rank());
    TrainConfig one = config(reference_dir, 1, 1, 1);
    one.checkpoint.overwrite = true;  // a test may compare several runs with it
    if (dropout) one = with_dropout_and_clipping(one);
    TrainResult reference = run_training(one);
    RunContext ctx;
    ctx.comm = comm_.get();
    const std::string out =
        schedule + "_tp" + std::to_string(tp) + (dropout ? "_dropout" : "") + "_zero" + std::to_string(zero);
    TrainConfig c = config(out, comm_->size(), tp, kPp);
    c.parallel.pp_schedule = parse_pipeline_kind(schedule);
    c.parallel.zero = zero;
    if (schedule == "interleaved") c.parallel.pp_virtual = 2;  // 4 stages of one block, two per rank
    if (dropout) c = with_dropout_and_clipping(c);
    TrainResult r = run_training(c, ctx);
    expect_close(mean_losses(r.step_losses, *comm_), reference.step_losses);
    EXPECT_NEAR(r.last_val_loss, reference.last_val_loss, 1e-5 * reference.last_val_loss);
    if (weights) expect_same_weights(root_ + "/" + out, root_ + "/" + reference_dir, kSteps);
  }
};

TEST_F(PpTrainingTest, OneFOneBMatchesOneRank) { trains_like_one_rank(1, "1f1b"); }

TEST_F(PpTrainingTest, GPipeMatchesOneRank) { trains_like_one_rank(1, "gpipe"); }

// Weight gradients deferred (ops::DeferWeightGradients) and run in the bubble: the same sums.
TEST_F(PpTrainingTest, ZeroBubbleMatchesOneRank) { trains_like_one_rank(1, "zb"); }

// Two chunks per rank (blocks 0 and 2 on the first, 1 and 3 on the second).
TEST_F(PpTrainingTest, InterleavedMatchesOneRank) { trains_like_one_rank(1, "interleaved"); }

TEST_F(PpTrainingTest, DropoutAndClippingMatchOneRank) {
  // Data-parallel replicas draw masks of their own, which one rank does not: pp alone.
  if (comm_->size() != kPp) GTEST_SKIP() << "dropout against one rank needs dp 1";
  trains_like_one_rank(1, "1f1b", /*dropout=*/true);
  trains_like_one_rank(1, "interleaved", /*dropout=*/true);
}

TEST_F(PpTrainingTest, WithTensorParallelMatchesOneRank) {
  if (comm_->size() != 4) GTEST_SKIP() << "pp 2 x tp 2 needs 4 ranks";
  trains_like_one_rank(2, "1f1b");
  trains_like_one_rank(2, "zb");  // the column-parallel linears' deferred weight gradients too
}

// ZeRO over each stage's data-parallel replicas (pp 2 x dp 2): stages 2 and 3 keep no full-size
// gradients, and the tied embedding's copies on the first and last stage, a segment of the flat
// layout of their own, are summed on the gradient pieces each rank owns. Losses, evaluation and the
// final weights are one rank's.
TEST_F(PpTrainingTest, ZeroStagesMatchOneRank) {
  if (comm_->size() != 4) GTEST_SKIP() << "pp 2 x dp 2 needs 4 ranks";
  for (int zero : {1, 2, 3}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    trains_like_one_rank(1, "1f1b", /*dropout=*/false, zero, /*weights=*/true);
  }
}

// ZeRO 2 and 3 under the other schedules: GPipe, interleaved (a rank's blocks in two chunks) and
// zero-bubble (weight gradients deferred past the block's backward), with dropout and clipping at
// dp 1 (np 2) and pp 2 x dp 2 (np 4).
TEST_F(PpTrainingTest, ZeroWithEverySchedule) {
  const bool dropout = comm_->size() == kPp;  // see DropoutAndClippingMatchOneRank
  for (int zero : {2, 3})
    for (const std::string schedule : {"gpipe", "interleaved", "zb"}) {
      SCOPED_TRACE("zero " + std::to_string(zero) + ", " + schedule);
      trains_like_one_rank(1, schedule, dropout, zero, /*weights=*/true);
    }
}

TEST_F(PpTrainingTest, PpTwoCheckpointResumesAtPpOneAndBack) {
  if (comm_->size() % kPp != 0) GTEST_SKIP() << "pp " << kPp << " does not divide " << comm_->size();
  std::vector<double> reference = run_training(config("reference_" + std::to_string(comm_->rank()), 1, 1, 1)).step_losses;
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("written_pp2", comm_->size(), 1, kPp);
  c.checkpoint.interval = kSteps / 2;
  c.checkpoint.keep = 0;
  run_training(c, ctx);
  comm_->barrier();
  expect_resume_matches(config("resumed_pp1", 1, 1, 1), 1, root_ + "/written_pp2", kSteps / 2, reference);
  if (comm_->rank() == 0) {
    TrainConfig one = config("written_pp1", 1, 1, 1);
    one.checkpoint.interval = kSteps / 2;
    one.checkpoint.keep = 0;
    run_training(one);
  }
  comm_->barrier();
  expect_resume_matches(config("resumed_pp2", kPp, 1, kPp), kPp, root_ + "/written_pp1", kSteps / 2, reference);
}

// The same round trip under ZeRO (pp 2 x dp 2): each rank writes the pieces it owns (the tied
// embedding's by the first stage), zero 0 on one rank resumes from them, and ZeRO 3 on every rank
// resumes from one rank's checkpoint, both continuing as the uninterrupted run.
TEST_F(PpTrainingTest, ZeroCheckpointResumesAtPpOneAndBack) {
  if (comm_->size() != 4) GTEST_SKIP() << "pp 2 x dp 2 needs 4 ranks";
  std::vector<double> reference = run_training(config("reference_" + std::to_string(comm_->rank()), 1, 1, 1)).step_losses;
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("written_zero2", comm_->size(), 1, kPp);
  c.parallel.zero = 2;
  c.checkpoint.interval = kSteps / 2;
  c.checkpoint.keep = 0;
  run_training(c, ctx);
  comm_->barrier();
  expect_resume_matches(config("resumed_zero0", 1, 1, 1), 1, root_ + "/written_zero2", kSteps / 2, reference);
  if (comm_->rank() == 0) {
    TrainConfig one = config("written_one", 1, 1, 1);
    one.checkpoint.interval = kSteps / 2;
    one.checkpoint.keep = 0;
    run_training(one);
  }
  comm_->barrier();
  TrainConfig resumed = config("resumed_zero3", comm_->size(), 1, kPp);
  resumed.parallel.zero = 3;
  expect_resume_matches(resumed, comm_->size(), root_ + "/written_one", kSteps / 2, reference);
}

// --init-from a pp 1 checkpoint: each stage takes its tensors, and pp 2 continues like pp 1.
TEST_F(PpTrainingTest, InitFromAOnePipelineCheckpoint) {
  if (comm_->size() != kPp) GTEST_SKIP() << "pp 2 on 2 ranks";
  const std::string source = root_ + "/init_source";
  if (comm_->rank() == 0) {
    TrainConfig c = config("init_source", 1, 1, 1);
    c.schedule.max_iters = 3;
    run_training(c);
  }
  comm_->barrier();
  TrainConfig one = config("init_pp1_" + std::to_string(comm_->rank()), 1, 1, 1);
  one.checkpoint.init_from = source;
  one.schedule.max_iters = 5;
  std::vector<double> reference = run_training(one).step_losses;
  RunContext ctx;
  ctx.comm = comm_.get();
  TrainConfig c = config("init_pp2", kPp, 1, kPp);
  c.checkpoint.init_from = source;
  c.schedule.max_iters = 5;
  expect_close(mean_losses(run_training(c, ctx).step_losses, *comm_), reference);
}

}  // namespace
}  // namespace nd::train
