// The FP8 delayed-scaling state through a checkpoint (train/ckpt/fp8_checkpoint.h), written and read the
// way a run's save and resume do (a part, the index, the reader): rings, positions and scales come
// back identical and go on as an uninterrupted copy's; a checkpoint without the state, a run
// without FP8, a history of another length, tensors the checkpoint lacks, a malformed record, a bad
// --fp8-amax-history.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "nn/fp8_scaling.h"
#include "tensor/error.h"
#include "train/ckpt/checkpoint_index.h"
#include "train/ckpt/fp8_checkpoint.h"
#include "train/ckpt/hdf5_file.h"
#include "train/train_fixture.h"

namespace nd::train {
namespace {

using testing::TempDir;

// A linear's three quantised tensors, as Fp8LinearScaling registers them.
nn::DelayedScaling linear_scaling(int history_length, const std::string& layer = "h.0.c_fc") {
  nn::DelayedScalingOptions options;
  options.history_length = history_length;
  nn::DelayedScaling s(options);
  s.add(layer + ".x", Fp8Format::E4M3, false);
  s.add(layer + ".w", Fp8Format::E4M3, false);
  s.add(layer + ".dout", Fp8Format::E5M2, false);
  return s;
}

// `steps` steps of amaxes drawn from `rng` (log-uniform over a few decades, an occasional inf that
// the history leaves out), the same draws for every DelayedScaling given the same rng state.
void run_steps(nn::DelayedScaling& s, int steps, std::mt19937& rng) {
  std::uniform_real_distribution<float> decades(-3.0f, 2.0f);
  for (int k = 0; k < steps; ++k) {
    for (int t = 0; t < s.size(); ++t) s.record_amax(t, rng() % 17 == 0 ? INFINITY : std::pow(10.0f, decades(rng)));
    s.update(nullptr);
  }
}

// Writes a checkpoint of one part holding a parameter and `scaling`'s state (none when null);
// returns its index path.
std::string write_with_fp8(const TempDir& dir, const nn::DelayedScaling* scaling) {
  const std::string index = dir / "ckpt_000007.h5";
  std::vector<float> bias{1.0f, 2.0f, 3.0f};
  std::vector<OwnedSlice> slices{OwnedSlice{kCheckpointGroups[0], "bias", {3}, whole({3}), bias.data()}};
  Fp8StateSnapshot fp8;
  if (scaling != nullptr) fp8.take(*scaling);
  slices.insert(slices.end(), fp8.slices().begin(), fp8.slices().end());
  write_checkpoint_part(index, 0, slices);
  CheckpointData meta;
  meta.state.step = 7;
  meta.tokenizer_text = "chars";
  write_checkpoint_index(index, 1, meta);
  return index;
}

void expect_same_state(const nn::DelayedScaling& a, const nn::DelayedScaling& b) {
  ASSERT_EQ(a.size(), b.size());
  for (int t = 0; t < a.size(); ++t) {
    SCOPED_TRACE(a.tensor(t).name);
    EXPECT_EQ(a.tensor(t).scale, b.tensor(t).scale);
    EXPECT_EQ(a.tensor(t).history.oldest_first(), b.tensor(t).history.oldest_first());
    EXPECT_EQ(a.tensor(t).history.position(), b.tensor(t).history.position());
    EXPECT_EQ(a.tensor(t).history.count(), b.tensor(t).history.count());
    EXPECT_EQ(a.tensor(t).history.length(), b.tensor(t).history.length());
  }
}

TEST(Fp8Checkpoint, RoundTripContinuesAsTheUninterruptedScaling) {
  // A ring that wrapped (13 steps into 8 slots) and one still filling (5 into 16).
  for (const auto& [length, steps] : {std::pair<int, int>{8, 13}, {16, 5}}) {
    SCOPED_TRACE("length " + std::to_string(length) + ", " + std::to_string(steps) + " steps");
    TempDir dir;
    std::mt19937 rng(length);
    nn::DelayedScaling uninterrupted = linear_scaling(length);
    run_steps(uninterrupted, steps, rng);
    const std::string index = write_with_fp8(dir, &uninterrupted);

    nn::DelayedScaling resumed = linear_scaling(length);
    CheckpointReader reader(index);
    const std::vector<std::string> lines = load_fp8_state(reader, &resumed);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("restored the amax histories and scales of 3 quantised tensors"), std::string::npos)
        << lines[0];
    expect_same_state(resumed, uninterrupted);
    EXPECT_NE(resumed.tensor(0).scale, 1.0f);  // a fresh scaling would quantise at 1

    // The checkpoint as h5py sees it: the ring oldest first then zeros, and scale, count, next slot.
    Hdf5File file = Hdf5File::open_read(index);
    std::vector<float> ring = file.read_tensor("/state/fp8/amax_history/h.0.c_fc.x").to_float_vector();
    std::vector<float> want = uninterrupted.tensor(0).history.oldest_first();
    want.resize(static_cast<size_t>(length), 0.0f);
    EXPECT_EQ(ring, want);
    const nn::AmaxHistory& h = uninterrupted.tensor(0).history;
    EXPECT_EQ(file.read_tensor("/state/fp8/scaling/h.0.c_fc.x").to_float_vector(),
              (std::vector<float>{uninterrupted.tensor(0).scale, static_cast<float>(h.count()),
                                  static_cast<float>(h.position())}));

    // Both go on with the same amaxes: every step's scales agree bit for bit.
    std::mt19937 rng_a(99), rng_b(99);
    for (int k = 0; k < 20; ++k) {
      run_steps(uninterrupted, 1, rng_a);
      run_steps(resumed, 1, rng_b);
      for (int t = 0; t < 3; ++t) ASSERT_EQ(resumed.tensor(t).scale, uninterrupted.tensor(t).scale) << "step " << k;
    }
    expect_same_state(resumed, uninterrupted);
  }
}

TEST(Fp8Checkpoint, ACheckpointWithoutFp8StateLeavesTheScalingFresh) {
  TempDir dir;
  const std::string index = write_with_fp8(dir, nullptr);
  nn::DelayedScaling resumed = linear_scaling(8);
  CheckpointReader reader(index);
  const std::vector<std::string> lines = load_fp8_state(reader, &resumed);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("holds no FP8 scaling state"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("start afresh"), std::string::npos) << lines[0];
  expect_same_state(resumed, linear_scaling(8));
  EXPECT_EQ(resumed.tensor(0).scale, 1.0f);
}

TEST(Fp8Checkpoint, ARunWithoutFp8IgnoresTheStateWithOneLine) {
  TempDir dir;
  std::mt19937 rng(3);
  nn::DelayedScaling saved = linear_scaling(8);
  run_steps(saved, 4, rng);
  CheckpointReader reader(write_with_fp8(dir, &saved));
  const std::vector<std::string> lines = load_fp8_state(reader, nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("FP8 scaling state of 3 tensors"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("no --fp8"), std::string::npos) << lines[0];
  // Nor does a run without FP8 hear anything of a checkpoint without it.
  TempDir plain;
  CheckpointReader plain_reader(write_with_fp8(plain, nullptr));
  EXPECT_TRUE(load_fp8_state(plain_reader, nullptr).empty());
}

TEST(Fp8Checkpoint, AnotherHistoryLengthKeepsTheNewestAmaxesThatFit) {
  TempDir dir;
  std::mt19937 rng(5);
  nn::DelayedScaling saved = linear_scaling(8);
  run_steps(saved, 13, rng);
  const std::string index = write_with_fp8(dir, &saved);
  for (int length : {4, 16}) {
    SCOPED_TRACE("length " + std::to_string(length));
    nn::DelayedScaling resumed = linear_scaling(length);
    CheckpointReader reader(index);
    const std::vector<std::string> lines = load_fp8_state(reader, &resumed);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[1].find("amax histories of 8 steps, this run keeps " + std::to_string(length)), std::string::npos)
        << lines[1];
    for (int t = 0; t < 3; ++t) {
      const std::vector<float> all = saved.tensor(t).history.oldest_first();
      const size_t keep = std::min(all.size(), static_cast<size_t>(length));
      EXPECT_EQ(resumed.tensor(t).history.oldest_first(), std::vector<float>(all.end() - keep, all.end()));
      EXPECT_EQ(resumed.tensor(t).scale, saved.tensor(t).scale);  // the next step quantises as it would have
    }
    // The step after: the scale from the kept window and the new amax, in closed form.
    const std::vector<float> kept = resumed.tensor(0).history.oldest_first();
    const float amax = 0.0625f;
    resumed.record_amax(0, amax);
    resumed.update(nullptr);
    std::vector<float> window(kept.begin() + (static_cast<int>(kept.size()) == length ? 1 : 0), kept.end());
    window.push_back(amax);
    EXPECT_EQ(resumed.tensor(0).scale,
              static_cast<float>(448.0 / static_cast<double>(*std::max_element(window.begin(), window.end()))));
  }
}

TEST(Fp8Checkpoint, TensorsTheCheckpointLacksStartFresh) {
  TempDir dir;
  std::mt19937 rng(11);
  nn::DelayedScaling saved = linear_scaling(8);
  run_steps(saved, 6, rng);
  const std::string index = write_with_fp8(dir, &saved);
  nn::DelayedScaling resumed = linear_scaling(8);
  resumed.add("lm_head.x", Fp8Format::E4M3, false);  // e.g. --fp8-layers now takes the head too
  CheckpointReader reader(index);
  const std::vector<std::string> lines = load_fp8_state(reader, &resumed);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("no FP8 scaling state for 1 of the 4 quantised tensors here (lm_head.x)"), std::string::npos)
      << lines[1];
  EXPECT_EQ(resumed.tensor(3).scale, 1.0f);
  EXPECT_EQ(resumed.tensor(3).history.count(), 0);
  EXPECT_EQ(resumed.tensor(0).history.oldest_first(), saved.tensor(0).history.oldest_first());
}

