// ops::add's backward hands its gradient buffer to a first input that is an op output with no
// gradient yet (the residual stream): float64 gradients through residual adds against central
// differences, including an output added to itself and one read by several adds.
#include <gtest/gtest.h>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

// g = gelu(x0) is an op output: the outer add hands its gradient buffer to (g + x1), the inner add
// then adds into g's gradient; twice(g) adds g to itself.
Variable residual_chain(const std::vector<Variable>& v) {
  Variable g = ops::gelu(v[0]);
  return ops::add(ops::add(ops::add(g, v[1]), g), ops::add(g, g));
}

TEST(ResidualGrad, GradcheckThroughSharedOutputs) {
  EXPECT_EQ(test::gradcheck(residual_chain, {test::random_f64({3, 5}, 1), test::random_f64({3, 5}, 2)}, {true, true}),
            0);
  EXPECT_EQ(test::gradcheck(residual_chain, {test::random_f64({3, 5}, 3), test::random_f64({3, 5}, 4)}, {true, false}),
            0);
}

}  // namespace
}  // namespace nd
