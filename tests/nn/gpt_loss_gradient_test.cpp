// A tiny GPT trained the way the trainer's step runs it (micro-steps seeded with 1 / grad_accum),
// with the loss told its seed (the cross_entropy_grad fusion, logits overwritten) against the
// plain forward: the same micro-step losses and every parameter gradient, for grad_accum 1 and 3,
// with ignored targets, padded vocabulary and dropout; and seeded with another tensor (the fallback).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nn/gpt.h"
#include "nn/tiny_gpt.h"

namespace nd::nn {
namespace {

// The nn tests' tiny GPT with padding columns and dropout, both of which the fused loss must handle.
GPTConfig tiny_config() {
  GPTConfig c = testing::tiny_gpt_config();
  c.padded_vocab_size = 16;
  c.dropout = 0.1f;
  return c;
}

struct MicroBatch {
  Tensor idx, targets;
};

std::vector<MicroBatch> micro_batches(int count, int vocab, uint64_t seed) {
  Generator g(seed);
  std::vector<MicroBatch> out;
  for (int m = 0; m < count; ++m) {
    std::vector<int32_t> idx(2 * 8), targets(2 * 8);
    for (size_t i = 0; i < idx.size(); ++i) {
      idx[i] = static_cast<int32_t>(g.next_u64() % vocab);
      targets[i] = i % 5 == 2 ? -1 : static_cast<int32_t>(g.next_u64() % vocab);
    }
    out.push_back({Tensor::from_vector(idx, {2, 8}), Tensor::from_vector(targets, {2, 8})});
  }
  return out;
}

// How the loss is seeded and told.
enum class Seeding { Plain, Announced, AnotherTensor };

struct Result {
  std::vector<double> losses;
  std::vector<std::vector<double>> grads;
};

// One step's forward and backward passes over `batches`, each loss seeded with 1 / count.
Result run_step(const std::vector<MicroBatch>& batches, Seeding seeding) {
  Generator init(7), dropout_gen(8);
  GPT model(tiny_config(), init);
  const double scale = 1.0 / static_cast<double>(batches.size());
  const Tensor loss_scale = Tensor::full(Shape{}, scale, DType::F32);
  const ops::LossGradient told{loss_scale, true};
  Result r;
  model.zero_grad();
  for (const MicroBatch& b : batches) {
    GPT::Output out = model.forward(b.idx, &b.targets, dropout_gen, seeding == Seeding::Plain ? nullptr : &told);
    EXPECT_EQ(out.logits.defined(), seeding == Seeding::Plain) << "overwritten logits must be undefined";
    r.losses.push_back(out.loss.data().item());
    out.loss.backward(seeding == Seeding::AnotherTensor ? Tensor::full(Shape{}, scale, DType::F32) : loss_scale);
  }
  for (auto& [name, p] : model.named_parameters()) r.grads.push_back(p.grad().to_double_vector());
  return r;
}

void expect_same(const Result& got, const Result& want, double tol, const std::string& what) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (size_t m = 0; m < want.losses.size(); ++m)
    EXPECT_NEAR(got.losses[m], want.losses[m], 1e-6 * std::abs(want.losses[m])) << what << " micro-step " << m;
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t p = 0; p < want.grads.size(); ++p) {
    double max_ref = 0;
    for (double g : want.grads[p]) max_ref = std::max(max_ref, std::abs(g));
    ASSERT_GT(max_ref, 0.0) << what << " parameter " << p << " got no gradient";
    int bad = 0;
    for (size_t i = 0; i < want.grads[p].size(); ++i)
      if (!(std::abs(got.grads[p][i] - want.grads[p][i]) <= tol * max_ref) && ++bad <= 3)
        ADD_FAILURE() << what << " parameter " << p << " element " << i << ": " << got.grads[p][i] << " vs "
                      << want.grads[p][i];
  }
}

TEST(GPTLossGradient, AnnouncedSeedGivesTheSameLossesAndGradients) {
  for (int accum : {1, 3}) {
    std::vector<MicroBatch> batches = micro_batches(accum, tiny_config().vocab_size, 100 + accum);
    Result want = run_step(batches, Seeding::Plain);
    // The same arithmetic on the CPU: only a parallel sum of the loss may differ in the last bits.
    expect_same(run_step(batches, Seeding::Announced), want, 1e-6, "announced, accum " + std::to_string(accum));
    expect_same(run_step(batches, Seeding::AnotherTensor), want, 1e-5, "fallback, accum " + std::to_string(accum));
  }
}

TEST(GPTLossGradient, LossGradientNeedsTargets) {
  Generator init(7), dropout_gen(8);
  GPT model(tiny_config(), init);
  const ops::LossGradient told{Tensor::full(Shape{}, 1.0, DType::F32), true};
  EXPECT_THROW(model.forward(micro_batches(1, 11, 1)[0].idx, nullptr, dropout_gen, &told), Error);
}

}  // namespace
}  // namespace nd::nn
