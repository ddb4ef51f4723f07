// Errors are one line for users, through the binary: the sentence alone (no check text, no
// file:line unless --verbose) for a resume with another model shape, an unknown ablate variant,
// `sample` of bare token ids, `sample`/`eval --device cuda` without a GPU, --data naming a file,
// `prepare` with nothing to read; and under mpirun the same error is printed once, not per rank.
#include <gtest/gtest.h>

#include <fstream>

#include "process_helpers.h"
#include "train_fixture.h"

namespace nd::train::testing {
namespace {

const char* kTiny =
    " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --max-iters 2 --eval-interval 0"
    " --eval-iters 1 --warmup-iters 1 --threads 1";

// One line `nanodist: error: ...` holding `needle`, without the check text of an internal error.
void expect_user_error(const CommandResult& r, const std::string& needle) {
  expect_cli_error(r, needle);
  EXPECT_EQ(r.err.find("(check `"), std::string::npos) << r.err;
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

class ErrorLines : public ::testing::Test {
 protected:
  void SetUp() override { write_tiny_data(dir / "data", 3000); }
  std::string train(const std::string& out, const std::string& extra = "") {
    return "train --data " + (dir / "data") + " --out " + (dir / out) + kTiny + " " + extra;
  }
  // `launcher nanodist args` (e.g. mpirun -np 2), stdout and stderr apart, at most 120 s.
  CommandResult run_nanodist_under(const std::string& launcher, const std::string& args) {
    Child child(launcher + " " + ND_NANODIST_BIN + " " + args, dir / "launch.out", dir / "launch.err");
    CommandResult r;
    if (!child.wait(120.0)) return r;
    r.exit_code = child.exit_code();
    r.out = child.out();
    r.err = child.err();
    return r;
  }
  TempDir dir;
};

TEST_F(ErrorLines, EachIsOneSentence) {
  ASSERT_EQ(run_nanodist(train("out"), dir.path()).exit_code, 0);
  expect_user_error(run_nanodist(train("out", "--resume --n-embd 16"), dir.path()),
                    "holds another model (n_embd 8 in the checkpoint vs 16 now)");
  auto verbose = run_nanodist(train("out", "--resume --n-embd 16 --verbose"), dir.path());
  EXPECT_NE(verbose.err.find("model_config.cpp:"), std::string::npos) << "--verbose names file:line: " << verbose.err;

  expect_user_error(run_nanodist("train --data " + (dir / "data/train.bin") + " --out " + (dir / "o2") + kTiny,
                                 dir.path()),
                    "is a file; --data names the directory that holds it");
  expect_user_error(run_nanodist("prepare --out " + (dir / "p"), dir.path()), "nothing to prepare");
  expect_user_error(run_nanodist("sample --ckpt " + (dir / "out") + " --device cuda", dir.path()), "no CUDA GPU");
  expect_user_error(
      run_nanodist("eval --ckpt " + (dir / "out") + " --data " + (dir / "data") + " --device cuda", dir.path()),
      "no CUDA GPU");
  expect_user_error(run_nanodist("ablate --data " + (dir / "data") + " --out " + (dir / "ab") +
                                     " --variants nosuch --seeds 1" + kTiny,
                                 dir.path()),
                    "unknown variant 'nosuch'");

  ASSERT_EQ(run_nanodist("prepare --random-tokens 3000 --vocab-size 20 --out " + (dir / "ids"), dir.path()).exit_code, 0);
  ASSERT_EQ(run_nanodist("train --data " + (dir / "ids") + " --out " + (dir / "ids_out") + kTiny, dir.path()).exit_code,
            0);
  expect_user_error(run_nanodist("sample --ckpt " + (dir / "ids_out"), dir.path()), "give --prompt as ids");
}

TEST_F(ErrorLines, OnceUnderMpirun) {
  // A bad value: every rank meets it, rank 0 alone prints it.
  auto r = run_nanodist_under(mpirun(2), train("out", "--lr -1"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_of(r.err, "nanodist: error: "), 1) << r.err;
  EXPECT_NE(r.err.find("--lr and --min-lr must be >= 0"), std::string::npos) << r.err;

  // A pipeline that does not split the blocks evenly (n_layer 1 here): one line with the numbers.
  r = run_nanodist_under(mpirun(2), train("out_pp", "--pp 2"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_of(r.err, "nanodist: error: "), 1) << r.err;
  EXPECT_NE(r.err.find("--pp 2 does not divide --n-layer 1"), std::string::npos) << r.err;

  // A refusal only rank 0 can see (it alone looks into --out): one line, rank 0's.
  ASSERT_EQ(run_nanodist(train("out"), dir.path()).exit_code, 0);
  r = run_nanodist_under(mpirun(2), train("out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(count_of(r.err, "nanodist: error: "), 1) << r.err;
  EXPECT_NE(r.err.find("holds another run"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace nd::train::testing
