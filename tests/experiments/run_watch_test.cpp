// nanodist watch: the view of one run and of an ablate-shaped directory (latest values, state,
// sparklines) from hand-written metrics.jsonl files; --once exits at once; the following mode
// redraws as lines are appended and exits 0 on SIGINT (Ctrl-C) and SIGTERM; a missing directory is
// one error line.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>
#include <algorithm>

#include "experiments/run_watch.h"
#include "tensor/error.h"
#include "train/process_helpers.h"
#include "train/train_fixture.h"

namespace nd::experiments {
namespace {

namespace fs = std::filesystem;
using train::testing::TempDir;

void write_steps(const std::string& dir, int first, int last, double lr, bool final_line) {
  fs::create_directories(dir);
  std::ofstream out(dir + "/metrics.jsonl", std::ios::app);
  for (int s = first; s <= last; ++s) {
    out << "{\"step\":" << s << ",\"loss\":" << 4.0 / s << ",\"lr\":" << lr << ",\"grad_norm\":" << 0.5
        << ",\"ms\":10,\"tok_per_s\":" << 12000 + s << ",\"mfu\":" << 0.25 << ",\"flops_per_s\":1e9}\n";
    if (s % 10 == 0) out << "{\"step\":" << s << ",\"val_loss\":" << 4.5 / s << ",\"train_loss\":1,\"elapsed_s\":1}\n";
  }
  if (final_line) out << "{\"final\":true,\"best_val_loss\":0.225,\"params\":100,\"tokens\":1000}\n";
}

TEST(RunWatch, SparklineScalesBetweenMinAndMax) {
  EXPECT_EQ(sparkline({0, 7, NAN, 3.5}, 10), "\u2581\u2588 \u2585");
  EXPECT_EQ(sparkline({1, 2, 3}, 2), "\u2581\u2588");  // the last 2 values
}

TEST(RunWatch, ViewOfAnAblationDirectory) {
  TempDir dir;
  write_steps(dir / "control/seed0", 1, 20, 1e-3, true);
  write_steps(dir / "no-clip/seed0", 1, 7, 2e-3, false);
  fs::create_directories(dir / "other");  // no metrics: not a run
  EXPECT_EQ(find_watched_runs(dir.path()), (std::vector<std::string>{dir / "control/seed0", dir / "no-clip/seed0"}));
  const std::string view = render_watch(dir.path(), 80);
  EXPECT_NE(view.find("(2 runs)"), std::string::npos) << view;
  // control: step 20, loss 4/20, val 4.5/20, done; no-clip: step 7, running, no eval yet.
  EXPECT_NE(view.find("control/seed0  20     0.2000   0.2250    1.00e-03  0.5        12k      25.0%  done"),
            std::string::npos)
      << view;
  EXPECT_NE(view.find("no-clip/seed0  7      0.5714   -         2.00e-03  0.5        12k      25.0%  running"),
            std::string::npos)
      << view;
  for (const char* title : {"loss (", "val loss (", "lr (", "grad norm (", "tok/s (", "MFU ("})
    EXPECT_NE(view.find(std::string("\n") + title), std::string::npos) << title;
  EXPECT_THROW(find_watched_runs(dir / "missing"), Error);
}

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(WatchCli, OnceDrawsAndMissingDirectoryIsOneErrorLine) {
  TempDir dir;
  write_steps(dir / "run", 1, 12, 1e-3, false);
  const std::string view = run_capture(std::string(ND_NANODIST_BIN) + " watch --out " + (dir / "run") + " --once");
  EXPECT_NE(view.find("run   12 "), std::string::npos) << view;
  const std::string err = run_capture(std::string(ND_NANODIST_BIN) + " watch --out " + (dir / "nope") + " --once 2>&1");
  EXPECT_EQ(err.find("nanodist: error: watch: "), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// The following mode sees appended lines and stops cleanly on each signal.
TEST(WatchCli, FollowsAndExitsCleanlyOnCtrlC) {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir dir;
    write_steps(dir / "run", 1, 5, 1e-3, false);
    const std::string log = dir / "watch.out";
    pid_t pid = fork();
    if (pid == 0) {
      if (!freopen(log.c_str(), "w", stdout)) _exit(126);
      execl(ND_NANODIST_BIN, ND_NANODIST_BIN, "watch", "--out", (dir / "run").c_str(), "--interval", "0.1",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    auto seen = [&](const char* text) {
      return train::testing::wait_until(
          [&] { return train::testing::slurp_file(log).find(text) != std::string::npos; }, 20.0);
    };
    EXPECT_TRUE(seen("run   5 "));
    write_steps(dir / "run", 6, 9, 1e-3, false);
    EXPECT_TRUE(seen("run   9 "));
    kill(pid, sig);
    int status = 0;
    ASSERT_TRUE(train::testing::wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; }, 10.0))
        << "watch did not stop on signal " << sig;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "signal " << sig << ": status " << status;
  }
}

}  // namespace
}  // namespace nd::experiments
