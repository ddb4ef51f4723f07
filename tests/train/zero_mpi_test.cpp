// ZeRO over the data-parallel ranks (mpirun -np 2, 3, 4): --zero 1 and 2 train with the losses of
// --zero 0 on the same ranks (f32, relative 1e-6, 20 steps with active clipping and grad-accum 2),
// also at tp 2 x dp 2 and with the ring's collectives, and every rank ends with the same
// parameters (the all-gather); a ZeRO checkpoint (each rank writes the pieces its shard holds)
// resumes at zero 0 on one rank, and a one-rank checkpoint at zero 2 on all ranks, with the
// uninterrupted losses; zero 2 with --recompute block; the persistent state per rank is what the
// memory plan says (for zero 0 and 1, the ZeRO paper's 16 and 4 + 12/N bytes per parameter in bf16
// with f32 masters, for zero 2 2 + 16/N and a fixed amount of staging buffers).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "dist/parallel/data_parallel.h"
#include "dist/parallel/parallel_grid.h"
#include "tensor/random.h"
#include "train/memory_plan.h"
#include "train/optimizer.h"
#include "train/zero_fixture.h"
#include "train/zero_layout.h"

namespace nd::train {
namespace {

class ZeroTest : public testing::ZeroFixture {
 protected:
  TrainConfig config(const std::string& out, int ranks, int tp, int zero) const override {
    TrainConfig c = tiny_zero_config(out, ranks, tp, zero, /*n_layer=*/2);
    c.parallel.bucket_mb = 0.004;  // several buckets, with tensors across their boundaries
    return c;
  }



