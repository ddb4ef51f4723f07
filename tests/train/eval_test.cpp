// `nanodist eval` through the binary against losses computed here without eval's windowing: the
// trainer's own eval batches (EvalReader windows through mean_eval_loss) over the same tokens,
// plus one forward over the pairs past the last full window; every target counted once; llm.c and
// nanoGPT data; and each bad input as one error line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "data/loader.h"
#include "data/token_dataset.h"
#include "data/token_file.h"
#include "tests/data/foreign_token_writers.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_model.h"
#include "train/evaluation.h"
#include "train/trainer.h"
#include "train_fixture.h"

namespace nd::train {
namespace {

using testing::expect_cli_error;
using testing::run_nanodist;
using testing::TempDir;

// The model of a checkpoint, on the CPU, in eval mode.
std::unique_ptr<nn::GPT> load_checkpoint_model(const std::string& path) {
  CheckpointData data = read_checkpoint(path);
  Generator gen(0);
  auto model = std::make_unique<nn::GPT>(model_config_from_attributes(data.config, path), gen);
  load_model(data, path, *model, nullptr);
  model->set_training(false);
  return model;
}

// Mean loss over the first `pairs` (input, target) pairs of `tokens`: the full windows of T as the
// trainer's eval reads them (EvalReader with one window a batch: batch k is the window starting at
// k*T), then one forward over the r < T pairs left.
double reference_mean_loss(const nn::GPT& model, std::shared_ptr<const TokenSource> tokens, int64_t pairs) {
  const int64_t T = model.config().block_size, full = pairs / T, rest = pairs % T;
  double sum = 0.0;
  if (full > 0) {
    EvalReader windows(tokens, /*batch_per_rank=*/1, T);
    sum += mean_eval_loss(model, windows, static_cast<int>(full), nullptr) * static_cast<double>(full * T);
  }
  if (rest > 0) {
    std::vector<int32_t> in(static_cast<size_t>(rest)), target(static_cast<size_t>(rest));
    tokens->copy(full * T, rest, in.data());
    tokens->copy(full * T + 1, rest, target.data());
    Tensor x = Tensor::from_vector(in, {1, rest}), y = Tensor::from_vector(target, {1, rest});
    NoGradGuard no_grad;
    Generator unused(0);
    sum += model.forward(x, &y, unused).loss.data().item() * static_cast<double>(rest);
  }
  return sum / static_cast<double>(pairs);
}

// The number after "key": in eval's --json line.
double json_number(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key << " missing in " << json;
  return at == std::string::npos ? -1.0 : std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

class Eval : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_tiny_data(dir / "data");
    TrainConfig config = testing::tiny_config(dir / "data", dir / "run");
    // A model that has learned something: its loss is far from ln(vocab).
    config.schedule.max_iters = config.schedule.lr_decay_iters = 60;
    config.optim.lr = 1e-2;
    run_training(config);
    ckpt = newest_checkpoint(dir / "run");
    ASSERT_FALSE(ckpt.empty());
  }

  std::string eval_json(const std::string& flags) {
    auto r = run_nanodist("eval --ckpt " + (dir / "run") + " --data " + (dir / "data") + " --json " + flags, dir.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
    return r.out;
  }

  TempDir dir;
  std::string ckpt;
};

TEST_F(Eval, WholeSplitEqualsTheTrainersLossesOverTheSameTokens) {
  auto model = load_checkpoint_model(ckpt);
  for (const std::string split : {"val", "train"}) {
    TokenDataset data = open_token_dataset(dir / "data");
    auto tokens = split == "val" ? data.val : data.train;
    // Not a multiple of T = 16 nor of 16 x batch 8: full batches, a short batch and a short window.
    ASSERT_NE((tokens->size() - 1) % 16, 0) << "the test needs a split with a partial last window";
    const std::string out = eval_json("--split " + split + " --batch-size 8");
    EXPECT_EQ(json_number(out, "tokens"), static_cast<double>(tokens->size() - 1)) << out;
    const double expected = reference_mean_loss(*model, tokens, tokens->size() - 1);
    EXPECT_NEAR(json_number(out, "loss"), expected, 2e-5) << split << ": " << out;
    EXPECT_NEAR(json_number(out, "perplexity"), std::exp(expected), 1e-4 * std::exp(expected)) << out;
    EXPECT_LT(expected, 0.9 * std::log(model->config().vocab_size)) << "the model should have learned";
  }
}

TEST_F(Eval, MaxTokensEqualsTheMeanOfTheTrainersEvalBatches) {
  // 5 eval batches of 4 windows of 16: the trainer's mean_eval_loss over exactly these windows.
  auto model = load_checkpoint_model(ckpt);
  auto val = open_token_dataset(dir / "data").val;
  const double trainer = mean_eval_loss(*model, EvalReader(val, 4, 16), 5, nullptr);
  const std::string out = eval_json("--max-tokens 320 --batch-size 3");
  EXPECT_EQ(json_number(out, "tokens"), 320.0) << out;
  EXPECT_NEAR(json_number(out, "loss"), trainer, 2e-5) << out;
  // A limit inside a window: the last window is cut short, its targets still counted once.
  const std::string cut = eval_json("--max-tokens 21");
  EXPECT_EQ(json_number(cut, "tokens"), 21.0) << cut;
  EXPECT_NEAR(json_number(cut, "loss"), reference_mean_loss(*model, val, 21), 2e-5) << cut;
}

TEST_F(Eval, TextLine) {
  auto r = run_nanodist("eval --ckpt " + ckpt + " --data " + (dir / "data") + " --max-tokens 64", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("eval: split val, tokens 64, loss ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(", perplexity "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tok/s, "), std::string::npos) << r.out;
}

TEST_F(Eval, BadInputIsOneErrorLine) {
  const std::string data = " --data " + (dir / "data");
  expect_cli_error(run_nanodist("eval" + data, dir.path()), "--ckpt");
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt, dir.path()), "--data");
  expect_cli_error(run_nanodist("eval --ckpt " + (dir / "nothing") + data, dir.path()), "no checkpoint");
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + " --data " + (dir / "nothing"), dir.path()), "does not exist");
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + data + " --split test", dir.path()), "--split");
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + data + " --dtype bf16", dir.path()), "needs --device cuda");
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + data + " --batch-size 0", dir.path()), "--batch-size");
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + data + " --max-tokens -1", dir.path()), "--max-tokens");

  // Another vocabulary: text with one character more.
  PrepareOptions options;
  options.out_dir = dir / "other";
  options.val_fraction = 0.2;
  prepare_text(testing::tiny_text(6000) + "Z", "other", options);
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + " --data " + (dir / "other"), dir.path()),
                   "vocabulary mismatch");
  // The same number of characters, one of them different: another tokenizer.
  std::string text = testing::tiny_text(6000);
  for (char& c : text)
    if (c == 'q') c = 'Q';
  prepare_text(text, "same size", options);
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + " --data " + (dir / "other"), dir.path()),
                   "tokenizer mismatch");

  // A split shorter than one window of block size 16 + 1.
  std::filesystem::copy(dir / "data", dir / "short");
  auto train = TokenFile::open(dir / "data/train.bin");
  write_token_file(dir / "short/val.bin", std::vector<int32_t>(train.tokens().begin(), train.tokens().begin() + 16),
                   train.vocab_size());
  expect_cli_error(run_nanodist("eval --ckpt " + ckpt + " --data " + (dir / "short"), dir.path()),
                   "fewer than one window");
}

