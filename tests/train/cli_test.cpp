// The nanodist binary end to end: help, prepare -> train -> sample, and every kind of bad input
// ending in exactly one stderr line `nanodist: error: ...` and a non-zero exit status.
#include <gtest/gtest.h>

#include <cctype>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "process_helpers.h"
#include "tests/common/scoped_env.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::expect_cli_error;
using testing::run_nanodist;
using testing::TempDir;

// A tiny model run on DIR/data into DIR/out, plus `extra` flags.
std::string tiny_train_args(const TempDir& dir, const std::string& extra = "") {
  return "train --data " + (dir / "data") + " --out " + (dir / "out") +
         " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --max-iters 3 --eval-interval 0"
         " --eval-iters 1 --warmup-iters 1 --lr-decay-iters 3 " +
         extra;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_tiny_data(dir / "data", 3000); }
  TempDir dir;
};

TEST_F(Cli, HelpListsSubcommandsAndFlags) {
  auto r = run_nanodist("--help", dir.path());
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"prepare", "train", "sample", "bench-comm"})
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
  r = run_nanodist("train --help", dir.path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--n-layer N"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(default: 6)"), std::string::npos);
  EXPECT_NE(r.out.find("--resume"), std::string::npos);
  EXPECT_EQ(run_nanodist("sample --help", dir.path()).exit_code, 0);
  EXPECT_EQ(run_nanodist("prepare --help", dir.path()).exit_code, 0);
  expect_cli_error(run_nanodist("fly", dir.path()), "unknown command 'fly'");
  // The kernel benchmark moved to the lab binary: the old command names its replacement.
  expect_cli_error(run_nanodist("bench-kernels", dir.path()), "nanodist-lab bench-kernels");
}

