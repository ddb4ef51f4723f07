// scripts/train_resilient.sh end to end on the CPU: a 2-rank run loses rank 1 to SIGKILL while
// only one rank is still available; the script says why it restarts, resumes from the newest
// checkpoint on 1 rank with --grad-accum doubled (same global batch) and finishes the run. A saved
// stop is not retried, whatever status the launcher reports; a diverged run neither.
#include <gtest/gtest.h>

#include <fstream>

#include "process_helpers.h"
#include "train/ckpt/checkpoint.h"
#include "train_fixture.h"

namespace nd::train::testing {
namespace {

TEST(RestartScript, ResumesOnTheRanksLeftAfterAKilledRank) {
  TempDir dir;
  write_tiny_data(dir / "data", 3000);
  std::ofstream(dir / "ranks") << "2\n";
  const int steps = 4000;
  std::string command = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 bash " +
                        std::string(ND_SOURCE_DIR) + "/scripts/train_resilient.sh --np 2 --max-restarts 2" +
                        " --ranks-available 'cat " + (dir / "ranks") + "' --mpirun '" + ND_MPIEXEC +
                        " --oversubscribe' --nanodist " + ND_NANODIST_BIN + " -- --data " + (dir / "data") +
                        " --out " + (dir / "out") +
                        " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --eval-interval 0"
                        " --eval-iters 1 --warmup-iters 1 --log-interval 1000 --ckpt-interval 100 --max-iters " +
                        std::to_string(steps) + " --lr-decay-iters " + std::to_string(steps);
  Child script(command, dir / "out.txt", dir / "err.txt");
  auto newest_step = [&] {
    auto all = list_checkpoints(dir / "out");
    return all.empty() ? int64_t{0} : all.back().first;
  };
  ASSERT_TRUE(wait_until([&] { return newest_step() >= 200 || !script.running(); }, 30.0)) << script.out();
  ASSERT_TRUE(script.running()) << "the run ended before the fault: " << script.out() << script.err();
  std::ofstream(dir / "ranks") << "1\n";
  pid_t rank = find_rank_process(script.pid(), 1);
  ASSERT_GT(rank, 0);
  script.also_clean_up(rank);
  const int64_t killed_after = newest_step();
  ::kill(rank, SIGKILL);
  ASSERT_TRUE(script.wait(40.0)) << script.out();
  const std::string out = script.out();
  EXPECT_EQ(script.exit_code(), 0) << out << script.err();
  EXPECT_NE(out.find("train_resilient: attempt 1: 2 rank(s) of 2, --grad-accum 1"), std::string::npos) << out;
  EXPECT_NE(out.find("train_resilient: attempt 1 failed (exit "), std::string::npos) << out;
  EXPECT_NE(out.find("; restarting from " + dir / "out/ckpt_"), std::string::npos) << out;
  EXPECT_NE(out.find("train_resilient: attempt 2: 1 rank(s) of 2, --grad-accum 2 (global batch kept)"),
            std::string::npos)
      << out;
  size_t resumed = out.find("resumed from ");
  ASSERT_NE(resumed, std::string::npos) << out;
  int64_t resumed_at = std::stoll(out.substr(out.find(" at step ", resumed) + 9));
  EXPECT_GE(resumed_at, killed_after) << out;
  EXPECT_NE(out.find("train_resilient: attempt 2 finished after "), std::string::npos) << out;
  EXPECT_EQ(newest_step(), steps);
}

// A saved stop that the launcher reports as a failure (mpirun exits 1 when it was signalled itself,
// as by Ctrl-C; here a wrapper exits 1 whatever mpirun said) is read from the run's stop marker:
// no restart, status 75, the stop's checkpoint the newest.
TEST(RestartScript, ASavedStopIsNotRetriedWhateverMpirunSays) {
  TempDir dir;
  write_tiny_data(dir / "data", 3000);
  std::ofstream(dir / "mpirun_exit_1.sh") << "#!/bin/sh\n" << ND_MPIEXEC << " --oversubscribe \"$@\"\nexit 1\n";
  const int steps = 4000;
  std::string command = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 bash " +
                        std::string(ND_SOURCE_DIR) + "/scripts/train_resilient.sh --np 2 --max-restarts 2" +
                        " --mpirun 'sh " + (dir / "mpirun_exit_1.sh") + "' --nanodist " + ND_NANODIST_BIN +
                        " -- --data " + (dir / "data") + " --out " + (dir / "out") +
                        " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --eval-interval 0"
                        " --eval-iters 1 --warmup-iters 1 --log-interval 1000 --ckpt-interval 100 --max-iters " +
                        std::to_string(steps) + " --lr-decay-iters " + std::to_string(steps);
  Child script(command, dir / "out.txt", dir / "err.txt");
  ASSERT_TRUE(wait_until([&] { return !list_checkpoints(dir / "out").empty() || !script.running(); }, 30.0))
      << script.out();
  ASSERT_TRUE(script.running()) << "the run ended before the signal: " << script.out() << script.err();
  for (int r : {0, 1}) {  // as a scheduler signals each task
    const pid_t rank = find_rank_process(script.pid(), r);
    ASSERT_GT(rank, 0);
    script.also_clean_up(rank);
    ::kill(rank, SIGTERM);
  }
  ASSERT_TRUE(script.wait(40.0)) << script.out();
  const std::string out = script.out();
  EXPECT_EQ(script.exit_code(), 75) << out << script.err();
  EXPECT_NE(out.find("train_resilient: attempt 1 was stopped by a signal after saving"), std::string::npos) << out;
  EXPECT_NE(out.find("mpirun exit 1, step "), std::string::npos) << out;
  EXPECT_EQ(out.find("attempt 2"), std::string::npos) << out;
  const std::string marker = slurp_file(dir / "out/stopped_by_signal");
  ASSERT_EQ(marker.rfind("step ", 0), 0u) << marker;
  EXPECT_EQ(list_checkpoints(dir / "out").back().first, std::stoll(marker.substr(5))) << marker;
}

// A run that diverges would diverge again: the script stops at once with train's status 3.
TEST(RestartScript, DivergedIsNotRetried) {
  TempDir dir;
  write_tiny_data(dir / "data", 3000);
  std::string command = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 bash " +
                        std::string(ND_SOURCE_DIR) + "/scripts/train_resilient.sh --np 1 --max-restarts 2 --mpirun '" +
                        ND_MPIEXEC + " --oversubscribe' --nanodist " + ND_NANODIST_BIN + " -- --data " +
                        (dir / "data") + " --out " + (dir / "out") +
                        " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --eval-interval 0"
                        " --eval-iters 1 --max-iters 20 --lr 1e30 --min-lr 1e30 --grad-clip 0";
  Child script(command, dir / "out.txt", dir / "err.txt");
  ASSERT_TRUE(script.wait(60.0)) << script.out();
  const std::string out = script.out();
  EXPECT_EQ(script.exit_code(), 3) << out << script.err();
  EXPECT_NE(out.find("train_resilient: attempt 1 diverged"), std::string::npos) << out;
  EXPECT_NE(out.find("not retrying (exit 3)"), std::string::npos) << out;
  EXPECT_EQ(out.find("attempt 2"), std::string::npos) << out;
}

}  // namespace
}  // namespace nd::train::testing
