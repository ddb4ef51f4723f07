// Activation recomputation on the CPU: with dropout, over two accumulated micro-batches, the losses
// and every gradient of --recompute attention and block equal the recorded model's bit for bit
// (same kernels, same order; the block's rerun skipping its tail), also under the ablation
// switches; each parameter's hook fires once per backward; evaluation is
// untouched; and the bytes autograd keeps after the forward (and the step's peak) fall: block <
// attention < none, attention by exactly the attention's row statistics.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "autograd/checkpoint.h"
#include "nn/gpt.h"
#include "tensor/memory_stats.h"
#include "tests/nn/tp_test_util.h"

namespace nd::nn {
namespace {

const Recompute kModes[] = {Recompute::None, Recompute::Attention, Recompute::Block};

const char* name_of(Recompute r) {
  return r == Recompute::None ? "none" : r == Recompute::Attention ? "attention" : "block";
}

GPTConfig small_config(Recompute recompute, float dropout = 0.1f) {
  GPTConfig c;
  c.n_layer = 3;
  c.n_head = 4;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = 29;
  c.dropout = dropout;
  c.recompute = recompute;
  return c;
}

struct Result {
  std::vector<double> losses;
  std::map<std::string, Tensor> grads;
  uint64_t dropout_offset = 0;
};

// Two micro-batches accumulated into the gradients, each seeded with 1/2 like the trainer's.
Result train_micro_batches(const GPTConfig& c) {
  Generator init(7);
  GPT model(c, init);
  Generator dropout_gen(99);
  Result r;
  for (int micro = 0; micro < 2; ++micro) {
    Tensor idx = test::random_ids({3, c.block_size}, c.vocab_size, 10 + micro);
    Tensor targets = test::random_ids({3, c.block_size}, c.vocab_size, 20 + micro);
    targets.data<int32_t>()[5] = -1;
    GPT::Output out = model.forward(idx, &targets, dropout_gen);
    out.loss.backward(Tensor::full({}, 0.5, DType::F32, Device::cpu()));
    r.losses.push_back(out.loss.data().item());
  }
  for (const auto& [name, p] : model.named_parameters()) r.grads[name] = p.grad().clone();
  r.dropout_offset = dropout_gen.offset();
  return r;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void expect_equal_bit_for_bit(const Result& got, const Result& want, const std::string& what) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t i = 0; i < want.losses.size(); ++i)
    EXPECT_EQ(got.losses[i], want.losses[i]) << what << ": loss of micro-batch " << i;
  EXPECT_EQ(got.dropout_offset, want.dropout_offset) << what << ": dropout counters drawn";
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (const auto& [name, g] : want.grads) EXPECT_TRUE(same_bits(got.grads.at(name), g)) << what << ": " << name;
}

TEST(Recompute, GradientsEqualTheRecordedModelBitForBit) {
  const Result want = train_micro_batches(small_config(Recompute::None));
  for (Recompute mode : {Recompute::Attention, Recompute::Block})
    expect_equal_bit_for_bit(train_micro_batches(small_config(mode)), want, name_of(mode));
}

TEST(Recompute, BitForBitUnderTheAblations) {
  for (int ablation = 0; ablation < 3; ++ablation) {
    auto config = [&](Recompute mode) {
      GPTConfig c = small_config(mode);
      c.use_residual = ablation != 1;
      c.use_layernorm = ablation != 2;
      c.bias = ablation != 2;
      return c;
    };
    const Result want = train_micro_batches(config(Recompute::None));
    for (Recompute mode : {Recompute::Attention, Recompute::Block})
      expect_equal_bit_for_bit(train_micro_batches(config(mode)), want,
                               std::string(name_of(mode)) + " ablation " + std::to_string(ablation));
  }
}

TEST(Recompute, EachParameterHookFiresOncePerBackward) {
  for (Recompute mode : kModes) {
    Generator init(7);
    GPT model(small_config(mode), init);
    std::map<std::string, int> fired;
    for (auto& [name, p] : model.named_parameters()) {
      Variable param = p;
      param.set_grad_hook([&fired, name = name](Variable&) { ++fired[name]; });
    }
    Generator dropout_gen(1);
    Tensor idx = test::random_ids({2, 16}, 29, 3), targets = test::random_ids({2, 16}, 29, 4);
    model.forward(idx, &targets, dropout_gen).loss.backward();
    for (const auto& [name, p] : model.named_parameters()) EXPECT_EQ(fired[name], 1) << name_of(mode) << " " << name;
  }
}

TEST(Recompute, EvaluationIsUntouched) {
  Tensor idx = test::random_ids({2, 16}, 29, 3);
  std::vector<Tensor> logits;
  for (Recompute mode : kModes) {
    Generator init(7), dropout_gen(1);
    GPT model(small_config(mode), init);
    model.set_training(false);
    NoGradGuard eval;
    logits.push_back(model.forward(idx, nullptr, dropout_gen).logits.data());
  }
  EXPECT_TRUE(same_bits(logits[1], logits[0]));
  EXPECT_TRUE(same_bits(logits[2], logits[0]));
}

// The rerun must draw the counters the forward drew: a region that draws more the second time is
// caught instead of training with other masks.
TEST(Recompute, ARerunThatDrawsOtherCountersIsAnError) {
  Variable x(Tensor::full({4}, 1.0), true);
  Generator gen(1);
  int runs = 0;
  Variable y = ops::checkpoint(
      [&runs](const Variable& in, Generator& g) {
        Variable out = ops::dropout(in, 0.5f, g, true);
        return ++runs > 1 ? ops::dropout(out, 0.5f, g, true) : out;
      },
      x, {}, gen);
  try {
    y.backward(Tensor::full({4}, 1.0));
    ADD_FAILURE() << "expected nd::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the rerun drew"), std::string::npos) << e.what();
  }
}

