// ZeRO 3 (FSDP) and the staged ZeRO 2 over the data-parallel ranks (mpirun -np 2, 3, 4, the MPI
// backend): each trains with the losses of --zero 0 on the same ranks (f32, relative 1e-6, 20 steps
// with active clipping, grad-accum 2 and evaluations between), reaches its validation loss and ends
// with its final weights (read back from the final checkpoints, to f32 reduction-order tolerance),
// zero 3 with exactly zero 2's losses and weights (its gathers change no bit), also with
// --recompute block, with the ring's collectives and at tp 2 x dp 2; a zero 3 checkpoint resumes
// at zero 0 on one rank and a one-rank checkpoint at zero 3 on all ranks, with the uninterrupted
// losses; a step's all-gathers are one per block and pass, less the blocks still
// held; the persistent state per rank is what the memory plan says (16/N bytes per parameter in
// f32 beside a fixed amount of unit buffers).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "dist/parallel/data_parallel.h"
#include "dist/parallel/parallel_grid.h"
#include "tensor/random.h"
#include "tests/dist/counting_comm.h"
#include "train/memory_plan.h"
#include "train/optimizer.h"
#include "train/zero_fixture.h"
#include "train/zero_layout.h"

namespace nd::train {
namespace {

class Zero3Test : public testing::ZeroFixture {
 protected:
  TrainConfig config(const std::string& out, int ranks, int tp, int zero) const override {
    TrainConfig c = tiny_zero_config(out, ranks, tp, zero, /*n_layer=*/3);
    c.checkpoint.interval = 0;  // one checkpoint, at the end: the final weights
    return c;
  }

