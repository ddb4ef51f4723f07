// The cross_entropy_grad fusion of the vocabulary-parallel loss (ops::vocab_parallel_cross_entropy
// with a LossGradient) against the unfused op, on one rank (the reductions are identities): the
// same loss and logits' gradient in f64 and f32 for seeds 1 and 1/3, with ignored targets and
// padding columns; a backward seeded with another tensor recomputes the right gradient.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"
#include "autograd/parallel_ops.h"

namespace nd {
namespace {

constexpr int64_t kVl = 7, kV = 5;  // columns 5 and 6 are padding

Tensor targets() { return Tensor::from_vector(std::vector<int32_t>{0, -1, 4, 2, 3, -1}, {2, 3}); }

struct Result {
  Tensor loss, dlogits;
};

// seed undefined: the unfused op seeded with `grad`; otherwise the fused op told `seed`, seeded
// with `grad` (or with the seed itself when `grad` is undefined).
Result run(const Tensor& logits, const Tensor& seed, const Tensor& grad) {
  const ops::RowStatsReduce none = [](Tensor&) {};
  Variable leaf(logits.clone(), true);
  Variable loss = seed.defined()
                      ? ops::vocab_parallel_cross_entropy(leaf, targets(), 0, kV, none, none, {seed, false})
                      : ops::vocab_parallel_cross_entropy(leaf, targets(), 0, kV, none, none);
  loss.backward(grad.defined() ? grad : seed);
  return {loss.data().clone(), leaf.grad().clone()};
}

void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector();
  ASSERT_EQ(av.size(), bv.size()) << what;
  for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(av[i], bv[i], tol * (1 + std::abs(bv[i]))) << what << " " << i;
}

TEST(VocabParallelCrossEntropyFusion, SeededWithTheAnnouncedTensorGivesTheUnfusedAnswer) {
  for (DType dtype : {DType::F64, DType::F32})
    for (double value : {1.0, 1.0 / 3.0}) {
      const std::string what = std::string(dtype_name(dtype)) + " seed " + std::to_string(value);
      Tensor logits = test::random_f64({2, 3, kVl}, 7, 2.0).to(dtype);
      Tensor seed = Tensor::full(Shape{}, value, dtype);
      Result want = run(logits, Tensor(), seed), got = run(logits, seed, Tensor());
      expect_close(got.loss, want.loss, 0.0, what + " loss");
      expect_close(got.dlogits, want.dlogits, 0.0, what + " dlogits");
    }
}

TEST(VocabParallelCrossEntropyFusion, AnotherSeedRecomputesTheGradient) {
  Tensor logits = test::random_f64({2, 3, kVl}, 8, 2.0);
  Tensor told = Tensor::full(Shape{}, 1.0, DType::F64), other = Tensor::full(Shape{}, 0.25, DType::F64);
  Result want = run(logits, Tensor(), other), got = run(logits, told, other);
  expect_close(got.dlogits, want.dlogits, 1e-13, "dlogits");
}

}  // namespace
}  // namespace nd
