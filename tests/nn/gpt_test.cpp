// The GPT as a whole: parameter names and counts, GPT-2 initialisation, a float64 gradient
// check of every parameter under all four ablation combinations, and overfitting one batch.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/gradcheck.h"
#include "kernels/cpu/adamw.h"
#include "nn/gpt.h"
#include "nn/tiny_gpt.h"

namespace nd::nn {
namespace {

using testing::tiny_gpt_config;
GPTConfig tiny_config() { return tiny_gpt_config(); }

Tensor random_tokens(const Shape& shape, int vocab, uint64_t seed) {
  Generator g(seed);
  std::vector<int32_t> ids(shape_numel(shape));
  for (auto& id : ids) id = static_cast<int32_t>(g.next_u64() % vocab);
  return Tensor::from_vector(ids, shape);
}

std::map<std::string, Variable> by_name(const GPT& model) {
  std::map<std::string, Variable> out;
  for (auto& [name, p] : model.named_parameters()) out[name] = p;
  return out;
}

TEST(GPT, ParameterNamesAndCountFollowNanoGPT) {
  GPTConfig c = tiny_config();
  Generator gen(1);
  GPT model(c, gen);
  auto params = by_name(model);
  for (const char* name : {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                           "transformer.h.1.attn.c_attn.weight", "transformer.h.1.attn.c_proj.bias",
                           "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_proj.weight",
                           "transformer.h.1.ln_2.bias", "transformer.ln_f.weight"})
    EXPECT_TRUE(params.count(name)) << name;
  EXPECT_EQ(params.size(), 2u + 12u * c.n_layer + 2u);
  const int64_t C = c.n_embd, L = c.n_layer;
  int64_t per_block = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (4 * C * C + 4 * C) + (4 * C * C + C);
  EXPECT_EQ(model.num_parameters(), c.vocab_size * C + c.block_size * C + L * per_block + 2 * C);
  EXPECT_EQ(params["transformer.h.0.attn.c_attn.weight"].shape(), (Shape{3 * C, C}));
}

TEST(GPT, InitialisationIsGPT2s) {
  GPTConfig c;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 128;
  c.vocab_size = 512;
  c.padded_vocab_size = 640;
  Generator gen(3);
  GPT model(c, gen);
  auto params = by_name(model);
  auto stddev = [](const Tensor& t) {
    std::vector<double> v = t.to_double_vector();
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= v.size();
    for (double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / v.size());
  };
  EXPECT_NEAR(stddev(params["transformer.h.0.mlp.c_fc.weight"].data()), 0.02, 0.001);
  EXPECT_NEAR(stddev(params["transformer.h.2.attn.c_proj.weight"].data()), 0.02 / std::sqrt(8.0), 0.0005);
  EXPECT_NEAR(stddev(params["transformer.wte.weight"].data().narrow(0, 512)), 0.02, 0.001);
  for (double v : params["transformer.wte.weight"].data().narrow(512, 128).to_double_vector()) EXPECT_EQ(v, 0.0);
  for (double v : params["transformer.h.1.ln_1.weight"].data().to_double_vector()) EXPECT_EQ(v, 1.0);
  for (double v : params["transformer.h.1.mlp.c_fc.bias"].data().to_double_vector()) EXPECT_EQ(v, 0.0);
}

TEST(GPT, NoLayerNormHasNoLayerNormParameters) {
  GPTConfig c = tiny_config();
  c.use_layernorm = false;
  Generator gen(1);
  GPT model(c, gen);
  for (auto& [name, p] : model.named_parameters()) EXPECT_EQ(name.find("ln_"), std::string::npos) << name;
}

struct Ablation {
  bool layernorm;
  bool residual;
  float dropout;
};

class GPTGradcheck : public ::testing::TestWithParam<Ablation> {};

TEST_P(GPTGradcheck, EveryParameterMatchesCentralDifferences) {
  GPTConfig c = tiny_config();
  c.use_layernorm = GetParam().layernorm;
  c.use_residual = GetParam().residual;
  c.dropout = GetParam().dropout;
  Generator init(11);
  GPT model(c, init, Device::cpu(), DType::F64);
  Tensor idx = random_tokens({2, 8}, c.vocab_size, 5);
  Tensor targets = random_tokens({2, 8}, c.vocab_size, 6);
  targets.data<int32_t>()[3] = -1;  // an ignored position
  auto loss_fn = [&] {
    Generator dropout_gen(99);  // the same mask on every evaluation
    return model.forward(idx, &targets, dropout_gen).loss;
  };
  test::GradcheckOptions opt;
  opt.max_elements_per_parameter = 40;
  EXPECT_EQ(test::gradcheck_parameters(loss_fn, model.parameters(), opt), 0);
}

INSTANTIATE_TEST_SUITE_P(Ablations, GPTGradcheck,
                         ::testing::Values(Ablation{true, true, 0.0f}, Ablation{false, true, 0.0f},
                                           Ablation{true, false, 0.0f}, Ablation{false, false, 0.0f},
                                           Ablation{true, true, 0.25f}),
                         [](const auto& info) {
                           return std::string(info.param.layernorm ? "LN" : "NoLN") +
                                  (info.param.residual ? "Res" : "NoRes") + (info.param.dropout > 0 ? "Dropout" : "");
                         });

TEST(GPT, OverfitsOneBatch) {
  GPTConfig c = tiny_config();
  Generator init(21);
  GPT model(c, init);
  // Next-token targets of random sequences whose first tokens differ, so every prefix is unique
  // and the batch can be fitted exactly.
  Tensor tokens = random_tokens({4, 9}, c.vocab_size, 7);
  for (int b = 0; b < 4; ++b) tokens.data<int32_t>()[b * 9] = b;
  std::vector<int32_t> in, next;
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < 8; ++t) {
      in.push_back(tokens.data<int32_t>()[b * 9 + t]);
      next.push_back(tokens.data<int32_t>()[b * 9 + t + 1]);
    }
  Tensor idx = Tensor::from_vector(in, {4, 8});
  Tensor targets = Tensor::from_vector(next, {4, 8});
  std::vector<Variable> params = model.parameters();
  std::vector<Tensor> m, v;
  for (auto& p : params) {
    m.push_back(Tensor::zeros(p.shape()));
    v.push_back(Tensor::zeros(p.shape()));
  }
  Generator dropout_gen(0);
  double loss = 0;
  for (int step = 1; step <= 300; ++step) {
    model.zero_grad();
    Variable l = model.forward(idx, &targets, dropout_gen).loss;
    loss = l.data().item();
    if (loss < 0.05) break;
    l.backward();
    for (size_t i = 0; i < params.size(); ++i)
      cpu::adamw_update(params[i].data().data<float>(), params[i].grad().data<float>(), m[i].data<float>(),
                        v[i].data<float>(), params[i].data().numel(), 1e-2f, 0.9f, 0.99f, 1e-8f, 0.0f, step, 1.0f);
  }
  EXPECT_LT(loss, 0.05);
}

TEST(GPT, BadInputIsAnError) {
  GPTConfig c = tiny_config();
  Generator gen(1);
  GPT model(c, gen);
  Generator dropout_gen(0);
  EXPECT_THROW(model.forward(random_tokens({2, 9}, c.vocab_size, 1), nullptr, dropout_gen), Error);
  EXPECT_THROW(model.forward(random_tokens({18}, c.vocab_size, 1), nullptr, dropout_gen), Error);
  GPTConfig bad = c;
  bad.n_head = 3;
  try {
    GPT m(bad, gen);
    FAIL() << "n_embd 16 with 3 heads must be rejected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nd::nn
