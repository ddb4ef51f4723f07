// Slice checksums per 1 MiB chunk: the chunked checksum is checksum64 of the chunks' checksum64
// values, it catches one flipped word anywhere; checkpoints written the old way (checksum64 of the
// bytes, no attribute) still load and still catch a flipped byte.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tensor/random.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/checkpoint_part.h"
#include "train/ckpt/checksum.h"
#include "train/ckpt/hdf5_file.h"
#include "train/trainer.h"
#include "train/train_fixture.h"
#include "process_helpers.h"
#include "checkpoint_test_util.h"

namespace nd::train {
namespace {

using testing::random_floats;
using testing::TempDir;
constexpr int64_t kChunk = kChecksumChunkBytes / sizeof(float);

TEST(ChunkedChecksum, IsTheChecksumOfTheChunksChecksumsAndCatchesAFlippedWord) {
  std::vector<float> data = random_floats(2 * kChunk + 1234, 5);
  const size_t bytes = data.size() * sizeof(float);
  const char* p = reinterpret_cast<const char*>(data.data());
  // Independently: three chunks, the last short, each hashed whole; then their values.
  uint64_t sums[3] = {checksum64(p, kChecksumChunkBytes), checksum64(p + kChecksumChunkBytes, kChecksumChunkBytes),
                      checksum64(p + 2 * kChecksumChunkBytes, bytes - 2 * kChecksumChunkBytes)};
  const uint64_t whole = chunked_checksum64(data.data(), bytes);
  EXPECT_EQ(whole, checksum64(sums, sizeof(sums)));
  EXPECT_NE(whole, checksum64(data.data(), bytes)) << "a different algorithm from the old one";
  for (size_t word : {size_t{0}, size_t{kChunk} - 1, size_t{kChunk}, data.size() - 1}) {
    std::vector<float> flipped = data;
    uint32_t bits;
    std::memcpy(&bits, &flipped[word], 4);
    bits ^= 1u << 7;
    std::memcpy(&flipped[word], &bits, 4);
    EXPECT_NE(chunked_checksum64(flipped.data(), bytes), whole) << "word " << word;
  }
  EXPECT_EQ(chunked_checksum64(nullptr, 0), combine_chunk_checksums(nullptr, 0));
}

TrainConfig tiny_run(const TempDir& dir, const std::string& out) {
  TrainConfig c = testing::tiny_config(dir / "data", dir / out);
  c.schedule.max_iters = 4;
  c.schedule.lr_decay_iters = 4;
  c.checkpoint.interval = 4;
  c.checkpoint.keep = 0;
  c.checkpoint.async_save = AsyncSave::Off;
  return c;
}

TEST(ChunkedChecksum, CheckpointsWrittenTheOldWayStillLoadAndVerify) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  set_legacy_checksums_for_testing(true);
  run_training(tiny_run(dir, "old"));
  set_legacy_checksums_for_testing(false);
  run_training(tiny_run(dir, "new"));
  const std::string old_index = checkpoint_path(dir / "old", 4), new_index = checkpoint_path(dir / "new", 4);
  EXPECT_FALSE(Hdf5File::open_read(old_index).has_attr("/checkpoint", kChecksumAttribute));
  EXPECT_EQ(Hdf5File::open_read(new_index).attr_string("/checkpoint", kChecksumAttribute), kChunkedChecksum);
  for (const SliceRecord& r : read_part_manifest(old_index, 0)) EXPECT_FALSE(r.chunked_checksum);
  for (const SliceRecord& r : read_part_manifest(new_index, 0)) EXPECT_TRUE(r.chunked_checksum);
  CheckpointData old_data = read_checkpoint(old_index), new_data = read_checkpoint(new_index);
  ASSERT_EQ(old_data.params.size(), new_data.params.size());
  for (size_t i = 0; i < old_data.params.size(); ++i)
    EXPECT_EQ(old_data.params[i].second.to_float_vector(), new_data.params[i].second.to_float_vector());
  for (const std::string& index : {old_index, new_index}) {
    testing::flip_a_checkpoint_byte(index);
    try {
      read_checkpoint(index);
      ADD_FAILURE() << index << ": a flipped byte was not caught";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.message()).find("checksum mismatch"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace nd::train
