// A generator anchored to a counter in memory (what the training step does so that a CUDA graph
// replay draws new masks): its draws name counters relative to the anchor, the kernels add the
// counter they read when they run, forward and backward, and the masks are those of the plain
// generator at that counter. Here on the CPU, with the counter in host memory.
#include <gtest/gtest.h>

#include "autograd/ops.h"

namespace nd {
namespace {

struct Outputs {
  std::vector<double> out, grad;
};

// y = op(x) and dL/dx for L = sum(y * r), r a fixed ramp.
Outputs run(const std::function<Variable(const Variable&)>& op, const Tensor& x) {
  Variable xv(x.clone(), true);
  Variable y = op(xv);
  std::vector<double> ramp(static_cast<size_t>(y.data().numel()));
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = 0.5 + 0.001 * static_cast<double>(i % 997);
  y.backward(Tensor::from_vector(ramp, y.shape()).to(x.dtype()));
  return {y.data().to_double_vector(), xv.grad().to_double_vector()};
}

TEST(AnchoredGenerator, ReserveNamesCountersRelativeToTheAnchor) {
  Generator gen(5, 2);
  gen.set_offset(100);
  const uint64_t counter = 100;
  gen.anchor(&counter);
  EXPECT_TRUE(gen.anchored());
  PhiloxCounters a = gen.reserve(10), b = gen.reserve(7);
  EXPECT_EQ(a.first, 0u);
  EXPECT_EQ(b.first, 10u);
  EXPECT_EQ(b.offset, &counter);
  EXPECT_EQ(b.start(), 110u);
  EXPECT_EQ(gen.offset(), 117u);  // the host offset advances as without an anchor
  gen.anchor(nullptr);
  PhiloxCounters c = gen.reserve(3);
  EXPECT_EQ(c.offset, nullptr);
  EXPECT_EQ(c.start(), 117u);
  EXPECT_EQ(c.seed, 5u);
  EXPECT_EQ(c.stream, 2u);
}

// The counter in memory, not the generator's own offset, decides the mask: anchored at offset
// 999 with the counter holding 4099 equals the plain generator at 4099.
TEST(AnchoredGenerator, DropoutAndAttentionReadTheCounterWhenTheyRun) {
  const uint64_t kCounter = 4099;
  Generator init(3);
  auto plain = [&] {
    Generator g(77, 1);
    g.set_offset(kCounter);
    return g;
  };
  auto anchored = [&](const uint64_t* counter) {
    Generator g(77, 1);
    g.set_offset(999);
    g.anchor(counter);
    return g;
  };
  Tensor x = Tensor::uniform({2, 24, 48}, init, -1.0, 1.0, DType::F32);
  for (int op_index = 0; op_index < 2; ++op_index) {
    auto op_with = [op_index](Generator gen) {
      return [op_index, gen](const Variable& v) mutable {
        return op_index == 0 ? ops::dropout(v, 0.3f, gen, true) : ops::attention(v, 4, 0.3f, &gen, true);
      };
    };
    const uint64_t counter = kCounter;
    Outputs want = run(op_with(plain()), x);
    Outputs got = run(op_with(anchored(&counter)), x);
    EXPECT_EQ(got.out, want.out) << (op_index == 0 ? "dropout" : "attention");
    EXPECT_EQ(got.grad, want.grad) << (op_index == 0 ? "dropout" : "attention");
    const uint64_t other = kCounter + 1;  // another step's counter: another mask
    EXPECT_NE(run(op_with(anchored(&other)), x).out, want.out);
  }
}

}  // namespace
}  // namespace nd
