// Preemption of a 2-rank run (mpirun, CPU): SIGTERM to one rank or to both, at random moments
// (asynchronous checkpoints in flight included), makes both ranks save at the next step boundary
// and exit with status 75, leaving OUT/stopped_by_signal naming the step saved; each --resume then
// continues, and the finished run has logged exactly the uninterrupted run's losses and ends with
// its weights, bit for bit (and no marker). Every process is ended by id with bounded waits.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <random>

#include "process_helpers.h"
#include "resumed_run.h"
#include "train/ckpt/checkpoint.h"
#include "train/run/exit_status.h"
#include "train_fixture.h"

namespace nd::train::testing {
namespace {

constexpr int kSteps = 300;

std::string train_command(const TempDir& dir, const std::string& out, const std::string& extra = "") {
  return mpirun(2) + " " + ND_NANODIST_BIN +
         " train --data " + (dir / "data") + " --out " + (dir / out) +
         " --n-layer 1 --n-head 2 --n-embd 32 --block-size 16 --batch-size 2 --eval-interval 0 --eval-iters 1"
         " --warmup-iters 2 --lr-decay-iters " + std::to_string(kSteps) + " --max-iters " + std::to_string(kSteps) +
         " --log-interval 1 --ckpt-interval 40 --async-save true --keep 2 " + extra;
}

TEST(Preemption, SigtermAtRandomMomentsThenResumeGivesTheUninterruptedLosses) {
  TempDir dir;
  write_tiny_data(dir / "data", 4000);
  {
    Child reference(train_command(dir, "ref"), dir / "ref_out.txt", dir / "ref_err.txt");
    ASSERT_TRUE(reference.wait(120.0)) << "the uninterrupted run did not finish in 120 s";
    ASSERT_EQ(reference.exit_code(), 0) << reference.err();
  }
  auto expected = logged_losses(dir / "ref/metrics.jsonl");
  ASSERT_EQ(expected.size(), static_cast<size_t>(kSteps));

  // Signals land within the first 1/15 of the uninterrupted run's training time after an
  // attempt's first step line, however fast this machine is, so five attempts cannot finish the run.
  double train_ms = 0;
  {
    std::istringstream lines(slurp_file(dir / "ref/metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      const size_t ms = line.find("\"ms\":");
      if (line.rfind("{\"step\":", 0) == 0 && ms != std::string::npos) train_ms += std::stod(line.substr(ms + 5));
    }
  }
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> delay_ms(0, std::max(1, static_cast<int>(train_ms / 15)));
  int stopped = 0;
  for (int k = 0; k < 5; ++k) {
    // Output files of their own: an earlier attempt's step lines must not count as this one's.
    const std::string attempt = "attempt_" + std::to_string(k);
    Child run(train_command(dir, "run", "--resume"), dir / (attempt + "_out.txt"), dir / (attempt + "_err.txt"));
    // Signal once this attempt is training (its first step line is out), a random moment later.
    const bool training =
        wait_until([&] { return !run.running() || run.out().find("\nstep ") != std::string::npos; }, 60.0);
    ASSERT_TRUE(training);
    if (!run.running()) break;  // finished already
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    std::vector<pid_t> ranks;
    for (int r : {0, 1}) {
      pid_t pid = find_rank_process(run.pid(), r);
      if (pid > 0) {
        ranks.push_back(pid);
        run.also_clean_up(pid);
      }
    }
    ASSERT_EQ(ranks.size(), 2u) << "rank processes not found";
    // Even attempts signal one rank (the other learns it at the step boundary), odd ones both.
    if (k % 2 == 0) {
      ::kill(ranks[static_cast<size_t>(rng() % 2)], SIGTERM);
    } else {
      for (pid_t pid : ranks) ::kill(pid, SIGTERM);
    }
    ASSERT_TRUE(run.wait(60.0)) << "attempt " << k << " did not stop within 60 s of SIGTERM";
    if (run.exit_code() == 0) break;  // it finished before the signal took effect
    // The signal came after the last step's checkpoint, while the finished process was ending
    // (its handlers gone): the run is complete, nothing was lost.
    if (run.exit_code() == 128 + SIGTERM && std::filesystem::exists(checkpoint_path(dir / "run", kSteps))) break;
    ASSERT_EQ(run.exit_code(), kExitStoppedBySignal) << run.out() << run.err();
    const std::string out = run.out();
    const size_t saving = out.find(": saving step ");
    ASSERT_NE(saving, std::string::npos) << out;
    const std::string step = out.substr(saving + 14, out.find(' ', saving + 14) - (saving + 14));
    // The saved stop is on disk too, for whoever cannot see the status (mpirun signalled itself).
    const std::string marker = slurp_file(dir / "run/stopped_by_signal");
    EXPECT_EQ(marker.rfind("step " + step + " ", 0), 0u) << marker;
    EXPECT_EQ(std::to_string(list_checkpoints(dir / "run").back().first), step);
    ++stopped;
    for (const auto& [step, path] : list_checkpoints(dir / "run"))
      EXPECT_NO_THROW(read_checkpoint(path)) << "after attempt " << k << ": " << path;
  }
  EXPECT_GE(stopped, 3) << "too few attempts were stopped by their signal";
  {
    Child last(train_command(dir, "run", "--resume"), dir / "last_out.txt", dir / "last_err.txt");
    ASSERT_TRUE(last.wait(120.0));
    ASSERT_EQ(last.exit_code(), 0) << last.err();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "run/stopped_by_signal")) << "a finished run leaves no stop marker";
  expect_resumed_run_equals_reference(expected, dir / "ref", dir / "run", kSteps);
}

}  // namespace
}  // namespace nd::train::testing
