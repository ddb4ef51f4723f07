// ops::on_backward (autograd/backward_hook.h): the forward is x itself; in backward the hook runs
// once, after every op that reads the marked value has run its backward and before the op that made
// it does (where ZeRO binds and gathers a block), and the gradient goes on unchanged. Without
// recording it is x and the hook never runs.
#include <gtest/gtest.h>

#include <string>

#include "autograd/backward_hook.h"
#include "autograd/op_test_util.h"
#include "autograd/ops.h"

namespace nd {
namespace {

using test::random_f64;

TEST(BackwardHook, RunsBetweenTheConsumersAndTheProducerWithTheGradientUnchanged) {
  Tensor x0 = random_f64({3, 4}, 1), w0 = random_f64({4, 4}, 2), g = random_f64({3, 4}, 3);
  std::string order;
  Variable w(w0.clone(), true);
  w.set_grad_hook([&](Variable&) { order += "w"; });  // w's op runs before the mark is reached
  Variable x(x0.clone(), true);
  Variable h = ops::gelu(x);
  Variable marked = ops::on_backward(h, [&] { order += "hook"; });
  EXPECT_EQ(marked.data().raw_data(), h.data().raw_data()) << "the forward copies nothing";
  // marked is read twice (a residual and a linear): the hook waits for both.
  ops::add(marked, ops::linear(marked, w, Variable())).backward(g);
  EXPECT_EQ(order, "whook");

  Variable xr(x0.clone(), true), wr(w0.clone(), true);
  Variable hr = ops::gelu(xr);
  ops::add(hr, ops::linear(hr, wr, Variable())).backward(g);
  EXPECT_EQ(x.grad().to_double_vector(), xr.grad().to_double_vector());
  EXPECT_EQ(w.grad().to_double_vector(), wr.grad().to_double_vector());
}

TEST(BackwardHook, WithoutRecordingItIsTheValueItself) {
  int calls = 0;
  Variable x(random_f64({2, 3}, 4), true);
  {
    NoGradGuard off;
    Variable y = ops::on_backward(ops::gelu(x), [&] { ++calls; });
    EXPECT_TRUE(y.is_leaf());
  }
  Variable constant(random_f64({2, 3}, 5), false);
  Variable same = ops::on_backward(constant, [&] { ++calls; });
  EXPECT_TRUE(same.same(constant));
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace nd
