// `nanodist eval` under mpirun: N ranks share the windows of a split and rank 0 alone prints the
// total, which equals the one-rank score of the same checkpoint; the checkpoint comes from a
// tensor-parallel run (tp 2 where it divides the ranks) and is scored whole; bad input is the same
// input error on every rank.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/run_words.h"
#include "data/token_dataset.h"
#include "tensor/error.h"
#include "train/ckpt/checkpoint.h"
#include "train/ckpt/checkpoint_model.h"
#include "train/mpi_data_fixture.h"
#include "train/split_eval.h"
#include "train/trainer.h"

namespace nd::train {
namespace {

using cli::testing::input_error;
using cli::testing::run_words;

// What `nanodist WORDS...` printed on this rank.
std::string stdout_of(const std::vector<std::string>& words) {
  std::ostringstream captured;
  std::streambuf* original = std::cout.rdbuf(captured.rdbuf());
  int status = -1;
  try {
    status = run_words(words);
  } catch (...) {
    std::cout.rdbuf(original);
    throw;
  }
  std::cout.rdbuf(original);
  EXPECT_EQ(status, 0);
  return captured.str();
}

double json_number(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key << " missing in " << json;
  return at == std::string::npos ? -1.0 : std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

class EvalMpi : public testing::MpiDataTest {};

TEST_F(EvalMpi, RanksShareTheSplitAndRankZeroPrintsTheOneRankTotal) {
  const int tp = comm_->size() % 2 == 0 ? 2 : 1;
  TrainConfig config = testing::tiny_config(root_ + "/data", root_ + "/run");
  config.parallel.tp = tp;
  config.data.batch_size = 2;
  config.schedule.max_iters = 6;
  RunContext context;
  context.comm = comm_.get();
  run_training(config, context);

  const std::vector<std::string> words = {"eval", "--ckpt", root_ + "/run", "--data", root_ + "/data",
                                          "--batch-size", "3", "--json"};
  const std::string out = stdout_of(words);
  if (comm_->rank() != 0) {
    EXPECT_TRUE(out.empty()) << "rank " << comm_->rank() << " printed: " << out;
    return;
  }
  // One rank alone: the whole model from the checkpoint, every window on this rank.
  const std::string path = newest_checkpoint(root_ + "/run");
  CheckpointData data = read_checkpoint(path);
  nn::GPTConfig model_config = model_config_from_attributes(data.config, path);
  model_config.padded_vocab_size = 0;
  Generator gen(0);
  nn::GPT model(model_config, gen);
  load_model(data, path, model, nullptr);
  model.set_training(false);
  auto val = open_token_dataset(root_ + "/data").val;
  SplitScore one_rank = score_split(model, *val, 0, 3, nullptr);
  EXPECT_EQ(json_number(out, "tokens"), static_cast<double>(val->size() - 1)) << out;
  EXPECT_EQ(one_rank.tokens, val->size() - 1);
  EXPECT_NEAR(json_number(out, "loss"), one_rank.mean_loss(), 2e-5)
      << out << " on " << comm_->size() << " ranks (tp " << tp << " checkpoint)";
}

TEST_F(EvalMpi, BadInputIsAnInputErrorOnEveryRank) {
  EXPECT_TRUE(input_error({"eval", "--ckpt", root_ + "/no_run", "--data", root_ + "/data"}));
  EXPECT_TRUE(input_error({"eval", "--ckpt", root_ + "/no_run", "--data", root_ + "/data", "--split", "test"}));
}

}  // namespace
}  // namespace nd::train
