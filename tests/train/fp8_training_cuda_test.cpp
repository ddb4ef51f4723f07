// Training with --fp8 on the GPU (bf16 model, CUDA graph on): the linears' GEMMs in FP8 with
// delayed scaling learn like bf16 (the last losses within 5% of the bf16 run's, from the same
// seed and data), with every linear or only the head in FP8, and with block recomputation as without.
// Needs compute capability 8.9+.
#include <gtest/gtest.h>

#include <cmath>

#include "train/fp8_run_fixture.h"


namespace nd::train {
namespace {

// The mean of the last 10 step losses: what these runs are compared by.
double tail(const TrainResult& r) { return testing::mean_of_last(r.step_losses, 10); }

class Fp8Training : public testing::TinyFp8Run<> {
 protected:
  TrainConfig config(const std::string& out) {
    TrainConfig c = tiny_gpu_config(out);
    c.schedule.max_iters = 60;
    c.schedule.lr_decay_iters = 60;
    c.optim.min_lr = 1e-3;
    return c;
  }
};

TEST_F(Fp8Training, AllLinearsInFp8LearnLikeBf16) {
  TrainResult bf16 = run_training(config("bf16"));
  TrainConfig c = config("fp8");
  c.precision.fp8 = true;
  TrainResult fp8 = run_training(c);
  ASSERT_EQ(fp8.step_losses.size(), 60u);
  EXPECT_LT(tail(fp8), fp8.step_losses.front() - 0.3) << "FP8 training did not learn";
  EXPECT_NEAR(tail(fp8), tail(bf16), 0.05 * tail(bf16));
  EXPECT_TRUE(std::isfinite(fp8.best_val_loss));
  EXPECT_GT(fp8.cuda_graph_replays, 0);
}

TEST_F(Fp8Training, OnlyTheHeadInFp8) {
  TrainResult bf16 = run_training(config("bf16"));
  TrainConfig c = config("head");
  c.precision.fp8 = true;
  c.precision.fp8_layers = parse_fp8_layers("head");
  TrainResult head = run_training(c);
  EXPECT_NEAR(tail(head), tail(bf16), 0.05 * tail(bf16));
}

// --recompute block with FP8 in a captured step: the rerun records the MLP's c_proj (fused with c_fc
// in fp8_gelu_mlp) without its GEMM, and the run follows the recorded one step for step.
TEST_F(Fp8Training, BlockRecomputationFollowsTheRecordedRun) {
  TrainConfig c = config("fp8_none");
  c.precision.fp8 = true;
  c.schedule.max_iters = 20;
  c.schedule.lr_decay_iters = 20;
  c.model.dropout = 0.1;
  const TrainResult none = run_training(c);
  c.checkpoint.out_dir = dir_ / "fp8_block";
  c.model.recompute = nn::Recompute::Block;
  const TrainResult block = run_training(c);
  ASSERT_EQ(block.step_losses.size(), none.step_losses.size());
  for (size_t i = 0; i < none.step_losses.size(); ++i)
    EXPECT_NEAR(block.step_losses[i], none.step_losses[i], 1e-2 * none.step_losses[i]) << "step " << i + 1;
  EXPECT_GT(block.cuda_graph_replays, 0);
}

}  // namespace
}  // namespace nd::train
