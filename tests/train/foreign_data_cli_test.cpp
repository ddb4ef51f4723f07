// `nanodist train --data` on other projects' token files, end to end through the binary: llm.c
// GPT-2 shards by directory and by glob (train, resume), nanoGPT's raw uint16 files with
// --vocab-size, and the one-line errors: no vocabulary size, sampling text without a tokenizer.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/data/foreign_token_writers.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::expect_cli_error;
using testing::run_nanodist;
using testing::TempDir;

const char* kTinyModel =
    " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --eval-interval 0 --eval-iters 1"
    " --warmup-iters 1 --lr-decay-iters 4 ";

class ForeignData : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir / "fw");
    nd::testing::write_gpt2_shard(dir / "fw/fineweb_train_000001.bin", nd::testing::some_tokens(400, 50257, 1));
    nd::testing::write_gpt2_shard(dir / "fw/fineweb_train_000002.bin", nd::testing::some_tokens(300, 50257, 2));
    nd::testing::write_gpt2_shard(dir / "fw/fineweb_val_000000.bin", nd::testing::some_tokens(200, 50257, 3));
  }
  TempDir dir;
};

TEST_F(ForeignData, TrainsAndResumesOnLlmcShards) {
  auto r = run_nanodist("train --data " + (dir / "fw") + " --out " + (dir / "out") + kTinyModel + "--max-iters 2",
                        dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step 2/2 | loss "), std::string::npos) << r.out;
  r = run_nanodist("train --data '" + (dir / "fw/fineweb_train_*.bin") + "' --out " + (dir / "out") + kTinyModel +
                       "--max-iters 4 --resume",
                   dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("at step 2"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "out/ckpt_000004.h5"));
  expect_cli_error(run_nanodist("sample --ckpt " + (dir / "out") + " --tokens 4", dir.path()),
                   "without a nanodist tokenizer");
}

TEST_F(ForeignData, NanoGptFilesNeedTheVocabSize) {
  std::filesystem::create_directories(dir / "ng");
  nd::testing::write_nanogpt_bin(dir / "ng/train.bin", nd::testing::some_tokens(500, 65, 4));
  nd::testing::write_nanogpt_bin(dir / "ng/val.bin", nd::testing::some_tokens(100, 65, 5));
  std::string args = "train --data " + (dir / "ng") + " --out " + (dir / "out") + kTinyModel + "--max-iters 1";
  expect_cli_error(run_nanodist(args, dir.path()), "--vocab-size");
  expect_cli_error(run_nanodist(args + " --vocab-size 50", dir.path()), "outside the vocabulary of size 50");
  auto r = run_nanodist(args + " --vocab-size 65", dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(ForeignData, BrokenShardIsOneErrorLine) {
  std::filesystem::resize_file(dir / "fw/fineweb_val_000000.bin", 1024 + 2 * 199);
  expect_cli_error(run_nanodist("train --data " + (dir / "fw") + " --out " + (dir / "out") + kTinyModel, dir.path()),
                   "fineweb_val_000000.bin is 1422 bytes but its header promises 200 tokens");
  expect_cli_error(run_nanodist("train --data '" + (dir / "fw/nothing_*.bin") + "' --out " + (dir / "out") + kTinyModel,
                                dir.path()),
                   "no file matches");
}

}  // namespace
}  // namespace nd::train
