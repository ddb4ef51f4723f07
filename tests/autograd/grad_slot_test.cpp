// Gradient buffers store their first contribution and add the later ones (Variable::grad_slot):
// for every op, a second backward adds the same gradient again, a backward after zero_grad() gives
// exactly the fresh gradient, also into an external buffer full of NaN (a DDP bucket view), a
// parameter used twice (a + a, tied embedding and head) sums both uses, and a parameter that got
// nothing since zero_grad() reads zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

using test::random_f64;

std::vector<Variable> leaves(const std::vector<Tensor>& inputs, const std::vector<bool>& wants) {
  std::vector<Variable> vars;
  for (size_t i = 0; i < inputs.size(); ++i) vars.emplace_back(inputs[i].clone(), wants[i]);
  return vars;
}

void check_op(const std::string& name, const test::VariableFn& f, const std::vector<Tensor>& inputs,
              const std::vector<bool>& wants) {
  SCOPED_TRACE(name);
  std::vector<Variable> vars = leaves(inputs, wants);
  Variable out = f(vars);
  Tensor g = random_f64(out.shape(), 77);
  out.backward(g);
  std::vector<std::vector<double>> fresh(vars.size());
  for (size_t i = 0; i < vars.size(); ++i)
    if (wants[i]) fresh[i] = vars[i].grad().to_double_vector();

  // A second backward adds to the first.
  f(vars).backward(g);
  for (size_t i = 0; i < vars.size(); ++i) {
    if (!wants[i]) continue;
    std::vector<double> twice = vars[i].grad().to_double_vector();
    for (size_t j = 0; j < twice.size(); ++j)
      ASSERT_NEAR(twice[j], 2 * fresh[i][j], 1e-12 * (1 + std::abs(fresh[i][j]))) << "input " << i << " at " << j;
  }

  // After zero_grad the next backward starts over: bit-identical to the fresh gradient.
  for (Variable& v : vars) v.zero_grad();
  f(vars).backward(g);
  for (size_t i = 0; i < vars.size(); ++i) {
    if (wants[i]) {
      EXPECT_EQ(vars[i].grad().to_double_vector(), fresh[i]) << "input " << i << " after zero_grad";
    }
  }

  // An external buffer (as DDP's bucket views) holding garbage, zeroed: overwritten, not added to.
  std::vector<Variable> external = leaves(inputs, wants);
  for (Variable& v : external) {
    if (!v.requires_grad()) continue;
    v.set_grad(Tensor::full(v.shape(), std::nan(""), v.dtype(), v.device()));
    v.zero_grad();
  }
  f(external).backward(g);
  for (size_t i = 0; i < vars.size(); ++i) {
    if (wants[i]) {
      EXPECT_EQ(external[i].grad().to_double_vector(), fresh[i]) << "input " << i << " into a NaN buffer";
    }
  }
}

TEST(GradSlot, EveryOpOverwritesFirstAndAccumulatesAfter) {
  check_op(
      "linear", [](const std::vector<Variable>& v) { return ops::linear(v[0], v[1], v[2]); },
      {random_f64({2, 3, 5}, 1), random_f64({4, 5}, 2), random_f64({4}, 3)}, {true, true, true});
  check_op(
      "layernorm", [](const std::vector<Variable>& v) { return ops::layernorm(v[0], v[1], v[2]); },
      {random_f64({3, 8}, 4), random_f64({8}, 5), random_f64({8}, 6)}, {true, true, true});
  check_op(
      "gelu", [](const std::vector<Variable>& v) { return ops::gelu(v[0]); }, {random_f64({7, 3}, 7)}, {true});
  check_op(
      "add", [](const std::vector<Variable>& v) { return ops::add(v[0], v[1]); },
      {random_f64({4, 3}, 8), random_f64({4, 3}, 9)}, {true, true});
  check_op(
      "add of one input to itself", [](const std::vector<Variable>& v) { return ops::add(v[0], v[0]); },
      {random_f64({4, 3}, 10)}, {true});
  check_op(
      "dropout",
      [](const std::vector<Variable>& v) {
        Generator gen(11, 2);
        return ops::dropout(v[0], 0.3f, gen, true);
      },
      {random_f64({5, 6}, 12)}, {true});
  check_op(
      "attention with dropout",
      [](const std::vector<Variable>& v) {
        Generator gen(13, 1);
        return ops::attention(v[0], 2, 0.2f, &gen, true);
      },
      {random_f64({2, 5, 3 * 8}, 14)}, {true});
  // wpe has more positions (6) than the sequence (3): its last rows get zero.
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{1, 4, 1, 0, 4, 4}, {2, 3});
  check_op(
      "embedding", [idx](const std::vector<Variable>& v) { return ops::embedding(idx, v[0], v[1]); },
      {random_f64({5, 4}, 15), random_f64({6, 4}, 16)}, {true, true});
  // Padded vocabulary (6 of 8 columns) and an ignored target.
  Tensor targets = Tensor::from_vector(std::vector<int32_t>{2, -1, 5, 0}, {2, 2});
  check_op(
      "cross_entropy", [targets](const std::vector<Variable>& v) { return ops::cross_entropy(v[0], targets, 6); },
      {random_f64({2, 2, 8}, 17)}, {true});
  // GPT weight tying: wte embeds the tokens and is the output projection.
  check_op(
      "tied embedding and head",
      [idx](const std::vector<Variable>& v) { return ops::linear(ops::embedding(idx, v[0], v[1]), v[0], Variable()); },
      {random_f64({5, 4}, 18), random_f64({3, 4}, 19)}, {true, true});
}

TEST(GradSlot, TiedParameterSumsBothUses) {
  // The tied gradient equals the sum of the embedding's and the head's from untied copies, also
  // in a second step after zero_grad.
  Tensor idx = Tensor::from_vector(std::vector<int32_t>{1, 4, 1, 0, 2, 4}, {2, 3});
  Tensor wte0 = random_f64({5, 4}, 20), wpe0 = random_f64({3, 4}, 21), g = random_f64({2, 3, 5}, 22);
  Variable embed(wte0.clone(), true), head(wte0.clone(), true), pe_untied(wpe0.clone(), true);
  ops::linear(ops::embedding(idx, embed, pe_untied), head, Variable()).backward(g);
  std::vector<double> expected = embed.grad().to_double_vector(), from_head = head.grad().to_double_vector();
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += from_head[i];

  Variable wte(wte0.clone(), true), wpe(wpe0.clone(), true);
  for (int step = 0; step < 2; ++step) {
    wte.zero_grad();
    wpe.zero_grad();
    ops::linear(ops::embedding(idx, wte, wpe), wte, Variable()).backward(g);
    std::vector<double> got = wte.grad().to_double_vector();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << "step " << step << " at " << i;
  }
}

TEST(GradSlot, UnusedParameterReadsZeroAfterZeroGrad) {
  Variable used(random_f64({3, 4}, 23), true), unused(random_f64({3, 4}, 24), true);
  ops::add(used, unused).backward(random_f64({3, 4}, 25));
  ASSERT_NE(unused.grad().to_double_vector(), std::vector<double>(12, 0.0));
  used.zero_grad();
  unused.zero_grad();
  ops::gelu(used).backward(random_f64({3, 4}, 26));
  EXPECT_TRUE(unused.has_grad());  // the buffer is kept
  EXPECT_EQ(unused.grad().to_double_vector(), std::vector<double>(12, 0.0));
}

}  // namespace
}  // namespace nd
