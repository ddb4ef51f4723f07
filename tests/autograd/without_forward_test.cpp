// Ops recorded without their forward (autograd/without_forward.h) on the CPU: each op that honours
// the scope returns a result without a value (reading it is an nd::Error) whose backward gives
// every input the gradient the normally recorded op gives, bit for bit, and draws the same random
// counters; a chain of such ops (the MLP's tail: linear, dropout, residual add) passes value-less
// results along; an op that needs a skipped value fails instead of reading garbage; and
// ops::checkpoint tells a TailSkippingRegion that its output is read in forward but not in the rerun.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "autograd/checkpoint.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "autograd/without_forward.h"
#include "tests/autograd/op_test_util.h"

namespace nd {
namespace {

using Op = std::function<Variable(std::vector<Variable>& in, Generator& gen)>;

struct Recorded {
  bool has_value = false;
  Shape shape;
  DType dtype = DType::F32;
  std::vector<Tensor> grads;
  uint64_t drawn = 0;  // random counters the op reserved
};

// op on fresh copies of `inputs` (each requiring grad), recorded with or without its forward, then
// backpropagated from a fixed random gradient.
Recorded record(const Op& op, const std::vector<Tensor>& inputs, bool without_forward) {
  std::vector<Variable> in;
  for (const Tensor& t : inputs) in.emplace_back(t.clone(), true);
  Generator gen(5);
  Variable out;
  {
    WithoutForward scope(without_forward);
    out = op(in, gen);
  }
  Recorded r;
  r.shape = out.shape();
  r.dtype = out.dtype();
  r.drawn = gen.offset();
  try {
    (void)out.data();
    r.has_value = true;
  } catch (const Error&) {
  }
  Generator grad_gen(11);
  out.backward(Tensor::randn(out.shape(), grad_gen, 0.0, 1.0, DType::F32));
  for (Variable& v : in) r.grads.push_back(v.grad().clone());
  return r;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void expect_same_gradients_without_a_value(const Op& op, const std::vector<Tensor>& inputs) {
  const Recorded with = record(op, inputs, false), without = record(op, inputs, true);
  EXPECT_TRUE(with.has_value);
  EXPECT_FALSE(without.has_value) << "the output was computed";
  EXPECT_EQ(without.shape, with.shape);
  EXPECT_EQ(without.dtype, with.dtype);
  EXPECT_EQ(without.drawn, with.drawn) << "random counters drawn";
  ASSERT_EQ(without.grads.size(), with.grads.size());
  for (size_t i = 0; i < with.grads.size(); ++i) EXPECT_TRUE(same_bits(without.grads[i], with.grads[i])) << "input " << i;
}

Tensor random(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, 0.0, 1.0, DType::F32);
}

TEST(WithoutForward, EachOpGivesTheGradientsOfItsRecordedSelf) {
  const Tensor x = random({2, 5, 8}, 1), y = random({2, 5, 8}, 2), w = random({6, 8}, 3), b6 = random({6}, 4);
  const Tensor b8 = random({8}, 5), fc_w = random({16, 8}, 6), fc_b = random({16}, 7), proj_w = random({8, 16}, 8);
  {
    SCOPED_TRACE("linear");
    expect_same_gradients_without_a_value([](auto& in, Generator&) { return ops::linear(in[0], in[1], in[2]); },
                                          {x, w, b6});
  }
  {
    SCOPED_TRACE("gelu_mlp");
    expect_same_gradients_without_a_value(
        [](auto& in, Generator&) { return ops::gelu_mlp(in[0], in[1], in[2], in[3], in[4]); },
        {x, fc_w, fc_b, proj_w, b8});
  }
  {
    SCOPED_TRACE("add");
    expect_same_gradients_without_a_value([](auto& in, Generator&) { return ops::add(in[0], in[1]); }, {x, y});
  }
  {
    SCOPED_TRACE("dropout");
    expect_same_gradients_without_a_value([](auto& in, Generator& gen) { return ops::dropout(in[0], 0.3f, gen, true); },
                                          {x});
  }
  {
    SCOPED_TRACE("dropout_share");
    expect_same_gradients_without_a_value(
        [](auto& in, Generator& gen) { return ops::dropout_share(in[0], 0.3f, gen, true, 3 * 80, 80); }, {x});
  }
  {
    SCOPED_TRACE("add_bias");
    expect_same_gradients_without_a_value([](auto& in, Generator&) { return ops::add_bias(in[0], in[1]); }, {x, b8});
  }
  {
    SCOPED_TRACE("with_bias_gradient");
    expect_same_gradients_without_a_value([](auto& in, Generator&) { return ops::with_bias_gradient(in[0], in[1]); },
                                          {x, b8});
  }
}

// The MLP's tail as a recomputed block's rerun records it: the product, its dropout and the residual
// add, each taking the value-less result of the one before.
TEST(WithoutForward, AChainPassesValuelessResultsAlong) {
  const Tensor h = random({2, 5, 8}, 1), g = random({2, 5, 16}, 2), w = random({8, 16}, 3), b = random({8}, 4);
  expect_same_gradients_without_a_value(
      [](auto& in, Generator& gen) {
        return ops::add(in[0], ops::dropout(ops::with_bias_gradient(ops::linear(in[1], in[2], Variable()), in[3]),
                                            0.2f, gen, true));
      },
      {h, g, w, b});
}

TEST(WithoutForward, AnOpThatNeedsASkippedValueFails) {
  Variable x(random({4, 8}, 1), true), w(random({8, 8}, 2), true);
  Variable skipped;
  {
    WithoutForward scope;
    skipped = ops::linear(x, w, Variable());
  }
  test::expect_error_mentioning([&] { ops::gelu(skipped); }, {"without its forward"});
}

TEST(WithoutForward, TheScopeEndsWithItsLifetimeAndNests) {
  EXPECT_FALSE(forward_skipped());
  {
    WithoutForward on;
    EXPECT_TRUE(forward_skipped());
    {
      WithoutForward unchanged(false);
      EXPECT_TRUE(forward_skipped());
    }
    EXPECT_TRUE(forward_skipped());
  }
  EXPECT_FALSE(forward_skipped());
}

// The region sees output_read true in forward and false in the rerun, and a region that then skips
// its last op backpropagates exactly as the one that does not.
TEST(WithoutForward, CheckpointTellsTheRerunItsOutputIsNotRead) {
  const Tensor x0 = random({3, 8}, 1), w0 = random({8, 8}, 2), g = random({3, 8}, 3);
  auto run = [&](bool skip_tail, std::vector<bool>* seen) {
    Variable x(x0.clone(), true), w(w0.clone(), true);
    Generator gen(1);
    Variable y = ops::checkpoint(
        [&](const Variable& in, Generator&, bool output_read) {
          seen->push_back(output_read);
          Variable hidden = ops::gelu(ops::linear(in, w, Variable()));
          WithoutForward tail(skip_tail && !output_read);
          return ops::add(in, ops::linear(hidden, w, Variable()));
        },
        x, {w}, gen);
    y.backward(g);
    return std::vector<Tensor>{x.grad().clone(), w.grad().clone()};
  };
  std::vector<bool> seen_full, seen_skipping;
  const std::vector<Tensor> full = run(false, &seen_full), skipping = run(true, &seen_skipping);
  EXPECT_EQ(seen_skipping, (std::vector<bool>{true, false}));
  EXPECT_EQ(seen_full, (std::vector<bool>{true, false}));
  EXPECT_TRUE(same_bits(skipping[0], full[0]));
  EXPECT_TRUE(same_bits(skipping[1], full[1]));
}

}  // namespace
}  // namespace nd
