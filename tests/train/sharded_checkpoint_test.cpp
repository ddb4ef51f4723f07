// Sharded checkpoints on one process: the slices the ranks own tile every tensor exactly once and
// the blocks a rank holds are its tensor-parallel shard (against nn::shard_of); asynchronous
// and synchronous saves write identical part files; a corrupted newest checkpoint is skipped by
// --resume (which then continues with the uninterrupted run's losses) and by eval/sample.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "nn/shard_spec.h"
#include "tensor/random.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/checkpoint_slices.h"
#include "train/trainer.h"
#include "train_fixture.h"
#include "process_helpers.h"
#include "checkpoint_test_util.h"

namespace nd::train {
namespace {

using testing::TempDir;

TEST(CheckpointSlices, OwnedSlicesTileTheTensorAndHeldBlocksAreTheShard) {
  Generator gen(5);
  for (int parts : {1, 3})
    for (int dim : {-1, 0, 1})
      for (int tp : {1, 2, 4})
        for (int dp : {1, 2, 3}) {
          const Shape full_shape = {static_cast<int64_t>(12 * parts), static_cast<int64_t>(40 * parts)};
          Tensor full = Tensor::randn(full_shape, gen);
          const nn::ShardSpec spec{dim, dim < 0 ? 1 : parts};
          std::vector<int> hits(static_cast<size_t>(full.numel()), 0);
          for (int t = 0; t < tp; ++t) {
            Tensor shard = spec.sharded() ? nn::shard_of(full, spec, t, tp) : full.clone();
            TensorPlacement p{full_shape, shard.shape(), spec, t, tp};
            // The held blocks, copied out of the full tensor into a shard-shaped buffer, are the shard.
            Tensor rebuilt = Tensor::zeros(shard.shape());
            for (const BlockMap& b : held_blocks(p))
              copy_box(static_cast<const char*>(full.raw_data()), full_shape, b.full.offset,
                       static_cast<char*>(rebuilt.raw_data()), shard.shape(), b.local.offset, b.full.count, 4);
            EXPECT_EQ(rebuilt.to_float_vector(), shard.to_float_vector()) << "parts " << parts << " dim " << dim;
            for (int d = 0; d < dp; ++d) {
              const bool by_tp = spec.sharded() && tp > 1;
              for (const BlockMap& b : owned_blocks(p, "w", by_tp ? d : d * tp + t, by_tp ? dp : dp * tp))
                for (int64_t r = 0; r < b.full.count[0]; ++r)
                  for (int64_t c = 0; c < b.full.count[1]; ++c)
                    hits[static_cast<size_t>((b.full.offset[0] + r) * full_shape[1] + b.full.offset[1] + c)] += 1;
            }
          }
          for (size_t i = 0; i < hits.size(); ++i)
            ASSERT_EQ(hits[i], 1) << "element " << i << " written " << hits[i] << " times (parts " << parts << ", dim "
                                  << dim << ", tp " << tp << ", dp " << dp << ")";
        }
}

TEST(CheckpointSlices, PaddingRowsBelongToNoBlock) {
  // A vocabulary-parallel embedding: 10 real rows padded to 12, over tp 2 (6 rows each).
  TensorPlacement p{{10, 8}, {6, 8}, nn::ShardSpec{0, 1}, 1, 2};
  auto blocks = held_blocks(p);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].full.offset, (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(blocks[0].full.count, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(blocks[0].local.offset, (std::vector<int64_t>{0, 0}));
}

TrainConfig small_run(const TempDir& dir, const std::string& out) {
  TrainConfig c = testing::tiny_config(dir / "data", dir / out);
  c.model.n_embd = 32;  // tensors above a page, so the writer cuts blocks into row ranges
  c.schedule.max_iters = 12;
  c.schedule.lr_decay_iters = 12;
  c.observe.log_interval = 1;
  c.checkpoint.keep = 0;
  return c;
}

TEST(ShardedCheckpoint, AsyncAndSyncSavesWriteIdenticalFiles) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  for (const char* mode : {"true", "false"}) {
    TrainConfig c = small_run(dir, std::string("async_") + mode);
    c.checkpoint.interval = 4;
    c.checkpoint.async_save = parse_async_save(mode);
    TrainResult r = run_training(c);
    EXPECT_EQ(r.last_checkpoint, checkpoint_path(c.checkpoint.out_dir, 12));
  }
  for (int step : {4, 8, 12}) {
    const std::string a = checkpoint_path(dir / "async_true", step), b = checkpoint_path(dir / "async_false", step);
    const std::string part = "/" + part_file_name(a, 0).substr(part_file_name(a, 0).find('/') + 1);
    const std::string bytes = testing::slurp_file(parts_directory(a) + part);
    EXPECT_GT(bytes.size(), 1000u);
    EXPECT_EQ(bytes, testing::slurp_file(parts_directory(b) + part)) << "step " << step;
    Hdf5File fa = Hdf5File::open_read(a), fb = Hdf5File::open_read(b);
    EXPECT_EQ(fa.read_string("/slices"), fb.read_string("/slices"));
    CheckpointData da = read_checkpoint(a), db = read_checkpoint(b);
    ASSERT_EQ(da.params.size(), db.params.size());
    for (size_t i = 0; i < da.params.size(); ++i)
      EXPECT_EQ(da.params[i].second.to_float_vector(), db.params[i].second.to_float_vector());
  }
}

TEST(ShardedCheckpoint, CorruptNewestCheckpointIsSkipped) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  TrainResult straight = run_training(small_run(dir, "straight"));
  TrainConfig c = small_run(dir, "run");
  c.schedule.max_iters = 8;
  c.checkpoint.interval = 4;
  run_training(c);
  testing::flip_a_checkpoint_byte(checkpoint_path(dir / "run", 8));

  std::string path;
  std::vector<std::string> skipped;
  read_newest_checkpoint(dir / "run", path, skipped);
  EXPECT_EQ(path, checkpoint_path(dir / "run", 4));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("checksum mismatch"), std::string::npos) << skipped[0];

  c.schedule.max_iters = 12;
  c.checkpoint.resume = true;
  std::ostringstream log;
  RunContext ctx;
  ctx.log = &log;
  TrainResult resumed = run_training(c, ctx);
  EXPECT_NE(log.str().find("skipping checkpoint " + checkpoint_path(dir / "run", 8) + ": checksum mismatch"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(resumed.first_step, 4);
  ASSERT_EQ(resumed.step_losses.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(resumed.step_losses[i], straight.step_losses[4 + i]) << "step " << 5 + i;

  // The resumed run wrote step 8 again. A missing part is skipped as a corrupt one is.
  std::filesystem::remove(parts_directory(checkpoint_path(dir / "run", 12)) + "/rank_00000.h5");
  skipped.clear();
  read_newest_checkpoint(dir / "run", path, skipped);
  EXPECT_EQ(path, checkpoint_path(dir / "run", 8));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("is missing"), std::string::npos) << skipped[0];
}

}  // namespace
}  // namespace nd::train
