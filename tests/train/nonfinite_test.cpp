// Non-finite values in training, in-process: a learning rate that blows the weights up after one
// step makes every later loss and gradient norm NaN. Without --skip-nonfinite the run stops at
// the first one, naming the step and the values, and writes no checkpoint; with it the bad
// updates are dropped (the weights stay those of step 1, bit for bit), logged and counted in
// metrics.jsonl, and the run stops once the allowance is spent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "train/ckpt/checkpoint.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

TrainConfig exploding_config(const TempDir& dir, const std::string& out) {
  TrainConfig c = testing::tiny_config(dir / "data", dir / out);
  c.schedule.max_iters = 30;
  c.schedule.warmup_iters = 0;
  c.optim.lr = c.optim.min_lr = 1e30;  // the first update overflows the weights: step 2 is non-finite
  c.optim.grad_clip = 0.0;
  c.observe.log_interval = 1;
  return c;
}

std::string metrics_of(const TempDir& dir, const std::string& out) {
  std::ifstream in(dir / (out + "/metrics.jsonl"));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(NonFinite, StopsAtTheFirstNamingStepAndValueWithoutACheckpoint) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  TrainResult r = run_training(exploding_config(dir, "out"), ctx);
  EXPECT_TRUE(r.diverged);
  EXPECT_EQ(r.steps_done, 2);
  EXPECT_EQ(r.skipped_nonfinite, 0);
  EXPECT_NE(log.str().find("step 2: non-finite loss ("), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("and gradient norm ("), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("stopping without a checkpoint of these weights"), std::string::npos) << log.str();
  EXPECT_TRUE(list_checkpoints(dir / "out").empty()) << "no checkpoint of a diverged run";
  EXPECT_NE(metrics_of(dir, "out").find("{\"step\":2,\"nonfinite\":\"loss,grad_norm\",\"skipped_nonfinite\":0,"
                                        "\"stopped\":true}"),
            std::string::npos)
      << metrics_of(dir, "out");
}

TEST(NonFinite, SkipDropsUpToNUpdatesThenStops) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = exploding_config(dir, "skip");
  c.debug.skip_nonfinite = 3;
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  TrainResult r = run_training(c, ctx);
  EXPECT_TRUE(r.diverged);
  EXPECT_EQ(r.skipped_nonfinite, 3);
  EXPECT_EQ(r.steps_done, 5) << "steps 2, 3, 4 dropped, step 5 stops";
  for (int k = 1; k <= 3; ++k) {
    EXPECT_NE(log.str().find("update dropped (" + std::to_string(k) + " of 3 allowed by --skip-nonfinite)"),
              std::string::npos)
        << log.str();
    EXPECT_NE(metrics_of(dir, "skip").find("{\"step\":" + std::to_string(k + 1) +
                                           ",\"nonfinite\":\"loss,grad_norm\",\"skipped_nonfinite\":" +
                                           std::to_string(k) + "}"),
              std::string::npos);
  }
  EXPECT_TRUE(list_checkpoints(dir / "skip").empty());

  // The dropped updates changed nothing: the weights are those after step 1.
  TrainConfig one = exploding_config(dir, "one");
  one.schedule.max_iters = 1;
  TrainResult after_one = run_training(one);
  EXPECT_FALSE(after_one.diverged);
  EXPECT_EQ(r.params_hash, after_one.params_hash);
}

}  // namespace
}  // namespace nd::train