  // zero 2 and 3 against zero 0 at this tp, collectives and recompute.
  void matches_zero_zero(int tp, const std::string& collectives, const std::string& recompute) {
    if (comm_->size() % tp != 0) GTEST_SKIP() << "tp " << tp << " does not divide " << comm_->size() << " ranks";
    const std::string tag = "_tp" + std::to_string(tp) + "_" + collectives + "_" + recompute;
    TrainConfig c = config("zero0" + tag, comm_->size(), tp, 0);
    c.parallel.collectives = dist::parse_collectives(collectives);
    c.model.recompute = parse_recompute(recompute);
    c.schedule.eval_interval = kSteps / 2;  // evaluations (forwards without gradients) between the steps
    TrainResult reference = train(c), stage_two;
    for (int zero : {2, 3}) {
      SCOPED_TRACE("zero " + std::to_string(zero) + tag);
      c = config("zero" + std::to_string(zero) + tag, comm_->size(), tp, zero);
      c.parallel.collectives = dist::parse_collectives(collectives);
      c.model.recompute = parse_recompute(recompute);
      c.schedule.eval_interval = kSteps / 2;
      TrainResult r = train(c);
      expect_close(r.step_losses, reference.step_losses, 0, 1e-6);
      expect_close({r.last_val_loss}, {reference.last_val_loss}, 0, 1e-6);
      EXPECT_TRUE(same_everywhere(r.replicated_params_hash, *comm_)) << "replicated parameters differ between ranks";
      dist::ParallelGrid grid(*comm_, tp);
      EXPECT_TRUE(same_everywhere(r.params_hash, grid.dp())) << "data-parallel replicas hold other parameters";
      expect_same_weights(root_ + "/zero" + std::to_string(zero) + tag, root_ + "/zero0" + tag, kSteps);
      if (zero == 2) {
        stage_two = r;
      } else {  // gathering the blocks changes no bit: zero 2's parameters stay whole
        EXPECT_EQ(r.step_losses, stage_two.step_losses);
        EXPECT_EQ(r.last_val_loss, stage_two.last_val_loss);
        EXPECT_EQ(r.params_hash, stage_two.params_hash);
      }
    }
  }
};

TEST_F(Zero3Test, StagesTwoAndThreeTrainLikeZeroZero) { matches_zero_zero(1, "native", "none"); }

TEST_F(Zero3Test, StagesTwoAndThreeWithRecomputeBlock) { matches_zero_zero(1, "native", "block"); }

TEST_F(Zero3Test, StagesTwoAndThreeWithTheRingsCollectives) {
  if (comm_->size() != 2) GTEST_SKIP() << "the ring once, at np 2";
  matches_zero_zero(1, "ring", "none");
}

TEST_F(Zero3Test, StagesTwoAndThreeUnderTensorParallelism) {
  if (comm_->size() != 4) GTEST_SKIP() << "tp 2 x dp 2 needs 4 ranks";
  matches_zero_zero(2, "native", "block");
}

// The all-gathers of a zero 3 step, counted (one step more against one step fewer): each block once
// before its forward (the next one prefetched), in backward only those no gathered buffer still holds
// (of 5 blocks and 3 buffers, the last three stay from the forward), with --recompute block too (the
// rerun and the backward share one gather), and the two runs outside the blocks after the update.
TEST_F(Zero3Test, GathersEachBlockOncePerPassAndKeepsWhatItHolds) {
  constexpr int kLayers = 5, kBuffers = 3, kOutsideRuns = 2;  // ln_f, and wpe with wte
  for (const std::string recompute : {"none", "block"}) {
    SCOPED_TRACE("recompute " + recompute);
    int64_t gathers[2] = {0, 0};
    for (int steps : {2, 3}) {
      auto log = std::make_shared<test::CallLog>();
      test::CountingComm counting(*comm_, log);
      TrainConfig c = config("counted_" + recompute + std::to_string(steps), comm_->size(), 1, 3);
      c.model.n_layer = kLayers;
      c.model.recompute = parse_recompute(recompute);
      c.data.grad_accum = 1;
      c.schedule.max_iters = steps;
      c.checkpoint.disabled = true;
      RunContext ctx;
      ctx.comm = &counting;
      run_training(c, ctx);
      for (const auto& [call, count] : *log)
        if (std::get<0>(call) == "allgather") gathers[steps - 2] += count;
    }
    EXPECT_EQ(gathers[1] - gathers[0], kLayers + (kLayers - kBuffers) + kOutsideRuns);
  }
}

// Zero 3 on every rank writes step 10; one rank at zero 0 goes on from it, and the losses are those
// of the uninterrupted one-rank run.
TEST_F(Zero3Test, ZeroThreeCheckpointResumesAtZeroZeroOnOneRank) {
  expect_checkpoint_resumes_at_zero_zero_on_one_rank(3);
}

TEST_F(Zero3Test, OneRankCheckpointResumesAtZeroThree) { expect_one_rank_checkpoint_resumes_at(3); }

// The bytes a rank allocates at zero 3 for parameters, gradients and optimizer state: the paper's
// 16/N per parameter in f32 (4 of the parameter shard, 4 of the gradient shard, 8 of m and v, all
// over N), beside the unit buffers: two blocks' staged gradients (with their reduce-scatters'
// landing places), three blocks' gathered parameters, and the parameters outside the blocks whole,
// with their gradients.
TEST_F(Zero3Test, PersistentStatePerRankFollowsThePlan) {
  const int n = comm_->size();
  Generator gen(7);
  std::vector<std::pair<std::string, Variable>> named = {{"b", Variable(Tensor::randn({301}, gen), true)}};
  for (int i = 0; i < 4; ++i)
    named.push_back({"transformer.h." + std::to_string(i) + ".w", Variable(Tensor::randn({300, 17}, gen), true)});
  auto flat = std::make_shared<dist::FlatParams>(named, DType::F32, zero_flat_options(3, n, {-1, 0, 1, 2, 3}));
  dist::DataParallelOptions options;
  options.zero = 3;
  std::unique_ptr<dist::DataParallelEngine> engine = dist::make_data_parallel(*comm_, *flat, options);
  AdamWShard shard{engine->owned(), engine->shard_numel(), engine->shard_grads(), comm_.get(), engine->param_shard()};
  AdamW adamw(flat, AdamWOptions{}, &shard);
  EXPECT_FALSE(flat->params().defined()) << "the full-size parameters are released";
  EXPECT_FALSE(flat->full_grads());
  const int64_t bytes = engine->buffer_bytes() + adamw.state_bytes();
  const MemoryPlan plan = memory_plan(3, n, DType::F32, DType::F32);
  EXPECT_DOUBLE_EQ(static_cast<double>(bytes - engine->staging_bytes()), plan.total() * static_cast<double>(flat->numel()));
  EXPECT_DOUBLE_EQ(plan.total(), 16.0 / n);
  EXPECT_DOUBLE_EQ(plan.paper, 16.0 / n);
  const int64_t unit = flat->alignment() * n, block = (5100 + unit - 1) / unit * unit, rest = (301 + unit - 1) / unit * unit;
  EXPECT_EQ(flat->numel(), 4 * block + rest);
  EXPECT_EQ(engine->staging_bytes(), (2 * block + 3 * block + 2 * rest + (2 * block + rest) / n) * 4);
  // bf16 with f32 masters: 2 of parameters, 4 of the f32 gradient shard, 12 of masters, m and v,
  // over N (the paper's 16/N keeps a bf16 gradient shard).
  EXPECT_DOUBLE_EQ(memory_plan(3, n, DType::BF16, DType::BF16).total(), 18.0 / n);
  EXPECT_DOUBLE_EQ(memory_plan(3, n, DType::BF16, DType::BF16).paper, 16.0 / n);
}

// Every rank's shard and gathered parameters equal rank 0's full tensors: the block gathered for
// reading holds exactly what the model drew.
TEST_F(Zero3Test, GatheredBlocksHoldTheDrawnWeights) {
  Generator gen(11);
  std::vector<std::pair<std::string, Variable>> named;
  std::vector<Tensor> drawn;
  for (int i = 0; i < 3; ++i) {
    drawn.push_back(Tensor::randn({40, 9}, gen));
    named.push_back({"transformer.h." + std::to_string(i) + ".w", Variable(drawn.back().clone(), true)});
  }
  auto flat = std::make_shared<dist::FlatParams>(named, DType::F32, zero_flat_options(3, comm_->size(), {0, 1, 2}));
  dist::DataParallelOptions options;
  options.zero = 3;
  std::unique_ptr<dist::DataParallelEngine> engine = dist::make_data_parallel(*comm_, *flat, options);
  engine->broadcast_parameters();
  for (int i : {2, 0, 1}) {
    engine->gather_for_read(i);
    EXPECT_EQ(named[static_cast<size_t>(i)].second.data().to_double_vector(), drawn[static_cast<size_t>(i)].to_double_vector())
        << "block " << i;
  }
}

}  // namespace
}  // namespace nd::train
