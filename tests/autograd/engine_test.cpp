// The backward engine (autograd/engine.cpp, variable.cpp): gradients of a variable used twice add
// up, a leaf's hook fires exactly once and only after its last consumer ran (weight tying: one
// leaf feeds both embedding and linear), NoGradGuard records nothing, and a freed graph cannot
// be walked twice. An input whose value backward does not read (add's, dropout's) is not kept alive
// by the graph, and one Variable reached both through such an edge and through a node that reads
// it gets both contributions.
#include <gtest/gtest.h>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

using test::random_f64;

TEST(Engine, VariableUsedTwiceAccumulatesBothContributions) {
  // y = gelu(x) + x · wᵀ: x reaches the output through two paths.
  Tensor x0 = random_f64({3, 4}, 1), w0 = random_f64({4, 4}, 2), g = random_f64({3, 4}, 3);
  Variable x(x0.clone(), true), w(w0.clone(), true);
  ops::add(ops::gelu(x), ops::linear(x, w, Variable())).backward(g);

  // The two contributions computed on separate graphs.
  Variable xa(x0.clone(), true), xb(x0.clone(), true), wb(w0.clone(), true);
  ops::gelu(xa).backward(g);
  ops::linear(xb, wb, Variable()).backward(g);
  std::vector<double> got = x.grad().to_double_vector(), a = xa.grad().to_double_vector(),
                      b = xb.grad().to_double_vector();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], a[i] + b[i], 1e-12);
  EXPECT_EQ(w.grad().to_double_vector(), wb.grad().to_double_vector());
}

TEST(Engine, GradientsAccumulateAcrossBackwardCallsUntilZeroed) {
  Tensor g = random_f64({2, 3}, 4);
  Variable x(random_f64({2, 3}, 5), true);
  ops::gelu(x).backward(g);
  std::vector<double> once = x.grad().to_double_vector();
  ops::gelu(x).backward(g);
  std::vector<double> twice = x.grad().to_double_vector();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-12);
  x.zero_grad();
  ops::gelu(x).backward(g);
  EXPECT_EQ(x.grad().to_double_vector(), once);
}

TEST(Engine, TiedWeightHookFiresOnceAfterItsLastConsumer) {
  // GPT weight tying: wte embeds the tokens and is the output projection.
  const int64_t V = 6, T = 3, C = 4;
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{1, 5, 1, 0, 2, 5}, {2, T});
  Tensor wte0 = random_f64({V, C}, 6), wpe0 = random_f64({T, C}, 7), g = random_f64({2, T, V}, 8);

  // Expected: the sum of the embedding's and the projection's gradients, from untied copies.
  Variable te_embed(wte0.clone(), true), te_proj(wte0.clone(), true), pe_untied(wpe0.clone(), true);
  ops::linear(ops::embedding(idx, te_embed, pe_untied), te_proj, Variable()).backward(g);
  std::vector<double> expected = te_embed.grad().to_double_vector();
  std::vector<double> proj = te_proj.grad().to_double_vector();
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += proj[i];

  Variable wte(wte0.clone(), true), wpe(wpe0.clone(), true);
  int wte_calls = 0, wpe_calls = 0;
  std::vector<double> wte_at_hook;
  wte.set_grad_hook([&](Variable& v) {
    ++wte_calls;
    wte_at_hook = v.grad().to_double_vector();
  });
  wpe.set_grad_hook([&](Variable&) { ++wpe_calls; });
  ops::linear(ops::embedding(idx, wte, wpe), wte, Variable()).backward(g);

  EXPECT_EQ(wte_calls, 1);
  EXPECT_EQ(wpe_calls, 1);
  ASSERT_EQ(wte_at_hook.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(wte_at_hook[i], expected[i], 1e-12) << i;
  EXPECT_EQ(wte.grad().to_double_vector(), wte_at_hook);  // nothing was added after the hook
}

TEST(Engine, HookDoesNotFireForLeavesThatNeedNoGradient) {
  Variable x(random_f64({2, 3}, 9), false), w(random_f64({3, 3}, 10), true);
  int x_calls = 0, w_calls = 0;
  x.set_grad_hook([&](Variable&) { ++x_calls; });
  w.set_grad_hook([&](Variable&) { ++w_calls; });
  ops::linear(x, w, Variable()).backward(random_f64({2, 3}, 11));
  EXPECT_EQ(x_calls, 0);
  EXPECT_EQ(w_calls, 1);
  EXPECT_FALSE(x.has_grad());
}