TEST(EvalForeignData, LlmcValShardsAloneAndNanoGptFiles) {
  TempDir dir;
  const char* tiny = " --n-layer 1 --n-head 2 --n-embd 8 --block-size 8 --batch-size 2 --eval-interval 0"
                     " --eval-iters 1 --warmup-iters 1 --lr-decay-iters 2 --max-iters 2 ";
  // llm.c: trained on train + val shards; scored on a directory that holds only val shards (the
  // train split is neither read nor required).
  std::filesystem::create_directories(dir / "fw");
  std::filesystem::create_directories(dir / "fw_val");
  nd::testing::write_gpt2_shard(dir / "fw/fineweb_train_000001.bin", nd::testing::some_tokens(300, 50257, 1));
  nd::testing::write_gpt2_shard(dir / "fw/fineweb_val_000000.bin", nd::testing::some_tokens(100, 50257, 2));
  nd::testing::write_gpt2_shard(dir / "fw_val/fineweb_val_000000.bin", nd::testing::some_tokens(100, 50257, 2));
  nd::testing::write_gpt2_shard(dir / "fw_val/fineweb_val_000001.bin", nd::testing::some_tokens(45, 50257, 3));
  auto r = run_nanodist("train --data " + (dir / "fw") + " --out " + (dir / "run_fw") + tiny, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nanodist("eval --ckpt " + (dir / "run_fw") + " --data " + (dir / "fw_val") + " --json", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "tokens"), 144.0) << r.out;  // 145 tokens over both shards
  auto fw_model = load_checkpoint_model(newest_checkpoint(dir / "run_fw"));
  TokenDataset fw_val = open_token_dataset(dir / "fw_val", 0, DatasetSplits::Val);
  EXPECT_NEAR(json_number(r.out, "loss"), reference_mean_loss(*fw_model, fw_val.val, 144), 2e-5) << r.out;
  expect_cli_error(run_nanodist("eval --ckpt " + (dir / "run_fw") + " --data " + (dir / "fw_val") + " --split train",
                                dir.path()),
                   "no training shards");

  // nanoGPT: the vocabulary size comes from the checkpoint, no --vocab-size needed.
  std::filesystem::create_directories(dir / "ng");
  nd::testing::write_nanogpt_bin(dir / "ng/train.bin", nd::testing::some_tokens(500, 65, 4));
  nd::testing::write_nanogpt_bin(dir / "ng/val.bin", nd::testing::some_tokens(100, 65, 5));
  r = run_nanodist("train --data " + (dir / "ng") + " --out " + (dir / "run_ng") + tiny + "--vocab-size 65", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nanodist("eval --ckpt " + (dir / "run_ng") + " --data " + (dir / "ng") + " --json", dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_number(r.out, "tokens"), 99.0) << r.out;
  // A token past the checkpoint's vocabulary of 65 is the data's error line.
  nd::testing::write_nanogpt_bin(dir / "ng/val.bin", nd::testing::some_tokens(100, 70, 5));
  expect_cli_error(run_nanodist("eval --ckpt " + (dir / "run_ng") + " --data " + (dir / "ng"), dir.path()),
                   "outside the vocabulary of size 65");
}

}  // namespace
}  // namespace nd::train
