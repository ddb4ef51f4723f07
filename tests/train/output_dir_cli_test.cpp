// The output directory is the run's, through the nanodist binary: a fresh run refuses an --out
// holding another run (one line naming what is there and the flags to pass), --overwrite starts
// over, a second live process on the same --out is refused through the lock (two real
// processes), OUT/run.conf records the settings and a resume names the keys that changed; a
// diverged run exits 3 (its summary shows no best val loss: it stopped before any eval); flags as
// people type them (underscores, nearest-flag suggestions, -h, --version, --threads).
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "process_helpers.h"
#include "train/ckpt/checkpoint.h"
#include "train/run/exit_status.h"
#include "train_fixture.h"

namespace nd::train::testing {
namespace {

std::string tiny_train(const TempDir& dir, const std::string& extra = "") {
  return "train --data " + (dir / "data") + " --out " + (dir / "out") +
         " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --max-iters 3 --eval-interval 0"
         " --eval-iters 1 --warmup-iters 1 --threads 1 " +
         extra;
}

class OutputDir : public ::testing::Test {
 protected:
  void SetUp() override { write_tiny_data(dir / "data", 3000); }
  TempDir dir;
};

TEST_F(OutputDir, AnotherRunIsRefusedUnlessResumedOrOverwritten) {
  auto r = run_nanodist(tiny_train(dir), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(std::filesystem::exists(dir / "out/ckpt_000003.h5"));
  const std::string metrics = slurp_file(dir / "out/metrics.jsonl");

  // Nothing of the first run is touched by the refused one.
  r = run_nanodist(tiny_train(dir, "--lr 0.002"), dir.path());
  expect_cli_error(r, "holds another run: a checkpoint (step 3) and metrics.jsonl; pass --resume to continue it, or "
                      "--overwrite");
  EXPECT_EQ(slurp_file(dir / "out/metrics.jsonl"), metrics);
  EXPECT_EQ(list_checkpoints(dir / "out").size(), 1u);

  expect_cli_error(run_nanodist(tiny_train(dir, "--resume --overwrite"), dir.path()), "contradict");

  // A resume says which settings changed since run.conf was written, then rewrites it.
  r = run_nanodist(tiny_train(dir, "--resume --max-iters 5 --lr 0.002"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("settings changed since the last launch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max-iters 3 -> 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lr 0.001 -> 0.002"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lr-decay-iters 3 -> 5"), std::string::npos) << "follows --max-iters: " << r.out;
  const std::string conf = slurp_file(dir / "out/run.conf");
  EXPECT_NE(conf.find("\nmax-iters = 5\n"), std::string::npos) << conf;
  EXPECT_NE(conf.find("\n# ranks = 1\n"), std::string::npos) << conf;

  // run.conf is a config file that repeats the run (here into another --out).
  r = run_nanodist("train --config " + (dir / "out/run.conf") + " --out " + (dir / "again") + " --threads 1",
                   dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "again/ckpt_000005.h5"));

  r = run_nanodist(tiny_train(dir, "--overwrite"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--overwrite: removed 2 checkpoints (steps 3 to 5) and metrics.jsonl"), std::string::npos)
      << r.out;
  EXPECT_EQ(list_checkpoints(dir / "out").size(), 1u);
  EXPECT_EQ(list_checkpoints(dir / "out").front().first, 3);
}

TEST_F(OutputDir, ASecondLiveProcessIsRefusedByTheLock) {
  // The first process trains long enough to be alive while the second starts.
  Child first(std::string(ND_NANODIST_BIN) + " " +
                  tiny_train(dir, "--max-iters 1000000 --log-interval 100000 --comm-timeout 0"),
              dir / "first.out", dir / "first.err");
  const std::string lock = dir / "out/.nanodist.lock";
  ASSERT_TRUE(wait_until([&] { return slurp_file(lock) == std::to_string(first.pid()) + "\n" || !first.running(); },
                         30.0))
      << first.err();
  ASSERT_TRUE(first.running()) << first.err();
  auto second = run_nanodist(tiny_train(dir, "--resume"), dir.path());
  expect_cli_error(second, "is in use by another nanodist run (pid " + std::to_string(first.pid()) + ")");

  // A killed holder leaves no stale lock: the kernel drops it with the process.
  ::kill(first.pid(), SIGKILL);
  ASSERT_TRUE(first.wait(10.0));
  second = run_nanodist(tiny_train(dir, "--resume"), dir.path());
  EXPECT_EQ(second.exit_code, 0) << second.err;
}

TEST_F(OutputDir, ExitStatusSaysWhatHappened) {
  auto r = run_nanodist(tiny_train(dir, "--lr 1e30 --min-lr 1e30 --grad-clip 0 --max-iters 20"), dir.path());
  EXPECT_EQ(r.exit_code, kExitDiverged) << r.out << r.err;
  EXPECT_NE(r.out.find("diverged"), std::string::npos) << r.out;
  // It stopped before any evaluation: no best val loss to show, and none made up.
  EXPECT_NE(r.out.find("best val loss - |"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
  EXPECT_EQ(run_nanodist(tiny_train(dir, "--overwrite"), dir.path()).exit_code, kExitDone);
  EXPECT_EQ(run_nanodist(tiny_train(dir, "--n-layer 0 --overwrite"), dir.path()).exit_code, kExitError);
}

// A schedule the run never completes trains, with one warning line for each problem on stderr.
TEST_F(OutputDir, SchedulesTheRunNeverCompletesAreWarnedAbout) {
  auto r = run_nanodist(tiny_train(dir), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "warmup 1 and the decay over the 3 steps are fine";
  r = run_nanodist(tiny_train(dir, "--overwrite --warmup-iters 3 --lr-decay-iters 10"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "nanodist: warning: --warmup-iters 3 >= --max-iters 3: the run ends inside the warmup and the lr never "
            "reaches --lr; a shorter --warmup-iters would\n"
            "nanodist: warning: --lr-decay-iters 10 > --max-iters 3: the run ends before the cosine decay reaches "
            "--min-lr (-1 = decay over the run)\n");
  EXPECT_NE(r.out.find("step 3/3"), std::string::npos) << r.out;
}

TEST_F(OutputDir, FlagsAsPeopleTypeThem) {
  // Underscores read as dashes on the command line, as in config files.
  auto r = run_nanodist(tiny_train(dir, "--n_layer 2 --max_iters 2"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("train: 2 layers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("grid tp 1 x pp 1 x dp 1"), std::string::npos) << r.out;
  expect_cli_error(run_nanodist(tiny_train(dir, "--learning_rate 1e-3"), dir.path()),
                   "unknown flag --learning_rate for nanodist train; did you mean --lr?");
  expect_cli_error(run_nanodist(tiny_train(dir, "--n-layers 2"), dir.path()), "did you mean --n-layer?");
  expect_cli_error(run_nanodist("sample --tokenz 3", dir.path()), "did you mean --tokens?");
  std::ofstream(dir / "x.conf") << "n_layer = 2\ngradient_accumulation_steps = 4\n";
  expect_cli_error(run_nanodist(tiny_train(dir, "--config " + (dir / "x.conf")), dir.path()),
                   "unknown key 'gradient-accumulation-steps' at " + (dir / "x.conf") +
                       ":2; did you mean 'grad-accum'?");
  expect_cli_error(run_nanodist(tiny_train(dir, "--threads -2"), dir.path()), "--threads must be >= 0");

  // nanoGPT's and llm.c's idioms: what to do here instead, in one line.
  expect_cli_error(run_nanodist(tiny_train(dir, "--init-from resume"), dir.path()),
                   "--init-from resume is nanoGPT's init_from='resume'; nanodist continues the run in --out with "
                   "--resume");
  expect_cli_error(run_nanodist(tiny_train(dir, "--init_from=resume"), dir.path()), "with --resume");
  expect_cli_error(run_nanodist(tiny_train(dir, "--init-from gpt2-medium"), dir.path()),
                   "download openai-community/gpt2-medium");
  expect_cli_error(run_nanodist(tiny_train(dir, "--compile"), dir.path()),
                   "captures the whole step as a CUDA graph (--cuda-graph, on by default); drop --compile");
  expect_cli_error(run_nanodist(tiny_train(dir, "--compile=True"), dir.path()), "drop --compile");
  for (const char* flag : {"--eval_only", "--eval-only=True"})
    expect_cli_error(run_nanodist(tiny_train(dir, flag), dir.path()), "nanodist eval --ckpt OUT --data DIR");
  for (const char* flag : {"--wandb_log", "--wandb-log True"})
    expect_cli_error(run_nanodist(tiny_train(dir, flag), dir.path()), "scripts/log_to.py wandb OUT");
  expect_cli_error(run_nanodist(tiny_train(dir, "-b 64"), dir.path()), "llm.c's -b is --batch-size here");
  expect_cli_error(run_nanodist(tiny_train(dir, "-q 0.1"), dir.path()), "-l 6e-4 -q 0.1 is --min-lr 6e-5");
  expect_cli_error(run_nanodist(tiny_train(dir, "-k wsd"), dir.path()), "llm.c's -k is --lr-schedule");
  // A hint names a flag only where the command has it: sample has no --batch-size.
  expect_cli_error(run_nanodist("sample -b 4", dir.path()), "");
  EXPECT_EQ(run_nanodist("sample -b 4", dir.path()).err.find("llm.c"), std::string::npos);
  ASSERT_EQ(run_nanodist(tiny_train(dir, "--overwrite --lr-decay-iters -1"), dir.path()).exit_code, 0)
      << "a negative value is no flag";

  r = run_nanodist("train -h", dir.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--threads N"), std::string::npos) << r.out;
  r = run_nanodist("--version", dir.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("nanodist ", 0), 0u) << r.out;
  for (const char* part : {"(commit ", "CUDA ", "cuDNN", "NCCL", "OpenBLAS"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << " in " << r.out;
}

}  // namespace
}  // namespace nd::train::testing
