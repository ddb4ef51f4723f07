// Deferred weight gradients (autograd/weight_grad_queue.h), the split backward of zero-bubble
// pipelines: under a DeferWeightGradients scope, linear, linear_reduced_dx and gelu_mlp write the
// input gradient at once and leave the weight (and, for linear, bias) gradients untouched until
// the queue runs; then every gradient equals the plain backward's, bit for bit (the same kernels),
// also when a second backward accumulates into the same slots.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "autograd/parallel_ops.h"
#include "autograd/weight_grad_queue.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

using test::random_f64;

// x (2, 3, 5), w (8, 5), b (8), proj_w (4, 8), proj_b (4), in f32.
std::vector<Tensor> inputs(uint64_t seed) {
  std::vector<Tensor> t = {random_f64({2, 3, 5}, seed), random_f64({8, 5}, seed + 1, 0.5), random_f64({8}, seed + 2),
                           random_f64({4, 8}, seed + 3, 0.5), random_f64({4}, seed + 4)};
  for (Tensor& x : t) x = x.to(DType::F32);
  return t;
}

using Net = std::function<Variable(const std::vector<Variable>&)>;

// The gradients of every input after two backwards of `net` (seeds from `seed`), with the weight
// gradients deferred or not. `checked_early`: with deferral, called between the backwards and the
// queue's run, to look at the gradients then.
std::vector<Tensor> gradients(const Net& net, bool defer,
                              const std::function<void(const std::vector<Variable>&)>& checked_early = {}) {
  std::vector<Variable> v;
  for (const Tensor& t : inputs(7)) v.push_back(Variable(t.clone(), true));
  ops::WeightGradientQueue queue;
  for (int pass = 0; pass < 2; ++pass) {
    Variable y = net(v);
    Tensor seed = random_f64(y.shape(), 100 + pass).to(DType::F32);
    if (defer) {
      ops::DeferWeightGradients deferred(queue);
      y.backward(seed);
    } else {
      y.backward(seed);
    }
  }
  if (defer && checked_early) checked_early(v);
  queue.run();
  EXPECT_TRUE(queue.empty());
  std::vector<Tensor> grads;
  for (const Variable& x : v) grads.push_back(x.has_grad() ? x.grad().clone() : Tensor());  // unused: none
  return grads;
}

void expect_bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].defined(), b[i].defined()) << what << ": input " << i;
    if (!a[i].defined()) continue;
    std::vector<double> x = a[i].to_double_vector(), y = b[i].to_double_vector();
    EXPECT_EQ(x, y) << what << ": gradient of input " << i;
  }
}

// No gradient yet, or zeros.
bool untouched(const Variable& v) {
  if (!v.has_grad()) return true;
  for (double d : v.grad().to_double_vector())
    if (d != 0.0) return false;
  return true;
}

TEST(WeightGradientQueue, LinearDefersWeightAndBias) {
  Net net = [](const std::vector<Variable>& v) { return ops::linear(v[0], v[1], v[2]); };
  auto deferred = gradients(net, true, [](const std::vector<Variable>& v) {
    EXPECT_FALSE(untouched(v[0])) << "the input gradient is not deferred";
    EXPECT_TRUE(untouched(v[1])) << "the weight gradient ran before the queue";
    EXPECT_TRUE(untouched(v[2])) << "the bias gradient ran before the queue";
  });
  expect_bitwise_equal(deferred, gradients(net, false), "linear");
}

TEST(WeightGradientQueue, LinearReducedDxDefersWeightAndBias) {
  ops::StartReduce no_reduce = [](Tensor&) { return std::function<void()>([] {}); };
  Net net = [no_reduce](const std::vector<Variable>& v) { return ops::linear_reduced_dx(v[0], v[1], v[2], no_reduce); };
  auto deferred = gradients(net, true, [](const std::vector<Variable>& v) {
    EXPECT_FALSE(untouched(v[0]));
    EXPECT_TRUE(untouched(v[1]));
  });
  expect_bitwise_equal(deferred, gradients(net, false), "linear_reduced_dx");
}

TEST(WeightGradientQueue, GeluMlpDefersBothWeights) {
  Net net = [](const std::vector<Variable>& v) { return ops::gelu_mlp(v[0], v[1], v[2], v[3], v[4]); };
  auto deferred = gradients(net, true, [](const std::vector<Variable>& v) {
    EXPECT_FALSE(untouched(v[0]));
    EXPECT_TRUE(untouched(v[1])) << "c_fc's weight gradient ran before the queue";
    EXPECT_TRUE(untouched(v[3])) << "c_proj's weight gradient ran before the queue";
  });
  expect_bitwise_equal(deferred, gradients(net, false), "gelu_mlp");
}

}  // namespace
}  // namespace nd
