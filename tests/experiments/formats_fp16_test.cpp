// configs/experiments/formats.conf's fp16 variants on the CPU (the emulated f16 kernels), shrunk on
// the command line (which outranks the file's base) to a tiny model: the file parses, fp16 (the
// dynamic loss scaler) and fp16-no-loss-scaling (--loss-scale 1) both train, and end near the f32
// control; the scaler is on in the first and off in the second.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "experiments/ablate.h"
#include "experiment_fixture.h"
#include "train/trainer.h"

namespace nd::experiments {
namespace {

using train::testing::mean_of_last;

TEST(FormatsFp16, BothFp16VariantsTrainOnTheCpu) {
  train::testing::TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  const std::string file = std::string(ND_SOURCE_DIR) + "/configs/experiments/formats.conf";
  ExperimentArgs args = testing::tiny_args(ablate_flag_set(), "ablate", dir / "data", dir / "out",
                                           {"--experiment", file, "--device", "cpu", "--dtype", "f32", "--max-iters",
                                            "30", "--lr-decay-iters", "30", "--seeds", "1"});
  std::map<std::string, train::TrainResult> results;
  for (const char* name : {"control", "fp16", "fp16-no-loss-scaling"}) {
    const VariantSpec* variant = nullptr;
    for (const VariantSpec& v : args.spec.variants)
      if (v.name == name) variant = &v;
    ASSERT_TRUE(variant != nullptr || std::string(name) == "control") << name << " is not in " << file;
    train::TrainConfig c = variant_config(args.flags, variant);
    c.checkpoint.out_dir = dir / name;
    std::ostringstream log;
    train::RunContext ctx;
    ctx.log = &log;
    results[name] = train::run_training(c, ctx);
  }
  const double control = mean_of_last(results["control"].step_losses, 5);
  for (const char* name : {"fp16", "fp16-no-loss-scaling"}) {
    const train::TrainResult& r = results[name];
    EXPECT_FALSE(r.diverged) << name;
    EXPECT_LT(mean_of_last(r.step_losses, 5), r.step_losses.front() - 0.3) << name << " did not learn";
    EXPECT_NEAR(mean_of_last(r.step_losses, 5), control, 0.05 * control) << name;
  }
  EXPECT_EQ(results["fp16"].loss_scale, 65536.0);
  EXPECT_EQ(results["fp16-no-loss-scaling"].loss_scale, 1.0);
  EXPECT_EQ(results["fp16-no-loss-scaling"].overflow_skips, 0);
}

}  // namespace
}  // namespace nd::experiments
