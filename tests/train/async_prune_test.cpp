// With --async-save the prune to --keep runs on the writer thread after a save completes at the
// per-step agreement (removing gigabytes waits on the disk): the run still ends with exactly the
// newest --keep checkpoints, each equal to a synchronous run's.
#include <gtest/gtest.h>

#include <string>

#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_part.h"
#include "train/trainer.h"
#include "train/train_fixture.h"
#include "process_helpers.h"
#include "checkpoint_test_util.h"

namespace nd::train {
namespace {

using testing::TempDir;

TrainConfig saving_every_two_steps(const TempDir& dir, const std::string& out, const std::string& async) {
  TrainConfig c = testing::tiny_config(dir / "data", dir / out);
  c.schedule.max_iters = 9;
  c.schedule.lr_decay_iters = 9;
  c.observe.log_interval = 1;
  c.checkpoint.keep = 2;
  c.checkpoint.interval = 2;
  c.checkpoint.async_save = parse_async_save(async);
  return c;
}

TEST(AsyncPrune, TheRunEndsWithTheNewestKeepCheckpoints) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  run_training(saving_every_two_steps(dir, "sync", "false"));
  TrainResult r = run_training(saving_every_two_steps(dir, "async", "true"));
  EXPECT_EQ(r.last_checkpoint, checkpoint_path(dir / "async", 9));
  const auto kept = list_checkpoints(dir / "async");
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].first, 8);
  EXPECT_EQ(kept[1].first, 9);
  ASSERT_EQ(list_checkpoints(dir / "sync").size(), 2u);
  for (int step : {8, 9}) {
    EXPECT_EQ(testing::rank0_part_bytes(checkpoint_path(dir / "async", step)),
              testing::rank0_part_bytes(checkpoint_path(dir / "sync", step)))
        << "step " << step;
  }
}

}  // namespace
}  // namespace nd::train
