// Training on the GPU in f32 follows the CPU: 20 steps of the same tiny model on the same data give
// the same losses to 1e-4 relative (the GPU pads the vocabulary and sums in other orders, so
// bitwise equality is not expected). bf16 training must also learn. With f32 main gradients
// (--grad-dtype f32) over 4 micro-batches, bf16 training follows the f32 CPU run more closely than
// with bf16 gradients, whose micro-batch sums round at every add.
#include <gtest/gtest.h>

#include <cmath>

#include "train/train_fixture.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

class GpuTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no GPU";
    testing::write_tiny_data(dir_ / "data");
  }

  TrainConfig config(const std::string& out, const std::string& device, const std::string& dtype) {
    TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / out);
    c.schedule.max_iters = 20;
    c.schedule.lr_decay_iters = 20;
    c.schedule.eval_interval = 0;
    c.schedule.eval_iters = 2;
    c.parallel.device = parse_device(device);
    c.precision.dtype = parse_dtype(dtype);
    return c;
  }

  testing::TempDir dir_;
};

TEST_F(GpuTraining, F32LossesTrackTheCpu) {
  TrainResult cpu = run_training(config("cpu", "cpu", "f32"));
  TrainResult gpu = run_training(config("gpu", "cuda", "f32"));
  ASSERT_EQ(cpu.step_losses.size(), 20u);
  ASSERT_EQ(gpu.step_losses.size(), 20u);
  for (size_t i = 0; i < cpu.step_losses.size(); ++i)
    EXPECT_LE(std::abs(gpu.step_losses[i] - cpu.step_losses[i]), 1e-4 * std::abs(cpu.step_losses[i]))
        << "step " << i + 1 << ": GPU " << gpu.step_losses[i] << ", CPU " << cpu.step_losses[i];
  EXPECT_NEAR(gpu.best_val_loss, cpu.best_val_loss, 1e-4 * cpu.best_val_loss);
}

TEST_F(GpuTraining, Bf16Learns) {
  TrainConfig c = config("bf16", "cuda", "bf16");
  c.schedule.max_iters = 60;
  c.schedule.lr_decay_iters = 60;
  c.optim.lr = 1e-2;
  c.optim.min_lr = 1e-3;
  TrainResult r = run_training(c);
  ASSERT_EQ(r.step_losses.size(), 60u);
  EXPECT_LT(r.step_losses.back(), r.step_losses.front() - 0.3);
  EXPECT_TRUE(std::isfinite(r.best_val_loss));
}

TEST_F(GpuTraining, F32MainGradientsTrackTheF32RunCloserThanBf16Gradients) {
  auto with_accum = [&](const std::string& out, const std::string& device, const std::string& dtype,
                        const std::string& grad_dtype) {
    TrainConfig c = config(out, device, dtype);
    c.data.grad_accum = 4;
    c.precision.grad_dtype = parse_grad_dtype(grad_dtype);
    c.optim.lr = 1e-2;
    return run_training(c);
  };
  TrainResult ref = with_accum("ref", "cpu", "f32", "");
  TrainResult main = with_accum("main", "cuda", "bf16", "f32");
  TrainResult plain = with_accum("plain", "cuda", "bf16", "bf16");
  ASSERT_EQ(main.step_losses.size(), ref.step_losses.size());
  double main_err = 0, plain_err = 0;
  for (size_t i = 0; i < ref.step_losses.size(); ++i) {
    main_err += std::abs(main.step_losses[i] - ref.step_losses[i]);
    plain_err += std::abs(plain.step_losses[i] - ref.step_losses[i]);
    EXPECT_LE(std::abs(main.step_losses[i] - ref.step_losses[i]), 0.05 * ref.step_losses[i]) << "step " << i + 1;
  }
  EXPECT_LE(main_err, plain_err) << "f32 main gradients should track the f32 run at least as well";
  EXPECT_LT(main.step_losses.back(), main.step_losses.front() - 0.3);
}

}  // namespace
}  // namespace nd::train