  void matches_zero_zero(int tp, const std::string& collectives) {
    if (comm_->size() % tp != 0) GTEST_SKIP() << "tp " << tp << " does not divide " << comm_->size() << " ranks";
    const std::string tag = "_tp" + std::to_string(tp) + "_" + collectives;
    TrainConfig c = config("zero0" + tag, comm_->size(), tp, 0);
    c.parallel.collectives = dist::parse_collectives(collectives);
    TrainResult reference = train(c);
    for (int zero : {1, 2}) {
      SCOPED_TRACE("zero " + std::to_string(zero) + tag);
      c = config("zero" + std::to_string(zero) + tag, comm_->size(), tp, zero);
      c.parallel.collectives = dist::parse_collectives(collectives);
      TrainResult r = train(c);
      expect_close(r.step_losses, reference.step_losses, 0, 1e-6);
      EXPECT_TRUE(same_everywhere(r.replicated_params_hash, *comm_)) << "replicated parameters differ between ranks";
      dist::ParallelGrid grid(*comm_, tp);
      EXPECT_TRUE(same_everywhere(r.params_hash, grid.dp())) << "data-parallel replicas hold other parameters";
    }
  }
};

TEST_F(ZeroTest, StagesOneAndTwoTrainLikeZeroZero) { matches_zero_zero(1, "native"); }

TEST_F(ZeroTest, StagesOneAndTwoWithTheRingsCollectives) { matches_zero_zero(1, "ring"); }

TEST_F(ZeroTest, StagesOneAndTwoUnderTensorParallelism) {
  if (comm_->size() != 4) GTEST_SKIP() << "tp 2 x dp 2 needs 4 ranks";
  matches_zero_zero(2, "native");
}

// Zero 2 binds a block's gradients when its backward starts: with --recompute block that is before the
// rerun, and the losses are still zero 0's (with the same recompute).
TEST_F(ZeroTest, StageTwoWithRecomputeBlock) {
  TrainConfig c = config("zero0_recompute", comm_->size(), 1, 0);
  c.model.recompute = nn::Recompute::Block;
  TrainResult reference = train(c);
  c = config("zero2_recompute", comm_->size(), 1, 2);
  c.model.recompute = nn::Recompute::Block;
  TrainResult r = train(c);
  expect_close(r.step_losses, reference.step_losses, 0, 1e-6);
  EXPECT_TRUE(same_everywhere(r.params_hash, *comm_)) << "parameters differ between ranks";
}

// Zero 2 on every rank writes step 10; one rank at zero 0 goes on from it, and the losses are those of
// the uninterrupted one-rank run.
TEST_F(ZeroTest, ZeroCheckpointResumesAtZeroZeroOnOneRank) {
  expect_checkpoint_resumes_at_zero_zero_on_one_rank(2);
}

TEST_F(ZeroTest, OneRankCheckpointResumesAtZeroTwo) { expect_one_rank_checkpoint_resumes_at(2); }

// The bytes a rank allocates for parameters, gradients and optimizer state follow memory_plan; at
// zero 2 beside a fixed amount of staging: two blocks' gradients and the parameters outside them.
TEST_F(ZeroTest, PersistentStatePerRankFollowsThePlan) {
  const int n = comm_->size();
  for (int zero : {0, 1, 2}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    Generator gen(7);
    Variable w0(Tensor::randn({300, 17}, gen), true), w1(Tensor::randn({300, 17}, gen), true);
    Variable w2(Tensor::randn({300, 17}, gen), true), b(Tensor::randn({301}, gen), true);
    const std::vector<std::pair<std::string, Variable>> named = {
        {"b", b}, {"transformer.h.0.w", w0}, {"transformer.h.1.w", w1}, {"transformer.h.2.w", w2}};
    auto flat = std::make_shared<dist::FlatParams>(named, DType::F32, zero_flat_options(zero, n, {-1, 0, 1, 2}));
    dist::DataParallelOptions options;
    options.zero = zero;
    std::unique_ptr<dist::DataParallelEngine> engine = dist::make_data_parallel(*comm_, *flat, options);
    AdamWShard shard{engine->owned(), engine->shard_numel(), engine->shard_grads(), comm_.get(), Tensor()};
    AdamW adamw(flat, AdamWOptions{}, zero > 0 ? &shard : nullptr);
    const int64_t grads = flat->full_grads() ? flat->grads().numel() * 4 : 0;
    const int64_t bytes = flat->numel() * 4 + grads + engine->buffer_bytes() + adamw.state_bytes();
    const MemoryPlan plan = memory_plan(zero, n, DType::F32, DType::F32);
    EXPECT_DOUBLE_EQ(static_cast<double>(bytes - engine->staging_bytes()), plan.total() * static_cast<double>(flat->numel()));
    const double paper[3] = {16.0, 8.0 + 8.0 / n, 4.0 + 12.0 / n};
    EXPECT_DOUBLE_EQ(plan.paper, paper[zero]);
    if (zero > 0) {
      EXPECT_EQ(flat->numel() % (n * flat->alignment()), 0);
    }
    if (zero == 2) {  // segments padded to n x the alignment: the blocks' 5100 elements and b's 301
      const int64_t unit = flat->alignment() * n, block = (5100 + unit - 1) / unit * unit, rest = (301 + unit - 1) / unit * unit;
      EXPECT_EQ(flat->numel(), 3 * block + rest);
      EXPECT_EQ(engine->staging_bytes(), (2 * block + rest + (2 * block + rest) / n) * 4);  // with landing places
      EXPECT_EQ(engine->bucket_count(), 4u);
    } else {
      EXPECT_EQ(engine->staging_bytes(), 0);
    }
  }
  // bf16 with f32 masters, the paper's case: zero 0 and 1 allocate exactly its 16 and 4 + 12/N; zero 2
  // 2 + 16/N (its 2 + 14/N with an f32 gradient shard, which adds the micro-batches up).
  EXPECT_DOUBLE_EQ(memory_plan(0, n, DType::BF16, DType::BF16).total(), 16.0);
  EXPECT_DOUBLE_EQ(memory_plan(1, n, DType::BF16, DType::BF16).total(), 4.0 + 12.0 / n);
  EXPECT_DOUBLE_EQ(memory_plan(1, n, DType::BF16, DType::BF16).paper, 4.0 + 12.0 / n);
  EXPECT_DOUBLE_EQ(memory_plan(2, n, DType::BF16, DType::BF16).total(), 2.0 + 16.0 / n);
  EXPECT_DOUBLE_EQ(memory_plan(2, n, DType::BF16, DType::BF16).paper, 2.0 + 14.0 / n);
}

}  // namespace
}  // namespace nd::train
