// ops::add: forward, float64 gradients to both inputs, the same input on both sides (its
// gradient doubles), and mismatched shapes / dtypes.
#include <gtest/gtest.h>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "common/gradcheck.h"

namespace nd {
namespace {

TEST(Add, ForwardIsElementwiseSum) {
  Tensor a = test::random_f64({2, 3, 5}, 1), b = test::random_f64({2, 3, 5}, 2);
  std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector();
  for (DType dt : {DType::F32, DType::F64}) {
    std::vector<double> got = ops::add(Variable(a.to(dt)), Variable(b.to(dt))).data().to_double_vector();
    for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(got[i], av[i] + bv[i], 1e-6);
  }
}

TEST(Add, Gradcheck) {
  auto f = [](const std::vector<Variable>& v) { return ops::add(v[0], v[1]); };
  EXPECT_EQ(test::gradcheck(f, {test::random_f64({2, 3, 5}, 3), test::random_f64({2, 3, 5}, 4)}, {true, true}), 0);
  EXPECT_EQ(test::gradcheck(f, {test::random_f64({4}, 5), test::random_f64({4}, 6)}, {false, true}), 0);
  auto twice = [](const std::vector<Variable>& v) { return ops::add(v[0], v[0]); };
  EXPECT_EQ(test::gradcheck(twice, {test::random_f64({2, 3}, 7)}, {true}), 0);
}

TEST(Add, LargeShapeGradientsAlongRandomDirections) {
  auto f = [](const std::vector<Variable>& v) { return ops::add(v[0], v[1]); };
  EXPECT_LT(test::directional_error(f, {test::random_f64({8, 128, 160}, 8), test::random_f64({8, 128, 160}, 9)},
                                    {true, true}),
            1e-7);
}

TEST(Add, MismatchedInputsNameTheShapes) {
  test::expect_error_mentioning(
      [] {
        ops::add(Variable(Tensor::zeros({2, 3})), Variable(Tensor::zeros({3, 2})));
      },
      {"[2, 3]", "[3, 2]"});
  test::expect_error_mentioning(
      [] {
        ops::add(Variable(Tensor::zeros({2, 3})), Variable(Tensor::zeros({2, 3}, DType::F64)));
      },
      {"f32", "f64"});
}

}  // namespace
}  // namespace nd
