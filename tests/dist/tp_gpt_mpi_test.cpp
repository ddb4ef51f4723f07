// The tensor-parallel GPT under mpirun, for every tp that divides the world (with np 4 also
// tp 2 in two groups of consecutive ranks): built from the same seed it holds exactly the slices
// of the tp = 1 model; its loss equals the tp = 1 loss and its gradients, gathered over the
// group, the tp = 1 gradients (f32, 1e-5), without and with dropout; the padded vocabulary rule;
// and the errors for a tp that does not divide the model.
#include <gtest/gtest.h>

#include <map>

#include "dist/comm/world.h"
#include "dist/parallel/parallelize.h"
#include "nn/gpt.h"
#include "tests/dist/mpi_test_world.h"
#include "tests/nn/tp_test_util.h"

namespace nd::nn {
namespace {

using dist::TensorParallel;

constexpr double kAtol = 2e-6, kRtol = 2e-5;

GPTConfig tiny_config(int tp, float dropout) { return test::tiny_tp_gpt_config(tp, dropout); }

struct Run {
  double loss;
  NamedParameters params;
};

Run run_model(const GPT& model, const Tensor& idx, const Tensor& targets) {
  Generator dropout_gen(99);
  GPT::Output out = model.forward(idx, &targets, dropout_gen);
  out.loss.backward();
  return {out.loss.data().item(), model.named_parameters()};
}

void check_equals_one_rank(const TensorParallel& tp, float dropout) {
  const GPTConfig c = tiny_config(tp.size(), dropout);
  Generator g1(3), g2(3);
  GPT full(c, g1);
  std::unique_ptr<GPT> made = dist::parallelize(c, g2, Device::cpu(), DType::F32, {tp, {}});
  const GPT& split = *made;
  Tensor idx = test::random_ids({3, 8}, c.vocab_size, 4);
  Tensor targets = test::random_ids({3, 8}, c.vocab_size, 5);
  targets.data<int32_t>()[7] = -1;
  Run want = run_model(full, idx, targets);
  Run got = run_model(split, idx, targets);
  EXPECT_NEAR(got.loss, want.loss, kRtol * std::fabs(want.loss));
  const NamedParamInfos infos = split.named_param_infos();
  ASSERT_EQ(got.params.size(), want.params.size());
  for (size_t i = 0; i < want.params.size(); ++i) {
    const std::string& name = want.params[i].first;
    ASSERT_EQ(got.params[i].first, name);
    const Variable& p = got.params[i].second;
    EXPECT_EQ(test::count_far_from_shard(p.data(), want.params[i].second.data(), infos[i].second.split, tp.rank(),
                                         tp.size(), 0, 0, name + " value"),
              0);
    Tensor gathered = dist::gather_full_tensor(*tp.comm, p.grad(), infos[i].second.split);
    EXPECT_EQ(test::count_far(gathered, want.params[i].second.grad(), kAtol, kRtol, name + " grad"), 0);
  }
}

TEST(TensorParallelGPT, EqualsTheOneRankModel) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) { check_equals_one_rank(tp, 0.0f); });
}

TEST(TensorParallelGPT, EqualsTheOneRankModelWithDropout) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) { check_equals_one_rank(tp, 0.1f); });
}

TEST(TensorParallelGPT, ShardSpecsNameTheSplit) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) {
    Generator gen(1);
    std::unique_ptr<GPT> made = dist::parallelize(tiny_config(tp.size(), 0.0f), gen, Device::cpu(), DType::F32, {tp, {}});
    const GPT& model = *made;
    std::map<std::string, ShardSpec> specs;
    for (const auto& [name, info] : model.named_param_infos()) specs[name] = info.split;
    auto is = [&](const char* name, int dim, int parts) {
      EXPECT_EQ(specs.at(name).dim, dim) << name;
      EXPECT_EQ(specs.at(name).parts, parts) << name;
    };
    is("transformer.wte.weight", 0, 1);
    is("transformer.wpe.weight", -1, 1);
    is("transformer.h.0.attn.c_attn.weight", 0, 3);
    is("transformer.h.0.attn.c_attn.bias", 0, 3);
    is("transformer.h.0.attn.c_proj.weight", 1, 1);
    is("transformer.h.0.attn.c_proj.bias", -1, 1);
    is("transformer.h.1.mlp.c_fc.weight", 0, 1);
    is("transformer.h.1.mlp.c_proj.weight", 1, 1);
    is("transformer.h.1.ln_2.weight", -1, 1);
    is("transformer.ln_f.bias", -1, 1);
    // The whole model's FLOPs, whatever the split.
    Generator gen1(1);
    GPT one(tiny_config(tp.size(), 0.0f), gen1);
    EXPECT_EQ(model.flops_per_token(8), one.flops_per_token(8));
  });
}

TEST(TensorParallelGPT, PaddedVocabularyRule) {
  EXPECT_EQ(padded_vocab_rows(65, 1, false), 65);
  EXPECT_EQ(padded_vocab_rows(65, 2, false), 256);
  EXPECT_EQ(padded_vocab_rows(65, 1, true), 128);
  EXPECT_EQ(padded_vocab_rows(50257, 1, true), 50304);
  EXPECT_EQ(padded_vocab_rows(50257, 2, true), 50432);
  EXPECT_EQ(padded_vocab_rows(256, 2, true), 256);
}

void expect_construction_error(const GPTConfig& c, const TensorParallel& tp, const std::string& part) {
  Generator gen(1);
  try {
    dist::parallelize(c, gen, Device::cpu(), DType::F32, {tp, {}});
    ADD_FAILURE() << "expected nd::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(TensorParallelGPT, ATpThatDoesNotDivideTheModelIsAnError) {
  test::for_each_tp_group(test::mpi_world(), [](const TensorParallel& tp) {
    GPTConfig c = tiny_config(tp.size(), 0.0f);
    c.padded_vocab_size = 0;  // 65 rows
    expect_construction_error(c, tp, "does not divide the 65 vocabulary rows");
    c = tiny_config(tp.size(), 0.0f);
    c.n_head = 5;
    c.n_embd = 5 * 12;
    expect_construction_error(c, tp, "does not divide n_head 5");
  });
}

}  // namespace
}  // namespace nd::nn
