// `nanodist ablate` stopped by SIGTERM (a scheduler's preemption) in the middle of its first run:
// the run saves, the experiment stops with train's status 75 and writes no report; the same
// command then resumes that run, trains the rest and writes the report (exit 0).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "experiment_fixture.h"
#include "tests/train/process_helpers.h"
#include "train/run/exit_status.h"

namespace nd::experiments {
namespace {

using testing::lines_of;
using train::testing::Child;
using train::testing::TempDir;
using train::testing::wait_until;
namespace fs = std::filesystem;

std::string ablate_command(const std::string& dir) {
  return std::string(ND_NANODIST_BIN) + " ablate --data " + dir + "/data --out " + dir +
         "/out --device cpu --n-layer 1 --n-head 1 --n-embd 16 --block-size 16 --batch-size 4 --lr 1e-2 --min-lr 1e-3 "
         "--warmup-iters 4 --eval-interval 100 --eval-iters 2 --log-interval 1 --max-iters 400 --seeds 1 "
         "--variants no-clip --threads 1";
}

TEST(AblateSignal, ASignalStopsTheExperimentAndTheSameCommandResumesIt) {
  TempDir dir;
  train::testing::write_tiny_data(dir / "data");
  const std::string control_metrics = dir / "out/control/seed0/metrics.jsonl";
  {
    Child first(ablate_command(dir.path()), dir / "first.out", dir / "first.err");
    ASSERT_TRUE(wait_until([&] { return lines_of(control_metrics).size() >= 5; }, 60.0)) << first.err();
    ::kill(first.pid(), SIGTERM);
    ASSERT_TRUE(first.wait(60.0)) << "ablate did not stop within 60 s of SIGTERM";
    ASSERT_EQ(first.exit_code(), train::kExitStoppedBySignal) << first.out() << first.err();
    EXPECT_NE(first.out().find("stopped by a signal"), std::string::npos) << first.out();
    EXPECT_FALSE(fs::exists(dir / "out/report.md"));
    EXPECT_LT(lines_of(control_metrics).size(), 400u);
  }
  Child second(ablate_command(dir.path()), dir / "second.out", dir / "second.err");
  ASSERT_TRUE(second.wait(300.0)) << "the resumed ablate did not finish within 300 s";
  ASSERT_EQ(second.exit_code(), train::kExitDone) << second.out() << second.err();
  EXPECT_NE(second.out().find("control/seed0: resuming"), std::string::npos) << second.out();
  EXPECT_TRUE(fs::exists(dir / "out/report.md")) << second.out();
}

}  // namespace
}  // namespace nd::experiments
