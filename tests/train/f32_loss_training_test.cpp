// A run's logged losses are the kernels' f32 means whatever the model's dtype: an fp16 run on the
// CPU (the emulated f16 kernels) logs step losses and an evaluation loss that lie off f16's grid,
// with and without gradient accumulation (losses rounded to f16, as before, averaged over 2
// micro-batches or 2 evaluation batches, would be whole multiples of a quarter of f16's spacing at
// the mean, even with one of them a binade lower), and it trains as the f32 run from the same seed
// does (rounding apart).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

// True when x is a whole multiple of f16's spacing at |x| divided by `parts`.
bool on_f16_grid(double x, int parts) {
  const double step = std::ldexp(1.0, std::ilogb(x) - 10) / parts;
  return std::fmod(x, step) == 0.0;
}

TrainResult quiet_run(const TrainConfig& c) {
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  return run_training(c, ctx);
}

TEST(F32LossTraining, Fp16RunLogsF32Losses) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  for (int accum : {1, 2}) {
    TrainConfig c = testing::tiny_config(dir / "data", dir / ("fp16_" + std::to_string(accum)));
    c.precision.dtype = DType::F16;
    c.data.grad_accum = accum;
    c.schedule.max_iters = c.schedule.lr_decay_iters = 4;
    c.schedule.eval_interval = 4;
    c.schedule.eval_iters = 2;
    const TrainResult r = quiet_run(c);
    ASSERT_EQ(r.step_losses.size(), 4u);
    for (size_t i = 0; i < r.step_losses.size(); ++i)
      EXPECT_FALSE(on_f16_grid(r.step_losses[i], 4))
          << "grad_accum " << accum << " step " << i + 1 << ": " << r.step_losses[i];
    EXPECT_TRUE(std::isfinite(r.last_val_loss));
    EXPECT_FALSE(on_f16_grid(r.last_val_loss, 4)) << "grad_accum " << accum << " val loss " << r.last_val_loss;
    TrainConfig f32 = c;
    f32.precision.dtype = DType::F32;
    f32.checkpoint.out_dir = dir / ("f32_" + std::to_string(accum));
    const TrainResult want = quiet_run(f32);
    for (size_t i = 0; i < r.step_losses.size(); ++i)
      EXPECT_NEAR(r.step_losses[i], want.step_losses[i], 3e-3 * want.step_losses[i]) << "step " << i + 1;
  }
}

}  // namespace
}  // namespace nd::train