TEST(Fp8Checkpoint, AMalformedRecordIsAnInputError) {
  TempDir dir;
  const std::string index = dir / "ckpt_000001.h5";
  std::vector<float> ring(4, 1.0f), bad{2.0f, 5.0f, 0.0f};  // 5 amaxes in a ring of 4
  write_checkpoint_part(index, 0,
                        {OwnedSlice{kFp8HistoryGroup, "a.x", {4}, whole({4}), ring.data()},
                         OwnedSlice{kFp8ScalingGroup, "a.x", {3}, whole({3}), bad.data()}});
  CheckpointData meta;
  meta.tokenizer_text = "chars";
  write_checkpoint_index(index, 1, meta);
  nn::DelayedScaling s;
  s.add("a.x", Fp8Format::E4M3, false);
  CheckpointReader reader(index);
  try {
    load_fp8_state(reader, &s);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(e.is_input());
    EXPECT_NE(e.message().find("a.x is malformed"), std::string::npos) << e.message();
  }
}

TEST(Fp8Checkpoint, RestoreKeepsTheRingsSlots) {
  nn::AmaxHistory h(4);
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}) h.push(v);  // slots {5, 6, 3, 4}, next slot 2
  nn::AmaxHistory r(4);
  r.restore(h.oldest_first(), h.position());
  EXPECT_EQ(r.position(), 2);
  EXPECT_EQ(r.oldest_first(), (std::vector<float>{3.0f, 4.0f, 5.0f, 6.0f}));
  h.push(7.0f);
  r.push(7.0f);
  EXPECT_EQ(r.oldest_first(), h.oldest_first());
  EXPECT_EQ(r.max(), h.max());
  EXPECT_THROW(r.restore({1.0f}, 4), Error);
  EXPECT_THROW(r.restore({1, 2, 3, 4, 5}, 0), Error);
}

TEST(Fp8Checkpoint, ABadHistoryLengthIsAOneLineError) {
  TempDir dir;
  testing::write_tiny_data(dir / "data");
  const std::string base = "train --data " + dir / "data" + " --out " + dir / "out" + " --max-iters 1 ";
  testing::expect_cli_error(testing::run_nanodist(base + "--fp8-amax-history 0", dir.path()),
                            "--fp8-amax-history must be >= 1, got 0");
}

}  // namespace
}  // namespace nd::train
