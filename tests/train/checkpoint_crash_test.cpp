// Checkpoints under crashes, with the nanodist binary: SIGKILL at many random moments of a run
// that checkpoints every step (so many kills land inside a write) never leaves a partial file
// under a checkpoint's real name, and each --resume continues with exactly the losses of an
// uninterrupted run; a write that fails for want of space (RLIMIT_FSIZE) is one error line and
// the previous checkpoint stays.
#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <random>

#include "process_helpers.h"
#include "resumed_run.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_part.h"
#include "train_fixture.h"

namespace nd::train::testing {
namespace {

// `nanodist train` flags of a tiny run into DIR/<out> that checkpoints every step.
std::string train_args(const TempDir& dir, const std::string& out, int steps, const std::string& extra = "") {
  return "train --data " + (dir / "data") + " --out " + (dir / out) +
         " --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-interval 0 --eval-iters 1"
         " --warmup-iters 2 --lr-decay-iters " + std::to_string(steps) + " --max-iters " + std::to_string(steps) +
         " --log-interval 1 --ckpt-interval 1 --keep 2 " + extra;
}

std::string train_command(const TempDir& dir, const std::string& out, int steps, const std::string& extra = "") {
  return std::string(ND_NANODIST_BIN) + " " + train_args(dir, out, steps, extra);
}

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

TEST(CheckpointCrash, KillNineAtRandomMomentsThenResume) {
  TempDir dir;
  write_tiny_data(dir / "data", 4000);
  const int steps = 100;
  auto started = Clock::now();
  auto reference = run_nanodist(train_args(dir, "ref", steps), dir.path());
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const double step_ms = 1000.0 * seconds_since(started) / steps;  // a step and its checkpoint, roughly
  auto expected = logged_losses(dir / "ref/metrics.jsonl");
  ASSERT_EQ(expected.size(), static_cast<size_t>(steps));

  // Kill k waits until the run has logged step k * steps / (kills + 1), then for a random part
  // of a step's time, so kills land in steps and in checkpoint writes; every third one lands
  // in start-up instead.
  std::mt19937 rng(12345);
  // (At most 40 ms: a reference run slowed by a busy machine must not stretch the delays.)
  std::uniform_real_distribution<double> within_step(0.0, std::min(1.5 * step_ms, 40.0));
  int kills = 0, inside_a_write = 0;
  const int wanted_kills = 12;
  for (int k = 1; k <= wanted_kills; ++k) {
    Child run(train_command(dir, "run", steps, "--resume"), dir / "run_out.txt", dir / "run_err.txt");
    if (k % 3 != 0) {
      const int target = k * steps / (wanted_kills + 1);
      wait_until([&] { return !run.running() || logged_losses(dir / "run/metrics.jsonl").count(target) > 0; }, 20.0);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(1000.0 * within_step(rng))));
    ASSERT_TRUE(run.running()) << "the run ended before kill " << k << ": " << run.err();
    ::kill(run.pid(), SIGKILL);
    ASSERT_TRUE(run.wait(10.0));
    ++kills;
    // Every file under a checkpoint's name is complete; a temporary shows a kill inside a write.
    for (const std::string& name : names_in(dir / "run")) {
      if (name.find(".tmp") == std::string::npos) continue;
      EXPECT_EQ(name.rfind(".ckpt_", 0), 0u) << "a temporary must not look like a checkpoint: " << name;
      ++inside_a_write;
    }
    for (const auto& [step, path] : list_checkpoints(dir / "run")) {
      EXPECT_NO_THROW(read_checkpoint(path)) << "after kill " << kills << ": " << path << " is not complete";
    }
  }
  // Finish the run.
  auto last = run_nanodist(train_args(dir, "run", steps, "--resume"), dir.path());
  ASSERT_EQ(last.exit_code, 0) << last.err;
  std::printf("  %d kills, %d of them inside a checkpoint write (a temporary was left)\n", kills, inside_a_write);

  // Every step logged by any of the runs has the uninterrupted run's loss, all steps are there,
  // and the final weights are the uninterrupted run's, bit for bit.
  expect_resumed_run_equals_reference(expected, dir / "ref", dir / "run", steps);
}

TEST(CheckpointCrash, WriteErrorIsOneLineAndThePreviousCheckpointStays) {
  TempDir dir;
  write_tiny_data(dir / "data", 4000);
  auto first = run_nanodist(train_args(dir, "out", 2), dir.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string kept = checkpoint_path(dir / "out", 2);
  const auto size = std::filesystem::file_size(kept);
  // A disk that is full: no file may grow past half a checkpoint (metrics.jsonl stays smaller).
  Child limited(train_command(dir, "out", 4, "--resume"), dir / "out.txt", dir / "err.txt", [size] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{static_cast<rlim_t>(size / 2), static_cast<rlim_t>(size / 2)};
    ::setrlimit(RLIMIT_FSIZE, &limit);
  });
  ASSERT_TRUE(limited.wait(30.0));
  EXPECT_NE(limited.exit_code(), 0);
  testing::CommandResult r;
  r.exit_code = limited.exit_code();
  r.out = limited.out();
  r.err = limited.err();
  expect_cli_error(r, "cannot write checkpoint " + checkpoint_path(dir / "out", 3));
  EXPECT_NE(r.err.find("the newest complete checkpoint stays " + kept), std::string::npos) << r.err;
  EXPECT_EQ(newest_checkpoint(dir / "out"), kept);
  EXPECT_NO_THROW(read_checkpoint(kept));
  for (const std::string& name : names_in(dir / "out")) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  EXPECT_FALSE(std::filesystem::exists(parts_directory(checkpoint_path(dir / "out", 3))));
}

}  // namespace
}  // namespace nd::train::testing
