// Fault handling of `nanodist ablate` under mpirun, as `nanodist train` has it: a rank frozen with
// SIGSTOP mid-run ends the job past --comm-timeout with train's watchdog line, and a communicator
// error on one of a run's grid groups (not the world) ends it with train's line and status. The
// second drill runs this binary itself under mpirun (ND_ABLATE_FAULT_DRILL set), so it can hand the
// ablation a world whose splits fail; every process is cleaned up by pid (SIGCONT, SIGKILL).
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli/fault_guard_for.h"
#include "dist/comm/forwarding_comm.h"
#include "dist/comm/world.h"
#include "experiment_fixture.h"
#include "experiments/ablate.h"
#include "tests/train/frozen_rank.h"

namespace nd::experiments {
namespace {

using train::testing::Child;
using train::testing::Clock;
using train::testing::FrozenRankOutcome;
using train::testing::TempDir;
using train::testing::find_rank_process;
using train::testing::mpirun;
using train::testing::seconds_since;
using train::testing::wait_until;

// A tiny ablation that would train far longer than any test waits; `extra` adds flags.
std::string ablate_flags(const std::string& dir, const std::string& extra) {
  return " --data " + dir + "/data --out " + dir +
         "/out --device cpu --n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --lr 1e-2"
         " --min-lr 1e-3 --warmup-iters 4 --eval-interval 100000 --eval-iters 2 --log-interval 1"
         " --max-iters 100000000 --seeds 1 --variants no-clip --threads 1 " +
         extra;
}

TEST(AblateFault, AFrozenRankEndsTheAblationPastCommTimeoutWithTrainsLine) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  Child job(mpirun(2) + " " + ND_NANODIST_BIN + " ablate" +
                ablate_flags(dir.path(), "--comm-timeout 10 --heartbeat-timeout 0"),
            dir / "out.txt", dir / "err.txt");
  const std::string metrics = dir / "out/control/seed0/metrics.jsonl";
  const bool training =
      wait_until([&] { return testing::lines_of(metrics).size() >= 3 || !job.running(); }, 60.0);
  ASSERT_TRUE(training && job.running()) << job.out() << job.err();
  const pid_t rank = find_rank_process(job.pid(), 1);
  ASSERT_GT(rank, 0) << "no process of rank 1";
  job.also_clean_up(rank);
  const auto stopped_at = Clock::now();
  ::kill(rank, SIGSTOP);
  const bool ended = job.wait(train::testing::kHangSeconds);
  FrozenRankOutcome outcome;
  outcome.seconds = seconds_since(stopped_at);
  ASSERT_TRUE(ended) << "the ablation still runs " << outcome.seconds << " s after rank 1 froze";
  outcome.exit_code = job.exit_code();
  outcome.err = job.err();
  std::printf("  ablate, rank 1 frozen: job ended after %.1f s, exit %d\n", outcome.seconds, outcome.exit_code);
  train::testing::expect_fault_line(outcome, /*frozen=*/1, "training step");
  EXPECT_EQ(outcome.exit_code, dist::kFaultExitStatus) << outcome.err;
  EXPECT_GE(outcome.seconds, 9.5) << "the watchdog fired before --comm-timeout 10";
}

// What the drill prints when its comm starts failing, so the test times the end from then.
constexpr const char* kInjected = "drill: a grid comm's error is injected";

// A split of the world that reports an asynchronous error (as NCCL reports a broken link) from
// its `fail_after`-th collective on, once training is well under way.
class FailsLater : public dist::ForwardingComm {
 public:
  FailsLater(std::unique_ptr<dist::Comm> real, int fail_after)
      : ForwardingComm(std::move(real)), fail_after_(fail_after) {}
  dist::CommWork allreduce_async(Tensor& buffer, dist::ReduceOp op) override {
    count();
    return ForwardingComm::allreduce_async(buffer, op);
  }
  dist::CommWork all_gather_async(const Tensor& input, Tensor& output) override {
    count();
    return ForwardingComm::all_gather_async(input, output);
  }
  std::string async_error() override {
    return calls_.load() >= fail_after_ ? "injected: the link to a peer broke" : inner().async_error();
  }

