// ZeRO on one GPU (dp 1: the reduce-scatter and all-gather are copies, but the sharded optimizer's
// runs, offsets, norm and in-place reduction, ZeRO 2's staging and ZeRO 3's gathered buffers run on
// the device): --zero 1, 2 and 3 give the losses of --zero 0 over 20 steps with clipping and grad-accum 2, in f32 (relative 1e-5) and in bf16 with f32
// masters (relative 1e-2), also with f32 main gradients; checkpoints move between the stages.
#include <gtest/gtest.h>

#include <cmath>

#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

class ZeroGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
    testing::write_tiny_data(dir_ / "data");
  }

  TrainConfig config(const std::string& out, const std::string& dtype, int zero) {
    TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / out);
    c.parallel.device = Device::cuda();
    c.precision.dtype = parse_dtype(dtype);
    c.parallel.zero = zero;
    c.data.grad_accum = 2;
    c.optim.grad_clip = 0.05;
    c.parallel.bucket_mb = 0.004;
    c.schedule.max_iters = 20;
    c.schedule.lr_decay_iters = 20;
    return c;
  }

  static void expect_near(const TrainResult& got, const TrainResult& want, double tol) {
    ASSERT_EQ(got.step_losses.size(), want.step_losses.size());
    for (size_t i = 0; i < got.step_losses.size(); ++i)
      EXPECT_LE(std::abs(got.step_losses[i] - want.step_losses[i]), tol * std::abs(want.step_losses[i]))
          << "step " << i + 1 << ": " << got.step_losses[i] << " vs " << want.step_losses[i];
  }

  testing::TempDir dir_;
};

TEST_F(ZeroGpu, F32StagesMatchZeroZero) {
  TrainResult reference = run_training(config("f32_zero0", "f32", 0));
  for (int zero : {1, 2, 3}) {
    SCOPED_TRACE("zero " + std::to_string(zero));
    expect_near(run_training(config("f32_zero" + std::to_string(zero), "f32", zero)), reference, 1e-5);
  }
}

TEST_F(ZeroGpu, Bf16StagesMatchZeroZero) {
  for (const char* grad : {"bf16", "f32"}) {
    SCOPED_TRACE(std::string("--grad-dtype ") + grad);
    TrainConfig c = config(std::string("bf16_zero0_") + grad, "bf16", 0);
    c.precision.grad_dtype = parse_grad_dtype(grad);
    TrainResult reference = run_training(c);
    for (int zero : {1, 2, 3}) {
      SCOPED_TRACE("zero " + std::to_string(zero));
      c = config("bf16_zero" + std::to_string(zero) + "_" + grad, "bf16", zero);
      c.precision.grad_dtype = parse_grad_dtype(grad);
      expect_near(run_training(c), reference, 1e-2);
    }
  }
}

TEST_F(ZeroGpu, CheckpointOfZeroOneResumesAtZeroZero) {
  TrainResult reference = run_training(config("uninterrupted", "f32", 0));
  TrainConfig c = config("resumed", "f32", 1);
  c.schedule.max_iters = 10;  // the schedule stays the 20-step one
  run_training(c);
  c = config("resumed", "f32", 0);
  c.checkpoint.resume = true;
  TrainResult r = run_training(c);
  ASSERT_EQ(r.first_step, 10);
  for (size_t i = 0; i < r.step_losses.size(); ++i)
    EXPECT_LE(std::abs(r.step_losses[i] - reference.step_losses[10 + i]), 1e-5 * reference.step_losses[10 + i])
        << "step " << 11 + i;
}

}  // namespace
}  // namespace nd::train
