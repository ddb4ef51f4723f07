// The loss-gradient fusion (ops::cross_entropy with a LossGradient) against the unfused op:
// the same loss and gradients (of the logits and, through a linear head, of its inputs) in f64 and
// f32, for seeds 1 and 1/3, with ignored targets and padding, the logits kept or overwritten; a
// backward seeded with another tensor (the fallback); the seed's backward reading no logits; the
// logits overwritten only when asked and when the fusion runs; bad seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/op_test_util.h"
#include "autograd/ops.h"

namespace nd {
namespace {

constexpr int64_t kVp = 7, kV = 5;  // columns 5 and 6 are padding

// (2, 3) targets with two ignored rows.
Tensor mixed_targets() { return Tensor::from_vector(std::vector<int32_t>{0, -1, 4, 2, 3, -1}, {2, 3}); }

Tensor scalar(double value, DType dtype) { return Tensor::full(Shape{}, value, dtype); }

// |a - b| <= tol (1 + |b|) elementwise; tol 0 asks for equality.
void expect_same(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector();
  int bad = 0;
  for (size_t i = 0; i < av.size(); ++i)
    if (!(std::abs(av[i] - bv[i]) <= tol * (1 + std::abs(bv[i]))) && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " is " << av[i] << ", expected " << bv[i];
}

// Exact in f64 and f32 where the two paths do the same arithmetic; rescaled paths round once more.
double rescale_tol(DType dtype) { return dtype == DType::F64 ? 1e-13 : 1e-6; }

// The three inputs of a linear head and the loss on top: logits (2, 3, Vp) = x (2, 3, 4) · wᵀ,
// w (Vp, 4), as in the GPT (a non-leaf, so the fused backward can hand its buffer over); and the
// logits alone as a leaf (whose gradient stays readable).
struct Inputs {
  Tensor x, w, logits;
};

Inputs random_inputs(DType dtype, uint64_t seed) {
  return {test::random_f64({2, 3, 4}, seed, 1.0).to(dtype), test::random_f64({kVp, 4}, seed + 1, 1.0).to(dtype),
          test::random_f64({2, 3, kVp}, seed + 2, 2.0).to(dtype)};
}

struct Grads {
  Tensor loss, dx, dw, dlogits;
};

// Runs the loss on the linear head and on the leaf logits, each seeded with `grad` (or with the
// announced seed itself when `grad` is undefined). gradient.seed undefined: the unfused op.
Grads run(const Inputs& in, const Tensor& targets, const ops::LossGradient& gradient, const Tensor& grad) {
  auto loss_of = [&](const Variable& logits) {
    return gradient.seed.defined() ? ops::cross_entropy(logits, targets, kV, gradient)
                                   : ops::cross_entropy(logits, targets, kV);
  };
  const Tensor& seed = grad.defined() ? grad : gradient.seed;
  Variable x(in.x.clone(), true), w(in.w.clone(), true), leaf(in.logits.clone(), true);
  Variable loss = loss_of(ops::linear(x, w, Variable()));
  loss.backward(seed);
  loss_of(leaf).backward(seed);
  return {loss.data().clone(), x.grad().clone(), w.grad().clone(), leaf.grad().clone()};
}

void expect_same(const Grads& got, const Grads& want, double tol, const std::string& what) {
  expect_same(got.loss, want.loss, tol == 0 ? 1e-14 : tol, what + " loss");  // a parallel sum
  expect_same(got.dx, want.dx, tol, what + " dx");
  expect_same(got.dw, want.dw, tol, what + " dw");
  expect_same(got.dlogits, want.dlogits, tol, what + " dlogits");
}

TEST(CrossEntropyFusion, SeededWithTheAnnouncedTensorGivesTheUnfusedLossAndGradients) {
  for (DType dtype : {DType::F64, DType::F32})
    for (double value : {1.0, 1.0 / 3.0})
      for (bool overwrite : {false, true}) {
        const std::string what = std::string(dtype_name(dtype)) + " seed " + std::to_string(value) +
                                 (overwrite ? " overwrite" : " own buffer");
        Inputs in = random_inputs(dtype, 10);
        Grads want = run(in, mixed_targets(), {}, scalar(value, dtype));
        Grads got = run(in, mixed_targets(), {scalar(value, dtype), overwrite}, Tensor());
        expect_same(got, want, 0.0, what);
      }
}

TEST(CrossEntropyFusion, EveryTargetIgnoredGivesZeroLossAndGradient) {
  Tensor none = Tensor::from_vector(std::vector<int32_t>(6, -1), {2, 3});
  Inputs in = random_inputs(DType::F64, 20);
  Grads got = run(in, none, {scalar(0.5, DType::F64), true}, Tensor());
  EXPECT_EQ(got.loss.item(), 0.0);
  for (double g : got.dlogits.to_double_vector()) EXPECT_EQ(g, 0.0);
  for (double g : got.dw.to_double_vector()) EXPECT_EQ(g, 0.0);
}

TEST(CrossEntropyFusion, AnotherGradientFallsBackToTheRightAnswer) {
  for (DType dtype : {DType::F64, DType::F32})
    for (bool overwrite : {false, true}) {
      const std::string what = std::string(dtype_name(dtype)) + (overwrite ? " overwrite" : " own buffer");
      Inputs in = random_inputs(dtype, 30);
      const ops::LossGradient announced{scalar(1.0 / 3.0, dtype), overwrite};
      // Another value, and the announced value in another tensor.
      for (double value : {0.7, -2.5, 1.0 / 3.0}) {
        Grads want = run(in, mixed_targets(), {}, scalar(value, dtype));
        Grads got = run(in, mixed_targets(), announced, scalar(value, dtype));
        expect_same(got, want, overwrite ? rescale_tol(dtype) : 0.0, what + " grad " + std::to_string(value));
      }
      // backward() seeds with a tensor of ones.
      Variable x(in.x.clone(), true), w(in.w.clone(), true), x_ref(in.x.clone(), true), w_ref(in.w.clone(), true);
      ops::cross_entropy(ops::linear(x, w, Variable()), mixed_targets(), kV, announced).backward();
      ops::cross_entropy(ops::linear(x_ref, w_ref, Variable()), mixed_targets(), kV).backward();
      expect_same(w.grad(), w_ref.grad(), overwrite ? rescale_tol(dtype) : 0.0, what + " backward()");
    }
}

// Seeded with the announced tensor itself, the backward hands the forward's gradient over: it must
// not read the logits, which are made NaN here (reading them would make every gradient NaN).
TEST(CrossEntropyFusion, SeededWithTheAnnouncedTensorTheBackwardReadsNoLogits) {
  Inputs in = random_inputs(DType::F64, 40);
  const Tensor seed = scalar(0.25, DType::F64);
  Grads want = run(in, mixed_targets(), {}, seed);
  Variable x(in.x.clone(), true), w(in.w.clone(), true);
  Variable logits = ops::linear(x, w, Variable());
  Variable loss = ops::cross_entropy(logits, mixed_targets(), kV, {seed, false});
  logits.data().fill_(std::nan(""));
  loss.backward(seed);
  expect_same(w.grad(), want.dw, 0.0, "dw");
  expect_same(x.grad(), want.dx, 0.0, "dx");
}

TEST(CrossEntropyFusion, OverwriteWritesTheGradientOverTheLogits) {
  Inputs in = random_inputs(DType::F64, 50);
  const Tensor seed = scalar(0.5, DType::F64);
  Grads want = run(in, mixed_targets(), {}, seed);
  for (bool overwrite : {false, true}) {
    Variable logits(in.logits.clone(), true);
    ops::cross_entropy(logits, mixed_targets(), kV, {seed, overwrite});
    expect_same(logits.data(), overwrite ? want.dlogits : in.logits, 0.0, overwrite ? "overwritten" : "kept");
  }
}

// With no gradient recorded the op is the plain cross_entropy: the logits stay.
TEST(CrossEntropyFusion, NoGradLeavesTheLogits) {
  Inputs in = random_inputs(DType::F64, 60);
  const Tensor seed = scalar(0.5, DType::F64);
  const double loss = ops::cross_entropy(Variable(in.logits), mixed_targets(), kV).data().item();
  {
    NoGradGuard no_grad;
    Variable logits(in.logits.clone(), true);
    Variable l = ops::cross_entropy(logits, mixed_targets(), kV, {seed, true});
    EXPECT_FALSE(l.requires_grad());
    EXPECT_NEAR(l.data().item(), loss, 1e-14);
    expect_same(logits.data(), in.logits, 0.0, "no grad: logits");
  }
  Variable constant(in.logits.clone(), false);
  ops::cross_entropy(constant, mixed_targets(), kV, {seed, true});
  expect_same(constant.data(), in.logits, 0.0, "logits without grad");
}

TEST(CrossEntropyFusion, BadSeedsAreErrors) {
  Variable logits(test::random_f64({2, 3, kVp}, 70), true);
  test::expect_error_mentioning([&] { ops::cross_entropy(logits, mixed_targets(), kV, {Tensor(), true}); },
                                {"cross_entropy", "seed", "undefined"});
  test::expect_error_mentioning(
      [&] { ops::cross_entropy(logits, mixed_targets(), kV, {Tensor::ones({1}, DType::F64), true}); },
      {"cross_entropy", "seed", "scalar"});
  test::expect_error_mentioning([&] { ops::cross_entropy(logits, mixed_targets(), kV, {scalar(1, DType::F32), true}); },
                                {"cross_entropy", "seed"});
}

}  // namespace
}  // namespace nd