TEST_F(Cli, PrepareTrainSample) {
  std::ofstream(dir / "in.txt") << testing::tiny_text(2000);
  auto r = run_nanodist("prepare --input " + (dir / "in.txt") + " --out " + (dir / "prep"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2000 chars"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "prep/train.bin"));

  r = run_nanodist(tiny_train_args(dir), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step 3/3 | loss "), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "out/ckpt_000003.h5"));

  r = run_nanodist("sample --ckpt " + (dir / "out") + " --prompt 'the ' --tokens 12 --seed 3", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("the ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.size(), 4u + 12u + 1u) << "prompt, 12 one-byte tokens, newline: " << r.out;
  // Same seed, same text.
  EXPECT_EQ(run_nanodist("sample --ckpt " + (dir / "out") + " --prompt 'the ' --tokens 12 --seed 3", dir.path()).out,
            r.out);
  // Two samples, nanoGPT's separator between them; a stop text ends each where it first appears
  // (the one-byte tokens of a char model cannot overshoot it).
  r = run_nanodist("sample --ckpt " + (dir / "out") + " --prompt 'the ' --tokens 12 --num-samples 2 --seed 3",
                   dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.size(), 2 * (4u + 12u + 1u) + 16u) << r.out;
  EXPECT_NE(r.out.find("\n---------------\n"), std::string::npos) << r.out;
  const std::string first = r.out.substr(0, 4 + 12);
  size_t at = 4 + 5;  // from the sixth generated character, a letter (quoted for the shell below)
  while (at < first.size() && !std::isalpha(static_cast<unsigned char>(first[at]))) ++at;
  if (at < first.size()) {
    const std::string stop = first.substr(at, 1);
    r = run_nanodist("sample --ckpt " + (dir / "out") + " --prompt 'the ' --tokens 12 --seed 3 --stop " + stop,
                     dir.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, first.substr(0, first.find(stop, 4) + 1) + "\n");
  }
  expect_cli_error(run_nanodist("sample --ckpt " + (dir / "out") + " --top-p 0", dir.path()), "--top-p");

  // HellaSwag's format scored end to end (the scoring itself: multiple_choice_test).
  std::ofstream(dir / "hs.jsonl") << "{\"ctx\": \"the king\", \"endings\": [\"and\", \"of\", \"now\", \"rome\"], \"label\": 0}\n"
                                  << "{\"ctx\": \"shall\", \"endings\": [\"speak\", \"thee\"], \"label\": 1}\n";
  r = run_nanodist("eval --ckpt " + (dir / "out") + " --task hellaswag --file " + (dir / "hs.jsonl"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("eval: task hellaswag, examples 2, acc "), std::string::npos) << r.out;
  expect_cli_error(run_nanodist("eval --ckpt " + (dir / "out") + " --task hellaswag", dir.path()), "--file");
}

TEST_F(Cli, MissingTruncatedOrForeignTokenFiles) {
  std::filesystem::remove(dir / "data/train.bin");
  expect_cli_error(run_nanodist(tiny_train_args(dir), dir.path()), "train.bin");

  testing::write_tiny_data(dir / "data", 3000);
  auto size = std::filesystem::file_size(dir / "data/train.bin");
  std::filesystem::resize_file(dir / "data/train.bin", size - 3);
  expect_cli_error(run_nanodist(tiny_train_args(dir), dir.path()), "train.bin");

  testing::write_tiny_data(dir / "data", 3000);
  {
    std::fstream f(dir / "data/val.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.write("JUNK", 4);
  }
  expect_cli_error(run_nanodist(tiny_train_args(dir), dir.path()), "val.bin");
}

TEST_F(Cli, DataShorterThanTheContext) {
  testing::write_tiny_data(dir / "data", 40);  // val.bin gets 8 tokens
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--block-size 16"), dir.path()), "");
}

TEST_F(Cli, ConfigErrors) {
  std::ofstream(dir / "bad_key.conf") << "n-layer = 1\nwarmup = 5\n";
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--config " + (dir / "bad_key.conf")), dir.path()),
                   "unknown key 'warmup' at " + (dir / "bad_key.conf") + ":2");
  std::ofstream(dir / "bad_value.conf") << "lr = quick\n";
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--config " + (dir / "bad_value.conf")), dir.path()),
                   "bad value 'quick' for 'lr' at " + (dir / "bad_value.conf") + ":1");
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--n-embd 10 --n-head 4"), dir.path()),
                   "--n-embd 10 is not divisible by --n-head 4");
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--tp 2"), dir.path()), "not divisible by --tp 2");
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--batch-size 0"), dir.path()), "--batch-size");
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--no-such-flag 1"), dir.path()), "no-such-flag");
}

// cuDNN's attention asked for where it cannot run: one error line with the reason.
TEST_F(Cli, AttentionCudnnWhereItCannotRun) {
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--attention cudnn"), dir.path()),
                   "--attention cudnn: cuDNN attention runs on the GPU, and --device is cpu");
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--attention fast"), dir.path()),
                   "--attention must be ours, cudnn or auto, got 'fast'");
}

TEST_F(Cli, ResumeFromAnotherModelOrVocabulary) {
  ASSERT_EQ(run_nanodist(tiny_train_args(dir), dir.path()).exit_code, 0);
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--resume --max-iters 6 --n-layer 2"), dir.path()),
                   "n_layer 1 in the checkpoint vs 2 now");
  PrepareOptions options;
  options.out_dir = dir / "data";
  options.val_fraction = 0.2;
  prepare_text(testing::tiny_text(3000) + "QXZ", "other", options);
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--resume --max-iters 6"), dir.path()), "vocabulary mismatch");
}

// --resume with nothing but --out continues the run as launched: every flag not given comes from
// OUT/run.conf, whose paths are absolute (a resume from another directory finds the data); a flag
// given still wins, and a model flag that contradicts the checkpoint is still refused.
TEST_F(Cli, ResumeTakesTheRunsSettings) {
  ASSERT_EQ(run_nanodist(tiny_train_args(dir), dir.path()).exit_code, 0);
  std::ifstream conf(dir / "out/run.conf");
  const std::string text((std::istreambuf_iterator<char>(conf)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("data = " + std::filesystem::absolute(dir / "data").lexically_normal().string() + "\n"),
            std::string::npos)
      << text;
  std::filesystem::create_directories(dir / "elsewhere");
  auto r = run_nanodist("train --out " + (dir / "out") + " --resume --max-iters 5", dir / "elsewhere");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step 5/5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 layers, 2 heads, 8 wide"), std::string::npos) << r.out;
  expect_cli_error(run_nanodist("train --out " + (dir / "out") + " --resume --max-iters 7 --n-layer 2", dir.path()),
                   "n_layer 1 in the checkpoint vs 2 now");
}

// An input error found while the run sets up (the data, --out, the checkpoint to resume) is all
// the command prints: no header or schedule warning before it on either stream.
TEST_F(Cli, InputErrorsFoundWhileSettingUpAreTheOnlyLine) {
  auto expect_alone = [](const testing::CommandResult& r, const std::string& needle) {
    expect_cli_error(r, needle);
    EXPECT_EQ(r.out, "") << "stdout before the error";
  };
  ASSERT_EQ(run_nanodist(tiny_train_args(dir), dir.path()).exit_code, 0);
  expect_alone(run_nanodist(tiny_train_args(dir, "--warmup-iters 9"), dir.path()), "holds another run");
  expect_alone(run_nanodist(tiny_train_args(dir, "--resume --max-iters 6 --n-layer 2"), dir.path()),
               "n_layer 1 in the checkpoint vs 2 now");
  std::filesystem::remove(dir / "data/train.bin");
  expect_alone(run_nanodist(tiny_train_args(dir, "--overwrite"), dir.path()), "cannot open token file");
}

// prepare writes into an empty directory or its own output; anything else (someone's files, a
// run, nanoGPT's raw train.bin) needs --overwrite and is left as it was. A run's --out is never a
// data directory.
TEST_F(Cli, PrepareAndTrainKeepDataAndRunsApart) {
  const std::string text = dir / "in.txt";
  std::ofstream(text) << testing::tiny_text(2000);
  auto prepare_into = [&](const std::string& out, const std::string& extra = "") {
    return run_nanodist("prepare --input " + text + " --out " + out + " " + extra, dir.path());
  };
  // Its own output, again; the text it reads may sit in the directory.
  ASSERT_EQ(prepare_into(dir / "data").exit_code, 0);
  std::filesystem::create_directories(dir / "corpus");
  std::filesystem::copy_file(text, dir / "corpus/in.txt");
  ASSERT_EQ(run_nanodist("prepare --input " + (dir / "corpus/in.txt") + " --out " + (dir / "corpus"), dir.path())
                .exit_code,
            0);

  std::filesystem::create_directories(dir / "notes");
  std::ofstream(dir / "notes/todo.md") << "mine\n";
  auto r = prepare_into(dir / "notes");
  expect_cli_error(r, "--out " + (dir / "notes") + " holds files nanodist prepare did not write (todo.md); pick an "
                      "empty or new --out, or pass --overwrite");
  EXPECT_FALSE(std::filesystem::exists(dir / "notes/train.bin"));
  ASSERT_EQ(prepare_into(dir / "notes", "--overwrite").exit_code, 0);
  EXPECT_EQ(testing::slurp_file(dir / "notes/todo.md"), "mine\n");

  // nanoGPT's raw u16 train.bin is not prepare's to replace.
  std::filesystem::create_directories(dir / "nanogpt");
  std::ofstream(dir / "nanogpt/train.bin", std::ios::binary) << std::string(64, '\1');
  expect_cli_error(prepare_into(dir / "nanogpt"), "did not write (train.bin)");

  ASSERT_EQ(run_nanodist(tiny_train_args(dir), dir.path()).exit_code, 0);
  expect_cli_error(prepare_into(dir / "out"), "did not write (ckpt_000003");
  expect_cli_error(run_nanodist("prepare --random-tokens 100 --vocab-size 5 --out " + (dir / "out"), dir.path()),
                   "did not write");

  // And the other way round: a run into the data directory, fresh or not.
  for (const char* extra : {"", " --overwrite", " --resume"})
    expect_cli_error(run_nanodist("train --data " + (dir / "data") + " --out " + (dir / "data") +
                                      " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --max-iters 1" + extra,
                                  dir.path()),
                     "--out " + (dir / "data") + " holds token data (train.bin): a run writes its checkpoints");
  EXPECT_FALSE(std::filesystem::exists(dir / "data/run.conf"));
}

// --device auto trains on a GPU where there is one, else on the CPU; asking for a GPU on a machine
// without one says how to run on the CPU, and where the GPU was asked for (the experiment configs).
TEST_F(Cli, DeviceAutoAndNoGpu) {
  auto r = run_nanodist(tiny_train_args(dir, "--device auto"), dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(cuda_available() ? " steps on cuda:0 x 1 rank(s)" : " steps on cpu x 1 rank(s)"),
            std::string::npos)
      << r.out;
  if (cuda_available()) GTEST_SKIP() << "the rest is what a machine without a GPU says";
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--overwrite --device cuda"), dir.path()),
                   "device cuda (--device on the command line) but this machine has no CUDA GPU (or this build no "
                   "CUDA); run on the CPU with --device cpu, or pass --device auto");
  std::ofstream(dir / "gpu.conf") << "dtype = bf16\ndevice = cuda\n";
  expect_cli_error(run_nanodist(tiny_train_args(dir, "--overwrite --config " + (dir / "gpu.conf")), dir.path()),
                   "device cuda ('device' at " + (dir / "gpu.conf") + ":2) but this machine has no CUDA GPU (or "
                   "this build no CUDA); run on the CPU with --device cpu --dtype f32");
  const std::string experiment = std::string(ND_SOURCE_DIR) + "/configs/experiments/deep_norm_residual.conf";
  r = run_nanodist("ablate --experiment " + experiment + " --data " + (dir / "data") + " --out " + (dir / "ab"),
                   dir.path());
  expect_cli_error(r, "device auto found no CUDA GPU, and --dtype bf16 ('dtype' at " + experiment +
                          ":29) needs one; pass --dtype f32 to run on the CPU");
  EXPECT_EQ(r.out, "");
}

// A user's mistake reads as a sentence: no failing statement, no file:line, unless asked for.
TEST_F(Cli, InputErrorsHideTheCheckUnlessVerbose) {
  std::filesystem::remove(dir / "data/train.bin");
  auto r = run_nanodist(tiny_train_args(dir), dir.path());
  expect_cli_error(r, "cannot open token file " + (dir / "data/train.bin"));
  EXPECT_EQ(r.err.find("check `"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << r.err;

  r = run_nanodist(tiny_train_args(dir, "--verbose"), dir.path());
  expect_cli_error(r, "cannot open token file");
  EXPECT_NE(r.err.find("(check `std::filesystem::is_regular_file(path, ec)` at data/token_file.cpp:"), std::string::npos)
      << r.err;

  {
    test::ScopedEnv verbose("NANODIST_VERBOSE", "1");
    r = run_nanodist("train --lr fast", dir.path());
  }
  expect_cli_error(r, "bad value 'fast' for 'lr' on the command line");
  EXPECT_NE(r.err.find(" at train/config_value.cpp:"), std::string::npos) << r.err;

  for (const char* args : {"train --lr fast", "fly", "bench-comm --op alltoone", "sample --ckpt /no/such/dir"}) {
    r = run_nanodist(args, dir.path());
    expect_cli_error(r, "");
    EXPECT_EQ(r.err.find(".cpp:"), std::string::npos) << args << ": " << r.err;
  }
}

TEST_F(Cli, UnwritableOutputDirectory) {
  std::ofstream(dir / "a_file") << "x";
  std::string args = "train --data " + (dir / "data") + " --out " + (dir / "a_file/out") +
                     " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --max-iters 1";
  expect_cli_error(run_nanodist(args, dir.path()), "cannot create output directory");
  expect_cli_error(run_nanodist("sample --ckpt " + (dir / "nothing_here"), dir.path()), "no checkpoint");
}

}  // namespace
}  // namespace nd::train
