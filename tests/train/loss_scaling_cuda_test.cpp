// Loss scaling and the master-weight ablation on the GPU (bf16, CUDA graph on): a dynamic loss
// scale of 2^16 is a power of two, so the run follows the unscaled run to rounding noise; a scale
// that overflows backward skips every update, in the captured graph too (the weights stay the
// initial ones); bf16 weights updated in place (--master-weights false) at a learning rate whose
// updates fall below bf16's resolution for many weights learn less than with f32 masters.
#include <gtest/gtest.h>

#include <cmath>

#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

class GpuLossScaling : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
    testing::write_tiny_data(dir_ / "data");
  }

  TrainConfig config(const std::string& out) {
    TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / out);
    c.schedule.max_iters = 20;
    c.schedule.lr_decay_iters = 20;
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::BF16;
    c.precision.grad_dtype = DType::F32;
    c.optim.lr = 1e-2;
    return c;
  }

  testing::TempDir dir_;
};

TEST_F(GpuLossScaling, DynamicScaleFollowsTheUnscaledRun) {
  TrainResult plain = run_training(config("plain"));
  TrainConfig c = config("scaled");
  c.precision.loss_scale = LossScalerOptions{};
  TrainResult scaled = run_training(c);
  ASSERT_EQ(plain.step_losses.size(), scaled.step_losses.size());
  for (size_t i = 0; i < plain.step_losses.size(); ++i)
    EXPECT_NEAR(scaled.step_losses[i], plain.step_losses[i], 1e-3 * plain.step_losses[i]) << "step " << i + 1;
  EXPECT_EQ(scaled.overflow_skips, 0);
  EXPECT_EQ(scaled.loss_scale, 65536.0);
  EXPECT_GT(scaled.cuda_graph_replays, 0);
}

TEST_F(GpuLossScaling, OverflowSkipsEveryUpdateInTheGraphToo) {
  TrainConfig c = config("huge");
  c.precision.loss_scale = parse_loss_scale("1e39");  // beyond f32's and bf16's range: the seed is inf
  TrainResult r = run_training(c);
  EXPECT_FALSE(r.diverged);
  EXPECT_EQ(r.overflow_skips, 20);
  EXPECT_GT(r.cuda_graph_replays, 0);
  TrainConfig none = config("untrained");
  none.schedule.max_iters = 0;
  EXPECT_EQ(r.params_hash, run_training(none).params_hash);
}

TEST_F(GpuLossScaling, Bf16WithoutMastersLearnsLessAtASmallLearningRate) {
  // At lr 1e-4 AdamW moves a weight by about 1e-4 a step: below half a bf16 ulp for every weight
  // above 1/32 in magnitude and for the LayerNorm gains (1.0: half an ulp is 0.004), so rounded
  // into bf16 in place those updates vanish; with f32 masters they add up.
  auto run = [&](const std::string& out, bool masters) {
    TrainConfig c = config(out);
    c.schedule.max_iters = 200;
    c.schedule.lr_decay_iters = 200;
    c.schedule.warmup_iters = 0;
    c.optim.lr = c.optim.min_lr = 1e-4;
    c.precision.master_weights = masters;
    return run_training(c);
  };
  auto tail = [](const TrainResult& r) {
    double sum = 0.0;
    for (size_t i = r.step_losses.size() - 20; i < r.step_losses.size(); ++i) sum += r.step_losses[i];
    return sum / 20;
  };
  TrainResult with = run("masters", true), without = run("in_place", false);
  EXPECT_LT(tail(with), with.step_losses.front() - 0.2) << "the f32-master run should learn";
  EXPECT_GT(tail(without), tail(with)) << "rounding every update into bf16 should cost";
}

}  // namespace
}  // namespace nd::train
