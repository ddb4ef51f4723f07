// --dtype fp16 through the whole trainer on the CPU, where the f16 kernels are emulated with the
// f32 reference (kernels/cpu/f16_emulation.h): the run trains and follows the f32 run from the same
// seed (rounding apart); the dynamic loss scaler is on by default, starting at 65536
// (train/loss_scaler.h); a checkpointed run resumes its f16 weights, f32 masters and scaler; the precision
// policy of fp16 and its refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "train/precision.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

TrainResult quiet_run(const TrainConfig& c) {
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  return run_training(c, ctx);
}

using testing::mean_of_last;

TEST(Fp16Training, TrainsAndFollowsTheF32Run) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig f32 = testing::tiny_config(dir / "data", dir / "f32");
  f32.schedule.max_iters = f32.schedule.lr_decay_iters = 40;
  f32.optim.lr = 1e-2;
  TrainConfig f16 = f32;
  f16.checkpoint.out_dir = dir / "f16";
  f16.precision.dtype = DType::F16;
  const TrainResult a = quiet_run(f32), b = quiet_run(f16);
  ASSERT_EQ(a.step_losses.size(), b.step_losses.size());
  EXPECT_FALSE(b.diverged);
  // The same initial weights rounded to f16: the first loss agrees to f16 rounding.
  EXPECT_NEAR(b.step_losses[0], a.step_losses[0], 2e-3 * a.step_losses[0]);
  // It learns, and ends where f32 ends (rounding and any skipped step apart).
  EXPECT_LT(mean_of_last(b.step_losses, 5), b.step_losses[0] - 0.3);
  EXPECT_NEAR(mean_of_last(b.step_losses, 5), mean_of_last(a.step_losses, 5), 0.03 * mean_of_last(a.step_losses, 5));
  EXPECT_LE(b.overflow_skips, 2);
  EXPECT_EQ(b.loss_scale, 65536.0);  // dynamic by default, from 65536 (loss_scaler.h)
}

TEST(Fp16Training, GradAccumulationLetsTheScaleStartAt65536) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.precision.dtype = DType::F16;
  c.data.grad_accum = 2;
  c.schedule.max_iters = c.schedule.lr_decay_iters = 4;
  const TrainResult r = quiet_run(c);
  EXPECT_FALSE(r.diverged);
  EXPECT_EQ(r.loss_scale * std::pow(2.0, static_cast<double>(r.overflow_skips)), 65536.0);
}

TEST(Fp16Training, ResumesWeightsMastersAndScaler) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig whole = testing::tiny_config(dir / "data", dir / "whole");
  whole.precision.dtype = DType::F16;
  whole.schedule.max_iters = whole.schedule.lr_decay_iters = 8;
  TrainConfig first = whole;
  first.checkpoint.out_dir = dir / "split";
  first.schedule.max_iters = 4;
  TrainConfig rest = whole;
  rest.checkpoint.out_dir = dir / "split";
  rest.checkpoint.resume = true;
  const TrainResult a = quiet_run(whole);
  quiet_run(first);
  const TrainResult b = quiet_run(rest);
  EXPECT_EQ(b.first_step, 4);
  ASSERT_EQ(b.step_losses.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(b.step_losses[i], a.step_losses[4 + i]) << "step " << 5 + i;
  EXPECT_EQ(b.params_hash, a.params_hash);
  EXPECT_EQ(b.loss_scale, a.loss_scale);
}

TEST(Fp16Training, PrecisionPolicyAndRefusals) {
  TrainConfig c;
  c.precision.dtype = DType::F16;
  const PrecisionPolicy p = precision_policy(c);
  EXPECT_EQ(p.param, DType::F16);
  EXPECT_EQ(p.compute, DType::F16);
  EXPECT_EQ(p.grad, DType::F32);  // the unscale must not flush small gradients in f16
  EXPECT_EQ(p.master, DType::F32);
  EXPECT_TRUE(p.loss_scaling);
  EXPECT_TRUE(p.loss_scaler.dynamic);
  EXPECT_EQ(p.str(), "param f16, compute f16, grad f32, reduce f32, master f32, loss scale dynamic");
  c.precision.loss_scale = parse_loss_scale("1");
  EXPECT_FALSE(precision_policy(c).loss_scaling);
  c.precision.loss_scale = parse_loss_scale("1024");
  EXPECT_EQ(precision_policy(c).loss_scaler.initial_scale, 1024.0);
  c.precision.loss_scale = std::nullopt;
  c.precision.grad_dtype = DType::F16;
  EXPECT_EQ(precision_policy(c).grad, DType::F16);
  c.precision.grad_dtype = DType::BF16;
  EXPECT_THROW(precision_policy(c), Error);
  c.precision.grad_dtype = std::nullopt;
  c.precision.fp8 = true;
  EXPECT_THROW(precision_policy(c), Error);
  TrainConfig bf16;
  bf16.precision.dtype = DType::BF16;
  bf16.precision.grad_dtype = DType::F16;
  EXPECT_THROW(precision_policy(bf16), Error);
}

}  // namespace
}  // namespace nd::train
