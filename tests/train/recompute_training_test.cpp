// --recompute through the trainer on the CPU: with dropout and two micro-batches per step, 6 steps
// of attention and block recomputation take the losses, validation loss and final parameters of
// --recompute none bit for bit; the flag and its config key reach the model; a bad value is one
// error line naming the choices.
#include <gtest/gtest.h>

#include <fstream>

#include "train/model_config.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

class RecomputeTraining : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_tiny_data(dir_ / "data"); }

  TrainResult train(const std::string& recompute) {
    TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / ("out_" + recompute));
    c.schedule.max_iters = 6;
    c.schedule.lr_decay_iters = 6;
    c.schedule.eval_interval = 6;
    c.model.dropout = 0.1;
    c.data.grad_accum = 2;
    c.model.recompute = parse_recompute(recompute);
    return run_training(c);
  }

  TempDir dir_;
};

TEST_F(RecomputeTraining, LossesAndParametersEqualNoneBitForBit) {
  const TrainResult none = train("none");
  ASSERT_EQ(none.step_losses.size(), 6u);
  for (const char* mode : {"attention", "block"}) {
    const TrainResult r = train(mode);
    EXPECT_EQ(r.step_losses, none.step_losses) << mode;
    EXPECT_EQ(r.best_val_loss, none.best_val_loss) << mode;
    EXPECT_EQ(r.params_hash, none.params_hash) << mode << ": the trained parameters differ";
  }
}

TEST_F(RecomputeTraining, TheFlagReachesTheModel) {
  TrainConfig c = testing::tiny_config(dir_ / "data", dir_ / "out");
  EXPECT_EQ(model_config_for(c, 65).recompute, nn::Recompute::None);
  c.model.recompute = nn::Recompute::Attention;
  EXPECT_EQ(model_config_for(c, 65).recompute, nn::Recompute::Attention);
  c.model.recompute = nn::Recompute::Block;
  EXPECT_EQ(model_config_for(c, 65).recompute, nn::Recompute::Block);
}

TEST_F(RecomputeTraining, ABadValueIsOneErrorLine) {
  const std::string data = dir_ / "data", out = dir_ / "out";
  testing::expect_cli_error(
      testing::run_nanodist("train --data " + data + " --out " + out + " --recompute layers", dir_.path()),
      "--recompute must be none, attention or block, got 'layers'");
  std::ofstream(dir_ / "bad.conf") << "recompute = everything\n";
  testing::expect_cli_error(testing::run_nanodist("train --data " + data + " --out " + out + " --config " +
                                                      (dir_ / "bad.conf"),
                                                  dir_.path()),
                            "--recompute must be none, attention or block, got 'everything'");
}

}  // namespace
}  // namespace nd::train
