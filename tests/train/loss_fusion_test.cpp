// The training step with the cross_entropy_grad fusion (the loss told its 1/grad_accum seed, the
// logits' gradient written over them in the forward) against the same run with the fusion off:
// the same step losses and bit-identical final parameters on the CPU, with gradient accumulation
// and dropout, and with grad_accum 1.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/fusions.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

TrainResult train(const testing::TempDir& dir, const std::string& out, int grad_accum, bool fused) {
  Fusions f;
  f.cross_entropy_grad = fused;
  ScopedFusions scope(f);
  TrainConfig c = testing::tiny_config(dir / "data", dir / out);
  c.schedule.max_iters = 6;
  c.schedule.lr_decay_iters = 6;
  c.data.grad_accum = grad_accum;
  c.model.dropout = 0.1;
  return run_training(c);
}

TEST(LossFusion, TrainingMatchesTheUnfusedStep) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  for (int accum : {1, 3}) {
    const std::string tag = std::to_string(accum);
    TrainResult fused = train(dir, "fused_" + tag, accum, true), plain = train(dir, "plain_" + tag, accum, false);
    ASSERT_EQ(fused.step_losses.size(), 6u);
    ASSERT_EQ(plain.step_losses.size(), 6u);
    for (size_t i = 0; i < 6; ++i)  // the loss is a parallel sum; the gradients are the same arithmetic
      EXPECT_NEAR(fused.step_losses[i], plain.step_losses[i], 1e-6 * std::abs(plain.step_losses[i]))
          << "grad_accum " << accum << " step " << i + 1;
    EXPECT_EQ(fused.params_hash, plain.params_hash) << "grad_accum " << accum << ": final parameters differ";
  }
}

}  // namespace
}  // namespace nd::train
