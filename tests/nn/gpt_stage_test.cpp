// GPT stages (nn/gpt.h GPTStage): a stage holds exactly its share of the whole model's parameters,
// by name and bit for bit, leaves the generator where the whole model does, and running the stages
// one after another (embed + blocks on the first, blocks + head on the last, the hidden state
// handed over) gives the whole model's loss and the same gradients.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "nn/gpt.h"
#include "nn/tiny_gpt.h"

namespace nd::nn {
namespace {

GPTConfig four_layers() {
  GPTConfig c = testing::tiny_gpt_config();
  c.n_layer = 4;
  return c;
}

std::map<std::string, Variable> by_name(const GPT& m) {
  std::map<std::string, Variable> out;
  for (const auto& [name, p] : m.named_parameters()) out.emplace(name, p);
  return out;
}

TEST(GPTStage, AStageHoldsItsShareOfTheWholeModel) {
  const GPTConfig c = four_layers();
  Generator whole_gen(7);
  GPT whole(c, whole_gen);
  const auto want = by_name(whole);
  for (GPTStage stage : {GPTStage{0, 2, {}}, GPTStage{2, 4, {}}, GPTStage{1, 3, {}}, GPTStage{3, -1, {}}}) {
    SCOPED_TRACE("blocks " + std::to_string(stage.first_block) + " to " + std::to_string(stage.end_block));
    Generator gen(7);
    GPT part(c, gen, Device::cpu(), DType::F32, stage);
    EXPECT_EQ(gen.offset(), whole_gen.offset());
    EXPECT_EQ(part.is_first_stage(), stage.first_block == 0);
    EXPECT_EQ(part.is_last_stage(), stage.end_block == -1 || stage.end_block == c.n_layer);
    const auto got = by_name(part);
    EXPECT_EQ(got.count("transformer.wte.weight"), part.is_first_stage() || part.is_last_stage() ? 1u : 0u);
    EXPECT_EQ(got.count("transformer.wpe.weight"), part.is_first_stage() ? 1u : 0u);
    EXPECT_EQ(got.count("transformer.ln_f.weight"), part.is_last_stage() ? 1u : 0u);
    for (const auto& [name, p] : got) {
      ASSERT_TRUE(want.count(name)) << name;
      EXPECT_EQ(p.data().to_double_vector(), want.at(name).data().to_double_vector()) << name;
    }
  }
  EXPECT_THROW(GPT(c, whole_gen, Device::cpu(), DType::F32, GPTStage{2, 2, {}}), Error);
}

TEST(GPTStage, TwoStagesInTurnGiveTheWholeModelsLossAndGradients) {
  const GPTConfig c = four_layers();
  Generator g1(3), g2(3), g3(3), dropout(1);
  GPT whole(c, g1), first(c, g2, Device::cpu(), DType::F32, GPTStage{0, 2, {}}), last(c, g3, Device::cpu(), DType::F32, GPTStage{2, 4, {}});
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{1, 5, 9, 2, 0, 7, 3, 3}, {2, 4});
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{5, 9, 2, 0, 7, 3, 3, 1}, {2, 4});
  GPT::Output want = whole.forward(idx, &targets, dropout);
  want.loss.backward();
  // The pipeline's hand-over: the first stage's output as the last stage's input leaf, and its
  // gradient sent back as the first stage's backward seed.
  Variable hidden = first.blocks(first.embed(idx, dropout), dropout);
  Variable received(hidden.data().clone(), true);
  GPT::Output got = last.head(last.blocks(received, dropout), &targets);
  EXPECT_EQ(got.loss.data().item(), want.loss.data().item());
  got.loss.backward();
  hidden.backward(received.grad());
  auto whole_params = by_name(whole);
  for (const GPT* stage : {&first, &last})
    for (const auto& [name, p] : stage->named_parameters()) {
      if (name == "transformer.wte.weight") continue;  // tied: the pipeline sums the two stages' parts
      EXPECT_EQ(p.grad().to_double_vector(), whole_params.at(name).grad().to_double_vector()) << name;
    }
  std::vector<double> tied = by_name(first).at("transformer.wte.weight").grad().to_double_vector();
  const std::vector<double> head_part = by_name(last).at("transformer.wte.weight").grad().to_double_vector();
  const std::vector<double> whole_tied = whole_params.at("transformer.wte.weight").grad().to_double_vector();
  for (size_t i = 0; i < tied.size(); ++i) EXPECT_NEAR(tied[i] + head_part[i], whole_tied[i], 1e-6) << i;
}

}  // namespace
}  // namespace nd::nn