// Bytes of host tensors alive after the forward beyond those before it (what the graph keeps, plus
// the logits and loss), and the most alive at once during forward and backward.
struct Footprint {
  size_t saved = 0, peak = 0;
};

Footprint footprint(Recompute mode, const GPTConfig& shape, int64_t B) {
  GPTConfig c = shape;
  c.recompute = mode;
  Generator init(7), dropout_gen(1);
  GPT model(c, init);
  Tensor idx = test::random_ids({B, c.block_size}, c.vocab_size, 3);
  Tensor targets = test::random_ids({B, c.block_size}, c.vocab_size, 4);
  for (auto& p : model.parameters()) p.grad_slot();  // the gradient buffers exist before the count
  const size_t before = host_memory_stats().current_bytes;
  reset_peak_host_memory();
  Footprint f;
  {
    GPT::Output out = model.forward(idx, &targets, dropout_gen);
    f.saved = host_memory_stats().current_bytes - before;
    out.loss.backward();
  }
  f.peak = host_memory_stats().peak_bytes - before;
  return f;
}

TEST(Recompute, SavedMemoryFalls) {
  // Activations dominate: 4 layers of (8, 64, 64) with 8 heads, a vocabulary of 29.
  GPTConfig c = small_config(Recompute::None);
  c.n_layer = 4;
  c.n_head = 8;
  c.n_embd = 64;
  c.block_size = 64;
  const int64_t B = 8;
  const Footprint none = footprint(Recompute::None, c, B);
  const Footprint attention = footprint(Recompute::Attention, c, B);
  const Footprint block = footprint(Recompute::Block, c, B);
  EXPECT_LT(block.saved, attention.saved);
  EXPECT_LT(attention.saved, none.saved);
  // The attention core keeps nothing but its input: its output is c_proj's saved input either way,
  // so what goes is each layer's log-sum-exp rows (B, heads, T) in f32.
  EXPECT_EQ(none.saved - attention.saved, static_cast<size_t>(c.n_layer * B * c.n_head * c.block_size * 4));
  // A block keeps its input (B, T, C) instead of its activations, several times that.
  EXPECT_LT(block.saved * 3, none.saved);
  EXPECT_LT(block.peak, attention.peak);
  EXPECT_LE(attention.peak, none.peak);
  std::printf("saved bytes after forward: none %zu, attention %zu, block %zu; peak: %zu, %zu, %zu\n", none.saved,
              attention.saved, block.saved, none.peak, attention.peak, block.peak);
}

}  // namespace
}  // namespace nd::nn
