// Asynchronous saves on the CPU read the live buffers (copy_on_write.h): a chunk updated before the
// writer takes it is copied first, an update of the chunk being written waits for it, and a part
// written while its memory keeps changing holds the bytes of the moment of the save, byte for byte
// the part a synchronous write of a frozen copy makes. Also: the checksum in pieces is the
// checksum of the whole, and a training run whose writer is slower than its steps (the optimizer
// copying chunks) writes the files a synchronous run writes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tensor/random.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_part.h"
#include "train/ckpt/checksum.h"
#include "train/ckpt/copy_on_write.h"
#include "train/trainer.h"
#include "train/train_fixture.h"
#include "process_helpers.h"
#include "checkpoint_test_util.h"

namespace nd::train {
namespace {

using testing::random_floats;
using testing::TempDir;
constexpr int64_t kChunk = CopyOnWrite::kChunkFloats;

TEST(Checksum64, PiecesGiveTheChecksumOfTheWhole) {
  std::vector<float> data = random_floats(10007, 3);
  const size_t bytes = data.size() * sizeof(float);
  for (size_t piece : {32u, 4096u, 32u * 77u}) {
    Checksum64 sum;
    for (size_t at = 0; at < bytes; at += piece) sum.add(reinterpret_cast<const char*>(data.data()) + at, std::min(piece, bytes - at));
    EXPECT_EQ(sum.value(), checksum64(data.data(), bytes)) << "pieces of " << piece;
  }
  Checksum64 ragged;
  ragged.add(data.data(), 30);
  EXPECT_THROW(ragged.add(data.data(), 32), Error) << "a piece after one that is not a multiple of 32";
}

TEST(CopyOnWrite, UpdatedChunksAreCopiedFirstAndTheWriterSeesTheOldBytes) {
  const int64_t n = 3 * kChunk + 1000;  // 4 chunks, the last short
  std::vector<float> live = random_floats(n, 1), side(static_cast<size_t>(n)), other = random_floats(10, 2);
  std::vector<float> side_other(10);
  const std::vector<float> before = live, before_other = other;
  CopyOnWrite cow;
  cow.arm({{live.data(), side.data(), n}, {other.data(), side_other.data(), 10}});
  ASSERT_EQ(cow.chunks(0), 4);
  ASSERT_EQ(cow.chunks(1), 1);
  // The writer takes chunk 1 and finishes it; an update across chunks 1..2 then copies chunk 2 only.
  EXPECT_EQ(cow.acquire(0, 1), live.data() + kChunk);
  cow.release(0, 1);
  cow.before_update(live.data() + kChunk + 5, kChunk);
  for (int64_t i = kChunk + 5; i < 2 * kChunk + 5; ++i) live[static_cast<size_t>(i)] = -1.0f;
  EXPECT_EQ(cow.copied_chunks(), 1);
  cow.before_update(live.data() + n - 1, 1);  // the short last chunk
  live.back() = -2.0f;
  cow.before_update(other.data() + 3, 2);
  other[3] = other[4] = -3.0f;
  EXPECT_EQ(cow.copied_chunks(), 3);
  // What the writer reads of chunks 0, 2, 3 and of the other region: the bytes at arm().
  for (int64_t c : {0, 2, 3}) {
    const float* got = cow.acquire(0, c);
    const int64_t count = std::min(kChunk, n - c * kChunk);
    EXPECT_TRUE(std::equal(got, got + count, before.begin() + c * kChunk)) << "chunk " << c;
    cow.release(0, c);
  }
  const float* got = cow.acquire(1, 0);
  EXPECT_TRUE(std::equal(got, got + 10, before_other.begin()));
  cow.release(1, 0);
  cow.disarm();
  cow.before_update(live.data(), n);  // disarmed: nothing more is copied
  EXPECT_EQ(cow.copied_chunks(), 3);
}

TEST(CopyOnWrite, AnUpdateOfTheChunkBeingWrittenWaitsForIt) {
  std::vector<float> live = random_floats(2 * kChunk, 4), side(live.size());
  CopyOnWrite cow;
  cow.arm({{live.data(), side.data(), static_cast<int64_t>(live.size())}});
  cow.acquire(0, 0);
  std::atomic<bool> updated{false};
  std::thread updater([&] {
    cow.before_update(live.data() + 10, 20);
    updated = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(updated.load()) << "the update went ahead while its chunk was being written";
  cow.release(0, 0);
  updater.join();
  EXPECT_TRUE(updated.load());
  EXPECT_EQ(cow.copied_chunks(), 0) << "a written chunk needs no copy";
}

// The update's order while a save is in flight (optimizer_dispatch.cpp) rests on this: ranges
// the writer is done with answer -1, the others the writer's place of their first chunk waiting.
TEST(CopyOnWrite, WriterPositionSaysWhatTheWriterHasNotTakenYet) {
  std::vector<float> a(3 * kChunk), a_side(a.size()), b(2 * kChunk), b_side(b.size()), outside(10);
  CopyOnWrite cow;
  EXPECT_EQ(cow.writer_position(a.data(), 10), -1) << "not armed";
  cow.arm({{a.data(), a_side.data(), 3 * kChunk}, {b.data(), b_side.data(), 2 * kChunk}});
  EXPECT_EQ(cow.writer_position(a.data(), 3 * kChunk), 0);
  EXPECT_EQ(cow.writer_position(b.data() + kChunk, 5), 4) << "region 1 follows region 0's 3 chunks";
  cow.acquire(0, 0);
  EXPECT_EQ(cow.writer_position(a.data(), 1), 0) << "being written: not done yet";
  cow.release(0, 0);
  EXPECT_EQ(cow.writer_position(a.data(), kChunk), -1) << "written";
  EXPECT_EQ(cow.writer_position(a.data(), kChunk + 1), 1);
  cow.before_update(a.data() + kChunk, kChunk);  // copied to the side
  EXPECT_EQ(cow.writer_position(a.data(), 2 * kChunk), -1);
  EXPECT_EQ(cow.writer_position(outside.data(), 10), -1) << "not in the snapshot";
  cow.disarm();
}

// A part written while another thread keeps updating its memory (before_update, then new values,
// over and over) equals the part written synchronously from a copy taken at the save.
TEST(CopyOnWrite, PartWrittenWhileTheMemoryChangesHoldsTheBytesOfTheSave) {
  TempDir dir;
  const std::vector<int64_t> sizes = {5 * kChunk + 77, 3, kChunk, 2 * kChunk - 1};
  std::vector<std::vector<float>> live, side, frozen;
  std::vector<OwnedSlice> live_slices, frozen_slices;
  for (size_t k = 0; k < sizes.size(); ++k) {
    live.push_back(random_floats(sizes[k], 10 + k));
    side.emplace_back(live.back().size());
  }
  frozen = live;
  std::vector<CopyOnWrite::Region> regions;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const std::string name = "w" + std::to_string(k);
    live_slices.push_back(OwnedSlice{"params", name, {sizes[k]}, Hyperslab{{0}, {sizes[k]}}, live[k].data()});
    frozen_slices.push_back(OwnedSlice{"params", name, {sizes[k]}, Hyperslab{{0}, {sizes[k]}}, frozen[k].data()});
    regions.push_back(CopyOnWrite::Region{live[k].data(), side[k].data(), sizes[k]});
  }
  std::filesystem::create_directories(dir / "sync");
  std::filesystem::create_directories(dir / "async");
  const std::string sync_index = dir / "sync/ckpt_000004.h5", async_index = dir / "async/ckpt_000004.h5";
  write_checkpoint_part(sync_index, 0, frozen_slices);

  set_write_delay_for_testing(2000);  // 2 ms a chunk: the updates overtake the writer
  CopyOnWrite cow;
  cow.arm(regions);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    write_checkpoint_part(async_index, 0, live_slices, &cow);
    done = true;
  });
  int rounds = 0;
  for (; !done.load(); ++rounds)
    for (size_t k = sizes.size(); k-- > 0;)  // the other way round from the writer
      for (int64_t at = 0; at < sizes[k]; at += kChunk / 2) {
        const int64_t n = std::min(kChunk / 2, sizes[k] - at);
        cow.before_update(live[k].data() + at, n);
        for (int64_t i = at; i < at + n; ++i) live[k][static_cast<size_t>(i)] += 1.0f;
      }
  writer.join();
  set_write_delay_for_testing(0);
  EXPECT_GT(rounds, 0);
  EXPECT_GT(cow.copied_chunks(), 0) << "no update overtook the writer: the test proved nothing";
  EXPECT_FALSE(cow.armed()) << "the writer disarms once every byte is written";
  const std::string expected = testing::rank0_part_bytes(sync_index);
  EXPECT_GT(expected.size(), static_cast<size_t>(8 * kChunk * 4));
  EXPECT_EQ(testing::rank0_part_bytes(async_index), expected);
}

TrainConfig run_config(const TempDir& dir, const std::string& out, const std::string& async) {
  TrainConfig c = testing::tiny_config(dir / "data", dir / out);
  c.schedule.max_iters = 10;
  c.schedule.lr_decay_iters = 10;
  c.observe.log_interval = 1;
  c.checkpoint.keep = 0;
  c.checkpoint.interval = 5;
  c.checkpoint.async_save = parse_async_save(async);
  return c;
}

// With a writer slower than the steps, the optimizer of the steps after a save copies the
// chunks the writer has not reached: the checkpoint must still be the state of its step.
TEST(CopyOnWrite, SlowAsyncSavesWhileTrainingGoesOnEqualSynchronousOnes) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  run_training(run_config(dir, "sync", "false"));
  const int64_t copied_before = chunks_copied_for_testing();
  set_write_delay_for_testing(10000);  // 10 ms a chunk
  TrainResult r = run_training(run_config(dir, "async", "true"));
  set_write_delay_for_testing(0);
  EXPECT_GT(chunks_copied_for_testing(), copied_before) << "training never overtook the writer";
  EXPECT_EQ(r.last_checkpoint, checkpoint_path(dir / "async", 10));
  for (int step : {5, 10}) {
    const std::string a = checkpoint_path(dir / "async", step), b = checkpoint_path(dir / "sync", step);
    const std::string bytes = testing::rank0_part_bytes(a);
    EXPECT_GT(bytes.size(), 1000u);
    EXPECT_EQ(bytes, testing::rank0_part_bytes(b)) << "step " << step;
  }
}

}  // namespace
}  // namespace nd::train
