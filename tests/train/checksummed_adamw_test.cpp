// The CPU update that takes an asynchronous save's checksums on its own pass (issue 24): it gives
// the bits of cpu::adamw_update and checksum64 of the old bytes; and a save whose chunks the
// update hashes that way (the writer done first) writes the part of a synchronous write.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>
#include <vector>

#include "kernels/cpu/adamw.h"
#include "tensor/random.h"
#include "train/ckpt/checkpoint_part.h"
#include "train/ckpt/checksum.h"
#include "train/ckpt/checksummed_adamw.h"
#include "train/ckpt/copy_on_write.h"
#include "train/train_fixture.h"
#include "process_helpers.h"
#include "checkpoint_test_util.h"

namespace nd::train {
namespace {

using testing::random_floats;
using testing::TempDir;
constexpr int64_t kChunk = CopyOnWrite::kChunkFloats;

TEST(ChecksummedAdamW, GivesTheBitsOfAdamWAndTheChecksumsOfTheOldBytes) {
  for (int64_t n : {int64_t{8}, int64_t{8 * 1000}, kChunk})
    for (float weight_decay : {0.0f, 0.1f}) {
      std::vector<float> p = random_floats(n, 1, 1.0f), g = random_floats(n, 2, 0.01f), m = random_floats(n, 3, 0.001f),
                         v = random_floats(n, 4, 1e-5f);
      for (float& x : v) x = std::fabs(x);
      std::vector<float> p2 = p, m2 = m, v2 = v;
      const uint64_t expected[3] = {checksum64(p.data(), n * 4), checksum64(m.data(), n * 4), checksum64(v.data(), n * 4)};
      const float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, scale = 0.7f;
      const int64_t step = 3;
      cpu::adamw_update(p.data(), g.data(), m.data(), v.data(), n, lr, beta1, beta2, eps, weight_decay, step, scale);
      uint64_t sums[3];
      adamw_update_checksummed(p2.data(), g.data(), m2.data(), v2.data(), n,
                               cpu::adamw_scalars<float>(lr, beta1, beta2, eps, weight_decay, step, scale), sums);
      EXPECT_EQ(p, p2) << n;
      EXPECT_EQ(m, m2) << n;
      EXPECT_EQ(v, v2) << n;
      for (int a = 0; a < 3; ++a) EXPECT_EQ(sums[a], expected[a]) << "array " << a << ", n " << n;
    }
}

// The writer writes every chunk first (the common case on a quiet disk), then waits for the
// checksums; the update hands over those of whole chunks it takes on its pass, and a range that is
// not one whole chunk is hashed by before_update's way. The part equals a synchronous write's.
TEST(ChecksummedAdamW, ChecksumsTakenByTheUpdatesPassCompleteTheSave) {
  TempDir dir;
  const int64_t n = 3 * kChunk + 16;
  std::vector<float> live = random_floats(n, 7, 1.0f), frozen = live, side(static_cast<size_t>(n));
  std::vector<float> grad = random_floats(n, 8, 0.01f), m(static_cast<size_t>(n), 0.0f), v(static_cast<size_t>(n), 0.0f);
  std::filesystem::create_directories(dir / "sync");
  std::filesystem::create_directories(dir / "async");
  const std::string sync_index = dir / "sync/ckpt_000002.h5", async_index = dir / "async/ckpt_000002.h5";
  const std::vector<SliceRecord> expected =
      write_checkpoint_part(sync_index, 0, {OwnedSlice{"params", "w", {n}, Hyperslab{{0}, {n}}, frozen.data()}});
  CopyOnWrite cow;
  cow.arm({{live.data(), side.data(), n}});
  std::vector<SliceRecord> written;
  std::thread writer([&] {
    written = write_checkpoint_part(async_index, 0, {OwnedSlice{"params", "w", {n}, Hyperslab{{0}, {n}}, live.data()}}, &cow);
  });
  for (int tries = 0; cow.writer_position(live.data(), n) >= 0 && tries < 20000; ++tries)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_LT(cow.writer_position(live.data(), n), 0) << "the writer did not write the chunks within 20 s";
  // A range inside chunk 1, not the whole chunk: hashed apart; the chunk's later update takes nothing.
  EXPECT_EQ(cow.before_update_hashed_by_caller(live.data() + kChunk + 8, 8), -1);
  const auto scalars = cpu::adamw_scalars<float>(1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, 1.0f);
  int64_t handed = 0;
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t count = std::min(kChunk, n - at);
    const int64_t token = cow.before_update_hashed_by_caller(live.data() + at, count);
    EXPECT_EQ(token >= 0, at != kChunk) << "chunk at " << at;
    uint64_t sums[3];
    adamw_update_checksummed(live.data() + at, grad.data() + at, m.data() + at, v.data() + at, count, scalars, sums);
    if (token >= 0) {
      cow.hashed_by_update(token, sums[0]);
      ++handed;
    }
  }
  writer.join();  // no finish_checksums: the update was enough
  EXPECT_EQ(handed, 3);
  EXPECT_EQ(cow.copied_chunks(), 0);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0].checksum, expected[0].checksum);
  EXPECT_EQ(testing::rank0_part_bytes(async_index), testing::rank0_part_bytes(sync_index));
}

}  // namespace
}  // namespace nd::train
