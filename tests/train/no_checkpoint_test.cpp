// --no-checkpoint (for benchmarks of large models): a run with evaluations and a checkpoint interval
// writes no checkpoint at all, not even the final one, and still writes its metrics.
#include <gtest/gtest.h>

#include <filesystem>

#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

TEST(NoCheckpoint, WritesNoCheckpoint) {
  testing::TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainConfig c = testing::tiny_config(dir / "data", dir / "out");
  c.schedule.max_iters = 4;
  c.schedule.lr_decay_iters = 4;
  c.schedule.eval_interval = 2;
  c.checkpoint.interval = 2;
  c.checkpoint.disabled = true;
  const TrainResult r = run_training(c);
  EXPECT_EQ(r.steps_done, 4);
  EXPECT_TRUE(r.last_checkpoint.empty()) << r.last_checkpoint;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "out"))
    EXPECT_EQ(entry.path().filename().string().rfind("ckpt_", 0), std::string::npos) << entry.path();
  EXPECT_TRUE(std::filesystem::exists(dir / "out/metrics.jsonl"));
}

}  // namespace
}  // namespace nd::train