 private:
  void count() {
    if (++calls_ == fail_after_) {
      std::fprintf(stderr, "%s\n", kInjected);
      std::fflush(stderr);
    }
  }
  const int fail_after_;
  std::atomic<int> calls_{0};
};

// The world as this rank's ablation sees it: its splits (the grid's tp and dp groups) fail later
// on rank 1 only.
class WorldWithFailingSplits : public dist::ForwardingComm {
 public:
  explicit WorldWithFailingSplits(dist::Comm& world) : ForwardingComm(world) {}
  std::unique_ptr<dist::Comm> split(int color, int key) override {
    std::unique_ptr<dist::Comm> real = ForwardingComm::split(color, key);
    if (rank() != 1) return real;
    return std::make_unique<FailsLater>(std::move(real), /*fail_after=*/60);
  }
};

// Runs only under mpirun, started by the test below: an ablation at tp 2 x dp 2 guarded as the
// CLI guards it (cli::fault_guard_for with the ablation's own timeout flags).
TEST(AblateFaultDrill, AnAblationWhoseGridCommFails) {
  const char* dir = std::getenv("ND_ABLATE_FAULT_DRILL");
  if (dir == nullptr) GTEST_SKIP() << "started by AblateFault.AGridCommsErrorEndsTheAblationWithTrainsLine";
  std::unique_ptr<dist::Comm> world = dist::make_world_comm(Device::cpu());
  WorldWithFailingSplits comm(*world);
  const std::string root = dir;
  std::vector<std::string> words = {"ablate"};
  std::string flags = ablate_flags(root, "--tp 2");
  for (size_t at = 0, next; at < flags.size(); at = next + 1) {
    next = flags.find(' ', at);
    if (next == std::string::npos) next = flags.size();
    if (next > at) words.push_back(flags.substr(at, next - at));
  }
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  ExperimentArgs args = parse_experiment_args(ablate_flag_set(), static_cast<int>(argv.size()), argv.data());
  std::unique_ptr<dist::FaultGuard> guard = cli::fault_guard_for(comm, args.flags.get_double("comm-timeout"),
                                                                 args.flags.get_double("heartbeat-timeout"));
  run_ablate(args, comm, nullptr, guard.get());
  ADD_FAILURE() << "the ablation finished: the injected error went unseen";
}

TEST(AblateFault, AGridCommsErrorEndsTheAblationWithTrainsLine) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  const std::string self = "/proc/" + std::to_string(::getpid()) + "/exe";
  char path[4096];
  const ssize_t n = ::readlink(self.c_str(), path, sizeof(path) - 1);
  ASSERT_GT(n, 0);
  path[n] = '\0';
  Child job("env ND_ABLATE_FAULT_DRILL=" + dir.path() + " " + mpirun(4) + " " + path +
                " --gtest_filter=AblateFaultDrill.*",
            dir / "out.txt", dir / "err.txt");
  ASSERT_TRUE(wait_until([&] { return job.err().find(kInjected) != std::string::npos || !job.running(); }, 120.0))
      << "rank 1 reached no 60th grid collective within 120 s\n"
      << job.out() << job.err();
  const auto injected_at = Clock::now();
  // The guard polls at least every second and gives the aborts 10 s; how soon the job ends after
  // that depends on the machine's load, so only a hang fails the wait.
  const bool ended = job.wait(train::testing::kHangSeconds);
  const double seconds = seconds_since(injected_at);
  ASSERT_TRUE(ended) << "the ablation still runs " << seconds << " s after a grid comm failed\n" << job.err();
  std::printf("  ablate, rank 1's grid comm failed: job ended after %.1f s, exit %d\n", seconds, job.exit_code());
  EXPECT_EQ(job.exit_code(), dist::kFaultExitStatus) << job.out() << job.err();
  const std::string err = job.err();
  const size_t at = err.find("nanodist: error: rank 1, step ");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string line = err.substr(at, err.find('\n', at) - at);
  EXPECT_NE(line.find(", while waiting for "), std::string::npos) << line;
  EXPECT_NE(line.find("mpi reported an asynchronous error: injected: the link to a peer broke"), std::string::npos)
      << line;
}

}  // namespace
}  // namespace nd::experiments
