// HellaSwag-style scoring: each ending's loss over its own tokens against the model's fused
// cross-entropy (the mean loss of the whole row times its targets, less that of the context alone:
// a causal model predicts the context's tokens the same with or without the ending after them);
// the chosen endings and the accuracy against labels set from those losses; the jsonl reader.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "common/expect_input_error.h"
#include "data/char_tokenizer.h"
#include "nn/tiny_gpt.h"
#include "train/multiple_choice.h"

namespace nd::train {
namespace {

nn::GPTConfig tiny() {
  nn::GPTConfig c = nn::testing::tiny_gpt_config();
  c.block_size = 12;
  return c;
}

// The fused loss summed over a row's targets (ids[1..n)).
double row_loss_sum(const nn::GPT& model, const std::vector<int32_t>& ids) {
  NoGradGuard no_grad;
  Generator unused(0, 0);
  const int64_t T = static_cast<int64_t>(ids.size()) - 1;
  Tensor idx = Tensor::from_vector(std::vector<int32_t>(ids.begin(), ids.end() - 1), {1, T});
  Tensor targets = Tensor::from_vector(std::vector<int32_t>(ids.begin() + 1, ids.end()), {1, T});
  return model.forward(idx, &targets, unused).loss.data().item() * static_cast<double>(T);
}

TEST(MultipleChoice, EndingLossIsTheRowLossLessTheContexts) {
  Generator init(5);
  nn::GPT model(tiny(), init, Device::cpu(), DType::F32);
  model.set_training(false);
  const std::vector<int32_t> context = {1, 4, 2, 7};
  const std::vector<std::vector<int32_t>> endings = {{3}, {9, 9, 2}, {0, 5}, {10, 1, 1, 6}};
  const ChoiceLosses got = score_endings(model, context, endings);
  ASSERT_EQ(got.sum.size(), endings.size());
  const double context_only = row_loss_sum(model, context);
  for (size_t r = 0; r < endings.size(); ++r) {
    std::vector<int32_t> row = context;
    row.insert(row.end(), endings[r].begin(), endings[r].end());
    const double want = row_loss_sum(model, row) - context_only;
    EXPECT_NEAR(got.sum[r], want, 1e-4 * std::abs(want)) << "ending " << r;
    EXPECT_NEAR(got.mean[r], want / static_cast<double>(endings[r].size()), 1e-4 * std::abs(want)) << r;
  }
}

TEST(MultipleChoice, ALongRowKeepsTheContextsTail) {
  Generator init(6);
  nn::GPT model(tiny(), init, Device::cpu(), DType::F32);
  model.set_training(false);
  std::vector<int32_t> context;
  for (int i = 0; i < 20; ++i) context.push_back(i % 11);
  const std::vector<int32_t> tail(context.end() - 10, context.end());  // block 12: 10 + 3 = 13 tokens
  const ChoiceLosses whole = score_endings(model, context, {{1, 2, 3}});
  const ChoiceLosses cut = score_endings(model, tail, {{1, 2, 3}});
  EXPECT_DOUBLE_EQ(whole.sum[0], cut.sum[0]);
}

// Labels set to the ending of least mean loss (as computed here) give acc_norm 1; moved to another
// ending, 0.
TEST(MultipleChoice, AccuracyCountsTheChosenEndings) {
  Generator init(7);
  nn::GPT model(tiny(), init, Device::cpu(), DType::F32);
  model.set_training(false);
  std::vector<unsigned char> symbols;
  for (const char* c = " abcdefghi"; *c; ++c) symbols.push_back(static_cast<unsigned char>(*c));
  const CharTokenizer tokenizer(symbols);
  std::vector<ChoiceExample> examples = {{"abc", {"de", "f", "ghi", "a"}, 0}, {"ihg fe", {"d", "cb", "a", "ba"}, 0},
                                         {"b", {"aa", "bb", "cc", "dd"}, 0}};
  for (ChoiceExample& e : examples) {
    std::vector<std::vector<int32_t>> endings;
    for (const std::string& ending : e.endings) endings.push_back(tokenizer.encode(" " + ending));
    const ChoiceLosses l = score_endings(model, tokenizer.encode(e.context), endings);
    e.label = static_cast<int>(std::min_element(l.mean.begin(), l.mean.end()) - l.mean.begin());
  }
  ChoiceAccuracy a = score_examples(model, examples, tokenizer, nullptr);
  EXPECT_EQ(a.examples, 3);
  EXPECT_EQ(a.correct_norm, 3);
  for (ChoiceExample& e : examples) e.label = (e.label + 1) % 4;
  a = score_examples(model, examples, tokenizer, nullptr);
  EXPECT_EQ(a.correct_norm, 0);
}

TEST(MultipleChoice, ReadsHellaSwagLinesAndRejectsBadOnes) {
  const std::string path = "multiple_choice_test.jsonl";
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("{\"ctx\": \"A man\", \"endings\": [\"runs.\", \"sits.\", \"flies.\", \"eats.\"], \"label\": 2}\n\n"
        "{\"ctx\": \"B\", \"endings\": [\"x\", \"y\"], \"label\": \"1\", \"ind\": 4}\n");
  const std::vector<ChoiceExample> e = read_hellaswag(path);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].context, "A man");
  EXPECT_EQ(e[0].endings[2], "flies.");
  EXPECT_EQ(e[0].label, 2);
  EXPECT_EQ(e[1].label, 1);
  write("{\"ctx\": \"A\", \"endings\": [\"x\", \"y\"], \"label\": 2}\n");
  testing::expect_input_error([&] { read_hellaswag(path); }, path + ":1");
  write("{\"ctx\": \"A\", \"label\": 0}\n");
  testing::expect_input_error([&] { read_hellaswag(path); }, "endings");
  write("not json\n");
  testing::expect_input_error([&] { read_hellaswag(path); }, path + ":1");
  write("\n");
  testing::expect_input_error([&] { read_hellaswag(path); }, "no examples");
  std::remove(path.c_str());
  testing::expect_input_error([&] { read_hellaswag("no_such.jsonl"); }, "no_such.jsonl");
}

}  // namespace
}  // namespace nd::train
