// Loss scaling through the whole trainer on the CPU (f32): a power-of-two scale commutes with
// every rounding of backward, so a run scaled by 1024 and unscaled before the norm follows the
// unscaled run bit for bit; dynamic scaling logs its scale and skips in metrics.jsonl and keeps
// them in checkpoints; a scale so large that the gradients overflow skips every update (the weights
// stay the initial ones) without counting as a fault; bad flag values are one-line input errors.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "train/ckpt/checkpoint.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

std::string metrics_of(const std::string& out_dir) {
  std::ifstream in(out_dir + "/metrics.jsonl");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TrainResult quiet_run(const TrainConfig& c) {
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  return run_training(c, ctx);
}

TEST(LossScaling, PowerOfTwoScaleFollowsTheUnscaledRunBitForBit) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig plain = testing::tiny_config(dir / "data", dir / "plain");
  plain.data.grad_accum = 2;
  TrainConfig scaled = plain;
  scaled.checkpoint.out_dir = dir / "scaled";
  scaled.precision.loss_scale = parse_loss_scale("1024");
  const TrainResult a = quiet_run(plain), b = quiet_run(scaled);
  ASSERT_EQ(a.step_losses.size(), b.step_losses.size());
  for (size_t i = 0; i < a.step_losses.size(); ++i) EXPECT_EQ(a.step_losses[i], b.step_losses[i]) << "step " << i + 1;
  EXPECT_EQ(a.params_hash, b.params_hash);
  EXPECT_EQ(b.overflow_skips, 0);
  EXPECT_EQ(b.loss_scale, 1024.0);
}

TEST(LossScaling, DynamicScaleIsLoggedAndCheckpointed) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.precision.loss_scale = LossScalerOptions{};
  c.schedule.max_iters = 6;
  c.observe.log_interval = 1;
  const TrainResult r = quiet_run(c);
  EXPECT_EQ(r.overflow_skips, 0);
  EXPECT_EQ(r.loss_scale, 65536.0);
  EXPECT_NE(metrics_of(dir / "out").find("\"loss_scale\":65536,\"skipped_steps\":0}"), std::string::npos)
      << metrics_of(dir / "out");
  const CheckpointData saved = read_checkpoint(newest_checkpoint(dir / "out"));
  EXPECT_EQ(saved.state.loss_scale, 65536.0);
  EXPECT_EQ(saved.state.loss_scale_finite_steps, 6);
  EXPECT_EQ(saved.state.overflow_skips, 0);
  // Resumed, the scaler goes on counting from the checkpoint's 6 finite steps.
  c.schedule.max_iters = 8;
  c.checkpoint.resume = true;
  quiet_run(c);
  EXPECT_EQ(read_checkpoint(newest_checkpoint(dir / "out")).state.loss_scale_finite_steps, 8);
}

TEST(LossScaling, OverflowingBackwardSkipsEveryUpdateWithoutStopping) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "huge");
  c.schedule.max_iters = 5;
  // Beyond f32's largest (3.4e38) the seed itself is inf: every gradient overflows. (At 3e38 this
  // tiny model's backward stays finite, the loss being a mean over 64 tokens.)
  c.precision.loss_scale = parse_loss_scale("1e39");
  const TrainResult r = quiet_run(c);
  EXPECT_FALSE(r.diverged);
  EXPECT_EQ(r.steps_done, 5);
  EXPECT_EQ(r.overflow_skips, 5);
  EXPECT_EQ(r.skipped_nonfinite, 0);
  EXPECT_EQ(r.loss_scale, 1e39);  // a fixed scale never backs off
  TrainConfig untrained = testing::tiny_config(dir / "data", dir / "untrained");
  untrained.schedule.max_iters = 0;
  EXPECT_EQ(r.params_hash, quiet_run(untrained).params_hash) << "a skipped update changed the weights";
}

TEST(LossScaling, BadPrecisionFlagsAreOneLineErrors) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  const std::string base = "train --data " + dir / "data" + " --out " + dir / "out" + " --max-iters 1 ";
  testing::expect_cli_error(testing::run_nanodist(base + "--loss-scale 0", dir.path()), "--loss-scale");
  testing::expect_cli_error(testing::run_nanodist(base + "--loss-scale sometimes", dir.path()), "--loss-scale");
  testing::expect_cli_error(testing::run_nanodist(base + "--dtype fp16 --grad-dtype bf16", dir.path()),
                            "--grad-dtype bf16 with --dtype fp16");
  testing::expect_cli_error(testing::run_nanodist(base + "--master-weights false", dir.path()),
                            "--master-weights false needs --dtype bf16");
  testing::expect_cli_error(testing::run_nanodist(base + "--fp8", dir.path()), "--fp8 needs --dtype bf16");
}

}  // namespace
}  // namespace nd::train