TEST(Engine, NoGradGuardRecordsNothing) {
  Variable x(random_f64({2, 3}, 12), true), w(random_f64({3, 3}, 13), true);
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
    Variable y = ops::gelu(ops::linear(x, w, Variable()));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_THROW(y.backward(random_f64({2, 3}, 14)), Error);
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_TRUE(ops::gelu(x).requires_grad());
  EXPECT_FALSE(x.has_grad());
}

// The storage of v's value, watched without keeping it.
std::weak_ptr<Storage> watch(const Variable& v) { return v.data().storage(); }

TEST(Engine, AnInputBackwardDoesNotReadIsFreedBeforeBackward) {
  Tensor x0 = random_f64({3, 4}, 21), c0 = random_f64({3, 4}, 22), g = random_f64({3, 4}, 23);
  Variable x(x0.clone(), true), c(c0.clone(), true);
  Generator gen(5);
  std::weak_ptr<Storage> summed, activated;
  Variable y;
  {
    Variable h = ops::gelu(x);
    Variable s = ops::add(h, c);  // add keeps neither value
    activated = watch(h);
    summed = watch(s);
    y = ops::dropout(s, 0.25f, gen, /*training=*/true);  // nor does dropout
  }
  EXPECT_TRUE(activated.expired());
  EXPECT_TRUE(summed.expired());
  y.backward(g);

  // The same function with every value alive: the gradients are the same.
  Variable xr(x0.clone(), true), cr(c0.clone(), true);
  Generator gen_r(5);
  Variable hr = ops::gelu(xr), sr = ops::add(hr, cr);
  ops::dropout(sr, 0.25f, gen_r, true).backward(g);
  EXPECT_EQ(x.grad().to_double_vector(), xr.grad().to_double_vector());
  EXPECT_EQ(c.grad().to_double_vector(), cr.grad().to_double_vector());
}

TEST(Engine, AValueAnotherNodeReadsStaysAndGetsBothContributions) {
  // y = h + gelu(h), h = gelu(x): add holds h as an edge, the outer gelu reads it.
  Tensor x0 = random_f64({2, 5}, 24), g = random_f64({2, 5}, 25);
  Variable x(x0.clone(), true);
  std::weak_ptr<Storage> kept;
  Variable y;
  {
    Variable h = ops::gelu(x);
    kept = watch(h);
    y = ops::add(h, ops::gelu(h));
  }
  EXPECT_FALSE(kept.expired());
  y.backward(g);
  EXPECT_TRUE(kept.expired());  // backward frees the graph
  // Both contributions, against central differences.
  const test::VariableFn f = [](const std::vector<Variable>& in) {
    Variable h = ops::gelu(in[0]);
    return ops::add(h, ops::gelu(h));
  };
  EXPECT_EQ(test::gradcheck(f, {x0}, {true}), 0);
}

TEST(Engine, AGraphEdgeHasNoValueToRead) {
  Variable x(random_f64({2, 3}, 26), true);
  Variable h = ops::gelu(x);
  Variable edge = h.without_data();
  EXPECT_TRUE(edge.same(h));
  EXPECT_EQ(edge.shape(), h.shape());
  EXPECT_EQ(edge.dtype(), h.dtype());
  test::expect_error_mentioning([&] { (void)edge.data(); }, {"graph edge", "[2, 3]"});
  EXPECT_TRUE(x.without_data().data().defined());  // a leaf is returned whole
}

TEST(Engine, SecondBackwardThroughAFreedGraphIsAnError) {
  Variable x(random_f64({2, 3}, 15), true);
  Variable y = ops::gelu(ops::add(x, x));
  Tensor g = random_f64({2, 3}, 16);
  y.backward(g);
  EXPECT_THROW(y.backward(g), Error);
}

TEST(Engine, GradientOfTheWrongShapeIsAnError) {
  Variable x(random_f64({2, 3}, 17), true);
  test::expect_error_mentioning([&] { ops::gelu(x).backward(random_f64({3, 2}, 18)); }, {"[2, 3]", "[3, 2]"});
}

}  // namespace
}  // namespace nd
