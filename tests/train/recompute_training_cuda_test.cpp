// --recompute through the trainer on the GPU, in bf16 with dropout and two micro-batches, the step
// captured as a CUDA graph: attention and block recomputation follow --recompute none's losses to
// tolerance, replay the graph without allocating, and lower the peak device memory, block below
// attention, attention not above none, on a model whose activations outweigh its state.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

class RecomputeGpuTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
    testing::write_tiny_data(dir_ / "data", 20000);
  }

  TrainResult train(const std::string& recompute) {
    TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / ("out_" + recompute));
    c.model.n_layer = 4;
    c.model.n_head = 2;
    c.model.n_embd = 128;
    c.model.block_size = 256;
    c.data.batch_size = 8;
    c.schedule.max_iters = 8;
    c.schedule.lr_decay_iters = 8;
    c.schedule.eval_interval = 0;
    c.model.dropout = 0.1;
    c.data.grad_accum = 2;
    c.parallel.device = Device::cuda();
    c.precision.dtype = DType::BF16;
    c.model.recompute = parse_recompute(recompute);
    return run_training(c);
  }

  testing::TempDir dir_;
};

TEST_F(RecomputeGpuTraining, FollowsNoneInACudaGraphWithLessMemory) {
  const TrainResult none = train("none");
  const TrainResult attention = train("attention");
  const TrainResult block = train("block");
  for (const TrainResult* r : {&none, &attention, &block}) {
    ASSERT_EQ(r->step_losses.size(), 8u);
    EXPECT_GT(r->cuda_graph_replays, 0);
    EXPECT_EQ(r->replay_cuda_mallocs, 0);
  }
  for (size_t i = 0; i < none.step_losses.size(); ++i) {
    EXPECT_NEAR(attention.step_losses[i], none.step_losses[i], 1e-2 * none.step_losses[i]) << "step " << i + 1;
    EXPECT_NEAR(block.step_losses[i], none.step_losses[i], 1e-2 * none.step_losses[i]) << "step " << i + 1;
  }
  EXPECT_LT(block.peak_requested_device_bytes, attention.peak_requested_device_bytes);
  EXPECT_LE(attention.peak_requested_device_bytes, none.peak_requested_device_bytes);
  std::printf("peak requested device bytes: none %lld, attention %lld, block %lld\n",
              static_cast<long long>(none.peak_requested_device_bytes),
              static_cast<long long>(attention.peak_requested_device_bytes),
              static_cast<long long>(block.peak_requested_device_bytes));
}

}  // namespace
}  // namespace nd::train
