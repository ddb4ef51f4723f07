// Slice checksums per 1 MiB chunk (issue 24): the chunked checksum is checksum64 of the chunks'
// checksum64 values, it catches one flipped word anywhere; checkpoints written the old way
// (checksum64 of the bytes, no attribute) still load and still catch a flipped byte; and an
// asynchronous writer whose update never comes completes once told to (no hang), writing the
// bytes and checksums of a synchronous write.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tensor/random.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/checkpoint_part.h"
#include "train/ckpt/checksum.h"
#include "train/ckpt/copy_on_write.h"
#include "train/ckpt/hdf5_file.h"
#include "train/trainer.h"
#include "train/train_fixture.h"
#include "process_helpers.h"
#include "checkpoint_test_util.h"

namespace nd::train {
namespace {

using testing::random_floats;
using testing::TempDir;
constexpr int64_t kChunk = CopyOnWrite::kChunkFloats;

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

// No update comes after the save (the run ends, or the update is dropped): the writer waits for
// the checksums, then, told that none will come, takes them itself. Same bytes as a synchronous write.
TEST(ChunkedChecksum, AWriterWhoseUpdateNeverComesCompletesWhenTold) {
  TempDir dir;
  const std::vector<int64_t> sizes = {3 * kChunk + 5, 7};
  std::vector<std::vector<float>> live, side;
  std::vector<OwnedSlice> slices;
  std::vector<CopyOnWrite::Region> regions;
  for (size_t k = 0; k < sizes.size(); ++k) {
    live.push_back(random_floats(sizes[k], 20 + k));
    side.emplace_back(live.back().size());
    const std::string name = "w" + std::to_string(k);
    slices.push_back(OwnedSlice{"params", name, {sizes[k]}, Hyperslab{{0}, {sizes[k]}}, live[k].data()});
    // The second region has no side buffer (nobody updates it): the writer hashes it.
    regions.push_back(CopyOnWrite::Region{live[k].data(), k == 0 ? side[k].data() : nullptr, sizes[k]});
  }
  std::filesystem::create_directories(dir / "sync");
  std::filesystem::create_directories(dir / "async");
  const std::string sync_index = dir / "sync/ckpt_000004.h5", async_index = dir / "async/ckpt_000004.h5";
  const std::vector<SliceRecord> expected = write_checkpoint_part(sync_index, 0, slices);
  CopyOnWrite cow;
  cow.arm(regions);
  std::atomic<bool> done{false};
  std::vector<SliceRecord> written;
  std::thread writer([&] {
    written = write_checkpoint_part(async_index, 0, slices, &cow);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(done.load()) << "the manifest came before the update's checksums";
  EXPECT_TRUE(cow.armed());
  cow.finish_checksums();
  writer.join();
  EXPECT_FALSE(cow.armed());
  ASSERT_EQ(written.size(), expected.size());
  for (size_t k = 0; k < written.size(); ++k) EXPECT_EQ(written[k].checksum, expected[k].checksum) << k;
  EXPECT_EQ(testing::rank0_part_bytes(async_index), testing::rank0_part_bytes(sync_index));
}

// The update takes the checksums: chunks it finds written are hashed before they change, the
// others copied and hashed; the writer then completes without being told.
TEST(ChunkedChecksum, TheUpdateAfterTheSaveTakesTheChecksums) {
  TempDir dir;
  const int64_t n = 6 * kChunk + 99;
  std::vector<float> live = random_floats(n, 30), frozen = live, side(static_cast<size_t>(n));
  std::filesystem::create_directories(dir / "sync");
  std::filesystem::create_directories(dir / "async");
  const std::string sync_index = dir / "sync/ckpt_000004.h5", async_index = dir / "async/ckpt_000004.h5";
  const std::vector<SliceRecord> expected =
      write_checkpoint_part(sync_index, 0, {OwnedSlice{"params", "w", {n}, Hyperslab{{0}, {n}}, frozen.data()}});
  CopyOnWrite cow;
  cow.arm({{live.data(), side.data(), n}});
  set_write_delay_for_testing(20000);  // 20 ms a chunk: the update meets the writer mid-way
  std::vector<SliceRecord> written;
  std::thread writer([&] {
    written = write_checkpoint_part(async_index, 0, {OwnedSlice{"params", "w", {n}, Hyperslab{{0}, {n}}, live.data()}}, &cow);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int64_t c = 6; c >= 0; --c) {  // one update of everything, from the writer's far end as the optimizer's
    const int64_t at = c * kChunk, count = std::min(kChunk, n - at);
    cow.before_update(live.data() + at, count);
    for (int64_t i = at; i < at + count; ++i) live[static_cast<size_t>(i)] *= 0.5f;
  }
  writer.join();  // no finish_checksums: the update was enough
  set_write_delay_for_testing(0);
  EXPECT_GT(cow.copied_chunks(), 0) << "the writer had taken every chunk: the test proved less";
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0].checksum, expected[0].checksum);
  EXPECT_EQ(testing::rank0_part_bytes(async_index), testing::rank0_part_bytes(sync_index));
}

}  // namespace
}  // namespace nd::train
