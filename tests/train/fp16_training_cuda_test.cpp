// --dtype fp16 on the GPU (CUDA graph on): it learns like bf16 from the same seed and data (the
// last losses within 5%); its first steps follow the CPU's emulation of the same f16 kernels; a
// fixed loss scale whose seed is inf skips every update, in the captured graph too, leaving
// the initial weights; and the f16 layer statistics run.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

// The mean of the last 10 step losses: what these runs are compared by.
double tail(const TrainResult& r) { return testing::mean_of_last(r.step_losses, 10); }

class Fp16TrainingCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
    testing::write_tiny_data(dir_ / "data");
  }

  TrainConfig config(const std::string& out, const std::string& dtype) {
    TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / out);
    c.model.n_embd = 32;
    c.schedule.max_iters = 60;
    c.schedule.lr_decay_iters = 60;
    c.optim.lr = 1e-2;
    c.optim.min_lr = 1e-3;
    c.parallel.device = Device::cuda();
    c.precision.dtype = parse_dtype(dtype);
    return c;
  }

  testing::TempDir dir_;
};

TEST_F(Fp16TrainingCuda, LearnsLikeBf16) {
  const TrainResult bf16 = run_training(config("bf16", "bf16"));
  const TrainResult fp16 = run_training(config("fp16", "fp16"));
  ASSERT_EQ(fp16.step_losses.size(), 60u);
  EXPECT_FALSE(fp16.diverged);
  EXPECT_LT(tail(fp16), fp16.step_losses.front() - 0.3) << "fp16 training did not learn";
  EXPECT_NEAR(tail(fp16), tail(bf16), 0.05 * tail(bf16));
  EXPECT_LE(fp16.overflow_skips, 3);
  EXPECT_GT(fp16.cuda_graph_replays, 0);
}

TEST_F(Fp16TrainingCuda, FollowsTheCpuEmulation) {
  TrainConfig gpu = config("gpu", "fp16");
  gpu.schedule.max_iters = gpu.schedule.lr_decay_iters = 8;
  TrainConfig cpu = gpu;
  cpu.checkpoint.out_dir = dir_ / "cpu";
  cpu.parallel.device = Device::cpu();
  const TrainResult g = run_training(gpu), c = run_training(cpu);
  ASSERT_EQ(g.step_losses.size(), c.step_losses.size());
  for (size_t i = 0; i < g.step_losses.size(); ++i)
    EXPECT_NEAR(g.step_losses[i], c.step_losses[i], 1e-2 * c.step_losses[i]) << "step " << i + 1;
  EXPECT_EQ(g.overflow_skips, c.overflow_skips);
  EXPECT_EQ(g.loss_scale, c.loss_scale);
}

TEST_F(Fp16TrainingCuda, AnInfiniteSeedSkipsEveryUpdateInTheGraph) {
  TrainConfig c = config("huge", "fp16");
  c.schedule.max_iters = c.schedule.lr_decay_iters = 20;
  // Past f32's largest: the seed (f32, the loss's dtype, ops::loss_dtype) is itself inf. (1e6, past
  // f16's 65504, is an f32 seed like any other.)
  c.precision.loss_scale = parse_loss_scale("1e39");
  const TrainResult r = run_training(c);
  EXPECT_FALSE(r.diverged);
  EXPECT_EQ(r.overflow_skips, 20);
  EXPECT_GT(r.cuda_graph_replays, 0);
  TrainConfig none = config("untrained", "fp16");
  none.schedule.max_iters = 0;
  EXPECT_EQ(r.params_hash, run_training(none).params_hash);
}

TEST_F(Fp16TrainingCuda, LayerStatisticsRunOnF16) {
  TrainConfig c = config("stats", "fp16");
  c.schedule.max_iters = c.schedule.lr_decay_iters = 4;
  c.observe.layer_stats = 2;
  const TrainResult r = run_training(c);
  EXPECT_FALSE(r.diverged);
}

}  // namespace
}  // namespace nd::train
